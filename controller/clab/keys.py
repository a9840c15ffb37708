"""The credentials of one containerlab deployment: made by dpctl, never a password.

``<topology dir>/<fabric>.clab-keys/`` holds

- ``id_ed25519`` (+ ``.pub``): the key dpctl logs in with (mode 0600, never leaves here);
- ``node/authorized_keys`` and ``node/ssh_host_ed25519_key`` (+ ``.pub``): what the nodes
  built from ``labs/images`` get, through a read-only bind of ``node/`` at ``NODE_MOUNT``
  (their start script installs them);
- ``known_hosts``: every node's management address with that host key, so dpctl checks each
  node's identity strictly from the first connection;
- ``.gitignore`` (``*``): the folder never lands in a repository, wherever it is written.

Keys are made once and kept: exporting again (a changed plan) must not lock dpctl out of a
deployment that is running. Ed25519 through ``cryptography`` (paramiko's own backend).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.errors import OutputError

KEYS_SUFFIX = ".clab-keys"
CLIENT_KEY = "id_ed25519"
NODE_DIR = "node"
HOST_KEY = "ssh_host_ed25519_key"
AUTHORIZED_KEYS = "authorized_keys"
KNOWN_HOSTS = "known_hosts"
NODE_MOUNT = "/etc/dpctl/ssh"
"""Where the nodes see ``node/`` (read-only)."""


@dataclass(frozen=True)
class DeploymentKeys:
    """The paths of one deployment's credentials."""

    root: Path

    @property
    def client_key(self) -> Path:
        return self.root / CLIENT_KEY

    @property
    def known_hosts(self) -> Path:
        return self.root / KNOWN_HOSTS

    @property
    def node_dir(self) -> Path:
        return self.root / NODE_DIR

    @property
    def host_public_key(self) -> Path:
        return self.node_dir / f"{HOST_KEY}.pub"


def keys_dir(topology_file: Path, fabric_name: str) -> DeploymentKeys:
    """The credentials folder of a topology file: beside it, named after the fabric."""
    return DeploymentKeys(topology_file.parent / f"{fabric_name}{KEYS_SUFFIX}")


def bind_path(topology_file: Path, fabric_name: str) -> str:
    """``node/`` as the topology names it: relative to the topology file's folder, which is
    how containerlab resolves a bind's host path (core/config.go resolveBindPaths)."""
    keys = keys_dir(topology_file, fabric_name)
    return f"{keys.root.name}/{NODE_DIR}"


def _pair() -> tuple[bytes, bytes]:
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def _make_pair(private_path: Path, comment: str) -> None:
    if private_path.exists():
        return
    private, public = _pair()
    _write(private_path, private, 0o600)
    _write(
        private_path.with_name(private_path.name + ".pub"), public + f" {comment}\n".encode(), 0o644
    )


def ensure_keys(keys: DeploymentKeys, fabric_name: str, addresses: list[str]) -> DeploymentKeys:
    """Make the deployment's keys if missing and write ``known_hosts`` for ``addresses``."""
    try:
        keys.node_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(keys.root, 0o700)
        _write(
            keys.root / ".gitignore",
            b"# dpctl: deployment credentials, never committed\n*\n",
            0o644,
        )
        _make_pair(keys.client_key, f"dpctl@{fabric_name}")
        _make_pair(keys.node_dir / HOST_KEY, f"{fabric_name}-nodes")
        client_public = keys.client_key.with_name(CLIENT_KEY + ".pub").read_bytes()
        _write(keys.node_dir / AUTHORIZED_KEYS, client_public, 0o644)
        host = keys.host_public_key.read_text().split()
        lines = "".join(f"{address} {host[0]} {host[1]}\n" for address in addresses)
        _write(keys.known_hosts, lines.encode(), 0o644)
    except OSError as exc:
        raise OutputError(str(keys.root), f"cannot write the deployment's keys ({exc})") from None
    return keys
