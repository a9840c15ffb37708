"""The `dpctl` command line. Only this module prints; the library returns data or raises."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from controller import __version__, clab, labfabric, opstate
from controller.cli_output import (
    EXIT_CODES_HELP,
    drain_lines,
    lab_down_text,
    live_enabled,
    status,
    verify_summary,
)
from controller.deploy import maintenance_book
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import intent_schema, load_intent
from controller.outputs import writer
from controller.outputs.bom import bill_of_materials
from controller.outputs.generate import generate as write_outputs
from controller.render.asternos_syntax import SessionReport, check_rendered
from controller.render.engine import as_files, render_fabric
from controller.sizing import Sizing, servers_from_gpus, size_fabric, sizing_table

app = typer.Typer(
    name="dpctl",
    help="Plan, generate, render, deploy and verify dual-plane rail-optimized GPU fabrics.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Tables stay readable when piped (rich would squeeze them to 80 columns).
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)

DEFAULT_FABRIC = Path("inventory/fabric.yaml")
FabricOpt = Annotated[Path, typer.Option("--fabric", "-f", help="Fabric intent file.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _version(value: bool) -> None:
    if value:
        print(f"dpctl {__version__}")
        raise typer.Exit()


def fail(exc: DpctlError, as_json: bool) -> NoReturn:
    """Name the field or device and the reason, exit non-zero; never a traceback."""
    if as_json:
        print(json.dumps({"ok": False, "error": exc.to_dict()}))
    err.print(
        f"[bold red]error[/]: {exc.where}: {exc.reason}" if exc.where else f"error: {exc.reason}",
        markup=True,
        highlight=False,
    )
    raise typer.Exit(code=2)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


_STATE_DIR: list[Path | None] = [None]


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            envvar="DPCTL_STATE_DIR",
            help="Operator state root (lock, drain states, config backups, Ansible runs), one "
            "folder per fabric inside: <root>/<fabric name>/. Default: .dpctl next to the "
            "intent file.",
        ),
    ] = None,
) -> None:
    """Plan, generate, render, deploy and verify dual-plane rail-optimized GPU fabrics."""
    _STATE_DIR[0] = state_dir


def load_fabric(path: Path) -> Fabric:
    fabric = build_fabric(load_intent(path))
    opstate.bind(fabric.intent.name, path, _STATE_DIR[0])
    return fabric


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


def sizing_json(s: Sizing) -> dict[str, Any]:
    return s.to_dict()


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
        if fabric is not None:
            built = load_fabric(fabric)
            rows, title = (
                [built.sizing],
                f"{built.intent.name}: {built.sizing.leaf_model} leaves, "
                f"{built.sizing.spine_model} spines",
            )
            bom = [
                {"category": b.category, "item": b.item, "count": b.count}
                for b in bill_of_materials(built)
            ]
        elif model is None:
            raise DpctlError("--model", "give --model (with --gpus or --table) or --fabric")
        elif table:
            rows, title, bom = (
                sizing_table(model, gpus_per_server),
                f"{model} dual-plane sizing",
                [],
            )
        elif gpus is None:
            raise DpctlError("--gpus", "give the cluster size with --gpus N (or --table)")
        else:
            servers = servers_from_gpus(gpus, gpus_per_server, "--gpus")
            rows = [size_fabric(model, model, servers, gpus_per_server, "--gpus")]
            title, bom = f"{model} dual-plane fabric", []
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        if table:
            print_json({"model": model, "rows": [sizing_json(r) for r in rows]})
        else:
            print_json({**sizing_json(rows[0]), **({"bom": bom} if fabric else {})})
        return
    out.print(plan_table(rows, title))
    if bom:
        bom_table = Table(title="Bill of materials")
        for col in ("Category", "Item", "Count"):
            bom_table.add_column(col, justify="right" if col == "Count" else "left")
        for line in bom:
            bom_table.add_row(str(line["category"]), str(line["item"]), f"{line['count']:,}")
        out.print(bom_table)


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
    summary = {
        "ok": True,
        "fabric": built.intent.name,
        "out": str(target),
        "files": [str(p) for p in written],
        "switches": len(built.switches),
        "servers": len(built.servers),
        "cables": len(built.links),
    }
    if as_json:
        print_json(summary)
        return
    out.print(
        f"[green]generated[/] {built.intent.name}: {len(built.switches)} switches, "
        f"{len(built.servers)} servers, {len(built.links):,} cables -> {target}/"
    )
    for path in written:
        out.print(f"  {path}")


@app.command()
def render(
    fabric: FabricOpt = DEFAULT_FABRIC,
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Output folder: one sub-folder per device.")
    ] = Path("inventory/rendered"),
    plane: Annotated[
        int | None, typer.Option("--plane", min=1, max=2, help="Only this plane's switches.")
    ] = None,
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
        rendered = render_fabric(built, plane=plane, device=device, validate=validate)
        checked = check_rendered(rendered)
        written = writer.write_all(out_dir, as_files(rendered))
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(
            {
                "ok": True,
                "fabric": built.intent.name,
                "out": str(out_dir),
                "devices": {name: sorted(files) for name, files in rendered.items()},
                "asternos_lines": {n: r.to_dict() for n, r in checked.items()},
            }
        )
        return
    out.print(
        f"[green]rendered[/] {len(rendered)} switches of {built.intent.name} "
        f"({built.intent.platform}) -> {out_dir}/ ({len(written)} files)"
    )
    print_asternos_provenance(checked)


def print_asternos_provenance(checked: dict[str, SessionReport]) -> None:
    """Per AsterNOS switch: how many rendered lines use a form no vendor document shows."""
    if not checked:
        return
    out.print("AsterNOS lines by provenance (docs/platforms/asternos.md):")
    for name, r in checked.items():
        out.print(
            f"  {name}: {r.lines} lines, {r.documented} documented, "
            f"[yellow]{r.unverified} unverified[/]"
        )


PlaneOpt = Annotated[
    int | None, typer.Option("--plane", min=1, max=2, help="Only this plane's switches.")
]


class Progress:
    """A live per-device progress bar on a terminal; silent in CI and with --json."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self.enabled = enabled and live_enabled(err, False)
        self.label = label
        self._bar = RichProgress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            disable=not self.enabled,
        )
        self._task = self._bar.add_task(label, total=total)

    def __enter__(self) -> Progress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)

    def __call__(self, device: str, state: str) -> None:
        if state in ("ok", "failed", "checked"):
            self._bar.advance(self._task)
        else:  # a device's step starts (e.g. committing): name it on the bar
            self._bar.update(self._task, description=f"{self.label} {device}: {state}")


@app.command()
def deploy(
    fabric: FabricOpt = DEFAULT_FABRIC,
    plane: PlaneOpt = None,
    device: Annotated[str | None, typer.Option("--device", "-d", help="Only this switch.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
    ] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Print each device's diff.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Push the rendered configs (replace), post-check each switch, roll back a failing one."""
    from controller.deploy import deploy as run_deploy

    try:
        built = load_fabric(fabric)
        count = len(built.switches_in(plane=plane)) if device is None else 1
        with Progress(count, "deploy" + (" (dry run)" if dry_run else ""), not as_json) as bar:
            outcomes = run_deploy(built, plane=plane, device=device, dry_run=dry_run, progress=bar)
    except DpctlError as exc:
        fail(exc, as_json)
    failed = [n for n, o in outcomes.items() if not o.ok]
    if as_json:
        print_json(
            {
                "ok": not failed,
                "dry_run": dry_run,
                "devices": {
                    n: {k: v for k, v in o.to_dict().items() if diff or dry_run or k != "diff"}
                    for n, o in outcomes.items()
                },
            }
        )
    else:
        table = Table(title=f"deploy {built.intent.name}" + (" (dry run)" if dry_run else ""))
        for col in ("device", "result", "changed", "seconds", "detail"):
            table.add_column(col)
        for name, o in outcomes.items():
            result = (
                "[green]ok[/]"
                if o.ok
                else ("[yellow]rolled back[/]" if o.rolled_back else "[red]failed[/]")
            )
            table.add_row(
                name,
                result,
                "yes" if o.changed else "no",
                f"{o.seconds:.1f}",
                o.error or (o.backup and f"backup {o.backup}") or "",
            )
        out.print(table)
        if diff or dry_run:
            for name, o in outcomes.items():
                if o.diff:
                    out.print(f"[bold]--- {name}[/]")
                    out.print(o.diff, markup=False, highlight=False)
    if failed:
        raise typer.Exit(code=1)


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


@app.command()
def verify(
    fabric: FabricOpt = DEFAULT_FABRIC,
    plane: PlaneOpt = None,
    as_json: JsonOpt = False,
    traffic: TrafficOpt = False,
    seconds: SecondsOpt = 3.0,
) -> None:
    """Check the live fabric against the intent: BGP, LLDP, routes, EVPN ES, RoCE, drain state."""
    from controller.verify import verify as run_verify

    try:
        if traffic:
            _traffic_check(None, seconds)  # a bad option fails before anything runs
        built = load_fabric(fabric)
        with Progress(len(built.switches_in(plane=plane)), "verify", not as_json) as bar:
            checks = run_verify(built, plane=plane, progress=bar)
        report = _traffic_check(built, seconds) if traffic else None
    except DpctlError as exc:
        fail(exc, as_json)
    ok = all(c.ok for c in checks) and (report is None or report.ok)
    if as_json:
        body: dict[str, Any] = {"ok": ok, "checks": [c.to_dict() for c in checks]}
        if report is not None:
            body["traffic"] = report.to_dict()
        print_json(body)
    else:
        title = f"verify {built.intent.name}" + (f" plane {plane}" if plane else "")
        out.print(verify_summary(checks, title))
        if report is not None:
            _print_traffic(report)
    if not ok:
        raise typer.Exit(code=1)


def _traffic_check(built: Any, seconds: float) -> Any:
    from controller.traffic import check_traffic, validate

    return validate(seconds) if built is None else check_traffic(built, seconds=seconds)


def _print_traffic(report: Any) -> None:
    table = Table(title=f"traffic {report.fabric} ({report.runner}, {report.seconds:g} s/flow)")
    for col in ("rail", "plane", "sub-flows", "sent", "lost", "dup", "reord", "gap ms", "result"):
        table.add_column(col)
    for r in report.rows:
        result = "[green]ok[/]" if r.ok else f"[red]FAIL[/] {r.reason}"
        cells = (r.rail, r.plane, r.subflows, r.sent, r.lost, r.duplicates, r.reordered)
        table.add_row(*(str(c) for c in cells), f"{r.max_gap_ms:g}", result)
    out.print(table)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


@app.command()
def rollback(
    fabric: FabricOpt = DEFAULT_FABRIC,
    device: Annotated[str, typer.Option("--device", "-d", help="The switch to restore.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Restore a switch's configuration saved (by deploy) before its last commit."""
    from controller.deploy import rollback_device

    try:
        if not device:
            raise DpctlError("--device", "name the switch to roll back")
        built = load_fabric(fabric)
        outcome = rollback_device(built, device)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": outcome.ok, "device": device, **outcome.to_dict()})
    else:
        out.print(
            f"[green]rolled back[/] {device} to {outcome.backup}"
            if outcome.ok
            else f"[red]failed[/] {device}: {outcome.error}"
        )
    if not outcome.ok:
        raise typer.Exit(code=1)


def _print_drain(report: Any) -> None:
    for line in drain_lines(report):
        out.print(line)


class StepStatus:
    """A live 'which step now' line on a terminal for drain/undrain; silent in CI and --json."""

    def __init__(self, action: str, enabled: bool) -> None:
        self.action = action
        self.enabled = enabled and live_enabled(err, False)
        self._status = err.status(f"{action}...") if self.enabled else None

    def __enter__(self) -> StepStatus:
        if self._status:
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status:
            self._status.__exit__(None, None, None)

    def __call__(self, leaf: str, step: str) -> None:
        if self._status:
            self._status.update(f"{self.action} {leaf}: {step}...")


HostsFirstOpt = Annotated[
    bool,
    typer.Option(
        "--hosts-first",
        help="Drain: after graceful-shutdown, the servers behind the leaf release their ports "
        "to it from their bonds (Ansible, as `dpctl hosts`) before the switch isolates it, so "
        "no packet is caught on a port going down; undrain: they put them back last.",
    ),
]


@app.command()
def drain(
    leaf: Annotated[str, typer.Argument(help="The leaf to take out of service.")],
    fabric: FabricOpt = DEFAULT_FABRIC,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Pre-checks and impact only.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Drain although a pre-check refuses.")
    ] = False,
    hosts_first: HostsFirstOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Drain a leaf: impact report, pre-checks, graceful-shutdown, isolate, verify.

    With --hosts-first the servers release their ports to the leaf from their bonds
    (Ansible) after graceful-shutdown, before the leaf is isolated."""
    from controller.drain import drain as run_drain

    try:
        with StepStatus("drain", not as_json) as status:
            report = run_drain(
                load_fabric(fabric),
                leaf,
                dry_run=dry_run,
                force=force,
                progress=status,
                hosts_first=hosts_first,
            )
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(report.to_dict())
    else:
        if report.forced:
            err.print(f"[bold red]WARNING[/]: draining {leaf} against the pre-checks (--force)")
        _print_drain(report)
    if not report.ok:
        raise typer.Exit(code=1)


@app.command()
def undrain(
    leaf: Annotated[str, typer.Argument(help="The drained leaf to return to service.")],
    fabric: FabricOpt = DEFAULT_FABRIC,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan only.")] = False,
    hosts_first: HostsFirstOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Return a leaf to service: policy back, host ports held down until BGP is up, verify.

    With --hosts-first the servers bring their ports to the leaf back into their bonds
    (Ansible) once the leaf's own steps are done, before the verify."""
    from controller.drain import undrain as run_undrain

    try:
        with StepStatus("undrain", not as_json) as status:
            report = run_undrain(
                load_fabric(fabric),
                leaf,
                dry_run=dry_run,
                progress=status,
                hosts_first=hosts_first,
            )
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(report.to_dict())
    else:
        _print_drain(report)
    if not report.ok:
        raise typer.Exit(code=1)


lab_app = typer.Typer(
    help="The embedded virtual lab and containerlab topologies.", no_args_is_help=True
)
app.add_typer(lab_app, name="lab")


LabDirOpt = Annotated[
    Path | None, typer.Option("--state-dir", help="Lab state folder (default: .lab/<fabric name>).")
]


@lab_app.command("up")
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
            help="embedded (namespaces + FRR, in a QEMU guest if needed) or containerlab.",
        ),
    ] = "embedded",
    as_json: JsonOpt = False,
) -> None:
    """Build the fabric's lab: switches at factory state (empty FRR), servers with their NICs."""
    try:
        built = load_fabric(fabric)
        if runtime == "containerlab":
            target = clab.default_path(built)
            writer.write_all(target.parent, {target.name: clab.render(built, "linux")})
            result: dict[str, Any] = {"runtime": runtime, "output": clab.deploy(target)}
        elif runtime == "embedded":
            sdir = state_dir or labfabric.lab_dir(built.intent.name)
            with StepStatus("lab up", not as_json) as phase:
                result = labfabric.bring_up(
                    built,
                    sdir,
                    bare_servers=bare_servers,
                    progress=lambda step: phase(built.intent.name, step),
                )
        else:
            raise DpctlError("--runtime", f"unknown runtime {runtime!r}: embedded or containerlab")
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


@lab_app.command("status")
def lab_status(
    fabric: FabricOpt = DEFAULT_FABRIC, state_dir: LabDirOpt = None, as_json: JsonOpt = False
) -> None:
    """Show every lab node: role, plane, running, drain state, SSH address."""
    from controller.lab import LabError, status

    try:
        name = load_intent(fabric).name
        sdir = state_dir or labfabric.lab_dir(name)
        report = status(sdir)
        book = maintenance_book(load_fabric(fabric))
        for node, info in report["nodes"].items():
            info["maintenance"] = book[node].state if node in book else "none"
            info["maintenance_pending"] = book[node].pending if node in book else None
    except LabError as exc:
        fail(DpctlError("lab", str(exc)), as_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(report)
        return
    table = Table(title=f"lab {name} ({report.get('substrate') or report.get('mode')})")
    for col in ("node", "role", "plane", "running", "state", "ssh"):
        table.add_column(col)
    for node, info in report["nodes"].items():
        state = (
            "in service" if info["maintenance"] == "none" else f"drained ({info['maintenance']})"
        )
        if info["maintenance_pending"]:
            state += f", [yellow]step to {info['maintenance_pending']} in progress[/]"
        table.add_row(
            node,
            info["role"],
            str(info["plane"] or "-"),
            "[green]yes[/]" if info["running"] else "[red]no[/]",
            state,
            info["ssh"],
        )
    out.print(table)


@lab_app.command("logs")
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
    from controller.lab import LabError, LabSession

    try:
        name = load_intent(fabric).name
        with LabSession.open(state_dir or labfabric.lab_dir(name)) as session:
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


@lab_app.command("down")
def lab_down(
    fabric: FabricOpt = DEFAULT_FABRIC, state_dir: LabDirOpt = None, as_json: JsonOpt = False
) -> None:
    """Remove everything the lab made (also after a crash): guest, namespaces, processes."""
    from controller.lab import LabError, down

    try:
        name = load_intent(fabric).name
        with status(err, f"taking lab {name} down...", live_enabled(err, as_json)):
            report = down(state_dir or labfabric.lab_dir(name), prefix=labfabric.lab_prefix())
    except LabError as exc:
        fail(DpctlError("lab", str(exc)), as_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, **report})
        return
    out.print(lab_down_text(name, report), markup=False, highlight=False)


@lab_app.command("export")
def lab_export(
    fabric: FabricOpt = DEFAULT_FABRIC,
    kind: Annotated[
        str, typer.Option("--kind", help="Switch kind: sonic-vs or linux (FRR).")
    ] = "linux",
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Topology file (default: labs/<fabric>.clab.yml)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a containerlab topology of the fabric from the same cabling plan."""
    try:
        built = load_fabric(fabric)
        target = out_file or clab.default_path(built)
        content = clab.render(built, kind)  # type: ignore[arg-type]
        writer.write_all(target.parent, {target.name: content})
    except DpctlError as exc:
        fail(exc, as_json)
    summary = {
        "ok": True,
        "out": str(target),
        "kind": kind,
        "nodes": len(built.switches) + len(built.servers),
        "links": len(built.links),
    }
    if as_json:
        print_json(summary)
        return
    out.print(
        f"[green]exported[/] {built.intent.name} ({kind}) -> {target}: "
        f"{summary['nodes']} nodes, {summary['links']} links"
    )


@app.command()
def schema() -> None:
    """Print the JSON Schema of the fabric intent."""
    print_json(intent_schema())


def main() -> None:  # pragma: no cover - console entry
    app()


# -- dpctl hosts: GPU servers with Ansible (issue 7) ------------------------------------------
hosts_app = typer.Typer(
    help="GPU servers with Ansible: NIC bonds, dual ARP, routes, RoCE host settings.",
    no_args_is_help=True,
)
app.add_typer(hosts_app, name="hosts")
ServerOpt = Annotated[
    str | None, typer.Option("--server", "-s", help="Only this server (default: all).")
]


def _hosts_run(fabric: Path, action: str, server: str | None, check: bool, as_json: bool) -> None:
    from controller.hosts import run_hosts

    try:
        built = load_fabric(fabric)
        with status(
            err, f"ansible {action} on {built.intent.name} servers...", live_enabled(err, as_json)
        ):
            result = run_hosts(built, action, server=server, check=check)  # type: ignore[arg-type]
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(result.to_dict())
    else:
        title = f"hosts {action} {built.intent.name}" + (" (check)" if check else "")
        table = Table(title=title)
        for col in ("server", "result", "changed", "detail"):
            table.add_column(col, overflow="fold")
        for name, h in result.hosts.items():
            state = (
                "[red]unreachable[/]"
                if h.unreachable
                else ("[red]failed[/]" if h.failed else "[green]ok[/]")
            )
            detail = h.message or "; ".join(h.roce_skipped)
            coupled = [
                f"{b} {c}"
                for b, c in sorted(h.lacp_control.items())
                if not c.startswith("independent")
            ]
            if coupled:
                detail += "; LACP control: " + ", ".join(coupled)
            table.add_row(name, state, str(h.changed), _short(detail))
        out.print(table)
        out.print(f"{result.seconds:.1f} s; artifacts in {result.artifacts}")
    if not result.ok:
        raise typer.Exit(code=1)


@hosts_app.command("configure")
def hosts_configure(
    fabric: FabricOpt = DEFAULT_FABRIC,
    server: ServerOpt = None,
    check: Annotated[
        bool, typer.Option("--check", help="Report what would change; change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Bond each GPU NIC's two ports, address, routes, ARP keep-alive, RoCE host settings."""
    _hosts_run(fabric, "configure", server, check, as_json)


@hosts_app.command("verify")
def hosts_verify(
    fabric: FabricOpt = DEFAULT_FABRIC,
    server: ServerOpt = None,
    check: Annotated[bool, typer.Option("--check", help="Accepted; verify never changes.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Bond members up, gateway neighbour REACHABLE per NIC, same-rail peers answering."""
    _hosts_run(fabric, "verify", server, check, as_json)


# -- dpctl simulate: flow-level analysis of the generated fabric (issue 15) -------------------
@app.command()
def simulate(
    fabric: FabricOpt = DEFAULT_FABRIC,
    workload: Annotated[
        str, typer.Option("--workload", "-w", help="ring | tree | all-to-all | bisection.")
    ] = "ring",
    lb: Annotated[
        str | None,
        typer.Option("--lb", help="ecmp | wcmp | ars | pbr | spray (default: the intent's)."),
    ] = None,
    planes: Annotated[
        int, typer.Option("--planes", help="2, or 1 for the single-plane baseline.")
    ] = 2,
    qps: Annotated[int, typer.Option("--qps", help="RoCEv2 queue pairs per connection.")] = 4,
    fail_: Annotated[
        list[str] | None,
        typer.Option("--fail", help="DEVICE or DEVICE:PORT to fail (repeatable)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the QP source ports.")] = 0,
    hash_seeds: Annotated[
        str, typer.Option("--hash-seeds", help="same | per-switch (ECMP hash seed and window).")
    ] = "same",
    hash_select: Annotated[
        str,
        typer.Option("--hash-select", help="threshold (RFC 2992) | modulo: ECMP member choice."),
    ] = "threshold",
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write PNG/SVG figures into this folder.")
    ] = None,
    compare: Annotated[
        bool, typer.Option("--compare", help="Run the whole matrix and write the report.")
    ] = False,
    report: Annotated[
        Path, typer.Option("--report", help="Where --compare writes its Markdown report.")
    ] = Path("docs/simulation.md"),
    links_out: Annotated[
        Path | None,
        typer.Option(
            "--links-out",
            help="Write every cable's load here (the file `report --simulate` reads).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Flow-level load, bottleneck, completion time and losses of a workload on the fabric."""
    import datetime

    from controller.simulate import report as sim
    from controller.simulate.model import Scenario

    try:
        built = load_fabric(fabric)
        if compare and links_out is not None:
            raise DpctlError("--links-out", "writes the loads of one run, not of --compare")
        if compare:
            today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
            summary = sim.write_compare(built, report, qps, seed, today, str(fabric))
            if as_json:
                print_json(summary)
            else:
                out.print(
                    f"[green]wrote[/] {report}: {summary['runs']} runs, {summary['seconds']} s"
                )
                for key, value in dict(summary["headline"]).items():  # type: ignore[call-overload]
                    out.print(f"  bisection {key}: completion {value:.2f}x ideal")
            return
        scenario = Scenario(
            workload=workload,
            lb=lb or built.intent.load_balancing.mode,
            planes=planes,
            qps=qps,
            fail=tuple(fail_ or ()),
            seed=seed,
            hash_seeds=hash_seeds,
            selection=hash_select,
        )
        result, topo = sim.run(built, scenario)
        if links_out is not None:
            from controller.simulate.links import links_document, write_links

            write_links(links_document(result, topo), links_out)
        figures = []
        if plot is not None:
            figures = sim.plot_run(result, topo, plot)
            figures += sim.plot_modes(
                sim.mode_bars(built, scenario),
                f"{built.intent.name}: {workload}, completion by LB mode",
                plot,
                f"modes-{workload}",
            )
    except DpctlError as exc:
        fail(exc, as_json)
    data = result.to_dict() | {"figures": [str(p) for p in figures]}
    if links_out is not None:
        data["links_out"] = str(links_out)
    if as_json:
        print_json(data)
        return
    table = Table(
        title=f"simulate {built.intent.name}: {workload}, {scenario.lb}, {planes} plane(s)"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key in (
        "flows",
        "links",
        "max_link_load",
        "fabric_max_load",
        "completion_time_ratio",
        "lost_flows",
        "aux_flows",
        "throughput_lost",
    ):
        value = data[key]
        table.add_row(key, f"{value:,}" if isinstance(value, int) else f"{value:.4g}")
    out.print(table)
    for line in data["lost_examples"]:
        out.print(f"  lost: {line}")
    for path in figures:
        out.print(f"  figure: {path}")
    if links_out is not None:
        out.print(f"  per-link loads: {links_out}")


# -- dpctl report / draw: the fabric picture and printable report (issue 14) -------------------
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


@app.command()
def report(
    fabric: FabricOpt = DEFAULT_FABRIC,
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Output folder for report.html and fabric.svg.")
    ] = Path("report"),
    verify_json: StateOpt = None,
    simulate_json: SimulateOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One self-contained HTML page: picture, bill of materials, cabling sheets, sizing."""
    from controller.outputs.report import write_report

    try:
        with status(err, f"writing the report of {fabric}...", live_enabled(err, as_json)):
            summary = write_report(load_fabric(fabric), out_dir, verify_json, simulate_json)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({"ok": True, **summary})
        return
    out.print(
        f"[green]report[/] {summary['report']} ({summary['bytes'] / 1024:,.0f} KiB; "
        f"{summary['cables']:,} cables in {summary['bundles']} bundles) and {summary['svg']}"
    )


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
    from controller.outputs.report import write_svg

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
