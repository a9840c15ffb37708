"""`dpctl verify`: the live fabric against the intent, optionally with probe traffic."""

from __future__ import annotations

from typing import Annotated, Any

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
from controller.cli.output import verify_summary
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
from controller.errors import DpctlError
from controller.maintain.state import unfinished_check
from controller.traffic import TrafficReport, check_traffic, validate
from controller.verify import verify as run_verify

app = command_app()

TrafficOpt = Annotated[
    bool,
    typer.Option(
        "--traffic",
        help="Also send sequence-numbered probe flows between servers on every rail in both "
        "planes (lab: server namespaces; real fabric: Ansible on the servers); fails on any "
        "loss or duplicate.",
    ),
]
SecondsOpt = Annotated[float, typer.Option("--seconds", help="Probe duration (--traffic).")]


def traffic_table(report: TrafficReport) -> Table:
    table = Table(title=f"traffic {report.fabric} ({report.runner}, {report.seconds:g} s/flow)")
    for col in ("rail", "plane", "sub-flows", "sent", "lost", "dup", "reord", "gap ms", "result"):
        table.add_column(col)
    for r in report.rows:
        result = "[green]ok[/]" if r.ok else f"[red]FAIL[/] {r.reason}"
        cells = (r.rail, r.plane, r.subflows, r.sent, r.lost, r.duplicates, r.reordered)
        table.add_row(*(str(c) for c in cells), f"{r.max_gap_ms:g}", result)
    return table


@app.command()
def verify(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    plane: PlaneOpt = None,
    as_json: JsonOpt = False,
    traffic: TrafficOpt = False,
    seconds: SecondsOpt = 3.0,
    target: TargetOpt = "auto",
    workers: WorkersOpt = None,
    connect_timeout: ConnectTimeoutOpt = None,
    command_timeout: CommandTimeoutOpt = None,
) -> None:
    """Check the live fabric against the intent: BGP, LLDP, routes, EVPN ES, RoCE, drain state."""
    try:
        if traffic:
            validate(seconds)  # a bad option fails before anything runs
        reach = limits(workers, connect_timeout, command_timeout)
        built, state = load_with_state(ctx, fabric)
        access = fabric_access(built, target)
        with SwitchProgress(len(built.switches_in(plane=plane)), "verify", not as_json) as bar:
            checks = run_verify(built, access, state, plane=plane, processors=[bar], reach=reach)
        rollout = unfinished_check(state, built)  # a stopped `dpctl maintain` is named
        checks += [rollout] if rollout else []
        report = check_traffic(built, access, state, seconds=seconds) if traffic else None
    except DpctlError as exc:
        fail(exc, as_json)
    ok = all(c.ok for c in checks) and (report is None or report.ok)
    if as_json:
        body: dict[str, Any] = {
            "ok": ok,
            "target": target_summary(access),
            "checks": [c.to_dict() for c in checks],
        }
        if report is not None:
            body["traffic"] = report.to_dict()
        print_json(body)
    else:
        title = f"verify {built.intent.name}" + (f" plane {plane}" if plane else "")
        out.print(target_line(access), markup=False, highlight=False)
        out.print(verify_summary(checks, title))
        if report is not None:
            out.print(traffic_table(report))
    if not ok:
        raise typer.Exit(code=1)
