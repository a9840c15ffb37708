"""The `dpctl` command line: one module per command, imported only when that command runs.

``dpctl --help`` lists the commands from :data:`COMMANDS` (name, module, one-line summary)
without importing any of them, so asking for the version costs Python, typer and this file,
and help adds typer's rich formatting; ``dpctl plan`` imports what sizing needs, not the
drivers, the lab or Ansible (docs/benchmarks.md, "CLI start-up").
Only this package prints; the library returns data or raises typed errors.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from controller import __version__

EXIT_CODES_HELP = (
    "Exit codes: 0 done (all checks passed); 1 a check or a device failed (verify, deploy, "
    "drain, undrain, rollback, hosts); 2 bad input or refused (an invalid intent or option, "
    "missing credentials, a refused drain, a deploy already running) — nothing was changed."
)
"""The group's epilog (here, not in the output module: ``dpctl --version`` imports no rich)."""

COMMANDS: dict[str, tuple[str, str]] = {
    "plan": (
        "controller.cli.plan",
        "Size a dual-plane fabric by the rail rules (leaves, spines, links per leaf-spine pair).",
    ),
    "generate": (
        "controller.cli.generate",
        "Generate the Nornir inventory, cabling plan, bill of materials and fabric facts.",
    ),
    "render": (
        "controller.cli.render",
        "Render every selected switch's configuration files (deterministic, all or nothing).",
    ),
    "deploy": (
        "controller.cli.deploy",
        "Push the rendered configs (replace), post-check each switch, roll back a failing one.",
    ),
    "verify": (
        "controller.cli.verify",
        "Check the live fabric against the intent: BGP, LLDP, routes, EVPN ES, RoCE, drain state.",
    ),
    "accept": (
        "controller.cli.accept",
        "Acceptance test of a cabled fabric: every cable, port and path against the plan.",
    ),
    "rollback": (
        "controller.cli.rollback",
        "Restore a switch's configuration saved (by deploy) before its last commit.",
    ),
    "drain": (
        "controller.cli.drain",
        "Drain a leaf: impact report, pre-checks, graceful-shutdown, hand-off, isolate, verify.",
    ),
    "undrain": (
        "controller.cli.undrain",
        "Return a leaf to service: policy back, host ports held down until BGP is up, verify.",
    ),
    "maintain": (
        "controller.cli.maintain",
        "Rolling maintenance wave by wave: restart-routing, reboot, apply, upgrade; resumable.",
    ),
    "lab": ("controller.cli.lab", "The embedded virtual lab and containerlab topologies."),
    "schema": ("controller.cli.schema", "Print the JSON Schema of the fabric intent."),
    "hosts": (
        "controller.cli.hosts",
        "GPU servers with Ansible: NIC bonds, dual ARP, routes, RoCE host settings.",
    ),
    "simulate": (
        "controller.cli.simulate",
        "Flow-level load, bottleneck, completion time and losses of a workload on the fabric.",
    ),
    "report": (
        "controller.cli.report",
        "One self-contained HTML page: picture, bill of materials, cabling sheets, sizing.",
    ),
    "draw": ("controller.cli.draw", "Write just the fabric picture (SVG)."),
}
"""Command name -> (its module, holding a Typer ``app``; its one-line summary)."""


def unwrapped(help_text: str | None) -> str | None:
    """A command's docstring with each paragraph on one line: typer (0.29) prints the line
    breaks of the paragraphs after the first as they are, which a terminal then wraps a
    second time (a long line, then a word alone on the next). A paragraph that starts with
    click's no-rewrap marker (``\\b``) keeps its lines."""
    if not help_text:
        return help_text
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)


def load_command(name: str) -> Any:
    """The click command of ``name``, from its module's Typer app (imported now)."""
    command = typer.main.get_command(importlib.import_module(COMMANDS[name][0]).app)
    command.name = name
    command.help = unwrapped(command.help)
    for sub in getattr(command, "commands", {}).values():  # groups: lab, hosts
        sub.help = unwrapped(sub.help)
    return command


class CommandModules(Mapping[str, Any]):
    """The group's commands as a mapping that imports a command's module when it is looked
    up (for tools that walk ``group.commands``)."""

    def __getitem__(self, name: str) -> Any:
        if name not in COMMANDS:
            raise KeyError(name)
        return load_command(name)

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyCommands(TyperGroup):
    """A command group that imports a command's module only when the command is used.

    (``ctx`` and ``formatter`` are click's objects as typer uses them; typer vendors click
    from 0.22 on, so they are typed ``Any`` here.)"""

    _listing = False

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = CommandModules()  # type: ignore[assignment]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if self._listing:  # the group's own help: the summary is enough
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name][1])
        return load_command(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="dpctl",
    cls=LazyCommands,
    help="Plan, generate, render, deploy and verify dual-plane rail-optimized GPU fabrics.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"dpctl {__version__}")
        raise typer.Exit()


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
            help="Operator state root (lock, drain states, the intent each switch runs, config "
            "backups, Ansible runs), one "
            "folder per fabric inside: <root>/<fabric name>/. Default: .dpctl next to the "
            "intent file.",
        ),
    ] = None,
) -> None:
    """Plan, generate, render, deploy and verify dual-plane rail-optimized GPU fabrics."""


def main() -> None:  # pragma: no cover - console entry
    app()
