"""The SSH session of the SONiC driver: a command's output and exit status per exec channel,
files over SFTP; unknown host keys are rejected. Tests give the driver their own ``Shell``
(optional_args ``connection_factory``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import paramiko
from napalm.base.exceptions import ConnectionException


class Shell(Protocol):
    """What the driver needs from a session: run a command (output, exit status), write a file."""

    def run(self, command: str, timeout: float) -> tuple[str, int]: ...

    def put(self, path: str, text: str) -> None: ...

    def is_alive(self) -> bool: ...

    def close(self) -> None: ...


ShellFactory = Callable[..., Shell]


class ParamikoShell:
    """SSH exec channels (exit status per command) + SFTP; unknown host keys are rejected."""

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None,
        port: int,
        timeout: float,
        known_hosts: str | None,
        key_file: str | None,
        allow_agent: bool,
    ) -> None:
        client = paramiko.SSHClient()
        if known_hosts:
            client.load_host_keys(str(Path(known_hosts).expanduser()))
        else:
            client.load_system_host_keys()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                hostname,
                port=port,
                username=username,
                password=password or None,
                key_filename=key_file,
                allow_agent=allow_agent,
                look_for_keys=key_file is None and allow_agent,
                timeout=timeout,
            )
        except Exception as exc:  # never echo credentials: only the host and the error class
            raise ConnectionException(
                f"cannot connect to {hostname}:{port}: {type(exc).__name__}: {exc}"
            ) from exc
        self._client = client

    def run(self, command: str, timeout: float) -> tuple[str, int]:
        _, stdout, stderr = self._client.exec_command(command, timeout=timeout)
        out = stdout.read().decode(errors="replace") + stderr.read().decode(errors="replace")
        return out, stdout.channel.recv_exit_status()

    def put(self, path: str, text: str) -> None:
        with self._client.open_sftp() as sftp, sftp.open(path, "w") as handle:
            handle.write(text)

    def is_alive(self) -> bool:
        transport = self._client.get_transport()
        return bool(transport and transport.is_active())

    def close(self) -> None:
        self._client.close()
