"""Flow-level model: flows -> ports -> paths -> link loads -> bottleneck, completion, losses.

Every NIC offers its line rate. A link's load is the offered rate of what crosses it over its
capacity (1.0 = full). A flow's bottleneck is the highest load on its path; it gets its rate
over that (a fair share where the link is oversubscribed), and the collective waits for its
slowest flow: completion_time_ratio = the highest bottleneck over the delivered flows
(1.0 = every NIC at line rate, the ideal). max_link_load = the highest link load anywhere
(1.0 = no link above the NIC line rate the workload offers, the ideal even load).

Failures (links, or every link of a device): a NIC's QPs on a dead port move to its other port
(bond failover); a destination is reachable in a plane while its port in that plane is up. The
remote senders that keep hashing flows into that plane (they cannot know) are black-holed:
lost, unless the fabric has cross-plane protection, where the sender's leaf carries them over
its AUX link to its pair in the other plane (at the AUX link's capacity). A single-plane NIC
has one port: a dead port or leaf cuts it off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controller.render.features import UnsupportedFeature, check_load_balancing
from controller.simulate import paths
from controller.simulate.topology import (
    AUX,
    FABRIC_DOWN,
    FABRIC_UP,
    BoolArray,
    FloatArray,
    IntArray,
    SimulationError,
    Topology,
)
from controller.simulate.traffic import Flows


@dataclass(frozen=True)
class Scenario:
    workload: str = "ring"
    lb: str = "ecmp"
    planes: int = 2
    qps: int = 4
    fail: tuple[str, ...] = ()
    seed: int = 0
    hash_seeds: str = "same"
    selection: str = "threshold"


@dataclass(frozen=True)
class Result:
    fabric: str
    scenario: Scenario
    flows: int
    links: int
    max_link_load: float
    fabric_max_load: float
    completion_time_ratio: float
    lost_flows: int
    aux_flows: int
    offered_gbps: float
    delivered_gbps: float
    lost_examples: tuple[str, ...]
    load: FloatArray = field(repr=False)
    """Per directed link: offered load over capacity."""

    @property
    def throughput_lost(self) -> float:
        return 1.0 - self.delivered_gbps / self.offered_gbps if self.offered_gbps else 0.0

    def to_dict(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "fabric": self.fabric,
            "workload": s.workload,
            "lb": s.lb,
            "planes": s.planes,
            "qps": s.qps,
            "fail": list(s.fail),
            "seed": s.seed,
            "hash_seeds": s.hash_seeds,
            "hash_select": s.selection,
            "flows": self.flows,
            "links": self.links,
            "max_link_load": round(self.max_link_load, 4),
            "fabric_max_load": round(self.fabric_max_load, 4),
            "completion_time_ratio": round(self.completion_time_ratio, 4),
            "lost_flows": self.lost_flows,
            "aux_flows": self.aux_flows,
            "throughput_lost": round(self.throughput_lost, 4),
            "offered_gbps": round(self.offered_gbps, 1),
            "delivered_gbps": round(self.delivered_gbps, 1),
            "lost_examples": list(self.lost_examples),
        }


def check_mode(topo: Topology, lb: str) -> None:
    """Refuse a mode the platform or model cannot do, with render's own reason."""
    if lb not in paths.LB_MODES:
        raise SimulationError("--lb", f"unknown mode {lb!r} (one of {', '.join(paths.LB_MODES)})")
    try:
        check_load_balancing(topo.platform, set(topo.models), lb)
    except UnsupportedFeature as exc:
        raise SimulationError("--lb", exc.reason) from None


def failed_links(topo: Topology, fail: tuple[str, ...]) -> BoolArray:
    """alive mask over directed links after the --fail items (DEVICE or DEVICE:PORT)."""
    alive = np.ones(topo.links, dtype=np.bool_)
    devices = set(topo.leaves) | set(topo.spines) | set(topo.servers)
    for item in fail:
        device, _, port = item.partition(":")
        if device not in devices:
            raise SimulationError(
                "--fail", f"unknown device {device!r}: not a switch or server of {topo.fabric_name}"
            )
        if not port:
            alive[topo.device_links(device)] = False
            continue
        ports = topo.device_ports(device)
        if port not in ports:
            known = sorted(ports)
            raise SimulationError(
                "--fail",
                f"{device} has no cabled port {port!r} in this {topo.planes}-plane fabric "
                f"(e.g. {', '.join(known[:4])})",
            )
        for link in ports[port]:
            alive[link] = False
            alive[link ^ 1] = False  # the same cable's other direction
    return alive


@dataclass(frozen=True)
class _Ports:
    """Per flow: the NIC port it leaves on and where its packets enter and leave the fabric.

    A flow whose destination port is down in its plane crosses its sender leaf's AUX link
    to the pair leaf (``via_aux``, cross-plane protection) and reaches the destination's
    other port (``dst_port``); its fabric leg then starts at the pair leaf (``leg_src``)."""

    port: IntArray
    sender_ok: BoolArray
    dst_ok: BoolArray
    src_leaf: IntArray
    via_aux: BoolArray
    dst_port: IntArray
    leg_src: IntArray


def _check_scenario(topo: Topology, scenario: Scenario) -> None:
    check_mode(topo, scenario.lb)
    if scenario.hash_seeds not in paths.HASH_SEEDS:
        raise SimulationError("--hash-seeds", f"must be one of {', '.join(paths.HASH_SEEDS)}")
    if scenario.selection not in paths.SELECTIONS:
        raise SimulationError("--hash-select", f"must be one of {', '.join(paths.SELECTIONS)}")


def _ports(topo: Topology, flows: Flows, alive: BoolArray) -> _Ports:
    """Bond failover (a QP on a dead port moves to the NIC's other port), then the detour."""
    n = len(flows)
    s, r = flows.src_server, flows.src_rail
    d = flows.dst_server
    ports = topo.ports_per_nic
    pref = flows.qp_index % ports
    up_alive = alive[topo.host_up[s, r]]  # (n, ports)
    port = pref.copy()
    if ports == 2:
        other = 1 - pref
        use_other = ~up_alive[np.arange(n), pref] & up_alive[np.arange(n), other]
        port = np.where(use_other, other, pref)
    sender_ok = up_alive[np.arange(n), port]
    dst_ok = alive[topo.host_down[d, r, port]]
    src_leaf = topo.port_leaf[s, r, port]
    via_aux = np.zeros(n, dtype=np.bool_)
    dst_port = port.copy()
    leg_src = src_leaf.copy()
    if ports == 2 and topo.protection:
        other = 1 - port
        aux = topo.aux_link[src_leaf]
        via_aux = (
            sender_ok
            & ~dst_ok
            & (aux >= 0)
            & alive[np.maximum(aux, 0)]
            & alive[topo.host_down[d, r, other]]
        )
        dst_port = np.where(via_aux, other, port)
        leg_src = np.where(via_aux, topo.leaf_pair[src_leaf], src_leaf)
    return _Ports(port, sender_ok, dst_ok, src_leaf, via_aux, dst_port, leg_src)


@dataclass(frozen=True)
class _Placed:
    """The fabric legs of the delivered flows and the links :func:`paths.place` gave them."""

    legs: paths.Legs
    seg: paths.Segments
    units: int
    unit_of_leg: IntArray
    partitioned: BoolArray
    segments: tuple[IntArray, IntArray, FloatArray]
    """The placed segments as arrays: (unit, directed link, rate)."""


def _place(
    topo: Topology,
    alive: BoolArray,
    flows: Flows,
    p: _Ports,
    delivered: BoolArray,
    scenario: Scenario,
) -> _Placed:
    dst_leaf = topo.port_leaf[flows.dst_server, flows.src_rail, p.dst_port]
    crosses = delivered & (p.leg_src != dst_leaf)
    idx = np.flatnonzero(crosses)
    legs = paths.Legs(idx, p.leg_src[idx], dst_leaf[idx], ~p.via_aux[idx])
    src_ip = topo.nic_ip[flows.src_server, flows.src_rail]
    dst_ip = topo.nic_ip[flows.dst_server, flows.dst_rail]
    seg = paths.Segments()
    units, unit_of_leg, partitioned = paths.place(
        topo,
        alive,
        flows,
        legs,
        src_ip,
        dst_ip,
        p.port,
        scenario.lb,
        scenario.hash_seeds,
        scenario.selection,
        scenario.seed,
        seg,
    )
    return _Placed(legs, seg, units, unit_of_leg, partitioned, seg.arrays())


def _link_loads(
    topo: Topology, flows: Flows, p: _Ports, ok: IntArray, aux_idx: IntArray, placed: _Placed
) -> FloatArray:
    """Offered load over capacity of every directed link."""
    s, r, d, rate = flows.src_server, flows.src_rail, flows.dst_server, flows.rate
    host_up = topo.host_up[s, r, p.port]
    sent = np.flatnonzero(p.sender_ok)
    _, f_link, f_rate = placed.segments
    load: FloatArray = np.bincount(host_up[sent], weights=rate[sent], minlength=topo.links).astype(
        np.float64
    )
    load += np.bincount(
        topo.host_down[d[ok], r[ok], p.dst_port[ok]], weights=rate[ok], minlength=topo.links
    )
    load += np.bincount(
        topo.aux_link[p.src_leaf[aux_idx]], weights=rate[aux_idx], minlength=topo.links
    )
    load += np.bincount(f_link, weights=f_rate, minlength=topo.links)
    if placed.seg.load is not None:
        load += placed.seg.load
    rho: FloatArray = load / topo.cap
    return rho


def _bottlenecks(
    topo: Topology, flows: Flows, p: _Ports, rho: FloatArray, aux_idx: IntArray, placed: _Placed
) -> FloatArray:
    """Per flow: the highest load on its path (host links, AUX link, fabric links)."""
    s, r, d = flows.src_server, flows.src_rail, flows.dst_server
    host_up = topo.host_up[s, r, p.port]
    bottleneck = np.maximum(rho[host_up], rho[topo.host_down[d, r, p.dst_port]])
    bottleneck[aux_idx] = np.maximum(bottleneck[aux_idx], rho[topo.aux_link[p.src_leaf[aux_idx]]])
    f_unit, f_link, _ = placed.segments
    unit_bn = np.zeros(max(placed.units, 1))
    if f_unit.size:
        np.maximum.at(unit_bn, f_unit, rho[f_link])
    if placed.seg.matrix is not None:
        units, links = placed.seg.matrix
        unit_bn[units] = np.maximum(unit_bn[units], rho[links].max(axis=1, initial=0.0))
    keep = ~placed.partitioned
    legs = placed.legs
    bottleneck[legs.flow[keep]] = np.maximum(
        bottleneck[legs.flow[keep]], unit_bn[placed.unit_of_leg[keep]]
    )
    return bottleneck


def simulate(topo: Topology, flows: Flows, scenario: Scenario) -> Result:
    _check_scenario(topo, scenario)
    alive = failed_links(topo, scenario.fail)
    p = _ports(topo, flows, alive)
    delivered = p.sender_ok & (p.dst_ok | p.via_aux)
    placed = _place(topo, alive, flows, p, delivered, scenario)
    delivered[placed.legs.flow[placed.partitioned]] = False
    ok = np.flatnonzero(delivered)
    aux_idx = np.flatnonzero(delivered & p.via_aux)
    rho = _link_loads(topo, flows, p, ok, aux_idx, placed)
    bottleneck = _bottlenecks(topo, flows, p, rho, aux_idx, placed)
    rate = flows.rate
    completion = float(bottleneck[ok].max()) if ok.size else 0.0
    delivered_gbps = float((rate[ok] / np.maximum(bottleneck[ok], 1.0)).sum())
    fabric = (topo.kind == FABRIC_UP) | (topo.kind == FABRIC_DOWN)
    lost = np.flatnonzero(~delivered)
    return Result(
        fabric=topo.fabric_name,
        scenario=scenario,
        flows=len(flows),
        links=topo.links,
        max_link_load=float(rho.max(initial=0.0)),
        fabric_max_load=float(rho[fabric].max(initial=0.0)),
        completion_time_ratio=completion,
        lost_flows=int(lost.size),
        aux_flows=int(aux_idx.size),
        offered_gbps=float(rate.sum()),
        delivered_gbps=delivered_gbps,
        lost_examples=tuple(_describe(topo, flows, lost[:5], p.port)),
        load=rho,
    )


def _describe(topo: Topology, flows: Flows, idx: IntArray, port: IntArray) -> list[str]:
    return [
        f"{topo.servers[flows.src_server[i]]} nic{flows.src_rail[i] + 1}p{port[i] + 1} -> "
        f"{topo.servers[flows.dst_server[i]]} nic{flows.dst_rail[i] + 1} sport {flows.sport[i]}"
        for i in idx
    ]


__all__ = ["AUX", "Result", "Scenario", "check_mode", "failed_links", "simulate"]
