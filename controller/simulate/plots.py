"""The simulator's figures (matplotlib): link-load histograms and heatmaps, LB-mode bars.

Imported only where figures are drawn (``dpctl simulate --plot`` and ``--compare``):
matplotlib adds 0.3 s to a start (measured: best of 9), which no other run of the simulator needs.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from controller.facts import Fabric
from controller.simulate.model import Result, Scenario
from controller.simulate.runs import COMPARE_WORKLOADS, Row, run
from controller.simulate.topology import FABRIC_DOWN, FABRIC_UP, Topology


def plot_run(
    result: Result, topo: Topology, out: Path, formats: tuple[str, ...] = ("png", "svg")
) -> list[Path]:
    """Link-load histogram per plane and a leaf x spine heatmap of one run (PNG and SVG)."""
    matplotlib.use("Agg")
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
    matplotlib.use("Agg")
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


def _save(fig: Figure, stem: Path, formats: tuple[str, ...]) -> list[Path]:
    paths_written = []
    # the same figure gives the same file: fixed SVG ids, no creation date
    matplotlib.rcParams["svg.hashsalt"] = "dpctl"
    for ext in formats:
        target = stem.with_suffix(f".{ext}")
        meta = {"Date": None} if ext == "svg" else {}
        fig.savefig(target, dpi=110, metadata=meta)
        paths_written.append(target)
    return paths_written


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
