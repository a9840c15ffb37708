"""The README's command table says what the CLI has: every command, every option.

The table's rows name a command in their first cell (`dpctl lab status\\|down ...`); each
command of `dpctl` must have a row, and each of its options (by a long name) must appear in
one of its rows, so a new option or a renamed command fails here until the README says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from controller.cli import app

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `dpctl (?P<cell>[^`]*)` \|", re.MULTILINE)


def command_rows(readme: str) -> list[str]:
    """The first cells of the Commands table, without the leading `dpctl `."""
    section = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    return [m.group("cell") for m in ROW.finditer(section)]


def rows_for(path: tuple[str, ...], rows: list[str]) -> list[str]:
    """The rows that document the command path, e.g. ('lab', 'status') in `lab status\\|down`."""
    found = []
    for row in rows:
        words = row.split()
        if len(words) < len(path):
            continue
        head, last = words[: len(path) - 1], words[len(path) - 1]
        if list(path[:-1]) == head and path[-1] in last.split("\\|"):
            found.append(row)
    return found


def leaf_commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every runnable command under the group, with its path of names. (Typer's commands are
    click's, from the click typer vendors: told apart by what they have, not by class.)"""
    found = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        if hasattr(command, "commands"):
            found += leaf_commands(command, path)
        else:
            found.append((path, command))
    return found


def is_option(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "option"


def names(param: Any) -> list[str]:
    """An option's names, short and long (`-n`, `--lines`; `--validate`, `--no-validate`)."""
    return [*param.opts, *getattr(param, "secondary_opts", [])]


def mentioned(name: str, text: str) -> bool:
    """The option name appears as a whole word (`--plan` is not in `--planes`)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


CLI = typer.main.get_command(app)
COMMANDS = leaf_commands(CLI)
ROWS = command_rows((ROOT / "README.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_and_option_is_in_the_readme(path: tuple[str, ...], command: Any) -> None:
    rows = rows_for(path, ROWS)
    assert rows, f"README's command table has no row for `dpctl {' '.join(path)}`"
    text = " ".join(rows)
    missing = [
        "/".join(names(param))
        for param in command.params
        if is_option(param)
        and names(param) != ["--help"]
        and not any(mentioned(n, text) for n in names(param))
    ]
    assert missing == [], f"`dpctl {' '.join(path)}`: options not in the README: {missing}"


def test_the_global_options_are_in_the_readme() -> None:
    text = " ".join(ROWS)
    for param in CLI.params:
        if is_option(param) and names(param) != ["--help"]:
            assert any(mentioned(n, text) for n in names(param)), (
                f"global option {names(param)} not in the README"
            )


def test_option_names_match_whole_words() -> None:
    assert mentioned("--plane", "[--plane N]")
    assert not mentioned("--plane", "[--planes 1\\|2]")
    assert not mentioned("--validate", "[--no-validate]")
    assert mentioned("-n", "[-n/--lines N]")


def test_rows_are_found_by_command_path() -> None:
    rows = ["plan --model M [--json]", "lab status\\|down --fabric FILE"]
    assert rows_for(("plan",), rows) == ["plan --model M [--json]"]
    assert rows_for(("lab", "down"), rows) == ["lab status\\|down --fabric FILE"]
    assert rows_for(("lab", "logs"), rows) == []
