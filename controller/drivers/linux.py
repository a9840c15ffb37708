"""NAPALM's standard getters from the Linux kernel's own view, as iproute2 prints it in JSON.

All three platforms run Linux underneath (the Linux + FRR switch itself; SONiC and AsterNOS
in their shell), so addresses, neighbours, VRFs and (on the FRR switch) counters, the
bridge's VLANs and FDB are read the same way everywhere. Pure functions: decoded JSON in,
NAPALM models out. The JSON shapes are iproute2 6.1's (ip/ipaddress.c, ip/ipneigh.c
``print_neigh`` and ``print_cacheinfo`` with ``-s``, ip/iplink.c ``-d`` linkinfo,
bridge/vlan.c ``print_vlan_info``, bridge/fdb.c ``print_fdb``), recorded from a real iproute2
6.1 (tests/drivers/mocked/frr/napalm/).

NAPALM's conventions: MAC addresses in NAPALM's EUI form (``napalm.base.helpers.mac``), IP
addresses through ``napalm.base.helpers.ip``, -1 / -1.0 for a number the source does not
have (NAPALM's IOS driver does the same for counters IOS does not keep).
"""

from __future__ import annotations

from typing import Any

from napalm.base import models
from napalm.base.helpers import ip as napalm_ip
from napalm.base.helpers import mac as napalm_mac

ADDRS = "ip -j addr show"
LINK_STATS = "ip -j -s link show"
LINK_DETAILS = "ip -j -d link show"
NEIGH4 = "ip -j -s -4 neigh show"
NEIGH6 = "ip -j -s -6 neigh show"
BRIDGE_VLANS = "bridge -j vlan show"
BRIDGE_FDB = "bridge -j -s fdb show"
DEFAULT_VRF = "default"
GLOBAL_NAMES = ("default", "global")
"""What NAPALM callers name the default VRF (``get_arp_table(vrf=...)``)."""


def interfaces_ip(addrs: list[dict[str, Any]]) -> dict[str, models.InterfacesIPDict]:
    """NAPALM ``get_interfaces_ip`` from ``ip -j addr show``: every address of every link
    (link-local and loopback ones included, as the kernel holds them)."""
    result: dict[str, models.InterfacesIPDict] = {}
    for link in addrs:
        entry: dict[str, dict[str, models.InterfacesIPDictEntry]] = {}
        for info in link.get("addr_info", []):
            family = {"inet": "ipv4", "inet6": "ipv6"}.get(str(info.get("family")))
            if family is None or "local" not in info:
                continue
            address = napalm_ip(str(info["local"]))
            entry.setdefault(family, {})[address] = {"prefix_length": int(info["prefixlen"])}
        if entry:
            result[str(link["ifname"])] = entry
    return result


def _count(block: dict[str, Any], key: str) -> int:
    value = block.get(key)
    return int(value) if isinstance(value, int) else -1


def interfaces_counters(links: list[dict[str, Any]]) -> dict[str, models.InterfaceCounterDict]:
    """NAPALM ``get_interfaces_counters`` from ``ip -j -s link show`` (the kernel's netdev
    counters, ``stats64``). The kernel counts all packets and, received, multicast only
    (``multicast``, which most drivers count broadcast in too, veth none): so the unicast
    counts are all packets minus that multicast (sent: all packets), and the broadcast counts
    and the sent multicast count are -1 (no such kernel counter)."""
    result: dict[str, models.InterfaceCounterDict] = {}
    for link in links:
        stats = link.get("stats64") or link.get("stats") or {}
        rx, tx = stats.get("rx", {}), stats.get("tx", {})
        if not rx and not tx:
            continue
        multicast = _count(rx, "multicast")
        packets = _count(rx, "packets")
        result[str(link["ifname"])] = {
            "tx_errors": _count(tx, "errors"),
            "rx_errors": _count(rx, "errors"),
            "tx_discards": _count(tx, "dropped"),
            "rx_discards": _count(rx, "dropped"),
            "tx_octets": _count(tx, "bytes"),
            "rx_octets": _count(rx, "bytes"),
            "tx_unicast_packets": _count(tx, "packets"),
            "rx_unicast_packets": packets - max(multicast, 0) if packets >= 0 else -1,
            "tx_multicast_packets": -1,
            "rx_multicast_packets": multicast,
            "tx_broadcast_packets": -1,
            "rx_broadcast_packets": -1,
        }
    return result


def vrf_of(links: list[dict[str, Any]]) -> dict[str, str]:
    """Interface name -> the VRF it belongs to (``ip -j -d link show``: a link whose master,
    or whose master's master, is a ``vrf`` device); links in no VRF map to ``default``."""
    kinds = {str(link["ifname"]): _kind(link) for link in links}
    masters = {str(link["ifname"]): str(link.get("master", "")) for link in links}
    result: dict[str, str] = {}
    for name, kind in kinds.items():
        if kind == "vrf":
            continue
        master, hops = masters.get(name, ""), 0
        while master and kinds.get(master) != "vrf" and hops < 4:
            master, hops = masters.get(master, ""), hops + 1
        result[name] = master if master and kinds.get(master) == "vrf" else DEFAULT_VRF
    return result


def _kind(link: dict[str, Any]) -> str:
    return str(link.get("linkinfo", {}).get("info_kind", ""))


def _in_vrf(interface: str, vrfs: dict[str, str], vrf: str) -> bool:
    if not vrf:
        return True
    wanted = DEFAULT_VRF if vrf in GLOBAL_NAMES else vrf
    return vrfs.get(interface, DEFAULT_VRF) == wanted


def _age(entry: dict[str, Any]) -> float:
    """Seconds since the neighbour last confirmed it is reachable (``confirmed``, printed
    with ``-s``); -1.0 when iproute2 printed none."""
    value = entry.get("confirmed")
    return float(value) if isinstance(value, int) else -1.0


def arp_table(
    neighbours: list[dict[str, Any]], links: list[dict[str, Any]], vrf: str = ""
) -> list[models.ARPTableDict]:
    """NAPALM ``get_arp_table`` from ``ip -j -s -4 neigh show`` (entries with a MAC only:
    FAILED / INCOMPLETE ones have none). ``vrf``: "" all, ``default``/``global`` the links in
    no VRF, else that VRF's links (``ip -j -d link show``). BGP unnumbered peers appear as
    169.254.0.1 on their port: zebra's own entries for IPv4 routes over an IPv6 next hop."""
    vrfs = vrf_of(links)
    return [
        {
            "interface": str(entry["dev"]),
            "mac": napalm_mac(str(entry["lladdr"])),
            "ip": napalm_ip(str(entry["dst"])),
            "age": _age(entry),
        }
        for entry in neighbours
        if entry.get("lladdr") and _in_vrf(str(entry.get("dev", "")), vrfs, vrf)
    ]


def ipv6_neighbours(neighbours: list[dict[str, Any]]) -> list[models.IPV6NeighborDict]:
    """NAPALM ``get_ipv6_neighbors_table`` from ``ip -j -s -6 neigh show``; ``state`` is the
    kernel's (REACHABLE, STALE, DELAY, PROBE, PERMANENT, NOARP)."""
    return [
        {
            "interface": str(entry["dev"]),
            "mac": napalm_mac(str(entry["lladdr"])),
            "ip": napalm_ip(str(entry["dst"])),
            "age": _age(entry),
            "state": str((entry.get("state") or [""])[0]),
        }
        for entry in neighbours
        if entry.get("lladdr")
    ]


def network_instances(
    links: list[dict[str, Any]], name: str = ""
) -> dict[str, models.NetworkInstanceDict]:
    """NAPALM ``get_network_instances`` from ``ip -j -d link show``: ``default`` (every link
    in no VRF) and one ``L3VRF`` per Linux VRF device with its links. No route
    distinguisher: a Linux VRF has none (an EVPN RD lives in BGP, which dpctl's fabrics do
    not use per VRF), so it is ""."""
    vrfs = vrf_of(links)
    names = [DEFAULT_VRF, *sorted(str(link["ifname"]) for link in links if _kind(link) == "vrf")]
    result: dict[str, models.NetworkInstanceDict] = {}
    for vrf in names:
        if name and vrf != name:
            continue
        members: dict[str, dict[str, Any]] = {
            interface: {} for interface, owner in vrfs.items() if owner == vrf
        }
        result[vrf] = {
            "name": vrf,
            "type": "DEFAULT_INSTANCE" if vrf == DEFAULT_VRF else "L3VRF",
            "state": {"route_distinguisher": ""},
            "interfaces": {"interface": members},
        }
    return result


def _vlan_ids(item: dict[str, Any]) -> range:
    start = int(item["vlan"])
    return range(start, int(item.get("vlanEnd", start)) + 1)


def vlans(
    bridge_vlans: list[dict[str, Any]], links: list[dict[str, Any]]
) -> dict[int, models.VlanDict]:
    """NAPALM ``get_vlans`` from ``bridge -j vlan show`` (ranges expanded) and ``ip -j -d link
    show``: a VLAN's interfaces are the bridge ports carrying it (the bridge device itself,
    a ``self`` entry, is not one); its name is the name of the bridge's 802.1Q device of
    that id (the SVI, e.g. ``vlan1001``) where there is one, else "" (Linux VLANs have no
    name)."""
    bridges = {str(link["ifname"]) for link in links if _kind(link) == "bridge"}
    svis = {
        int(link["linkinfo"]["info_data"]["id"]): str(link["ifname"])
        for link in links
        if _kind(link) == "vlan" and str(link.get("link", "")) in bridges
    }
    result: dict[int, models.VlanDict] = {}
    for port in bridge_vlans:
        name = str(port["ifname"])
        for item in port.get("vlans", []):
            for vid in _vlan_ids(item):
                entry = result.setdefault(vid, {"name": svis.get(vid, ""), "interfaces": []})
                if name not in bridges:
                    entry["interfaces"].append(name)
    return dict(sorted(result.items()))


def mac_address_table(fdb: list[dict[str, Any]]) -> list[models.MACAdressTable]:
    """NAPALM ``get_mac_address_table`` from ``bridge -j -s fdb show``: the entries a bridge
    holds (``master`` set), without the bridge's own addresses (state ``permanent``: the
    kernel's local entries) and the ports' own multicast filters (``self`` entries). vlan 0
    where the bridge is not VLAN-aware (no ``vlan`` field); ``static`` for entries added
    by hand (state ``static``); NAPALM's ``moves``/``last_move`` are not kept: -1 / -1.0."""
    return [
        {
            "mac": napalm_mac(str(entry["mac"])),
            "interface": str(entry["ifname"]),
            "vlan": int(entry.get("vlan", 0)),
            "static": entry.get("state") == "static",
            "active": entry.get("state") != "stale",
            "moves": -1,
            "last_move": -1.0,
        }
        for entry in fdb
        if entry.get("master") and entry.get("state") != "permanent"
    ]
