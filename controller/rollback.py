"""`dpctl rollback`: restore a switch's configuration saved by deploy before its last commit.

The newest backup (`controller.backups`) goes to the driver contract's ``restore_config``,
the same on every platform and from a new connection; a restored backup is renamed
``*.cfg.restored``, so the next rollback goes one commit further back.
"""

from __future__ import annotations

from nornir.core.task import Result, Task

from controller import deployed
from controller.access import FabricAccess
from controller.backups import RESTORED_SUFFIX, NoBackup, latest_backup
from controller.connection import build_nornir
from controller.deploy import DeviceOutcome, driver_of
from controller.facts import Fabric
from controller.opstate import StateFolder
from controller.render.engine import select_devices


def _restore(task: Task, saved: str) -> Result:
    driver_of(task).dpctl.restore_config(saved)
    return Result(host=task.host, result=True)


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
        try:
            result = nr.run(task=_restore, saved=saved)[device][0]
        finally:
            nr.close_connections(on_good=True, on_failed=True)
            deployed.forget(state, [device])  # restored or not: no longer a known intent
    if result.failed:
        return DeviceOutcome(
            error=f"rollback failed: {result.exception or result.result}", backup=str(backup)
        )
    backup.rename(backup.with_name(backup.name + RESTORED_SUFFIX))
    return DeviceOutcome(ok=True, changed=True, rolled_back=True, backup=str(backup))
