"""Probe flows over every rail, both ways, running while a piece of a rolling maintenance
runs (the lab test and tests/bench/bench_maintain.py): sequence-numbered sub-flows, so
lost, duplicated and reordered packets and the longest gap are counted per flow."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from controller.facts import Fabric
from controller.lab import LabSession
from controller.lab.probe import FLOWS_MAX_S, FlowSpec, run_flows, stop_probe
from controller.traffic import plan_flows

T = TypeVar("T")
RATE_PPS = 50.0
SUBFLOWS = 8
SETTLE_S = 5.0
"""Flows run this long before and after the measured call."""


def flow_specs(fabric: Fabric, base_port: int = 6100) -> list[FlowSpec]:
    """Every rail: a ring over the servers (both ways with two), sniffing the bond members."""
    return [
        FlowSpec(f.src, f.dst, f.src_ip, f.dst_ip, base_port + i, sniff=f.ports)
        for i, f in enumerate(plan_flows(fabric))
    ]


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over the flows; the longest gap of any."""
    return {
        "sent": sum(int(r.get("sent") or 0) for r in results),
        "received": sum(int(r.get("received") or 0) for r in results),
        "lost": sum(int(r.get("lost") or 0) for r in results),
        "duplicates": sum(int(r.get("duplicates") or 0) for r in results),
        "reordered": sum(int(r.get("reordered") or 0) for r in results),
        "max_gap_ms": max((float(r.get("max_gap_ms") or 0) for r in results), default=0.0),
    }


def probe_during(
    state_dir: Path, fabric: Fabric, call: Callable[[], T], max_s: float = FLOWS_MAX_S
) -> tuple[T, dict[str, Any]]:
    """``call()`` with probe flows over every rail running from SETTLE_S before it to
    SETTLE_S after; returns its result and the flows' totals (with each flow's result)."""
    specs = flow_specs(fabric)
    found: dict[str, Any] = {}

    def flows() -> None:
        with LabSession.open(state_dir) as session:
            count = int((max_s - 60) * RATE_PPS)
            found["results"] = run_flows(session, specs, count, RATE_PPS, SUBFLOWS, True)

    thread = threading.Thread(target=flows)
    thread.start()
    time.sleep(SETTLE_S + 5)  # receivers and senders up (a loaded guest is slow to start)
    try:
        value = call()
        time.sleep(SETTLE_S)
    finally:
        with LabSession.open(state_dir) as session:
            for spec in specs:
                stop_probe(session, spec.port)
        thread.join(timeout=max_s + 120)
    results = found.get("results", [])
    return value, {**totals(results), "flows": len(results), "per_flow": results}
