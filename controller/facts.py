"""Fabric facts: every switch, server, rail subnet and cable, derived once per fabric.

Plain frozen dataclasses with slots: a 16,384-GPU fabric has ~50k cables, and these must
stay cheap to build, compare and serialise. Later stages (rendering, lab, deploy, verify)
read these facts and nothing else.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from controller.intent import FabricIntent
from controller.sizing import Sizing

LinkKind = Literal["host", "fabric", "aux"]
SwitchRole = Literal["leaf", "spine"]
Maintenance = Literal["none", "graceful-shutdown", "handed-off", "isolated", "returning"]
"""A switch's drain state: in service, preferring other paths (graceful-shutdown), its own
servers reached through its pair (handed-off: graceful-shutdown, and the leaf routes what it
receives for the servers behind it over the AUX link instead of delivering it, so that the
servers can leave it), out of service (isolated: host /32s withdrawn, host ports down), or
coming back (returning: host ports held down until its BGP is up). The operator state
records it; rendering formats it."""

CABLING_COLUMNS = (
    "a_device",
    "a_port",
    "z_device",
    "z_port",
    "speed",
    "kind",
    "plane",
    "group",
    "rail",
)


@dataclass(frozen=True, slots=True)
class Link:
    """One cable. Host cables run server -> leaf, fabric cables leaf -> spine, aux leaf -> leaf."""

    a_device: str
    a_port: str
    z_device: str
    z_port: str
    speed: str
    kind: LinkKind
    plane: int | None
    group: int | None
    rail: int | None

    def row(self) -> tuple[str, ...]:
        return tuple(
            "" if v is None else str(v)
            for v in (
                self.a_device,
                self.a_port,
                self.z_device,
                self.z_port,
                self.speed,
                self.kind,
                self.plane,
                self.group,
                self.rail,
            )
        )


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    role: SwitchRole
    plane: int
    group: int | None
    index: int
    rails: tuple[int, ...]
    asn: int
    loopback: str
    mgmt_ip: str
    model: str
    platform: str
    pair: str | None = None
    """The leaf in the other plane that serves the same group and rails (leaves only)."""

    @property
    def router_id(self) -> str:
        return self.loopback

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "plane": self.plane,
            "group": self.group,
            "index": self.index,
            "rails": list(self.rails),
            "asn": self.asn,
            "loopback": self.loopback,
            "router_id": self.router_id,
            "mgmt_ip": self.mgmt_ip,
            "model": self.model,
            "platform": self.platform,
            "pair": self.pair,
        }


@dataclass(frozen=True, slots=True)
class Nic:
    """One GPU's NIC: port 1 cabled to plane 1, port 2 to plane 2, one address for both."""

    rail: int
    ip: str
    prefixlen: int
    gateway: str
    ports: tuple[str, str]
    leaves: tuple[str, str]
    leaf_ports: tuple[str, str]
    es_id: int
    es_sys_mac: str
    esi: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rail": self.rail,
            "ip": self.ip,
            "prefixlen": self.prefixlen,
            "gateway": self.gateway,
            "ports": list(self.ports),
            "leaves": list(self.leaves),
            "leaf_ports": list(self.leaf_ports),
            "es_id": self.es_id,
            "es_sys_mac": self.es_sys_mac,
            "esi": self.esi,
        }


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    group: int
    index: int
    mgmt_ip: str
    nics: tuple[Nic, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "group": self.group,
            "index": self.index,
            "mgmt_ip": self.mgmt_ip,
            "nics": [n.to_dict() for n in self.nics],
        }


@dataclass(frozen=True, slots=True)
class RailSubnet:
    """The subnet of one rail in one group, served by a leaf pair (one leaf per plane)."""

    group: int
    rail: int
    prefix: str
    gateway: str
    gateway_mac: str
    vni: int
    vlan: int
    leaves: tuple[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "rail": self.rail,
            "prefix": self.prefix,
            "gateway": self.gateway,
            "gateway_mac": self.gateway_mac,
            "vni": self.vni,
            "vlan": self.vlan,
            "leaves": list(self.leaves),
        }


@dataclass(frozen=True)
class Fabric:
    intent: FabricIntent
    sizing: Sizing
    switches: tuple[Switch, ...]
    servers: tuple[Server, ...]
    rail_subnets: tuple[RailSubnet, ...]
    links: tuple[Link, ...]
    mgmt_gateway: str

    @cached_property
    def switch_by_name(self) -> dict[str, Switch]:
        return {s.name: s for s in self.switches}

    @cached_property
    def server_by_name(self) -> dict[str, Server]:
        return {s.name: s for s in self.servers}

    @cached_property
    def rail_subnet_at(self) -> dict[tuple[int, int], RailSubnet]:
        return {(r.group, r.rail): r for r in self.rail_subnets}

    @cached_property
    def links_by_device(self) -> dict[str, list[Link]]:
        index: dict[str, list[Link]] = defaultdict(list)
        for link in self.links:
            index[link.a_device].append(link)
            index[link.z_device].append(link)
        return dict(index)

    def switches_in(self, plane: int | None = None, role: SwitchRole | None = None) -> list[Switch]:
        return [
            s
            for s in self.switches
            if (plane is None or s.plane == plane) and (role is None or s.role == role)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "fabric": self.intent.model_dump(mode="json"),
            "sizing": self.sizing.to_dict(),
            "mgmt_gateway": self.mgmt_gateway,
            "switches": [s.to_dict() for s in self.switches],
            "servers": [s.to_dict() for s in self.servers],
            "rail_subnets": [r.to_dict() for r in self.rail_subnets],
            "link_columns": list(CABLING_COLUMNS),
            "links": [
                [
                    lk.a_device,
                    lk.a_port,
                    lk.z_device,
                    lk.z_port,
                    lk.speed,
                    lk.kind,
                    lk.plane,
                    lk.group,
                    lk.rail,
                ]
                for lk in self.links
            ],
        }
