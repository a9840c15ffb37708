"""Lab lifecycle: ``up``, ``status``, ``down``."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Literal

import paramiko

from controller.lab import guest, kernel, scripts
from controller.lab.errors import LabCommandError, LabError, LabStateError, LabTimeoutError
from controller.lab.executor import Executor, GuestExecutor, LocalExecutor
from controller.lab.keys import known_hosts_line, write_keypair
from controller.lab.session import LabSession, open_executor
from controller.lab.state import STATE_FILE, LabState, Mode, NodeState, load_state
from controller.lab.topology import (
    LabTopology,
    mgmt_addresses,
    mgmt_bridge,
    namespace,
    validate,
)

DEFAULT_PREFIX = "dpl-"
GUEST_STATE_PATH = "/run/dpl/state"  # where the guest sees the state dir (see kernel.py)
_STATE_ENTRIES = (STATE_FILE, STATE_FILE + ".tmp", "id_ed25519", "known_hosts", "guest", "nodes")


def up(
    topology: LabTopology,
    state_dir: Path | str,
    prefix: str = DEFAULT_PREFIX,
    mode: Literal["auto", "guest", "native"] = "auto",
    memory_mb: int | None = None,
    boot_timeout: float = 180.0,
    ready_timeout: float = 120.0,
    frr_timeout: float = 240.0,
    lldpd: bool = True,
    frr_daemons: tuple[str, ...] = scripts.DEFAULT_FRR_DAEMONS,
) -> LabState:
    """Build and start the lab; on any failure everything started is removed again.

    FRR starts with an empty configuration (factory state). Returns the saved state, once
    every node answers on SSH and every switch's FRR runs.
    """
    sdir = Path(state_dir).resolve()
    if not re.fullmatch(r"[A-Za-z0-9_./+-]+", str(sdir)):
        raise LabError(f"state dir path must be plain (no spaces or quotes): {sdir}")
    validate(topology, prefix)
    _refuse_running(sdir)
    sdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    chosen: Mode = _choose_mode(mode, prefix)
    state = _initial_state(topology, sdir, prefix, chosen)
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
    if old.mode == "guest" and old.guest_pid and guest.is_our_qemu(old.guest_pid, sdir):
        raise LabError(f"a lab is already up in {sdir}: run down first")
    down(sdir, prefix=old.prefix)  # stale leftovers of a crashed run


def _choose_mode(mode: str, prefix: str) -> Mode:
    if mode == "guest":
        return "guest"
    if mode == "native":
        return "native"
    return "native" if kernel.host_is_capable(prefix) else "guest"


def _initial_state(topo: LabTopology, sdir: Path, prefix: str, mode: Mode) -> LabState:
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
        mode=mode,
        state_dir=str(sdir),
        mgmt_subnet=topo.mgmt_subnet,
        mgmt_bridge_ip=bridge_ip,
        nodes=nodes,
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
    if state.mode == "native":
        state.kernel = platform.release()
        state.save()
        return LocalExecutor()
    kern = kernel.guest_kernel()
    state.kernel = kern.version
    mem = memory_mb or max(1024, 768 + 64 * len(topo.nodes))
    hung: list[str] = []
    for _attempt in range(3):  # the free port can be taken between probe and bind
        port = guest.free_port()
        _write_guest_known_hosts(state, port)
        pid = guest.start_guest(kern, state.path, port, state.prefix, memory_mb=mem)
        state.guest_pid, state.guest_port = pid, port
        state.save()
        try:
            client = guest.wait_guest_ssh(
                pid, port, state.key_path, state.known_hosts, boot_timeout
            )
            return GuestExecutor(client)
        except LabError as exc:
            if guest.pid_alive(pid) and not hung:
                # A guest whose sshd never answered while QEMU ran (once in CI, 2026-12-01:
                # 180 s, nothing on the console; the same lab then booted in 118 s): stop
                # that QEMU and boot once more; a second hang is an error naming both.
                hung.append(str(exc))
                guest.stop_guest(pid, state.path)
                continue
            if hung:
                raise LabError(f"{exc} (the boot before it hung too: {hung[0]})") from None
            if guest.pid_alive(pid) or not _port_clash(state.path):
                raise
    raise LabError("could not start QEMU (port clashes)")


def _port_clash(sdir: Path) -> bool:
    try:
        return b"Could not set up host forwarding" in (sdir / "guest" / "qemu.log").read_bytes()
    except OSError:
        return False


def _write_guest_known_hosts(state: LabState, port: int) -> None:
    pub = write_keypair(state.path / "guest" / "host_key")
    state.known_hosts.write_text(known_hosts_line("127.0.0.1", port, pub))


def _write_known_hosts(state: LabState, node_keys: dict[str, str]) -> None:
    """Publish node host keys (by mgmt IP) next to the guest's entry."""
    lines = []
    if state.guest_port is not None:
        pub = write_keypair(state.path / "guest" / "host_key")
        lines.append(known_hosts_line("127.0.0.1", state.guest_port, pub))
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
    jump = f"127.0.0.1:{state.guest_port}" if state.guest_port else None
    guest_alive = bool(
        state.mode == "native"
        or (state.guest_pid and guest.is_our_qemu(state.guest_pid, state.path))
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

    Without a state file it still finds our QEMU (its command line names this state
    dir) and host namespaces named with ``prefix``.
    """
    sdir = Path(state_dir).resolve()
    try:
        state: LabState | None = load_state(sdir)
    except LabStateError:
        state = None
    prefix = state.prefix if state else (prefix or DEFAULT_PREFIX)
    report: dict[str, Any] = {"guest_stopped": [], "namespaces_removed": []}
    for pid in _our_qemu_pids(sdir, state):
        if guest.stop_guest(pid, sdir):
            report["guest_stopped"].append(pid)
    report["namespaces_removed"] = _remove_host_namespaces(prefix, state)
    _remove_state_files(sdir)
    return report


def _our_qemu_pids(sdir: Path, state: LabState | None) -> list[int]:
    """QEMU processes started for this state dir (recorded PID, pid file, or cmdline)."""
    pids: set[int] = set()
    if state and state.guest_pid:
        pids.add(state.guest_pid)
    with contextlib.suppress(OSError, ValueError):
        pids.add(int((sdir / "guest" / "qemu.pid").read_text().strip()))
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            pids.add(int(entry.name))
    return sorted(p for p in pids if guest.is_our_qemu(p, sdir))


def _remove_host_namespaces(prefix: str, state: LabState | None) -> list[str]:
    """Native-mode leftovers: only namespaces named with our prefix on this host."""
    try:
        out = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return []
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    ours = [n for n in names if n.startswith(prefix)]
    bridge_exists = Path(f"/sys/class/net/{mgmt_bridge(prefix)}").exists()
    if not ours and not bridge_exists and not Path(scripts.run_dir(prefix)).exists():
        return []
    LocalExecutor().run_script(scripts.teardown_script(prefix, ours), timeout=120.0)
    return ours


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
