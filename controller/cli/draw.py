"""`dpctl draw`: just the fabric picture (SVG)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    command_app,
    fail,
    load_fabric,
    out,
    print_json,
)
from controller.cli.report import SimulateOpt, StateOpt
from controller.errors import DpctlError
from controller.outputs.report import write_svg

app = command_app()


@app.command()
def draw(
    fabric: FabricOpt = DEFAULT_FABRIC,
    out_file: Annotated[Path, typer.Option("--out", "-o", help="The SVG file to write.")] = Path(
        "fabric.svg"
    ),
    verify_json: StateOpt = None,
    simulate_json: SimulateOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write just the fabric picture (SVG)."""
    try:
        summary = write_svg(load_fabric(fabric), out_file, verify_json, simulate_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, **summary})
        return
    out.print(
        f"[green]drawn[/] {summary['svg']} ({summary['boxes']} boxes, {summary['bundles']} bundles)"
    )
