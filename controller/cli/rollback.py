"""`dpctl rollback`: restore a switch's configuration saved by deploy before its last commit."""

from __future__ import annotations

from typing import Annotated

import typer

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    command_app,
    fail,
    load_with_state,
    out,
    print_json,
)
from controller.cli.reach import TargetOpt, fabric_access, target_line, target_summary
from controller.errors import DpctlError
from controller.rollback import rollback_device

app = command_app()


@app.command()
def rollback(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    device: Annotated[str, typer.Option("--device", "-d", help="The switch to restore.")] = "",
    target: TargetOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Restore a switch's configuration saved (by deploy) before its last commit."""
    try:
        if not device:
            raise DpctlError("--device", "name the switch to roll back")
        built, state = load_with_state(ctx, fabric)
        access = fabric_access(built, target)
        outcome = rollback_device(built, access, state, device)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(
            {
                "ok": outcome.ok,
                "device": device,
                "target": target_summary(access),
                **outcome.to_dict(),
            }
        )
    else:
        out.print(target_line(access), markup=False, highlight=False)
        out.print(
            f"[green]rolled back[/] {device} to {outcome.backup}"
            if outcome.ok
            else f"[red]failed[/] {device}: {outcome.error}"
        )
    if not outcome.ok:
        raise typer.Exit(code=1)
