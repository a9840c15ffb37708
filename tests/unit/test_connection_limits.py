"""How many switches at once and how long one may take: the settings, the live progress that
names the slowest switch, and a switch that never answers being given up within its bound."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from controller.access import SwitchAccess
from controller.cli.progress import Running
from controller.connection import (
    CONNECT_TIMEOUT_S,
    LAB_WORKERS,
    WORKERS,
    Limits,
    build_nornir,
    limits,
)
from controller.errors import DpctlError
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.platforms.frr.ssh import connect
from tests.conftest import INVENTORY, run_cli

LAB = INVENTORY / "lab-dual-arp.yaml"


def test_defaults_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DPCTL_WORKERS", "DPCTL_CONNECT_TIMEOUT", "DPCTL_COMMAND_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    assert Limits() == Limits(None, CONNECT_TIMEOUT_S, 300.0)


def test_environment_then_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPCTL_WORKERS", "4")
    monkeypatch.setenv("DPCTL_CONNECT_TIMEOUT", "7.5")
    monkeypatch.setenv("DPCTL_COMMAND_TIMEOUT", "90")
    assert limits() == Limits(4, 7.5, 90.0)
    assert limits(workers=48, connect_timeout_s=2) == Limits(48, 2.0, 90.0)


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [
        ("DPCTL_WORKERS", "0", "'0' is not a number from 1 to 256"),
        ("DPCTL_WORKERS", "many", "'many' is not a number from 1 to 256"),
        ("DPCTL_CONNECT_TIMEOUT", "-1", "'-1' is not a number from 1 to 3600"),
        ("DPCTL_COMMAND_TIMEOUT", "nan", "'nan' is not a number from 1 to 86400"),
    ],
)
def test_bad_environment_is_named(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, message: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(DpctlError) as info:
        Limits()
    assert (info.value.where, info.value.reason) == (env, message)


@pytest.mark.parametrize(
    ("args", "where", "reason"),
    [
        (["--workers", "0"], "--workers", "0: from 1 to 256 switches"),
        (["--workers", "257"], "--workers", "257: from 1 to 256 switches"),
        (["--connect-timeout", "0"], "--connect-timeout", "0: a number of seconds above 0"),
        (["--command-timeout", "-5"], "--command-timeout", "-5: a number of seconds above 0"),
    ],
)
@pytest.mark.parametrize("command", ["verify", "deploy"])
def test_bad_option_is_named_and_nothing_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    args: list[str],
    where: str,
    reason: str,
) -> None:
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-lab"))
    result = run_cli(command, "-f", str(LAB), *args, "--json")
    assert result.exit_code != 0
    error = json.loads(result.stdout)["error"]
    assert (error["where"], error["reason"]) == (where, reason)
    assert not (tmp_path / "state").exists()  # refused before the state folder or a lock


def test_nornir_gets_the_limits() -> None:
    fabric = build_fabric(load_intent(LAB))
    names = [s.name for s in fabric.switches]
    nr = build_nornir(fabric, names, SwitchAccess("u", None, lab=True), reach=Limits(3, 4.0, 50))
    assert nr.runner.num_workers == 3  # type: ignore[attr-defined]
    extras = nr.inventory.hosts[names[0]].connection_options[CONNECTION_NAME].extras or {}
    assert extras["timeout"] == 50
    assert extras["optional_args"]["connect_timeout"] == 4.0
    one = build_nornir(fabric, names, SwitchAccess("u", None, lab=True), workers=1)
    assert one.runner.num_workers == 1  # type: ignore[attr-defined]


def test_default_workers_lab_and_real(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded lab's switches share one guest CPU: 8 at once; real switches: 16."""
    monkeypatch.delenv("DPCTL_WORKERS", raising=False)
    lab = build_fabric(load_intent(LAB))
    nr = build_nornir(lab, [s.name for s in lab.switches], SwitchAccess("u", None, lab=True))
    assert nr.runner.num_workers == LAB_WORKERS == 8  # type: ignore[attr-defined]
    seed = build_fabric(load_intent(INVENTORY / "lab-seed-dual-arp.yaml"))
    nr = build_nornir(seed, [s.name for s in seed.switches], SwitchAccess("u", "p"))
    assert nr.runner.num_workers == WORKERS == 16  # type: ignore[attr-defined]
    monkeypatch.setenv("DPCTL_WORKERS", "2")
    nr = build_nornir(seed, [s.name for s in seed.switches], SwitchAccess("u", "p"))
    assert nr.runner.num_workers == 2  # type: ignore[attr-defined]


def test_running_names_the_slowest_switch() -> None:
    running = Running()
    assert running.summary() == ""
    running.start("p1-spine1")
    time.sleep(0.01)
    running.start("p1-g1-leaf1")
    now = time.monotonic() + 12
    assert running.summary(now) == "2 running, slowest p1-spine1 12 s"
    running.stop("p1-spine1")
    assert running.summary(now).startswith("1 running, slowest p1-g1-leaf1 ")
    running.stop("p1-g1-leaf1")
    assert running.summary() == ""


@pytest.fixture
def silent_sshd() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts TCP and never sends an SSH banner: what a frozen
    (SIGSTOPped) sshd looks like from outside (its kernel still completes the handshake)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_frozen_switch_is_given_up_within_the_connect_timeout(silent_sshd: int) -> None:
    started = time.monotonic()
    with pytest.raises((OSError, paramiko.SSHException)):
        connect("127.0.0.1", "u", None, 300, {"port": silent_sshd, "connect_timeout": 1.5})
    assert 1.4 < time.monotonic() - started < 5
