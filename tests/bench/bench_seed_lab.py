"""Benchmark: the seed's 2,048-GPU fabric's switch layer as a lab, the whole sequence.

48 CX864E-N switches with their real port names (16 leaves and 8 spines per plane, 8 parallel
links per leaf-spine pair, 2 groups, the AUX links) and 2 servers per group
(inventory/lab-seed-{dual-arp,evpn-mh}.yaml): lab up, deploy plane 1, deploy plane 2, verify
until every check passes, one more verify (its time per switch), verify of plane 1 alone (24
switches) and with other worker counts, ``verify --traffic``, a drain and an undrain of a leaf
under probe flows, and what a leaf's kernel installs towards another group's subnet (its
ECMP width). Each step prints its wall time, the guest's CPU seconds (the host CPU time of
the lab's UML processes) and the load average; at the end the peak memory of the lab's
guest (the UML kernel's resident memory, which holds the guest's whole RAM) and of the
machine (MemTotal - MemAvailable, other labs on it included). The lab is split over two UML
instances, one per plane (``--guests 1``: the whole lab in one).

Run (root, after ``.ci/setup``; about 15-25 minutes and up to 8 GB on a 2-core machine)::

    python3 tests/bench/bench_seed_lab.py [--mode dual-arp|evpn-mh] [--prefix dqs-]
        [--keep] [--steps up,deploy,verify,workers,traffic,drain] [--guests 1|2]

``--keep`` leaves the lab up at the end (``dpctl lab down -f INTENT`` with the same
DPCTL_LAB_DIR and DPCTL_LAB_PREFIX removes it). docs/lab-seed.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.connection import Limits  # noqa: E402
from controller.deploy import deploy  # noqa: E402
from controller.drain import drain, undrain  # noqa: E402
from controller.facts import Fabric  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import (  # noqa: E402
    LabSession,
    LabStateError,
    down,
    load_state,
    run_probe,
    stop_probe,
    substrate,
)
from controller.lab.fabric import bring_up, lab_dir  # noqa: E402
from controller.traffic import check_traffic  # noqa: E402
from controller.verify import verify  # noqa: E402
from tests.bench.bench_substrates import guest_cpu_s  # noqa: E402
from tests.bench.labbench import Reach, exit_on_sigterm, lab_reach  # noqa: E402

ALL_STEPS = ("up", "deploy", "verify", "workers", "traffic", "drain")
PROBE_S = 900  # upper bound of the drain and undrain; the probes are ended when both are


class Peaks:
    """Samples every 2 s, in a thread: the lab guest's resident memory, the machine's used
    memory, and the 1-minute load average."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.guest_mb = 0.0
        self.machine_mb = 0.0
        self.load = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(2.0):
            self.guest_mb = max(self.guest_mb, guest_rss_mb(self.state_dir))
            self.machine_mb = max(self.machine_mb, machine_used_mb())
            self.load = max(self.load, os.getloadavg()[0])


def machine_used_mb() -> float:
    info = dict(
        (line.split(":")[0], int(line.split()[1]))
        for line in Path("/proc/meminfo").read_text().splitlines()
    )
    return (info["MemTotal"] - info["MemAvailable"]) / 1024


def guest_rss_mb(state_dir: Path) -> float:
    """Per UML instance the largest resident set of its processes, summed: UML's kernel maps
    its guest's whole RAM, so its RSS is what that guest uses of this machine's memory (an
    instance's processes share its PID namespace)."""
    try:
        state = load_state(state_dir)
    except LabStateError:
        return 0.0
    sub = substrate.of_state(state)
    largest: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and sub.is_ours(int(entry.name), state.path):
            try:
                status = (entry / "status").read_text()
                instance = os.readlink(entry / "ns" / "pid")
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    largest[instance] = max(largest.get(instance, 0), int(line.split()[1]))
    return sum(largest.values()) / 1024


class Steps:
    """Runs and prints each step: wall seconds, guest CPU seconds, load average."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.figures: dict[str, dict[str, Any]] = {}

    def run(self, name: str, action: Callable[[], Any]) -> Any:
        cpu, start = guest_cpu_s(self.state_dir), time.monotonic()
        result = action()
        wall = round(time.monotonic() - start, 1)
        used = round(guest_cpu_s(self.state_dir) - cpu, 1)
        load = round(os.getloadavg()[0], 1)
        self.figures[name] = {"wall_s": wall, "guest_cpu_s": used, "load": load}
        print(f"{name:<42} {wall:>8.1f} s  guest CPU {used:>7.1f} s  load {load}", flush=True)
        return result


def ok_deploy(fabric: Fabric, reach: Reach, plane: int | None = None) -> None:
    outcomes = deploy(fabric, reach.access, reach.state, plane=plane)
    failed = {n: o.error for n, o in outcomes.items() if not o.ok}
    if failed:
        raise SystemExit(f"deploy failed: {failed}")


def until_healthy(fabric: Fabric, reach: Reach, timeout: float = 600.0) -> int:
    """verify until every check passes; returns how many verify runs it took."""
    deadline, runs = time.monotonic() + timeout, 0
    while True:
        runs += 1
        failed = [c for c in verify(fabric, reach.access, reach.state) if not c.ok]
        if not failed:
            return runs
        if time.monotonic() > deadline:
            shown = [c.to_dict() for c in failed[:5]]
            raise SystemExit(f"verify: {len(failed)} checks failing after {timeout:.0f} s: {shown}")
        time.sleep(5)


def verify_once(fabric: Fabric, reach: Reach, plane: int | None = None, workers: int = 0) -> int:
    limits = Limits(workers=workers) if workers else None
    checks = verify(fabric, reach.access, reach.state, plane=plane, reach=limits)
    failed = [c.to_dict() for c in checks if not c.ok]
    if failed:
        raise SystemExit(f"verify failed: {failed[:5]}")
    return len(checks)


def ecmp_width(fabric: Fabric, state_dir: Path) -> dict[str, int]:
    """Next hops a group-1 leaf's kernel holds towards a group-2 rail subnet (8 spines x 8
    links = 64 expected) and towards its own group's other rail (the same)."""
    leaf = fabric.switches_in(plane=1, role="leaf")[0]
    subnets = {
        f"group {r.group} rail {r.rail}": r.prefix
        for r in fabric.rail_subnets
        if (r.group, r.rail) in ((2, 1), (1, 2))
    }
    widths: dict[str, int] = {}
    with LabSession.open(state_dir) as s:
        for label, prefix in subnets.items():
            out = s.check(leaf.name, f"ip -j route show {prefix}")
            routes = json.loads(out or "[]")
            widths[f"{leaf.name} -> {label}"] = sum(len(r.get("nexthops", [1])) for r in routes)
    return widths


def drain_under_probes(fabric: Fabric, reach: Reach, state_dir: Path) -> dict[str, Any]:
    """Probe flows from a group-1 server to a group-2 server on rails 1 and 2 while the
    group-1 leaf of rail 1 in plane 1 is drained and undrained (no host-side step)."""
    leaf = fabric.switches_in(plane=1, role="leaf")[0].name
    a = fabric.servers[0]
    b = next(s for s in fabric.servers if s.group != a.group)
    flows = {f"rail{n.rail}": (a.name, b.name, b.nics[n.rail - 1].ip) for n in a.nics[:2]}
    ports = {name: 5400 + i for i, name in enumerate(flows)}
    results: dict[str, Any] = {}

    def probe(name: str, src: str, dst: str, ip: str) -> None:
        with LabSession.open(state_dir) as s:
            results[name] = run_probe(
                s, src, dst, ip, count=PROBE_S * 20, rate_pps=20.0, port=ports[name]
            )

    threads = [threading.Thread(target=probe, args=(n, *f)) for n, f in flows.items()]
    for t in threads:
        t.start()
    time.sleep(5)
    try:
        started = time.monotonic()
        done = drain(fabric, leaf, reach.access, reach.state)
        results["drain_s"] = round(time.monotonic() - started, 1)
        if not done.ok:
            raise SystemExit(f"drain failed: {done.to_dict()}")
        started = time.monotonic()
        back = undrain(fabric, leaf, reach.access, reach.state)
        results["undrain_s"] = round(time.monotonic() - started, 1)
        if not back.ok:
            raise SystemExit(f"undrain failed: {back.to_dict()}")
        time.sleep(10)
    finally:
        with LabSession.open(state_dir) as s:
            for port in ports.values():
                stop_probe(s, port)
        for t in threads:
            t.join(timeout=PROBE_S + 60)
    results["leaf"] = leaf
    return results


def sequence(
    fabric: Fabric, state_dir: Path, prefix: str, steps: set[str], guests: int = 2
) -> Steps:
    """Every step asked for on one lab (the lab must already run unless "up" is one)."""
    run = Steps(state_dir)
    if "up" in steps:
        run.run("lab up", lambda: bring_up(fabric, state_dir, prefix=prefix, guests=guests))
    reach = lab_reach(fabric, state_dir)
    switches = len(fabric.switches)
    if "deploy" in steps:
        for plane in (1, 2):
            run.run(f"deploy plane {plane}", lambda p=plane: ok_deploy(fabric, reach, p))
        runs = run.run("verify until every check passes", lambda: until_healthy(fabric, reach))
        print(f"  ({runs} verify runs)")
    if "verify" in steps:
        n = run.run(f"verify ({switches} switches)", lambda: verify_once(fabric, reach))
        per = run.figures[f"verify ({switches} switches)"]["wall_s"] / switches
        print(f"  {n} checks, {per:.2f} s per switch")
        half = len(fabric.switches_in(plane=1))
        run.run(f"verify plane 1 ({half} switches)", lambda: verify_once(fabric, reach, 1))
        print(f"  ECMP: {ecmp_width(fabric, state_dir)}")
    if "workers" in steps:
        for workers in (8, 48):
            run.run(
                f"verify, {workers} workers", lambda w=workers: verify_once(fabric, reach, None, w)
            )
    if "traffic" in steps:
        report = run.run(
            "verify --traffic", lambda: check_traffic(fabric, reach.access, reach.state)
        )
        print(f"  traffic ok: {report.ok}; rows: {len(report.rows)}")
        if not report.ok:
            raise SystemExit(f"traffic failed: {report.to_dict()}")
    if "drain" in steps:
        result = run.run(
            "drain + undrain under probes", lambda: drain_under_probes(fabric, reach, state_dir)
        )
        print(f"  {result}")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="dual-arp", choices=("dual-arp", "evpn-mh"))
    parser.add_argument("--prefix", default=os.environ.get("DPCTL_LAB_PREFIX", "dqs-"))
    parser.add_argument("--keep", action="store_true", help="leave the lab up at the end")
    parser.add_argument("--steps", default=",".join(ALL_STEPS))
    parser.add_argument(
        "--guests",
        type=int,
        default=2,
        choices=(1, 2),
        help="UML instances (2: one per plane, the default; 1: the whole lab in one)",
    )
    args = parser.parse_args()
    exit_on_sigterm()
    steps = set(args.steps.split(","))
    unknown = steps - set(ALL_STEPS)
    if unknown:
        raise SystemExit(f"--steps: unknown {sorted(unknown)}; known: {', '.join(ALL_STEPS)}")
    intent = ROOT / "inventory" / f"lab-seed-{args.mode}.yaml"
    fabric = build_fabric(load_intent(intent))
    os.environ.setdefault("DPCTL_LAB_DIR", tempfile.mkdtemp(prefix=f"{args.prefix}seed-"))
    os.environ.setdefault("DPCTL_STATE_DIR", os.environ["DPCTL_LAB_DIR"] + "/state")
    os.environ["DPCTL_LAB_PREFIX"] = args.prefix
    state_dir = lab_dir(fabric.intent.name)
    print(
        f"{intent.name}: {len(fabric.switches)} switches, {len(fabric.servers)} servers, "
        f"{len(fabric.links)} cables; {args.guests} UML instance(s); lab in {state_dir}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    began = time.monotonic()
    try:
        with Peaks(state_dir) as peaks:
            sequence(fabric, state_dir, args.prefix, steps, args.guests)
    finally:
        if not args.keep:
            down(state_dir, prefix=args.prefix)
    print(
        f"whole sequence {time.monotonic() - began:.0f} s; peak guest memory "
        f"{peaks.guest_mb:.0f} MB, machine {peaks.machine_mb:.0f} MB used, load {peaks.load:.1f}"
    )


if __name__ == "__main__":
    main()
