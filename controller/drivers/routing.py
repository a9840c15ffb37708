"""NAPALM's routing getters from FRR's JSON (all three platforms run FRR).

``get_route_to`` from zebra's RIB (``show ip route [<prefix|address>] [longer-prefixes]
json``, FRR 8.4 zebra/zebra_vty.c ``vty_show_ip_route``: prefix -> list of route entries,
each with ``nexthops``), ``get_bgp_neighbors_detail`` from ``show bgp vrf all neighbors
json`` (bgpd/bgp_vty.c ``bgp_show_peer``). Shapes recorded from a real FRR 8.4.4
(tests/drivers/mocked/frr/napalm/).
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from typing import Any, cast

from napalm.base import models

from controller.drivers.common import OutputError

BGP_NEIGHBORS = "show bgp vrf all neighbors json"


def route_command(destination: str, longer: bool) -> str:
    """The vtysh command ``get_route_to`` sends (the default VRF: the one dpctl's fabrics
    route in). ``destination``: "" (every route), an address (the longest match) or a
    prefix (that prefix; with ``longer`` also the more specific ones)."""
    if not destination:
        return "show ip route json"
    try:
        network = ipaddress.ip_network(destination, strict=False)
    except ValueError as exc:
        raise ValueError(f"destination {destination!r} is not an address or prefix") from exc
    family = "ip" if network.version == 4 else "ipv6"
    if "/" not in destination and longer:
        destination = str(network)  # an address: its host prefix
    words = [family, "route", shlex.quote(destination)]
    return " ".join(["show", *words, *(["longer-prefixes"] if longer else []), "json"])


_UPTIME = re.compile(r"(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?")


def uptime_seconds(text: str) -> int:
    """FRR's route age (zebra ``zebra_route_uptime``: ``HH:MM:SS`` under a day, ``1d02h03m``
    under a week, ``1w2d03h`` beyond) in seconds; -1 when unreadable."""
    if text.count(":") == 2:
        hours, minutes, seconds = (int(part) for part in text.split(":"))
        return hours * 3600 + minutes * 60 + seconds
    match = _UPTIME.fullmatch(text)
    if not text or not match:
        return -1
    weeks, days, hours, minutes = (int(part or 0) for part in match.groups())
    return ((weeks * 7 + days) * 24 + hours) * 3600 + minutes * 60


def _hops(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [hop for hop in entry.get("nexthops", []) if isinstance(hop, dict)] or [{}]


def route_to(data: dict[str, Any], protocol: str = "") -> dict[str, list[models.RouteDict]]:
    """NAPALM ``get_route_to`` from zebra's RIB JSON: per prefix, one route per (entry, next
    hop), as NAPALM's model lists multipath (ECMP) routes. ``current_active`` / ``last_active``:
    the entry is zebra's selected one (FRR keeps no previous state); ``selected_next_hop``:
    that next hop is installed in the kernel (``fib``); ``preference``: the administrative
    distance; ``age``: seconds since the entry was installed; ``inactive_reason`` "" (zebra
    gives none); ``protocol_attributes`` {} (zebra's RIB carries no BGP attributes: a BGP
    route's come from bgpd, :func:`add_bgp_attributes`).
    ``protocol`` keeps only entries of that FRR protocol (``bgp``, ``connected``, ``static``,
    ``kernel``, ``table`` ...), case-insensitive."""
    if not isinstance(data, dict):
        raise OutputError(f"route JSON is not an object: {str(data)[:200]!r}")
    result: dict[str, list[models.RouteDict]] = {}
    for prefix, entries in data.items():
        for entry in entries if isinstance(entries, list) else []:
            name = str(entry.get("protocol", ""))
            if protocol and name.lower() != protocol.lower():
                continue
            selected = bool(entry.get("selected", False))
            for hop in _hops(entry):
                result.setdefault(str(prefix), []).append(
                    {
                        "protocol": name,
                        "current_active": selected,
                        "last_active": selected,
                        "age": uptime_seconds(str(entry.get("uptime", ""))),
                        "next_hop": str(hop.get("ip", "")),
                        "outgoing_interface": str(hop.get("interfaceName", "")),
                        "selected_next_hop": selected and bool(hop.get("fib", False)),
                        "preference": int(entry.get("distance", 0)),
                        "inactive_reason": "",
                        "routing_table": str(entry.get("vrfName", "default")),
                        "protocol_attributes": {},
                    }
                )
    return result


def bgp_command(destination: str, routes: dict[str, list[models.RouteDict]]) -> str | None:
    """The vtysh command that gives the BGP attributes of ``routes`` (bgpd's table JSON,
    bgpd/bgp_route.c ``route_vty_out``): the destination prefix and its more specific ones,
    the one prefix an address matched, or the whole table; None without BGP routes."""
    bgp = sorted(p for p, rs in routes.items() if any(r["protocol"] == "bgp" for r in rs))
    if not bgp:
        return None
    afi = "ipv6" if ":" in bgp[0] else "ipv4"
    if "/" in destination:
        return f"show bgp {afi} unicast {shlex.quote(destination)} longer-prefixes json"
    if destination and len(bgp) == 1:
        return f"show bgp {afi} unicast {shlex.quote(bgp[0])} longer-prefixes json"
    return f"show bgp {afi} unicast json"


def _path_attributes(path: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    as_path = str(path.get("path", ""))
    first = as_path.split()[0] if as_path.split() else ""
    local_as = int(table.get("localAS", 0))
    return {
        "local_as": local_as,
        "remote_as": int(first) if first.isdigit() else local_as,
        "peer_id": str(path.get("peerId", "")),
        "as_path": as_path,
        "local_preference": int(path.get("locPrf", table.get("defaultLocPrf", 100))),
        "preference2": int(path.get("weight", 0)),
        "metric": int(path.get("metric", 0)),
    }


def add_bgp_attributes(routes: dict[str, list[models.RouteDict]], table: dict[str, Any]) -> None:
    """Fill each BGP route's ``protocol_attributes`` from bgpd's table JSON: the path whose
    peer or next hop is the route's next hop. NAPALM's keys FRR's table has: local_as,
    remote_as (the first AS of the path; the local AS for a path with none), peer_id (the
    peer's address), as_path, local_preference (the path's, else the table's default),
    preference2 (FRR's weight), metric (MED). Communities are not in the table JSON."""
    paths = table.get("routes", {}) if isinstance(table.get("routes"), dict) else {}
    for prefix, entries in routes.items():
        for route in entries:
            if route["protocol"] != "bgp":
                continue
            for path in paths.get(prefix, []):
                hops = {str(h.get("ip", "")) for h in path.get("nexthops", [])}
                if route["next_hop"] and route["next_hop"] in hops | {path.get("peerId")}:
                    route["protocol_attributes"] = _path_attributes(path, table)
                    break


def _seconds(info: dict[str, Any], key: str, fallback: str = "") -> int:
    value = info.get(key, info.get(fallback) if fallback else None)
    return int(value) // 1000 if isinstance(value, int) else 0


def _families(info: dict[str, Any]) -> list[dict[str, Any]]:
    families = info.get("addressFamilyInfo", {})
    return [block for block in families.values() if isinstance(block, dict)]


def _policy(info: dict[str, Any], key: str) -> str:
    return next((str(b[key]) for b in _families(info) if b.get(key)), "")


def _counted(info: dict[str, Any], key: str) -> int:
    return sum(int(b.get(key, 0)) for b in _families(info))


def _address(value: Any) -> str:
    """An address FRR printed, "" for its "Unknown" (no TCP connection yet)."""
    text = str(value or "")
    return "" if text == "Unknown" else text


def peer_detail(peer: str, info: dict[str, Any], vrf: str) -> models.PeerDetailsDict:
    """One neighbour of ``show bgp vrf all neighbors json`` in NAPALM's model. A BGP
    unnumbered neighbour is its interface name (``remote_address`` "swp3", as FRR and
    ``get_bgp_neighbors`` key it). FRR keeps accepted (post-policy) prefixes only:
    received = accepted (as ``get_bgp_neighbors``); active and suppressed counts are not
    in FRR's neighbour JSON: -1. FRR has no per-neighbour multipath, 4-byte-AS suppression
    or previous state: False / "". ``flap_count``: sessions dropped. A session with no TCP
    connection has no local address ("") and ports -1 (FRR's)."""
    stats = info.get("messageStats", {})
    accepted = _counted(info, "acceptedPrefixCounter")
    detail = {
        "up": info.get("bgpState") == "Established",
        "local_as": int(info.get("localAs", 0)),
        "remote_as": int(info.get("remoteAs", 0)),
        "router_id": str(info.get("remoteRouterId", "")),
        "local_address": _address(info.get("hostLocal")),
        "routing_table": vrf,
        "local_address_configured": "updateSource" in info,
        "local_port": int(info.get("portLocal", 0)),
        "remote_address": peer,
        "remote_port": int(info.get("portForeign", 0)),
        "multihop": int(info.get("externalBgpNbrMaxHopsAway", 1)) > 1,
        "multipath": False,
        "remove_private_as": any(
            key.startswith("privateAsNums") for b in _families(info) for key in b
        ),
        "import_policy": _policy(info, "routeMapForIncomingAdvertisements"),
        "export_policy": _policy(info, "routeMapForOutgoingAdvertisements"),
        "input_messages": int(stats.get("totalRecv", 0)),
        "output_messages": int(stats.get("totalSent", 0)),
        "input_updates": int(stats.get("updatesRecv", 0)),
        "output_updates": int(stats.get("updatesSent", 0)),
        "messages_queued_out": int(stats.get("depthOutq", 0)),
        "connection_state": str(info.get("bgpState", "")),
        "previous_connection_state": "",
        "last_event": str(info.get("lastResetDueTo", "")),
        "suppress_4byte_as": False,
        "local_as_prepend": False,
        "holdtime": _seconds(info, "bgpTimerHoldTimeMsecs", "bgpTimerConfiguredHoldTimeMsecs"),
        "configured_holdtime": _seconds(info, "bgpTimerConfiguredHoldTimeMsecs"),
        "keepalive": _seconds(
            info, "bgpTimerKeepAliveIntervalMsecs", "bgpTimerConfiguredKeepAliveIntervalMsecs"
        ),
        "configured_keepalive": _seconds(info, "bgpTimerConfiguredKeepAliveIntervalMsecs"),
        "active_prefix_count": -1,
        "received_prefix_count": accepted,
        "accepted_prefix_count": accepted,
        "suppressed_prefix_count": -1,
        "advertised_prefix_count": _counted(info, "sentPrefixCounter"),
        "flap_count": int(info.get("connectionsDropped", 0)),
    }
    return cast(models.PeerDetailsDict, detail)


def bgp_neighbors_detail(
    data: dict[str, Any], neighbor_address: str = ""
) -> dict[str, dict[int, list[models.PeerDetailsDict]]]:
    """NAPALM ``get_bgp_neighbors_detail``: VRF (``global`` for the default one, as
    ``get_bgp_neighbors``) -> remote AS -> neighbours. ``neighbor_address`` keeps one
    neighbour: its address, or its interface name for BGP unnumbered."""
    result: dict[str, dict[int, list[models.PeerDetailsDict]]] = {}
    for vrf, peers in data.items():
        if not isinstance(peers, dict):
            continue
        for peer, info in peers.items():
            if not isinstance(info, dict) or "bgpState" not in info:
                continue
            if neighbor_address and peer != neighbor_address:
                continue
            name = str(peers.get("vrfName", vrf))
            detail = peer_detail(str(peer), info, name)
            key = "global" if name == "default" else name
            result.setdefault(key, {}).setdefault(detail["remote_as"], []).append(detail)
    return result
