"""`dpctl accept`: the bring-up acceptance test of a fabric, in order: read the switches,
probe every fabric cable from its leaf, send a flow on every server port (and the cross-rail
flows), read the counters again, then judge (:mod:`controller.accept.judge`). It changes no
configuration: the drivers only read and ping, the probe agents only send and count.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from nornir.core.task import AggregatedResult

from controller.accept import collect, judge, links, roce
from controller.accept.cabling import observed_cables
from controller.accept.probes import (
    PINNED_SUBFLOWS,
    cable_name,
    cross_rail_probes,
    fabric_cables,
    probe_counts,
    server_probes,
    switch_element,
)
from controller.accept.result import AcceptReport, Finding, failed, skipped
from controller.access import FabricAccess
from controller.connection import build_nornir
from controller.facts import Fabric
from controller.opstate import StateFolder, committed
from controller.render.device import DeviceConfig
from controller.render.engine import select_devices, structured_configs
from controller.servers import SERVER_MTU
from controller.traffic import TrafficError

PROBE_COUNT = 200
PROBE_RATE = 100.0
FABRIC_PING_SIZE_LESS = 48  # IPv6 (40) + ICMPv6 (8) headers: the payload of a full-MTU ping


def _results(agg: AggregatedResult, names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    ok: dict[str, Any] = {}
    bad: dict[str, str] = {}
    for name in names:
        r = agg[name][0]
        if r.failed:
            bad[name] = str(r.exception or r.result)
        else:
            ok[name] = r.result
    return ok, bad


def ping_targets(
    fabric: Fabric, before: dict[str, Any], plane: int | None
) -> dict[str, dict[str, str]]:
    """Per leaf, its fabric ports -> the link-local address heard on each."""
    targets: dict[str, dict[str, str]] = {}
    for lk in fabric_cables(fabric, plane):
        if lk.a_device not in before:
            continue
        peers = collect.link_local_peers(before[lk.a_device]["ipv6_neighbors"])
        if lk.a_port in peers:
            targets.setdefault(lk.a_device, {})[lk.a_port] = peers[lk.a_port]
    return targets


def _ping(task: Any, targets: dict[str, dict[str, str]], size: int) -> Any:
    return collect.ping_fabric(task, targets.get(task.host.name, {}), size)


def rx_deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, int]]:
    """device:port -> {"rx": packets received during the test} (where both reads have it)."""
    out: dict[str, dict[str, int]] = {}
    for device, state in before.items():
        b, a = state.get("counters"), after.get(device)
        if not b or not a:
            continue
        for port, counts in b.items():
            if port in a:
                got = _rx(a[port]) - _rx(counts)
                out[f"{device}:{port}"] = {"rx": got}
    return out


def _rx(c: dict[str, int]) -> int:
    return max(int(c.get("rx_unicast_packets", 0)), 0) + max(
        int(c.get("rx_multicast_packets", 0)), 0
    )


def switch_findings(
    fabric: Fabric,
    devices: dict[str, DeviceConfig],
    before: dict[str, Any],
    after: dict[str, Any],
    drained: Mapping[str, str],
) -> list[Finding]:
    rows: list[Finding] = []
    for name, device in devices.items():
        if name not in before:
            continue
        ports_down = drained.get(name) in ("isolated", "returning")
        rows += links.port_findings(device, before[name]["interfaces"], ports_down)
        rows += links.counter_findings(device, before[name]["counters"], after.get(name))
    return rows


def element_evidence(
    fabric: Fabric, rows: list[Finding], unreachable: dict[str, str]
) -> dict[str, str]:
    """Localisation's own evidence per element: a cable whose port or cabling failed, an
    unreachable switch."""
    evidence = {switch_element(n): f"unreachable: {why}" for n, why in unreachable.items()}
    by_end = {}
    for lk in fabric.links:
        by_end[(lk.a_device, lk.a_port)] = by_end[(lk.z_device, lk.z_port)] = cable_name(lk)
    for row in rows:
        if row.failed and row.stage in ("links", "cabling") and (row.device, row.port) in by_end:
            evidence.setdefault(
                by_end[(row.device, row.port)], f"{row.device}:{row.port} {row.what}"
            )
    return evidence


def accept(
    fabric: Fabric, access: FabricAccess, state: StateFolder, plane: int | None = None
) -> AcceptReport:
    """Run the whole acceptance test of ``fabric`` (or one plane) and judge it."""
    started = time.monotonic()
    names = select_devices(fabric, plane, None)
    drained = committed(state.leaf_states(fabric))
    devices = structured_configs(fabric, names)
    servers = server_probes(fabric, plane)
    probes = servers + cross_rail_probes(fabric, plane, len(servers))
    nr = build_nornir(fabric, names, access.switches)
    phases: dict[str, float] = {}
    mark = time.monotonic()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.monotonic()
        phases[name], mark = round(now - mark, 1), now

    try:
        before, unreachable = _results(nr.run(task=collect.read_before), names)
        phase("read switches")
        targets = ping_targets(fabric, before, plane)
        size = fabric.intent.mtu - FABRIC_PING_SIZE_LESS
        pings, _ = _results(nr.run(task=_ping, targets=targets, size=size), names)
        phase("fabric-link probes")
        results = _traffic(fabric, access, state, probes)
        phase("server flows")
        servers_lldp, lldp_rows = _servers_lldp(fabric, access, state, plane)
        phase("read servers' LLDP")
        after_all, _ = _results(nr.run(task=collect.read_after), names)
        phase("read counters again")
    finally:
        nr.close_connections(on_good=True, on_failed=True)
    after = {n: a["counters"] for n, a in after_all.items()}
    rows, punch = _judge(fabric, devices, before, after, pings, unreachable, drained, plane)
    rows += judge.server_probe_findings(probes, results)
    rows += judge.server_port_findings(probes, results, SERVER_MTU)
    rows += lldp_rows + judge.server_lldp_findings(fabric, plane, servers_lldp)
    rows += judge.localisation_findings(
        probes, results, element_evidence(fabric, rows, unreachable)
    )
    queues_before = {n: s.get("queues") for n, s in before.items()}
    queues_after = {n: a.get("queues") for n, a in after_all.items()}
    rows += roce.findings(fabric, devices, queues_before, queues_after, access)
    return AcceptReport(
        fabric=fabric.intent.name,
        target={"source": access.source, "where": access.where},
        findings=rows,
        punch_list=[a.to_dict() for a in punch],
        probes=probe_counts(fabric, plane),
        seconds=time.monotonic() - started,
        plane=plane,
        phases=phases,
    )


def _traffic(
    fabric: Fabric, access: FabricAccess, state: StateFolder, probes: list[Any]
) -> list[dict[str, Any]]:
    if not probes:
        return []
    flows = [p.flow for p in probes]
    return access.traffic.run(fabric, state, flows, PROBE_COUNT, PROBE_RATE, PINNED_SUBFLOWS)


def _servers_lldp(
    fabric: Fabric, access: FabricAccess, state: StateFolder, plane: int | None
) -> tuple[dict[str, Any], list[Finding]]:
    """The servers' own LLDP (servers with a cable in the plan or the plane); a skip row for
    each server whose lldpd did not answer, or one for all when they cannot be read."""
    names = sorted(
        {lk.a_device for lk in fabric.links if lk.kind == "host"}
        if plane is None
        else {lk.a_device for lk in fabric.links if lk.kind == "host" and lk.plane == plane}
    )
    if not names:
        return {}, []
    try:
        found = access.traffic.read_lldp(fabric, state, names)
    except TrafficError as exc:
        return {}, [skipped("cabling", "servers' LLDP", f"not read: {exc}")]
    return found, [
        skipped("cabling", f"{name} LLDP", "its lldpd did not answer (lldpd not running?)")
        for name in names
        if name not in found
    ]


def _judge(
    fabric: Fabric,
    devices: dict[str, DeviceConfig],
    before: dict[str, Any],
    after: dict[str, Any],
    pings: dict[str, Any],
    unreachable: dict[str, str],
    drained: Mapping[str, str],
    plane: int | None,
) -> tuple[list[Finding], list[Any]]:
    rows = [
        failed(
            "links",
            f"switch {n}",
            f"unreachable: {why}",
            f"reach {n} (SSH, credentials, management network)",
            device=n,
        )
        for n, why in unreachable.items()
    ]
    rows += switch_findings(fabric, devices, before, after, drained)
    down = {r.element for r in rows if r.failed and "link down" in r.what}
    plan = judge.planned_cables(fabric, set(before), plane)
    ends = {e for c in plan for e in c}
    seen = judge.lldp_observations(fabric, {n: s["lldp"] for n, s in before.items()}, ends)
    observed = {c for c in observed_cables(seen) if c in plan or c & ends}
    cabling_rows, punch = judge.cabling_findings(plan, observed, down)
    rows += cabling_rows
    rows += judge.fabric_probe_findings(
        fabric_cables(fabric, plane), pings, rx_deltas(before, after)
    )
    return rows, punch
