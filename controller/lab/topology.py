"""Abstract lab topology: the runtime's only input (no dependency on the generator)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal

from controller.lab.errors import LabTopologyError

_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_NODENAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
RESERVED_PORTS = frozenset({"lo", "mgmt0"})


@dataclass(frozen=True)
class LabNode:
    """A switch or server; ``ports`` are Linux interface names inside its namespace."""

    name: str
    kind: Literal["switch", "server"]
    role: str  # leaf | spine | server
    plane: int | None
    ports: tuple[str, ...]
    mgmt_ip: str | None = None
    """Its management address; None: the next one in node order. A fabric with servers not
    racked yet (``installed_servers_per_group``) has gaps, which the lab keeps."""


@dataclass(frozen=True)
class LabCable:
    """A point-to-point cable, realised as one veth pair."""

    a_node: str
    a_port: str
    z_node: str
    z_port: str


@dataclass(frozen=True)
class LabTopology:
    """Nodes, cables and the out-of-band management subnet (used only inside the lab)."""

    name: str
    nodes: tuple[LabNode, ...]
    cables: tuple[LabCable, ...]
    mgmt_subnet: str

    def node(self, name: str) -> LabNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise LabTopologyError(f"unknown node {name!r}")


def mgmt_addresses(topo: LabTopology) -> tuple[str, dict[str, str], int]:
    """Return (bridge address, {node: address}, prefix length) from ``mgmt_subnet``.

    The first host address goes to the management bridge, nodes follow in order.
    """
    try:
        net = ipaddress.IPv4Network(topo.mgmt_subnet, strict=True)
    except ValueError as exc:
        raise LabTopologyError(f"bad mgmt_subnet {topo.mgmt_subnet!r}: {exc}") from exc
    hosts = net.hosts()
    try:
        bridge = str(next(hosts))
        addrs = {n.name: n.mgmt_ip or str(next(hosts)) for n in topo.nodes}
    except StopIteration:
        raise LabTopologyError(
            f"mgmt_subnet {topo.mgmt_subnet} too small for {len(topo.nodes)} nodes"
        ) from None
    for name, addr in addrs.items():
        try:
            inside = ipaddress.IPv4Address(addr) in net and addr != bridge
        except ValueError:
            inside = False
        if not inside or addr in (str(net.network_address), str(net.broadcast_address)):
            raise LabTopologyError(f"node {name}: management address {addr} not a host of {net}")
    if len(set(addrs.values())) != len(addrs):
        raise LabTopologyError("two nodes have the same management address")
    return bridge, addrs, net.prefixlen


def validate(topo: LabTopology, prefix: str) -> None:
    """Check names, ports and cables; raise :class:`LabTopologyError` on the first problem."""
    _validate_prefix(prefix, len(topo.nodes))
    seen: set[str] = set()
    for n in topo.nodes:
        _validate_node(n, prefix)
        if n.name in seen:
            raise LabTopologyError(f"duplicate node {n.name!r}")
        seen.add(n.name)
    _validate_cables(topo)
    mgmt_addresses(topo)


def _validate_prefix(prefix: str, count: int) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9-]{0,7}", prefix):
        raise LabTopologyError(f"bad prefix {prefix!r}: 1-8 chars [a-z0-9-], letter first")
    if len(mgmt_host_ifname(prefix, count)) > 15:
        raise LabTopologyError(f"prefix {prefix!r} too long for {count} nodes")


def _validate_node(n: LabNode, prefix: str) -> None:
    if not _NODENAME.match(n.name) or len(prefix + n.name) > 30:
        raise LabTopologyError(f"bad node name {n.name!r} (lowercase, digits, '-'; short)")
    if n.kind not in ("switch", "server"):
        raise LabTopologyError(f"node {n.name}: bad kind {n.kind!r}")
    if len(set(n.ports)) != len(n.ports):
        raise LabTopologyError(f"node {n.name}: duplicate ports")
    for p in n.ports:
        if not _IFNAME.match(p) or p in RESERVED_PORTS:
            raise LabTopologyError(f"node {n.name}: bad port name {p!r}")


def _validate_cables(topo: LabTopology) -> None:
    ports = {n.name: set(n.ports) for n in topo.nodes}
    used: set[tuple[str, str]] = set()
    for c in topo.cables:
        for node, port in ((c.a_node, c.a_port), (c.z_node, c.z_port)):
            if port not in ports.get(node, set()):
                raise LabTopologyError(f"cable end {node}:{port} is not a port of a node")
            if (node, port) in used:
                raise LabTopologyError(f"port {node}:{port} is cabled twice")
            used.add((node, port))


def namespace(prefix: str, node: str) -> str:
    """Name of a node's network namespace (also its FRR pathspace)."""
    return f"{prefix}{node}"


def mgmt_host_ifname(prefix: str, index: int) -> str:
    """Name of the root-namespace end of node ``index``'s management veth."""
    return f"{prefix}m{index}"


def mgmt_bridge(prefix: str) -> str:
    """Name of the management bridge in the lab's root namespace."""
    return f"{prefix}mgmt"
