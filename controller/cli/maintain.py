"""`dpctl maintain`: plane-aware rolling maintenance (docs/maintain.md).

Output: a table for people; ``--json`` prints one report at the end (the plan, the status or
the rollout); ``--json --events`` prints one JSON object per line as each step starts and
ends, then the report as the last line. Exit codes: 0 done (or the plan/status printed, no
rollout unfinished), 1 a step failed (the rollout stopped; --status names where and what is
drained), 2 bad input or refused (nothing was changed).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import typer
from rich.table import Table

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    PlaneOpt,
    command_app,
    err,
    fail,
    load_with_state,
    out,
    print_json,
)
from controller.cli.output import live_enabled
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.maintain import state as record
from controller.maintain.waves import DEFAULT_MAX_WAVE, Wave, WaveError, fit_budget, plan_waves

app = command_app()

ActionOpt = Annotated[
    str | None,
    typer.Option(
        "--action", help="restart-routing | reboot | apply | upgrade (upgrade needs --image)."
    ),
]


def _plan(
    fabric: Fabric,
    action: str,
    plane: int | None,
    role: str | None,
    max_wave: int,
    budget: float | None,
    workload: str,
) -> tuple[list[Wave], Any]:
    """The waves (split to the budget when one is given) and the impact model."""
    from controller.maintain.impact import ImpactModel
    from controller.simulate.traffic import WORKLOADS

    if workload not in WORKLOADS:  # checked even when nothing is simulated
        raise WaveError("--workload", f"unknown workload {workload!r}: one of {WORKLOADS}")
    spines = max_wave if budget is not None else 1
    waves = plan_waves(fabric, action, plane, role, max_wave, spines)  # type: ignore[arg-type]
    model = ImpactModel(fabric, workload)
    if budget is not None:
        waves = fit_budget(waves, model.loss, budget)
    return waves, model


def _plan_report(fabric: Fabric, waves: list[Wave], model: Any, started: float) -> dict[str, Any]:
    rows = [
        {"wave": i, **w.to_dict(), "impact": model.predict(w).to_dict()}
        for i, w in enumerate(waves, 1)
    ]
    return {
        "fabric": fabric.intent.name,
        "workload": model.workload,
        "seconds": round(time.perf_counter() - started, 3),
        "simulator_runs": model.runs,
        "waves": rows,
    }


def _print_plan(report: dict[str, Any]) -> None:
    table = Table(title=f"maintain plan: {report['fabric']} ({report['workload']})")
    for col in ("wave", "plane", "role", "switches", "ratio", "capacity loss", "AUX ratio"):
        table.add_column(col)
    for w in report["waves"]:
        imp = w["impact"]
        names = w["switches"]
        shown = ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:3])} +{len(names) - 3}"
        table.add_row(
            str(w["wave"]),
            str(w["plane"]),
            w["role"],
            shown,
            f"{imp['completion_time_ratio']:.2f}",
            f"{imp['capacity_loss']:.0%}",
            f"{imp['aux_ratio']:.2f}",
        )
    out.print(table)
    out.print(
        f"{len(report['waves'])} waves, {report['simulator_runs']} simulator runs, "
        f"{report['seconds']:.2f} s; ratio: completion time with the wave drained (leaves "
        "--hosts-first); AUX ratio: if remote senders kept the drained plane (docs/maintain.md)"
    )


def _print_status(rollout: record.Rollout | None, drained: list[str]) -> None:
    if rollout is None:
        out.print("no rollout recorded")
        return
    total = sum(len(w.switches) for w in rollout.waves)
    finished = sum(rollout.finished(n) for w in rollout.waves for n in w.switches)
    out.print(
        f"rollout {rollout.action}: {rollout.status}, {finished}/{total} switches done, "
        f"{len(rollout.waves)} waves (started {rollout.started}, updated {rollout.updated})"
    )
    if rollout.at:
        at = rollout.at
        out.print(f"at: wave {at['wave']}, {at['switch']}, step {at['step']}")
    if drained:
        out.print(f"[bold yellow]drained[/]: {', '.join(drained)}")
    if rollout.reason:
        out.print(rollout.reason, markup=False, highlight=False)


class Progress:
    """Events to stdout (``--json --events``) or a live status line on a terminal."""

    def __init__(self, events: bool, live: bool) -> None:
        self.events = events
        self.started = time.monotonic()
        self._status = err.status("maintain...") if live else None

    def __enter__(self) -> Progress:
        if self._status:
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status:
            self._status.__exit__(None, None, None)

    def __call__(self, event: dict[str, object]) -> None:
        elapsed = round(time.monotonic() - self.started, 1)
        if self.events:
            sys.stdout.write(json.dumps({**event, "elapsed_s": elapsed}) + "\n")
            sys.stdout.flush()
        elif self._status and event["event"] == "step":
            self._status.update(
                f"wave {event['wave']} {event['switch']}: {event['step']} ({elapsed:.0f} s)"
            )

    def tell(self, switch: str, step: str) -> None:
        """A drain/undrain's own steps, on the status line."""
        if self._status:
            elapsed = time.monotonic() - self.started
            self._status.update(f"{switch}: {step} ({elapsed:.0f} s)")


RoleOpt = Annotated[str | None, typer.Option("--role", help="leaf | spine only.")]
PlanOpt = Annotated[bool, typer.Option("--plan", help="Print the waves; change nothing.")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Finish the recorded rollout.")]
StatusOpt = Annotated[bool, typer.Option("--status", help="Where the rollout is.")]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--max-capacity-loss",
        min=0,
        max=100,
        help="Percent: split waves whose predicted loss is higher; refuse a switch alone over.",
    ),
]
MaxWaveOpt = Annotated[int, typer.Option("--max-wave", min=1, help="Switches per wave at most.")]
WorkloadOpt = Annotated[
    str, typer.Option("--workload", help="The simulator's workload for the impact.")
]
ImageOpt = Annotated[str | None, typer.Option("--image", help="upgrade: the image URL.")]
ConfirmOpt = Annotated[
    int, typer.Option("--confirm-timeout", min=30, help="apply: seconds before a switch reverts.")
]
HealthyOpt = Annotated[
    float, typer.Option("--healthy-timeout", min=10, help="Seconds a switch may take.")
]
EventsOpt = Annotated[bool, typer.Option("--events", help="With --json: one JSON object per step.")]
TargetOpt = Annotated[str, typer.Option("--target", help="As dpctl deploy's.")]


@app.command()
def maintain(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    action: ActionOpt = None,
    plane: PlaneOpt = None,
    role: RoleOpt = None,
    plan: PlanOpt = False,
    resume: ResumeOpt = False,
    status: StatusOpt = False,
    max_capacity_loss: BudgetOpt = None,
    max_wave: MaxWaveOpt = DEFAULT_MAX_WAVE,
    workload: WorkloadOpt = "ring",
    image: ImageOpt = None,
    confirm_timeout: ConfirmOpt = 600,
    healthy_timeout: HealthyOpt = 240.0,
    events: EventsOpt = False,
    target: TargetOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Restart, reboot, re-apply or upgrade every selected switch, wave by wave."""
    try:
        built, state = load_with_state(ctx, fabric)
        if status:
            _status(built, state, as_json)
            return
        if not resume:
            _check_action(action, image)
        budget = None if max_capacity_loss is None else max_capacity_loss / 100
        if plan:
            started = time.perf_counter()
            waves, model = _plan(built, str(action), plane, role, max_wave, budget, workload)
            report = _plan_report(built, waves, model, started)
            print_json(report) if as_json else _print_plan(report)
            return
        rollout = _execute(
            built,
            state,
            target,
            resume,
            str(action),
            image,
            (plane, role, max_wave, budget),
            (confirm_timeout, healthy_timeout, workload),
            as_json,
            events,
        )
    except DpctlError as exc:
        fail(exc, as_json)
    _finish(rollout, state, built, as_json)


def _check_action(action: str | None, image: str | None) -> None:
    from controller.maintain.waves import ACTIONS, check_image

    if action not in ACTIONS:
        raise WaveError("--action", f"one of {', '.join(ACTIONS)} is needed, not {action!r}")
    if action == "upgrade" and not image:
        raise WaveError("--image", "upgrade needs the image's URL")
    if action != "upgrade" and image:
        raise WaveError("--image", f"only upgrade takes an image, not {action}")
    if image:
        check_image(image)


def _status(built: Fabric, state: Any, as_json: bool) -> None:
    rollout = record.load(state, built)
    drained = sorted(state.leaf_states(built))
    if as_json:
        print_json({"rollout": rollout.to_dict() if rollout else None, "drained": drained})
    else:
        _print_status(rollout, drained)
    if rollout is not None and rollout.status != "done":
        raise typer.Exit(code=1)


def _execute(
    built: Fabric,
    state: Any,
    target: str,
    resume: bool,
    action: str,
    image: str | None,
    selection: tuple[int | None, str | None, int, float | None],
    timing: tuple[int, float, str],
    as_json: bool,
    events: bool,
) -> record.Rollout:
    from controller.cli.reach import fabric_access
    from controller.maintain.rollout import resume as resume_rollout
    from controller.maintain.rollout import start
    from controller.maintain.steps import Context

    plane, role, max_wave, budget = selection
    confirm_timeout, healthy_timeout, workload = timing
    waves: list[Wave] = []
    if not resume:  # the waves (and the budget's refusal) before anything is touched
        waves, _model = _plan(built, action, plane, role, max_wave, budget, workload)
    access = fabric_access(built, target)
    with Progress(events and as_json, live_enabled(err, as_json)) as progress:
        context = Context(
            built,
            access,
            state,
            action,
            image,
            confirm_timeout,
            True,
            healthy_timeout,
            tell=progress.tell,
        )
        if resume:
            return resume_rollout(context, progress)
        return start(context, waves, progress)


def _finish(rollout: record.Rollout, state: Any, built: Fabric, as_json: bool) -> None:
    if as_json:
        print(json.dumps(rollout.to_dict(), sort_keys=True))
    else:
        _print_status(rollout, sorted(state.leaf_states(built)))
    if rollout.status != "done":
        raise typer.Exit(code=1)
