"""Runs of the simulator: one scenario, the comparison matrix, the polarization spreads.

`run` simulates one scenario on a fabric; `compare` runs planes 1/2 x every LB mode x
(no failure, one leaf, one spine, one link); `polarization` repeats the bisection over
source-port seeds; `protection_runs` fails a leaf with and without cross-plane protection.
The report (`controller.simulate.report`) and the figures (`controller.simulate.plots`)
only format what these return.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from controller.errors import DpctlError
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.simulate import paths
from controller.simulate.model import Result, Scenario, check_mode, simulate
from controller.simulate.topology import SimulationError, Topology, build_topology
from controller.simulate.traffic import build_flows

COMPARE_WORKLOADS = ("bisection", "ring")


def run(fabric: Fabric, scenario: Scenario) -> tuple[Result, Topology]:
    topo = build_topology(fabric, scenario.planes)
    check_mode(topo, scenario.lb)
    flows = build_flows(topo, scenario.workload, scenario.qps, scenario.seed)
    return simulate(topo, flows, scenario), topo


def failure_cases(fabric: Fabric) -> dict[str, tuple[str, ...]]:
    """The failures: none, plane 1's first leaf, its first spine, that leaf's first uplink."""
    leaf = next(s.name for s in fabric.switches if s.role == "leaf" and s.plane == 1)
    spine = next(s.name for s in fabric.switches if s.role == "spine" and s.plane == 1)
    uplink = next(lk for lk in fabric.links if lk.kind == "fabric" and lk.a_device == leaf)
    return {
        "none": (),
        "leaf": (leaf,),
        "spine": (spine,),
        "link": (f"{leaf}:{uplink.a_port}",),
    }


@dataclass(frozen=True)
class Row:
    result: Result | None
    scenario: Scenario
    failure: str
    refused: str = ""


def _hash_seed_modes(lb: str) -> tuple[str, ...]:
    """The hash-seed settings the matrix runs a mode with: both for ECMP, WCMP and PBR."""
    return ("same", "per-switch") if lb in ("ecmp", "wcmp", "pbr") else ("same",)


def compare(fabric: Fabric, qps: int = 4, seed: int = 0) -> tuple[list[Row], float]:
    """Every (workload, planes, LB mode, hash seeds, failure) of the matrix; seconds taken."""
    start = time.perf_counter()
    rows: list[Row] = []
    failures = failure_cases(fabric)
    for planes in (2, 1):
        try:
            topo = build_topology(fabric, planes)
        except SimulationError as exc:
            rows.append(Row(None, Scenario(planes=planes), "none", exc.reason))
            continue
        for workload in COMPARE_WORKLOADS:
            flows = build_flows(topo, workload, qps, seed)
            for lb in paths.LB_MODES:
                for hash_seeds in _hash_seed_modes(lb):
                    for name, fail in failures.items():
                        sc = Scenario(workload, lb, planes, qps, fail, seed, hash_seeds)
                        try:
                            rows.append(Row(simulate(topo, flows, sc), sc, name))
                        except DpctlError as exc:
                            rows.append(Row(None, sc, name, exc.reason))
    return rows, time.perf_counter() - start


POLARIZATION_CASES: tuple[tuple[str, str, str], ...] = (
    ("ecmp", "same", "threshold"),
    ("ecmp", "per-switch", "threshold"),
    ("ecmp", "same", "modulo"),
    ("wcmp", "same", "threshold"),
    ("pbr", "same", "threshold"),
    ("ars", "same", "threshold"),
    ("spray", "same", "threshold"),
)


@dataclass(frozen=True)
class Spread:
    mean: float
    low: float
    high: float


def polarization(fabric: Fabric, qps: int = 4, seeds: int = 5) -> dict[str, Spread]:
    """Bisection completion ratio, no failure, over `seeds` source-port seeds.

    Keys: "<planes>p-<lb>-<hash seeds>-<member selection>".
    """
    out: dict[str, Spread] = {}
    for planes in (2, 1):
        try:
            topo = build_topology(fabric, planes)
        except SimulationError:
            continue
        runs = [build_flows(topo, "bisection", qps, seed) for seed in range(seeds)]
        for lb, hash_seeds, selection in POLARIZATION_CASES:
            try:
                check_mode(topo, lb)
            except SimulationError:
                continue
            values = [
                simulate(
                    topo,
                    flows,
                    Scenario("bisection", lb, planes, qps, (), seed, hash_seeds, selection),
                ).completion_time_ratio
                for seed, flows in enumerate(runs)
            ]
            out[f"{planes}p-{lb}-{hash_seeds}-{selection}"] = Spread(
                float(np.mean(values)), float(np.min(values)), float(np.max(values))
            )
    return out


def headline(spreads: dict[str, Spread]) -> dict[str, float]:
    """The figures the README quotes: mean bisection completion ratios."""
    return {key: round(s.mean, 3) for key, s in spreads.items()}


def mode_bars(fabric: Fabric, base: Scenario) -> list[tuple[str, int, float]]:
    """Completion ratio of every LB mode the platform does, both plane counts (for plot_modes)."""
    bars: list[tuple[str, int, float]] = []
    for planes in (2, 1):
        try:
            topo = build_topology(fabric, planes)
        except SimulationError:
            continue
        flows = build_flows(topo, base.workload, base.qps, base.seed)
        for lb in paths.LB_MODES:
            try:
                r = simulate(topo, flows, replace(base, lb=lb, planes=planes))
            except DpctlError:
                continue
            bars.append((lb, planes, r.completion_time_ratio))
    return bars


@dataclass(frozen=True)
class ProtectionRun:
    workload: str
    protect: bool
    result: Result


def protection_runs(fabric: Fabric, qps: int, seed: int) -> list[ProtectionRun]:
    """One leaf down, spray, with and without cross-plane protection, each workload."""
    leaf = failure_cases(fabric)["leaf"]
    found = []
    for protect in (False, True):
        variant = with_protection(fabric, protect)
        for workload in COMPARE_WORKLOADS:
            r, _ = run(variant, Scenario(workload, "spray", 2, qps, leaf, seed))
            found.append(ProtectionRun(workload, protect, r))
    return found


def with_protection(fabric: Fabric, protect: bool) -> Fabric:
    """The same fabric with cross-plane protection on or off."""
    if fabric.intent.cross_plane_protection == protect:
        return fabric
    return build_fabric(fabric.intent.model_copy(update={"cross_plane_protection": protect}))
