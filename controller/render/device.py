"""Per-device structured data: what one switch needs, computed once in Python.

Templates only format these objects. Each device gets only the data that touches it: its
own interfaces (from the cabling: ``interfaces.py``), its BGP (``bgp.py``), the rails and
servers behind it (``leaf_services.py``), its RoCE settings (``roce.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from controller.catalog import get_model
from controller.facts import Fabric, Maintenance, Switch
from controller.render.bgp import Bgp, build_bgp, ecmp_width
from controller.render.interfaces import Interface, build_interfaces
from controller.render.leaf_services import (
    EthernetSegment,
    RailService,
    ethernet_segments,
    rail_services,
)
from controller.render.roce import RoceSettings, roce_settings


@dataclass(frozen=True, slots=True)
class LoadBalancingSettings:
    mode: str
    spray_algorithm: str
    ecmp_width: int
    pbr: tuple[tuple[str, str], ...] = ()
    """Static PBR: (downlink, uplink) pins, two downlinks per uplink at 1:1."""


@dataclass(frozen=True)
class DeviceConfig:
    hostname: str
    role: Literal["leaf", "spine"]
    plane: int
    group: int | None
    platform: str
    model: str
    asic: str
    dual_leaf_mode: str
    loopback: str
    mgmt_ip: str
    mgmt_prefixlen: int
    mgmt_gateway: str
    mtu: int
    breakouts: dict[int, str]
    breakout_names: dict[int, str]
    interfaces: tuple[Interface, ...]
    bgp: Bgp
    rails: tuple[RailService, ...] = ()
    segments: tuple[EthernetSegment, ...] = ()
    roce: RoceSettings | None = None
    load_balancing: LoadBalancingSettings | None = None
    pair: str | None = None
    aux: Interface | None = None
    mh_startup_delay: int = 0
    maintenance: Maintenance = "none"
    cross_plane_protection: bool = False

    @property
    def host_port_state(self) -> str:
        """Admin state of host-facing ports: down while isolated or returning from a drain."""
        return "down" if self.maintenance in ("isolated", "returning") else "up"

    @property
    def uplinks(self) -> tuple[Interface, ...]:
        return tuple(i for i in self.interfaces if i.use in ("uplink", "fabric"))

    @property
    def downlinks(self) -> tuple[Interface, ...]:
        return tuple(i for i in self.interfaces if i.use == "downlink")


def _load_balancing(
    fabric: Fabric, switch: Switch, interfaces: list[Interface]
) -> LoadBalancingSettings:
    lb = fabric.intent.load_balancing
    uplinks = [i.name for i in interfaces if i.use == "uplink"]
    pins: tuple[tuple[str, str], ...] = ()
    if lb.mode == "pbr" and switch.role == "leaf" and uplinks:
        downlinks = [i.name for i in interfaces if i.use == "downlink"]
        per_uplink = max(len(downlinks) // len(uplinks), 1)
        pins = tuple(
            (d, uplinks[min(n // per_uplink, len(uplinks) - 1)]) for n, d in enumerate(downlinks)
        )
    width = ecmp_width(fabric, switch)
    return LoadBalancingSettings(
        mode=lb.mode, spray_algorithm=lb.spray_algorithm, ecmp_width=width, pbr=pins
    )


def build_device(fabric: Fabric, name: str, maintenance: Maintenance = "none") -> DeviceConfig:
    """Everything one switch needs, and nothing about the rest of the fabric."""
    switch = fabric.switch_by_name[name]
    model = get_model(switch.model)
    interfaces = build_interfaces(fabric, switch)
    mgmt_net = fabric.intent.addressing.management
    speeds = {i.speed for i in interfaces if i.use != "aux"}
    is_leaf = switch.role == "leaf"
    breakouts = model.breakouts(switch.role)
    return DeviceConfig(
        hostname=switch.name,
        role=switch.role,
        plane=switch.plane,
        group=switch.group,
        platform=switch.platform,
        model=switch.model,
        asic=model.asic,
        dual_leaf_mode=fabric.intent.dual_leaf_mode,
        loopback=switch.loopback,
        mgmt_ip=switch.mgmt_ip,
        mgmt_prefixlen=mgmt_net.prefixlen,
        mgmt_gateway=fabric.mgmt_gateway,
        mtu=fabric.intent.mtu,
        breakouts=breakouts,
        breakout_names={
            port: model.names["kernel"].format(
                port=port, lane=(port - 1) * model.lanes_per_port, sub=1
            )
            for port in breakouts
        },
        interfaces=tuple(i for i in interfaces if i.use != "aux"),
        bgp=build_bgp(fabric, switch, interfaces, maintenance),
        rails=rail_services(fabric, switch, interfaces) if is_leaf else (),
        segments=ethernet_segments(fabric, switch, interfaces) if is_leaf else (),
        roce=roce_settings(fabric.intent.roce, speeds, fabric.intent.mtu)
        if fabric.intent.roce.enabled
        else None,
        load_balancing=_load_balancing(fabric, switch, interfaces),
        pair=switch.pair,
        aux=next((i for i in interfaces if i.use == "aux"), None),
        mh_startup_delay=fabric.intent.evpn_mh_startup_delay,
        maintenance=maintenance,
        cross_plane_protection=fabric.intent.cross_plane_protection,
    )
