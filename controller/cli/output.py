"""Human output of the CLI: words and tables for people, never a Python repr.

Pure functions from the library's results to rich renderables or text; cli.py prints them.
Live progress (spinners, bars) is shown only on a terminal, never in CI (``CI`` set) or with
``--json``, so logs and pipes stay clean.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text


def live_enabled(console: Console, as_json: bool) -> bool:
    """Progress only for a person at a terminal: not with --json, not in CI."""
    return not as_json and console.is_terminal and not os.environ.get("CI")


@contextmanager
def status(console: Console, text: str, enabled: bool) -> Iterator[None]:
    """A spinner with ``text`` while the block runs (nothing when disabled)."""
    if not enabled:
        yield
        return
    with console.status(text):
        yield


def short(value: Any, limit: int = 160) -> str:
    """A value in one line: strings as they are, lists joined, the rest as JSON."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | tuple) and all(isinstance(v, str | int) for v in value):
        text = ", ".join(str(v) for v in value) if value else "(none)"
    else:
        text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- lab down -----------------------------------------------------------------------------


def lab_down_text(name: str, report: Mapping[str, Any]) -> str:
    """``{'guest_stopped': [4553], 'namespaces_removed': []}`` in words."""
    guests = list(report.get("guest_stopped") or [])
    namespaces = list(report.get("namespaces_removed") or [])
    taps = list(report.get("taps_removed") or [])
    parts = []
    if guests:
        pids = ", ".join(str(p) for p in guests)
        parts.append(f"stopped the lab guest (pid {pids})")
    if namespaces:
        parts.append(f"removed {len(namespaces)} namespace(s): {', '.join(map(str, namespaces))}")
    if taps:
        parts.append(f"removed tap {', '.join(map(str, taps))}")
    if not parts:
        return f"lab {name}: nothing was running; state files cleaned up"
    return f"lab {name} down: " + "; ".join(parts)


# -- verify -------------------------------------------------------------------------------


def check_kind(check: str) -> str:
    """'maintenance (drained: isolated)' -> 'maintenance'; 'bgp-sessions' stays."""
    return check.split(" (", 1)[0]


def verify_summary(checks: Sequence[Any], title: str) -> RenderableType:
    """Failures first (device, check, expected, found), then one line per check kind."""
    failed = [c for c in checks if not c.ok]
    parts: list[RenderableType] = []
    if failed:
        table = Table(title=f"{title}: {len(failed)} failed", title_justify="left")
        for col in ("device", "check", "expected", "found"):
            table.add_column(col, overflow="fold")
        for c in failed:
            table.add_row(c.device, f"[red]{c.check}[/]", short(c.expected), short(c.found))
        parts.append(table)
    kinds: dict[str, list[Any]] = defaultdict(list)
    for c in checks:
        kinds[check_kind(c.check)].append(c)
    summary = Table(title=f"{title}: checks by kind", title_justify="left")
    for col, justify in (("check", "left"), ("devices", "right"), ("passed", "right")):
        summary.add_column(col, justify=justify)  # type: ignore[arg-type]
    summary.add_column("result")
    for kind, items in kinds.items():
        bad = [c for c in items if not c.ok]
        drained = sorted({c.device for c in items if "drained" in c.check})
        result = "[green]ok[/]" if not bad else f"[red]{len(bad)} failed[/]"
        if drained:
            result += f" (drained: {', '.join(drained)})"
        summary.add_row(
            kind, str(len({c.device for c in items})), f"{len(items) - len(bad)}", result
        )
    parts.append(summary)
    passed = len(checks) - len(failed)
    verdict = (
        f"[green]{passed}/{len(checks)} checks passed[/]"
        if not failed
        else f"[red]{len(failed)} of {len(checks)} checks failed[/] (listed first)"
    )
    parts.append(Text.from_markup(verdict))
    return Group(*parts)


# -- drain / undrain ----------------------------------------------------------------------

STEP_NAMES = {
    "graceful-shutdown": "graceful-shutdown (routes withdrawn, sessions kept)",
    "handed-off": "handed-off (its servers reached through its pair, host ports still up)",
    "isolated": "isolated (sessions and host ports down)",
    "returning": "returning (policy back, host ports held down until BGP is up)",
    "none": "in service (host ports up, normal policy)",
}


def step_name(state: str) -> str:
    """A maintenance state as the step a person reads; never the bare word 'none'."""
    return STEP_NAMES.get(state, state)


def drain_lines(report: Any) -> list[str]:
    """A drain or undrain report as rich-markup lines: impact, refusals, steps, checks."""
    lines = [f"[bold]{report.action} {report.leaf}[/] (pair leaf {report.partner})"]
    lines += [f"  impact: {line}" for line in report.impact]
    for line in report.refusals:
        forced = " [yellow](overridden by --force)[/]" if report.forced else ""
        lines.append(f"  [red]refusal[/]: {line}{forced}")
    for step in report.steps:
        state = "[green]ok[/]" if step["ok"] else f"[red]failed[/]: {step['error']}"
        if "servers_changed" in step:
            state += f", {step['servers_changed']} servers changed"
        lines.append(f"  step {step_name(step['state'])}: {state} ({step['seconds']} s)")
    for check in report.checks_failed:
        lines.append(
            f"  [red]check failed[/]: {check['device']} {check['check']}: expected "
            f"{short(check['expected'])}, found {short(check['found'])}"
        )
    if report.dry_run:
        lines.append("  dry run: nothing changed")
    elif report.ok:
        lines.append(f"  [green]{report.action} of {report.leaf} done[/]; plane checks passed")
    return lines
