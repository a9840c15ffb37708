"""`dpctl simulate --links-out` feeds `dpctl report --simulate`: loads on the picture."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.generator import build_fabric
from controller.intent import load_intent
from tests.conftest import INVENTORY, run_cli, run_json
from tests.report.svgcheck import NS, groups, svg_problems

LAB = INVENTORY / "lab-dual-arp.yaml"
SEED = INVENTORY / "examples/seed-2048-cx864e-dual-arp.yaml"


def unprotected(tmp_path: Path) -> Path:
    """The lab fabric without cross-plane protection: its loads are the bonds' alone (with
    protection, plane-1 traffic to a server whose plane-1 port failed crosses the 10G AUX)."""
    data = yaml.safe_load(LAB.read_text())
    data["cross_plane_protection"] = False
    path = tmp_path / "lab-unprotected.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def simulate_links(tmp_path: Path, fabric: Path, *args: str) -> tuple[dict[str, Any], Path]:
    out = tmp_path / "links.json"
    code, summary = run_json("simulate", "-f", str(fabric), "--links-out", str(out), *args)
    assert code == 0, summary
    assert summary["links_out"] == str(out) and isinstance(summary["links"], int)
    return json.loads(out.read_text()), out


def report_svg(tmp_path: Path, fabric: Path, links: Path) -> ET.Element:
    result = run_cli(
        "report", "-f", str(fabric), "--out", str(tmp_path / "r"), "--simulate", str(links)
    )
    assert result.exit_code == 0, result.output
    return ET.fromstring((tmp_path / "r" / "fabric.svg").read_text())


def test_links_file_has_every_cable_in_the_fabrics_orientation(tmp_path: Path) -> None:
    lab = unprotected(tmp_path)
    doc, _ = simulate_links(tmp_path, lab, "--fail", "p1-g1-leaf1:swp1")
    fabric = build_fabric(load_intent(lab))
    assert [(r["a_device"], r["a_port"], r["z_device"], r["z_port"]) for r in doc["links"]] == [
        (lk.a_device, lk.a_port, lk.z_device, lk.z_port) for lk in fabric.links
    ]
    assert all(r["load"] == max(r["load_az"], r["load_za"]) for r in doc["links"])
    assert doc["directed_links"] == 2 * len(fabric.links)
    assert max(r["load"] for r in doc["links"]) == doc["max_link_load"] == 2.0


def test_report_marks_the_most_loaded_bundle_of_a_lab_run(tmp_path: Path) -> None:
    # srv0001's plane-1 port of rail 1 fails: its QPs move to plane 2, so its plane-2 cable
    # sends and srv0002's plane-2 cable of that rail receives twice the line rate
    lab = unprotected(tmp_path)
    doc, links = simulate_links(tmp_path, lab, "--fail", "p1-g1-leaf1:swp1")
    root = report_svg(tmp_path, lab, links)
    peaks = [g.get("data-id") for g in groups(root, "peak")]
    assert peaks == ["host:p2-g1-leaf1:srv0001", "host:p2-g1-leaf1:srv0002"]
    assert root.get("data-max-load") == "2.00"
    loads = {g.get("data-id"): float(g.get("data-load") or "nan") for g in groups(root, "bundle")}
    assert loads["host:p1-g1-leaf1:srv0001"] == 0.0  # the failed cable
    assert loads["host:p1-g1-leaf2:srv0001"] == 1.0
    assert loads["host:p1-g1-leaf1:srv0002"] == 1.0  # still sends there (those flows are lost)
    legend = "".join(root.find(f".//{NS}g[@class='legend']").itertext())  # type: ignore[union-attr]
    assert "most loaded: 2.00× line rate" in legend and "load ÷ line rate" in legend
    html = (tmp_path / "r" / "report.html").read_text()
    assert 'id="load"' in html and "p1-g1-leaf1:swp1" in html  # the scenario is on the page
    assert doc["fail"] == ["p1-g1-leaf1:swp1"]


def test_aggregated_bundles_take_the_runs_highest_load(tmp_path: Path) -> None:
    doc, links = simulate_links(tmp_path, SEED, "--workload", "bisection", "--lb", "ecmp")
    root = report_svg(tmp_path, SEED, links)
    fabric = build_fabric(load_intent(SEED))
    assert svg_problems(ET.tostring(root, encoding="unicode"), fabric) == []
    assert root.get("data-max-load") == f"{doc['max_link_load']:.2f}"
    peaks = groups(root, "peak")
    assert peaks and all(g.get("data-load") == root.get("data-max-load") for g in peaks)
    assert doc["max_link_load"] > 1.5  # ECMP polarizes on the seed's fabric: a real peak


def _mutations() -> list[tuple[str, Any, str]]:
    """(what, how to break the file, the field the error must name)."""
    return [
        ("no links", lambda d: d.pop("links"), ": links"),
        ("links a number", lambda d: d.update(links=32), ": links"),
        ("missing load", lambda d: d["links"][3].pop("load"), ": links[3].load: missing"),
        ("load a string", lambda d: d["links"][0].update(load="high"), ": links[0].load"),
        ("negative load", lambda d: d["links"][0].update(load=-1), ": links[0].load"),
        ("device a number", lambda d: d["links"][1].update(z_device=7), ": links[1].z_device"),
        ("entry a list", lambda d: d["links"].__setitem__(2, [1]), ": links[2]"),
        ("no such cable", lambda d: d["links"][0].update(a_device="p1-spine9"), ": links[0]"),
        ("other fabric", lambda d: d.update(fabric="seed-2048"), ": fabric"),
        ("single plane", lambda d: d.update(planes=1), ": planes"),
    ]


@pytest.mark.parametrize(
    ("what", "breaks", "field"), _mutations(), ids=[m[0] for m in _mutations()]
)
def test_malformed_simulate_file_is_exit_2_naming_the_field(
    tmp_path: Path, what: str, breaks: Any, field: str
) -> None:
    doc, links = simulate_links(tmp_path, LAB)
    breaks(doc)
    links.write_text(json.dumps(doc))
    result = run_cli(
        "report", "-f", str(LAB), "--out", str(tmp_path / "r"), "--simulate", str(links)
    )
    assert result.exit_code == 2, what
    assert f"--simulate {links}{field}" in result.output.replace("\n", ""), result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "r").exists()  # nothing written


def test_links_out_is_refused_where_it_cannot_be_drawn(tmp_path: Path) -> None:
    out = tmp_path / "l.json"
    for args in (("--planes", "1"), ("--compare", "--report", str(tmp_path / "s.md"))):
        result = run_cli("simulate", "-f", str(SEED), "--links-out", str(out), *args)
        assert result.exit_code == 2 and "--links-out" in result.output, result.output
        assert not out.exists()
