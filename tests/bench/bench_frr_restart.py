"""What an FRR restart on a leaf costs its own servers' traffic, per zebra option set.

The failure matrix (issue 13) measured half of a leaf's own servers' traffic lost for at
least a whole 35 s probe after ``frrinit.sh restart`` on that leaf, in both dual-leaf modes,
with the lab's zebra started with ``-r -K 120`` (keep routes in the kernel at stop, keep
the ones found at start for 120 s). This bench brings up one lab, deploys it, and restarts
FRR on the leaf once per variant of zebra's options, printing per variant: the probe's
loss and longest silence (flow srv0001 rail 1 -> srv0002 rail 2, half of whose sub-flows
hash onto the restarting leaf) and, sampled each second, the leaf's kernel route to the
destination and its counts of kernel routes and nexthop objects.

Run (root, after .ci/setup):  python tests/bench/bench_frr_restart.py
  [--mode dual-arp|evpn-mh] [--variant=OPTS]... [--seconds S] [--crash]
  [--graceful-restart] [--keep]
About 10 minutes on a 2-core machine (QEMU TCG guest). Figures: README, "FRR restart".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import LabSession, down, run_probe  # noqa: E402
from controller.lab.fabric import lab_dir  # noqa: E402
from tests.bench.labbench import (  # noqa: E402
    deployed_lab,
    exit_on_sigterm,
    seconds_to_healthy,
)

PREFIX = "dpb-"
LEAF = "p1-g1-leaf1"
RATE, SUBFLOWS = 100.0, 4
BASE_OPTS = "-A 127.0.0.1 -s 90000000"
VARIANTS = ["-r -K 120", "-r", ""]


def healthy(fabric: Any, access: Any) -> str:
    seconds = seconds_to_healthy(fabric, access, timeout=240.0)
    return "not within 240 s" if seconds is None else f"after {seconds:.0f} s"


def graceful_restart_on(fabric: Any, state_dir: Path) -> None:
    """BGP graceful restart on every switch, by hand (the templates render it only when
    the intent asks); the sessions are reset so that the capability is negotiated."""
    with LabSession.open(state_dir) as s:
        for switch in fabric.switches:
            s.vtysh(
                switch.name,
                "configure terminal",
                f"router bgp {switch.asn}",
                "bgp graceful-restart",
                "bgp graceful-restart preserve-fw-state",
                "end",
                "clear bgp *",
            )


def restart_once(
    fabric: Any, state_dir: Path, opts: str, seconds: float, port: int, crash: bool = False
) -> dict[str, Any]:
    ns = f"{PREFIX}{LEAF}"
    a, b = fabric.servers[0], fabric.servers[1]
    dst_ip, src_ip = b.nics[1].ip, a.nics[0].ip
    with LabSession.open(state_dir) as s:
        s.root_run(
            f"sed -i 's|^zebra_options=.*|zebra_options=\"  {BASE_OPTS} {opts}\"|' "
            f"/etc/frr/{ns}/daemons"
        )
    result: dict[str, Any] = {}

    def probe() -> None:
        with LabSession.open(state_dir) as session:
            result["probe"] = run_probe(
                session,
                a.name,
                b.name,
                dst_ip,
                count=int(seconds * RATE),
                rate_pps=RATE,
                port=port,
                src_ip=src_ip,
                subflows=SUBFLOWS,
            )

    thread = threading.Thread(target=probe)
    thread.start()
    samples = []
    with LabSession.open(state_dir) as s:
        time.sleep(4)
        began = time.monotonic()
        if crash:  # a planned restart withdraws bgpd's routes from zebra first (FRR #12041)
            s.root_run(f"kill -9 $(cat /run/frr/{ns}/bgpd.pid); sleep 2")
        s.root_run(
            f"unshare -u sh -c 'hostname {LEAF}; /usr/lib/frr/frrinit.sh restart {ns}' "
            ">/dev/null 2>&1"
        )
        result["restart_s"] = round(time.monotonic() - began, 1)
        while thread.is_alive():
            _, out, _ = s.root_run(
                f"ip -n {ns} route get {dst_ip} from {src_ip} iif lo 2>&1 | head -1; "
                f"ip -n {ns} route get {dst_ip} 2>&1 | head -1; "
                f"ip -n {ns} -4 route show | wc -l; ip -n {ns} nexthop show | wc -l"
            )
            samples.append(f"{time.monotonic() - began:6.1f}s " + " | ".join(out.splitlines()))
            time.sleep(1.0)
        route = s.vtysh(LEAF, f"show ip route {dst_ip}")
    thread.join()
    result["samples"] = samples
    result["rib_after"] = route
    return result


def main() -> None:
    exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="dual-arp", choices=("dual-arp", "evpn-mh"))
    ap.add_argument("--variant", action="append", help="zebra options besides the base")
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    ap.add_argument(
        "--crash",
        action="store_true",
        help="bgpd is killed (SIGKILL) first, as in a crash: only then does FRR restart",
    )
    ap.add_argument(
        "--graceful-restart",
        action="store_true",
        help="turn BGP graceful restart (with preserve-fw-state) on in every switch first",
    )
    args = ap.parse_args()
    variants = args.variant if args.variant is not None else VARIANTS
    tmp = Path(tempfile.mkdtemp(prefix="dpctl-frr-restart-"))
    os.environ.update(
        DPCTL_LAB_DIR=str(tmp / "labs"),
        DPCTL_STATE_DIR=str(tmp / "state"),
        DPCTL_LAB_PREFIX=PREFIX,
    )
    fabric = build_fabric(load_intent(ROOT / "inventory" / f"lab-{args.mode}.yaml"))
    state_dir = lab_dir(fabric.intent.name)
    try:
        access = deployed_lab(fabric, state_dir, PREFIX)
        print(f"{args.mode}: deployed, healthy {healthy(fabric, access)}")
        if args.graceful_restart:
            graceful_restart_on(fabric, state_dir)
            print(f"graceful restart on, healthy {healthy(fabric, access)}")
        for index, opts in enumerate(variants):
            row = restart_once(fabric, state_dir, opts, args.seconds, 5600 + index, args.crash)
            probe = row["probe"]
            back = healthy(fabric, access)
            print(f"\n== zebra {opts or '(no retention)'}: restart took {row['restart_s']} s")
            print(
                f"lost {probe['lost']} of {probe['sent']}, longest silence "
                f"{probe['max_gap_ms']} ms, sub-flows hit {probe['subflows_hit']}, "
                f"healthy again {back} after the probe"
            )
            print("\n".join(row["samples"]))
            print(row["rib_after"])
            print(json.dumps({k: v for k, v in probe.items() if k != "per_subflow"}))
    finally:
        if not args.keep:
            down(state_dir, prefix=PREFIX)


if __name__ == "__main__":
    main()
