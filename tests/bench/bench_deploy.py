"""Benchmark: the README's main job on the embedded lab, step by step, and a no-change deploy.

Prints the seconds of: lab up, deploy plane 1, deploy plane 2, verify (the main job is their
sum), a no-change deploy of the whole fabric, and a full deploy of both planes at once onto
factory-state switches (a second lab). Run (root, after .ci/setup):

    python tests/bench/bench_deploy.py [inventory/lab-dual-arp.yaml] [--runs N]

Each figure is the median of N runs (default 1; each run builds its own lab).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.deploy import deploy  # noqa: E402
from controller.facts import Fabric  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import down  # noqa: E402
from controller.lab.fabric import bring_up, lab_dir  # noqa: E402
from controller.verify import verify  # noqa: E402
from tests.bench.labbench import exit_on_sigterm, lab_reach  # noqa: E402

PREFIX = "dpb-"


def _ok(outcomes: dict[str, object]) -> None:
    failed = {n: o.error for n, o in outcomes.items() if not o.ok}  # type: ignore[attr-defined]
    if failed:
        raise SystemExit(f"deploy failed: {failed}")


def one_run(fabric: Fabric) -> dict[str, float]:
    figures: dict[str, float] = {}
    os.environ["DPCTL_LAB_DIR"] = tempfile.mkdtemp(prefix="dpctl-bench-labs-")
    os.environ["DPCTL_STATE_DIR"] = tempfile.mkdtemp(prefix="dpctl-bench-state-")
    state_dir = lab_dir(fabric.intent.name)
    try:
        t = time.monotonic()
        bring_up(fabric, state_dir, prefix=PREFIX)
        figures["lab up"] = time.monotonic() - t
        r = lab_reach(fabric, state_dir)
        for plane in (1, 2):
            t = time.monotonic()
            _ok(deploy(fabric, r.access, r.state, plane=plane))  # type: ignore[arg-type]
            figures[f"deploy plane {plane}"] = time.monotonic() - t
        t = time.monotonic()
        deadline = t + 120
        while not all(c.ok for c in verify(fabric, r.access, r.state)):
            if time.monotonic() > deadline:
                raise SystemExit("verify did not pass within 120 s")
        figures["verify"] = time.monotonic() - t
        figures["main job"] = sum(
            figures[k] for k in ("lab up", "deploy plane 1", "deploy plane 2", "verify")
        )
        t = time.monotonic()
        again = deploy(fabric, r.access, r.state)
        figures["no-change deploy"] = time.monotonic() - t
        if any(o.changed for o in again.values()):
            raise SystemExit("the no-change deploy changed something")
    finally:
        down(state_dir, prefix=PREFIX)
    state_dir = lab_dir(fabric.intent.name)
    try:
        bring_up(fabric, state_dir, prefix=PREFIX)
        r = lab_reach(fabric, state_dir)
        t = time.monotonic()
        _ok(deploy(fabric, r.access, r.state))  # type: ignore[arg-type]
        figures["full deploy, both planes at once"] = time.monotonic() - t
    finally:
        down(state_dir, prefix=PREFIX)
    return figures


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("intent", nargs="?", default=str(ROOT / "inventory" / "lab-dual-arp.yaml"))
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    fabric = build_fabric(load_intent(Path(args.intent)))
    runs = [one_run(fabric) for _ in range(args.runs)]
    print(
        f"fabric {fabric.intent.name}: {len(fabric.switches)} switches, "
        f"{len(fabric.servers)} servers; {args.runs} run(s), median seconds (min-max)"
    )
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(
            f"  {key:34s} {statistics.median(values):7.1f}  ({min(values):.1f}-{max(values):.1f})"
        )


if __name__ == "__main__":
    main()
