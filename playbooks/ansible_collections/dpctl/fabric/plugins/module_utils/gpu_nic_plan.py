"""What brings one GPU NIC to its intended state (dpctl_gpu_nic; pure).

From the state read with `ip -j` (gpu_nic_state.read_state) and the NIC's intended facts:
the `ip -batch` and `tc -batch` lines to run, why each is needed, the keep-alive to start,
and where in the `ip` lines a new LACP bond gets independent control (while still down).
A converged NIC plans nothing, so a second run reports changed=false.
"""

from __future__ import annotations

import re
from typing import Any

BOND_KEYS = {
    # option name in `ip link add ... type bond` -> key in `ip -j -d link` info_data
    "mode": "mode",
    "lacp_rate": "ad_lacp_rate",
    "xmit_hash_policy": "xmit_hash_policy",
    "miimon": "miimon",
    "updelay": "updelay",
}
RULE_KEYS = {"priority", "src", "srclen", "table", "flags", "protocol"}
"""The keys of a rule that selects a NIC's table from its address and nothing else."""


def keepalive_argv(nic: dict[str, Any], interval: int) -> list[str]:
    return ["ping", "-q", "-i", str(interval), "-I", nic["ip"], nic["gateway"]]


def _bond_mismatch(link: dict[str, Any], options: dict[str, Any]) -> list[str]:
    info = link.get("linkinfo", {})
    if info.get("info_kind") != "bond":
        return [f"kind {info.get('info_kind')!r}"]
    data = info.get("info_data", {})
    wrong = []
    for opt, value in options.items():
        key = BOND_KEYS.get(opt, opt)
        if str(data.get(key)) != str(value):
            wrong.append(f"{opt} {data.get(key)!r} (want {value!r})")
    return wrong


def parse_tc_filters(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """`tc filter show dev X egress` -> [(protocol, [(Mirror|Redirect, device), ...])]."""
    filters: list[tuple[str, list[tuple[str, str]]]] = []
    for line in text.splitlines():
        head = re.match(r"filter protocol (\S+) pref \d+ u32 .*fh [0-9a-f]+::[0-9a-f]+", line)
        if head:
            filters.append((head.group(1), []))
            continue
        action = re.search(r"mirred \(Egress (Mirror|Redirect) to device (\S+)\)", line)
        if action and filters:
            filters[-1][1].append((action.group(1), action.group(2)))
    return filters


def arp_filter_cmd(bond: str, port_a: str, port_b: str) -> str:
    return (
        f"filter add dev {bond} egress protocol arp u32 match u32 0 0 "
        f"action mirred egress mirror dev {port_a} "
        f"action mirred egress redirect dev {port_b}"
    )


def plan_nic(state: dict[str, Any], nic: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """The `ip`/`tc` batch lines and the keep-alive that bring one NIC to its intended state."""
    plan: dict[str, Any] = {"ip": [], "tc": [], "why": [], "independent_after": None}
    link, fresh = _plan_bond(plan, state["links"].get(nic["bond"]), nic["bond"], p)
    _plan_ports(plan, state["links"], nic, fresh)
    _plan_link_up(plan, link, nic["bond"], p["mtu"], fresh)
    _plan_address(plan, state, nic, fresh)
    _plan_rule(plan, state["rules"], nic)
    _plan_route(plan, state["routes"], nic, p["rail_pool"], fresh)
    _plan_arp_mirror(plan, state, nic, p["arp_on_both_ports"], fresh)
    ping = keepalive_argv(nic, int(p["arp_keepalive_s"]))
    start_ping = ping not in state["pings"]
    if start_ping:
        plan["why"].append(f"keep-alive {' '.join(ping)}")
    return {
        "ip": plan["ip"],
        "tc": plan["tc"],
        "ping": ping if start_ping else None,
        "why": plan["why"],
        "independent_after": plan["independent_after"],
    }


def _plan_bond(
    plan: dict[str, Any], link: dict[str, Any] | None, bond: str, p: dict[str, Any]
) -> tuple[dict[str, Any] | None, bool]:
    """The bond recreated when its options differ, created when missing: (the link as it
    stays, None when (re)created; whether it is fresh)."""
    options = p["bond_options"]
    fresh = False
    if link is not None:
        wrong = _bond_mismatch(link, options)
        if wrong:
            plan["why"].append(f"{bond}: recreate ({', '.join(wrong)})")
            plan["ip"].append(f"link del {bond}")
            link, fresh = None, True
    if link is None:
        fresh = True
        opt_text = " ".join(f"{k} {v}" for k, v in options.items())
        plan["why"].append(f"{bond}: create bond ({opt_text})")
        plan["ip"].append(f"link add {bond} type bond {opt_text}")
        if options.get("mode") == "802.3ad":
            # set while the new bond is down, before its ports, address and routes
            plan["independent_after"] = len(plan["ip"])
    return link, fresh


def _plan_ports(
    plan: dict[str, Any], links: dict[str, Any], nic: dict[str, Any], fresh: bool
) -> None:
    """The NIC's ports enslaved to its bond; any other member of the bond released."""
    bond, ports = nic["bond"], list(nic["ports"])
    for port in ports:
        if port not in links:
            raise RuntimeError(f"{bond}: port {port} does not exist on this server")
        master = links[port].get("master")
        if master == bond and not fresh:
            continue
        if master and master != bond:
            plan["ip"].append(f"link set {port} nomaster")
        plan["why"].append(f"{port}: enslave to {bond}")
        plan["ip"] += [f"link set {port} down", f"link set {port} master {bond}"]
    if not fresh:
        for name, other in sorted(links.items()):
            if other.get("master") == bond and name not in ports:
                plan["why"].append(f"{name}: not a port of {bond}, released")
                plan["ip"].append(f"link set {name} nomaster")


def _plan_link_up(
    plan: dict[str, Any], link: dict[str, Any] | None, bond: str, mtu: int, fresh: bool
) -> None:
    up = link is not None and "UP" in link.get("flags", [])
    if fresh or not up or link is None or int(link.get("mtu", 0)) != int(mtu):
        plan["why"].append(f"{bond}: mtu {mtu} up")
        plan["ip"].append(f"link set {bond} mtu {mtu} up")


def _plan_address(
    plan: dict[str, Any], state: dict[str, Any], nic: dict[str, Any], fresh: bool
) -> None:
    """The NIC's one IPv4 address on its bond (any other removed)."""
    bond, ip, plen = nic["bond"], nic["ip"], int(nic["prefixlen"])
    inet = [] if fresh else [a for a in state["addrs"].get(bond, []) if a.get("family") == "inet"]
    have = {(a.get("local"), int(a.get("prefixlen", 0))) for a in inet}
    for local, stray in sorted(have - {(ip, plen)}):
        plan["why"].append(f"{bond}: remove stray address {local}/{stray}")
        plan["ip"].append(f"address del {local}/{stray} dev {bond}")
    if (ip, plen) not in have:
        plan["why"].append(f"{bond}: address {ip}/{nic['prefixlen']}")
        plan["ip"].append(f"address add {ip}/{nic['prefixlen']} dev {bond}")


def _plan_rule(plan: dict[str, Any], rules: list[dict[str, Any]], nic: dict[str, Any]) -> None:
    """One rule at the table's priority: from the NIC's address, to its table."""
    ip, table = nic["ip"], int(nic["table"])
    at_prio = [r for r in rules if int(r.get("priority", -1)) == table]
    good = [
        r
        for r in at_prio
        if r.get("src") == ip
        and int(r.get("srclen", 32)) == 32
        and str(r.get("table")) == str(table)
        and set(r) <= RULE_KEYS
    ]
    if len(at_prio) != 1 or len(good) != 1:
        for _ in at_prio:
            plan["ip"].append(f"rule del priority {table}")
        plan["why"].append(f"rule from {ip} table {table}")
        plan["ip"].append(f"rule add from {ip} table {table} priority {table}")


def _plan_route(
    plan: dict[str, Any], routes: list[dict[str, Any]], nic: dict[str, Any], pool: str, fresh: bool
) -> None:
    """The rail pool through the NIC's gateway in its table."""
    bond, gw, table = nic["bond"], nic["gateway"], int(nic["table"])
    in_table = [r for r in routes if str(r.get("table")) == str(table)]
    if fresh or not any(
        r.get("dst") == pool and r.get("gateway") == gw and r.get("dev") == bond for r in in_table
    ):
        plan["why"].append(f"route {pool} via {gw} dev {bond} table {table}")
        plan["ip"].append(f"route replace {pool} via {gw} dev {bond} table {table}")


def _plan_arp_mirror(
    plan: dict[str, Any], state: dict[str, Any], nic: dict[str, Any], both: bool, fresh: bool
) -> None:
    """Dual-ARP: every ARP frame out of both ports (clsact egress: mirror to port 1,
    redirect to port 2); otherwise no clsact on the bond."""
    bond, ports = nic["bond"], list(nic["ports"])
    has_clsact = bond in state["clsact"] and not fresh
    if both:
        want = [("arp", [("Mirror", ports[0]), ("Redirect", ports[1])])]
        current = [] if fresh else parse_tc_filters(state["filters"].get(bond, ""))
        if not has_clsact:
            plan["why"].append(f"{bond}: clsact qdisc")
            plan["tc"].append(f"qdisc add dev {bond} clsact")
        if current != want:
            if current:
                plan["tc"].append(f"filter del dev {bond} egress")
            plan["why"].append(f"{bond}: ARP out of both ports ({ports[0]} mirror, {ports[1]})")
            plan["tc"].append(arp_filter_cmd(bond, ports[0], ports[1]))
    elif has_clsact:
        plan["why"].append(f"{bond}: remove clsact (ARP mirroring is for dual-ARP only)")
        plan["tc"].append(f"qdisc del dev {bond} clsact")
