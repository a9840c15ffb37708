"""`dpctl render`: every selected switch's configuration files, checked, all or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    PlaneOpt,
    command_app,
    fail,
    load_fabric,
    out,
    print_json,
)
from controller.errors import DpctlError
from controller.outputs import writer
from controller.render.engine import as_files, render_checked

app = command_app()

LINES = "asternos-syntax"
"""The AsterNOS check whose counts `render` shows (lines documented / unverified)."""


def print_asternos_provenance(checked: Mapping[str, Mapping[str, int]]) -> None:
    """Per AsterNOS switch: how many rendered lines use a form no vendor document shows."""
    if not checked:
        return
    out.print("AsterNOS lines by provenance (docs/platforms/asternos.md):")
    for name, r in checked.items():
        out.print(
            f"  {name}: {r['lines']} lines, {r['documented']} documented, "
            f"[yellow]{r['unverified']} unverified[/]"
        )


@app.command()
def render(
    fabric: FabricOpt = DEFAULT_FABRIC,
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Output folder: one sub-folder per device.")
    ] = Path("inventory/rendered"),
    plane: PlaneOpt = None,
    device: Annotated[str | None, typer.Option("--device", "-d", help="Only this switch.")] = None,
    validate: Annotated[
        bool,
        typer.Option(
            "--validate/--no-validate",
            help="Check platform sonic's config_db.json against SONiC's YANG models.",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Render every selected switch's configuration files (deterministic, all or nothing)."""
    try:
        built = load_fabric(fabric)
        result = render_checked(built, plane=plane, device=device, validate=validate)
        written = writer.write_all(out_dir, as_files(result.files))
    except DpctlError as exc:
        fail(exc, as_json)
    provenance = {n: r[LINES] for n, r in result.reports.items() if LINES in r}
    if as_json:
        print_json(
            {
                "ok": True,
                "fabric": built.intent.name,
                "out": str(out_dir),
                "devices": {name: sorted(files) for name, files in result.files.items()},
                "asternos_lines": {n: {**c, "errors": []} for n, c in provenance.items()},
            }
        )
        return
    out.print(
        f"[green]rendered[/] {len(result.files)} switches of {built.intent.name} "
        f"({built.intent.platform}) -> {out_dir}/ ({len(written)} files)"
    )
    print_asternos_provenance(provenance)
