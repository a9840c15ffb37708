"""Every Python package under controller/ ships in the wheel: pyproject.toml lists packages
by name, and one left out installs a dpctl that cannot start (``controller.cli`` was missing
after the CLI became a package; tests/install/test_wheel.py finds that in a minute, this in
a moment)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_controller_package_is_listed() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "controller").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found - listed == set()
