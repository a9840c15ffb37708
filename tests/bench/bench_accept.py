"""`dpctl accept`: the probe count of the example fabrics, and the time of whole acceptance
runs on a deployed lab (a script, not a test).

First the probe counts (pure: no lab) of the lab fabrics, the 2,048-GPU seed and the
16,384-GPU example. Then, per dual-leaf mode: lab up, deploy both planes, ``--runs`` whole
acceptance runs in a row (each must pass: no false alarm), lab down; one JSON line per run
(seconds, phases, counts) and a summary per mode.

sudo python3 tests/bench/bench_accept.py [--runs 3] [--mode dual-arp --mode evpn-mh]
    [--counts-only]
The lab's prefix is DPCTL_BENCH_PREFIX (default dpb-); the 48-switch seed-scale lab is not
in the embedded lab yet, so the timed runs are of the lab fabrics (8 switches, 2 servers).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from controller.accept.probes import probe_counts  # noqa: E402
from controller.accept.run import accept  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import down  # noqa: E402
from controller.lab.fabric import lab_dir  # noqa: E402
from tests.bench.labbench import deployed_lab, exit_on_sigterm  # noqa: E402

INVENTORY = ROOT / "inventory"
COUNTED = (
    "lab-dual-arp.yaml",
    "examples/seed-2048-cx864e-dual-arp.yaml",
    "examples/cx864e-16384-dual-arp.yaml",
)


def print_counts() -> None:
    for name in COUNTED:
        fabric = build_fabric(load_intent(INVENTORY / name))
        started = time.perf_counter()
        counts = probe_counts(fabric)
        planned_ms = (time.perf_counter() - started) * 1000
        servers = len(fabric.servers)
        print(
            json.dumps(
                {
                    "fabric": name,
                    "servers": servers,
                    "cables": len(fabric.links),
                    "probes": counts,
                    "all_pairs_per_rail_and_plane": servers * (servers - 1),
                    "planned_ms": round(planned_ms, 1),
                }
            )
        )


def timed_runs(mode: str, runs: int, prefix: str) -> list[float]:
    fabric = build_fabric(load_intent(INVENTORY / f"lab-{mode}.yaml"))
    state_dir = lab_dir(fabric.intent.name)
    seconds: list[float] = []
    try:
        reach = deployed_lab(fabric, state_dir, prefix)
        for run in range(runs):
            report = accept(fabric, reach.access, reach.state)
            seconds.append(report.seconds)
            print(
                json.dumps(
                    {
                        "mode": mode,
                        "run": run + 1,
                        "ok": report.ok,
                        "seconds": round(report.seconds, 1),
                        "phases": report.phases,
                        "counts": report.counts(),
                        "probes": report.probes["total"],
                        "failures": [f"{f.element}: {f.what}" for f in report.failures()],
                    }
                ),
                flush=True,
            )
    finally:
        down(state_dir, prefix=prefix)
    return seconds


def main() -> None:
    exit_on_sigterm()
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mode", action="append", choices=("dual-arp", "evpn-mh"))
    ap.add_argument("--counts-only", action="store_true")
    args = ap.parse_args()
    print_counts()
    if args.counts_only:
        return
    prefix = os.environ.get("DPCTL_BENCH_PREFIX", "dpb-")
    root = Path(tempfile.mkdtemp(prefix=f"{prefix}accept-"))
    os.environ.setdefault("DPCTL_LAB_DIR", str(root / "labs"))
    os.environ.setdefault("DPCTL_STATE_DIR", str(root / "state"))
    os.environ["DPCTL_LAB_PREFIX"] = prefix
    for mode in args.mode or ["dual-arp", "evpn-mh"]:
        seconds = timed_runs(mode, args.runs, prefix)
        print(
            json.dumps(
                {
                    "mode": mode,
                    "runs": len(seconds),
                    "median_s": round(statistics.median(seconds), 1) if seconds else None,
                    "range_s": [round(min(seconds), 1), round(max(seconds), 1)]
                    if seconds
                    else None,
                }
            )
        )


if __name__ == "__main__":
    main()
