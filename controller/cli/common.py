"""What every command shares: the consoles, the common options, loading a fabric with its
state folder, errors as messages, JSON output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from controller.errors import DpctlError
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.opstate import StateFolder

# Tables stay readable when piped (rich would squeeze them to 80 columns).
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)

DEFAULT_FABRIC = Path("inventory/fabric.yaml")
FabricOpt = Annotated[Path, typer.Option("--fabric", "-f", help="Fabric intent file.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
PlaneOpt = Annotated[
    int | None, typer.Option("--plane", min=1, max=2, help="Only this plane's switches.")
]


def command_app(**options: Any) -> typer.Typer:
    """The Typer app of one command module (no shell-completion options of its own)."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, **options)


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


def state_dir_option(ctx: typer.Context) -> Path | None:
    """``dpctl --state-dir`` (or DPCTL_STATE_DIR), given before the command."""
    value = ctx.find_root().params.get("state_dir")
    return Path(value) if value is not None else None


def load_fabric(path: Path) -> Fabric:
    """The fabric facts of the intent at ``path``."""
    return build_fabric(load_intent(path))


def load_with_state(ctx: typer.Context, path: Path) -> tuple[Fabric, StateFolder]:
    """The fabric and its operator state folder (``--state-dir``, DPCTL_STATE_DIR, or
    ``.dpctl`` next to the intent)."""
    fabric = load_fabric(path)
    return fabric, StateFolder.for_intent(fabric.intent.name, path, state_dir_option(ctx))
