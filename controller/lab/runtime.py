"""Lab lifecycle: ``up``, ``status``, ``down``."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import paramiko

from controller.lab import guest, scripts, substrate
from controller.lab.errors import LabCommandError, LabError, LabStateError, LabTimeoutError
from controller.lab.executor import Executor
from controller.lab.keys import known_hosts_line, write_keypair
from controller.lab.session import LabSession, open_executor
from controller.lab.split import check_guests, guest_of
from controller.lab.state import STATE_FILE, LabState, NodeState, Removed, load_state
from controller.lab.topology import LabTopology, mgmt_addresses, namespace, validate
from controller.lab.uml import UmlSubstrate

DEFAULT_PREFIX = "dpl-"
GUEST_STATE_PATH = "/run/dpl/state"  # where the guest sees the state dir (see kernel.py)
_STATE_ENTRIES = (STATE_FILE, STATE_FILE + ".tmp", "id_ed25519", "known_hosts", "guest", "nodes")


def up(
    topology: LabTopology,
    state_dir: Path | str,
    prefix: str = DEFAULT_PREFIX,
    mode: Literal["auto", "guest", "native"] = "auto",
    memory_mb: int | None = None,
    substrate_name: str | None = None,
    boot_timeout: float = 180.0,
    ready_timeout: float = 120.0,
    frr_timeout: float = 240.0,
    lldpd: bool = True,
    frr_daemons: tuple[str, ...] = scripts.DEFAULT_FRR_DAEMONS,
    guests: int = 1,
) -> LabState:
    """Build and start the lab; on any failure everything started is removed again.

    FRR starts with an empty configuration (factory state). Returns the saved state, once
    every node answers on SSH and every switch's FRR runs. The machine is the first
    substrate this one can run (:mod:`controller.lab.substrate`), ``substrate_name`` or
    DPCTL_LAB_SUBSTRATE when given; ``mode`` "guest" skips native, "native" forces it.
    ``guests`` 2 splits it over two User-Mode Linux instances, one per plane
    (:mod:`controller.lab.split`).
    """
    sdir = Path(state_dir).resolve()
    if not re.fullmatch(r"[A-Za-z0-9_./+-]+", str(sdir)):
        raise LabError(f"state dir path must be plain (no spaces or quotes): {sdir}")
    validate(topology, prefix)
    check_guests(guests)
    choice = _choose(mode, substrate_name, prefix)  # a bad or impossible one changes nothing
    if guests > 1 and choice.name != "uml":
        raise LabError(
            f"a lab split over {guests} instances runs on user-mode-linux only (one CPU per "
            f"instance), not on {substrate.label(choice.name)}"
        )
    _refuse_running(sdir)
    sdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    state = _initial_state(topology, sdir, prefix, choice, guests)
    t0 = time.monotonic()
    executors: list[Executor] = []
    try:
        node_keys = _write_keys(state)
        executors = _start_machines(state, topology, memory_mb, boot_timeout, guests)
        state.timings["boot_s"] = round(time.monotonic() - t0, 2)
        with LabSession(state, executors[0]) as session:
            _build(state, topology, executors, lldpd, frr_daemons)
            state.timings["build_s"] = round(time.monotonic() - t0, 2)
            _write_known_hosts(state, node_keys)
            session.wait_ssh(timeout=ready_timeout)
            if "bgpd" in frr_daemons:  # what `lab status` counts as a running switch
                state.timings["frr_wait_s"] = round(_wait_frr(state, executors, frr_timeout), 2)
        state.timings["up_s"] = round(time.monotonic() - t0, 2)
        state.save()
        return state
    except BaseException:
        with contextlib.suppress(Exception):
            down(sdir, prefix=prefix)
        raise
    finally:
        for extra in executors[1:]:  # the session closed instance 0's
            extra.close()


FRR_SETTLE_S = 5.0


def _wait_frr(state: LabState, executors: list[Executor], timeout: float) -> float:
    """Wait until every switch's sshd, watchfrr and bgpd run, and still do FRR_SETTLE_S
    later; returns the seconds waited. In the emulated guest FRR is up 35-46 s after the
    build (its watchfrr first restarts the daemons that were not up yet when it looked,
    lab syslog of 2026-12-02), and a lab handed over before that showed switches as not
    running (`lab status`, a CI run of 2026-12-02)."""
    switches = {name: n for name, n in state.nodes.items() if n.kind == "switch"}
    if not switches:
        return 0.0
    started = time.monotonic()
    ready_since: float | None = None
    while True:
        running = _liveness(state, executors, switches)
        waiting = sorted(name for name in switches if not running.get(name))
        now = time.monotonic()
        if not waiting:
            ready_since = ready_since if ready_since is not None else now
            if now - ready_since >= FRR_SETTLE_S:
                return now - started
        else:
            ready_since = None
            if now - started > timeout:
                raise LabTimeoutError(
                    f"FRR not running on {', '.join(waiting)} {timeout:.0f} s after the build"
                )
        time.sleep(1.0)


def _liveness(
    state: LabState, executors: list[Executor], nodes: dict[str, NodeState]
) -> dict[str, bool]:
    """Node -> running (:func:`scripts.parse_status`), asked of each node's instance."""
    running: dict[str, bool] = {}
    for index, executor in enumerate(executors):
        spec = [
            (name, n.namespace, n.kind == "switch") for name, n in nodes.items() if n.guest == index
        ]
        if spec:
            _rc, out, _ = executor.run_script(scripts.status_script(spec, state.prefix), 60.0)
            running.update(scripts.parse_status(out))
    return running


def _refuse_running(sdir: Path) -> None:
    try:
        old = load_state(sdir)
    except LabStateError:
        return
    if old.guest_pid and substrate.of_state(old).is_ours(old.guest_pid, sdir):
        raise LabError(f"a lab is already up in {sdir}: run down first")
    down(sdir, prefix=old.prefix)  # stale leftovers of a crashed run


def _choose(mode: str, name: str | None, prefix: str) -> substrate.Choice:
    if name is None and mode == "native":
        name = "native"
    return substrate.choose(prefix, forced=name, guest_only=mode == "guest")


def _initial_state(
    topo: LabTopology, sdir: Path, prefix: str, choice: substrate.Choice, guests: int
) -> LabState:
    bridge_ip, addrs, _ = mgmt_addresses(topo)
    nodes = {
        n.name: NodeState(
            kind=n.kind,
            role=n.role,
            plane=n.plane,
            namespace=namespace(prefix, n.name),
            mgmt_ip=addrs[n.name],
            guest=guest_of(n, guests),
        )
        for n in topo.nodes
    }
    return LabState(
        name=topo.name,
        prefix=prefix,
        mode="native" if choice.name == "native" else "guest",
        state_dir=str(sdir),
        mgmt_subnet=topo.mgmt_subnet,
        mgmt_bridge_ip=bridge_ip,
        nodes=nodes,
        substrate=choice.name,
        substrate_reason=choice.reason,
    )


def _write_keys(state: LabState) -> dict[str, str]:
    """Client key, guest files and one host key per node; returns node public keys."""
    client_pub = write_keypair(state.key_path)
    guest.prepare_guest_files(state.path, client_pub)
    ndir = state.path / "nodes"
    ndir.mkdir(mode=0o700, exist_ok=True)
    return {name: write_keypair(ndir / f"{name}.key") for name in state.nodes}


def _start_machines(
    state: LabState, topo: LabTopology, memory_mb: int | None, boot_timeout: float, guests: int
) -> list[Executor]:
    """The lab's machine, or each instance of a split lab; an executor for each."""
    sub = substrate.of_state(state)
    state.kernel = sub.prepare()
    state.save()
    if guests == 1:
        memory = memory_mb or substrate.memory_mb(len(topo.nodes))
        return [substrate.boot(sub, state, memory, boot_timeout)]
    assert isinstance(sub, UmlSubstrate)
    counts = [sum(1 for n in state.nodes.values() if n.guest == i) for i in range(guests)]
    sub.start_split(state, [memory_mb or substrate.memory_mb(c) for c in counts])
    state.save()
    return sub.wait_split(state, boot_timeout)


def _write_known_hosts(state: LabState, node_keys: dict[str, str]) -> None:
    """Publish node host keys (by mgmt IP) next to the guest's entry."""
    lines = guest.guest_known_hosts_lines(state)
    lines += [known_hosts_line(n.mgmt_ip, 22, node_keys[name]) for name, n in state.nodes.items()]
    state.known_hosts.write_text("".join(lines))


def _build(
    state: LabState,
    topo: LabTopology,
    executors: list[Executor],
    lldpd: bool,
    daemons: tuple[str, ...],
) -> None:
    """Each instance builds its nodes at once (a split lab's instances in parallel)."""
    spath = GUEST_STATE_PATH if state.mode == "guest" else state.state_dir
    plans = [
        scripts.BuildPlan(
            topo,
            state.prefix,
            spath,
            lldpd=lldpd,
            frr_daemons=daemons,
            syslog=state.mode == "guest",  # natively, the host's own syslog keeps the logs
            guest=index,
            guests=len(executors),
        )
        for index in range(len(executors))
    ]
    with ThreadPoolExecutor(max_workers=len(executors)) as pool:
        results = list(
            pool.map(
                lambda ex, plan: ex.run_script(scripts.build_script(plan), timeout=600.0),
                executors,
                plans,
            )
        )
    for index, (rc, out, err) in enumerate(results):
        if rc != 0:
            where = f" in instance {index}" if len(results) > 1 else ""
            raise LabCommandError(
                f"lab build failed{where} (rc {rc}): {err.strip()[-2000:]}", rc, out, err
            )
    state.timings.update({f"build_{k}": v for k, v in scripts.parse_marks(results[0][1]).items()})


# -- status --------------------------------------------------------------------------
def status(state_dir: Path | str) -> dict[str, Any]:
    """Lab, guest and per-node liveness; nodes are ``running`` when netns+sshd(+FRR) live."""
    state = load_state(Path(state_dir).resolve())
    jump = f"{state.jump[0]}:{state.jump[1]}" if state.jump else None
    sub = substrate.of_state(state)
    pids = [state.guest_pid, *(g.pid for g in state.more_guests)]
    guest_alive = state.mode == "native" or all(
        pid and sub.is_ours(pid, state.path) for pid in pids
    )
    live = _node_liveness(state) if guest_alive else {}
    nodes = {
        name: {
            "kind": n.kind,
            "role": n.role,
            "plane": n.plane,
            "namespace": n.namespace,
            "mgmt_ip": n.mgmt_ip,
            "ssh": f"{n.mgmt_ip}:22",
            "jump": jump,
            "running": live.get(name, False),
            "instance": n.guest,
        }
        for name, n in state.nodes.items()
    }
    return {
        "name": state.name,
        "mode": state.mode,
        "substrate": substrate.LABELS.get(sub.name, sub.name),
        "substrate_reason": state.substrate_reason,
        "kernel": state.kernel,
        "prefix": state.prefix,
        "guest": {"pid": state.guest_pid, "alive": guest_alive, "ssh": jump},
        "instances": [
            {"pid": state.guest_pid, "ssh": jump},
            *({"pid": g.pid, "ssh": f"{g.host}:{g.port}"} for g in state.more_guests),
        ],
        "known_hosts": str(state.known_hosts),
        "key": str(state.key_path),
        "timings": dict(state.timings),
        "nodes": nodes,
    }


def _node_liveness(state: LabState) -> dict[str, bool]:
    executors: list[Executor] = []
    try:
        executors = [open_executor(state, i) for i in range(state.guests)]
        return _liveness(state, executors, state.nodes)
    except (OSError, paramiko.SSHException, LabError):
        return {}
    finally:
        for executor in executors:
            executor.close()


# -- down ----------------------------------------------------------------------------
def down(state_dir: Path | str, prefix: str | None = None) -> dict[str, Any]:
    """Remove everything of the lab in ``state_dir``; idempotent, works after a crash.

    Without a state file it still finds our guest (its command line names this state dir),
    its tap (named from the prefix and the folder) and host namespaces named with ``prefix``.
    """
    sdir = Path(state_dir).resolve()
    try:
        state: LabState | None = load_state(sdir)
    except LabStateError:
        state = None
    prefix = state.prefix if state else (prefix or DEFAULT_PREFIX)
    removed = Removed()
    for sub in substrate.cleaners():
        removed.add(sub.stop(sdir, state, prefix))
    _remove_state_files(sdir)
    return {
        "guest_stopped": removed.guest_stopped,
        "namespaces_removed": removed.namespaces_removed,
        "taps_removed": removed.taps_removed,
    }


def _remove_state_files(sdir: Path) -> None:
    for name in _STATE_ENTRIES:
        path = sdir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    with contextlib.suppress(OSError):
        os.rmdir(sdir)  # only when nothing else lives there
