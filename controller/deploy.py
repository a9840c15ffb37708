"""`dpctl deploy`: render -> compare -> commit per switch, in parallel, never half-configured.

Per device: load the rendered bundle as a replace candidate, diff it; on a real run save the
running config to disk (timestamped), commit (the driver saves its own rollback point first),
then post-check: the config reads back as intended, BGP sessions that were up stay up and
sessions to peers deployed in the same run come up; then every session exchanges its routes
again (route refresh, ``refresh_bgp_routes`` in controller/drivers/contract.py). A device
failing its post-check is rolled back automatically; the others carry on. One operation at a
time per fabric (the lock, the backups and the drain states live in the fabric's state folder:
`controller.opstate`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nornir.core.task import Result, Task

from controller import opstate
from controller.connection import Access, build_nornir, fabric_access
from controller.drivers import bundle
from controller.drivers.contract import DpctlDriver
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.render.device import Maintenance, build_device
from controller.render.engine import render_fabric, select_devices

POST_CHECK_TIMEOUT_S = float(os.environ.get("DPCTL_POST_CHECK_TIMEOUT", "90"))


DeployLocked = opstate.OperationLocked
"""Another deploy, drain, undrain or rollback of the fabric holds its lock."""


def deploy_lock(fabric_name: str) -> AbstractContextManager[None]:
    return opstate.operation_lock(fabric_name, "deploy")


@dataclass
class DeviceOutcome:
    ok: bool = False
    changed: bool = False
    error: str | None = None
    diff: str = ""
    backup: str | None = None
    rolled_back: bool = False
    seconds: float = 0.0
    sessions_up: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _up_peers(connection: Any) -> set[str]:
    peers = connection.get_bgp_neighbors().get("global", {}).get("peers", {})
    return {name for name, peer in peers.items() if peer.get("is_up")}


def _wait_sessions(connection: Any, wanted: set[str], timeout: float) -> tuple[bool, set[str]]:
    deadline = time.monotonic() + timeout
    up: set[str] = set()
    while True:
        up = _up_peers(connection)
        if wanted <= up or time.monotonic() > deadline:
            return wanted <= up, up
        time.sleep(2.0)


def backup_folder(fabric: str, device: str) -> Path:
    """Where a deploy saves a device's running config before each commit."""
    return opstate.backup_dir(fabric, device)


def latest_backup(fabric: str, device: str) -> Path | None:
    """The backup saved before the device's last commit (None when there is none)."""
    folder = backup_folder(fabric, device)
    saved = list(folder.glob("*.cfg")) if folder.is_dir() else []
    return max(saved, key=lambda p: (p.stat().st_mtime_ns, p.name)) if saved else None


def _backup(fabric: str, device: str, running: str) -> str:
    folder = backup_folder(fabric, device)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (
        time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{time.time_ns() % 10**6:06d}.cfg"
    )
    path.write_text(running)
    return str(path)


def _running_config(connection: Any) -> str:
    """The rollback backup: the running configuration whole, never sanitized (a sanitized one
    holds placeholders for its secrets; ``dpctl.restore_config`` refuses it)."""
    return str(connection.get_config(retrieve="running", sanitized=False)["running"])


def deploy_task(
    task: Task,
    files: dict[str, dict[str, str]],
    fabric_name: str,
    dry_run: bool,
    peers_in_run: dict[str, set[str]],
    progress: Callable[[str, str], None] | None,
) -> Result:
    outcome = DeviceOutcome()
    name = task.host.name
    start = time.monotonic()
    try:
        connection = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
        connection.load_replace_candidate(config=bundle.pack(files[name]))
        outcome.diff = connection.compare_config()
        outcome.changed = bool(outcome.diff)
        if dry_run or not outcome.changed:
            connection.discard_config()
            outcome.ok = True
            return Result(host=task.host, result=outcome)
        before = _up_peers(connection)
        outcome.backup = _backup(fabric_name, name, _running_config(connection))
        if progress:
            progress(name, "committing")
        try:
            connection.commit_config()
            connection.load_replace_candidate(config=bundle.pack(files[name]))
            leftover = connection.compare_config()
            connection.discard_config()
            if leftover:
                raise DpctlError(name, f"config does not read back as intended:\n{leftover[:600]}")
            wanted = before | peers_in_run.get(name, set())
            ok, up = _wait_sessions(connection, wanted, POST_CHECK_TIMEOUT_S)
            outcome.sessions_up = sorted(up)
            if not ok:
                raise DpctlError(name, f"BGP sessions not up after commit: {sorted(wanted - up)}")
            # routes exchanged while this switch's or a peer's policy was half applied: again
            connection.dpctl.refresh_bgp_routes()
        except Exception as exc:  # post-check or commit failed: back to the saved config
            outcome.error = (
                str(exc) if isinstance(exc, DpctlError) else f"{type(exc).__name__}: {exc}"
            )
            try:
                connection.rollback()
                outcome.rolled_back = True
                outcome.error += "; rolled back to the previous config"
            except Exception as rollback_exc:  # report both failures
                outcome.error += f"; ROLLBACK FAILED: {type(rollback_exc).__name__}: {rollback_exc}"
            return Result(host=task.host, result=outcome, failed=True)
        outcome.ok = True
        return Result(host=task.host, result=outcome)
    except Exception as exc:  # one failing device must not stop the others
        outcome.error = f"{type(exc).__name__}: {exc}"
        return Result(host=task.host, result=outcome, failed=True)
    finally:
        outcome.seconds = round(time.monotonic() - start, 2)
        if progress:
            progress(name, "ok" if outcome.ok else "failed")


def _peers_in_run(fabric: Fabric, names: list[str]) -> dict[str, set[str]]:
    selected = set(names)
    return {
        name: {
            n.interface
            for n in build_device(fabric, name).bgp.neighbors
            if n.peer_device in selected
        }
        for name in names
    }


def deploy(
    fabric: Fabric,
    plane: int | None = None,
    device: str | None = None,
    dry_run: bool = False,
    access: Access | None = None,
    maintenance: dict[str, Maintenance] | None = None,
    progress: Callable[[str, str], None] | None = None,
    rendered: dict[str, dict[str, str]] | None = None,
    lock_held: bool = False,
) -> dict[str, DeviceOutcome]:
    """Deploy the selected switches; returns an outcome per device (never raises per device).

    ``rendered`` replaces the rendering step (tests use it to push a config a device rejects).
    ``lock_held``: the caller holds the fabric's lock (a drain step); otherwise deploy takes it.
    """
    names = select_devices(fabric, plane, device)
    if lock_held:
        opstate.require_lock(fabric.intent.name)
    with nullcontext() if lock_held else deploy_lock(fabric.intent.name):
        access = access or fabric_access(fabric)
        if maintenance is None:  # the recorded drain states; not while a step is open
            book = maintenance_book(fabric)
            if not dry_run:
                opstate.refuse_pending(book, names)
            maintenance = opstate.committed(book)
        files = rendered or render_fabric(
            fabric, plane=plane, device=device, maintenance=maintenance
        )
        nr = build_nornir(fabric, names, access)
        try:
            results = nr.run(
                task=deploy_task,
                files=files,
                fabric_name=fabric.intent.name,
                dry_run=dry_run,
                peers_in_run=_peers_in_run(fabric, names),
                progress=progress,
            )
        finally:
            nr.close_connections(on_good=True, on_failed=True)
    outcomes: dict[str, DeviceOutcome] = {}
    for name in names:
        result = results[name][0].result
        outcomes[name] = (
            result if isinstance(result, DeviceOutcome) else DeviceOutcome(error=str(result))
        )
    return outcomes


def maintenance_file(fabric: Fabric) -> Path:
    return opstate.maintenance_path(fabric.intent.name)


def maintenance_book(fabric: Fabric) -> dict[str, opstate.LeafState]:
    """Every switch's drain state and open step (a corrupt file is a StateError)."""
    return opstate.read_maintenance(fabric.intent.name, set(fabric.switch_by_name))


def load_maintenance(fabric: Fabric) -> dict[str, Maintenance]:
    """Switches in maintenance (drained), so a deploy keeps them drained."""
    return opstate.committed(maintenance_book(fabric))


class NoBackup(DpctlError):
    """No saved configuration to roll a device back to."""


RESTORED_SUFFIX = ".restored"


def rollback_device(fabric: Fabric, device: str, access: Access | None = None) -> DeviceOutcome:
    """Restore the device's configuration saved (by deploy) before its last commit.

    Same on every platform and from a new connection: the newest backup under the state dir
    goes to the driver contract's ``restore_config``. A restored backup is renamed
    ``*.cfg.restored``, so the next rollback goes one commit further back.
    """
    names = select_devices(fabric, None, device)
    access = access or fabric_access(fabric)
    backup = latest_backup(fabric.intent.name, device)
    if backup is None:
        raise NoBackup(
            device,
            f"no backup saved under {backup_folder(fabric.intent.name, device)} (dpctl deploy "
            "saves one before each commit); nothing was changed",
        )
    saved = backup.read_text()
    nr = build_nornir(fabric, names, access, workers=1)

    def task(task: Task) -> Result:
        connection = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
        if not isinstance(connection, DpctlDriver):
            raise TypeError(f"{type(connection).__name__} does not implement DpctlDriver")
        connection.dpctl.restore_config(saved)
        outcome = DeviceOutcome(ok=True, changed=True, rolled_back=True, backup=str(backup))
        return Result(host=task.host, result=outcome)

    with opstate.operation_lock(fabric.intent.name, f"rollback {device}"):
        try:
            result = nr.run(task=task)[device][0]
        finally:
            nr.close_connections(on_good=True, on_failed=True)
    if result.failed:
        return DeviceOutcome(
            error=f"rollback failed: {result.exception or result.result}", backup=str(backup)
        )
    backup.rename(backup.with_name(backup.name + RESTORED_SUFFIX))
    outcome: DeviceOutcome = result.result
    return outcome
