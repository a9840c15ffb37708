"""`dpctl report`: one self-contained HTML page (picture, BOM, cabling sheets, sizing)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    command_app,
    err,
    fail,
    load_fabric,
    out,
    print_json,
)
from controller.cli.output import live_enabled, status
from controller.errors import DpctlError
from controller.outputs.report import write_report

app = command_app()

StateOpt = Annotated[
    Path | None,
    typer.Option("--verify", help="JSON of `dpctl verify --json`: live state on the picture."),
]
SimulateOpt = Annotated[
    Path | None,
    typer.Option(
        "--simulate",
        help="File of `dpctl simulate --links-out`: bundles coloured by load.",
    ),
]
AcceptOpt = Annotated[
    Path | None,
    typer.Option(
        "--accept",
        help="JSON of `dpctl accept --json`: failing cables on the picture, the punch list.",
    ),
]


@app.command()
def report(
    fabric: FabricOpt = DEFAULT_FABRIC,
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Output folder for report.html and fabric.svg.")
    ] = Path("report"),
    verify_json: StateOpt = None,
    simulate_json: SimulateOpt = None,
    accept_json: AcceptOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One self-contained HTML page: picture, bill of materials, cabling sheets, sizing."""
    try:
        with status(err, f"writing the report of {fabric}...", live_enabled(err, as_json)):
            summary = write_report(
                load_fabric(fabric), out_dir, verify_json, simulate_json, accept_json
            )
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, **summary})
        return
    out.print(
        f"[green]report[/] {summary['report']} ({summary['bytes'] / 1024:,.0f} KiB; "
        f"{summary['cables']:,} cables in {summary['bundles']} bundles) and {summary['svg']}"
    )
