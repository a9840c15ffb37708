"""Repeat the host-side sequence on a fresh lab N times per dual-leaf mode (a script, not a test):
lab up (bare servers, or with --servers provisioned the servers the lab's own script sets
up, as a plain `dpctl lab up` does) -> deploy plane 1 -> deploy plane 2 -> hosts configure
-> hosts verify -> hosts configure again. Between configure and verify, a diagnostic verify with no
convergence wait (settle_s 0, the behaviour before the fix) records what fails right after a
configure. A run passes when every step is ok and the second configure changes
nothing. Prints one JSON line per run (timings, failed checks, what the second configure
changed) and a summary per mode.

sudo python3 tests/bench/bench_hosts_repeat.py [--runs 5] [--mode dual-arp --mode evpn-mh]
    [--servers bare|provisioned]
Wrap it in the team's lab slot (/work/team/labrun).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.deploy import deploy
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.hosts import HostsResult, run_hosts
from controller.intent import load_intent
from controller.lab import down
from controller.lab.fabric import bring_up, lab_dir
from tests.bench.labbench import lab_reach

INVENTORY = Path(__file__).resolve().parent.parent.parent / "inventory"


def _failed_checks(result: HostsResult) -> dict[str, Any]:
    return {
        name: [c for c in h.checks if not c.get("ok")] or h.message
        for name, h in result.hosts.items()
        if not h.ok
    }


def _changes(result: HostsResult) -> dict[str, Any]:
    return {name: h.commands for name, h in result.hosts.items() if h.changed}


def one_run(fabric: Fabric, prefix: str, bare: bool = True) -> dict[str, Any]:
    state_dir = lab_dir(fabric.intent.name)
    row: dict[str, Any] = {
        "mode": fabric.intent.dual_leaf_mode,
        "servers": "bare" if bare else "provisioned",
        "seconds": {},
    }
    secs: dict[str, float] = row["seconds"]
    t = time.monotonic()
    try:
        bring_up(fabric, state_dir, prefix=prefix, bare_servers=bare)
        secs["lab up"] = time.monotonic() - t
        r = lab_reach(fabric, state_dir)
        for plane in (1, 2):
            t = time.monotonic()
            outcomes = deploy(fabric, r.access, r.state, plane=plane)
            secs[f"deploy plane {plane}"] = time.monotonic() - t
            bad = {n: o.error for n, o in outcomes.items() if not o.ok}
            if bad:
                row["deploy_failed"] = bad
                row["ok"] = False
                return row
        first = run_hosts(fabric, "configure", r.access.servers, r.state)
        secs["hosts configure"] = first.seconds
        # diagnosis: the same checks once, at once (no convergence wait: the old behaviour)
        at_once = run_hosts(
            fabric, "verify", r.access.servers, r.state, extravars={"dpctl_settle_s": 0}
        )
        secs["hosts verify at once"] = at_once.seconds
        verify = run_hosts(fabric, "verify", r.access.servers, r.state)
        secs["hosts verify"] = verify.seconds
        second = run_hosts(fabric, "configure", r.access.servers, r.state)
        secs["hosts configure again"] = second.seconds
        row.update(
            configure_ok=first.ok,
            verify_at_once_ok=at_once.ok,
            verify_at_once_failed=_failed_checks(at_once),
            verify_ok=verify.ok,
            verify_waited_s={
                n: h.message.split("(")[-1].split(" s")[0] for n, h in verify.hosts.items()
            },
            verify_failed=_failed_checks(verify),
            second_ok=second.ok,
            second_changed=second.changed,
            second_changes=_changes(second),
        )
        row["ok"] = first.ok and verify.ok and second.ok and second.changed == 0
        return row
    finally:
        t = time.monotonic()
        down(state_dir, prefix=prefix)
        secs["down"] = time.monotonic() - t
        row["seconds"] = {k: round(v, 1) for k, v in secs.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5, help="runs per mode")
    ap.add_argument("--mode", action="append", choices=("dual-arp", "evpn-mh"))
    ap.add_argument(
        "--servers",
        choices=("bare", "provisioned"),
        default="bare",
        help="bare servers, or set up by the lab's own script as `dpctl lab up` does",
    )
    ap.add_argument("--prefix", default=os.environ.get("DPCTL_LAB_PREFIX", "dpb-"))
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dpctl-hosts-repeat-"))
    os.environ.setdefault("DPCTL_LAB_DIR", str(root / "labs"))
    os.environ.setdefault("DPCTL_STATE_DIR", str(root / "state"))
    os.environ["DPCTL_LAB_PREFIX"] = a.prefix
    summary: dict[str, dict[str, int]] = {}
    for mode in a.mode or ["dual-arp", "evpn-mh"]:
        fabric = build_fabric(load_intent(INVENTORY / f"lab-{mode}.yaml"))
        passed = 0
        for i in range(1, a.runs + 1):
            row = one_run(fabric, a.prefix, bare=a.servers == "bare")
            row["run"] = i
            passed += bool(row.get("ok"))
            print(json.dumps(row, sort_keys=True), flush=True)
        summary[mode] = {"runs": a.runs, "passed": passed}
    print(json.dumps({"summary": summary}), flush=True)


if __name__ == "__main__":
    main()
