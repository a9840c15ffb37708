"""SSH to an FRR switch, directly or through a bastion (ProxyJump, as the lab's guest).

One connection per bastion serves every driver of the process (``JUMPS``): each device's
session is a channel over it instead of its own handshake with the bastion. Files travel to
the switch as one tar archive on a command's stdin; several vtysh reads come back from one
vtysh run and are split here.
"""

from __future__ import annotations

import io
import json
import shlex
import tarfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import paramiko

CONNECT_TIMEOUT_S = 30


class JumpPool:
    """One SSH connection per bastion for every driver of the process (the lab's guest): each
    device's session is a channel over it instead of its own handshake with the bastion."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[tuple[Any, ...], tuple[paramiko.SSHClient, int]] = {}

    def acquire(self, key: tuple[Any, ...], connect: Any) -> paramiko.SSHClient:
        with self._lock:
            client, users = self._clients.get(key, (None, 0))
            transport = client.get_transport() if client is not None else None
            if client is None or transport is None or not transport.is_active():
                client, users = connect(), 0
            self._clients[key] = (client, users + 1)
            return client

    def release(self, key: tuple[Any, ...], client: paramiko.SSHClient) -> None:
        """One user of ``client`` is done (a client replaced since is closed by its own)."""
        with self._lock:
            current, users = self._clients.get(key, (None, 0))
            if current is not client:
                client.close()
                return
            if users <= 1:
                del self._clients[key]
                client.close()
            else:
                self._clients[key] = (client, users - 1)


JUMPS = JumpPool()


def tar(files: Mapping[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        now = time.time()
        for path, text in files.items():
            data = text if isinstance(text, bytes) else text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o640, now
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def split_vtysh(output: str, json_count: int, text_count: int) -> list[str] | None:
    """One vtysh run's output of ``json_count`` JSON commands then ``text_count`` (0 or 1)
    text command: each JSON value re-serialised, then the rest. None when it does not split
    so (vtysh stops at a failing command)."""
    decoder = json.JSONDecoder()
    texts: list[str] = []
    position = 0
    for _ in range(json_count):
        while position < len(output) and output[position].isspace():
            position += 1
        try:
            value, position = decoder.raw_decode(output, position)
        except json.JSONDecodeError:
            return None
        texts.append(json.dumps(value))
    rest = output[position:].lstrip("\n")
    if text_count == 0:
        return texts if not rest.strip() else None
    return [*texts, rest] if text_count == 1 and rest else None


Jump = tuple[tuple[Any, ...], paramiko.SSHClient]
"""A bastion connection taken from ``JUMPS``: its pool key and the client (give it back)."""


def ssh_client(known_hosts: str | None) -> paramiko.SSHClient:
    """A client that checks host keys against ``known_hosts`` (else the user's) and rejects
    unknown ones."""
    client = paramiko.SSHClient()
    if known_hosts:
        client.load_host_keys(known_hosts)
    else:
        client.load_system_host_keys()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    return client


def _jump_channel(
    hostname: str, port: int, username: str, args: dict[str, Any], connect: float
) -> tuple[Jump, paramiko.Channel]:
    key = (
        args["jump_host"],
        int(args.get("jump_port", 22)),
        args.get("jump_username", username),
        args.get("jump_key_file"),
        args.get("jump_known_hosts"),
    )

    def jump_client() -> paramiko.SSHClient:
        client = ssh_client(key[4])
        client.connect(
            key[0],
            port=key[1],
            username=key[2],
            key_filename=key[3],
            allow_agent=True,
            look_for_keys=False,
            timeout=connect,
        )
        return client

    jump = JUMPS.acquire(key, jump_client)
    transport = jump.get_transport()
    if transport is None:
        JUMPS.release(key, jump)
        raise paramiko.SSHException(f"bastion {key[0]}:{key[1]} closed")
    try:
        channel = transport.open_channel(
            "direct-tcpip", (hostname, port), ("127.0.0.1", 0), timeout=connect
        )
    except BaseException:
        JUMPS.release(key, jump)
        raise
    return (key, jump), channel


def connect(
    hostname: str, username: str, password: str | None, timeout: float, args: dict[str, Any]
) -> tuple[paramiko.SSHClient, Jump | None]:
    """Log in to ``hostname`` (through ``args["jump_host"]`` when given); an unreachable
    switch fails within ``args["connect_timeout"]`` (default CONNECT_TIMEOUT_S) at each of
    TCP connect, banner and login. Raises OSError or paramiko.SSHException."""
    wait = min(timeout, float(args.get("connect_timeout", CONNECT_TIMEOUT_S)))
    port = int(args.get("port", 22))
    jump: Jump | None = None
    sock = None
    if args.get("jump_host"):
        jump, sock = _jump_channel(hostname, port, username, args, wait)
    client = ssh_client(args.get("known_hosts"))
    try:
        client.connect(
            hostname,
            port=port,
            username=username,
            password=password,
            key_filename=args.get("key_file"),
            sock=sock,
            allow_agent=True,
            look_for_keys=False,
            timeout=wait,
            banner_timeout=wait,
            auth_timeout=wait,
        )
    except BaseException:
        client.close()
        if jump is not None:
            JUMPS.release(*jump)
        raise
    return client, jump


Runner = Callable[[str], tuple[int, str, str]]


def batch_reads(run: Runner, commands: Sequence[str], marker: str) -> dict[str, str] | None:
    """Outputs of read-only commands over one exec: the ``vtysh -c X`` ones through one vtysh
    (JSON ones first, split by decoding; at most one text one, last), the others separated
    by a ``marker`` line. None when the reply does not split cleanly (a command failed)."""
    vtysh = [c for c in commands if c.startswith("vtysh -c ")]
    shell = [c for c in commands if c not in vtysh]
    args = [shlex.split(c)[2] for c in vtysh]
    texts = [a for a in args if not a.endswith(" json")]
    args = [a for a in args if a.endswith(" json")] + texts
    parts = []
    if args:
        parts.append("vtysh " + " ".join(f"-c {shlex.quote(a)}" for a in args))
    parts += shell
    rc, out, _err = run(f"; printf '\\n{marker}\\n'; ".join(parts))
    chunks = out.split(f"\n{marker}\n")
    if rc != 0 or len(chunks) != len(parts) or len(texts) > 1:
        return None
    outputs = dict(zip(shell, chunks[1:] if args else chunks, strict=True))
    split = split_vtysh(chunks[0], len(args) - len(texts), len(texts)) if args else []
    if split is None:
        return None
    for arg, text in zip(args, split, strict=True):
        outputs[f"vtysh -c {shlex.quote(arg)}"] = text
    return outputs
