"""`dpctl lab`: the embedded virtual lab of a fabric (up, status, logs, down) and its
containerlab topology (export)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from controller import clab
from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    command_app,
    err,
    fail,
    load_fabric,
    load_with_state,
    out,
    print_json,
)
from controller.cli.output import lab_down_text, live_enabled, status
from controller.cli.progress import StepStatus
from controller.errors import DpctlError
from controller.intent import load_intent
from controller.lab import LabError, LabSession, down, impair
from controller.lab import status as lab_status_report
from controller.lab.fabric import bring_up, lab_dir, lab_prefix

app = command_app(
    help="The embedded virtual lab and containerlab topologies.", no_args_is_help=True
)

LabDirOpt = Annotated[
    Path | None, typer.Option("--state-dir", help="Lab state folder (default: .lab/<fabric name>).")
]


def _up(
    fabric: Path,
    state_dir: Path | None,
    bare: bool,
    runtime: str,
    quiet: bool,
    guests: int | None = None,
) -> Any:
    built = load_fabric(fabric)
    if runtime == "containerlab":
        made = clab.export(built, clab.default_path(built))
        return built, {"runtime": runtime, "output": clab.deploy(made.topology)}
    if runtime != "embedded":
        raise DpctlError("--runtime", f"unknown runtime {runtime!r}: embedded or containerlab")
    with StepStatus("lab up", not quiet) as phase:
        result = bring_up(
            built,
            state_dir or lab_dir(built.intent.name),
            bare_servers=bare,
            progress=lambda step: phase(built.intent.name, step),
            guests=guests,
        )
    return built, result


@app.command("up")
def lab_up(
    fabric: FabricOpt = DEFAULT_FABRIC,
    state_dir: LabDirOpt = None,
    bare_servers: Annotated[
        bool,
        typer.Option("--bare-servers", help="Servers get only their ports, management and SSH."),
    ] = False,
    runtime: Annotated[
        str,
        typer.Option(
            "--runtime",
            help="embedded (namespaces + FRR, in a guest machine if needed) or containerlab.",
        ),
    ] = "embedded",
    guests: Annotated[
        int | None,
        typer.Option(
            "--guests",
            min=1,
            max=2,
            help="User-Mode Linux instances: 2 puts each plane on its own (one CPU each); "
            "default DPCTL_LAB_GUESTS or 1.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build the fabric's lab: switches at factory state (empty FRR), servers with their NICs."""
    try:
        built, result = _up(fabric, state_dir, bare_servers, runtime, as_json, guests)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, **result})
        return
    timings = result.get("timings", {})
    kernel = f", Linux {result['kernel']}" if result.get("kernel") else ""
    out.print(
        f"[green]lab up[/] {built.intent.name} ({result.get('mode', runtime)}{kernel}) in "
        f"{timings.get('up_s', '?')} s; servers: {len(result.get('servers', {}))} provisioned"
    )
    if result.get("substrate"):
        out.print(f"  substrate {result['substrate']}: {result.get('substrate_reason', '')}")
    for control in sorted({str(v) for v in result.get("servers", {}).values()} - {"provisioned"}):
        out.print(f"  servers: {control}")


def _status(ctx: typer.Context, fabric: Path, state_dir: Path | None) -> tuple[str, dict[str, Any]]:
    built, state = load_with_state(ctx, fabric)
    try:
        report = lab_status_report(state_dir or lab_dir(built.intent.name))
    except LabError as exc:
        raise DpctlError("lab", str(exc)) from None
    book = state.leaf_states(built)
    report["impaired"] = impair.load(state_dir or lab_dir(built.intent.name)).describe()
    for node, info in report["nodes"].items():
        info["maintenance"] = book[node].state if node in book else "none"
        info["maintenance_pending"] = book[node].pending if node in book else None
    return built.intent.name, report


def status_table(name: str, report: dict[str, Any]) -> Table:
    machine = str(report.get("substrate") or report.get("mode"))
    instances = len(report.get("instances", [])) or 1
    if instances > 1:  # a split lab (lab up --guests 2): each plane in its own instance
        machine += f", {instances} instances, plane 2's switches in the second"
    table = Table(title=f"lab {name} ({machine})")
    for col in ("node", "role", "plane", "running", "state", "ssh"):
        table.add_column(col)
    for node, info in report["nodes"].items():
        state = (
            "in service" if info["maintenance"] == "none" else f"drained ({info['maintenance']})"
        )
        if info["maintenance_pending"]:
            state += f", [yellow]step to {info['maintenance_pending']} in progress[/]"
        running = "[green]yes[/]" if info["running"] else "[red]no[/]"
        table.add_row(node, info["role"], str(info["plane"] or "-"), running, state, info["ssh"])
    return table


@app.command("status")
def lab_status(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    state_dir: LabDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show every lab node: role, plane, running, drain state, SSH address."""
    try:
        name, report = _status(ctx, fabric, state_dir)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(report)
        return
    out.print(status_table(name, report))
    for line in report["impaired"]:
        out.print(f"[yellow]impaired[/] {line}")


def _impair_kind(
    down: bool, loss: float | None, delay: float | None, mtu: int | None
) -> tuple[str, float]:
    given = [(k, v) for k, v in (("loss", loss), ("delay", delay), ("mtu", mtu)) if v is not None]
    given += [("down", 0.0)] if down else []
    if len(given) != 1:
        raise DpctlError(
            "options", "give exactly one of --down, --loss, --delay, --mtu, --swap, --clear"
        )
    return given[0][0], float(given[0][1] or 0.0)


@app.command("impair")
def lab_impair(
    cables: Annotated[
        list[str] | None, typer.Argument(help="Cable ends, device:port as in cabling.csv.")
    ] = None,
    fabric: FabricOpt = DEFAULT_FABRIC,
    state_dir: LabDirOpt = None,
    down_: Annotated[bool, typer.Option("--down", help="Take the port down.")] = False,
    loss: Annotated[float | None, typer.Option("--loss", help="Lose PCT % (netem).")] = None,
    one_way: Annotated[
        bool, typer.Option("--one-way", help="--loss/--delay on this end's egress only.")
    ] = False,
    delay: Annotated[float | None, typer.Option("--delay", help="Delay MS (netem).")] = None,
    mtu: Annotated[int | None, typer.Option("--mtu", help="Set the port's MTU.")] = None,
    swap: Annotated[
        bool, typer.Option("--swap", help="Exchange the cables in the two CABLE ends given.")
    ] = False,
    clear: Annotated[bool, typer.Option("--clear", help="Put everything back as planned.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Inject a fault into the running lab (like containerlab's tools netem): a port down,
    loss or delay on a cable (both ways, or --one-way), an MTU, two cables swapped; --clear
    undoes all. `dpctl lab status` lists what is impaired."""
    ends = cables or []
    try:
        built = load_fabric(fabric)
        sdir = state_dir or lab_dir(built.intent.name)
        before = impair.load(sdir).describe()
        if clear:
            lines = impair.clear(built, sdir)
        elif swap:
            if len(ends) != 2:
                raise DpctlError("--swap", f"needs two CABLE ends, got {len(ends)}")
            swapped = impair.swap(built, sdir, ends[0], ends[1])
            lines = swapped.describe() + swapped.unsettled
        else:
            if not ends:
                raise DpctlError("CABLE", "name at least one cable end (device:port)")
            kind, value = _impair_kind(down_, loss, delay, mtu)
            lines = impair.impair(built, sdir, ends, kind, value, one_way).describe()
    except LabError as exc:
        fail(DpctlError("lab impair", str(exc)), as_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if not clear:
        lines = [line for line in lines if line not in before]  # what this call added
    if as_json:
        print_json({"ok": True, "cleared" if clear else "impaired": lines})
        return
    for line in lines:
        out.print(f"{'cleared' if clear else 'impaired'} {line}", markup=False, highlight=False)


@app.command("logs")
def lab_logs(
    fabric: FabricOpt = DEFAULT_FABRIC,
    state_dir: LabDirOpt = None,
    node: Annotated[
        str | None, typer.Option("--node", help="Only this lab node's messages.")
    ] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", help="Last N messages.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Show the lab's syslog: what the switches' FRR, lldpd and ARP-to-host agents logged,
    tagged by node."""
    try:
        name = load_intent(fabric).name
        with LabSession.open(state_dir or lab_dir(name)) as session:
            found = session.syslog(node, lines)
    except LabError as exc:
        fail(DpctlError("lab", str(exc)), as_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, "messages": found})
        return
    for entry in found:
        stamp = time.strftime("%H:%M:%S", time.gmtime(entry["time"]))
        out.print(
            f"{stamp} {entry['node']:<16} {entry['severity']:<7} {entry['message']}",
            markup=False,
            highlight=False,
        )


@app.command("down")
def lab_down(
    fabric: FabricOpt = DEFAULT_FABRIC, state_dir: LabDirOpt = None, as_json: JsonOpt = False
) -> None:
    """Remove everything the lab made (also after a crash): guest, namespaces, processes."""
    try:
        name = load_intent(fabric).name
        with status(err, f"taking lab {name} down...", live_enabled(err, as_json)):
            report = down(state_dir or lab_dir(name), prefix=lab_prefix())
    except LabError as exc:
        fail(DpctlError("lab", str(exc)), as_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, **report})
        return
    out.print(lab_down_text(name, report), markup=False, highlight=False)


@app.command("export")
def lab_export(
    fabric: FabricOpt = DEFAULT_FABRIC,
    kind: Annotated[
        str,
        typer.Option(
            "--kind",
            help="Switch node kind; auto (default) follows the intent's platform: frr -> linux "
            "(labs/images/frr-switch), sonic -> sonic-vm; asternos and sonic-vs are refused.",
        ),
    ] = "auto",
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Topology file (default: labs/<fabric>.clab.yml)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a containerlab topology of the fabric from the same cabling plan, and the
    deployment's SSH keys beside it (<fabric>.clab-keys/, never committed)."""
    try:
        built = load_fabric(fabric)
        made = clab.export(built, out_file or clab.default_path(built), kind)
    except DpctlError as exc:
        fail(exc, as_json)
    summary = {
        "ok": True,
        "out": str(made.topology),
        "kind": made.kind,
        "platform": built.intent.platform,
        "keys": str(made.keys.root),
        "nodes": made.nodes,
        "links": made.links,
    }
    if as_json:
        print_json(summary)
        return
    out.print(
        f"[green]exported[/] {built.intent.name} ({built.intent.platform} switches as "
        f"{made.kind} nodes) -> {made.topology}: {made.nodes} nodes, {made.links} links; "
        f"keys in {made.keys.root}"
    )
