from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from controller import opstate
from controller.cli import app

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "inventory"


@pytest.fixture(autouse=True)
def _forget_state_bindings() -> Any:
    """opstate (per fabric) and the CLI (--state-dir) remember the state folder of the last
    call in this process; a test must not inherit another test's state folder."""
    from controller import cli

    opstate._bound.clear()
    cli._STATE_DIR[0] = None
    yield
    opstate._bound.clear()
    cli._STATE_DIR[0] = None


def run_cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def run_json(*args: str) -> tuple[int, Any]:
    result = run_cli(*args, "--json")
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def base_intent() -> dict[str, Any]:
    """A small valid intent to mutate in error tests."""
    data: dict[str, Any] = yaml.safe_load((INVENTORY / "lab-dual-arp.yaml").read_text())
    return data


@pytest.fixture
def write_intent(tmp_path: Path):  # type: ignore[no-untyped-def]
    def _write(data: dict[str, Any] | str) -> Path:
        path = tmp_path / "fabric.yaml"
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path

    return _write
