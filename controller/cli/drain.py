"""`dpctl drain`: take a leaf out of service safely (impact, pre-checks, steps, verify)."""

from __future__ import annotations

from typing import Annotated

import typer

from controller.access import FabricAccess
from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    command_app,
    err,
    fail,
    load_with_state,
    out,
    print_json,
)
from controller.cli.output import drain_lines
from controller.cli.progress import StepStatus
from controller.cli.reach import TargetOpt, fabric_access, target_line, target_summary
from controller.drain import DrainReport
from controller.drain import drain as run_drain
from controller.errors import DpctlError

app = command_app()

HostsFirstOpt = Annotated[
    bool,
    typer.Option(
        "--hosts-first",
        help="Drain: after graceful-shutdown and the hand-off to the pair, the servers behind "
        "the leaf release their ports to it from their bonds (Ansible, as `dpctl hosts`) "
        "before the switch isolates it, so no packet is caught on a port going down; "
        "undrain: they put them back last.",
    ),
]


def print_report(report: DrainReport, as_json: bool, access: FabricAccess) -> None:
    if as_json:
        print_json({**report.to_dict(), "target": target_summary(access)})
        return
    out.print(target_line(access), markup=False, highlight=False)
    if report.forced:
        err.print(f"[bold red]WARNING[/]: draining {report.leaf} against the pre-checks (--force)")
    for line in drain_lines(report):
        out.print(line)


@app.command()
def drain(
    ctx: typer.Context,
    leaf: Annotated[str, typer.Argument(help="The leaf to take out of service.")],
    fabric: FabricOpt = DEFAULT_FABRIC,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Pre-checks and impact only.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Drain although a pre-check refuses.")
    ] = False,
    hosts_first: HostsFirstOpt = False,
    target: TargetOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Drain a leaf: impact report, pre-checks, graceful-shutdown, hand-off, isolate, verify.

    The hand-off (with cross-plane protection): the leaf reaches its own servers through its
    pair, and the drain waits until it does. With --hosts-first the servers then release
    their ports to the leaf from their bonds (Ansible), before the leaf is isolated. Each
    step renders the leaf from the intent it runs (recorded at its last deploy): a drain
    changes only the drain state, never what FILE gained since."""
    try:
        built, state = load_with_state(ctx, fabric)
        access = fabric_access(built, target)
        with StepStatus("drain", not as_json) as status:
            report = run_drain(
                built,
                leaf,
                access,
                state,
                dry_run=dry_run,
                force=force,
                progress=status,
                hosts_first=hosts_first,
            )
    except DpctlError as exc:
        fail(exc, as_json)
    print_report(report, as_json, access)
    if not report.ok:
        raise typer.Exit(code=1)
