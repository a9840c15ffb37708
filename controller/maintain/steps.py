"""One switch's steps in a rolling maintenance: drain, the action, wait until healthy,
(apply: confirm the commit), undrain, then the gate. Each returns a :class:`StepResult`;
nothing here prints or records the rollout (``controller.maintain.rollout`` does).

Every step is safe to run again after a controller died in it (``--resume``): drain and
undrain continue from the switch's recorded drain state, the actions restart what is
running, the health wait and the gate only read, and confirm asks the switch whether its
commit is still pending.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nornir.core.task import Result, Task

from controller import deployed
from controller.access import FabricAccess
from controller.connection import build_nornir
from controller.deploy import deploy, driver_of
from controller.drain import DrainReport, Operation, drain_held, undrain_held
from controller.drivers.contract import DpctlDriver
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.opstate import StateFolder
from controller.traffic import check_traffic
from controller.verify import Check, collect, device_checks, expected, unreachable

HEALTHY_S = 240.0
"""How long a switch may take after its action until its checks pass (BGP sessions up,
routes, LLDP, ports as its drain state says): a planned FRR restart in the lab took ~15 s,
a real switch's reboot takes minutes (``--healthy-timeout``)."""
GATE_PROBE_S = 3.0
T = TypeVar("T")


@dataclass
class StepResult:
    ok: bool
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    """What every step of one rollout works with."""

    fabric: Fabric
    access: FabricAccess
    state: StateFolder
    action: str
    image: str | None = None
    revert_in: int = 600
    hosts_first: bool = True
    healthy_s: float = HEALTHY_S
    gate_probe_s: float = GATE_PROBE_S
    tell: Callable[[str, str], None] | None = None

    def op(self) -> Operation:
        return Operation(self.fabric, self.access, self.state, self.tell)


def refusal(fabric: Fabric, access: FabricAccess, action: str, names: list[str]) -> str | None:
    """Why ``action`` cannot run on these switches' platforms (checked before any change)."""
    platforms = {fabric.switch_by_name[n].platform for n in names}
    if "asternos" in platforms:
        what = "commit-confirm" if action == "apply" else action
        return (
            f"AsterNOS: no vendor-documented command for {what} in the public AsterNOS "
            "documents (docs/maintain.md, 'Platforms'); refused, nothing was changed"
        )
    if (
        action == "upgrade"
        and "frr" in platforms
        and not access.switches.optional_args.get("image_stand_in")
    ):
        return "Linux + FRR switches have no NOS image to install; refused, nothing was changed"
    return None


def on_switch(ctx: Context, name: str, call: Callable[[DpctlDriver], T]) -> T:
    """``call`` with the switch's open driver; raises what it raised."""

    def task(task: Task) -> Result:
        return Result(host=task.host, result=call(driver_of(task)))

    nr = build_nornir(ctx.fabric, [name], ctx.access.switches, workers=1)
    try:
        result = nr.run(task=task)[name][0]
    finally:
        nr.close_connections(on_good=True, on_failed=True)
    if result.failed:
        raise result.exception or DpctlError(name, str(result.result))
    value: T = result.result
    return value


def _report_detail(report: DrainReport) -> str:
    bad = [f"{s['state']}: {s.get('error')}" for s in report.steps if not s.get("ok")]
    bad += [f"{c['device']} {c['check']}: found {c['found']}" for c in report.checks_failed[:5]]
    return "; ".join(bad) or "failed"


def drain(ctx: Context, name: str) -> StepResult:
    leaf = ctx.fabric.switch_by_name[name].role == "leaf"
    try:
        report = drain_held(ctx.op(), name, hosts_first=ctx.hosts_first and leaf)
    except DpctlError as exc:
        return StepResult(False, exc.reason)
    return StepResult(report.ok, "" if report.ok else _report_detail(report))


def undrain(ctx: Context, name: str) -> StepResult:
    leaf = ctx.fabric.switch_by_name[name].role == "leaf"
    report = undrain_held(ctx.op(), name, hosts_first=ctx.hosts_first and leaf)
    return StepResult(report.ok, "" if report.ok else _report_detail(report))


def action(ctx: Context, name: str) -> StepResult:
    """The action itself (the switch is drained)."""
    try:
        if ctx.action == "apply":
            return _apply(ctx, name)
        if ctx.action == "restart-routing":
            on_switch(ctx, name, lambda d: d.dpctl.restart_routing())
        elif ctx.action == "reboot":
            on_switch(ctx, name, lambda d: d.dpctl.reboot())
        else:
            on_switch(ctx, name, lambda d: d.dpctl.install_image(ctx.image or ""))
            on_switch(ctx, name, lambda d: d.dpctl.reboot())
    except Exception as exc:  # the switch's own error, named
        return StepResult(False, f"{type(exc).__name__}: {exc}")
    return StepResult(True)


def _apply(ctx: Context, name: str) -> StepResult:
    """Deploy the switch's current intent with commit-confirm (``revert_in``)."""
    outcome = deploy(
        ctx.fabric, ctx.access, ctx.state, device=name, lock_held=True, revert_in=ctx.revert_in
    )[name]
    data = {"changed": outcome.changed, "backup": outcome.backup}
    return StepResult(outcome.ok, outcome.error or "", data)


def confirm(ctx: Context, name: str) -> StepResult:
    """Confirm the switch's pending commit; none pending is fine only if the switch runs
    the intent (no change was needed), else the commit reverted itself before this."""
    if on_switch(ctx, name, lambda d: bool(d.has_pending_commit())):
        on_switch(ctx, name, lambda d: d.confirm_commit())
        deployed.record(ctx.state, ctx.fabric.intent, [name])  # its drains render it now
        return StepResult(True, "confirmed")
    check = deploy(ctx.fabric, ctx.access, ctx.state, device=name, dry_run=True, lock_held=True)
    if check[name].changed:
        return StepResult(
            False,
            f"no commit pending and {name} does not run the intent: the commit reverted "
            f"itself before it was confirmed (--confirm-timeout {ctx.revert_in} s too short?)",
        )
    deployed.record(ctx.state, ctx.fabric.intent, [name])  # confirmed before a kill -9
    return StepResult(True, "nothing to confirm: the switch runs the intent")


def switch_checks(ctx: Context, names: list[str], as_deployed: bool = True) -> list[Check]:
    """verify's checks of ``names`` only (their drain states as recorded), each switch
    against the intent it runs (``as_deployed``) or against the rollout's."""
    evpn = ctx.fabric.intent.dual_leaf_mode == "evpn-mh"
    book = ctx.state.leaf_states(ctx.fabric)
    devices = expected(ctx.fabric, ctx.state, names, as_deployed)
    nr = build_nornir(ctx.fabric, names, ctx.access.switches)
    try:
        results = nr.run(task=collect, evpn=evpn)
    finally:
        nr.close_connections(on_good=True, on_failed=True)
    checks: list[Check] = []
    for name in names:
        result = results[name][0]
        if result.failed:
            checks.append(unreachable(name, result))
        else:
            checks += device_checks(*devices[name], result.result, None, book)
    return checks


def _failing(checks: list[Check]) -> str:
    return "; ".join(
        f"{c.device} {c.check}: expected {c.expected}, found {c.found}" for c in checks
    )


def healthy(ctx: Context, name: str) -> StepResult:
    """Wait (up to ``healthy_s``) until every check of the switch passes: against the
    rollout's intent after an ``apply`` (its commit is recorded only once confirmed, the
    next step), else against the intent it runs."""
    deadline = time.monotonic() + ctx.healthy_s
    started = time.monotonic()
    as_deployed = ctx.action != "apply"
    while True:
        failed = [c for c in switch_checks(ctx, [name], as_deployed) if not c.ok]
        if not failed:
            return StepResult(True, data={"seconds": round(time.monotonic() - started, 1)})
        if time.monotonic() >= deadline:
            return StepResult(
                False, f"not healthy after {ctx.healthy_s:.0f} s: {_failing(failed)[:600]}"
            )
        time.sleep(3)


def neighbours(fabric: Fabric, name: str) -> list[str]:
    """The switches cabled to ``name`` (its spines or leaves, its AUX pair)."""
    found = {
        lk.z_device if lk.a_device == name else lk.a_device
        for lk in fabric.links_by_device.get(name, [])
        if lk.kind in ("fabric", "aux")
    }
    return sorted(found)


def gate(ctx: Context, name: str) -> StepResult:
    """The switch and its neighbours pass verify, and a probe over the rails it carries
    loses and duplicates nothing. A failed gate drains the switch again."""
    failed = [c for c in switch_checks(ctx, [name, *neighbours(ctx.fabric, name)]) if not c.ok]
    problems = [_failing(failed)[:600]] if failed else []
    if not problems:
        problems = _probe_problems(ctx, name)
    if not problems:
        return StepResult(True)
    drain(ctx, name)  # its plane's verify may fail for the same cause: judged by the record
    record = ctx.state.leaf_states(ctx.fabric).get(name)
    again = record is not None and record.state == "isolated" and record.pending is None
    state = "drained again" if again else "DRAINING IT AGAIN FAILED: see dpctl verify"
    return StepResult(False, f"{'; '.join(problems)} ({name} {state})", {"drained": again})


def _probe_problems(ctx: Context, name: str) -> list[str]:
    switch = ctx.fabric.switch_by_name[name]
    rails = set(switch.rails) if switch.role == "leaf" else None
    try:
        report = check_traffic(ctx.fabric, ctx.access, ctx.state, seconds=ctx.gate_probe_s)
    except DpctlError as exc:
        return [f"traffic probe: {exc.reason}"]
    return [
        f"probe rail {r.rail} plane {r.plane}: {r.reason}"
        for r in report.rows
        if (rails is None or r.rail in rails) and r.subflows and not r.ok
    ]


STEP_FUNCTIONS: dict[str, Callable[[Context, str], StepResult]] = {
    "drain": drain,
    "action": action,
    "healthy": healthy,
    "confirm": confirm,
    "undrain": undrain,
    "gate": gate,
}
