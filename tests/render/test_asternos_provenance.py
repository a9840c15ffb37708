"""The AsterNOS provenance table: valid, rendered into docs/platforms/asternos.md, the checker
that `dpctl render` runs (unverified counts per switch, refusal of lines matching no form)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.platforms.asternos import syntax as asternos_syntax
from controller.platforms.asternos.provenance import (
    DOC,
    TABLE,
    ProvenanceError,
    Table,
    compile_table,
    default_table,
    load_table,
    render_markdown,
)
from tests.conftest import run_cli

SMALL = Path(__file__).resolve().parent.parent / "golden" / "intents" / "cx732q-small.yaml"


def test_committed_doc_is_up_to_date() -> None:
    """Regenerate with: python -m controller.platforms.asternos.provenance --write"""
    assert DOC.read_text() == render_markdown(default_table())


def test_doc_counts_and_urls() -> None:
    table = default_table()
    doc = DOC.read_text()
    documented = [f for f in table.forms if f.status == "documented"]
    assert f"{len(table.forms)} command forms: {len(documented)} documented, " in doc
    for form in documented:
        row = next(
            line
            for line in doc.splitlines()
            if line.startswith(f"| `{form.form.replace('|', chr(92) + '|')}`")
        )
        assert all(table.sources[s] in row for s in form.sources)


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TABLE.read_text())
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["forms"][0].update(sources=[]), "needs the sources"),
        (lambda d: d["forms"][0].update(sources=["NOPE"]), "unknown source NOPE"),
        (lambda d: d["forms"][1].update(sources=["IFG"]), "evidence, not sources"),
        (lambda d: d["forms"].append({**d["forms"][1], "form": "x <nope>"}), "<nope>"),
        (lambda d: d["forms"].append({**d["forms"][1], "form": "x [ y"}), "unbalanced"),
    ],
)
def test_broken_table_is_refused(tmp_path: Path, change: Any, message: str) -> None:
    data = _raw()
    change(data)
    path = tmp_path / "table.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ProvenanceError, match=message):
        compile_table(load_table(path))


def _intent(tmp_path: Path) -> Path:
    data = yaml.safe_load(SMALL.read_text())
    data["platform"] = "asternos"
    path = tmp_path / "fabric.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_render_reports_unverified_lines(tmp_path: Path) -> None:
    fabric, out = _intent(tmp_path), tmp_path / "out"
    human = run_cli("render", "-f", str(fabric), "-o", str(out))
    assert human.exit_code == 0, human.output
    assert "p1-g1-leaf1: 557 lines, 82 documented, 475 unverified" in human.output
    result = run_cli("render", "-f", str(fabric), "-o", str(out), "--json")
    lines = json.loads(result.stdout)["asternos_lines"]
    assert sorted(lines) == sorted(json.loads(result.stdout)["devices"])
    leaf = lines["p1-g1-leaf1"]
    assert leaf["lines"] == leaf["documented"] + leaf["unverified"] and leaf["errors"] == []


def test_render_refuses_a_line_with_no_form(tmp_path: Path, monkeypatch: Any) -> None:
    """Drop one form from the table: every session using it is refused, nothing written."""
    table = default_table()
    smaller = Table(
        sources=table.sources,
        placeholders=table.placeholders,
        forms=tuple(f for f in table.forms if f.form != "ipv6 use-link-local-only"),
    )
    monkeypatch.setattr(asternos_syntax, "default_forms", lambda: compile_table(smaller))
    fabric, out = _intent(tmp_path), tmp_path / "out"
    result = run_cli("render", "-f", str(fabric), "-o", str(out))
    assert result.exit_code == 2
    assert "no if-ethernet form in the table: 'ipv6 use-link-local-only'" in result.output
    assert not out.exists()
