"""The fabric picture against the cabling plan, live state, and the report page's content."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.outputs.drawing import build_drawing
from controller.outputs.drawing_state import StateFileError, apply_state
from controller.outputs.report import cabling_sheets, render_html, render_svg, sizing_rationale
from tests.conftest import INVENTORY, run_cli, run_json
from tests.report.svgcheck import groups, svg_problems

FABRICS = {
    "lab-dual-arp": INVENTORY / "lab-dual-arp.yaml",
    "lab-evpn-mh": INVENTORY / "lab-evpn-mh.yaml",
    "seed-2048": INVENTORY / "examples/seed-2048-cx864e-dual-arp.yaml",
    "cx732q-256-evpn": INVENTORY / "examples/cx732q-256-evpn-mh.yaml",
    "cx864e-16384": INVENTORY / "examples/cx864e-16384-dual-arp.yaml",
}


@cache
def fabric(name: str) -> Fabric:
    return build_fabric(load_intent(FABRICS[name]))


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_svg_structure_matches_cabling_plan(name: str) -> None:
    assert svg_problems(render_svg(build_drawing(fabric(name))), fabric(name)) == []


def test_lab_draws_every_device_and_every_cable() -> None:
    f = fabric("lab-evpn-mh")
    root = ET.fromstring(render_svg(build_drawing(f)))
    boxes = groups(root, "box")
    assert len(boxes) == len(f.switches) + len(f.servers)
    assert all(len((b.get("data-members") or "").split()) == 1 for b in boxes)
    bundles = groups(root, "bundle")
    assert len(bundles) == len(f.links)  # one cable per device pair at lab size
    assert {b.get("data-kind") for b in bundles} == {"host", "fabric", "aux"}


def test_16384_gpus_stay_readable() -> None:
    f = fabric("cx864e-16384")
    d = build_drawing(f)
    assert len(d.boxes) <= 2 * 16 + 2 + 16  # group blocks per plane, spine blocks, servers
    assert len(d.bundles) <= 100
    assert d.aggregated and d.width < 4000
    labels = {b.label for b in d.bundles}
    assert "1024×200G" in labels  # a group's servers to one plane's leaves of that group


def test_checker_finds_a_missing_bundle_and_a_double_box() -> None:
    f = fabric("lab-dual-arp")
    svg = render_svg(build_drawing(f))
    no_bundle = re.sub(
        r'<g class="bundle [^>]*data-id="host:p1-g1-leaf1:srv0001".*?</g>\n', "", svg, flags=re.S
    )
    assert no_bundle != svg
    assert any("srv0001" in p for p in svg_problems(no_bundle, f))
    doubled = svg.replace('data-members="p1-spine2"', 'data-members="p1-spine1"')
    assert any("drawn twice" in p for p in svg_problems(doubled, f))
    miscounted = svg.replace('data-count="1"', 'data-count="2"', 1)
    assert any("cables drawn" in p for p in svg_problems(miscounted, f))


def verify_json(f: Fabric) -> dict[str, Any]:
    checks: list[dict[str, Any]] = [
        {"device": s.name, "check": "bgp-sessions", "ok": True, "expected": [], "found": []}
        for s in f.switches
    ]
    checks[0] = {
        "device": "p1-spine1",
        "check": "bgp-sessions",
        "ok": False,
        "expected": ["swp1", "swp2"],
        "found": ["swp2"],
    }
    checks.append(
        {
            "device": "p2-g1-leaf2",
            "check": "maintenance (drained: isolated)",
            "ok": True,
            "expected": "isolated",
            "found": "isolated",
        }
    )
    checks.append(
        {"device": "p2-spine2", "check": "reachable", "ok": False, "expected": "", "found": "x"}
    )
    return {"ok": False, "checks": checks}


def test_live_state_colours_failed_sessions_and_drained_leaves() -> None:
    f = fabric("lab-dual-arp")
    d = apply_state(build_drawing(f), f, verify_json(f))
    state = {b.id: b.state for b in d.boxes}
    assert state["p2-g1-leaf2"] == "drained"
    assert state["p1-spine1"] == "failed"
    assert state["p2-spine2"] == "unreachable"
    assert state["p1-g1-leaf1"] == "ok"
    # p1-spine1 swp1 is cabled to p1-g1-leaf1: that bundle, and only it, is down
    down = {b.id: b.down for b in d.bundles if b.down}
    assert down == {"fabric:p1-spine1:p1-g1-leaf1": 1}
    root = ET.fromstring(render_svg(d))
    legend = "".join(root.find(".//{http://www.w3.org/2000/svg}g[@class='legend']").itertext())
    assert "drained leaf" in legend and "BGP down" in legend


def test_simulate_loads_take_the_highest_link_per_bundle() -> None:
    f = fabric("seed-2048")
    links = [lk for lk in f.links if lk.a_device == "p1-g1-leaf1" and lk.kind == "fabric"]
    sim = {
        "links": [{"a_device": lk.a_device, "z_device": lk.z_device, "load": 0.1} for lk in links]
    }
    sim["links"][3]["load"] = 0.9
    d = apply_state(build_drawing(f), f, simulate=sim)
    loads = {b.id: b.load for b in d.bundles if b.load is not None}
    assert loads == {"fabric:p1-spines:p1-g1-leaf1": 0.9}
    with pytest.raises(StateFileError):
        apply_state(build_drawing(f), f, simulate={"links": [{"a_device": "x"}]})
    with pytest.raises(StateFileError):
        apply_state(build_drawing(f), f, verify={"checks": "nope"})


def test_report_page_is_self_contained_and_has_every_sheet() -> None:
    f = fabric("lab-evpn-mh")
    html = render_html(f, build_drawing(f))
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "@import" not in html and "url(" not in html
    assert html.count("http") == html.count("http://www.w3.org/2000/svg")
    leaves, servers = cabling_sheets(f)
    assert [s.device for s in leaves] == [s.name for s in f.switches_in(role="leaf")]
    assert len(servers) == len(f.servers)
    for sheet in leaves + servers:
        assert f'id="sheet-{sheet.device}"' in html
    assert sum(len(s.rows) for s in servers) == sum(1 for lk in f.links if lk.kind == "host")
    row = next(r for r in servers[0].rows if r.port == "nic1p1")
    assert row.label == "srv0001:nic1p1 ↔ p1-g1-leaf1:swp1 · 100G · plane 1 · rail 1"
    assert "@media print" in html
    assert "Sizing rationale" in html and len(sizing_rationale(f)) >= 6


def test_cli_report_and_draw(tmp_path: Path) -> None:
    code, data = run_json("report", "-f", str(FABRICS["lab-dual-arp"]), "--out", str(tmp_path))
    assert code == 0 and data["cables"] == 18  # 16 + the 2 AUX cables (protection)
    assert (tmp_path / "report.html").stat().st_size > 5000
    svg = tmp_path / "d.svg"
    result = run_cli("draw", "-f", str(FABRICS["lab-dual-arp"]), "--out", str(svg))
    assert result.exit_code == 0, result.output
    assert svg_problems(svg.read_text(), fabric("lab-dual-arp")) == []
    state = tmp_path / "verify.json"
    state.write_text(json.dumps(verify_json(fabric("lab-dual-arp"))))
    result = run_cli(
        "draw", "-f", str(FABRICS["lab-dual-arp"]), "--out", str(svg), "--verify", str(state)
    )
    assert result.exit_code == 0 and 'data-state="drained"' in svg.read_text()


def test_cli_report_bad_state_file_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "v.json"
    bad.write_text("[1, 2")
    result = run_cli(
        "report", "-f", str(FABRICS["lab-dual-arp"]), "--out", str(tmp_path), "--verify", str(bad)
    )
    assert result.exit_code == 2
    assert "--verify" in result.output and "Traceback" not in result.output
    result = run_cli(
        "draw", "-f", str(FABRICS["lab-dual-arp"]), "--verify", str(tmp_path / "none.json")
    )
    assert result.exit_code == 2 and "cannot read" in result.output
