"""A script the FRR driver runs on a switch ends there when the controller would stop waiting
for it: a commit given up on must not go on changing the switch while the rollback runs
(seed-scale lab, 2026-12-07: ``frr-reload.py`` still running 20 minutes after its controller).

Real sshd on 127.0.0.1 (a port of its own, keys made for the test), real paramiko, the
driver's own ``_with_files``; the "switch" is this machine, its state folder a temporary one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.platforms.frr import driver as frr_module
from controller.platforms.frr.driver import SWITCH_SIDE_MARGIN_S, FrrDriver

SSHD = "/usr/sbin/sshd"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path(SSHD).exists() or shutil.which("ssh-keygen") is None,
    reason="needs root, /usr/sbin/sshd and ssh-keygen (the suite's machine has them)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """An sshd letting root in with a key made here; the driver's state folder in tmp_path."""
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("host", "user"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
        )
    (keys / "authorized_keys").write_text((keys / "user.pub").read_text())
    port = _free_port()
    config = tmp_path / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        f"PasswordAuthentication no\nStrictModes no\nUsePAM no\nPidFile {tmp_path / 'pid'}\n"
    )
    host_key = (keys / "host.pub").read_text().split()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        state = tmp_path / "state"
        monkeypatch.setattr(frr_module, "STATE", str(state))
        yield {
            "args": {"port": port, "key_file": str(keys / "user"), "known_hosts": str(known)},
            "state": state,
        }
    finally:
        sshd.terminate()  # the sshd this test started, by its PID
        sshd.wait(timeout=10)


def _driver(switch: dict[str, Any], timeout: int) -> FrrDriver:
    driver = FrrDriver("127.0.0.1", "root", None, timeout=timeout, optional_args=switch["args"])
    driver.open()
    return driver


def test_a_script_past_its_bound_is_ended_on_the_switch_with_what_it_started(
    switch: dict[str, Any],
) -> None:
    state = switch["state"]
    driver = _driver(switch, timeout=SWITCH_SIDE_MARGIN_S + 4)  # ended after 5 s there
    began = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="ended on the switch after 5 s"):
            driver._with_files(
                {"note": "x"},
                f"echo $$ > {state}/script.pid\nsleep 300 &\necho $! > {state}/child.pid\nwait",
            )
    finally:
        driver.close()
    took = time.monotonic() - began
    assert took < SWITCH_SIDE_MARGIN_S + 4, f"the controller waited {took:.1f} s"
    assert (state / "note").read_text() == "x"  # the files came first
    time.sleep(0.5)
    left = {name: int((state / name).read_text()) for name in ("script.pid", "child.pid")}
    running = {name: pid for name, pid in left.items() if _alive(pid)}
    for pid in running.values():  # what this test started, by PID, so a failure leaves nothing
        os.kill(pid, 9)
    assert not running, f"still running on the switch: {running}"


def test_a_script_within_its_bound_answers_as_before(switch: dict[str, Any]) -> None:
    driver = _driver(switch, timeout=30)
    try:
        rc, out, err = driver._with_files({}, "echo out; echo err >&2; exit 3")
    finally:
        driver.close()
    assert (rc, out, err) == (3, "out\n", "err\n")
