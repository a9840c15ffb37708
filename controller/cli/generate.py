"""`dpctl generate`: the Nornir inventory, cabling plan, bill of materials and fabric facts."""

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
from controller.errors import DpctlError
from controller.outputs.generate import generate as write_outputs

app = command_app()


@app.command()
def generate(
    fabric: FabricOpt = DEFAULT_FABRIC,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Output folder (default: inventory/generated/<fabric name>)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Generate the Nornir inventory, cabling plan, bill of materials and fabric facts."""
    try:
        built = load_fabric(fabric)
        target = out_dir or Path("inventory/generated") / built.intent.name
        written = write_outputs(built, target)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(
            {
                "ok": True,
                "fabric": built.intent.name,
                "out": str(target),
                "files": [str(p) for p in written],
                "switches": len(built.switches),
                "servers": len(built.servers),
                "cables": len(built.links),
            }
        )
        return
    out.print(
        f"[green]generated[/] {built.intent.name}: {len(built.switches)} switches, "
        f"{len(built.servers)} servers, {len(built.links):,} cables -> {target}/"
    )
    for path in written:
        out.print(f"  {path}")
