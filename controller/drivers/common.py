"""Parsing and diff helpers shared by the dpctl NAPALM drivers (SONiC, AsterNOS, Linux + FRR).

Everything here is pure: text or decoded JSON in, NAPALM / dpctl models out. The JSON shapes
are FRR 8.x's (captured from a real FRR 8.4.4: ``show bgp vrf all summary json``, ``show bgp
vrf all neighbors json``, ``show ip route json``; ``show evpn es detail json`` follows zebra's
``zebra_evpn_es_show_entry_detail``) and lldpd's ``lldpctl -f json``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from napalm.base import models

from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState, QosState

FRR_DAEMON_MARKER = "! >>> "
FRR_GLOBAL_LINES = (
    "hostname",
    "log ",
    "service integrated-vtysh-config",
    "no service integrated-vtysh-config",
)
"""vtysh-wide lines every daemon's ``show running-config <daemon>`` repeats: left out of
per-daemon diffs (a change to them is not reported there)."""
"""Rendered SONiC frr.conf holds one section per split-mode daemon file: ``! >>> bgpd.conf``."""

# Route-maps dpctl renders toward the fabric (controller/render/bgp.py): isolated means they
# advertise nothing but the switch's own loopback (PL-LOOPBACK).
FABRIC_OUT_ROUTE_MAPS = ("RM-SPINES-OUT", "RM-LEAVES-OUT")
LOOPBACK_PREFIX_LIST = "PL-LOOPBACK"
HOSTS_IMPORT_ROUTE_MAP = "RM-HOSTS-IMPORT"
REFRESH_ROUTES = "clear bgp * soft"
"""Route refresh both ways on every session of every address family, no reset (FRR 8.4
bgpd/bgp_vty.c ``clear_ip_bgp_all``: no AFI given means all of them)."""

_AFI_NAMES = {
    "ipv4Unicast": "ipv4",
    "ipv6Unicast": "ipv6",
    "l2VpnEvpn": "l2vpn_evpn",
    "ipv4Multicast": "ipv4_multicast",
    "ipv6Multicast": "ipv6_multicast",
}


class OutputError(ValueError):
    """A device answered something that is not the expected structured output."""


def load_json(text: str) -> Any:
    """Decode a JSON answer, skipping anything a CLI printed before it (echo, banners)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise OutputError(f"no JSON in output: {text[:200]!r}")
    start = min(starts)
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise OutputError(f"bad JSON in output ({exc}): {text[start : start + 200]!r}") from exc
    return value


# --------------------------------------------------------------------------------------- BGP


def _summary_vrfs(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{vrf: {afi: summary}} from `show bgp [vrf all] summary json` / `show ip bgp summary json`."""
    if "peers" in data:  # `show ip bgp summary json`: one AFI, flat
        return {str(data.get("vrfName", "default")): {"ipv4Unicast": data}}
    if any(isinstance(v, dict) and "peers" in v for v in data.values()):  # one VRF, per AFI
        first = next(v for v in data.values() if isinstance(v, dict) and "peers" in v)
        return {str(first.get("vrfName", "default")): data}
    return {vrf: afis for vrf, afis in data.items() if isinstance(afis, dict)}


def bgp_neighbors(
    summary: dict[str, Any], neighbors: dict[str, Any] | None = None
) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
    """NAPALM ``get_bgp_neighbors`` from FRR's summary JSON (+ ``neighbors json`` for router ids).

    FRR's summary counts prefixes accepted after inbound policy (``pfxRcd``); without
    soft-reconfiguration inbound the pre-policy count is not kept, so ``received_prefixes``
    carries the accepted count too. ``uptime`` is whole seconds (NAPALM's model: an int), -1
    for a session that is not established.
    """
    result: dict[str, models.BGPStateNeighborsPerVRFDict] = {}
    for vrf, afis in _summary_vrfs(summary).items():
        name = "global" if vrf == "default" else vrf
        details = (neighbors or {}).get(vrf, {})
        entry: dict[str, Any] = {"router_id": "", "peers": {}}
        for afi, block in afis.items():
            if not isinstance(block, dict) or "peers" not in block:
                continue
            entry["router_id"] = entry["router_id"] or str(block.get("routerId", ""))
            family = _AFI_NAMES.get(afi, afi)
            for peer, info in block["peers"].items():
                detail = details.get(peer, {}) if isinstance(details, dict) else {}
                up = info.get("state") == "Established"
                state = str(info.get("state", ""))
                peer_entry = entry["peers"].setdefault(
                    peer,
                    {
                        "local_as": int(info.get("localAs", block.get("as", 0))),
                        "remote_as": int(info.get("remoteAs", 0)),
                        "remote_id": str(detail.get("remoteRouterId", "")),
                        "is_up": up,
                        "is_enabled": "Admin" not in state and info.get("peerState") != "Admin",
                        "description": str(info.get("desc", detail.get("nbrDesc", ""))),
                        "uptime": int(info.get("peerUptimeMsec", 0)) // 1000 if up else -1,
                        "address_family": {},
                    },
                )
                accepted = int(info.get("pfxRcd", 0))
                peer_entry["address_family"][family] = {
                    "received_prefixes": accepted,
                    "accepted_prefixes": accepted,
                    "sent_prefixes": int(info.get("pfxSnt", 0)),
                }
        result[name] = cast(models.BGPStateNeighborsPerVRFDict, entry)
    return result


# ------------------------------------------------------------------------------ host routes


def host_routes(data: dict[str, Any]) -> list[HostRoute]:
    """IPv4 /32 routes of ``show ip route json`` (every entry, selected or not), sorted."""
    routes: list[HostRoute] = []
    for prefix, entries in data.items():
        if not prefix.endswith("/32") or ":" in prefix:
            continue
        for entry in entries:
            hops: list[str] = []
            for hop in entry.get("nexthops", []):
                if hop.get("active") is False:
                    continue
                name = hop.get("interfaceName") or hop.get("ip")
                if name and name not in hops:
                    hops.append(str(name))
            routes.append(
                HostRoute(
                    prefix=prefix,
                    protocol=str(entry.get("protocol", "")),
                    nexthops=hops,
                    selected=bool(entry.get("selected", False)),
                )
            )
    return sorted(routes, key=lambda r: (_ip_key(r["prefix"]), r["protocol"]))


def _ip_key(prefix: str) -> tuple[int, ...]:
    return tuple(int(part) for part in prefix.split("/")[0].split("."))


# ------------------------------------------------------------------------------------ EVPN


def evpn_es(data: list[dict[str, Any]] | dict[str, Any]) -> list[EthernetSegmentState]:
    """``show evpn es detail json``: local segments with DF role and the other PEs' VTEPs."""
    items = data if isinstance(data, list) else list(data.values())
    result: list[EthernetSegmentState] = []
    for es in items:
        flags = set(es.get("flags", []))
        if "local" not in flags:
            continue
        result.append(
            EthernetSegmentState(
                esi=str(es.get("esi", "")),
                interface=str(es.get("accessPort", "")),
                up="operUp" in flags,
                df="nonDF" not in flags,
                peers=sorted(str(v["vtep"]) for v in es.get("vteps", []) if "vtep" in v),
            )
        )
    return sorted(result, key=lambda e: e["esi"])


# ---------------------------------------------------------------------- config structure


@dataclass
class Node:
    """One line of a Cisco/FRR-style configuration with its indented children."""

    line: str
    children: list[Node] = field(default_factory=list)


_SKIP = re.compile(
    r"^(!.*|Building configuration\.\.\.|Current configuration:?.*|end|exit|exit-address-family"
    r"|exit-vrf|exit-vni|frr version .*|frr defaults .*|configure terminal|write( memory)?)$"
)


def config_tree(text: str) -> list[Node]:
    """Parse indented configuration text into a tree; comments, ``exit``/``end`` and the
    session commands (``configure terminal``, ``write`` and its ``y``) carry no configuration
    and go."""
    root = Node("")
    stack: list[tuple[int, Node]] = [(-1, root)]
    previous = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        # AsterNOS: ``write`` asks for a confirmation; the session answers ``y`` on the next line.
        answer = stripped == "y" and previous.startswith("write")
        previous = stripped or previous
        if not stripped or answer or _SKIP.match(stripped):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        # A block opened twice (``interface ethernet 0/0`` for breakout, then for the port)
        # is one block, as the device's running-config shows it.
        node = next((n for n in parent.children if n.line == stripped and n.children), None)
        if node is None:
            node = Node(stripped)
            parent.children.append(node)
        stack.append((indent, node))
    return root.children


def natural_key(text: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def normalize_config(text: str, drop: Iterable[str] = ()) -> str:
    """Canonical text for diffs: blocks sorted (numbers compared as numbers), one space of
    indentation per level, top-level lines starting with a prefix in ``drop`` removed."""
    prefixes = tuple(drop)

    def emit(nodes: list[Node], depth: int, out: list[str]) -> None:
        for node in sorted(nodes, key=lambda n: natural_key(n.line)) if depth == 0 else nodes:
            if depth == 0 and prefixes and node.line.startswith(prefixes):
                continue
            out.append(" " * depth + node.line)
            emit(node.children, depth + 1, out)

    lines: list[str] = []
    emit(config_tree(text), 0, lines)
    return "\n".join(lines) + ("\n" if lines else "")


def merge_config(base: str, extra: str) -> str:
    """``base`` with ``extra`` merged in (what a merge commit leaves), as normalized text."""
    tree = config_tree(base)

    def merge(into: list[Node], new: list[Node]) -> None:
        by_line = {n.line: n for n in into}
        for node in new:
            if node.line in by_line:
                merge(by_line[node.line].children, node.children)
            else:
                into.append(node)
                by_line[node.line] = node

    merge(tree, config_tree(extra))

    def dump(nodes: list[Node], depth: int) -> list[str]:
        return [
            line
            for node in nodes
            for line in [" " * depth + node.line, *dump(node.children, depth + 1)]
        ]

    return normalize_config("\n".join(dump(tree, 0)))


def negations(running: str, candidate: str, keep: Iterable[str] = ()) -> list[str]:
    """Commands that remove what ``running`` has and ``candidate`` lacks (Cisco ``no`` form),
    each wrapped in its parents' context lines and an ``exit`` per level, in reverse running
    order. Top-level lines
    starting with a prefix in ``keep`` are never removed (only their children are)."""
    keep_prefixes = tuple(keep)
    commands: list[str] = []

    def walk(old: list[Node], new: list[Node], parents: list[str]) -> None:
        new_by_line = {n.line: n for n in new}
        # Last first: a running config lists what others depend on (VLANs, prefix-lists)
        # before its users (members, route-maps), so removals go in reverse.
        for node in reversed(old):
            match = new_by_line.get(node.line)
            if match is not None:
                walk(node.children, match.children, [*parents, node.line])
                continue
            if not parents and keep_prefixes and node.line.startswith(keep_prefixes):
                walk(node.children, [], [node.line])
                continue
            negated = node.line[3:] if node.line.startswith("no ") else f"no {node.line}"
            commands.extend([*parents, negated, *(["exit"] * len(parents))])

    walk(config_tree(running), config_tree(candidate), [])
    return commands


def unified_diff(old: str, new: str, name: str) -> str:
    """``diff -u`` of two texts, headers ``running/<name>`` / ``candidate/<name>``; "" if equal."""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"running/{name}",
            tofile=f"candidate/{name}",
        )
    )


def split_daemons(text: str, default: str = "frr.conf") -> dict[str, str]:
    """Sections of a rendered split-mode FRR file, keyed by daemon file name, in order."""
    sections: dict[str, list[str]] = {}
    current = default
    for line in text.splitlines(keepends=True):
        if line.startswith(FRR_DAEMON_MARKER):
            current = line[len(FRR_DAEMON_MARKER) :].strip()
            sections.setdefault(current, [])
            continue
        sections.setdefault(current, []).append(line)
    return {name: "".join(lines) for name, lines in sections.items() if "".join(lines).strip()}


# ------------------------------------------------------------------------------ maintenance


def maintenance_state(running: str) -> MaintenanceState:
    """Drain state from running FRR-style config: ``bgp graceful-shutdown`` under a ``router
    bgp``, and "isolated" when every fabric-facing outbound route-map present permits only
    the loopback prefix-list (the form dpctl renders for ``maintenance: isolated``)."""
    tree = config_tree(running)
    graceful = any(
        node.line.startswith("router bgp")
        and any(child.line == "bgp graceful-shutdown" for child in node.children)
        for node in tree
    )
    permits: dict[str, list[set[str]]] = {}
    for node in tree:
        words = node.line.split()
        if len(words) >= 3 and words[0] == "route-map" and words[1] in FABRIC_OUT_ROUTE_MAPS:
            entries = permits.setdefault(words[1], [])
            if words[2] == "permit":
                entries.append(
                    {
                        child.line.split()[-1]
                        for child in node.children
                        if child.line.startswith("match ip address prefix-list")
                    }
                )
    isolated = bool(permits) and all(
        entries and all(matches == {LOOPBACK_PREFIX_LIST} for matches in entries)
        for entries in permits.values()
    )
    return MaintenanceState(
        graceful_shutdown=graceful, isolated=isolated, hosts_via_pair=_hosts_via_pair(tree)
    )


def _hosts_via_pair(tree: list[Node]) -> bool:
    """A ``deny`` entry in the host routes' import route-map: the form dpctl renders for a
    leaf handed off to its pair (its zebra imports no host routes then, either)."""
    return any(
        node.line.split()[:3] == ["route-map", HOSTS_IMPORT_ROUTE_MAP, "deny"] for node in tree
    )


# ------------------------------------------------------------------------------------- QoS


def _queue_numbers(text: str) -> list[int]:
    """``3`` / ``3-4`` / ``3,4`` (CONFIG_DB's queue and priority lists) as numbers."""
    numbers: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if first.isdigit():
            numbers += range(int(first), int(last or first) + 1)
    return sorted(set(numbers))


def qos_from_config_db(
    port_qos_map: dict[str, Any] | None,
    queues: dict[str, Any] | None,
    wred_profiles: dict[str, Any] | None,
) -> QosState:
    """PFC and ECN per port from CONFIG_DB's PORT_QOS_MAP (``pfc_enable``), QUEUE
    (``<port>|<queue>`` -> ``wred_profile``) and WRED_PROFILE (``ecn``: ``ecn_none`` or
    absent marks nothing). SONiC leaves the ECMP hash to the ASIC: not reported."""
    pfc: dict[str, list[int]] = {}
    for port, fields in (port_qos_map or {}).items():
        enabled = _queue_numbers(str(fields.get("pfc_enable", "")))
        if enabled and port != "global":
            pfc[str(port)] = enabled
    marking = {
        str(name)
        for name, fields in (wred_profiles or {}).items()
        if str(fields.get("ecn", "ecn_none")) != "ecn_none"
    }
    ecn: dict[str, list[int]] = {}
    for key, fields in (queues or {}).items():
        port, _, numbers = str(key).partition("|")
        if str(fields.get("wred_profile", "")).strip("[]").split("|")[-1] in marking:
            ecn[port] = sorted(set(ecn.get(port, [])) | set(_queue_numbers(numbers)))
    return QosState(pfc=pfc, ecn=ecn, ecmp_hash=None)


# ------------------------------------------------------------------------------------ LLDP


def _single_key(obj: Any) -> tuple[str, Any]:
    if isinstance(obj, dict) and len(obj) == 1:
        key, value = next(iter(obj.items()))
        return str(key), value
    return "", obj


def _as_list(obj: Any) -> list[Any]:
    if obj is None:
        return []
    return obj if isinstance(obj, list) else [obj]


# lldpd's capability names -> NAPALM's (napalm.base.base.get_lldp_neighbors_detail)
_CAPABILITIES = {
    "other": "other",
    "repeater": "repeater",
    "bridge": "bridge",
    "wlan": "wlan-access-point",
    "router": "router",
    "telephone": "telephone",
    "docsis": "docsis-cable-device",
    "station": "station",
}


def lldp_neighbors_detail(data: dict[str, Any]) -> dict[str, list[models.LLDPNeighborDetailDict]]:
    """NAPALM ``get_lldp_neighbors_detail`` from ``lldpctl -f json`` (one interface is an
    object, several a list; a chassis is keyed by its system name when it announces one, else
    the chassis id stands in for the name, as in ``get_lldp_neighbors``). lldpd does not say
    which bond a port belongs to: ``parent_interface`` is ""."""
    result: dict[str, list[models.LLDPNeighborDetailDict]] = {}
    for item in _as_list(data.get("lldp", {}).get("interface")):
        entries = item.items() if isinstance(item, dict) else []
        for local, info in entries:
            chassis_name, chassis = _single_key(info.get("chassis", {}))
            if chassis_name == "id":  # no system name announced: the chassis id stands in
                chassis_name, chassis = str(chassis.get("value", "")), {"id": chassis}
            chassis_id = str(chassis.get("id", {}).get("value", ""))
            port = info.get("port", {})
            capabilities = [c for c in _as_list(chassis.get("capability")) if isinstance(c, dict)]
            names = [
                (_CAPABILITIES.get(str(c.get("type", "")).lower(), "other"), c)
                for c in capabilities
            ]
            result.setdefault(str(local), []).append(
                {
                    "parent_interface": "",
                    "remote_port": str(
                        port.get("id", {}).get("value", "") or port.get("descr", "")
                    ),
                    "remote_chassis_id": chassis_id,
                    "remote_port_description": str(port.get("descr", "")),
                    "remote_system_name": chassis_name or chassis_id,
                    "remote_system_description": str(chassis.get("descr", "")),
                    "remote_system_capab": [n for n, _ in names],
                    "remote_system_enable_capab": [n for n, c in names if c.get("enabled") is True],
                }
            )
    return result


def lldp_neighbors(data: dict[str, Any]) -> dict[str, list[models.LLDPNeighborDict]]:
    """NAPALM ``get_lldp_neighbors``: each neighbour's system name (or chassis id) and port."""
    return {
        local: [{"hostname": n["remote_system_name"], "port": n["remote_port"]} for n in found]
        for local, found in lldp_neighbors_detail(data).items()
    }
