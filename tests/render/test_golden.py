"""Golden files: every rendered file of small fabrics, per platform and dual-leaf mode.

Regenerate after an intended change (then review the diff like any code change):
    DPCTL_REGEN_GOLDEN=1 python -m pytest tests/render/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
REGEN = os.environ.get("DPCTL_REGEN_GOLDEN") == "1"


def _intent(source: Path, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(source.read_text())
    data.update(changes)
    return data


SMALL = GOLDEN / "intents" / "cx732q-small.yaml"
CASES: dict[str, dict[str, Any]] = {
    "frr-dual-arp": _intent(INVENTORY / "lab-dual-arp.yaml"),
    "frr-evpn-mh": _intent(INVENTORY / "lab-evpn-mh.yaml"),
    "frr-dual-arp-protection-wcmp": _intent(
        INVENTORY / "lab-dual-arp.yaml",
        cross_plane_protection=True,
        load_balancing={"mode": "wcmp"},
        roce={"enabled": False},
    ),
    **{
        f"{platform}-{mode}": _intent(SMALL, platform=platform, dual_leaf_mode=mode)
        for platform in ("sonic", "asternos")
        for mode in ("dual-arp", "evpn-mh")
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    rendered = render_fabric(build_fabric(intent_from_data(CASES[case])))
    folder = GOLDEN / case
    expected_files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    got = {
        f"{device}/{name}": text
        for device, files in rendered.items()
        for name, text in files.items()
    }
    if REGEN:
        for rel, text in got.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        for stale in expected_files - set(got):
            (folder / stale).unlink()
        return
    assert set(got) == expected_files, "rendered file set differs from the golden files"
    for rel, text in sorted(got.items()):
        assert text == (folder / rel).read_text(), f"{case}/{rel} differs from its golden file"
