"""Benchmark: generate the 16,384-GPU CX864E-N fabric (intent -> facts -> all output files).

Prints wall time per stage and the process's peak memory, pinned to one core.
Target: under 2 s and 300 MB. Run: python tests/bench/bench_generate.py
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.outputs import writer  # noqa: E402
from controller.outputs.generate import render_outputs  # noqa: E402


def main() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    intent_path = ROOT / "inventory/examples/cx864e-16384-evpn-mh.yaml"
    t0 = time.perf_counter()
    intent = load_intent(intent_path)
    t1 = time.perf_counter()
    fabric = build_fabric(intent)
    t2 = time.perf_counter()
    files = render_outputs(fabric)
    t3 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dpctl-bench-") as out:
        writer.write_all(Path(out), files)
    t4 = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"fabric: {intent.name}: {len(fabric.switches)} switches, {len(fabric.servers)} servers, "
        f"{len(fabric.links):,} cables"
    )
    print(f"load intent   {1000 * (t1 - t0):8.1f} ms")
    print(f"build facts   {1000 * (t2 - t1):8.1f} ms")
    print(
        f"render files  {1000 * (t3 - t2):8.1f} ms  ({sum(map(len, files.values())) / 1e6:.1f} MB)"
    )
    print(f"write files   {1000 * (t4 - t3):8.1f} ms")
    print(f"total         {1000 * (t4 - t0):8.1f} ms on one core (target < 2000 ms)")
    print(f"peak memory   {peak_mb:8.1f} MB max RSS (target < 300 MB)")


if __name__ == "__main__":
    main()
