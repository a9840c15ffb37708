"""`dpctl hosts`: the GPU servers' NICs with Ansible (ansible-runner)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

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
from controller.cli.output import live_enabled, short, status
from controller.cli.reach import TargetOpt, fabric_access, target_line, target_summary
from controller.errors import DpctlError
from controller.hosts import Action, HostsResult, run_hosts, select_servers

app = command_app(
    help="GPU servers with Ansible: NIC bonds, dual ARP, routes, RoCE host settings.",
    no_args_is_help=True,
)
ServerOpt = Annotated[
    str | None, typer.Option("--server", "-s", help="Only this server (default: all).")
]


def hosts_table(title: str, result: HostsResult) -> Table:
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
            f"{b} {c}" for b, c in sorted(h.lacp_control.items()) if not c.startswith("independent")
        ]
        if coupled:
            detail += "; LACP control: " + ", ".join(coupled)
        table.add_row(name, state, str(h.changed), short(detail))
    return table


def _run(
    ctx: typer.Context,
    fabric: Path,
    action: Action,
    where: tuple[str | None, str],
    check: bool,
    as_json: bool,
) -> None:
    server, target = where
    try:
        built, state = load_with_state(ctx, fabric)
        select_servers(built, server)  # a bad --server is refused before any access is needed
        access = fabric_access(built, target)
        text = f"ansible {action} on {built.intent.name} servers..."
        with status(err, text, live_enabled(err, as_json)):
            result = run_hosts(built, action, access.servers, state, server=server, check=check)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json({**result.to_dict(), "target": target_summary(access)})
    else:
        title = f"hosts {action} {built.intent.name}" + (" (check)" if check else "")
        out.print(target_line(access), markup=False, highlight=False)
        out.print(hosts_table(title, result))
        out.print(f"{result.seconds:.1f} s; artifacts in {result.artifacts}")
    if not result.ok:
        raise typer.Exit(code=1)


@app.command("configure")
def hosts_configure(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    server: ServerOpt = None,
    check: Annotated[
        bool, typer.Option("--check", help="Report what would change; change nothing.")
    ] = False,
    target: TargetOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Bond each GPU NIC's two ports, address, routes, ARP keep-alive, RoCE host settings."""
    _run(ctx, fabric, "configure", (server, target), check, as_json)


@app.command("verify")
def hosts_verify(
    ctx: typer.Context,
    fabric: FabricOpt = DEFAULT_FABRIC,
    server: ServerOpt = None,
    check: Annotated[bool, typer.Option("--check", help="Accepted; verify never changes.")] = False,
    target: TargetOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Bond members up, gateway neighbour REACHABLE per NIC, same-rail peers answering."""
    _run(ctx, fabric, "verify", (server, target), check, as_json)
