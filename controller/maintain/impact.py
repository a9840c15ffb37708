"""A wave's predicted impact: the simulator's completion-time ratio with the wave's switches
out of service, as capacity loss = 1 - 1/ratio.

What "out of service" means follows how dpctl drains (docs/maintain.md, "Predicted impact"):

- a leaf is drained ``--hosts-first``: the servers behind it take their port to it out of
  their bonds, so their own flows leave on the other plane's port; the flows other servers
  send them are modelled on the other plane too (``steered``). The plain failure model of
  ``dpctl simulate --fail LEAF`` instead keeps the remote senders hashing into the drained
  plane, detoured over the 10G AUX link (cross-plane protection), which on the 400G fabrics
  gives a ratio of ~20 for any single leaf: true for an unplanned failure, not for a drain
  that moves the servers first. Both figures are reported (``aux_ratio``); the budget is
  checked against the steered one.
- a spine is drained by BGP graceful-shutdown: its links carry nothing, as when it fails.

One simulator run per distinct wave *shape* (``shape``): waves of the same shape have the
same predicted impact by the fabric's symmetry (tests/unit/test_maintain_waves.py simulates
both to show it), so the 16,384-GPU example's 96 waves cost a handful of runs. The topology
and the workload's flows are built once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from controller.facts import Fabric
from controller.maintain.waves import Wave
from controller.simulate.model import Scenario, simulate
from controller.simulate.topology import Topology, build_topology
from controller.simulate.traffic import Flows, build_flows

Shape = tuple[object, ...]


@dataclass(frozen=True)
class Impact:
    """A wave's predicted effect on the workload."""

    ratio: float
    """Completion-time ratio with the wave out (1.0 = no slower than the fabric whole)."""
    aux_ratio: float
    """The same if the remote senders kept using the drained plane (over the AUX links)."""
    lost_flows: int

    @property
    def capacity_loss(self) -> float:
        return 1.0 - 1.0 / self.ratio if self.ratio > 1.0 else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "completion_time_ratio": round(self.ratio, 3),
            "capacity_loss": round(self.capacity_loss, 4),
            "aux_ratio": round(self.aux_ratio, 3),
            "lost_flows": self.lost_flows,
        }


def shape(fabric: Fabric, wave: Wave) -> Shape:
    """What decides a wave's impact up to the fabric's symmetry: its plane, its role, and how
    its switches spread over the groups (leaves of one group share their servers' rails)."""
    groups: dict[object, int] = {}
    for name in wave.switches:
        group = fabric.switch_by_name[name].group
        groups[group] = groups.get(group, 0) + 1
    return (wave.plane, wave.role, tuple(sorted(groups.values())))


class ImpactModel:
    """Predicts waves' impact on one fabric and workload, reusing what does not change."""

    def __init__(self, fabric: Fabric, workload: str = "ring", qps: int = 4) -> None:
        self.fabric = fabric
        self.workload = workload
        self.qps = qps
        self.runs = 0
        self._cache: dict[Shape, Impact] = {}

    @cached_property
    def topology(self) -> Topology:
        return build_topology(self.fabric, 2)

    @cached_property
    def flows(self) -> Flows:
        return build_flows(self.topology, self.workload, self.qps)

    @cached_property
    def scenario(self) -> Scenario:
        return Scenario(self.workload, self.fabric.intent.load_balancing.mode, 2, self.qps)

    def predict(self, wave: Wave) -> Impact:
        key = shape(self.fabric, wave)
        if key not in self._cache:
            self._cache[key] = self._simulate(wave)
        return self._cache[key]

    def loss(self, wave: Wave) -> float:
        return self.predict(wave).capacity_loss

    def _simulate(self, wave: Wave) -> Impact:
        self.runs += 1
        scenario = replace(self.scenario, fail=wave.switches)
        aux = simulate(self.topology, self.flows, scenario)
        if wave.role != "leaf":
            return Impact(aux.completion_time_ratio, aux.completion_time_ratio, aux.lost_flows)
        steered = simulate(self.topology, steer(self.topology, self.flows, wave), scenario)
        return Impact(steered.completion_time_ratio, aux.completion_time_ratio, steered.lost_flows)


def steer(topo: Topology, flows: Flows, wave: Wave) -> Flows:
    """The flows with every flow from or to a NIC behind the wave's leaves moved to the
    NIC port of the other plane (what --hosts-first does to the servers' bonds)."""
    drained = np.isin(np.arange(len(topo.leaves)), [topo.leaves.index(n) for n in wave.switches])
    port_of_plane = wave.plane - 1
    src_leaf = topo.port_leaf[flows.src_server, flows.src_rail, port_of_plane]
    dst_leaf = topo.port_leaf[flows.dst_server, flows.dst_rail, port_of_plane]
    touched = drained[src_leaf] | drained[dst_leaf]
    other = 1 - port_of_plane
    moved = flows.qp_index - flows.qp_index % topo.ports_per_nic + other
    return replace(flows, qp_index=np.where(touched, moved, flows.qp_index))
