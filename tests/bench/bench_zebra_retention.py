"""zebra's route retention (-K) against imported host routes, on the host's own FRR.

Two FRR instances in namespaces (prefix dpb-zr-): r1 imports a kernel route of table 100
(`ip import-table 100`, as the lab's leaves import the ARP-to-host agent's routes) and
redistributes it into BGP with graceful restart on; r2 is its eBGP peer. For each zebra
option set, bgpd on r1 is killed and FRR restarted (a crash, as in the failure matrix), and
the bench prints how long until r1's BGP holds the route again, and whether r2 still had it
just before (its graceful-restart helper keeps r1's routes only until r1's End-of-RIB). A
last run deletes and re-adds the kernel route once FRR is back, as an agent could.

Run (root, FRR installed): python tests/bench/bench_zebra_retention.py [--wait S]
Takes 2-5 minutes. Cleans up its namespaces and /etc/frr/dpb-zr-* whatever happens.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.frr_harness import FRR_INIT, sh, start_frr, stop_frr

NS = ("dpb-zr-r1", "dpb-zr-r2")
ROUTE = "10.9.9.9/32"
VARIANTS = ("-r -K 120", "-r")
CONF = {
    "dpb-zr-r1": """frr defaults datacenter
hostname r1
ip import-table 100
router bgp 65001
 bgp router-id 10.0.0.1
 no bgp ebgp-requires-policy
 timers bgp 3 9
 bgp graceful-restart
 bgp graceful-restart preserve-fw-state
 neighbor e1 interface remote-as external
 address-family ipv4 unicast
  redistribute table 100
 exit-address-family
!
""",
    "dpb-zr-r2": """frr defaults datacenter
hostname r2
router bgp 65002
 bgp router-id 10.0.0.2
 no bgp ebgp-requires-policy
 timers bgp 3 9
 bgp graceful-restart
 neighbor e1 interface remote-as external
!
""",
}


def vtysh(ns: str, command: str) -> str:
    return sh(f"vtysh -N {ns} -c '{command}'", check=False)


def up(zebra_options: str) -> None:
    for ns in NS:
        sh(f"ip netns add {ns} && ip -n {ns} link set lo up")
    sh(f"ip link add e1 netns {NS[0]} type veth peer name e1 netns {NS[1]}")
    for ns in NS:
        sh(f"ip -n {ns} link set e1 up")
    r1 = NS[0]
    sh(f"ip -n {r1} link add d0 type veth peer name d1 && ip -n {r1} link set d0 up")
    sh(f"ip -n {r1} link set d1 up && ip -n {r1} route add {ROUTE} dev d0 table 100 proto static")
    for ns in NS:
        start_frr(ns, CONF[ns], zebra_options)


def down() -> None:
    for ns in NS:
        stop_frr(ns)


def r1_announces() -> bool:
    return "best #1" in vtysh(NS[0], f"show bgp ipv4 unicast {ROUTE}")


def r2_has() -> bool:
    return "best #1" in vtysh(NS[1], f"show bgp ipv4 unicast {ROUTE}")


def measure(zebra_options: str, wait: float, reassert: bool = False) -> str:
    up(zebra_options)
    try:
        start = time.monotonic()
        while not (r1_announces() and r2_has()):
            if time.monotonic() - start > wait:
                return f"zebra {zebra_options!r}: never converged at start"
            time.sleep(0.5)
        sh(f"kill -9 $(cat /run/frr/{NS[0]}/bgpd.pid)")
        time.sleep(2)
        began = time.monotonic()
        sh(f"{FRR_INIT} restart {NS[0]}", check=False)
        if reassert:  # what the host-route agent could do once zebra is back
            sh(f"ip -n {NS[0]} route del {ROUTE} dev d0 table 100")
            sh(f"ip -n {NS[0]} route add {ROUTE} dev d0 table 100 proto static")
        r2_lost_at = None
        while time.monotonic() - began < wait:
            if r2_lost_at is None and not r2_has():
                r2_lost_at = time.monotonic() - began
            if r1_announces():
                back = time.monotonic() - began
                lost = "never" if r2_lost_at is None else f"{r2_lost_at:.1f} s"
                label = f"zebra {zebra_options!r}" + (" + route re-added" if reassert else "")
                return (
                    f"{label}: r1 announces the imported route again {back:.1f} s after the "
                    f"restart began; r2 without it from: {lost}"
                )
            time.sleep(0.5)
        return f"zebra {zebra_options!r}: r1 did not announce it within {wait:.0f} s"
    finally:
        down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=200.0)
    args = parser.parse_args()
    for zebra_options in VARIANTS:
        print(measure(zebra_options, args.wait), flush=True)
    print(measure(VARIANTS[0], args.wait, reassert=True), flush=True)


if __name__ == "__main__":
    main()
