"""A real sshd on 127.0.0.1 for the drivers' tests: a port of its own, keys made for the test,
root let in with one of them; the "switch" is this machine. ``path_first``: a folder whose
commands the sessions find first on PATH (sshd's ``SetEnv``), where a test puts the fake
commands a switch would have (SONiC's ``config``, ``docker``...)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

SSHD = "/usr/sbin/sshd"

needs_sshd = pytest.mark.skipif(
    os.geteuid() != 0 or not Path(SSHD).exists() or shutil.which("ssh-keygen") is None,
    reason="needs root, /usr/sbin/sshd and ssh-keygen (the suite's machine has them)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def end_and_list_alive(pids: dict[str, int]) -> dict[str, int]:
    """Which of ``pids`` (processes the test's own commands started) still run; each is then
    killed, by its PID, so a failing test leaves nothing behind."""
    running = {name: pid for name, pid in pids.items() if alive(pid)}
    for pid in running.values():
        os.kill(pid, 9)
    return running


@contextmanager
def sshd(folder: Path, path_first: Path | None = None) -> Iterator[dict[str, Any]]:
    """Run sshd with its files in ``folder``; yields the drivers' optional_args to reach it
    (port, key_file, known_hosts)."""
    keys = folder / "keys"
    keys.mkdir()
    for name in ("host", "user"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
        )
    (keys / "authorized_keys").write_text((keys / "user.pub").read_text())
    port = _free_port()
    config = folder / "sshd_config"
    path = (
        f"SetEnv PATH={path_first}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
    )
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        f"PasswordAuthentication no\nStrictModes no\nUsePAM no\nPidFile {folder / 'pid'}\n"
        "Subsystem sftp internal-sftp\n" + (path if path_first else "")
    )
    host_key = (keys / "host.pub").read_text().split()
    known = folder / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield {"port": port, "key_file": str(keys / "user"), "known_hosts": str(known)}
    finally:
        server.terminate()  # the sshd this test started, by its PID
        server.wait(timeout=10)
