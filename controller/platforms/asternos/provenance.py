"""The AsterNOS provenance table: every command form the renderer can emit, with its source.

Data lives in ``asternos_provenance.yaml`` next to this module; this module loads and
validates it, compiles each form into a regular expression for the syntax checker
(``asternos_syntax``), and renders the table as ``docs/platforms/asternos.md``.

    python -m controller.platforms.asternos.provenance          # print the document
    python -m controller.platforms.asternos.provenance --write  # write docs/platforms/asternos.md
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.errors import DpctlError

TABLE = Path(__file__).with_name("provenance.yaml")
DESIGN = Path(__file__).with_name("design.md")
"""Hand-written design notes appended to the generated page."""
DOC = Path(__file__).resolve().parents[3] / "docs" / "platforms" / "asternos.md"


class ProvenanceError(DpctlError):
    """The provenance table is malformed (an unknown source or placeholder, a bad form)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FormEntry(_Strict):
    form: str
    modes: tuple[str, ...]
    status: Literal["documented", "unverified"]
    sources: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    note: str = ""
    enters: str | None = None
    action: Literal["exit", "end"] | None = None
    returns: bool = False

    @model_validator(mode="after")
    def _sourced(self) -> FormEntry:
        if self.status == "documented" and not self.sources:
            raise ValueError(f"{self.form!r}: a documented form needs the sources that show it")
        if self.status == "unverified" and self.sources:
            raise ValueError(f"{self.form!r}: an unverified form has evidence, not sources")
        return self


class Contradiction(_Strict):
    example: str
    mode: str
    sources: tuple[str, ...] = Field(min_length=1)
    documented: str


class Table(_Strict):
    sources: dict[str, str]
    placeholders: dict[str, tuple[str, int | None, int | None]]
    forms: tuple[FormEntry, ...]
    contradicted: tuple[Contradiction, ...] = ()


@dataclass(frozen=True, slots=True)
class Form:
    """One compiled form: the entry, its regex, and the range of each numeric placeholder."""

    entry: FormEntry
    pattern: re.Pattern[str]
    ranges: tuple[tuple[str, int, int], ...]
    """(regex group, low, high) for each ranged placeholder in the form."""

    @property
    def documented(self) -> bool:
        return self.entry.status == "documented"


_TOKEN = re.compile(r"<([a-z0-9-]+)>|\{([^}]+)\}|(\[)|(\])|([^<{\[\]]+)")


def compile_form(
    form: str, placeholders: dict[str, tuple[str, int | None, int | None]]
) -> tuple[re.Pattern[str], tuple[tuple[str, int, int], ...]]:
    """Translate the form grammar (words, <placeholder>, {a|b}, [optional]) to a regex and
    the range checks of its numeric placeholders."""
    parts: list[str] = []
    ranges: list[tuple[str, int, int]] = []
    depth = 0
    for match in _TOKEN.finditer(form):
        name, choice, opening, closing, literal = match.groups()
        if name is not None:
            if name not in placeholders:
                raise ProvenanceError(f"form {form!r}", f"unknown placeholder <{name}>")
            regex, low, high = placeholders[name]
            if low is not None and high is not None:
                group = f"g{len(ranges)}"
                ranges.append((group, low, high))
                parts.append(f"(?P<{group}>{regex})")
            else:
                parts.append(f"(?:{regex})")
        elif choice is not None:
            parts.append("(?:" + "|".join(re.escape(c) for c in choice.split("|")) + ")")
        elif opening:
            depth += 1
            parts.append("(?:")
        elif closing:
            depth -= 1
            parts.append(")?")
        else:
            parts.append(re.escape(literal))
    if depth != 0 or "".join(m.group(0) for m in _TOKEN.finditer(form)) != form:
        raise ProvenanceError(f"form {form!r}", "unbalanced [ ] or stray < { characters")
    return re.compile("^" + "".join(parts) + "$"), tuple(ranges)


def load_table(path: Path = TABLE) -> Table:
    try:
        table = Table.model_validate(yaml.safe_load(path.read_text()))
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ProvenanceError(str(path), str(exc)) from None
    for entry in table.forms:
        unknown = [s for s in (*entry.sources, *entry.evidence) if s not in table.sources]
        if unknown:
            raise ProvenanceError(f"form {entry.form!r}", f"unknown source {unknown[0]}")
    for c in table.contradicted:
        if any(s not in table.sources for s in c.sources):
            raise ProvenanceError(f"contradicted {c.example!r}", "unknown source")
    return table


def compile_table(table: Table) -> dict[str, tuple[Form, ...]]:
    """mode -> the forms allowed there (mode "any": exit/end, allowed in every mode)."""
    by_mode: dict[str, list[Form]] = {}
    for entry in table.forms:
        pattern, ranges = compile_form(entry.form, table.placeholders)
        form = Form(entry=entry, pattern=pattern, ranges=ranges)
        for mode in entry.modes:
            by_mode.setdefault(mode, []).append(form)
    return {mode: tuple(forms) for mode, forms in by_mode.items()}


@cache
def default_table() -> Table:
    return load_table()


@cache
def default_forms() -> dict[str, tuple[Form, ...]]:
    return compile_table(default_table())


# ------------------------------------------------------------------------------ document


def _links(keys: tuple[str, ...], sources: dict[str, str]) -> str:
    return ", ".join(f"[{k}]({sources[k]})" for k in keys)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(table: Table) -> str:
    """The provenance table as Markdown (docs/platforms/asternos.md), counts first."""
    documented = [f for f in table.forms if f.status == "documented"]
    unverified = [f for f in table.forms if f.status == "unverified"]
    lines = [
        "# AsterNOS: where each rendered command comes from",
        "",
        "Generated from `controller/platforms/asternos/provenance.yaml` by",
        "`python -m controller.platforms.asternos.provenance --write`; do not edit by hand (a test",
        "fails when this file and the table differ). The same table is the AsterNOS syntax",
        "checker: a rendered line that matches no form below is an error, and `dpctl render`",
        "reports per AsterNOS switch how many of its lines use an unverified form.",
        "",
        f"**{len(table.forms)} command forms: {len(documented)} documented, "
        f"{len(unverified)} unverified.**",
        "",
        f"{len(table.contradicted)} lines rendered earlier contradict a document; they are listed",
        "last and the checker refuses them.",
        "",
        "A form is *documented* when an Asterfusion page shows it; *unverified* forms were not",
        "seen in the pages read (often only their openings), with what is known in the note.",
        "Grammar: `<value>`, `{a|b}` a choice, `[...]` optional.",
        "",
        "## Documented forms",
        "",
        "| Form | Mode | Source | Note |",
        "|---|---|---|---|",
    ]
    for f in documented:
        lines.append(
            f"| `{_cell(f.form)}` | {', '.join(f.modes)} | {_links(f.sources, table.sources)} "
            f"| {_cell(f.note)} |"
        )
    lines += [
        "",
        "## Unverified forms",
        "",
        "| Form | Mode | Note | Related pages |",
        "|---|---|---|---|",
    ]
    for f in unverified:
        lines.append(
            f"| `{_cell(f.form)}` | {', '.join(f.modes)} | {_cell(f.note)} "
            f"| {_links(f.evidence, table.sources)} |"
        )
    lines += [
        "",
        "## Contradicted forms (refused by the checker)",
        "",
        "| Line once rendered | Documented instead | Source |",
        "|---|---|---|",
    ]
    for c in table.contradicted:
        links = _links(c.sources, table.sources)
        lines.append(f"| `{_cell(c.example)}` | `{_cell(c.documented)}` | {links} |")
    lines += ["", DESIGN.read_text().rstrip(), "", "## Sources", ""]
    lines += [f"- {key}: <{url}>" for key, url in table.sources.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render_markdown(default_table())
    if "--write" in argv:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text)
        print(f"wrote {DOC}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
