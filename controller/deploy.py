"""`dpctl deploy`: render -> compare -> commit per switch, in parallel, never half-configured.

Per device: load the rendered bundle as a replace candidate, diff it; on a real run save the
running config to disk (timestamped), commit (the driver saves its own rollback point first),
then post-check: the config reads back as intended, BGP sessions that were up stay up and
sessions to peers deployed in the same run come up; then every session exchanges its routes
again (route refresh, ``refresh_bgp_routes`` in controller/drivers/contract.py). A device
failing its post-check is rolled back automatically; the others carry on. One operation at a
time per fabric (the lock, the backups and the drain states live in the fabric's state folder:
`controller.opstate`).

Progress is reported to Nornir processors (``processors``): each switch's task starts and
completes, and its ``commit`` subtask starts when the switch is about to change.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from nornir.core.exceptions import NornirSubTaskError
from nornir.core.processor import Processor
from nornir.core.task import Result, Task

from controller import deployed, opstate
from controller.access import FabricAccess
from controller.backups import save_backup
from controller.connection import Limits, build_nornir
from controller.drivers import bundle
from controller.drivers.contract import DpctlDriver
from controller.errors import DpctlError
from controller.facts import Fabric, Maintenance
from controller.opstate import StateFolder
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.render.device import DeviceConfig
from controller.render.engine import render_configs, select_devices, structured_configs

POST_CHECK_TIMEOUT_S = float(os.environ.get("DPCTL_POST_CHECK_TIMEOUT", "90"))
COMMIT = "commit"
"""The name of the subtask that changes a switch (processors see it start)."""

DeployLocked = opstate.OperationLocked
"""Another deploy, drain, undrain or rollback of the fabric holds its lock."""


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


def driver_of(task: Task) -> DpctlDriver:
    """The task's host's open dpctl driver (Nornir's ``dpctl`` connection)."""
    driver: DpctlDriver = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
    return driver


def running_config(connection: DpctlDriver) -> str:
    """The rollback backup: the running configuration whole, never sanitized (a sanitized one
    holds placeholders for its secrets; ``dpctl.restore_config`` refuses it)."""
    return str(connection.get_config(retrieve="running", sanitized=False)["running"])


def up_peers(connection: DpctlDriver) -> set[str]:
    peers = connection.get_bgp_neighbors().get("global", {}).get("peers", {})
    return {name for name, peer in peers.items() if peer.get("is_up")}


class Settled:
    """The switches of one deploy run whose configuration is in place: committed, or found
    unchanged. Nornir's worker threads share it.

    A switch's post-check waits only for its sessions to peers of the run that are settled:
    with more switches than workers, a peer may not even have started (the seed fabric's 16
    leaves of a plane took all 16 workers, each waited 90 s for spines still queued behind
    them, and rolled back, 2026-12-06). Of two peers, the one that settles second sees the
    first settled and checks their session, so every session of the run is still checked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()

    def add(self, name: str) -> None:
        with self._lock:
            self._names.add(name)

    def discard(self, name: str) -> None:
        with self._lock:
            self._names.discard(name)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._names


Wanted = set[str] | Callable[[], set[str]]
"""The sessions a post-check waits for: fixed, or read again at each poll."""


def _wait_sessions(
    connection: DpctlDriver, wanted: Wanted, timeout: float
) -> tuple[bool, set[str], set[str]]:
    """(all wanted up, the sessions up, the sessions wanted) once all are up or at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        want = wanted() if callable(wanted) else wanted
        up = up_peers(connection)
        if want <= up or time.monotonic() > deadline:
            return want <= up, up, want
        time.sleep(2.0)


def commit_and_check(
    task: Task,
    connection: DpctlDriver,
    config: str,
    wanted: Wanted,
    settled: Settled,
    revert_in: int | None = None,
) -> Result:
    """Commit the loaded candidate (with ``revert_in``: NAPALM's commit-confirm, the switch
    reverts by itself unless confirmed), then the post-check (reads back as intended, the
    ``wanted`` sessions up) and a route refresh; raises on any failure."""
    name = task.host.name
    if revert_in is None:
        connection.commit_config()
    else:
        connection.commit_config(revert_in=revert_in)
    settled.add(name)
    connection.load_replace_candidate(config=config)
    leftover = connection.compare_config()
    connection.discard_config()
    if leftover:
        raise DpctlError(name, f"config does not read back as intended:\n{leftover[:600]}")
    ok, up, want = _wait_sessions(connection, wanted, POST_CHECK_TIMEOUT_S)
    if not ok:
        raise DpctlError(name, f"BGP sessions not up after commit: {sorted(want - up)}")
    # routes exchanged while this switch's or a peer's policy was half applied: again
    connection.dpctl.refresh_bgp_routes()
    return Result(host=task.host, result=sorted(up))


def _roll_back(connection: DpctlDriver, outcome: DeviceOutcome, exc: NornirSubTaskError) -> None:
    cause = exc.result[0].exception if exc.result else exc
    outcome.error = (
        str(cause) if isinstance(cause, DpctlError) else f"{type(cause).__name__}: {cause}"
    )
    try:
        connection.rollback()
        outcome.rolled_back = True
        outcome.error += "; rolled back to the previous config"
    except Exception as rollback_exc:  # report both failures
        outcome.error += f"; ROLLBACK FAILED: {type(rollback_exc).__name__}: {rollback_exc}"


def deploy_task(
    task: Task,
    files: Mapping[str, Mapping[str, str]],
    state: StateFolder,
    dry_run: bool,
    peers_in_run: Mapping[str, set[str] | Mapping[str, str]],
    settled: Settled | None = None,
    revert_in: int | None = None,
) -> Result:
    """One switch: compare, back up, commit with post-check, roll back on failure.

    ``peers_in_run``: per switch its sessions to other switches of the run, as interface ->
    peer (:func:`peers_in_run`; the post-check waits for those whose peer is ``settled``)
    or as a set of interfaces (waited for whatever the peers' state)."""
    outcome = DeviceOutcome()
    name = task.host.name
    start = time.monotonic()
    settled = settled if settled is not None else Settled()
    try:
        connection = driver_of(task)
        config = bundle.pack(dict(files[name]))
        connection.load_replace_candidate(config=config)
        outcome.diff = connection.compare_config()
        outcome.changed = bool(outcome.diff)
        if dry_run or not outcome.changed:
            connection.discard_config()
            settled.add(name)
            outcome.ok = True
            return Result(host=task.host, result=outcome)
        wanted = _wanted(up_peers(connection), peers_in_run.get(name, set()), settled)
        ran = deployed.running_text(state, name)  # what a rollback to the backup runs
        outcome.backup = save_backup(state, name, running_config(connection), ran)
        try:
            done = task.run(
                task=commit_and_check,
                name=COMMIT,
                connection=connection,
                config=config,
                wanted=wanted,
                settled=settled,
                revert_in=revert_in,
            )
            outcome.sessions_up = list(done.result)
        except NornirSubTaskError as exc:  # post-check or commit failed: back to the saved one
            settled.discard(name)
            _roll_back(connection, outcome, exc)
            return Result(host=task.host, result=outcome, failed=True)
        outcome.ok = True
        return Result(host=task.host, result=outcome)
    except Exception as exc:  # one failing device must not stop the others
        outcome.error = f"{type(exc).__name__}: {exc}"
        return Result(host=task.host, result=outcome, failed=True)
    finally:
        outcome.seconds = round(time.monotonic() - start, 2)


def _wanted(before: set[str], in_run: set[str] | Mapping[str, str], settled: Settled) -> Wanted:
    """The sessions up before the commit, and those to the run's settled peers."""
    if not isinstance(in_run, Mapping):
        return before | set(in_run)
    peers = dict(in_run)
    return lambda: before | {iface for iface, peer in peers.items() if peer in settled}


def peers_in_run(devices: Mapping[str, DeviceConfig]) -> dict[str, dict[str, str]]:
    """Per device, its BGP interfaces to other devices of the same run and the device at the
    other end (their sessions must come up once both ends' commits are done)."""
    return {
        name: {n.interface: n.peer_device for n in device.bgp.neighbors if n.peer_device in devices}
        for name, device in devices.items()
    }


def _drain_states(
    fabric: Fabric, state: StateFolder, names: list[str], dry_run: bool
) -> dict[str, Maintenance]:
    """The recorded drain states to render with; refused while a step is open on a switch
    (its live config is unknown), except for a dry run."""
    book = state.leaf_states(fabric)
    if not dry_run:
        opstate.refuse_pending(book, names)
    return opstate.committed(book)


def deploy(
    fabric: Fabric,
    access: FabricAccess,
    state: StateFolder,
    plane: int | None = None,
    device: str | None = None,
    dry_run: bool = False,
    maintenance: Mapping[str, Maintenance] | None = None,
    processors: Sequence[Processor] = (),
    rendered: Mapping[str, Mapping[str, str]] | None = None,
    lock_held: bool = False,
    reach: Limits | None = None,
    revert_in: int | None = None,
) -> dict[str, DeviceOutcome]:
    """Deploy the selected switches; returns an outcome per device (never raises per device).

    ``maintenance`` (a drain step's states) replaces the recorded drain states; ``rendered``
    replaces the rendering step (tests push a config a device rejects). ``lock_held``: the
    caller holds the fabric's lock (a drain step); otherwise deploy takes it. ``reach``:
    switches at once and timeouts (default: :class:`~controller.connection.Limits`).
    ``revert_in``: each commit is confirmed later by the caller (``maintain --action
    apply``) or reverts by itself on the switch after that many seconds.
    """
    names = select_devices(fabric, plane, device)
    if lock_held:
        state.require_lock()
    with nullcontext() if lock_held else state.lock("deploy"):
        if maintenance is None:
            maintenance = _drain_states(fabric, state, names, dry_run)
        if not dry_run:
            deployed.check_readable(state)  # it is written after the commits
        devices = structured_configs(fabric, names, maintenance)
        files = rendered or render_configs(fabric, devices).files
        nr = build_nornir(fabric, names, access.switches, reach=reach)
        nr = nr.with_processors(list(processors))
        try:
            results = nr.run(
                task=deploy_task,
                files=files,
                state=state,
                dry_run=dry_run,
                peers_in_run=peers_in_run(devices),
                settled=Settled(),
                revert_in=revert_in,
            )
        finally:
            nr.close_connections(on_good=True, on_failed=True)
        outcomes: dict[str, DeviceOutcome] = {}
        for name in names:
            result = results[name][0].result
            outcomes[name] = (
                result if isinstance(result, DeviceOutcome) else DeviceOutcome(error=str(result))
            )
        if not dry_run:
            _record_running(fabric, state, outcomes, confirmed=revert_in is None)
    return outcomes


def _record_running(
    fabric: Fabric, state: StateFolder, outcomes: Mapping[str, DeviceOutcome], confirmed: bool
) -> None:
    """Under the lock, after the commits: the switches now running the intent (not yet for a
    commit that still waits for its confirmation), and those whose config is unknown (a
    commit whose rollback failed) forgotten (``controller.deployed``)."""
    running = [n for n, o in outcomes.items() if o.ok and (confirmed or not o.changed)]
    unknown = [n for n, o in outcomes.items() if not o.ok and o.backup and not o.rolled_back]
    deployed.record(state, fabric.intent, running)
    deployed.forget(state, unknown)
