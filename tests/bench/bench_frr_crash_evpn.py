"""Does EVPN configuration make FRR 8.4 drop its kernel routes across a bgpd crash?

The host's own FRR in two namespaces (prefix dpb-ce-): r2 announces 10.8.8.8/32 to r1, both
with BGP graceful restart, r1's zebra with `-r -K 120` (as the lab's switches). bgpd on r1 is
killed and r1's FRR restarted (the failure matrix's "FRR crash"), while the bench samples
r1's kernel route every 0.25 s for 40 s. Variants: plain IPv4; with `address-family l2vpn
evpn` + `advertise-all-vni`; and with zebra's `evpn mh startup-delay` too. It prints how long
the route was missing in each. (In the EVPN-MH lab the leaf's kernel had no BGP route right
after such a restart; in dual-ARP it kept them: README, "Re-measured 2026-12-02".)

Run (root, FRR installed): python tests/bench/bench_frr_crash_evpn.py [VARIANT]...
Takes about a minute. Cleans up its namespaces and /etc/frr/dpb-ce-* whatever happens.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.frr_harness import FRR_INIT, sh, start_frr, stop_frr

NS = ("dpb-ce-r1", "dpb-ce-r2")
ROUTE = "10.8.8.8"
SAMPLE_S = 40.0
R1 = """frr defaults datacenter
hostname r1
{zebra}
router bgp 65001
 bgp router-id 10.0.0.1
 no bgp ebgp-requires-policy
 timers bgp 3 9
 bgp graceful-restart
 bgp graceful-restart preserve-fw-state
 neighbor e1 interface remote-as external
{evpn}
!
"""
R2 = """frr defaults datacenter
hostname r2
router bgp 65002
 bgp router-id 10.0.0.2
 no bgp ebgp-requires-policy
 timers bgp 3 9
 bgp graceful-restart
 neighbor e1 interface remote-as external
 address-family ipv4 unicast
  network 10.8.8.8/32
 exit-address-family
 address-family l2vpn evpn
  neighbor e1 activate
 exit-address-family
!
"""
EVPN = """ address-family l2vpn evpn
  neighbor e1 activate
  advertise-all-vni
 exit-address-family"""
VARIANTS = {
    "ipv4": ("", ""),
    "evpn": ("", EVPN),
    "evpn-mh-delay": ("evpn mh startup-delay 10", EVPN),
}


def has_route() -> bool:
    return ROUTE in sh(f"ip -n {NS[0]} route")


def measure(name: str) -> str:
    zebra, evpn = VARIANTS[name]
    try:
        for ns in NS:
            sh(f"ip netns add {ns} && ip -n {ns} link set lo up")
        sh(f"ip link add e1 netns {NS[0]} type veth peer name e1 netns {NS[1]}")
        for ns in NS:
            sh(f"ip -n {ns} link set e1 up")
        sh(f"ip -n {NS[1]} addr add {ROUTE}/32 dev lo")
        start_frr(NS[0], R1.format(zebra=zebra, evpn=evpn), "-r -K 120")
        start_frr(NS[1], R2)
        start = time.monotonic()
        while not has_route():
            if time.monotonic() - start > 60:
                return f"{name}: r1 never learnt {ROUTE}"
            time.sleep(0.5)
        time.sleep(5)
        sh(f"kill -9 $(cat /run/frr/{NS[0]}/bgpd.pid)")
        time.sleep(2)
        after_kill = "kept" if has_route() else "gone"
        restart = subprocess.Popen(
            [str(FRR_INIT), "restart", NS[0]],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        began = time.monotonic()
        missing, returned = 0.0, None
        while time.monotonic() - began < SAMPLE_S:
            if returned is None and restart.poll() is not None:
                returned = time.monotonic() - began
            if not has_route():
                missing += 0.25
            time.sleep(0.25)
        restart.wait(timeout=60)
        took = f"{returned:.1f} s" if returned is not None else "over 40 s"
        return (
            f"{name}: route {after_kill} 2 s after bgpd was killed; missing {missing:.2f} s "
            f"of the {SAMPLE_S:.0f} s from the restart's start (the restart took {took})"
        )
    finally:
        for ns in NS:
            stop_frr(ns)


def main() -> None:
    for name in sys.argv[1:] or list(VARIANTS):
        if name not in VARIANTS:
            raise SystemExit(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}")
        print(measure(name), flush=True)


if __name__ == "__main__":
    main()
