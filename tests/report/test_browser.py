"""The report in a real browser: Debian's headless Chromium opens it, dumps the DOM after its
script ran and takes a screenshot; the picture must have rendered (element counts, sizes,
a non-blank image). Skips only where chromium is not installed (.ci/setup installs it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from controller.generator import build_fabric
from controller.intent import load_intent
from controller.outputs.report import write_report
from tests.conftest import INVENTORY, ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian package `chromium`, .ci/setup)"
)
WINDOW = (1600, 1250)
CASES = {
    "lab": INVENTORY / "lab-dual-arp.yaml",
    "2048": INVENTORY / "examples/seed-2048-cx864e-dual-arp.yaml",
}


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM
    with tempfile.TemporaryDirectory(prefix="dpctl-chromium-") as profile:
        return subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={WINDOW[0]},{WINDOW[1]}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


def body_data(dom: str) -> dict[str, int]:
    tag = re.search(r"<body[^>]*>", dom)
    assert tag, "no <body> in the dumped DOM"
    return {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', tag.group(0))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_renders_in_chromium(case: str, tmp_path: Path) -> None:
    from PIL import Image, ImageStat

    fabric = build_fabric(load_intent(CASES[case]))
    summary = write_report(fabric, tmp_path)
    url = Path(summary["report"]).resolve().as_uri()

    dump = chromium("--dump-dom", url)
    assert dump.returncode == 0, dump.stderr[-2000:]
    data = body_data(dump.stdout)
    assert data["rendered-boxes"] == summary["boxes"] > 0
    assert data["rendered-bundles"] == summary["bundles"] > 0
    # a host cable is on its leaf's and its server's sheet, an AUX cable on both leaves'
    both_ends = ("host", "aux")
    assert data["sheet-rows"] == 2 * sum(1 for lk in fabric.links if lk.kind in both_ends) + sum(
        1 for lk in fabric.links if lk.kind not in both_ends
    )
    assert 600 <= data["svg-width"] <= WINDOW[0]  # scaled to the page, never wider
    assert 400 <= data["svg-height"] <= 4000

    shot = tmp_path / f"report-{case}.png"
    run = chromium(f"--screenshot={shot}", url)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == WINDOW
        # the picture's part of the screen (the SVG's box, cut at the window's edge)
        box = (
            data["svg-left"],
            data["svg-top"],
            min(data["svg-left"] + data["svg-width"], WINDOW[0]),
            min(data["svg-top"] + data["svg-height"], WINDOW[1]),
        )
        assert box[2] - box[0] > 300 and box[3] - box[1] > 300, f"picture off screen: {box}"
        picture = image.convert("RGB").crop(box)
        grey = picture.convert("L")
        assert ImageStat.Stat(grey).stddev[0] > 25, "the picture is (nearly) blank"
        dark = sum(grey.histogram()[:160]) / (grey.width * grey.height)
        assert dark > 0.01, f"too little drawn: {dark:.2%} dark pixels"
        raw = picture.tobytes()
        pixels = set(zip(raw[0::3], raw[1::3], raw[2::3], strict=True))
        # the cables' plane colours are on the screen (blue plane 1, orange plane 2)
        assert any(b > 180 and r < 90 for r, g, b in pixels), "no plane-1 (blue) cable visible"
        assert any(r > 190 and b < 80 and 90 < g < 170 for r, g, b in pixels), "no plane-2 cable"
    keep = os.environ.get("DPCTL_SCREENSHOTS")
    if keep:  # regenerate docs/: DPCTL_SCREENSHOTS=docs pytest tests/report/test_browser.py
        shutil.copy(shot, ROOT / keep / f"report-{case}.png")
