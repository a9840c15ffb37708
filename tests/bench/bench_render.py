"""Benchmark: render all 384 switches of the 16,384-GPU CX864E-N example on one core.

Prints ms per device (structured data + templates) and peak memory for each platform the
models run. Target: <= 10 ms per device. Run: python tests/bench/bench_render.py [PLATFORM ...]
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.errors import DpctlError  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.render.engine import render_fabric  # noqa: E402


def main() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    intent = load_intent(ROOT / "inventory/examples/cx864e-16384-evpn-mh.yaml")
    platforms = sys.argv[1:] or ["asternos", "sonic", "frr"]
    for platform in platforms:
        data = intent.model_dump(mode="json")
        data["platform"] = platform
        if platform != "asternos":
            data["load_balancing"] = {"mode": "ecmp"}
        fabric = build_fabric(type(intent).model_validate(data))
        start = time.perf_counter()
        try:
            rendered = render_fabric(fabric, validate=False)  # YANG: bench_sonic_validate
        except DpctlError as exc:
            print(f"{platform:9s} not rendered: {exc}")
            continue
        elapsed = time.perf_counter() - start
        lines = sum(text.count("\n") for files in rendered.values() for text in files.values())
        print(
            f"{platform:9s} {len(rendered)} devices in {elapsed:6.2f} s: "
            f"{1000 * elapsed / len(rendered):6.2f} ms/device, "
            f"{lines / len(rendered):7.0f} lines/device"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:.0f} MB max RSS (target: <= 10 ms/device on one core)")


if __name__ == "__main__":
    main()
