"""Run scripts in the lab's root namespace and open TCP paths to node mgmt addresses.

``GuestExecutor`` talks to the lab's guest over SSH (QEMU's 127.0.0.1:PORT, or the UML
guest's address on its tap); ``LocalExecutor`` is used when the host kernel can hold the lab
itself.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Protocol

import paramiko

from controller.lab.errors import LabCommandError, LabTimeoutError

NodeSock = paramiko.Channel | socket.socket


class Executor(Protocol):
    def run_script(self, script: str, timeout: float = 300.0) -> tuple[int, str, str]:
        """Run ``script`` with ``sh -s`` as root in the lab's root namespace."""
        ...

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write a file on the lab's machine."""
        ...

    def open_tcp(self, addr: str, port: int, timeout: float = 5.0) -> NodeSock:
        """A stream to ``addr:port`` as seen from the lab's root namespace."""
        ...

    def close(self) -> None: ...


def atomic_write_command(path: str, mode: int) -> str:
    """Shell command writing its stdin to ``path``: beside it first, then renamed into place.

    A probe started meanwhile by another thread must never run a half-written agent: ``cat >
    path`` truncates first (a matrix run's concurrent probes failed with "SyntaxError: '[' was
    never closed", 2026-12-03)."""
    if "'" in path:
        raise LabCommandError(f"unsafe path for the guest: {path!r}")
    return (
        f't=$(mktemp \'{path}.XXXXXX\') && cat > "$t" && chmod {mode:o} "$t" '
        f"&& mv -f \"$t\" '{path}'"
    )


def exec_over_ssh(
    client: paramiko.SSHClient, command: str, stdin: bytes | None, timeout: float
) -> tuple[int, str, str]:
    """exec ``command`` on an SSH connection, feed ``stdin``, return (rc, out, err)."""
    transport = client.get_transport()
    if transport is None or not transport.is_active():
        raise LabCommandError("SSH connection is closed")
    chan = transport.open_session(timeout=timeout)
    try:
        chan.settimeout(timeout)
        chan.exec_command(command)
        if stdin is not None:
            # it may end before reading all its input: its status and stderr then say why
            with contextlib.suppress(OSError):
                chan.sendall(stdin)
        if not chan.closed:
            chan.shutdown_write()
        out, err = _drain(chan)
        return chan.recv_exit_status(), out, err
    except TimeoutError as exc:
        raise LabTimeoutError(f"command timed out after {timeout}s: {command[:80]}") from exc
    finally:
        chan.close()


def _drain(chan: paramiko.Channel) -> tuple[str, str]:
    """Read stdout then stderr to EOF (paramiko buffers stderr meanwhile)."""
    out = chan.makefile("rb").read()
    err = chan.makefile_stderr("rb").read()
    return out.decode(errors="replace"), err.decode(errors="replace")


class GuestExecutor:
    """Root namespace of the lab's guest, through its sshd."""

    def __init__(self, client: paramiko.SSHClient) -> None:
        self.client = client

    def run_script(self, script: str, timeout: float = 300.0) -> tuple[int, str, str]:
        return exec_over_ssh(self.client, "sh -s", script.encode(), timeout)

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        cmd = atomic_write_command(path, mode)
        rc, _, err = exec_over_ssh(self.client, cmd, data, 60.0)
        if rc != 0:
            raise LabCommandError(f"writing {path} in the guest failed: {err.strip()}", rc)

    def open_tcp(self, addr: str, port: int, timeout: float = 5.0) -> NodeSock:
        """A direct-tcpip channel: the guest's sshd connects (ProxyJump)."""
        transport = self.client.get_transport()
        if transport is None or not transport.is_active():
            raise LabCommandError("guest SSH connection is closed")
        return transport.open_channel(
            "direct-tcpip", (addr, port), ("127.0.0.1", 0), timeout=timeout
        )

    def close(self) -> None:
        self.client.close()


class LocalExecutor:
    """The host itself (native mode)."""

    def run_script(self, script: str, timeout: float = 300.0) -> tuple[int, str, str]:
        try:
            proc = subprocess.run(
                ["sh", "-s"],
                input=script,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise LabTimeoutError(f"script timed out after {timeout}s") from exc
        return proc.returncode, proc.stdout, proc.stderr

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, p)  # atomic: a concurrent reader sees the old file or the new one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def open_tcp(self, addr: str, port: int, timeout: float = 5.0) -> NodeSock:
        return socket.create_connection((addr, port), timeout=timeout)

    def close(self) -> None:
        return None
