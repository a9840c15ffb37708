"""`dpctl accept`: the bring-up acceptance test of a fabric (cabling, links, every cable's
traffic, localisation, RoCE counters); failures first, with what to do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from controller.accept.junit import junit_xml
from controller.accept.result import AcceptReport
from controller.accept.run import accept as run_accept
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
from controller.cli.output import live_enabled, status
from controller.cli.reach import TargetOpt, fabric_access, target_line
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.outputs.report import write_report

app = command_app()

OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Folder for accept.json, the HTML report (failing cables coloured, punch "
        "list beside the picture) and junit.xml.",
    ),
]
JunitOpt = Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")]
MAX_PASS_ROWS = 40


def findings_table(report: AcceptReport) -> Table:
    counts = report.counts()
    title = (
        f"accept {report.fabric}: {counts['fail']} failed, {counts['skip']} skipped, "
        f"{counts['pass']} passed ({report.probes['total']} probes, {report.seconds:.0f} s)"
    )
    table = Table(title=title)
    for col in ("result", "stage", "element", "found", "what to do"):
        table.add_column(col, overflow="fold")
    shown = 0
    for f in report.ordered():
        if f.status == "pass":
            shown += 1
            if shown > MAX_PASS_ROWS:
                continue
        mark = {"fail": "[red]FAIL[/]", "skip": "[yellow]skip[/]", "pass": "[green]ok[/]"}
        table.add_row(mark[f.status], f.stage, f.element, f.what, f.fix)
    if shown > MAX_PASS_ROWS:
        table.add_row("", "", f"... {shown - MAX_PASS_ROWS} more passed", "", "(--json)")
    return table


def punch_table(report: AcceptReport) -> Table:
    table = Table(title="punch list (do in this order)")
    table.add_column("#")
    table.add_column("action")
    table.add_column("what to do", overflow="fold")
    for i, act in enumerate(report.punch_list, 1):
        table.add_row(str(i), str(act["action"]), str(act["text"]))
    return table


def write_outputs(
    report: AcceptReport, built: Fabric, out_dir: Path | None, junit: Path | None
) -> None:
    body = report.to_dict()
    try:
        if junit is not None:
            junit.parent.mkdir(parents=True, exist_ok=True)
            junit.write_bytes(junit_xml(report))
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / "accept.json").write_text(json.dumps(body, indent=2) + "\n")
            (out_dir / "junit.xml").write_bytes(junit_xml(report))
            write_report(built, out_dir, accept_json=out_dir / "accept.json")
    except OSError as exc:
        raise DpctlError("--out/--junit", f"cannot write: {exc}") from None


@app.command()
def accept(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    plane: PlaneOpt = None,
    out_dir: OutOpt = None,
    junit: JunitOpt = None,
    as_json: JsonOpt = False,
    target: TargetOpt = "auto",
) -> None:
    """Acceptance test of a cabled fabric: every cable, port and path against the plan."""
    try:
        built, state = load_with_state(ctx, fabric)
        access = fabric_access(built, target)
        with status(err, f"accept {built.intent.name}...", live_enabled(err, as_json)):
            report = run_accept(built, access, state, plane=plane)
        write_outputs(report, built, out_dir, junit)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(report.to_dict())
    else:
        out.print(target_line(access), markup=False, highlight=False)
        out.print(findings_table(report))
        if report.punch_list:
            out.print(punch_table(report))
    if not report.ok:
        raise typer.Exit(code=1)
