"""A rolling maintenance, wave by wave, under the fabric's lock, resumable.

Within a wave every switch takes each step before any takes the next (all drained, then all
acted on, ...), so a wave's switches are out of service together and for as short a time as
the slowest of them. After each step the rollout's state is saved (``rollout.json``,
``controller.maintain.state``); the first step that fails stops the rollout there, with the
switch drained, and says how to go on (``--resume``) or back (``dpctl rollback``).
"""

from __future__ import annotations

from collections.abc import Callable

from controller.errors import DpctlError
from controller.maintain import state as record
from controller.maintain.state import STEPS, Rollout, RolloutError
from controller.maintain.steps import STEP_FUNCTIONS, Context, StepResult, refusal
from controller.maintain.waves import Wave

Event = Callable[[dict[str, object]], None]
"""Told each step as it starts and ends (the command line's progress and --json events)."""


class MaintainRefused(DpctlError):
    """The rollout cannot start (or resume) as asked; nothing was changed."""


def steps_of(action: str) -> tuple[str, ...]:
    return tuple(s for s in STEPS if s != "confirm" or action == "apply")


def _names(waves: list[Wave]) -> list[str]:
    return [n for w in waves for n in w.switches]


def start(ctx: Context, waves: list[Wave], events: Event | None = None) -> Rollout:
    """A new rollout of ``waves``; refused while another is recorded unfinished."""
    why = refusal(ctx.fabric, ctx.access, ctx.action, _names(waves))
    if why:
        raise MaintainRefused("--action", why)
    with ctx.state.lock(f"maintain {ctx.action}"):
        old = record.load(ctx.state, ctx.fabric)
        if old is not None and old.status != "done":
            raise MaintainRefused(
                str(ctx.state.rollout_path),
                f"a rollout of {old.action} is recorded {old.status} at {_where(old)}: "
                "finish it with --resume (or see --status); nothing was changed",
            )
        rollout = Rollout(ctx.action, waves, ctx.image, ctx.revert_in)
        record.save(ctx.state, rollout)
        return _run(ctx, rollout, events)


def resume(ctx: Context, events: Event | None = None) -> Rollout:
    """Finish the recorded rollout from where it stopped (its own action and options)."""
    with ctx.state.lock("maintain --resume"):
        rollout = record.load(ctx.state, ctx.fabric)
        if rollout is None:
            raise RolloutError(
                str(ctx.state.rollout_path), "no rollout recorded: nothing to resume"
            )
        if rollout.status == "done":
            return rollout
        ctx = Context(
            ctx.fabric,
            ctx.access,
            ctx.state,
            rollout.action,
            rollout.image,
            rollout.revert_in or ctx.revert_in,
            ctx.hosts_first,
            ctx.healthy_s,
            ctx.gate_probe_s,
            ctx.tell,
        )
        rollout.status, rollout.reason = "running", ""
        _reconcile(ctx, rollout)
        record.save(ctx.state, rollout)
        return _run(ctx, rollout, events)


def _reconcile(ctx: Context, rollout: Rollout) -> None:
    """A switch the record says is undrained but not yet gated, that is drained (or has a
    drain step open: a gate that failed drained it again), goes back to before its undrain:
    resume returns it and gates it again. A finished switch is left as the operator has it."""
    book = ctx.state.leaf_states(ctx.fabric)
    before_undrain = "confirm" if rollout.action == "apply" else "healthy"
    for name, last in list(rollout.done_steps.items()):
        drained = name in book and (book[name].state != "none" or book[name].pending)
        if drained and last == "undrain":
            rollout.done_steps[name] = before_undrain


def _where(rollout: Rollout) -> str:
    at = rollout.at
    if not at:
        return "its start"
    return f"wave {at.get('wave')}, {at.get('switch')}, step {at.get('step')}"


def _run(ctx: Context, rollout: Rollout, events: Event | None) -> Rollout:
    tell = events or (lambda _e: None)
    for index, wave in enumerate(rollout.waves, 1):
        for step in steps_of(rollout.action):
            for name in wave.switches:
                if rollout.after(name, step):
                    continue
                rollout.at = {"wave": index, "switch": name, "step": step}
                record.save(ctx.state, rollout)
                tell({"event": "step", "wave": index, "switch": name, "step": step})
                result = _step(ctx, step, name)
                tell({"event": "done", **rollout.at, "ok": result.ok, "detail": result.detail})
                if not result.ok:
                    return _stop(ctx, rollout, name, step, result)
                rollout.done_steps[name] = step
                record.save(ctx.state, rollout)
    rollout.status, rollout.at = "done", {}
    record.save(ctx.state, rollout)
    return rollout


def _step(ctx: Context, step: str, name: str) -> StepResult:
    try:
        return STEP_FUNCTIONS[step](ctx, name)
    except DpctlError as exc:
        return StepResult(False, f"{exc.where}: {exc.reason}")


def _stop(ctx: Context, rollout: Rollout, name: str, step: str, result: StepResult) -> Rollout:
    if step == "gate" and result.data.get("drained"):
        # the switch is out of service again: --resume returns it (undrain) and gates again
        rollout.done_steps[name] = "confirm" if rollout.action == "apply" else "healthy"
    rollout.status = "stopped"
    rollout.reason = (
        f"{name}: {step} failed: {result.detail}. The rollout stopped here with "
        f"{', '.join(rollout.drained()) or 'no switch'} drained. Fix the cause, then "
        f"`dpctl maintain --resume` goes on from this step; or return the switch with "
        f"`dpctl undrain {name}` (an apply: `dpctl rollback --device {name}` first)"
    )
    record.save(ctx.state, rollout)
    return rollout
