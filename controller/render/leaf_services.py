"""What a leaf serves on its rails: one VLAN, SVI and VNI per rail, and (EVPN-MH) one
Ethernet segment per host port."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from controller.facts import Fabric, Switch
from controller.render.interfaces import Interface


@dataclass(frozen=True, slots=True)
class EthernetSegment:
    bond: str
    bond_index: int
    member: str
    member_cli: str
    server: str
    host: str
    """The server NIC's address on this rail (the /32 the leaf advertises for it)."""
    rail: int
    vlan: int
    es_id: int
    es_sys_mac: str
    esi: str
    df_preference: int


@dataclass(frozen=True, slots=True)
class RailService:
    """One rail served by this leaf: its VLAN, SVI with the anycast gateway, VNI for EVPN."""

    rail: int
    group: int
    vlan: int
    vni: int
    prefix: str
    gateway: str
    gateway_prefix: str
    gateway_mac: str
    ports: tuple[str, ...]
    ports_cli: tuple[str, ...]
    servers: tuple[tuple[str, str], ...]
    """(server name, NIC address) behind this leaf on this rail."""


def rail_services(
    fabric: Fabric, switch: Switch, interfaces: list[Interface]
) -> tuple[RailService, ...]:
    services = []
    for rail in switch.rails:
        subnet = fabric.rail_subnet_at[(switch.group or 0, rail)]
        ports = [i for i in interfaces if i.use == "downlink" and i.rail == rail]
        servers = []
        for port in ports:
            server = fabric.server_by_name[port.peer_device]
            servers.append((server.name, server.nics[rail - 1].ip))
        prefixlen = IPv4Network(subnet.prefix).prefixlen
        services.append(
            RailService(
                rail=rail,
                group=subnet.group,
                vlan=subnet.vlan,
                vni=subnet.vni,
                prefix=subnet.prefix,
                gateway=subnet.gateway,
                gateway_prefix=f"{subnet.gateway}/{prefixlen}",
                gateway_mac=subnet.gateway_mac,
                ports=tuple(p.bond or p.name for p in ports),
                ports_cli=tuple(p.cli for p in ports),
                servers=tuple(servers),
            )
        )
    return tuple(services)


DF_PREFERENCE = {1: 50000, 2: 30000}
"""Plane 1's leaf is the preferred designated forwarder of every ES it shares with its pair."""


def ethernet_segments(
    fabric: Fabric, switch: Switch, interfaces: list[Interface]
) -> tuple[EthernetSegment, ...]:
    segments = []
    for port in interfaces:
        if port.bond is None or port.rail is None or port.vlan is None:
            continue
        nic = fabric.server_by_name[port.peer_device].nics[port.rail - 1]
        segments.append(
            EthernetSegment(
                bond=port.bond,
                bond_index=int(port.bond.removeprefix("bond")),
                member=port.name,
                member_cli=port.cli,
                server=port.peer_device,
                host=nic.ip,
                rail=port.rail,
                vlan=port.vlan,
                es_id=nic.es_id,
                es_sys_mac=nic.es_sys_mac,
                esi=nic.esi,
                df_preference=DF_PREFERENCE[switch.plane],
            )
        )
    return tuple(segments)
