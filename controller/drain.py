"""Day-2 drain and undrain of a leaf, with pre-checks and an impact report before acting.

Drain: (1) graceful-shutdown, so the plane prefers other paths where it has any; (2)
handed-off, where the leaf has a pair to hand to (``controller.handoff``): the leaf routes
what it receives for its own servers through its pair, and the drain waits until it does;
(3, optional, ``hosts_first``) the servers behind the leaf release their ports to it from
their bonds through Ansible, so they move their own flows to the other plane before the
switch takes the ports away; (4) isolate: host /32s withdrawn and host-facing ports down (the
servers behind it go single-plane); (5) verify. Undrain reverses it and holds the host
ports down until the leaf's BGP sessions are up again (lab-facts: hosts switching back at
once lost 3.3 s), then brings them up, and last (``hosts_first``) the servers' ports.
Each step is a deploy of that one leaf with its maintenance state, rendered from the intent
the leaf runs (``controller.deployed``), so a step changes its drain state only, never what
the intent file gained since the leaf's last deploy. The whole drain or undrain
holds the fabric's lock (pre-checks included, so two operators cannot drain both leaves of a
pair); each step is recorded as in progress before its deploy and committed only after it
(`controller.opstate`), so every later deploy keeps the leaf as it really is. Undrain of a
leaf in service is refused, changing nothing.

Both planes are independent: while a leaf is out, remote hosts that hash a flow into its
plane toward the servers behind it lose that flow, unless cross-plane protection gives the
sender's leaf a backup path over the AUX link to its pair. The impact report says which.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from nornir.core.task import Result, Task

from controller import deployed, opstate
from controller.access import FabricAccess
from controller.connection import build_nornir
from controller.deploy import DeviceOutcome, deploy
from controller.errors import DpctlError
from controller.facts import Fabric, Maintenance
from controller.handoff import hand_off_applies, wait_until_handed_off
from controller.hosts import HostsResult, set_leaf_facing_ports
from controller.opstate import StateFolder
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.verify import Check, verify


class DrainRefused(DpctlError):
    """A pre-check failed: draining would cut servers off (use --force to override)."""


@dataclass
class DrainReport:
    leaf: str
    action: str
    partner: str
    servers: list[str]
    refusals: list[str]
    impact: list[str]
    forced: bool = False
    dry_run: bool = False
    steps: list[dict[str, Any]] = field(default_factory=list)
    checks_failed: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def servers_behind(fabric: Fabric, leaf: str) -> list[str]:
    return sorted({lk.a_device for lk in fabric.links_by_device.get(leaf, []) if lk.kind == "host"})


def _partner_ports(fabric: Fabric, partner: str) -> dict[str, list[str]]:
    """server -> the partner leaf's ports to it."""
    ports: dict[str, list[str]] = {}
    for link in fabric.links_by_device.get(partner, []):
        if link.kind == "host":
            ports.setdefault(link.a_device, []).append(link.z_port)
    return ports


def read_partner(task: Task) -> Result:
    try:
        c = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
        peers = c.get_bgp_neighbors().get("global", {}).get("peers", {})
        interfaces = c.get_interfaces()
    except Exception as exc:  # unreachable partner: a refusal, not a crash
        return Result(host=task.host, result=f"{type(exc).__name__}: {exc}", failed=True)
    return Result(host=task.host, result={"peers": peers, "interfaces": interfaces})


def pre_checks(
    fabric: Fabric, leaf: str, partner_state: dict[str, Any] | str, drained: Mapping[str, str]
) -> list[str]:
    """Reasons not to drain (pure): the partner is drained or unhealthy, or a server behind
    the leaf has no working port on the partner (it would be cut off)."""
    partner = fabric.switch_by_name[leaf].pair or ""
    reasons = []
    if drained.get(partner, "none") != "none":
        reasons.append(
            f"partner {partner} is already drained ({drained[partner]}): "
            f"servers {', '.join(servers_behind(fabric, leaf))} would lose both planes"
        )
    if isinstance(partner_state, str):
        reasons.append(f"partner {partner} cannot be checked: {partner_state}")
        return reasons
    down = sorted(p for p, info in partner_state["peers"].items() if not info.get("is_up"))
    if down:
        reasons.append(f"partner {partner} is unhealthy: BGP sessions down on {', '.join(down)}")
    ports = _partner_ports(fabric, partner)
    for server in servers_behind(fabric, leaf):
        up = [
            p for p in ports.get(server, []) if partner_state["interfaces"].get(p, {}).get("is_up")
        ]
        if not up:
            reasons.append(
                f"server {server} is single-homed: its port to {partner} "
                f"({', '.join(ports.get(server, ['none']))}) is down; draining cuts it off"
            )
    return reasons


def host_side(report: DrainReport, hosts_first: bool) -> str:
    """What the drain does on the servers' side, and what the switch-side drain costs."""
    if hosts_first:
        return (
            f"after graceful-shutdown, servers {', '.join(report.servers)} release their ports "
            f"to {report.leaf} from their bonds (Ansible): they move their own flows before "
            "the switch takes the ports away"
        )
    return (
        f"switch side only: what the servers' bonds have already put on their ports to "
        f"{report.leaf} as the leaf takes them down is lost (in the lab 1-2 packets per "
        "sub-flow hashed there); --hosts-first moves the servers off first"
    )


def impact(fabric: Fabric, leaf: str) -> list[str]:
    switch = fabric.switch_by_name[leaf]
    servers = servers_behind(fabric, leaf)
    other = 3 - switch.plane
    lines = [
        f"{len(servers)} servers become single-plane (plane {other} only) on rails "
        f"{', '.join(map(str, switch.rails))}: {', '.join(servers)}",
        f"their own traffic moves to plane {other} when the host ports go down (bond failover)",
    ]
    if hand_off_applies(fabric, leaf):
        lines.append(
            f"from the hand-off on, {leaf} sends what it receives for them, their traffic to "
            f"each other included, to {switch.pair} over the AUX link instead of delivering it"
        )
    if fabric.intent.cross_plane_protection:
        lines.append(
            f"flows other hosts hash into plane {switch.plane} toward them are carried by the "
            f"senders' leaves over the AUX link to their plane-{other} pair (cross-plane "
            "protection; the AUX link is 10G against 400G of traffic)"
        )
    else:
        lines.append(
            f"AT RISK: flows other hosts hash into plane {switch.plane} toward them are dropped "
            f"once the leaf's host routes are withdrawn, until those senders stop using plane "
            f"{switch.plane} for them (no cross-plane protection in this fabric)"
        )
    return lines


Progress = Callable[[str, str], None]
"""Told (leaf, step) as each step of a drain or undrain starts."""


@dataclass(frozen=True)
class Operation:
    """What every step of one drain or undrain works with."""

    fabric: Fabric
    access: FabricAccess
    state: StateFolder
    progress: Progress | None = None

    def tell(self, leaf: str, step: str) -> None:
        if self.progress:
            self.progress(leaf, step)


def _step(op: Operation, leaf: str, target: Maintenance) -> DeviceOutcome:
    """One deploy of ``leaf`` at ``target``, rendered from the intent it runs (a change to the
    intent file is not carried by a drain: it waits for a deploy or `maintain --action
    apply`'s commit-confirm): recorded as in progress first, committed only if
    the deploy did; a rolled-back deploy leaves the committed state; an outcome that is not
    known (rollback failed, or an exception) leaves the step open (pending)."""
    devices = set(op.fabric.switch_by_name)
    running = deployed.fabric_running(op.state, op.fabric, leaf)  # only the drain state changes
    maintenance = op.state.begin_step(devices, leaf, target)
    try:
        outcome = deploy(
            running, op.access, op.state, device=leaf, maintenance=maintenance, lock_held=True
        )[leaf]
    except Exception:  # raised before any switch was touched (deploy reports per device)
        op.state.end_step(devices, leaf, committed_ok=False)
        raise
    if outcome.ok:
        op.state.end_step(devices, leaf, committed_ok=True)
    elif outcome.rolled_back or outcome.backup is None:  # never committed, or undone
        op.state.end_step(devices, leaf, committed_ok=False)
    return outcome


def _switch_steps(op: Operation, report: DrainReport, targets: tuple[Maintenance, ...]) -> bool:
    """Deploy the leaf through ``targets`` in order; stop at the first that fails."""
    for target in targets:
        op.tell(report.leaf, target)
        outcome = _step(op, report.leaf, target)
        report.steps.append({"state": target, **outcome.to_dict()})
        if not outcome.ok:
            return False
    return True


def _host_step(op: Operation, report: DrainReport, port_state: Literal["down", "up"]) -> bool:
    """The servers' ports to the leaf down (before a drain) or up (after an undrain)."""
    name = f"server ports to {report.leaf} {port_state}"
    op.tell(report.leaf, name)
    started = time.monotonic()
    result: HostsResult = set_leaf_facing_ports(
        op.fabric, report.leaf, port_state, op.access.servers, op.state
    )
    bad = result.unreachable + result.failed
    report.steps.append(
        {
            "state": name,
            "ok": result.ok,
            "error": None
            if result.ok
            else "; ".join(f"{n}: {result.hosts[n].message or 'failed'}" for n in bad),
            "seconds": round(time.monotonic() - started, 1),
            "servers_changed": result.changed,
            "artifacts": result.artifacts,
        }
    )
    return result.ok


SETTLE_S = 90.0
"""How long the final verification may wait for the plane to converge (a returning port
is used once its bond's hold time has passed and the leaf has relearned its servers)."""


def _plane_checks(op: Operation, plane: int) -> list[Check]:
    """The plane's failing checks, once they pass or after SETTLE_S (then the last ones).
    Each switch is checked against the intent it runs: a drain carries no change of the
    intent file (``deployed``), so what it did is judged against what the plane runs."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        checks = verify(op.fabric, op.access, op.state, plane=plane, as_deployed=True)
        failed = [c for c in checks if not c.ok]
        if not failed or time.monotonic() >= deadline:
            return failed
        time.sleep(5)


def _finish(op: Operation, report: DrainReport) -> DrainReport:
    plane = op.fabric.switch_by_name[report.leaf].plane
    report.checks_failed = [c.to_dict() for c in _plane_checks(op, plane)]
    report.ok = not report.checks_failed
    return report


def _prepare(fabric: Fabric, leaf: str, action: str) -> DrainReport:
    switch = fabric.switch_by_name.get(leaf)
    if switch is None or switch.role != "leaf" or not switch.pair:
        raise DpctlError("LEAF", f"{leaf!r} is not a leaf of fabric {fabric.intent.name}")
    return DrainReport(
        leaf=leaf,
        action=action,
        partner=switch.pair,
        servers=servers_behind(fabric, leaf),
        refusals=[],
        impact=impact(fabric, leaf),
    )


DRAIN_STEPS: dict[Maintenance, tuple[Maintenance, ...]] = {
    "none": ("graceful-shutdown", "handed-off", "isolated"),
    "graceful-shutdown": ("handed-off", "isolated"),
    "handed-off": ("isolated",),
    "returning": ("isolated",),  # host ports are down already: no bounce through GS
    "isolated": (),
}
BEFORE_HOSTS: tuple[Maintenance, ...] = ("graceful-shutdown", "handed-off")
"""The switch steps a drain takes before the servers release their ports."""
UNDRAIN_STEPS: dict[Maintenance, tuple[Maintenance, ...]] = {
    "isolated": ("returning", "none"),
    "handed-off": ("returning", "none"),
    "graceful-shutdown": ("returning", "none"),
    "returning": ("none",),
    "none": ("none",),  # only reached with a step open: settle the leaf in service
}


class UndrainRefused(DpctlError):
    """The leaf is in service: there is nothing to undrain, and nothing was changed."""


def drain_steps(current: opstate.LeafState, hand_off: bool = True) -> tuple[Maintenance, ...]:
    """The switch steps a drain still has to take from the leaf's recorded state (pure); an
    open step is redone from the last committed state. Without ``hand_off`` (a spine, a leaf
    with no pair path: ``controller.handoff``) there is no handed-off step."""
    steps = DRAIN_STEPS[current.state]
    return steps if hand_off else tuple(s for s in steps if s != "handed-off")


def undrain_steps(leaf: str, current: opstate.LeafState) -> tuple[Maintenance, ...]:
    """The switch steps of an undrain (pure); a leaf in service with no open step is refused."""
    if current.state == "none" and current.pending is None:
        raise UndrainRefused(
            leaf, "is in service (not drained): nothing to undrain; nothing was changed"
        )
    return UNDRAIN_STEPS[current.state]


def drain(
    fabric: Fabric,
    leaf: str,
    access: FabricAccess,
    state: StateFolder,
    dry_run: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    hosts_first: bool = False,
) -> DrainReport:
    """Drain ``leaf``; with ``hosts_first`` the servers move off it first (Ansible). Holds
    the fabric's lock from the pre-checks to the end."""
    report = _prepare(fabric, leaf, "drain")
    op = Operation(fabric, access, state, progress)
    with state.lock(f"drain {leaf}"):
        return _drain_locked(op, report, dry_run, force, hosts_first)


def drain_held(
    op: Operation, name: str, hosts_first: bool = False, force: bool = False
) -> DrainReport:
    """Drain a leaf or a spine for a caller that holds the fabric's lock (maintain). A spine
    is drained as a leaf is, without servers: graceful-shutdown (its routes less preferred),
    then isolated (it advertises only its loopback, so the leaves stop using it)."""
    op.state.require_lock()
    if op.fabric.switch_by_name.get(name) and op.fabric.switch_by_name[name].role == "spine":
        report = _prepare_spine(op.fabric, name, "drain")
        book = op.state.leaf_states(op.fabric)
        steps = drain_steps(book.get(name, opstate.LeafState()), hand_off=False)
        if _switch_steps(op, report, steps):
            _finish(op, report)
        return report
    return _drain_locked(op, _prepare(op.fabric, name, "drain"), False, force, hosts_first)


def undrain_held(op: Operation, name: str, hosts_first: bool = False) -> DrainReport:
    """Undrain a leaf or a spine for a caller that holds the fabric's lock (maintain); a
    switch in service with no open step is left as it is (reported ok)."""
    op.state.require_lock()
    spine = op.fabric.switch_by_name[name].role == "spine"
    report = (_prepare_spine if spine else _prepare)(op.fabric, name, "undrain")
    current = op.state.leaf_states(op.fabric).get(name, opstate.LeafState())
    if current.state == "none" and current.pending is None:
        report.ok = True
        return report
    if not _switch_steps(op, report, UNDRAIN_STEPS[current.state]):
        return report
    if hosts_first and not spine and not _host_step(op, report, "up"):
        return report
    return _finish(op, report)


def _prepare_spine(fabric: Fabric, spine: str, action: str) -> DrainReport:
    plane = fabric.switch_by_name[spine].plane
    return DrainReport(
        leaf=spine,
        action=action,
        partner="",
        servers=[],
        refusals=[],
        impact=[f"the leaves of plane {plane} stop using {spine} (its routes withdrawn)"],
    )


def _partner_state(op: Operation, partner: str) -> dict[str, Any] | str:
    nr = build_nornir(op.fabric, [partner], op.access.switches, workers=1)
    try:
        result: dict[str, Any] | str = nr.run(task=read_partner)[partner][0].result
        return result
    finally:
        nr.close_connections(on_good=True, on_failed=True)


def _drain_locked(
    op: Operation, report: DrainReport, dry_run: bool, force: bool, hosts_first: bool
) -> DrainReport:
    leaf = report.leaf
    book = op.state.leaf_states(op.fabric)
    hand_off = hand_off_applies(op.fabric, leaf)
    steps = drain_steps(book.get(leaf, opstate.LeafState()), hand_off)
    report.impact.insert(0 if hosts_first else len(report.impact), host_side(report, hosts_first))
    if deployed.fabric_running(op.state, op.fabric, leaf) is not op.fabric:
        report.impact.append(
            f"{leaf} runs another intent than the one given (as recorded at its last deploy): "
            "the drain keeps it and changes only the drain state; `dpctl deploy` or `dpctl "
            "maintain --action apply` brings the change"
        )
    partner_state = _partner_state(op, report.partner)
    report.refusals = pre_checks(op.fabric, leaf, partner_state, opstate.committed(book))
    report.forced, report.dry_run = force and bool(report.refusals), dry_run
    if report.refusals and not force:
        raise DrainRefused(leaf, "refused: " + "; ".join(report.refusals) + " (--force overrides)")
    if dry_run:
        report.ok = True
        return report
    # graceful-shutdown first even with the host step: the plane stops sending to the leaf
    # before its servers take their ports away (host step first lost 2.2 s of the flows
    # into the leaf with cross-plane protection, switch step first none: failure matrix);
    # then the leaf hands what its own servers send each other to its pair
    first = tuple(s for s in steps if s in BEFORE_HOSTS)
    if not _switch_steps(op, report, first):
        return report
    if hand_off and "isolated" in steps and not _handed_off(op, report):
        return report
    if hosts_first and not _host_step(op, report, "down"):
        return report
    if not _switch_steps(op, report, tuple(s for s in steps if s not in BEFORE_HOSTS)):
        return report
    return _finish(op, report)


def _handed_off(op: Operation, report: DrainReport) -> bool:
    """Wait until the leaf routes every server behind it through its pair; a leaf that does
    not stops the drain there (handed-off: the servers still use it)."""
    name = "servers reached through the pair"
    op.tell(report.leaf, name)
    started = time.monotonic()
    check = wait_until_handed_off(op.fabric, op.access, report.leaf)
    report.steps.append(
        {
            "state": name,
            "ok": check.ok,
            "error": None
            if check.ok
            else f"{report.leaf} still delivers to its servers itself ({check.found}); the "
            "servers keep their ports to it: dpctl drain again once its routes go via the pair",
            "seconds": round(time.monotonic() - started, 1),
        }
    )
    return check.ok


def undrain(
    fabric: Fabric,
    leaf: str,
    access: FabricAccess,
    state: StateFolder,
    dry_run: bool = False,
    progress: Progress | None = None,
    hosts_first: bool = False,
) -> DrainReport:
    """Undrain ``leaf``; with ``hosts_first`` the servers' ports to it come back last.
    Refused for a leaf in service; holds the fabric's lock throughout."""
    report = _prepare(fabric, leaf, "undrain")
    op = Operation(fabric, access, state, progress)
    with state.lock(f"undrain {leaf}"):
        steps = undrain_steps(leaf, state.leaf_states(fabric).get(leaf, opstate.LeafState()))
        report.impact = [
            f"servers {', '.join(report.servers)} return to both planes once "
            f"{leaf}'s BGP sessions are up (host ports held down until then)"
        ]
        if hosts_first:
            report.impact.append(
                f"then the servers bring their ports to {leaf} back into their bonds (Ansible)"
            )
        report.dry_run = dry_run
        if dry_run:
            report.ok = True
            return report
        # "returning": policy back to normal, host ports still down; deploy's post-check
        # waits for the leaf's sessions, only then do the host ports come up.
        if not _switch_steps(op, report, steps):
            return report
        if hosts_first and not _host_step(op, report, "up"):
            return report
        return _finish(op, report)
