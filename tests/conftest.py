from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from controller.access import FabricAccess, ServerAccess, SwitchAccess
from controller.cli import app
from controller.traffic_ansible import AnsibleTraffic

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "inventory"


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


def switch_access(
    username: str, password: str | None, optional_args: dict[str, Any]
) -> FabricAccess:
    """A fabric access for tests that drive switches only (servers by plain SSH, unused)."""
    servers = ServerAccess(user=username)
    return FabricAccess(
        SwitchAccess(username, password, optional_args), servers, AnsibleTraffic(servers), "test"
    )
