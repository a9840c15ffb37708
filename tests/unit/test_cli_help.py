"""Each command's `--help` prints its docstring's paragraphs as paragraphs: typer 0.29 keeps
the line breaks of every paragraph after the first, and the terminal then wrapped each
source line again (`dpctl drain --help`: "...its own servers through its" / "pair, and the
drain ..."), a word or two alone on every other line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from controller.cli import COMMANDS, app, load_command, unwrapped


def test_a_paragraph_becomes_one_line_and_a_no_rewrap_block_keeps_its_lines() -> None:
    text = """First line.

    A paragraph
    over two lines.

    \b
    kept
    as is"""
    assert unwrapped(text) == "First line.\n\nA paragraph over two lines.\n\n\b\nkept\nas is"
    assert unwrapped(None) is None


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_command_help_keeps_a_line_break_inside_a_paragraph(name: str) -> None:
    command = load_command(name)
    helps = [command.help, *(sub.help for sub in getattr(command, "commands", {}).values())]
    for text in filter(None, helps):
        for paragraph in text.split("\n\n"):
            assert paragraph.startswith("\b") or "\n" not in paragraph, (name, paragraph)


def test_drain_help_reads_as_a_paragraph_on_a_wide_terminal() -> None:
    result = CliRunner().invoke(app, ["drain", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "reaches its own servers through its pair, and the drain waits" in result.stdout
