"""`dpctl rollback` on SONiC and AsterNOS: the deploy's backup restored from a new connection.

Each mocked device here keeps its state across connections (the switch outlives the SSH
session): SONiC's CONFIG_DB and FRR daemon configs change with ``config replace`` /
``config rollback`` / frr-reload and are saved by ``config save`` / ``write memory``;
AsterNOS's klish running-config changes line by line in configuration mode. The flow is the
real one: a deploy saves ``get_config()["running"]`` under the state dir and commits, the
session closes; ``rollback_device`` opens a new connection and restores that backup; a third
connection reads the device back.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller import deployed
from controller.backups import NoBackup, latest_backup, save_backup
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import BgpTimers, intent_from_data
from controller.opstate import StateFolder
from controller.platforms.asternos.driver import AsterNOSDriver
from controller.platforms.sonic.driver import SonicDriver
from controller.rollback import rollback_device
from tests.conftest import INVENTORY, switch_access
from tests.drivers.candidates import ASTERNOS_CLI, SONIC_BUNDLE
from tests.drivers.conftest import MOCKED, RevertTimer, unbounded

DEVICE = "p1-g1-leaf1"


def folder(fabric: Fabric) -> StateFolder:
    """The fabric's state folder under DPCTL_STATE_DIR (the ``state_dir`` fixture)."""
    return StateFolder.for_intent(fabric.intent.name, None)


def fabric_for(platform: str) -> Fabric:
    data = yaml.safe_load((INVENTORY / "lab-dual-arp.yaml").read_text())
    models = {"leaf": "CX732Q-N", "spine": "CX732Q-N"}
    return build_fabric(intent_from_data({**data, "platform": platform, "switches": models}))


# ----------------------------------------------------------------------------- SONiC box


class SonicBox:
    """A SONiC switch's state, kept across sessions."""

    def __init__(self) -> None:
        sonic = MOCKED / "sonic"
        self.db: dict[str, Any] = json.loads(
            (sonic / "sudo_n_show_runningconfiguration_all.json").read_text()
        )
        self.frr = {
            d: (sonic / f"sudo_n_docker_exec_bgp_vtysh_c_show_running_config_{d}.txt").read_text()
            for d in ("zebra", "bgpd")
        }
        self.saved_db = copy.deepcopy(self.db)
        self.saved_frr = dict(self.frr)
        self.checkpoints: dict[str, dict[str, Any]] = {}
        self.timer = RevertTimer()
        self.files: dict[str, str] = {}
        self.sessions = 0


class SonicSession:
    def __init__(self, box: SonicBox) -> None:
        self.box = box
        box.sessions += 1
        self.alive = True

    def run(self, command: str, timeout: float) -> tuple[str, int]:
        box = self.box
        command = unbounded(command)
        timer = box.timer.answer(command)
        if timer is not None:
            return timer
        argv = shlex.split(command)
        if command == "sudo -n show runningconfiguration all":
            return json.dumps(box.db), 0
        if command == "cat /etc/sonic/config_db.json":
            return json.dumps(box.saved_db), 0
        match = re.fullmatch(r"sudo -n cat /etc/sonic/frr/(\w+)\.conf", command)
        if match:
            return box.saved_frr[match.group(1)], 0
        match = re.fullmatch(
            r"sudo -n docker exec bgp vtysh -c 'show running-config (\w+)'", command
        )
        if match:
            return box.frr[match.group(1)], 0
        if argv[:4] == ["sudo", "-n", "config", "checkpoint"]:
            box.checkpoints[argv[4]] = copy.deepcopy(box.db)
            return "Checkpoint created successfully.\n", 0
        if argv[:4] == ["sudo", "-n", "config", "rollback"]:
            box.db = copy.deepcopy(box.checkpoints[argv[4]])
            return "Config rolled back successfully.\n", 0
        if argv[:4] == ["sudo", "-n", "config", "replace"]:
            box.db = json.loads(box.files[argv[4]])
            return "Config replaced successfully.\n", 0
        if argv[:4] == ["sudo", "-n", "docker", "cp"]:
            box.files[argv[5].split(":", 1)[1]] = box.files[argv[4]]
            return "", 0
        if argv[:5] == ["sudo", "-n", "docker", "exec", "bgp"] and "--daemon" in argv:
            daemon = argv[argv.index("--daemon") + 1]
            box.frr[daemon] = box.files[argv[-1]]
            return "", 0
        if command == "sudo -n config save -y":
            box.saved_db = copy.deepcopy(box.db)
            return "", 0
        if command == "sudo -n docker exec bgp vtysh -c 'write memory'":
            box.saved_frr = dict(box.frr)
            return "", 0
        if argv[:2] == ["mkdir", "-p"] or "test -x" in command:
            return "", 0
        raise AssertionError(f"the SONiC box does not know {command!r}")

    def put(self, path: str, text: str) -> None:
        self.box.files[path] = text

    def is_alive(self) -> bool:
        return self.alive

    def close(self) -> None:
        self.alive = False


# --------------------------------------------------------------------------- AsterNOS box

OPENERS = re.compile(r"^(interface |router bgp |address-family |route-map |vlan )")


def parse_tree(text: str) -> list[tuple[str, ...]]:
    """The configuration as ordered paths (parents..., line), from indented text."""
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("!") or line in ("end", "exit", "exit-address-family"):
            continue
        if line.startswith(("Building configuration", "Current configuration")):
            continue
        depth = len(raw) - len(raw.lstrip(" "))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        paths.append((*(s for _, s in stack), line))
        stack.append((depth, line))
    return paths


class KlishBox:
    """An AsterNOS switch's running-config as paths; configuration mode edits it."""

    def __init__(self) -> None:
        text = (MOCKED / "asternos" / "show_running_config.txt").read_text()
        self.paths = parse_tree(text)
        self.saved = list(self.paths)
        self.sessions = 0

    def apply(self, lines: Sequence[str]) -> None:
        context: list[str] = []
        for line in lines:
            if line in ("exit", "exit-address-family"):
                context = context[:-1]
                continue
            here = tuple(context)
            if line.startswith("no ") and (*here, line[3:]) in self.paths:
                gone = (*here, line[3:])
                self.paths = [p for p in self.paths if p[: len(gone)] != gone]
                continue
            negated = (*here, f"no {line}")
            self.paths = [p for p in self.paths if p != negated]
            if (*here, line) not in self.paths:
                # a new line goes at the end of its mode's block, as a running-config shows it
                inside = [i for i, p in enumerate(self.paths) if here and p[: len(here)] == here]
                self.paths.insert(inside[-1] + 1 if inside else len(self.paths), (*here, line))
            if OPENERS.match(line):
                context.append(line)

    def running(self) -> str:
        out = ["Building configuration...", "", "Current configuration:", "!"]
        for path in self.paths:
            out.append(" " * (len(path) - 1) + path[-1])
        return "\n".join([*out, "end", ""])


class KlishSession:
    def __init__(self, box: KlishBox) -> None:
        self.box = box
        box.sessions += 1
        self.alive = True

    def send_command(self, command_string: str, **kwargs: Any) -> str:
        if command_string == "show running-config":
            return self.box.running()
        if command_string == "show startup-config":
            return "\n".join(" " * (len(p) - 1) + p[-1] for p in self.box.saved)
        raise AssertionError(f"the AsterNOS box does not know {command_string!r}")

    def send_config_set(self, config_commands: Sequence[str], **kwargs: Any) -> str:
        self.box.apply(list(config_commands))
        return ""

    def save_config(self) -> str:
        self.box.saved = list(self.box.paths)
        return "Save succeeded"

    def is_alive(self) -> bool:
        return self.alive

    def disconnect(self) -> None:
        self.alive = False


# ----------------------------------------------------------------------------------- tests


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-lab"))
    return tmp_path / "state"


def deploy_and_close(driver: Any, fabric: Fabric, candidate: str) -> str:
    """What deploy does on a real run: back up the running config, commit; then the session
    ends. Returns the backup text."""
    driver.open()
    backup = driver.get_config()["running"]
    save_backup(folder(fabric), DEVICE, backup)
    driver.load_replace_candidate(config=candidate)
    driver.commit_config()
    driver.close()
    return str(backup)


def sonic_state(running: str) -> dict[str, Any]:
    from controller.drivers.bundle import unpack

    files = unpack(running, "config_db.json")
    return {"config_db": json.loads(files["config_db.json"]), "frr": files["frr.conf"]}


def test_sonic_rollback_from_a_new_connection_restores_the_backup(state_dir: Path) -> None:
    fabric = fabric_for("sonic")
    box = SonicBox()
    args = {"connection_factory": lambda **_: SonicSession(box)}
    backup = deploy_and_close(
        SonicDriver(DEVICE, "admin", "x", optional_args=args), fabric, SONIC_BUNDLE
    )
    assert box.db != sonic_state(backup)["config_db"]  # the commit changed the device
    assert "bgp graceful-shutdown" in box.frr["bgpd"]

    outcome = rollback_device(fabric, switch_access("admin", "x", args), folder(fabric), DEVICE)
    assert outcome.ok and outcome.rolled_back, outcome
    assert box.sessions == 2  # the rollback's own connection

    reader = SonicDriver(DEVICE, "admin", "x", optional_args=args)
    reader.open()
    after = reader.get_config()
    assert sonic_state(after["running"]) == sonic_state(backup)
    assert sonic_state(after["startup"])["config_db"] == sonic_state(backup)["config_db"]
    assert "bgp graceful-shutdown" not in box.saved_frr["bgpd"]  # saved, not only running
    # the restored backup is used up: the next rollback has none left (one commit only)
    assert latest_backup(folder(fabric), DEVICE) is None
    with pytest.raises(NoBackup, match="nothing was changed"):
        rollback_device(fabric, switch_access("admin", "x", args), folder(fabric), DEVICE)


def test_asternos_rollback_from_a_new_connection_restores_the_backup(state_dir: Path) -> None:
    fabric = fabric_for("asternos")
    box = KlishBox()
    args = {"connection_factory": lambda **_: KlishSession(box)}
    before = list(box.paths)
    backup = deploy_and_close(
        AsterNOSDriver(DEVICE, "admin", "x", optional_args=args), fabric, ASTERNOS_CLI
    )
    assert set(box.paths) != set(before)  # the commit changed the device
    assert ("vlan 1002",) not in box.paths

    outcome = rollback_device(fabric, switch_access("admin", "x", args), folder(fabric), DEVICE)
    assert outcome.ok and outcome.rolled_back, outcome
    assert box.sessions == 2

    reader = AsterNOSDriver(DEVICE, "admin", "x", optional_args=args)
    reader.open()
    assert set(parse_tree(reader.get_config()["running"])) == set(parse_tree(backup))
    assert set(box.saved) == set(before)  # written, so it survives a reboot


def test_rollback_goes_back_one_commit_at_a_time(state_dir: Path) -> None:
    fabric = fabric_for("asternos")
    box = KlishBox()
    args = {"connection_factory": lambda **_: KlishSession(box)}
    first = deploy_and_close(
        AsterNOSDriver(DEVICE, "admin", "x", optional_args=args), fabric, ASTERNOS_CLI
    )
    second_candidate = ASTERNOS_CLI.replace("mtu 9216", "mtu 9100")
    second = deploy_and_close(
        AsterNOSDriver(DEVICE, "admin", "x", optional_args=args), fabric, second_candidate
    )
    assert rollback_device(fabric, switch_access("admin", "x", args), folder(fabric), DEVICE).ok
    assert set(box.paths) == set(parse_tree(second))
    assert rollback_device(fabric, switch_access("admin", "x", args), folder(fabric), DEVICE).ok
    assert set(box.paths) == set(parse_tree(first))


def test_rollback_without_a_backup_is_refused_and_changes_nothing(state_dir: Path) -> None:
    fabric = fabric_for("sonic")
    box = SonicBox()
    args = {"connection_factory": lambda **_: SonicSession(box)}
    with pytest.raises(NoBackup, match=f"no backup saved under .*{DEVICE}"):
        rollback_device(fabric, switch_access("admin", "x", args), folder(fabric), DEVICE)
    assert box.sessions == 0


def test_cli_rollback_without_backup_exits_2_naming_the_device(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import run_cli

    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    result = run_cli("rollback", "-f", str(INVENTORY / "fabric.yaml"), "--device", DEVICE, "--json")
    assert result.exit_code == 2, result.stdout
    error = json.loads(result.stdout)["error"]
    assert error["where"] == DEVICE and "no backup saved" in error["reason"]


def test_a_rollback_records_the_intent_its_backup_ran(state_dir: Path) -> None:
    """After a rollback the switch runs the intent it ran when the backup was saved (deploy
    keeps it beside the backup), so its next drain renders that one; a backup without it
    leaves what the switch runs unknown (controller/deployed.py)."""
    fabric = fabric_for("asternos")
    box = KlishBox()
    args = {"connection_factory": lambda **_: KlishSession(box)}
    state = folder(fabric)
    older = fabric.intent.model_copy(update={"bgp_timers": BgpTimers(keepalive=4, hold=12)})
    with state.lock("test"):
        deployed.record(state, fabric.intent, [DEVICE])
    driver = AsterNOSDriver(DEVICE, "admin", "x", optional_args=args)
    driver.open()
    save_backup(state, DEVICE, driver.get_config()["running"], older.model_dump_json())
    driver.load_replace_candidate(config=ASTERNOS_CLI)
    driver.commit_config()
    driver.close()
    assert rollback_device(fabric, switch_access("admin", "x", args), state, DEVICE).ok
    assert deployed.intent_running(state, DEVICE) == older
    deploy_and_close(AsterNOSDriver(DEVICE, "admin", "x", optional_args=args), fabric, ASTERNOS_CLI)
    assert rollback_device(fabric, switch_access("admin", "x", args), state, DEVICE).ok
    assert deployed.intent_running(state, DEVICE) is None
