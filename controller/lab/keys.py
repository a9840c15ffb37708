"""SSH keys of a lab: generated into the state dir (0600), never printed or logged."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def write_keypair(path: Path) -> str:
    """Create an ed25519 key at ``path`` (OpenSSH format, 0600) unless present.

    Returns the public key line (``ssh-ed25519 AAAA...``).
    """
    if not path.exists():
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
    priv = serialization.load_ssh_private_key(path.read_bytes(), password=None)
    pub = priv.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return pub.decode()


def known_hosts_line(host: str, port: int, pubkey: str) -> str:
    """A known_hosts entry (``[host]:port`` form unless port 22)."""
    name = host if port == 22 else f"[{host}]:{port}"
    return f"{name} {pubkey}\n"


def write_private(path: Path, text: str, mode: int = 0o600) -> None:
    """Write a file that only root may read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
