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
from collections import Counter
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


@dataclass(frozen=True, slots=True, eq=False)
class Verdict:
    """What one line is in one mode: its form (None: no form fits), the placeholders out of
    range as (value, low, high, form text), and the form's effect on the CLI mode.

    Compared and hashed by identity: lines of a form share one verdict, and the
    fast path counts verdicts in a Counter."""

    form: Form | None
    out_of_range: tuple[tuple[str, int, int, str], ...] = ()
    documented: bool = False
    action: str | None = None
    enters: str | None = None
    returns: bool = False
    plain: bool = field(init=False)
    """A line that fits a form, in range, and leaves the CLI mode as it is."""

    def __post_init__(self) -> None:
        moves = self.out_of_range or self.action or self.enters or self.returns
        object.__setattr__(self, "plain", self.form is not None and not moves)


Forms = dict[str, tuple[Form, ...]]


class _Learned:
    """What the checker has learned about one forms table, kept for the process.

    A session's lines repeat (every interface stanza's "mtu", "no shutdown", "exit"; a
    fabric's switches share most lines: 9 in 10 of the 16,384-GPU example's lines are
    repeats), so each distinct line is judged once per mode; a line tries only the forms that
    can start with its first word; lines of one form share one verdict (unless a value is out
    of range), so a session's verdicts count in a small Counter."""

    def __init__(self, forms: Forms) -> None:
        self.forms = forms
        self.lines: dict[str, dict[str, Verdict]] = {}
        """mode -> line -> its verdict (most are shared: no object per line for the GC)."""
        self.candidates: dict[tuple[str, str], tuple[Form, ...]] = {}
        self.by_form: dict[int, Verdict] = {}

    def mode(self, mode: str) -> dict[str, Verdict]:
        return self.lines.setdefault(mode, {})

    def verdict(self, mode: str, line: str) -> Verdict:
        """The verdict of a stripped line (neither blank nor a comment) in ``mode``."""
        table = self.mode(mode)
        known = table.get(line)
        if known is None:
            known = table[line] = self.judge(mode, line)
        return known

    def add(self, table: dict[str, Verdict], mode: str, raw: str) -> Verdict:
        """The verdict of a line as rendered (indented, or blank or a comment: SKIP), kept in
        the mode's ``table`` under that line too, so the fast path never strips."""
        line = raw.strip()
        verdict = SKIP if not line or line[0] == "!" else self.verdict(mode, line)
        table[raw] = verdict
        return verdict

    def judge(self, mode: str, line: str) -> Verdict:
        for form in self.forms_for(mode, line.partition(" ")[0]):
            match = form.pattern.match(line)
            if match:
                out_of_range = _out_of_range(form, match) if form.ranges else ()
                if out_of_range:
                    return _verdict_of(form, out_of_range)
                shared = self.by_form.get(id(form))
                if shared is None:
                    shared = self.by_form[id(form)] = _verdict_of(form, ())
                return shared
        return Verdict(None)

    def forms_for(self, mode: str, word: str) -> tuple[Form, ...]:
        """The mode's forms (then those of any mode) in table order, less those whose fixed
        first word is not ``word``: the first match is the same, after a few regexes."""
        found = self.candidates.get((mode, word))
        if found is None:
            every = (*self.forms.get(mode, ()), *self.forms.get("any", ()))
            found = self.candidates[(mode, word)] = tuple(
                f for f in every if _first_word(f.entry.form) in (None, word)
            )
        return found


SKIP = Verdict(None)
"""A blank line or a comment: not a command, not counted."""
_learned: dict[int, _Learned] = {}


def _learned_for(forms: Forms) -> _Learned:
    learned = _learned.get(id(forms))
    if learned is None or learned.forms is not forms:
        learned = _learned[id(forms)] = _Learned(forms)
    return learned


def _verdict_of(form: Form, out_of_range: tuple[tuple[str, int, int, str], ...]) -> Verdict:
    entry = form.entry
    return Verdict(form, out_of_range, form.documented, entry.action, entry.enters, entry.returns)


_HEAD = re.compile(r"[^<{\[\] ]+")


def _first_word(form: str) -> str | None:
    """The word every line of ``form`` starts with (followed by a space or the end of the
    line), or None when the form starts with a placeholder, a choice or an option, or its
    first word runs into one (``vlan<id>``)."""
    head = _HEAD.match(form)
    if head is None or form[head.end() : head.end() + 1] not in ("", " "):
        return None
    return head.group(0)


def check_session(text: str, forms: Forms | None = None) -> SessionReport:
    """Check a klish session line by line against the provenance table.

    A session without faults (the rule) takes the fast path, which only counts; any fault
    sends the session through the line-numbered walk that words the errors."""
    forms = default_forms() if forms is None else forms
    return _fast_session(text, forms) or _walk_session(text, forms)


def _fast_session(text: str, forms: Forms) -> SessionReport | None:
    """The report of a session without faults, or None at its first fault (a line that fits
    no form or is out of range, a wrong exit, a session not ending in exec mode or not
    entering config). Same counts as the walk; no line numbers, so a tight loop."""
    learned = _learned_for(forms)
    stack = ["exec"]
    mode = "exec"
    by_mode = learned.lines
    table = learned.mode(mode)
    configured = False
    seen: list[Verdict] = []
    append = seen.append
    for line in text.splitlines():
        verdict = table.get(line) or learned.add(table, mode, line)
        append(verdict)
        if verdict.plain or verdict is SKIP:
            continue
        if verdict.form is None or verdict.out_of_range:
            return None
        if verdict.action == "end":
            if mode == "exec":
                return None
            stack[1:] = []
        elif verdict.action == "exit" or verdict.returns:
            if mode == "exec":
                return None
            stack.pop()
        if verdict.enters:
            configured = configured or (mode == "exec" and verdict.enters == "config")
            stack.append(verdict.enters)
        mode = stack[-1]
        table = by_mode.get(mode) or learned.mode(mode)
    if stack != ["exec"] or not configured:
        return None
    counts = Counter(seen)
    counts.pop(SKIP, None)
    return _counted(counts)


def _counted(counts: Counter[Verdict]) -> SessionReport:
    report = SessionReport(lines=counts.total())
    for verdict, count in counts.items():
        if verdict.documented:
            report.documented += count
        else:
            assert verdict.form is not None  # the fast path returns None on such a line
            report.unverified += count
            key = verdict.form.entry.form
            report.unverified_forms[key] = report.unverified_forms.get(key, 0) + count
    return report


def _walk_session(text: str, forms: Forms) -> SessionReport:
    """The line-numbered walk: every fault of the session, worded with its line number."""
    learned = _learned_for(forms)
    report = SessionReport()
    stack: list[str] = ["exec"]
    configured = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] == "!":
            continue
        report.lines += 1
        mode = stack[-1]
        verdict = learned.verdict(mode, line)
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
