"""Operator state (controller/opstate.py): where it lives, the lock between two operators, the
maintenance record (pending steps, corrupt files), and undrain of a leaf in service."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.cli.common import load_fabric
from controller.deploy import deploy
from controller.drain import drain_steps, undrain_steps
from controller.errors import DpctlError
from controller.opstate import LeafState, StateFolder
from controller.verify import check_maintenance
from tests.conftest import INVENTORY, ROOT, run_cli, switch_access

NAME = "lab-dual-arp"
LEAF, PARTNER, OTHER = "p1-g1-leaf1", "p2-g1-leaf1", "p1-g1-leaf2"
SEED = {"format": 1, "leaves": {OTHER: {"state": "isolated", "pending": None, "since": ""}}}


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An intent file in its own folder; no state variable; cwd somewhere else."""
    folder = tmp_path / "fabric"
    folder.mkdir()
    shutil.copy(INVENTORY / f"{NAME}.yaml", folder / "fabric.yaml")
    monkeypatch.delenv("DPCTL_STATE_DIR", raising=False)
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-lab"))
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    monkeypatch.chdir(tmp_path)
    return folder / "fabric.yaml"


def folder_of(intent: Path) -> StateFolder:
    return StateFolder.for_intent(NAME, intent)


def test_state_folder_next_to_intent_env_and_option(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert folder_of(shared).path == shared.parent / ".dpctl" / NAME
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # another operator's directory: same state
    assert folder_of(Path("..") / "fabric" / "fabric.yaml").path == shared.parent / ".dpctl" / NAME
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "env"))
    assert folder_of(shared).path == tmp_path / "env" / NAME
    monkeypatch.delenv("DPCTL_PASSWORD")  # deploy stops at the credentials, before any switch
    result = run_cli("--state-dir", str(tmp_path / "opt"), "deploy", "-f", str(shared))
    assert result.exit_code == 2 and "DPCTL_PASSWORD" in result.stdout + result.stderr
    # the option wins over the variable: verify reads (and names) the option's record
    record = tmp_path / "opt" / NAME / "maintenance.json"
    record.parent.mkdir(parents=True)
    record.write_text("[]")
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    result = run_cli("--state-dir", str(tmp_path / "opt"), "verify", "-f", str(shared), "--json")
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["where"] == str(record)
    help_text = run_cli("--help").stdout
    assert "--state-dir" in help_text and "DPCTL_STATE_DIR" in help_text


def _silent_listener() -> socket.socket:
    """A TCP port on 127.0.0.1 that accepts and never answers (an SSH jump host that hangs),
    so operator A holds the lock for a while in a real command."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock


def _fake_lab(lab_root: Path, port: int) -> None:
    state = lab_root / NAME
    state.mkdir(parents=True)
    (state / "known_hosts").write_text("")
    lab = {
        "name": NAME,
        "prefix": "dpo-",
        "mode": "guest",
        "state_dir": str(state),
        "mgmt_subnet": "172.31.0.0/24",
        "mgmt_bridge_ip": "172.31.0.1",
        "nodes": {},
        "guest_pid": None,
        "guest_port": port,
        "timings": {},
    }
    (state / "lab.json").write_text(json.dumps(lab))


def _dpctl(cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    code = "from controller.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args, "--json"],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_operators_from_different_directories(shared: Path, tmp_path: Path) -> None:
    """Two processes, the real lock: A's drain holds it, B (another directory, same intent by
    another path) is refused for drain, deploy and undrain, and the record stays as it was."""
    record = shared.parent / ".dpctl" / NAME / "maintenance.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps(SEED))
    before = record.read_bytes()
    listener = _silent_listener()
    _fake_lab(tmp_path / "labs", listener.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k != "DPCTL_STATE_DIR"}
    env["DPCTL_LAB_DIR"] = str(tmp_path / "labs")
    a_dir, b_dir = tmp_path / "opA", tmp_path / "opB" / "sub"
    a_dir.mkdir()
    b_dir.mkdir(parents=True)
    a = _dpctl(a_dir, env, "drain", LEAF, "-f", "../fabric/fabric.yaml")
    try:
        lock = record.parent / "lock"
        deadline = time.monotonic() + 30
        while not (lock.exists() and f"drain {LEAF}" in lock.read_text()):
            assert time.monotonic() < deadline and a.poll() is None, a.communicate()
            time.sleep(0.1)
        listener.settimeout(60)  # A gone before connecting fails the test, never hangs it
        try:
            conn, _ = listener.accept()  # A is in its pre-checks, waiting for the partner
        except TimeoutError:
            a.kill()
            pytest.fail(f"operator A never reached the partner: {a.communicate()}")
        for args in (("drain", PARTNER), ("deploy",), ("undrain", OTHER)):
            b = _dpctl(b_dir, env, *args, "-f", str(shared))
            out, err = b.communicate(timeout=60)
            assert b.returncode == 2, (args, out, err)
            error = json.loads(out)["error"]
            assert error["type"] == "OperationLocked", error
            assert f"drain {LEAF} by pid {a.pid}" in error["reason"]
            assert error["where"] == str(lock)
            assert "Traceback" not in err
            assert record.read_bytes() == before  # refused: nothing changed
        conn.close()
    finally:
        listener.close()
        out, err = a.communicate(timeout=120)
    # A went on alone; it could not read the partner (no switch here): refused, nothing changed
    assert a.returncode == 2, (out, err)
    assert "cannot be checked" in json.loads(out)["error"]["reason"]
    assert record.read_bytes() == before
    assert lock.read_text() and not folder_of(shared).holds_lock()


def test_undrain_of_leaf_in_service_refused_changing_nothing(shared: Path) -> None:
    record = shared.parent / ".dpctl" / NAME / "maintenance.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps(SEED))
    before = record.read_bytes()
    result = run_cli("undrain", LEAF, "-f", str(shared), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "UndrainRefused" and error["where"] == LEAF
    assert "in service" in error["reason"] and "nothing was changed" in error["reason"]
    assert record.read_bytes() == before
    with pytest.raises(DpctlError, match="in service"):
        undrain_steps(LEAF, LeafState())
    assert undrain_steps(OTHER, LeafState("isolated")) == ("returning", "none")
    assert undrain_steps(LEAF, LeafState("none", "graceful-shutdown")) == ("none",)


def test_drain_steps_from_recorded_state() -> None:
    assert drain_steps(LeafState()) == ("graceful-shutdown", "handed-off", "isolated")
    assert drain_steps(LeafState(), hand_off=False) == ("graceful-shutdown", "isolated")
    assert drain_steps(LeafState("none", "graceful-shutdown")) == (
        "graceful-shutdown",
        "handed-off",
        "isolated",
    )
    assert drain_steps(LeafState("graceful-shutdown", "isolated")) == ("handed-off", "isolated")
    assert drain_steps(LeafState("handed-off", "isolated")) == ("isolated",)
    assert drain_steps(LeafState("graceful-shutdown"), hand_off=False) == ("isolated",)
    assert drain_steps(LeafState("isolated")) == ()
    assert drain_steps(LeafState("returning")) == ("isolated",)  # no host-port bounce


CORRUPT = {
    "not json": b'{"p1-g1-leaf1": "isol',
    "not utf-8": b'{"p1-g1-leaf1": "\xff"}',
    "a list": b"[1, 2]",
    "unknown state": b'{"p1-g1-leaf1": "drained"}',
    "unknown switch": b'{"p9-g9-leaf9": "isolated"}',
    "bad pending": b'{"format": 1, "leaves": {"p1-g1-leaf1": {"state": "none", "pending": 3}}}',
    "bad entry": b'{"format": 1, "leaves": {"p1-g1-leaf1": "isolated"}}',
    "wrong format": b'{"format": 7, "leaves": {}}',
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_state_is_a_clear_error(shared: Path, case: str) -> None:
    record = shared.parent / ".dpctl" / NAME / "maintenance.json"
    record.parent.mkdir(parents=True)
    record.write_bytes(CORRUPT[case])
    for args in (("deploy", "--dry-run"), ("verify",), ("drain", LEAF), ("undrain", LEAF)):
        result = run_cli(*args, "-f", str(shared), "--json")
        assert result.exit_code == 2, (args, result.stdout, result.exception)
        error = json.loads(result.stdout)["error"]
        assert error["type"] == "StateError" and error["where"] == str(record), error
        assert "corrupt maintenance state" in error["reason"]
        assert "to repair" in error["reason"] and "dpctl verify" in error["reason"]
    assert record.read_bytes() == CORRUPT[case]


def test_first_layout_still_read(shared: Path) -> None:
    fabric, state = load_fabric(shared), folder_of(shared)
    record = state.maintenance_path
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({OTHER: "isolated"}))
    assert state.leaf_states(fabric) == {OTHER: LeafState("isolated")}


def test_step_recorded_pending_then_committed_only_under_the_lock(shared: Path) -> None:
    fabric, state = load_fabric(shared), folder_of(shared)
    devices = set(fabric.switch_by_name)
    with pytest.raises(DpctlError, match="without the fabric's lock"):
        state.begin_step(devices, LEAF, "graceful-shutdown")
    assert not state.maintenance_path.exists()
    with state.lock("test"):
        states = state.begin_step(devices, LEAF, "graceful-shutdown")
        assert states == {LEAF: "graceful-shutdown"}
        book = state.leaf_states(fabric)
        assert book[LEAF].state == "none" and book[LEAF].pending == "graceful-shutdown"
        state.end_step(devices, LEAF, committed_ok=False)  # rolled back
        assert state.leaf_states(fabric) == {}
        state.begin_step(devices, LEAF, "graceful-shutdown")
        state.end_step(devices, LEAF, committed_ok=True)
        assert state.leaf_states(fabric) == {LEAF: LeafState("graceful-shutdown")}
        state.begin_step(devices, LEAF, "isolated")  # left open (outcome unknown)


def test_open_step_refused_by_deploy_reported_by_verify(shared: Path) -> None:
    fabric, state = load_fabric(shared), folder_of(shared)
    with state.lock("test"):
        state.begin_step(set(fabric.switch_by_name), LEAF, "isolated")
    with pytest.raises(DpctlError, match=f"dpctl drain {LEAF}` or `dpctl undrain {LEAF}"):
        deploy(fabric, switch_access("admin", "x", {}), state, device=LEAF)
    result = run_cli("deploy", "-f", str(shared), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["type"] == "StepPending"
    live = {"maintenance": {"graceful_shutdown": False, "isolated": False}}
    book = state.leaf_states(fabric)
    check = check_maintenance(fabric, LEAF, live, {}, book[LEAF])
    assert not check.ok and check.check == "maintenance (step to isolated in progress)"
    assert check_maintenance(fabric, LEAF, live, {}, None).ok
