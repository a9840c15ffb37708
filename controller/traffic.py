"""Data-plane check: sequence-numbered probe flows between servers on every rail.

For each rail, servers send to each other in a ring (server i -> server i+1), each flow
split into sub-flows from consecutive source ports so the servers' bonds hash some of them
into each plane. The sender counts which bond member (hence plane) each sub-flow left
through; the receiver counts, per sub-flow, what arrived: loss, duplicates, reordering and
the longest silence. Rows are per rail and plane. In steady state any loss or duplicate
fails the check, naming the rail and plane.

Where the probes run is the caller's ``TrafficRunner`` (`controller.access`): on a real
fabric, on the servers through Ansible (`controller.traffic_ansible`, `playbooks/traffic.yml`);
in the embedded lab, from the server namespaces (`controller.lab.access`); the same probe
agent (`controller/agents/probe_agent.py`) either way. The library returns data; the CLI
prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from controller.errors import DpctlError
from controller.facts import Fabric

if TYPE_CHECKING:
    from controller.access import FabricAccess
    from controller.opstate import StateFolder

PORT_BASE = 47000
DEFAULT_SECONDS = 3.0
DEFAULT_RATE = 200.0
DEFAULT_SUBFLOWS = 16


class TrafficError(DpctlError):
    """The probes could not run (bad option, unreachable server, agent failure)."""


@dataclass(frozen=True, slots=True)
class Flow:
    """One probe flow on ``rail``: ``src`` (its NIC ``src_ip``) -> ``dst`` (``dst_ip``)."""

    rail: int
    src: str
    dst: str
    src_ip: str
    dst_ip: str
    port: int
    ports: tuple[str, str]
    """The sender NIC's bond members: plane 1's port, plane 2's port."""
    pin: str | None = None
    """Send on this one bond member only (raw frames to ``gateway_mac``: dpctl accept)."""
    gateway_mac: str = ""
    size: int = 0
    """IP packet size of a pinned flow (0: the probe agent's small packets)."""

    @property
    def name(self) -> str:
        via = f" via {self.pin}" if self.pin else ""
        return f"{self.src} -> {self.dst} rail {self.rail}{via}"


@dataclass(slots=True)
class RailPlane:
    """What the sub-flows that left into ``plane`` on ``rail`` saw."""

    rail: int
    plane: int
    subflows: int = 0
    sent: int = 0
    received: int = 0
    lost: int = 0
    duplicates: int = 0
    reordered: int = 0
    max_gap_ms: float = 0.0
    flows: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.subflows > 0 and self.lost == 0 and self.duplicates == 0

    @property
    def reason(self) -> str:
        if self.subflows == 0:
            return f"no sub-flow hashed into plane {self.plane}: not measured"
        if self.plane == 0:
            return f"{self.subflows} sub-flows never left the sender (no route or bond member)"
        faults = []
        if self.lost:
            faults.append(f"{self.lost} of {self.sent} lost")
        if self.duplicates:
            faults.append(f"{self.duplicates} duplicates")
        return ", ".join(faults)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class TrafficReport:
    fabric: str
    runner: str
    seconds: float
    rate_pps: float
    subflows: int
    rows: list[RailPlane]
    flows: list[dict[str, Any]]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    @property
    def failures(self) -> list[str]:
        """Per failing rail and plane; then, where a receiver's own socket dropped packets
        (counted in the loss above), that flow: the server could not keep up with the probe,
        which is not the fabric's loss."""
        rows = [f"rail {r.rail} plane {r.plane}: {r.reason}" for r in self.rows if not r.ok]
        if not rows:
            return rows
        dropped = [
            f"{f['src']} -> {f['dst']} rail {f['rail']}: {n} of the lost packets were "
            "dropped by the receiving socket itself (buffer full: the server could not keep "
            "up with the probe, not the fabric's loss)"
            for f in self.flows
            if (n := int(f.get("receiver_dropped") or 0))
        ]
        went_down = [
            f"{f['src']} -> {f['dst']} rail {f['rail']}: {', '.join(down)} went down during "
            "the probe (its sub-flows' planes are counted from before that)"
            for f in self.flows
            if (down := f.get("sniff_down"))
        ]
        return rows + dropped + went_down

    def to_dict(self) -> dict[str, Any]:
        return {
            "fabric": self.fabric,
            "ok": self.ok,
            "runner": self.runner,
            "seconds": self.seconds,
            "rate_pps": self.rate_pps,
            "subflows": self.subflows,
            "rows": [r.to_dict() for r in self.rows],
            "failures": self.failures,
            "flows": self.flows,
        }


def plan_flows(fabric: Fabric) -> list[Flow]:
    """Per rail, a ring over the servers: each sends to the next (both ways with two)."""
    servers = fabric.servers
    if len(servers) < 2:
        raise TrafficError("servers", "the traffic check needs at least two servers")
    flows: list[Flow] = []
    for rail_index in range(len(servers[0].nics)):
        for i, src in enumerate(servers):
            dst = servers[(i + 1) % len(servers)]
            nic, peer = src.nics[rail_index], dst.nics[rail_index]
            flows.append(
                Flow(
                    nic.rail, src.name, dst.name, nic.ip, peer.ip, PORT_BASE + len(flows), nic.ports
                )
            )
    return flows


def _plane_of(flow: Flow, egress: dict[str, int]) -> int | None:
    """The plane a sub-flow left into: the bond member most of its packets left through."""
    if not egress:
        return None
    port = max(egress, key=lambda p: egress[p])
    return flow.ports.index(port) + 1 if port in flow.ports else None


def aggregate(fabric: Fabric, flows: list[Flow], results: list[dict[str, Any]]) -> list[RailPlane]:
    """Per (rail, plane) sums of the sub-flows that left into that plane (pure)."""
    rails = sorted({n.rail for n in fabric.servers[0].nics})
    rows = {(r, p): RailPlane(r, p) for r in rails for p in (1, 2)}
    for flow, result in zip(flows, results, strict=True):
        egress: dict[str, dict[str, int]] = result.get("egress", {})
        for index, sub in enumerate(result.get("per_subflow", [])):
            # plane 0: nothing seen leaving (no route, no bond member up): a row of its own
            plane = _plane_of(flow, egress.get(str(index), {})) or 0
            row = rows.setdefault((flow.rail, plane), RailPlane(flow.rail, plane))
            row.subflows += 1
            row.sent += int(sub["sent"])
            row.received += int(sub["received"])
            row.lost += int(sub["lost"])
            row.duplicates += int(sub["duplicates"])
            row.reordered += int(sub["reordered"])
            row.max_gap_ms = max(row.max_gap_ms, float(sub["max_gap_ms"]))
            if flow.name not in row.flows:
                row.flows.append(flow.name)
    return sorted(rows.values(), key=lambda r: (r.rail, r.plane))


def validate(
    seconds: float, rate_pps: float = DEFAULT_RATE, subflows: int = DEFAULT_SUBFLOWS
) -> int:
    """The packets per flow; a bad option raises :class:`TrafficError` naming it."""
    if not 0.5 <= seconds <= 300:
        raise TrafficError("--seconds", f"probe duration must be 0.5..300 s, not {seconds}")
    if not 10 <= rate_pps <= 5000:
        raise TrafficError("--rate", f"probe rate must be 10..5000 packets/s, not {rate_pps}")
    if not 2 <= subflows <= 64:
        raise TrafficError("--subflows", f"sub-flows must be 2..64, not {subflows}")
    return int(seconds * rate_pps)


def check_traffic(
    fabric: Fabric,
    access: FabricAccess,
    state: StateFolder,
    seconds: float = DEFAULT_SECONDS,
    rate_pps: float = DEFAULT_RATE,
    subflows: int = DEFAULT_SUBFLOWS,
) -> TrafficReport:
    """Probe every rail in both planes through the access's traffic runner."""
    count = validate(seconds, rate_pps, subflows)
    flows = plan_flows(fabric)
    results = access.traffic.run(fabric, state, flows, count, rate_pps, subflows)
    return TrafficReport(
        fabric=fabric.intent.name,
        runner=access.traffic.name,
        seconds=seconds,
        rate_pps=rate_pps,
        subflows=subflows,
        rows=aggregate(fabric, flows, results),
        flows=[{**asdict(f), **_summary(r)} for f, r in zip(flows, results, strict=True)],
    )


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("sent", "received", "lost", "duplicates", "reordered", "max_gap_ms", "receiver_dropped")
    # the sender's bond members that went down during the probe (their egress counts stop)
    return {**{k: result.get(k) for k in keys}, "sniff_down": list(result.get("sniff_down", []))}
