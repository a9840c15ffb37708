"""A syntax checker for the AsterNOS klish sessions dpctl renders, built from the provenance
table (``asternos_provenance.yaml``), not from the templates.

Every line must match a form of the table in the CLI mode it is in; a line matching no form
is an error. Each matched line counts as documented or unverified by its form's status, so a
session's report says how much of it rests on guesses. Modes: a form may enter a sub-mode
(``interface ...``, ``router bgp``, ``write`` -> its confirmation); ``exit`` forms leave one,
``end`` returns to exec, a ``returns`` form leaves a one-line mode. Numeric placeholders are
range-checked (vlan 1-4094, mtu, DF preference ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.errors import RenderError
from controller.platforms.asternos.provenance import Form, default_forms


@dataclass
class SessionReport:
    """What the checker found in one session."""

    lines: int = 0
    documented: int = 0
    unverified: int = 0
    errors: list[str] = field(default_factory=list)
    unverified_forms: dict[str, int] = field(default_factory=dict)
    """unverified form -> how many lines of the session use it."""

    def to_dict(self) -> dict[str, object]:
        return {
            "lines": self.lines,
            "documented": self.documented,
            "unverified": self.unverified,
            "errors": list(self.errors),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one line is in one mode: its form (None: no form fits), the placeholders out of
    range as (value, low, high, form text), and the form's effect on the CLI mode."""

    form: Form | None
    out_of_range: tuple[tuple[str, int, int, str], ...] = ()
    documented: bool = False
    action: str | None = None
    enters: str | None = None
    returns: bool = False


Forms = dict[str, tuple[Form, ...]]
_verdicts: dict[int, tuple[Forms, dict[tuple[str, str], Verdict]]] = {}
"""Per forms table: (mode, line) -> its verdict. A session's lines repeat (every interface
stanza's "mtu", "no shutdown", "exit"; a fabric's switches share most lines: 9 in 10 of the
16,384-GPU example's lines are repeats), so each distinct line is matched once."""


def _memo(forms: Forms) -> dict[tuple[str, str], Verdict]:
    cached = _verdicts.get(id(forms))
    if cached is None or cached[0] is not forms:
        cached = (forms, {})
        _verdicts[id(forms)] = cached
    return cached[1]


def _judge(forms: Forms, mode: str, line: str) -> Verdict:
    form, match = _match(forms, mode, line)
    if form is None or match is None:
        return Verdict(None)
    entry = form.entry
    return Verdict(
        form,
        _out_of_range(form, match),
        form.documented,
        entry.action,
        entry.enters,
        entry.returns,
    )


def check_session(text: str, forms: Forms | None = None) -> SessionReport:
    """Check a klish session line by line against the provenance table."""
    forms = default_forms() if forms is None else forms
    memo = _memo(forms)
    report = SessionReport()
    stack: list[str] = ["exec"]
    configured = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] == "!":
            continue
        report.lines += 1
        mode = stack[-1]
        verdict = memo.get((mode, line))
        if verdict is None:
            verdict = memo[(mode, line)] = _judge(forms, mode, line)
        if verdict.form is None:
            report.errors.append(f"line {number}: no {mode} form in the table: {line!r}")
            continue
        if verdict.out_of_range:
            report.errors += [
                f"line {number}: {value} outside {low}-{high} in {form!r}"
                for value, low, high, form in verdict.out_of_range
            ]
        if verdict.documented:
            report.documented += 1
        else:
            report.unverified += 1
            key = verdict.form.entry.form
            report.unverified_forms[key] = report.unverified_forms.get(key, 0) + 1
        if verdict.action or verdict.returns or verdict.enters:
            configured = _step(report, stack, verdict, mode, number, line) or configured
    if stack != ["exec"]:
        report.errors.append(f"end of session in {stack[-1]} mode (missing exit/end/answer)")
    if not configured:
        report.errors.append("no 'configure terminal' in the session")
    return report


def _step(
    report: SessionReport, stack: list[str], verdict: Verdict, mode: str, number: int, line: str
) -> bool:
    """Move through the CLI modes as the line's form says; True when it enters config."""
    if verdict.action == "end":
        if mode == "exec":
            report.errors.append(f"line {number}: 'end' in exec mode")
        stack[:] = ["exec"]
    elif verdict.action == "exit":
        if mode == "exec":
            report.errors.append(f"line {number}: '{line}' in exec mode")
        else:
            stack.pop()
    elif verdict.returns:
        stack.pop()
    if verdict.enters:
        stack.append(verdict.enters)
        return mode == "exec" and verdict.enters == "config"
    return False


def check_cli(text: str) -> list[str]:
    """Errors in a klish session, as 'line N: ...'; [] when every line fits a form."""
    return check_session(text).errors


def _match(
    forms: dict[str, tuple[Form, ...]], mode: str, line: str
) -> tuple[Form | None, re.Match[str] | None]:
    for form in (*forms.get(mode, ()), *forms.get("any", ())):
        match = form.pattern.match(line)
        if match:
            return form, match
    return None, None


def _out_of_range(form: Form, match: re.Match[str]) -> tuple[tuple[str, int, int, str], ...]:
    found = []
    for group, low, high in form.ranges:
        value = match.group(group)
        if value is not None and not low <= int(value) <= high:
            found.append((value, low, high, form.entry.form))
    return tuple(found)


ASTERNOS_FILE = "asternos.cli"


def check_file(device: str, files: Mapping[str, str]) -> dict[str, int]:
    """The platform's render check: the session's line counts by provenance.

    Raises RenderError naming the switch and its first offending lines when a line matches no
    form of the provenance table, so nothing is written or pushed."""
    report = check_session(files[ASTERNOS_FILE])
    if report.errors:
        shown = "; ".join(report.errors[:3])
        more = f" (and {len(report.errors) - 3} more)" if len(report.errors) > 3 else ""
        raise RenderError(device, f"{ASTERNOS_FILE}: {shown}{more}")
    return {"lines": report.lines, "documented": report.documented, "unverified": report.unverified}
