"""`dpctl undrain`: return a drained leaf to service (host ports held down until BGP is up)."""

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
)
from controller.cli.drain import print_report
from controller.cli.progress import StepStatus
from controller.cli.reach import TargetOpt, fabric_access
from controller.drain import undrain as run_undrain
from controller.errors import DpctlError

app = command_app()

HostsLastOpt = Annotated[
    bool,
    typer.Option(
        "--hosts-first",
        help="The servers behind the leaf put their ports to it back into their bonds "
        "(Ansible, as `dpctl hosts`) once the leaf's own steps are done, before the verify "
        "(the counterpart of drain --hosts-first).",
    ),
]


@app.command()
def undrain(
    ctx: typer.Context,
    leaf: Annotated[str, typer.Argument(help="The drained leaf to return to service.")],
    fabric: FabricOpt = DEFAULT_FABRIC,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan only.")] = False,
    hosts_first: HostsLastOpt = False,
    target: TargetOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Return a leaf to service: policy back, host ports held down until BGP is up, verify.

    With --hosts-first the servers bring their ports to the leaf back into their bonds
    (Ansible) once the leaf's own steps are done, before the verify."""
    try:
        built, state = load_with_state(ctx, fabric)
        access = fabric_access(built, target)
        with StepStatus("undrain", not as_json) as status:
            report = run_undrain(
                built,
                leaf,
                access,
                state,
                dry_run=dry_run,
                progress=status,
                hosts_first=hosts_first,
            )
    except DpctlError as exc:
        fail(exc, as_json)
    print_report(report, as_json, access)
    if not report.ok:
        raise typer.Exit(code=1)
