"""The platform registry: built-in platforms by name, a toy platform added in one folder, and
Nornir's ``dpctl`` connection plugin opening the driver a platform names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller import platforms
from controller.access import SwitchAccess
from controller.connection import build_nornir
from controller.errors import IntentError
from controller.generator import build_fabric
from controller.intent import intent_from_data, intent_schema
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.render.engine import render_fabric
from controller.render.features import UnsupportedFeature
from tests.conftest import INVENTORY, run_cli
from tests.platforms.toy import PLATFORM as TOY


@pytest.fixture
def toy() -> Iterator[platforms.Platform]:
    platforms.register(TOY)
    yield TOY
    platforms.unregister("toy")


def _toy_intent(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((INVENTORY / "lab-dual-arp.yaml").read_text())
    return {**data, "platform": "toy", **changes}


def test_builtin_platforms_load_by_name() -> None:
    assert platforms.names()[:3] == ("asternos", "sonic", "frr")
    for name in platforms.BUILTIN:
        platform = platforms.get(name)
        assert platform.name == name
        assert platform.main_file in platform.files
        assert platform.driver_class.platform == name
        for template in platform.files.values():
            assert (platform.template_dir / template).is_file(), template


def test_an_unknown_platform_is_refused_with_the_known_ones() -> None:
    with pytest.raises(platforms.PlatformError, match=r"unknown platform 'junos' .*frr"):
        platforms.get("junos")
    with pytest.raises(IntentError, match=r"platform.*'asternos', 'sonic' or 'frr'"):
        intent_from_data(_toy_intent(platform="junos"))


def test_a_toy_platform_in_one_folder_renders(toy: platforms.Platform) -> None:
    fabric = build_fabric(intent_from_data(_toy_intent()))
    rendered = render_fabric(fabric)
    assert sorted(rendered) == sorted(s.name for s in fabric.switches)
    spine = rendered["p1-spine1"]["toy.conf"].splitlines()
    assert spine[0].startswith("toy p1-spine1 as ")
    assert spine[1:] == ["uplink swp1", "uplink swp2"]


def test_the_toy_platform_is_in_the_schema_and_the_cli(
    toy: platforms.Platform, tmp_path: Path
) -> None:
    assert "toy" in intent_schema()["properties"]["platform"]["enum"]
    intent = tmp_path / "toy.yaml"
    intent.write_text(yaml.safe_dump(_toy_intent()))
    result = run_cli("render", "-f", str(intent), "-o", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["devices"]["p1-g1-leaf1"] == ["toy.conf"]
    assert (tmp_path / "out" / "p1-g1-leaf1" / "toy.conf").read_text().startswith("toy ")


def test_the_toy_platform_refuses_what_it_cannot_do(toy: platforms.Platform) -> None:
    fabric = build_fabric(intent_from_data(_toy_intent(load_balancing={"mode": "wcmp"})))
    with pytest.raises(UnsupportedFeature, match="platform toy: toys hash evenly"):
        render_fabric(fabric)


def test_nornir_opens_the_toy_driver_through_the_dpctl_plugin(
    toy: platforms.Platform, tmp_path: Path
) -> None:
    fabric = build_fabric(intent_from_data(_toy_intent()))
    access = SwitchAccess("root", None, {"root": str(tmp_path)}, lab=True)
    nr = build_nornir(fabric, ["p1-spine1"], access)

    def push(task: Any) -> str:
        driver = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
        driver.load_replace_candidate(config="hello\n")
        diff = str(driver.compare_config())
        driver.commit_config()
        return diff

    result = nr.run(task=push)
    nr.close_connections()
    assert not result.failed, result["p1-spine1"].exception
    assert result["p1-spine1"].result == "+hello\n"
    mgmt_ip = fabric.switch_by_name["p1-spine1"].mgmt_ip  # the driver's hostname
    assert (tmp_path / mgmt_ip / "running.conf").read_text() == "hello\n"
