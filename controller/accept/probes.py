"""Which probes the acceptance test sends: one per cable, not one per pair of servers.

- one link-local probe per fabric cable, from its leaf (:mod:`controller.accept.collect`);
- one flow per server port, sent on that one bond member (the probe agent's ``--pin``: raw
  frames on the member, to the rail's gateway MAC), at the servers' full MTU: server i's port
  in plane p sends to server i+1 of the same rail (a ring over every server of the rail, across
  groups) pinned to plane p, so each server port sends once and receives once, and the ring's
  hops between groups cross the plane's spines;
- one cross-rail flow per leaf: from a server of the leaf's first rail, pinned to the leaf's
  plane, to a server behind the next leaf of the plane (another rail: through the spines),
  spread over sub-flows so the leaf's ECMP uses its uplinks.

The count is (fabric cables) + (server ports) + (leaves): linear in the cables.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.facts import Fabric, Link, Server
from controller.servers import SERVER_MTU
from controller.traffic import PORT_BASE, Flow

PINNED_SUBFLOWS = 16


@dataclass(frozen=True, slots=True)
class PlannedProbe:
    """A server flow with the elements on its path (for localisation)."""

    kind: str  # "server-port" | "cross-rail"
    flow: Flow
    plane: int
    path: tuple[str, ...]
    """Every element the flow may cross (a failure implicates each)."""
    sure: tuple[str, ...] = ()
    """The elements a flow that arrived certainly crossed: its sender's cable and leaf (the
    frames are pinned to that port). The far side is not certain: a dual-ARP leaf whose port
    to the receiver is down hands the traffic to its pair over the AUX link, so a flow can
    arrive around a dead receiving port."""

    @property
    def name(self) -> str:
        return f"{self.kind}: {self.flow.name}"


def cable_name(link: Link) -> str:
    return f"{link.a_device}:{link.a_port} - {link.z_device}:{link.z_port}"


def switch_element(name: str) -> str:
    return f"switch {name}"


def uplinks_element(leaf: str) -> str:
    return f"uplinks of {leaf}"


def host_cable(fabric: Fabric, server: str, port: str) -> Link:
    for link in fabric.links_by_device[server]:
        if link.a_port == port:
            return link
    raise KeyError(f"{server}:{port}")


def _path(
    fabric: Fabric, src: Server, nic: int, dst: Server, dst_nic: int, plane: int
) -> tuple[str, ...]:
    a, b = src.nics[nic], dst.nics[dst_nic]
    a_leaf, b_leaf = a.leaves[plane - 1], b.leaves[plane - 1]
    path = [
        cable_name(host_cable(fabric, src.name, a.ports[plane - 1])),
        switch_element(a_leaf),
        switch_element(b_leaf),
        cable_name(host_cable(fabric, dst.name, b.ports[plane - 1])),
    ]
    if a_leaf != b_leaf:
        path += [uplinks_element(a_leaf), uplinks_element(b_leaf)]
    return tuple(dict.fromkeys(path))


def _flow(
    fabric: Fabric, src: Server, nic: int, dst: Server, dst_nic: int, plane: int, port: int
) -> Flow:
    a, b = src.nics[nic], dst.nics[dst_nic]
    gateway_mac = fabric.rail_subnet_at[(src.group, a.rail)].gateway_mac
    return Flow(
        a.rail,
        src.name,
        dst.name,
        a.ip,
        b.ip,
        port,
        a.ports,
        pin=a.ports[plane - 1],
        gateway_mac=gateway_mac,
        size=SERVER_MTU,
    )


def server_probes(fabric: Fabric, plane: int | None = None) -> list[PlannedProbe]:
    """Per rail and plane, a ring over the rail's servers, each hop pinned to the plane."""
    probes: list[PlannedProbe] = []
    servers = fabric.servers
    if len(servers) < 2:
        return probes
    planes = (plane,) if plane else (1, 2)
    for nic in range(len(servers[0].nics)):
        for p in planes:
            for i, src in enumerate(servers):
                dst = servers[(i + 1) % len(servers)]
                flow = _flow(fabric, src, nic, dst, nic, p, PORT_BASE + len(probes))
                path = _path(fabric, src, nic, dst, nic, p)
                probes.append(PlannedProbe("server-port", flow, p, path, path[:2]))
    return probes


def cross_rail_probes(
    fabric: Fabric, plane: int | None = None, base: int = 0
) -> list[PlannedProbe]:
    """Per leaf, a flow from a server behind it to a server behind the next leaf of its plane
    (another rail or group: through the spines)."""
    probes: list[PlannedProbe] = []
    for p in (plane,) if plane else (1, 2):
        ends = _leaf_ends(fabric, p)
        for i, behind in enumerate(ends):
            src, nic = behind[0]
            others = [e for e in ends[(i + 1) % len(ends)] if e[0].name != src.name]
            if len(ends) < 2 or not others:
                continue
            dst, dst_nic = others[0]  # another server: a host drops its own source address
            port = PORT_BASE + base + len(probes)
            flow = _flow(fabric, src, nic, dst, dst_nic, p, port)
            path = _path(fabric, src, nic, dst, dst_nic, p)
            probes.append(PlannedProbe("cross-rail", flow, p, path, path[:2]))
    return probes


def _leaf_ends(fabric: Fabric, plane: int) -> list[list[tuple[Server, int]]]:
    """For each leaf of the plane (in order), the servers and NICs behind it (two at most)."""
    behind: dict[str, list[tuple[Server, int]]] = {}
    for server in fabric.servers:
        for index, nic in enumerate(server.nics):
            found = behind.setdefault(nic.leaves[plane - 1], [])
            if len(found) < 2:
                found.append((server, index))
    leaves = fabric.switches_in(plane=plane, role="leaf")
    return [behind[s.name] for s in leaves if s.name in behind]


def fabric_cables(fabric: Fabric, plane: int | None = None) -> list[Link]:
    return [
        lk for lk in fabric.links if lk.kind == "fabric" and (plane is None or lk.plane == plane)
    ]


def probe_counts(fabric: Fabric, plane: int | None = None) -> dict[str, int]:
    """How many probes a whole run sends, by kind (without sending any)."""
    servers = server_probes(fabric, plane)
    cross = cross_rail_probes(fabric, plane, len(servers))
    counts = {
        "fabric-links": len(fabric_cables(fabric, plane)),
        "server-ports": len(servers),
        "cross-rail": len(cross),
    }
    counts["total"] = sum(counts.values())
    return counts
