"""Runs, the comparison matrix, figures (matplotlib) and docs/simulation.md.

`run` simulates one scenario on a fabric; `compare` runs planes 1/2 x every LB mode x
(no failure, one leaf, one spine, one link) and `markdown` writes the report that answers the
seed's hash-polarization claim with the numbers of its own fabric.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from controller.errors import DpctlError, OutputError
from controller.facts import Fabric
from controller.simulate import paths
from controller.simulate.model import Result, Scenario, check_mode, simulate
from controller.simulate.topology import (
    FABRIC_DOWN,
    FABRIC_UP,
    SimulationError,
    Topology,
    build_topology,
)
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
                for hash_seeds in (
                    ("same", "per-switch") if lb in ("ecmp", "wcmp", "pbr") else ("same",)
                ):
                    for name, fail in failures.items():
                        sc = Scenario(workload, lb, planes, qps, fail, seed, hash_seeds)
                        try:
                            rows.append(Row(simulate(topo, flows, sc), sc, name))
                        except DpctlError as exc:
                            rows.append(Row(None, sc, name, exc.reason))
    return rows, time.perf_counter() - start


def _find(rows: list[Row], **want: object) -> Result | None:
    for row in rows:
        sc = row.scenario
        if row.result and all(
            (row.failure if k == "failure" else getattr(sc, k)) == v for k, v in want.items()
        ):
            return row.result
    return None


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


def _fmt(x: float) -> str:
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def _spread(s: Spread | None) -> str:
    if s is None:
        return "-"
    if s.high - s.low < 0.005:
        return _fmt(s.mean)
    return f"{_fmt(s.mean)} ({_fmt(s.low)}-{_fmt(s.high)})"


def markdown(
    fabric: Fabric,
    rows: list[Row],
    spreads: dict[str, Spread],
    seconds: float,
    date: str,
    figures: list[str],
    seeds: int = 5,
    protection: list[str] | None = None,
    source: str = "",
) -> str:
    sz = fabric.sizing
    lines = [
        "# Simulation: what the dual-plane design buys, on the seed's fabric",
        "",
        f"Generated by `dpctl simulate --fabric {source or fabric.intent.name} --compare` on "
        f"{date} "
        f"in {seconds:.1f} s (one process, numpy).",
        "",
        f"Fabric: **{fabric.intent.name}**: {sz.gpus:,} GPUs, {sz.servers} servers, "
        f"{sz.leaves} leaves and {sz.spines} spines of {sz.leaf_model} in two planes, "
        f"{sz.links_per_leaf_spine_pair} links per leaf-spine pair, platform "
        f"{fabric.intent.platform}, dual-leaf mode {fabric.intent.dual_leaf_mode}, cross-plane "
        f"protection {'on' if fabric.intent.cross_plane_protection else 'off'}. "
        "Single plane (1p): the same switches and capacity as one plane, one 400G NIC port, "
        f"{sz.links_per_leaf_spine_pair // 2} links per leaf-spine pair.",
        "",
        "Model (controller/simulate/): every NIC offers its line rate, 4 QPs per connection (one",
        "flow each, RoCEv2 source ports from the QP number, QPs alternate over the NIC's two",
        "ports); ECMP hashes the 5-tuple with CRC-32 and picks by hash-threshold (RFC 2992);",
        "`same` = one hash seed and offset on every switch (dpctl renders none), `per-switch` =",
        "own seed per switch and own 16-bit hash window per tier. Ratios: 1.0 = ideal.",
        "completion = the slowest delivered flow's bottleneck load (collective time over ideal).",
        "",
        "## The hash-polarization claim",
        "",
    ]
    if spreads:
        lines += [
            f"Bisection (every server sends at line rate into another group), no failure: "
            f"completion time over ideal, mean (min-max) over {seeds} source-port seeds:",
            "",
            "| LB mode | hash seeds | ECMP member choice | dual plane | single plane |",
            "| --- | --- | --- | ---: | ---: |",
        ]
        for lb, hash_seeds, selection in POLARIZATION_CASES:
            two = spreads.get(f"2p-{lb}-{hash_seeds}-{selection}")
            one = spreads.get(f"1p-{lb}-{hash_seeds}-{selection}")
            lines.append(
                f"| {lb} | {hash_seeds} | {selection if lb in ('ecmp', 'wcmp', 'pbr') else '-'} | "
                f"{_spread(two)} | {_spread(one)} |"
            )
        lines += ["", _verdict(spreads), ""]
    if protection:
        lines += [
            "## A leaf failure, with and without cross-plane protection",
            "",
            f"`--fail {failure_cases(fabric)['leaf'][0]}`, packet spray (so that only the failure "
            "shows), dual plane:",
            "",
            "| workload | protection | lost flows | AUX flows | completion | throughput lost |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
            *protection,
            "",
            "Without protection the remote senders' flows into the failed leaf's plane toward its",
            "servers are black-holed until the hosts react; with protection the sender's leaf",
            "carries them over its 10G AUX link to its pair: nothing is lost, but a 10G link",
            "carrying that traffic is the collective's bottleneck (the completion ratio).",
            "",
        ]
    lines += ["## The whole matrix", ""]
    lines += [
        "| workload | planes | LB | hash seeds | failure | max link load | completion | "
        "lost flows | AUX flows | throughput lost |",
        "| --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        sc = row.scenario
        if row.result is None:
            lines.append(
                f"| {sc.workload} | {sc.planes} | {sc.lb} | {sc.hash_seeds} | {row.failure} | "
                f"refused: {row.refused} | | | | |"
            )
            continue
        r = row.result
        lines.append(
            f"| {sc.workload} | {sc.planes} | {sc.lb} | {sc.hash_seeds} | {row.failure} "
            f"{' '.join(sc.fail)} | {_fmt(r.max_link_load)} | {_fmt(r.completion_time_ratio)} | "
            f"{r.lost_flows} | {r.aux_flows} | {r.throughput_lost:.1%} |"
        )
    lines += [
        "",
        "Reading the failures: a leaf failure without cross-plane protection black-holes the",
        "flows that remote senders hash into the failed leaf's plane toward its servers (lost",
        "flows); its own servers move to their other port (completion 2.0: one 200G port for",
        "400G). With protection those flows cross the sender leaf's 10G AUX link instead:",
        "delivered, at the AUX link's capacity (the huge completion ratio). A single-plane NIC",
        "has one port: its leaf's failure cuts it off.",
        "",
    ]
    if figures:
        lines += ["## Figures", ""] + [f"![{Path(f).stem}]({f})" for f in figures] + [""]
    return "\n".join(lines)


def _verdict(spreads: dict[str, Spread]) -> str:
    get = spreads.get
    two, one = get("2p-ecmp-same-threshold"), get("1p-ecmp-same-threshold")
    if two is None or one is None:
        return "The single-plane baseline could not be built for this fabric."
    if two.mean <= one.mean:
        head = (
            f"**The claim holds here**: per-flow ECMP finishes the bisection at "
            f"{_fmt(two.mean)}x the ideal on two planes against {_fmt(one.mean)}x on one plane "
            f"of the same switches ({one.mean / two.mean:.2f}x better)."
        )
    else:
        head = (
            f"**The claim does not hold in this model**: per-flow ECMP with one hash on every "
            f"switch finishes the bisection at {_fmt(two.mean)}x the ideal on two planes against "
            f"{_fmt(one.mean)}x on one plane of the same switches ({two.mean / one.mean:.2f}x "
            "worse). The same hash at leaf and spine sends every flow that reached a spine over "
            "the same one of its parallel links to the destination leaf, and a plane of the dual "
            "design has twice as many parallel links per leaf-spine pair as the single plane, so "
            "this polarization costs it more. Splitting a NIC's QPs over two planes does not "
            "change the number or the size of the flows per leaf uplink."
        )
    parts = []
    seeded, seeded1 = get("2p-ecmp-per-switch-threshold"), get("1p-ecmp-per-switch-threshold")
    if seeded and seeded1:
        parts.append(
            f"per-switch hash seeds and windows remove the polarization: ECMP at "
            f"{_fmt(seeded.mean)}x (dual) and {_fmt(seeded1.mean)}x (single), what is left being "
            "plain hash collisions of a few elephant flows per link"
        )
    modulo, modulo1 = get("2p-ecmp-same-modulo"), get("1p-ecmp-same-modulo")
    if modulo and modulo1:
        parts.append(
            f"a switch that picks the member by hash modulo instead of hash-threshold does not "
            f"polarize on this wiring ({_fmt(modulo.mean)}x dual, {_fmt(modulo1.mean)}x single): "
            "which of the two a Teralynx does is not documented, so polarization on a real "
            "fabric is to be measured"
        )
    spray, ars = get("2p-spray-same-threshold"), get("2p-ars-same-threshold")
    if spray and ars:
        parts.append(
            f"packet spray ({_fmt(spray.mean)}x) and ARS flowlets ({_fmt(ars.mean)}x) reach the "
            "ideal on either design: the load-balancing mode, not the number of planes, is what "
            "removes the elephant-flow collisions"
        )
    return (
        head
        + "".join(f" {p[0].upper()}{p[1:]}." for p in parts)
        + (
            " What the two planes do buy shows under failures: a leaf failure halves its servers' "
            "bandwidth instead of cutting them off."
        )
    )


def plot_run(
    result: Result, topo: Topology, out: Path, formats: tuple[str, ...] = ("png", "svg")
) -> list[Path]:
    """Link-load histogram per plane and a leaf x spine heatmap of one run (PNG and SVG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    sc = result.scenario
    tag = f"{sc.workload}-{sc.lb}-{sc.planes}p"
    fabric = (topo.kind == FABRIC_UP) | (topo.kind == FABRIC_DOWN)
    planes = sorted({int(p) for p in topo.link_plane[fabric]})
    fig, axes = plt.subplots(1, len(planes), figsize=(5 * len(planes), 3.5), squeeze=False)
    for ax, plane in zip(axes[0], planes, strict=True):
        loads = result.load[fabric & (topo.link_plane == plane)]
        ax.hist(loads, bins=40, color="tab:blue")
        ax.set_title(f"plane {plane}: leaf-spine link loads")
        ax.set_xlabel("load (1.0 = full)")
        ax.set_ylabel("links")
    fig.suptitle(f"{topo.fabric_name}: {sc.workload}, {sc.lb}, {sc.planes} plane(s)")
    fig.tight_layout()
    written = _save(fig, out / f"histogram-{tag}", formats)
    plt.close(fig)
    fig, axes = plt.subplots(1, len(planes), figsize=(5 * len(planes), 4), squeeze=False)
    for ax, plane in zip(axes[0], planes, strict=True):
        heat = _heatmap(result.load, topo, plane)
        im = ax.imshow(heat, aspect="auto", cmap="viridis", interpolation="nearest")
        ax.set_title(f"plane {plane}: max load per leaf x spine")
        ax.set_xlabel("spine")
        ax.set_ylabel("leaf")
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    written += _save(fig, out / f"heatmap-{tag}", formats)
    plt.close(fig)
    return written


def _heatmap(load: np.ndarray, topo: Topology, plane: int) -> np.ndarray:
    leaves = np.flatnonzero(topo.leaf_plane == plane)
    spines = np.flatnonzero(topo.spine_plane == plane)
    heat = np.zeros((leaves.size, spines.size))
    spine_col = {int(s): i for i, s in enumerate(spines)}
    for i, leaf in enumerate(leaves):
        for u in range(topo.uplink.shape[1]):
            s = int(topo.uplink_spine[leaf, u])
            j = spine_col[s]
            heat[i, j] = max(heat[i, j], load[topo.uplink[leaf, u]])
            downs = topo.downlink[s, leaf]
            heat[i, j] = max(heat[i, j], float(load[downs[downs >= 0]].max(initial=0.0)))
    return heat


def plot_modes(
    rows: list[tuple[str, int, float]],
    title: str,
    out: Path,
    name: str,
    formats: tuple[str, ...] = ("png", "svg"),
) -> list[Path]:
    """Bar chart: completion time ratio per LB mode, one bar per plane count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    labels = sorted({label for label, _, _ in rows}, key=[r[0] for r in rows].index)
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.38
    for k, planes in enumerate((2, 1)):
        vals = [
            next((v for lb, p, v in rows if lb == label and p == planes), 0.0) for label in labels
        ]
        ax.bar(np.arange(len(labels)) + (k - 0.5) * width, vals, width, label=f"{planes} plane(s)")
    ax.set_xticks(np.arange(len(labels)), labels, rotation=20)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_ylabel("completion time / ideal")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    written = _save(fig, out / name, formats)
    plt.close(fig)
    return written


def _save(fig: object, stem: Path, formats: tuple[str, ...]) -> list[Path]:
    paths_written = []
    import matplotlib

    # the same figure gives the same file: fixed SVG ids, no creation date
    matplotlib.rcParams["svg.hashsalt"] = "dpctl"
    for ext in formats:
        target = stem.with_suffix(f".{ext}")
        meta = {"Date": None} if ext == "svg" else {}
        fig.savefig(target, dpi=110, metadata=meta)  # type: ignore[attr-defined]
        paths_written.append(target)
    return paths_written


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


def compare_figures(fabric: Fabric, rows: list[Row], out: Path) -> list[Path]:
    """The report's figures: LB bar chart (bisection, ring) and the polarized vs spray run."""
    written: list[Path] = []
    for workload in COMPARE_WORKLOADS:
        bars = [
            (
                f"{r.scenario.lb}{'/seeds' if r.scenario.hash_seeds != 'same' else ''}",
                r.scenario.planes,
                r.result.completion_time_ratio,
            )
            for r in rows
            if r.result and r.failure == "none" and r.scenario.workload == workload
        ]
        title = f"{fabric.intent.name}: {workload}, completion by LB mode"
        written += plot_modes(bars, title, out, f"modes-{workload}", ("svg",))
    for lb in ("ecmp", "spray"):
        result, topo = run(fabric, Scenario(workload="bisection", lb=lb, planes=2))
        written += plot_run(result, topo, out, ("svg",))
    return written


def protection_rows(fabric: Fabric, qps: int, seed: int) -> list[str]:
    """Markdown rows: one leaf down, spray, with and without cross-plane protection."""
    leaf = failure_cases(fabric)["leaf"]
    lines = []
    for protect in (False, True):
        variant = _with_protection(fabric, protect)
        for workload in COMPARE_WORKLOADS:
            r, _ = run(variant, Scenario(workload, "spray", 2, qps, leaf, seed))
            lines.append(
                f"| {workload} | {'on' if protect else 'off'} | {r.lost_flows} | {r.aux_flows} | "
                f"{_fmt(r.completion_time_ratio)} | {r.throughput_lost:.1%} |"
            )
    return lines


def _with_protection(fabric: Fabric, protect: bool) -> Fabric:
    from controller.generator import build_fabric

    if fabric.intent.cross_plane_protection == protect:
        return fabric
    return build_fabric(fabric.intent.model_copy(update={"cross_plane_protection": protect}))


def write_compare(
    fabric: Fabric, report: Path, qps: int, seed: int, date: str, source: str = ""
) -> dict[str, object]:
    """Run the matrix, draw its figures next to the report, write the report; a summary."""
    start = time.perf_counter()
    rows, _ = compare(fabric, qps=qps, seed=seed)
    spreads = polarization(fabric, qps=qps)
    protection = protection_rows(fabric, qps, seed)
    seconds = time.perf_counter() - start
    try:
        figures = compare_figures(fabric, rows, report.parent / "simulation")
        rel = [str(p.relative_to(report.parent)) for p in figures if p.suffix == ".svg"]
        report.parent.mkdir(parents=True, exist_ok=True)
        text = markdown(
            fabric, rows, spreads, seconds, date, rel, protection=protection, source=source
        )
        report.write_text(text)
    except OSError as exc:
        raise OutputError(str(report), f"cannot write the report ({exc.strerror})") from None
    return {
        "ok": True,
        "report": str(report),
        "runs": len(rows) + len(spreads) * 5 + len(protection),
        "seconds": round(seconds, 2),
        "headline": headline(spreads),
    }
