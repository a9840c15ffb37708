"""`dpctl plan`: sizing by the rail rules (a model and a GPU count, a model's whole table, or
an intent with its bill of materials)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from controller.cli.common import JsonOpt, command_app, fail, load_fabric, out, print_json
from controller.errors import DpctlError
from controller.outputs.bom import bill_of_materials
from controller.sizing import Sizing, servers_from_gpus, size_fabric, sizing_table

app = command_app()

PLAN_COLUMNS = (
    ("gpus", "GPUs"),
    ("servers", "Servers"),
    ("leaves", "Leaves"),
    ("spines", "Spines"),
    ("links_per_leaf_spine_pair", "Links/pair"),
    ("groups", "Groups"),
    ("rails_per_leaf", "Rails/leaf"),
    ("leaves_per_plane", "Leaves/plane"),
    ("spines_per_plane", "Spines/plane"),
    ("spare_ports_per_spine", "Spare/spine"),
)


def plan_table(rows: list[Sizing], title: str) -> Table:
    table = Table(
        title=title,
        caption="Leaves and spines count both planes; Links/pair is "
        "leaf-spine links per pair (uplink speed).",
    )
    for _, header in PLAN_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        data = row.to_dict()
        table.add_row(
            *(
                f"{data[key]:,}" if isinstance(data[key], int) else str(data[key])
                for key, _ in PLAN_COLUMNS
            )
        )
    return table


def bom_table(bom: list[dict[str, Any]]) -> Table:
    table = Table(title="Bill of materials")
    for col in ("Category", "Item", "Count"):
        table.add_column(col, justify="right" if col == "Count" else "left")
    for line in bom:
        table.add_row(str(line["category"]), str(line["item"]), f"{line['count']:,}")
    return table


def _sizing(
    model: str | None, gpus: int | None, gpus_per_server: int, table: bool, fabric: Path | None
) -> tuple[list[Sizing], str, list[dict[str, Any]]]:
    """The rows to show, their title and (for an intent) its bill of materials."""
    if fabric is not None:
        built = load_fabric(fabric)
        title = (
            f"{built.intent.name}: {built.sizing.leaf_model} leaves, "
            f"{built.sizing.spine_model} spines"
        )
        bom = [
            {"category": b.category, "item": b.item, "count": b.count}
            for b in bill_of_materials(built)
        ]
        return [built.sizing], title, bom
    if model is None:
        raise DpctlError("--model", "give --model (with --gpus or --table) or --fabric")
    if table:
        return sizing_table(model, gpus_per_server), f"{model} dual-plane sizing", []
    if gpus is None:
        raise DpctlError("--gpus", "give the cluster size with --gpus N (or --table)")
    servers = servers_from_gpus(gpus, gpus_per_server, "--gpus")
    rows = [size_fabric(model, model, servers, gpus_per_server, "--gpus")]
    return rows, f"{model} dual-plane fabric", []


@app.command()
def plan(
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Switch model for leaves and spines.")
    ] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="Total GPUs in the cluster.")] = None,
    gpus_per_server: Annotated[
        int, typer.Option("--gpus-per-server", help="GPUs (rails) per server.")
    ] = 8,
    table: Annotated[bool, typer.Option("--table", help="The model's whole sizing table.")] = False,
    fabric: Annotated[
        Path | None, typer.Option("--fabric", "-f", help="Size this intent file instead.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Size a dual-plane fabric by the rail rules (leaves, spines, links per leaf-spine pair)."""
    try:
        rows, title, bom = _sizing(model, gpus, gpus_per_server, table, fabric)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        if table:
            print_json({"model": model, "rows": [r.to_dict() for r in rows]})
        else:
            print_json({**rows[0].to_dict(), **({"bom": bom} if fabric else {})})
        return
    out.print(plan_table(rows, title))
    if bom:
        out.print(bom_table(bom))
