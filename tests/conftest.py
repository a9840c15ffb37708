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


LAB_TESTS = "tests/lab/"
LAB_GROUPS = {"dual-arp": "lab-1", "evpn-mh": "lab-2", "tests/lab/test_multi_lab.py": "lab-1"}
"""The xdist group of each mode's lab tests, and of the multi-group lab's (its own lab, after
the dual-ARP one: the two groups take about as long, 2026-12-06); the other lab tests (the
integration and substrate guests, the lab's unit tests) join the second."""


def xdist_group_of(item: pytest.Item) -> str:
    """Its module, or for a lab test its lab's group (see pytest_collection_modifyitems)."""
    path = item.nodeid.split("::", 1)[0]
    if not path.startswith(LAB_TESTS):
        return path
    callspec = getattr(item, "callspec", None)
    mode = callspec.params.get("lab") if callspec is not None else None
    return LAB_GROUPS.get(str(mode), LAB_GROUPS.get(path, "lab-2"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spread the suite over the machine's cores (pytest-xdist, ``--dist loadgroup`` in
    pyproject.toml) without two tests sharing what they must not. Each mode's lab tests
    form one group, so one worker runs them in file order on the one lab of that mode
    (tests/lab/conftest.py: each its own prefix), and the two labs run at once, one User-
    Mode Linux guest (one CPU) each; every other module is a group of its own, so no
    module's fixtures, fixed ports or namespaces are used by two workers at once (xdist
    hands out the groups largest first). First of the hooks: xdist's own turns the marks
    into the scheduler's groups, and a mark added after it is ignored (two workers each
    brought the same lab up)."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))


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
