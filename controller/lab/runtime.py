"""Lab lifecycle: ``up``, ``status``, ``down``."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, Literal

import paramiko

from controller.lab import guest, scripts, substrate
from controller.lab.errors import LabCommandError, LabError, LabStateError, LabTimeoutError
from controller.lab.executor import Executor
from controller.lab.keys import known_hosts_line, write_keypair
from controller.lab.session import LabSession, open_executor
from controller.lab.state import STATE_FILE, LabState, NodeState, Removed, load_state
from controller.lab.topology import LabTopology, mgmt_addresses, namespace, validate

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
) -> LabState:
    """Build and start the lab; on any failure everything started is removed again.

    FRR starts with an empty configuration (factory state). Returns the saved state, once
    every node answers on SSH and every switch's FRR runs. The machine is the first
    substrate this one can run (:mod:`controller.lab.substrate`), ``substrate_name`` or
    DPCTL_LAB_SUBSTRATE when given; ``mode`` "guest" skips native, "native" forces it.
    """
    sdir = Path(state_dir).resolve()
    if not re.fullmatch(r"[A-Za-z0-9_./+-]+", str(sdir)):
        raise LabError(f"state dir path must be plain (no spaces or quotes): {sdir}")
    validate(topology, prefix)
    choice = _choose(mode, substrate_name, prefix)  # a bad or impossible one changes nothing
    _refuse_running(sdir)
    sdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    state = _initial_state(topology, sdir, prefix, choice)
    t0 = time.monotonic()
    try:
        node_keys = _write_keys(state)
        executor = _start_machine(state, topology, memory_mb, boot_timeout)
        state.timings["boot_s"] = round(time.monotonic() - t0, 2)
        with LabSession(state, executor) as session:
            _build(state, topology, executor, lldpd, frr_daemons)
            state.timings["build_s"] = round(time.monotonic() - t0, 2)
            _write_known_hosts(state, node_keys)
            session.wait_ssh(timeout=ready_timeout)
            if "bgpd" in frr_daemons:  # what `lab status` counts as a running switch
                state.timings["frr_wait_s"] = round(_wait_frr(state, executor, frr_timeout), 2)
        state.timings["up_s"] = round(time.monotonic() - t0, 2)
        state.save()
        return state
    except BaseException:
        with contextlib.suppress(Exception):
            down(sdir, prefix=prefix)
        raise


FRR_SETTLE_S = 5.0


def _wait_frr(state: LabState, executor: Executor, timeout: float) -> float:
    """Wait until every switch's sshd, watchfrr and bgpd run, and still do FRR_SETTLE_S
    later; returns the seconds waited. In the emulated guest FRR is up 35-46 s after the
    build (its watchfrr first restarts the daemons that were not up yet when it looked,
    lab syslog of 2026-12-02), and a lab handed over before that showed switches as not
    running (`lab status`, a CI run of 2026-12-02)."""
    spec = [(name, n.namespace, True) for name, n in state.nodes.items() if n.kind == "switch"]
    if not spec:
        return 0.0
    started = time.monotonic()
    ready_since: float | None = None
    while True:
        _rc, out, _ = executor.run_script(scripts.status_script(spec, state.prefix), 60.0)
        running = scripts.parse_status(out)
        waiting = sorted(name for name, _ns, _sw in spec if not running.get(name))
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
    topo: LabTopology, sdir: Path, prefix: str, choice: substrate.Choice
) -> LabState:
    bridge_ip, addrs, _ = mgmt_addresses(topo)
    nodes = {
        n.name: NodeState(
            kind=n.kind,
            role=n.role,
            plane=n.plane,
            namespace=namespace(prefix, n.name),
            mgmt_ip=addrs[n.name],
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


def _start_machine(
    state: LabState, topo: LabTopology, memory_mb: int | None, boot_timeout: float
) -> Executor:
    sub = substrate.of_state(state)
    state.kernel = sub.prepare()
    state.save()
    return substrate.boot(
        sub, state, memory_mb or substrate.memory_mb(len(topo.nodes)), boot_timeout
    )


def _write_known_hosts(state: LabState, node_keys: dict[str, str]) -> None:
    """Publish node host keys (by mgmt IP) next to the guest's entry."""
    lines = []
    if state.jump is not None:
        pub = write_keypair(state.path / "guest" / "host_key")
        lines.append(known_hosts_line(*state.jump, pub))
    lines += [known_hosts_line(n.mgmt_ip, 22, node_keys[name]) for name, n in state.nodes.items()]
    state.known_hosts.write_text("".join(lines))


def _build(
    state: LabState, topo: LabTopology, executor: Executor, lldpd: bool, daemons: tuple[str, ...]
) -> None:
    spath = GUEST_STATE_PATH if state.mode == "guest" else state.state_dir
    plan = scripts.BuildPlan(
        topo,
        state.prefix,
        spath,
        lldpd=lldpd,
        frr_daemons=daemons,
        syslog=state.mode == "guest",  # natively, the host's own syslog keeps the logs
    )
    rc, out, err = executor.run_script(scripts.build_script(plan), timeout=600.0)
    if rc != 0:
        raise LabCommandError(f"lab build failed (rc {rc}): {err.strip()[-2000:]}", rc, out, err)
    state.timings.update({f"build_{k}": v for k, v in scripts.parse_marks(out).items()})


# -- status --------------------------------------------------------------------------
def status(state_dir: Path | str) -> dict[str, Any]:
    """Lab, guest and per-node liveness; nodes are ``running`` when netns+sshd(+FRR) live."""
    state = load_state(Path(state_dir).resolve())
    jump = f"{state.jump[0]}:{state.jump[1]}" if state.jump else None
    sub = substrate.of_state(state)
    guest_alive = bool(
        state.mode == "native" or (state.guest_pid and sub.is_ours(state.guest_pid, state.path))
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
        "known_hosts": str(state.known_hosts),
        "key": str(state.key_path),
        "timings": dict(state.timings),
        "nodes": nodes,
    }


def _node_liveness(state: LabState) -> dict[str, bool]:
    spec = [(name, n.namespace, n.kind == "switch") for name, n in state.nodes.items()]
    try:
        executor = open_executor(state)
    except (OSError, paramiko.SSHException, LabError):
        return {}
    try:
        _rc, out, _ = executor.run_script(scripts.status_script(spec, state.prefix), 60.0)
    finally:
        executor.close()
    return scripts.parse_status(out)


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
