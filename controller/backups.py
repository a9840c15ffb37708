"""The running configurations deploy saves before each commit.

A deploy saves a switch's running config (``get_config()["running"]``) under
``backups/<device>/<UTC time>.cfg`` in the fabric's state folder before it commits, with the
intent the device ran then beside it (``.cfg.intent.json``, when recorded); `dpctl rollback`
(`controller.rollback`) restores the newest.
"""

from __future__ import annotations

import time
from pathlib import Path

from controller.errors import DpctlError
from controller.opstate import StateFolder

RESTORED_SUFFIX = ".restored"
INTENT_SUFFIX = ".intent.json"


class NoBackup(DpctlError):
    """No saved configuration to roll a device back to."""


def latest_backup(state: StateFolder, device: str) -> Path | None:
    """The backup saved before the device's last commit (None when there is none)."""
    folder = state.backup_dir(device)
    saved = list(folder.glob("*.cfg")) if folder.is_dir() else []
    return max(saved, key=lambda p: (p.stat().st_mtime_ns, p.name)) if saved else None


def save_backup(state: StateFolder, device: str, running: str, intent: str | None = None) -> str:
    """Save ``running`` as the device's newest backup; returns its path. ``intent``: the
    intent the device ran (``controller.deployed``, as JSON), kept beside the backup so a
    rollback to it records that intent again."""
    folder = state.backup_dir(device)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (
        time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{time.time_ns() % 10**6:06d}.cfg"
    )
    if intent is not None:
        _intent_path(path).write_text(intent)
    path.write_text(running)
    return str(path)


def intent_of_backup(backup: Path) -> str | None:
    """The intent (JSON) the device ran when ``backup`` was saved; None when not known."""
    try:
        return _intent_path(backup).read_text()
    except FileNotFoundError:
        return None


def _intent_path(backup: Path) -> Path:
    return backup.with_name(backup.name + INTENT_SUFFIX)
