"""A switch's interfaces from the cabling: name, CLI name, use, peer, rail, VLAN, bond."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from controller.catalog import LogicalPort, Role, get_model
from controller.facts import Fabric, Switch


@dataclass(frozen=True, slots=True)
class Interface:
    name: str
    cli: str
    use: Literal["downlink", "uplink", "fabric", "aux"]
    speed: str
    mtu: int
    description: str
    peer_device: str
    peer_port: str
    front_port: int | None
    rail: int | None = None
    vlan: int | None = None
    bond: str | None = None
    """EVPN-MH: the single-member bond (ES) this host port belongs to."""


@cache
def _port_table(model_name: str, role: Role) -> dict[str, tuple[LogicalPort, int]]:
    """Interface name -> (catalog port, 1-based number within its use), per model and role."""
    model = get_model(model_name)
    table: dict[str, tuple[LogicalPort, int]] = {}
    for use in {b.use for b in model.blocks(role)}:
        for number, lp in enumerate(model.logical_ports(role, use), start=1):
            table[lp.name] = (lp, number)
    return table


def build_interfaces(fabric: Fabric, switch: Switch) -> list[Interface]:
    ports = _port_table(switch.model, switch.role)
    rail_vlan = {r.rail: r.vlan for r in fabric.rail_subnets}
    evpn = fabric.intent.dual_leaf_mode == "evpn-mh"
    mtu = fabric.intent.mtu
    result = []
    for link in fabric.links_by_device.get(switch.name, []):
        if link.a_device == switch.name:
            port, peer, peer_port = link.a_port, link.z_device, link.z_port
        else:
            port, peer, peer_port = link.z_port, link.a_device, link.a_port
        if link.kind == "aux":
            aux = get_model(switch.model).aux
            result.append(
                Interface(
                    name=aux.name,
                    cli=aux.cli,
                    use="aux",
                    speed=aux.speed,
                    mtu=mtu,
                    description=f"aux to {peer}:{peer_port}",
                    peer_device=peer,
                    peer_port=peer_port,
                    front_port=None,
                )
            )
            continue
        lp, number = ports[port]
        use: Literal["downlink", "uplink", "fabric"] = lp.use  # type: ignore[assignment]
        result.append(
            Interface(
                name=port,
                cli=lp.cli,
                use=use,
                speed=lp.speed,
                mtu=mtu,
                description=f"{peer}:{peer_port}",
                peer_device=peer,
                peer_port=peer_port,
                front_port=lp.port,
                rail=link.rail,
                vlan=rail_vlan[link.rail] if link.rail else None,
                bond=f"bond{number}" if evpn and use == "downlink" else None,
            )
        )
    return sorted(result, key=_port_order)


def _port_order(interface: Interface) -> tuple[int, int, str]:
    return (0 if interface.use != "aux" else 1, _port_number(interface.name), interface.name)


@cache
def _port_number(name: str) -> int:
    """The digits of an interface name as a number (Ethernet12 -> 12); a model has a few
    hundred names, each sorted in every device, so each is read once."""
    digits = "".join(c for c in name if c.isdigit())
    return int(digits or 0)
