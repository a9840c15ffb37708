"""`dpctl verify`: the live fabric against the intent, one named check at a time.

Each check says device, what was expected and what was found. Expected values come from the
same fabric facts and per-device data that rendering used (the cabling plan for LLDP and
BGP neighbours, the rail pairs for host routes and Ethernet segments).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from nornir.core.processor import Processor
from nornir.core.task import Result, Task

from controller import deployed, platforms
from controller.access import FabricAccess
from controller.connection import Limits, build_nornir
from controller.drivers.contract import DpctlDriver
from controller.drivers.types import QosState
from controller.facts import Fabric
from controller.opstate import LeafState, StateFolder, committed
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.render.device import DeviceConfig
from controller.render.engine import select_devices, structured_configs


@dataclass(frozen=True)
class Check:
    device: str
    check: str
    ok: bool
    expected: Any
    found: Any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class NotADpctlDriver(TypeError):
    """The connection's driver does not implement controller.drivers.contract.DpctlDriver."""


def read_state(driver: Any, role: str, evpn: bool) -> dict[str, Any]:
    """Everything verify needs from one switch, through the driver contract's getters."""
    if not isinstance(driver, DpctlDriver):
        raise NotADpctlDriver(
            f"{type(driver).__name__} does not implement dpctl's driver contract "
            "(controller/drivers/contract.py)"
        )
    with driver.dpctl.batched_reads():
        state: dict[str, Any] = {
            "bgp": driver.get_bgp_neighbors().get("global", {}).get("peers", {}),
            "lldp": driver.get_lldp_neighbors(),
            "interfaces": driver.get_interfaces(),
            "routes": driver.dpctl.get_host_routes(),
            "maintenance": driver.dpctl.get_maintenance(),
            "qos": driver.dpctl.get_qos_state(),
        }
        if evpn and role == "leaf":
            state["es"] = driver.dpctl.get_evpn_es()
    return state


def collect(task: Task, evpn: bool) -> Result:
    """Read everything verify needs from one switch (one connection, all getters)."""
    try:
        driver = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
        state = read_state(driver, str(task.host.data.get("role", "")), evpn)
    except Exception as exc:  # an unreachable switch is a failed check, not a crash
        return Result(host=task.host, result=f"{type(exc).__name__}: {exc}", failed=True)
    return Result(host=task.host, result=state)


def check_bgp(
    fabric: Fabric, device: DeviceConfig, state: dict[str, Any], plane: int | None = None
) -> Check:
    """Established with exactly the cabled peers. Verifying one plane leaves out the pair
    session to the other plane's leaf (EVPN-MH / protection): it needs both planes."""
    name = device.hostname
    neighbors = device.bgp.neighbors
    skip = {
        n.interface
        for n in neighbors
        if plane is not None and fabric.switch_by_name[n.peer_device].plane != plane
    }
    expected = sorted(n.interface for n in neighbors if n.interface not in skip)
    up = sorted(
        peer for peer, info in state["bgp"].items() if info.get("is_up") and peer not in skip
    )
    return Check(name, "bgp-sessions", up == expected, expected, up)


PORTS_DOWN = ("isolated", "returning")


def check_lldp(
    fabric: Fabric, name: str, state: dict[str, Any], drained: Mapping[str, str] | None = None
) -> Check:
    """Every cabled port sees the planned neighbour (host ports of a drained leaf are down)."""
    ports_down = (drained or {}).get(name) in PORTS_DOWN
    expected: dict[str, str] = {}
    for link in fabric.links_by_device.get(name, []):
        if ports_down and link.kind == "host":
            continue
        mine, peer = (
            (link.a_port, f"{link.z_device}:{link.z_port}")
            if link.a_device == name
            else (link.z_port, f"{link.a_device}:{link.a_port}")
        )
        expected[mine] = peer
    found = {port: f"{n[0]['hostname']}:{n[0]['port']}" for port, n in state["lldp"].items() if n}
    found = {p: v for p, v in found.items() if p in expected or not p.startswith("mgmt")}
    return Check(name, "lldp-cabling", found == expected, expected, found)


def check_host_ports(
    fabric: Fabric, name: str, state: dict[str, Any], drained: Mapping[str, str] | None = None
) -> Check:
    """A leaf's server-facing ports are admin-down while it is drained (isolated, and held
    down while returning) and admin-up otherwise: the same meaning on every platform."""
    enabled = (drained or {}).get(name) not in PORTS_DOWN
    ports = sorted(
        link.z_port if link.z_device == name else link.a_port
        for link in fabric.links_by_device.get(name, [])
        if link.kind == "host"
    )
    interfaces = state["interfaces"]
    wrong = {p: interfaces.get(p, {}).get("is_enabled") for p in ports}
    wrong = {p: on for p, on in wrong.items() if on is not enabled}
    admin = "up" if enabled else "down"
    return Check(
        name,
        "host-ports-admin",
        not wrong,
        f"{len(ports)} host ports admin {admin}",
        f"all admin {admin}" if not wrong else {"wrong": wrong},
    )


def check_loopbacks(fabric: Fabric, name: str, state: dict[str, Any]) -> Check:
    """Leaves see every switch of their plane; spines see the leaves (leaves re-advertise
    only what they originate, so one spine never learns another's loopback)."""
    switch = fabric.switch_by_name[name]
    expected = sorted(
        f"{s.loopback}/32"
        for s in fabric.switches_in(plane=switch.plane)
        if s.name != name and (switch.role == "leaf" or s.role == "leaf")
    )
    present = {r["prefix"] for r in state["routes"] if r["selected"]}
    missing = [p for p in expected if p not in present]
    return Check(
        name,
        "plane-loopbacks",
        not missing,
        f"{len(expected)} loopbacks of plane {switch.plane}",
        "all present" if not missing else {"missing": missing},
    )


def check_host_routes(
    fabric: Fabric, name: str, state: dict[str, Any], drained: Mapping[str, str] | None = None
) -> Check:
    """On a spine: every NIC's /32, through the leaf of its rail pair in this plane only;
    none for NICs behind a drained (isolated) leaf of this plane."""
    drained = drained or {}
    switch = fabric.switch_by_name[name]
    ports_to = {}
    for link in fabric.links_by_device.get(name, []):
        if link.kind == "fabric":
            ports_to[link.z_port] = link.a_device
    routes = {r["prefix"]: r for r in state["routes"] if r["selected"]}
    wrong: dict[str, Any] = {}
    for server in fabric.servers:
        for nic in server.nics:
            prefix = f"{nic.ip}/32"
            leaf = nic.leaves[switch.plane - 1]
            route = routes.get(prefix)
            if drained.get(leaf) in PORTS_DOWN:
                if route is not None:
                    wrong[prefix] = f"present but {leaf} is drained"
                continue
            if route is None:
                wrong[prefix] = "missing"
                continue
            via = sorted({ports_to.get(hop, hop) for hop in route["nexthops"]})
            if via != [leaf]:
                wrong[prefix] = {"via": via, "expected": leaf}
    total = sum(len(s.nics) for s in fabric.servers)
    return Check(
        name,
        "host-routes",
        not wrong,
        f"{total} NIC /32s, each via its plane-{switch.plane} leaf",
        wrong if wrong else "all present",
    )


def check_hosts_via_pair(fabric: Fabric, name: str, state: dict[str, Any]) -> Check:
    """On a handed-off leaf: the /32 of every NIC behind it selected through its AUX link
    (to its pair), not delivered by the leaf itself."""
    aux = {
        link.a_port if link.a_device == name else link.z_port
        for link in fabric.links_by_device.get(name, [])
        if link.kind == "aux"
    }
    routes = {r["prefix"]: r for r in state["routes"] if r["selected"]}
    wrong: dict[str, Any] = {}
    nics = [n for s in fabric.servers for n in s.nics if name in n.leaves]
    for nic in nics:
        prefix = f"{nic.ip}/32"
        hops = sorted(routes[prefix]["nexthops"]) if prefix in routes else []
        if not hops or not set(hops) <= aux:
            wrong[prefix] = {"via": hops or "no route", "expected": sorted(aux)}
    return Check(
        name,
        "hosts-via-pair",
        bool(aux) and not wrong,
        f"{len(nics)} NIC /32s behind it, each via its AUX link {', '.join(sorted(aux))}",
        wrong if wrong else ("all via the pair" if aux else "no AUX link"),
    )


def check_segments(
    fabric: Fabric, states: dict[str, dict[str, Any]], drained: Mapping[str, str] | None = None
) -> list[Check]:
    """Each NIC's ES up on both leaves of its pair with exactly one designated forwarder, and
    each leaf listing the other's VTEP (its loopback) as a peer of the segment (on the partner
    alone while one leaf is drained). Without the peers, a pair whose leaves do not see each
    other could pass by their DF preferences alone. A bgpd restart that lost FRR 8.4's replay
    race (``evpn_vnis`` in controller/render/bgp.py) left both leaves DF and one of them
    with no peer."""
    drained = drained or {}
    checks = []
    for server in fabric.servers:
        for nic in server.nics:
            leaves = [leaf for leaf in nic.leaves if leaf in states and "es" in states[leaf]]
            if len(leaves) < 2:
                continue
            leaves = [leaf for leaf in leaves if drained.get(leaf) not in PORTS_DOWN]
            found = {}
            for leaf in leaves:
                es = next((e for e in states[leaf]["es"] if e["esi"] == nic.esi), None)
                found[leaf] = (
                    None if es is None else {"up": es["up"], "df": es["df"], "peers": es["peers"]}
                )
            vteps = {leaf: fabric.switch_by_name[leaf].loopback for leaf in leaves}
            ok = (
                all(f and f["up"] for f in found.values())
                and sum(bool(f and f["df"]) for f in found.values()) == 1
                and all(
                    vteps[other] in (f["peers"] if f else [])
                    for leaf, f in found.items()
                    for other in leaves
                    if other != leaf
                )
            )
            expected: dict[str, Any] = {
                "esi": nic.esi,
                "up on both": True,
                "designated forwarders": 1,
            }
            if len(leaves) == 2:
                expected["peers"] = {leaves[0]: vteps[leaves[1]], leaves[1]: vteps[leaves[0]]}
            checks.append(
                Check(
                    f"{nic.leaves[0]}+{nic.leaves[1]}",
                    f"evpn-es {server.name} rail {nic.rail}",
                    ok,
                    expected,
                    found,
                )
            )
    return checks


def expected_ecn_queues(device: DeviceConfig) -> list[int]:
    """Queues that must mark ECN, as the device's platform numbers them (SONiC, AsterNOS:
    queue = traffic class; Linux: the prio qdisc's bands the lossless classes go to)."""
    return platforms.get(device.platform).expected_ecn_queues(device)


def check_roce_lb(fabric: Fabric, device: DeviceConfig, state: dict[str, Any]) -> list[Check]:
    """PFC on the lossless classes (where the datapath has PFC), ECN marking on their queues,
    on every port of the switch; the L4 ECMP hash where the driver reads the hash. The
    drivers list only the ports that mark or pause some queue: a port they do not list has
    none (lossy mode plans none, so it passes there; until 2026-12-07 it failed on every
    port, found by a rolling apply to lossy in the lab that stopped at the canary)."""
    name = device.hostname
    qos: QosState = state["qos"]
    checks = []
    if device.roce is not None and device.roce.enabled:
        ports = [i.name for i in device.interfaces]
        ecn = expected_ecn_queues(device)
        want_ecn = {p: ecn for p in ports}
        got_ecn = {p: list(qos["ecn"].get(p, [])) for p in ports}
        checks.append(Check(name, "roce-ecn", got_ecn == want_ecn, want_ecn, got_ecn))
        if qos["pfc"] is not None:  # None: no PFC in this datapath (Linux), refused at render
            lossless = sorted(device.roce.lossless_queues)
            want_pfc = {p: lossless for p in ports}
            got_pfc = {p: list(qos["pfc"].get(p, [])) for p in ports}
            checks.append(Check(name, "roce-pfc", got_pfc == want_pfc, want_pfc, got_pfc))
    if qos["ecmp_hash"] is not None:
        checks.append(
            Check(
                name,
                "load-balancing",
                qos["ecmp_hash"] == "l4",
                f"{fabric.intent.load_balancing.mode}: L4 multipath hash",
                f"hash {qos['ecmp_hash']}",
            )
        )
    return checks


POLICY_OF = {
    "none": "none",
    "graceful-shutdown": "graceful-shutdown",
    "handed-off": "handed-off",
    "isolated": "isolated",
    "returning": "none",
}


def maintenance_found(m: Mapping[str, bool]) -> str:
    """The drain policy a switch shows, as POLICY_OF names it (from get_maintenance)."""
    if m["isolated"]:
        return "isolated"
    if m["graceful_shutdown"]:
        return "handed-off" if m.get("hosts_via_pair") else "graceful-shutdown"
    return "none"


def check_maintenance(
    fabric: Fabric,
    name: str,
    state: dict[str, Any],
    drained: Mapping[str, str],
    open_step: LeafState | None = None,
) -> Check:
    """The switch's drain policy as recorded; a drain/undrain step left open fails the check
    whatever the switch shows (the record must be settled by finishing the step)."""
    want = POLICY_OF[drained.get(name, "none")]
    found = maintenance_found(state["maintenance"])
    if open_step is not None and open_step.pending is not None:
        return Check(
            name,
            f"maintenance (step to {open_step.pending} in progress)",
            False,
            f"{want} (step to {open_step.pending} finished: dpctl drain|undrain {name})",
            found,
        )
    label = f"drained: {drained[name]}" if name in drained else "in service"
    return Check(name, f"maintenance ({label})", found == want, want, found)


def device_checks(
    fabric: Fabric,
    device: DeviceConfig,
    state: dict[str, Any],
    plane: int | None,
    book: Mapping[str, LeafState],
) -> list[Check]:
    """Every check of one reachable switch, from what it answered (pure)."""
    name = device.hostname
    drained = committed(book)
    checks = [
        check_bgp(fabric, device, state, plane),
        check_lldp(fabric, name, state, drained),
        check_loopbacks(fabric, name, state),
        check_maintenance(fabric, name, state, drained, book.get(name)),
    ]
    if device.role == "leaf":
        checks.append(check_host_ports(fabric, name, state, drained))
        if drained.get(name) == "handed-off":
            checks.append(check_hosts_via_pair(fabric, name, state))
    else:
        checks.append(check_host_routes(fabric, name, state, drained))
    return checks + check_roce_lb(fabric, device, state)


def read_one(fabric: Fabric, access: FabricAccess, name: str) -> dict[str, Any] | Check:
    """One switch's state as verify reads it, or its failed "reachable" check."""
    nr = build_nornir(fabric, [name], access.switches)
    try:
        result = nr.run(task=collect, evpn=fabric.intent.dual_leaf_mode == "evpn-mh")[name][0]
    finally:
        nr.close_connections(on_good=True, on_failed=True)
    return unreachable(name, result) if result.failed else dict(result.result)


def unreachable(name: str, result: Result) -> Check:
    return Check(name, "reachable", False, "SSH + getters", str(result.exception or result.result))


def expected(
    fabric: Fabric, state: StateFolder, names: Sequence[str], as_deployed: bool
) -> dict[str, tuple[Fabric, DeviceConfig]]:
    """What each switch is checked against: the fabric of the intent given and the switch's
    structured config in it; with ``as_deployed``, of the intent the switch runs as recorded
    at its last deploy (``deployed.fabric_running``; the intent given where none is).

    A drain changes only the drain state and a rolling ``apply`` changes one switch at a
    time, so while the intent file is ahead of the fabric, the health of what a drain or a
    rollout's gate touched is judged against what each switch runs: against the file, a
    change of the RoCE mode would fail every SONiC switch not yet rolled (``roce-pfc``)."""
    own = {n: deployed.fabric_running(state, fabric, n) if as_deployed else fabric for n in names}
    result: dict[str, tuple[Fabric, DeviceConfig]] = {}
    for each in {id(f): f for f in own.values()}.values():
        mine = [n for n in names if own[n] is each]
        result.update({n: (each, d) for n, d in structured_configs(each, mine).items()})
    return result


def verify(
    fabric: Fabric,
    access: FabricAccess,
    state: StateFolder,
    plane: int | None = None,
    processors: Sequence[Processor] = (),
    reach: Limits | None = None,
    as_deployed: bool = False,
) -> list[Check]:
    """The live fabric (or one plane) against the intent; progress to Nornir processors.
    ``reach``: switches read at once and timeouts (default: :class:`Limits`); a switch that
    does not answer within them fails its "reachable" check, the others are read meanwhile.
    ``as_deployed``: each switch against the intent it runs (:func:`expected`); EVPN
    segments are still checked against the intent given."""
    names = select_devices(fabric, plane, None)
    evpn = fabric.intent.dual_leaf_mode == "evpn-mh"
    book = state.leaf_states(fabric)  # a corrupt record stops verify before any switch
    devices = expected(fabric, state, names, as_deployed)
    nr = build_nornir(fabric, names, access.switches, reach=reach)
    nr = nr.with_processors(list(processors))
    try:
        results = nr.run(task=collect, evpn=evpn)
    finally:
        nr.close_connections(on_good=True, on_failed=True)
    checks: list[Check] = []
    states: dict[str, dict[str, Any]] = {}
    for name in names:
        result = results[name][0]
        if result.failed:
            checks.append(unreachable(name, result))
            continue
        states[name] = result.result
        checks += device_checks(*devices[name], result.result, plane, book)
    if evpn:
        checks += check_segments(fabric, states, committed(book))
    return checks
