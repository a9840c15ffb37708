"""`dpctl deploy`: push the rendered configs (replace), post-check, roll back a failing switch."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    PlaneOpt,
    command_app,
    fail,
    load_with_state,
    out,
    print_json,
)
from controller.cli.progress import SwitchProgress
from controller.cli.reach import (
    CommandTimeoutOpt,
    ConnectTimeoutOpt,
    TargetOpt,
    WorkersOpt,
    fabric_access,
    target_line,
    target_summary,
)
from controller.connection import limits
from controller.deploy import DeviceOutcome
from controller.deploy import deploy as run_deploy
from controller.errors import DpctlError

app = command_app()


def outcome_table(title: str, outcomes: dict[str, DeviceOutcome]) -> Table:
    table = Table(title=title)
    for col in ("device", "result", "changed", "seconds", "detail"):
        table.add_column(col)
    for name, o in outcomes.items():
        result = (
            "[green]ok[/]"
            if o.ok
            else ("[yellow]rolled back[/]" if o.rolled_back else "[red]failed[/]")
        )
        detail = o.error or (o.backup and f"backup {o.backup}") or ""
        table.add_row(name, result, "yes" if o.changed else "no", f"{o.seconds:.1f}", detail)
    return table


def _print(title: str, outcomes: dict[str, DeviceOutcome], show_diff: bool) -> None:
    out.print(outcome_table(title, outcomes))
    if show_diff:
        for name, o in outcomes.items():
            if o.diff:
                out.print(f"[bold]--- {name}[/]")
                out.print(o.diff, markup=False, highlight=False)


@app.command()
def deploy(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    plane: PlaneOpt = None,
    device: Annotated[str | None, typer.Option("--device", "-d", help="Only this switch.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
    ] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Print each device's diff.")] = False,
    target: TargetOpt = "auto",
    workers: WorkersOpt = None,
    connect_timeout: ConnectTimeoutOpt = None,
    command_timeout: CommandTimeoutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Push the rendered configs (replace), post-check each switch, roll back a failing one."""
    label = "deploy" + (" (dry run)" if dry_run else "")
    try:
        reach = limits(workers, connect_timeout, command_timeout)
        built, state = load_with_state(ctx, fabric)
        access = fabric_access(built, target)
        count = len(built.switches_in(plane=plane)) if device is None else 1
        with SwitchProgress(count, label, not as_json) as bar:
            outcomes = run_deploy(
                built,
                access,
                state,
                plane=plane,
                device=device,
                dry_run=dry_run,
                processors=[bar],
                reach=reach,
            )
    except DpctlError as exc:
        fail(exc, as_json)
    failed = [n for n, o in outcomes.items() if not o.ok]
    if as_json:
        devices = {
            n: {k: v for k, v in o.to_dict().items() if diff or dry_run or k != "diff"}
            for n, o in outcomes.items()
        }
        print_json(
            {
                "ok": not failed,
                "dry_run": dry_run,
                "target": target_summary(access),
                "devices": devices,
            }
        )
    else:
        title = f"deploy {built.intent.name}" + (" (dry run)" if dry_run else "")
        out.print(target_line(access), markup=False, highlight=False)
        _print(title, outcomes, diff or dry_run)
    if failed:
        raise typer.Exit(code=1)
