"""Does a bgpd crash on a leaf leave it without a route, and does BFD on the pair session decide?

The host's own FRR in four namespaces (prefix dpb-cb-): a leaf L with two spines S1, S2 and
the pair leaf P of the other plane, each peer one veth, BGP unnumbered with graceful restart as
the fabric renders it (preserve-fw-state, select-defer-time 0, zebra `-r -K 120`). A remote
server's /32 (10.9.9.9) is announced by both spines and, prepended, by P: the cross-plane
protection path. BFD runs on the spine sessions; the variant says whether it runs on the pair
session too. bgpd on L is killed and FRR's watchfrr starts it again, while
`ip -ts monitor route` on L records every change to the /32 for 45 s.

It prints, per run: how often L's kernel lost the /32 and for how long, and how many times
each of L's sessions was established and dropped. Measured 2026-12-04 (README, "EVPN-MH FRR
crash"): as rendered the /32 was gone 2.16 s in every run. The new bgpd registers each
unnumbered peer's BFD session without a source and again with it at establishment. bfdd
sets the session Down at the deregistration (the spine sees it) and answers the new
registration with that state, and bgpd takes it for its session going down: it sends its
peers "Cease/BFD Down" (a Hard Reset) and drops their routes. Every session with BFD flaps
once; without BFD on the pair session its route carries L (once it has arrived).

Run (root, FRR installed):
    python tests/bench/bench_frr_crash_bfd.py [--runs N] [--verbose] [--log DIR] [VARIANT]...
Variants: as-rendered (BFD on every session), pair-no-bfd (none on the pair session),
spine-cpf (the spines' BFD with `check-control-plane-failure`, which FRR's bgpd honours only
for a peer that can restart gracefully and whose BFD C bit is clear).
About 1 min per run; cleans up its namespaces and /etc/frr/dpb-cb-* whatever happens.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.frr_harness import sh, start_frr, stop_frr

PREFIX = "dpb-cb-"
REMOTE = "10.9.9.9"
SERVER = "10.7.7.7"
WATCH_S = 45.0
# node -> (ASN, router id, peer interfaces, extra loopback address announced)
NODES: dict[str, tuple[int, str, tuple[str, ...], str | None]] = {
    "L": (65001, "10.0.0.1", ("s1", "s2", "p"), SERVER),
    "S1": (65100, "10.0.0.11", ("l",), REMOTE),
    "S2": (65100, "10.0.0.12", ("l",), REMOTE),
    "P": (65002, "10.0.0.21", ("l",), REMOTE),
}
CABLES = (("L", "s1", "S1", "l"), ("L", "s2", "S2", "l"), ("L", "p", "P", "l"))


def ns(node: str) -> str:
    return PREFIX + node.lower()


# variant -> (BFD on the pair session, the spines' `bfd check-control-plane-failure`)
VARIANTS = {"as-rendered": (True, False), "pair-no-bfd": (False, False), "spine-cpf": (True, True)}


def config(node: str, pair_bfd: bool, spine_cpf: bool, log_dir: str = "") -> str:
    """The node's frr.conf; with ``log_dir`` FRR logs its BGP neighbour and BFD events there."""
    asn, router_id, interfaces, announced = NODES[node]
    group = "PAIR" if node == "P" else "SPINES"
    lines = [
        "frr defaults datacenter",
        f"hostname {node}",
        *(
            [f"log file {log_dir}/{ns(node)}.log", "debug bgp neighbor-events", "debug bgp bfd"]
            if log_dir
            else []
        ),
        f"router bgp {asn}",
        f" bgp router-id {router_id}",
        " no bgp ebgp-requires-policy",
        " bgp bestpath as-path multipath-relax",
        " timers bgp 3 9",
        " bgp graceful-restart",
        " bgp graceful-restart preserve-fw-state",
        " bgp graceful-restart select-defer-time 0",
    ]
    # group -> BFD on it; the pair session's two ends agree, as a rendered fabric's do
    groups = {"L": {"SPINES": True, "PAIR": pair_bfd}, "P": {"PAIR": pair_bfd}}.get(
        node, {"SPINES": True}
    )
    for name, bfd in groups.items():
        lines += [f" neighbor {name} peer-group", f" neighbor {name} remote-as external"]
        if bfd:
            lines.append(f" neighbor {name} bfd")
        if bfd and spine_cpf and node in ("S1", "S2"):
            lines.append(f" neighbor {name} bfd check-control-plane-failure")
        lines.append(f" neighbor {name} advertisement-interval 0")
        lines.append(f" neighbor {name} timers connect 10")
    for interface in interfaces:
        peer_group = ("PAIR" if interface == "p" else "SPINES") if node == "L" else group
        lines.append(f" neighbor {interface} interface peer-group {peer_group}")
    lines += [" address-family ipv4 unicast", "  maximum-paths 64"]
    if announced:
        lines.append(f"  network {announced}/32")
    if node == "P":
        lines.append("  neighbor PAIR route-map PREPEND out")
    lines += [" exit-address-family", "exit"]
    if node == "P":
        lines += ["route-map PREPEND permit 10", " set as-path prepend 65002 65002 65002", "exit"]
    return "\n".join(lines) + "\n"


def remote_route() -> str:
    return sh(f"ip -n {ns('L')} route show {REMOTE}/32").strip()


def sessions() -> dict[str, tuple[int, int]]:
    """L's peers: (times established, times dropped). The reason is left to --log: FRR 8.4's
    ``lastResetDueTo`` is overwritten by the reconnection's own states (it read "No AFI/SAFI
    activated for peer" where the debug log showed the BFD Cease)."""
    raw = sh(f"vtysh -N {ns('L')} -c 'show bgp neighbors json'")
    data = json.loads(raw)
    return {
        name: (int(peer.get("connectionsEstablished", 0)), int(peer.get("connectionsDropped", 0)))
        for name, peer in data.items()
    }


def wait_converged(timeout_s: float = 90.0) -> None:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        route = remote_route()
        up = sessions()
        if route.count("nexthop") >= 2 and all(e >= 1 for e, _ in up.values()):
            bfd = sh(f"vtysh -N {ns('L')} -c 'show bfd peers brief'")
            if bfd.count(" up ") >= 2:
                return
        time.sleep(1)
    raise SystemExit(f"L did not converge in {timeout_s:.0f} s: {remote_route()!r} {sessions()}")


def gaps(monitor: str, end: float) -> tuple[int, float]:
    """(times the /32 was deleted with no replacement, longest time without it, s); a /32
    still missing counts until ``end`` (seconds since midnight, like the monitor's stamps)."""
    missing_since: float | None = None
    deletions, longest = 0, 0.0
    for line in monitor.splitlines():
        match = re.match(r"\[(\d+)-(\d+)-(\d+)T(\d+):(\d+):([\d.]+)", line)
        if not match or REMOTE not in line:
            continue
        stamp = int(match[4]) * 3600 + int(match[5]) * 60 + float(match[6])
        if line.split("]", 1)[1].lstrip().startswith("Deleted"):
            deletions += 1
            missing_since = stamp if missing_since is None else missing_since
        elif missing_since is not None:
            longest = max(longest, stamp - missing_since)
            missing_since = None
    if missing_since is not None:
        longest = max(longest, end - missing_since)
    return deletions, longest


def run(variant: str, verbose: bool, log_dir: str) -> str:
    pair_bfd, spine_cpf = VARIANTS[variant]
    try:
        for node in NODES:
            sh(f"ip netns add {ns(node)} && ip -n {ns(node)} link set lo up")
        for a, a_if, z, z_if in CABLES:
            sh(f"ip link add {a_if} netns {ns(a)} type veth peer name {z_if}x netns {ns(z)}")
            sh(f"ip -n {ns(z)} link set dev {z_if}x name {z_if}")
            sh(f"ip -n {ns(a)} link set dev {a_if} up && ip -n {ns(z)} link set dev {z_if} up")
        for node, (_, router_id, _, announced) in NODES.items():
            sh(f"ip -n {ns(node)} addr add {router_id}/32 dev lo")
            if announced:
                sh(f"ip -n {ns(node)} addr add {announced}/32 dev lo")
            start_frr(ns(node), config(node, pair_bfd, spine_cpf, log_dir), "-r -K 120")
        wait_converged()
        time.sleep(5)
        before = sessions()
        monitor = subprocess.Popen(
            ["ip", "-ts", "-n", ns("L"), "monitor", "route"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            time.sleep(0.5)
            kill_stamp = sh("date +%T.%N")
            sh(f"kill -9 $(cat /run/frr/{ns('L')}/bgpd.pid)")
            time.sleep(WATCH_S)
        finally:
            now = datetime.now()
            monitor.terminate()
            out, _ = monitor.communicate(timeout=10)
        after = sessions()
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        since_midnight = (now - midnight).total_seconds()
        deletions, longest = gaps(out, since_midnight)
        if verbose:
            changes = [line for line in out.splitlines() if REMOTE in line or "nexthop" in line]
            print(f"bgpd killed at {kill_stamp.strip()}", *changes, sep="\n")
            for node in ("S1", "P"):
                text = sh(f"vtysh -N {ns(node)} -c 'show bgp neighbors l'")
                why = [ln.strip() for ln in text.splitlines() if re.search("reset|NOTIF|BFD", ln)]
                print(f"{node}'s session to L:", *why, sep="\n  ")
        flaps = {
            peer: f"+{after[peer][0]} established, {after[peer][1]} dropped"
            for peer in sorted(after)
        }
        ends_with = "has a route" if remote_route() else "HAS NO ROUTE"
        return (
            f"{variant}: {REMOTE}/32 deleted {deletions}x, "
            f"longest without it {longest:.2f} s; at the end L {ends_with}; new bgpd's "
            f"sessions: {flaps} (before the kill: {before})"
        )
    finally:
        for node in NODES:
            stop_frr(ns(node))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="print the /32's changes")
    parser.add_argument("--log", default="", help="directory for FRR's debug logs")
    args = parser.parse_args()
    for variant in args.variants:
        if variant not in VARIANTS:
            raise SystemExit(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
        for _ in range(args.runs):
            print(run(variant, args.verbose, args.log), flush=True)


if __name__ == "__main__":
    main()
