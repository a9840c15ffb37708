"""`dpctl accept`'s HTML report: the failing cable drawn red on the picture, the punch list
and the failures beside it; in headless Chromium, the red cable is on the screenshot."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from controller.accept.cabling import Action, cable
from controller.accept.result import AcceptReport, failed, passed
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.outputs.drawing_state import StateFileError
from controller.outputs.report import write_report
from tests.conftest import INVENTORY, ROOT
from tests.report.test_browser import CHROMIUM, WINDOW, body_data, chromium

FABRIC = build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml"))


def accept_json(tmp_path: Path) -> Path:
    swap = Action(
        "swap",
        ("p1-g1-leaf1", "swp3"),
        ("p1-g1-leaf1", "swp4"),
        (cable(("p1-g1-leaf1", "swp3"), ("p1-spine2", "swp1")),),
        (cable(("p1-g1-leaf1", "swp3"), ("p1-spine1", "swp1")),),
    )
    rows = [
        passed("cabling", "srv0001:nic1p1 - p1-g1-leaf1:swp1", "LLDP sees the planned neighbour"),
        failed(
            "traffic",
            "p1-g1-leaf2:swp3 - p1-spine1:swp2",
            "p1-g1-leaf2:swp3 -> p1-spine1:swp2 drops everything",
            "replace the cable p1-g1-leaf2:swp3 - p1-spine1:swp2",
            device="p1-g1-leaf2",
            port="swp3",
        ),
    ]
    report = AcceptReport(FABRIC.intent.name, {}, rows, [swap.to_dict()], {"total": 20}, 99.0)
    path = tmp_path / "accept.json"
    path.write_text(json.dumps(report.to_dict()))
    return path


def test_failing_cable_is_red_and_the_punch_list_beside_it(tmp_path: Path) -> None:
    summary = write_report(FABRIC, tmp_path, accept_json=accept_json(tmp_path))
    html = Path(summary["report"]).read_text()
    assert "Acceptance test (dpctl accept)" in html and "Punch list" in html
    assert "swap the cables in p1-g1-leaf1:swp3 and p1-g1-leaf1:swp4" in html
    assert "replace the cable p1-g1-leaf2:swp3 - p1-spine1:swp2" in html
    svg = Path(summary["svg"]).read_text()
    down = re.findall(r'<g class="bundle fabric[^"]* down[^"]*"[^>]*data-a="([^"]+)"', svg)
    assert down, "no fabric bundle drawn down"


def test_a_file_that_is_not_accept_json_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"findings": [{"status": "fail"}]}))
    with pytest.raises(StateFileError, match="dpctl accept --json"):
        write_report(FABRIC, tmp_path, accept_json=bad)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/setup)")
def test_screenshot_shows_the_failed_cable_red(tmp_path: Path) -> None:
    from PIL import Image

    summary = write_report(FABRIC, tmp_path, accept_json=accept_json(tmp_path))
    url = Path(summary["report"]).resolve().as_uri()
    dump = chromium("--dump-dom", url)
    assert dump.returncode == 0, dump.stderr[-2000:]
    data = body_data(dump.stdout)
    shot = tmp_path / "accept-report.png"
    run = chromium(f"--screenshot={shot}", url)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == WINDOW
        box = (
            data["svg-left"],
            data["svg-top"],
            min(data["svg-left"] + data["svg-width"], WINDOW[0]),
            min(data["svg-top"] + data["svg-height"], WINDOW[1]),
        )
        raw = image.convert("RGB").crop(box).tobytes()
        pixels = set(zip(raw[0::3], raw[1::3], raw[2::3], strict=True))
        # the down cable's red (#dc2626) is on the screen
        assert any(r > 190 and g < 80 and b < 80 for r, g, b in pixels), "no red cable"
    keep = os.environ.get("DPCTL_SCREENSHOTS")
    if keep:
        shutil.copy(shot, ROOT / keep / "accept-report.png")


def test_out_folder_gets_json_junit_and_the_report(tmp_path: Path) -> None:
    from controller.cli.accept import write_outputs

    report = AcceptReport(
        FABRIC.intent.name,
        {},
        [
            failed(
                "links",
                "p1-g1-leaf1:swp1",
                "link down",
                "check it",
                device="p1-g1-leaf1",
                port="swp1",
            )
        ],
        [],
        {"total": 20},
        1.0,
    )
    junit = tmp_path / "ci" / "accept.xml"
    write_outputs(report, FABRIC, tmp_path / "out", junit)
    assert json.loads((tmp_path / "out" / "accept.json").read_text())["ok"] is False
    assert junit.read_bytes() == (tmp_path / "out" / "junit.xml").read_bytes()
    assert "link down" in (tmp_path / "out" / "report.html").read_text()
