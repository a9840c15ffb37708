"""Benchmark: `dpctl simulate` on one core.

Targets (issue 15): the 16,384-GPU fabric, ring all-reduce, 4 QPs per connection, one LB mode
in under 10 s and 1 GB (intent -> fabric facts -> link graph -> flows -> loads); the whole
--compare matrix of the 2,048-GPU fabric (with its figures and report) in under 60 s.
Each case runs in its own process so its peak memory is its own.
Run: python tests/bench/bench_simulate.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BIG = ROOT / "inventory/examples/cx864e-16384-dual-arp.yaml"
SEED = ROOT / "inventory/examples/seed-2048-cx864e-dual-arp.yaml"


def _case(kind: str, arg: str) -> dict[str, object]:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from controller.generator import build_fabric
    from controller.intent import load_intent
    from controller.simulate import report, runs
    from controller.simulate.model import Scenario

    t0 = time.perf_counter()
    if kind == "one":
        workload, lb = arg.split(":")
        fabric = build_fabric(load_intent(BIG))
        t1 = time.perf_counter()
        result, _ = runs.run(fabric, Scenario(workload=workload, lb=lb, qps=4))
        out: dict[str, object] = {
            "case": f"16,384 GPUs {workload} {lb} qps 4",
            "flows": result.flows,
            "completion": round(result.completion_time_ratio, 3),
            "generate_s": round(t1 - t0, 2),
            "simulate_s": round(time.perf_counter() - t1, 2),
        }
    else:
        fabric = build_fabric(load_intent(SEED))
        with tempfile.TemporaryDirectory(prefix="dpctl-bench-") as tmp:
            summary = report.write_compare(fabric, Path(tmp) / "simulation.md", 4, 0, "bench")
        out = {"case": "2,048 GPUs --compare matrix", "runs": summary["runs"]}
    out["total_s"] = round(time.perf_counter() - t0, 2)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)  # wall time minus a busy machine
    out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(_case(sys.argv[1], sys.argv[2])))
        return
    cases = [("one", f"ring:{lb}") for lb in ("ecmp", "wcmp", "pbr", "ars", "spray")]
    cases += [("one", "bisection:ecmp"), ("compare", "-")]
    for kind, arg in cases:
        done = subprocess.run(
            [sys.executable, __file__, kind, arg], capture_output=True, text=True, check=True
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
