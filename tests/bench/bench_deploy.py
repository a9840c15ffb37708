"""Benchmark: full deploy + verify of a lab fabric, and a no-change deploy against it.

Prints the seconds of each and the ratio no-change / full deploy. Run (root, after
.ci/setup):  python tests/bench/bench_deploy.py [inventory/lab-evpn-mh.yaml]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.connection import lab_access  # noqa: E402
from controller.deploy import deploy  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import down  # noqa: E402
from controller.labfabric import bring_up, lab_dir  # noqa: E402
from controller.verify import verify  # noqa: E402

PREFIX = "dpb-"


def main() -> None:
    intent = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "inventory" / "lab-dual-arp.yaml"
    os.environ.setdefault("DPCTL_LAB_DIR", tempfile.mkdtemp(prefix="dpctl-bench-labs-"))
    os.environ.setdefault("DPCTL_STATE_DIR", tempfile.mkdtemp(prefix="dpctl-bench-state-"))
    fabric = build_fabric(load_intent(intent))
    state_dir = lab_dir(fabric.intent.name)
    try:
        t0 = time.monotonic()
        bring_up(fabric, state_dir, prefix=PREFIX)
        t1 = time.monotonic()
        access = lab_access(state_dir)
        assert access is not None
        full = deploy(fabric, access=access)
        t2 = time.monotonic()
        checks = verify(fabric, access=access)
        t3 = time.monotonic()
        again = deploy(fabric, access=access)
        t4 = time.monotonic()
    finally:
        down(state_dir, prefix=PREFIX)
    print(
        f"fabric {fabric.intent.name}: {len(fabric.switches)} switches, "
        f"{len(fabric.servers)} servers"
    )
    print(f"lab up            {t1 - t0:7.1f} s")
    print(
        f"full deploy       {t2 - t1:7.1f} s  ({sum(o.changed for o in full.values())} changed, "
        f"{sum(not o.ok for o in full.values())} failed)"
    )
    print(
        f"verify            {t3 - t2:7.1f} s  ({sum(c.ok for c in checks)}/{len(checks)} checks ok)"
    )
    print(f"no-change deploy  {t4 - t3:7.1f} s  ({sum(o.changed for o in again.values())} changed)")
    print(
        f"deploy + verify   {t3 - t1:7.1f} s; no-change / full deploy = {(t4 - t3) / (t2 - t1):.2f}"
    )


if __name__ == "__main__":
    main()
