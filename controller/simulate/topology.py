"""Fabric facts -> a directed link graph with capacities, as numpy arrays.

Every cable of the generated fabric becomes two directed links (one per direction) with the
cable's speed as capacity. The structure the path choice needs is kept as index arrays:
which leaf and link each NIC port uses, each leaf's uplinks in port order (the order of its
ECMP group and of the renderer's PBR pins), each spine's parallel links to each leaf.

The single-plane baseline is built from the same facts: the same leaves and spines in one
plane, each NIC with one port at the speed of its two ports together, each leaf serving half
the servers of its pair, and each leaf's uplinks spread over all the spines (half as many
parallel links per leaf-spine pair). Same switches, same capacity, one plane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from controller.catalog import get_model
from controller.errors import DpctlError
from controller.facts import Fabric, Link

HOST_UP, HOST_DOWN, FABRIC_UP, FABRIC_DOWN, AUX = 0, 1, 2, 3, 4
KIND_NAMES = ("host-up", "host-down", "fabric-up", "fabric-down", "aux")

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


class SimulationError(DpctlError):
    """The simulation cannot run as asked; `where` names the option or device."""


def gbps(speed: str) -> float:
    """'400G' -> 400.0"""
    if not speed.endswith("G"):
        raise SimulationError("speed", f"cannot read link speed {speed!r}")
    return float(speed[:-1])


@dataclass(frozen=True)
class Topology:
    """A fabric as directed links. Leaf and spine ids are global (both planes)."""

    fabric_name: str
    planes: int
    platform: str
    models: frozenset[str]
    protection: bool
    # per directed link
    cap: FloatArray
    kind: NDArray[np.int8]
    link_plane: NDArray[np.int8]
    link_a: list[str]
    link_a_port: list[str]
    link_z: list[str]
    # switches
    leaves: list[str]
    leaf_plane: IntArray
    spines: list[str]
    spine_plane: IntArray
    leaf_pair: IntArray
    """leaf -> its pair leaf in the other plane (-1 in a single plane)."""
    aux_link: IntArray
    """leaf -> directed AUX link to its pair (-1 when there is none)."""
    # hosts: [server, rail, port]
    servers: list[str]
    nic_ip: NDArray[np.uint32]
    """[server, rail] -> the NIC's IPv4 address as an integer."""
    port_leaf: IntArray
    host_up: IntArray
    host_down: IntArray
    port_downlink: IntArray
    """[server, rail, port] -> index of the leaf port among the leaf's downlinks (for PBR)."""
    # fabric
    uplink: IntArray
    """[leaf, u] -> directed leaf->spine link, uplinks in port order."""
    uplink_spine: IntArray
    """[leaf, u] -> spine id."""
    downlink: IntArray
    """[spine, leaf, k] -> directed spine->leaf link (-1 where the pair has fewer links)."""
    downlinks_per_leaf: int
    """Host ports per leaf (the renderer's PBR pins two of them per uplink at 1:1)."""

    @property
    def link_spine(self) -> IntArray:
        """directed link -> the spine at its far end for leaf uplinks, else -1."""
        out = np.full(self.links, -1, dtype=np.int64)
        ok = self.uplink >= 0
        out[self.uplink[ok]] = self.uplink_spine[ok]
        return out

    @property
    def ports_per_nic(self) -> int:
        return int(self.port_leaf.shape[2])

    @property
    def links(self) -> int:
        return int(self.cap.shape[0])

    def device_ports(self, device: str) -> dict[str, list[int]]:
        """port name -> directed link ids of the cable on that port of the device."""
        result: dict[str, list[int]] = {}
        for i, (a, ap) in enumerate(zip(self.link_a, self.link_a_port, strict=True)):
            if a == device:
                result.setdefault(ap, []).append(i)
        return result

    def device_links(self, device: str) -> list[int]:
        return [
            i
            for i, (a, z) in enumerate(zip(self.link_a, self.link_z, strict=True))
            if device in (a, z)
        ]


class _Links:
    """Accumulates directed links; each cable adds two."""

    def __init__(self) -> None:
        self.cap: list[float] = []
        self.kind: list[int] = []
        self.plane: list[int] = []
        self.a: list[str] = []
        self.a_port: list[str] = []
        self.z: list[str] = []

    def cable(
        self,
        a: str,
        a_port: str,
        z: str,
        z_port: str,
        cap: float,
        kinds: tuple[int, int],
        plane: int,
    ) -> tuple[int, int]:
        first = len(self.cap)
        for (src, port, dst), kind in zip(((a, a_port, z), (z, z_port, a)), kinds, strict=True):
            self.cap.append(cap)
            self.kind.append(kind)
            self.plane.append(plane)
            self.a.append(src)
            self.a_port.append(port)
            self.z.append(dst)
        return first, first + 1

    def of(self, link: Link, kinds: tuple[int, int], plane: int) -> tuple[int, int]:
        """The two directed links of a cable of the fabric, at its own speed."""
        return self.cable(
            link.a_device, link.a_port, link.z_device, link.z_port, gbps(link.speed), kinds, plane
        )


class _HostPorts:
    """[server, rail, port] -> the port's leaf, its two directed links and its index among
    the leaf's downlinks (-1 where a NIC has no such port)."""

    def __init__(self, servers: int, rails: int, ports: int) -> None:
        shape = (servers, rails, ports)
        self.leaf = np.full(shape, -1, dtype=np.int64)
        self.up = np.full(shape, -1, dtype=np.int64)
        self.down = np.full(shape, -1, dtype=np.int64)
        self.downlink = np.full(shape, -1, dtype=np.int64)

    def add(self, at: tuple[int, int, int], leaf: int, up: int, down: int, downlink: int) -> None:
        self.leaf[at], self.up[at], self.down[at], self.downlink[at] = leaf, up, down, downlink


class _Uplinks:
    """Each leaf's uplinks in port order with their spines, each spine's links to each leaf."""

    def __init__(self, leaves: int, uplinks_per_leaf: int, spines: int, per_pair: int) -> None:
        self.uplink = np.full((leaves, uplinks_per_leaf), -1, dtype=np.int64)
        self.spine = np.full_like(self.uplink, -1)
        self.downlink = np.full((spines, leaves, per_pair), -1, dtype=np.int64)
        self._filled = np.zeros((spines, leaves), dtype=np.int64)

    def add(self, leaf: int, u: int, spine: int, up: int, down: int) -> None:
        """Uplink ``u`` of ``leaf`` (directed link ``up``) to ``spine`` (back: ``down``)."""
        self.uplink[leaf, u], self.spine[leaf, u] = up, spine
        self.downlink[spine, leaf, self._filled[spine, leaf]] = down
        self._filled[spine, leaf] += 1


def _ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def build_topology(fabric: Fabric, planes: int = 2) -> Topology:
    """The directed link graph of the fabric (planes=2) or of its single-plane baseline."""
    if planes == 2:
        return _dual(fabric)
    if planes == 1:
        return _single(fabric)
    raise SimulationError("--planes", f"must be 1 or 2, got {planes}")


def _common(fabric: Fabric) -> tuple[list[str], list[str], dict[str, int], dict[str, int]]:
    leaves = [s.name for s in fabric.switches if s.role == "leaf"]
    spines = [s.name for s in fabric.switches if s.role == "spine"]
    return (
        leaves,
        spines,
        {n: i for i, n in enumerate(leaves)},
        {n: i for i, n in enumerate(spines)},
    )


def _nic_ips(fabric: Fabric) -> NDArray[np.uint32]:
    return np.array([[_ip(n.ip) for n in s.nics] for s in fabric.servers], dtype=np.uint32)


def _topology(
    fabric: Fabric,
    planes: int,
    acc: _Links,
    hosts: _HostPorts,
    fab: _Uplinks,
    switch_planes: tuple[IntArray, IntArray],
    aux: tuple[IntArray, IntArray],
    downlinks_per_leaf: int,
) -> Topology:
    """The Topology of the links in ``acc``; ``switch_planes``: (leaf, spine) -> its plane,
    ``aux``: (leaf -> pair leaf, leaf -> its AUX link)."""
    leaves, spines, _, _ = _common(fabric)
    return Topology(
        fabric_name=fabric.intent.name,
        planes=planes,
        platform=fabric.intent.platform,
        models=frozenset(s.model for s in fabric.switches),
        protection=planes == 2 and fabric.intent.cross_plane_protection,
        cap=np.array(acc.cap, dtype=np.float64),
        kind=np.array(acc.kind, dtype=np.int8),
        link_plane=np.array(acc.plane, dtype=np.int8),
        link_a=acc.a,
        link_a_port=acc.a_port,
        link_z=acc.z,
        leaves=leaves,
        leaf_plane=switch_planes[0],
        spines=spines,
        spine_plane=switch_planes[1],
        leaf_pair=aux[0],
        aux_link=aux[1],
        servers=[s.name for s in fabric.servers],
        nic_ip=_nic_ips(fabric),
        port_leaf=hosts.leaf,
        host_up=hosts.up,
        host_down=hosts.down,
        port_downlink=hosts.downlink,
        uplink=fab.uplink,
        uplink_spine=fab.spine,
        downlink=fab.downlink,
        downlinks_per_leaf=downlinks_per_leaf,
    )


def _dual(fabric: Fabric) -> Topology:
    sz = fabric.sizing
    leaves, spines, leaf_id, spine_id = _common(fabric)
    leaf_model = get_model(sz.leaf_model)
    down_index = {p.name: i for i, p in enumerate(leaf_model.logical_ports("leaf", "downlink"))}
    up_index = {p.name: i for i, p in enumerate(leaf_model.logical_ports("leaf", "uplink"))}
    server_id = {s.name: i for i, s in enumerate(fabric.servers)}
    hosts = _HostPorts(len(fabric.servers), sz.gpus_per_server, 2)
    fab = _Uplinks(len(leaves), sz.uplinks_per_leaf, len(spines), sz.links_per_leaf_spine_pair)
    aux_link = np.full(len(leaves), -1, dtype=np.int64)
    acc = _Links()
    for lk in fabric.links:
        if lk.kind == "host":
            up, down = acc.of(lk, (HOST_UP, HOST_DOWN), lk.plane or 0)
            at = (server_id[lk.a_device], (lk.rail or 1) - 1, (lk.plane or 1) - 1)
            hosts.add(at, leaf_id[lk.z_device], up, down, down_index[lk.z_port])
        elif lk.kind == "fabric":
            up, down = acc.of(lk, (FABRIC_UP, FABRIC_DOWN), lk.plane or 0)
            fab.add(leaf_id[lk.a_device], up_index[lk.a_port], spine_id[lk.z_device], up, down)
        else:
            there, back = acc.of(lk, (AUX, AUX), 0)
            aux_link[leaf_id[lk.a_device]], aux_link[leaf_id[lk.z_device]] = there, back
    sw = fabric.switch_by_name
    pair = np.array([leaf_id[sw[n].pair or n] for n in leaves], dtype=np.int64)
    planes = (
        np.array([sw[n].plane for n in leaves], dtype=np.int64),
        np.array([sw[n].plane for n in spines], dtype=np.int64),
    )
    return _topology(fabric, 2, acc, hosts, fab, planes, (pair, aux_link), sz.downlinks_per_leaf)


def _single(fabric: Fabric) -> Topology:
    """The same leaves and spines as one plane; one NIC port at twice the speed."""
    sz = fabric.sizing
    if sz.links_per_leaf_spine_pair % 2:
        raise SimulationError(
            "--planes",
            f"a single plane of these {sz.leaves} leaves and {sz.spines} spines cannot be built "
            f"in two tiers: each leaf-spine pair has {sz.links_per_leaf_spine_pair} link(s) per "
            "plane, so one plane of twice the spines would need half a link per pair",
        )
    leaves, spines, _, _ = _common(fabric)
    # a leaf of the single plane has half as many downlinks at twice the speed
    per_leaf_ports = sz.downlinks_per_leaf // 2
    acc = _Links()
    hosts = _single_hosts(fabric, acc, per_leaf_ports)
    fab = _single_uplinks(fabric, acc)
    none = np.full(len(leaves), -1, dtype=np.int64)
    planes = (np.ones(len(leaves), dtype=np.int64), np.ones(len(spines), dtype=np.int64))
    return _topology(fabric, 1, acc, hosts, fab, planes, (none, none.copy()), per_leaf_ports)


def _single_hosts(fabric: Fabric, acc: _Links, per_leaf_ports: int) -> _HostPorts:
    """Each NIC's one port, on the leaf of its pair that serves its half of the group."""
    sz = fabric.sizing
    leaves, _, leaf_id, _ = _common(fabric)
    downs = get_model(sz.leaf_model).logical_ports("leaf", "downlink")
    host_speed = 2 * gbps(sz.downlink_speed)
    hosts = _HostPorts(len(fabric.servers), sz.gpus_per_server, 1)
    used = np.zeros(len(leaves), dtype=np.int64)
    for s_i, server in enumerate(fabric.servers):
        half = 0 if (server.index - 1) < sz.servers_per_group // 2 else 1
        for nic in server.nics:
            leaf = nic.leaves[half]
            li = leaf_id[leaf]
            n = int(used[li])
            used[li] += 1
            port = downs[min(2 * n, len(downs) - 1)].name  # the 2x400G sub-port names
            up, down = acc.cable(
                server.name, nic.ports[0], leaf, port, host_speed, (HOST_UP, HOST_DOWN), 1
            )
            hosts.add((s_i, nic.rail - 1, 0), li, up, down, n)
    if int(used.max(initial=0)) > per_leaf_ports:
        raise SimulationError(
            "--planes", "the single-plane baseline needs more host ports than a leaf has"
        )
    return hosts


def _single_uplinks(fabric: Fabric, acc: _Links) -> _Uplinks:
    """Each leaf's uplinks spread over every spine: half the parallel links per pair."""
    sz = fabric.sizing
    leaves, spines, _, _ = _common(fabric)
    ups = get_model(sz.leaf_model).logical_ports("leaf", "uplink")
    spine_ports = get_model(sz.spine_model).logical_ports("spine", "fabric")
    up_speed = gbps(sz.uplink_speed)
    per_pair = sz.uplinks_per_leaf // len(spines)
    fab = _Uplinks(len(leaves), sz.uplinks_per_leaf, len(spines), per_pair)
    for li, leaf in enumerate(leaves):
        for si, spine in enumerate(spines):
            for k in range(per_pair):
                u = si * per_pair + k
                up, down = acc.cable(
                    leaf,
                    ups[u].name,
                    spine,
                    spine_ports[li * per_pair + k].name,
                    up_speed,
                    (FABRIC_UP, FABRIC_DOWN),
                    1,
                )
                fab.add(li, u, si, up, down)
    return fab
