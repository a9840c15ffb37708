"""The generator: intent -> fabric facts, by the rail rules. Pure functions, no I/O.

Order of derivation: sizing -> switches (planes, groups, rails, names, ASNs, addresses) ->
servers and their NICs -> cables (host, fabric, aux). Every switch port comes from the
catalog, so a port can be used once only by construction; the property tests check it anyway.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from ipaddress import IPv4Address
from socket import inet_ntoa

from controller import addressing, platforms
from controller.catalog import LogicalPort, get_model
from controller.errors import IntentError, SizingError
from controller.facts import Fabric, Link, Nic, RailSubnet, Server, Switch
from controller.intent import FabricIntent, check_device_name
from controller.sizing import Sizing, servers_from_gpus, size_fabric

PLANE_IDS = (1, 2)


def server_count(intent: FabricIntent) -> int:
    if intent.gpus is not None:
        servers = servers_from_gpus(intent.gpus, intent.gpus_per_server)
        if intent.servers is not None and intent.servers != servers:
            raise SizingError(
                "servers",
                f"{intent.servers} servers disagree with gpus={intent.gpus} at "
                f"{intent.gpus_per_server} GPUs per server ({servers} servers)",
            )
        return servers
    assert intent.servers is not None
    return intent.servers


def runs_on(platform: str, model: str, catalog_platforms: tuple[str, ...]) -> bool:
    """The model's catalog entry lists the platform, or the platform lists the model."""
    return platform in catalog_platforms or model in platforms.get(platform).models


def size_intent(intent: FabricIntent) -> Sizing:
    where = "gpus" if intent.gpus is not None else "servers"
    for role in ("leaf", "spine"):
        model = get_model(getattr(intent.switches, role), f"switches.{role}")
        if not runs_on(intent.platform, model.name, model.platforms):
            raise IntentError(
                f"switches.{role}",
                f"model {model.name} does not run platform {intent.platform!r} "
                f"(it runs: {', '.join(model.platforms)})",
            )
    sizing = size_fabric(
        intent.switches.leaf,
        intent.switches.spine,
        server_count(intent),
        intent.gpus_per_server,
        where,
    )
    installed = intent.installed_servers_per_group
    if installed is not None and installed > sizing.servers_per_group:
        raise IntentError(
            "installed_servers_per_group",
            f"{installed} servers per group, but a group of this fabric holds "
            f"{sizing.servers_per_group}",
        )
    return sizing


def _rails_of_leaf(sizing: Sizing, leaf_index: int) -> tuple[int, ...]:
    first = (leaf_index - 1) * sizing.rails_per_leaf + 1
    return tuple(range(first, first + sizing.rails_per_leaf))


def _check_unique_names(names: list[tuple[str, str]]) -> None:
    """names: (generated name, naming field that produced it); each a safe device name."""
    counts = Counter(name for name, _ in names)
    for name, kind in names:
        try:
            check_device_name(name, "the pattern")
        except ValueError as exc:
            raise IntentError(f"naming.{kind}", str(exc)) from None
        if counts[name] > 1:
            raise IntentError(
                f"naming.{kind}",
                f"the pattern gives the name {name!r} to {counts[name]} devices; include the "
                f"fields that tell them apart",
            )


def _check_asns(intent: FabricIntent, leaves: int) -> None:
    spine_asns = {intent.asn.spine + p - 1 for p in PLANE_IDS}
    leaf_range = range(intent.asn.leaf_start, intent.asn.leaf_start + leaves)
    if leaf_range.stop - 1 > 4_294_967_294:
        raise IntentError(
            "asn.leaf_start", f"{leaves} leaves from {intent.asn.leaf_start} run past 4294967294"
        )
    clash = sorted(a for a in spine_asns if a in leaf_range)
    if clash:
        raise IntentError(
            "asn.leaf_start",
            f"leaf ASNs {leaf_range.start}-{leaf_range.stop - 1} include spine ASN {clash[0]}",
        )


def build_switches(intent: FabricIntent, sizing: Sizing) -> list[Switch]:
    """Plane 1 spines, plane 1 leaves, then plane 2: names, ASNs and addresses in that order."""
    loopbacks = addressing.loopbacks(intent.addressing.loopbacks, sizing.leaves + sizing.spines)
    _, mgmt = addressing.management(
        intent.addressing.management, sizing.leaves + sizing.spines + sizing.servers
    )
    _check_asns(intent, sizing.leaves)
    switches: list[Switch] = []
    leaf_number = 0
    for plane in PLANE_IDS:
        for spine in range(1, sizing.spines_per_plane + 1):
            n = len(switches)
            switches.append(
                Switch(
                    name=intent.naming.spine.format(plane=plane, spine=spine),
                    role="spine",
                    plane=plane,
                    group=None,
                    index=spine,
                    rails=(),
                    asn=intent.asn.spine + plane - 1,
                    loopback=loopbacks[n],
                    mgmt_ip=mgmt[n],
                    model=intent.switches.spine,
                    platform=intent.platform,
                )
            )
        for group in range(1, sizing.groups + 1):
            for leaf in range(1, sizing.leaves_per_group + 1):
                n = len(switches)
                switches.append(
                    Switch(
                        name=intent.naming.leaf.format(plane=plane, group=group, leaf=leaf),
                        role="leaf",
                        plane=plane,
                        group=group,
                        index=leaf,
                        rails=_rails_of_leaf(sizing, leaf),
                        asn=intent.asn.leaf_start + leaf_number,
                        loopback=loopbacks[n],
                        mgmt_ip=mgmt[n],
                        model=intent.switches.leaf,
                        platform=intent.platform,
                    )
                )
                leaf_number += 1
    return _with_pairs(switches)


def _with_pairs(switches: list[Switch]) -> list[Switch]:
    by_position = {(s.plane, s.group, s.index): s.name for s in switches if s.role == "leaf"}
    paired = []
    for s in switches:
        if s.role == "leaf":
            partner = by_position[(3 - s.plane, s.group, s.index)]
            s = dataclasses.replace(s, pair=partner)
        paired.append(s)
    return paired


def _es_sys_mac(server_number: int, rail: int) -> str:
    """A locally administered MAC per server NIC, shared by both leaves of its ES."""
    value = (0x02D1 << 32) | (server_number << 8) | rail
    return _colon_hex(value.to_bytes(6, "big"))


def _colon_hex(raw: bytes) -> str:
    return raw.hex(":")


def _esi(sys_mac: str, es_id: int) -> str:
    """Type-3 (MAC-based) ESI, as FRR derives it from es-sys-mac and the local es-id."""
    return "03:" + sys_mac + ":" + _colon_hex(es_id.to_bytes(3, "big"))


def build_rail_subnets(
    intent: FabricIntent, sizing: Sizing, leaves: dict[tuple[int, int, int], str]
) -> list[RailSubnet]:
    prefixlen = addressing.rail_prefixlen(
        sizing.servers_per_group, intent.addressing.rail_prefixlen
    )
    count = sizing.groups * sizing.gpus_per_server
    nets = addressing.rail_subnets(intent.addressing.rail_subnets, prefixlen, count)
    result = []
    for group in range(1, sizing.groups + 1):
        for rail in range(1, sizing.gpus_per_server + 1):
            net = nets[(group - 1) * sizing.gpus_per_server + rail - 1]
            leaf_index = (rail - 1) // sizing.rails_per_leaf + 1
            result.append(
                RailSubnet(
                    group=group,
                    rail=rail,
                    prefix=str(net),
                    gateway=str(net.network_address + 1),
                    gateway_mac=intent.addressing.anycast_gateway_mac,
                    vni=intent.vni_base + (group - 1) * sizing.gpus_per_server + rail - 1,
                    vlan=intent.vlan_base + rail,
                    leaves=(leaves[(1, group, leaf_index)], leaves[(2, group, leaf_index)]),
                )
            )
    return result


def _downlink_index(sizing: Sizing, position: int, rail: int) -> int:
    """Rails of a leaf take contiguous port blocks: rail block first, then server position."""
    block = (rail - 1) % sizing.rails_per_leaf
    return block * (sizing.downlinks_per_leaf // sizing.rails_per_leaf) + position


@dataclasses.dataclass(frozen=True, slots=True)
class _Subnet:
    """A rail subnet with its gateway as an integer and its prefix length, read once."""

    subnet: RailSubnet
    gateway: int
    prefixlen: int


def _nic(sizing: Sizing, rail: _Subnet, number: int, position: int, port: LogicalPort) -> Nic:
    """The NIC of server ``number`` (``position`` in its group) on a rail: the address after
    the gateway's by its position, both ports to ``port`` of the rail's leaf pair."""
    subnet = rail.subnet
    es_id = (number - 1) * sizing.gpus_per_server + subnet.rail
    sys_mac = _es_sys_mac(number, subnet.rail)
    return Nic(
        rail=subnet.rail,
        ip=inet_ntoa((rail.gateway + 1 + position).to_bytes(4, "big")),
        prefixlen=rail.prefixlen,
        gateway=subnet.gateway,
        ports=(f"nic{subnet.rail}p1", f"nic{subnet.rail}p2"),
        leaves=subnet.leaves,
        leaf_ports=(port.name, port.name),
        es_id=es_id,
        es_sys_mac=sys_mac,
        esi=_esi(sys_mac, es_id),
    )


def _host_links(server: str, group: int, nic: Nic, port: LogicalPort) -> list[Link]:
    """The NIC's two cables, one to its rail's leaf in each plane."""
    return [
        Link(
            a_device=server,
            a_port=nic.ports[plane - 1],
            z_device=nic.leaves[plane - 1],
            z_port=port.name,
            speed=port.speed,
            kind="host",
            plane=plane,
            group=group,
            rail=nic.rail,
        )
        for plane in PLANE_IDS
    ]


def build_servers_and_host_links(
    intent: FabricIntent,
    sizing: Sizing,
    subnets: list[RailSubnet],
    mgmt: list[str],
    downlinks: list[LogicalPort],
) -> tuple[list[Server], list[Link]]:
    subnet_of = {
        (r.group, r.rail): _Subnet(r, int(IPv4Address(r.gateway)), int(r.prefix.split("/")[1]))
        for r in subnets
    }
    servers: list[Server] = []
    links: list[Link] = []
    installed = intent.installed_servers_per_group or sizing.servers_per_group
    for number in range(1, sizing.servers + 1):
        group = (number - 1) // sizing.servers_per_group + 1
        position = (number - 1) % sizing.servers_per_group
        if position >= installed:
            continue  # not racked yet: keeps its number, address and ports for later
        name = intent.naming.server.format(server=number, group=group)
        nics = []
        for rail in range(1, sizing.gpus_per_server + 1):
            port = downlinks[_downlink_index(sizing, position, rail)]
            nic = _nic(sizing, subnet_of[(group, rail)], number, position, port)
            nics.append(nic)
            links += _host_links(name, group, nic, port)
        servers.append(
            Server(
                name=name,
                group=group,
                index=position + 1,
                mgmt_ip=mgmt[sizing.leaves + sizing.spines + number - 1],
                nics=tuple(nics),
            )
        )
    return servers, links


def build_fabric_links(
    sizing: Sizing,
    switches: list[Switch],
    uplinks: list[LogicalPort],
    spine_ports: list[LogicalPort],
) -> list[Link]:
    links = []
    per_pair = sizing.links_per_leaf_spine_pair
    for plane in PLANE_IDS:
        leaves = [s for s in switches if s.plane == plane and s.role == "leaf"]
        spines = [s for s in switches if s.plane == plane and s.role == "spine"]
        for j, leaf in enumerate(leaves):
            for s, spine in enumerate(spines):
                for k in range(per_pair):
                    up = uplinks[s * per_pair + k]
                    down = spine_ports[j * per_pair + k]
                    links.append(
                        Link(
                            a_device=leaf.name,
                            a_port=up.name,
                            z_device=spine.name,
                            z_port=down.name,
                            speed=up.speed,
                            kind="fabric",
                            plane=plane,
                            group=leaf.group,
                            rail=None,
                        )
                    )
    return links


def build_aux_links(intent: FabricIntent, switches: list[Switch]) -> list[Link]:
    """One AUX cable per leaf pair where EVPN-MH or cross-plane protection uses it."""
    if intent.dual_leaf_mode != "evpn-mh" and not intent.cross_plane_protection:
        return []
    aux = get_model(intent.switches.leaf).aux
    return [
        Link(
            a_device=s.name,
            a_port=aux.name,
            z_device=s.pair,
            z_port=aux.name,
            speed=aux.speed,
            kind="aux",
            plane=None,
            group=s.group,
            rail=None,
        )
        for s in switches
        if s.role == "leaf" and s.plane == 1 and s.pair
    ]


def build_fabric(intent: FabricIntent) -> Fabric:
    """Derive every switch, server, subnet and cable of the fabric from its intent."""
    addressing.check_pools_disjoint(intent.addressing)
    sizing = size_intent(intent)
    switches = build_switches(intent, sizing)
    leaf_at = {(s.plane, s.group or 0, s.index): s.name for s in switches if s.role == "leaf"}
    subnets = build_rail_subnets(intent, sizing, leaf_at)
    mgmt_gateway, mgmt = addressing.management(
        intent.addressing.management, sizing.leaves + sizing.spines + sizing.servers
    )
    leaf_model = get_model(intent.switches.leaf)
    spine_model = get_model(intent.switches.spine)
    servers, host_links = build_servers_and_host_links(
        intent, sizing, subnets, mgmt, leaf_model.logical_ports("leaf", "downlink")
    )
    _check_unique_names(
        [(s.name, s.role) for s in switches] + [(s.name, "server") for s in servers]
    )
    links = (
        host_links
        + build_fabric_links(
            sizing,
            switches,
            leaf_model.logical_ports("leaf", "uplink"),
            spine_model.logical_ports("spine", "fabric"),
        )
        + build_aux_links(intent, switches)
    )
    return Fabric(
        intent=intent,
        sizing=sizing,
        switches=tuple(switches),
        servers=tuple(servers),
        rail_subnets=tuple(subnets),
        links=tuple(links),
        mgmt_gateway=mgmt_gateway,
    )
