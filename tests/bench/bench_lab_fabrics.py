"""Benchmark: `lab up` / `lab down` time of both lab fabrics (inventory/lab-*.yaml).

Prints boot, build and total seconds per fabric and whether it ran natively or in the QEMU
guest. Targets: < 30 s native, < 120 s in the TCG guest. Run (root, after .ci/setup):
python tests/bench/bench_lab_fabrics.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import down  # noqa: E402
from controller.lab.fabric import bring_up, lab_dir  # noqa: E402
from tests.bench.labbench import exit_on_sigterm  # noqa: E402

PREFIX = "dpu-"


def main() -> None:
    exit_on_sigterm()
    os.environ.setdefault("DPCTL_LAB_DIR", tempfile.mkdtemp(prefix="dpctl-bench-labs-"))
    for name in ("lab-dual-arp", "lab-evpn-mh"):
        fabric = build_fabric(load_intent(ROOT / "inventory" / f"{name}.yaml"))
        state_dir = lab_dir(fabric.intent.name)
        start = time.monotonic()
        try:
            result = bring_up(fabric, state_dir, prefix=PREFIX)
            up = time.monotonic() - start
        finally:
            t0 = time.monotonic()
            down(state_dir, prefix=PREFIX)
            took_down = time.monotonic() - t0
        timings = result["timings"]
        print(
            f"{name}: {len(fabric.switches)} switches + {len(fabric.servers)} servers, "
            f"{result['mode']}: boot {timings.get('boot_s', 0):.1f} s, build "
            f"{timings.get('build_s', 0):.1f} s, lab up incl. servers {up:.1f} s, "
            f"down {took_down:.1f} s"
        )


if __name__ == "__main__":
    main()
