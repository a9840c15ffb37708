"""`dpctl rollback`: restore a switch's configuration saved by deploy before its last commit.

The newest backup (`controller.backups`) goes to the driver contract's ``restore_config``,
the same on every platform and from a new connection; a restored backup is renamed
``*.cfg.restored``, so the next rollback goes one commit further back.
"""

from __future__ import annotations

from pathlib import Path

from nornir.core.task import Result, Task

from controller import deployed
from controller.access import FabricAccess
from controller.backups import RESTORED_SUFFIX, NoBackup, intent_of_backup, latest_backup
from controller.connection import build_nornir
from controller.deploy import DeviceOutcome, driver_of
from controller.facts import Fabric
from controller.opstate import StateFolder
from controller.render.engine import select_devices


def _restore(task: Task, saved: str) -> Result:
    driver_of(task).dpctl.restore_config(saved)
    return Result(host=task.host, result=True)


def _record_restored(state: StateFolder, device: str, backup: Path, restored: bool) -> None:
    """The intent the device runs after the rollback (``controller.deployed``): the one it
    ran when the backup was saved, if known; else, and after a failed restore, unknown."""
    ran = intent_of_backup(backup) if restored else None
    if ran is None:
        deployed.forget(state, [device])
    else:
        deployed.record_text(state, ran, [device])


def rollback_device(
    fabric: Fabric, access: FabricAccess, state: StateFolder, device: str
) -> DeviceOutcome:
    """Restore the device's newest backup; raises NoBackup (nothing changed) without one."""
    names = select_devices(fabric, None, device)
    backup = latest_backup(state, device)
    if backup is None:
        raise NoBackup(
            device,
            f"no backup saved under {state.backup_dir(device)} (dpctl deploy saves one before "
            "each commit); nothing was changed",
        )
    saved = backup.read_text()
    nr = build_nornir(fabric, names, access.switches, workers=1)
    with state.lock(f"rollback {device}"):
        result: Result | None = None
        try:
            result = nr.run(task=_restore, saved=saved)[device][0]
        finally:
            nr.close_connections(on_good=True, on_failed=True)
            restored = result is not None and not result.failed
            _record_restored(state, device, backup, restored)
    if result.failed:
        return DeviceOutcome(
            error=f"rollback failed: {result.exception or result.result}", backup=str(backup)
        )
    backup.rename(backup.with_name(backup.name + RESTORED_SUFFIX))
    return DeviceOutcome(ok=True, changed=True, rolled_back=True, backup=str(backup))
