"""The AsterNOS checker's two paths agree: a session goes through the counting fast path and,
at its first fault, through the line-numbered walk; whatever the session, the report
(counts, unverified forms in their order, errors) is the walk's own report."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.platforms.asternos.provenance import default_forms
from controller.platforms.asternos.syntax import (
    SessionReport,
    _first_word,
    _walk_session,
    check_session,
)
from controller.render.engine import render_fabric

STRAY = [
    "exit", "end", "y", "write", "configure terminal", "interface ethernet 0/9", "vlan 99999",
    " ! comment", "", "mtu 99999999", "router bgp 65000", "no such command", "interface vlan 7",
]  # fmt: skip


def intent(mode: str, model: str, lb: str) -> dict[str, Any]:
    return {
        "name": f"t-{mode}",
        "platform": "asternos",
        "switches": {"leaf": model, "spine": model},
        "servers": 16,
        "gpus_per_server": 4,
        "dual_leaf_mode": mode,
        "addressing": {
            "loopbacks": "10.0.0.0/24",
            "rail_subnets": "10.128.0.0/16",
            "management": "172.16.0.0/24",
        },
        "roce": {"enabled": True, "cable_length_m": 5, "incast": "medium"},
        "load_balancing": {"mode": lb},
    }


@cache
def sessions() -> tuple[str, ...]:
    fabrics = [intent("evpn-mh", "CX864E-N", "ars"), intent("dual-arp", "CX732Q-N", "ecmp")]
    return tuple(
        files["asternos.cli"]
        for data in fabrics
        for files in render_fabric(build_fabric(intent_from_data(data))).values()
    )


def as_tuple(report: SessionReport) -> tuple[object, ...]:
    return (
        report.lines,
        report.documented,
        report.unverified,
        report.errors,
        list(report.unverified_forms.items()),
    )


def test_rendered_sessions_take_the_fast_path_and_agree() -> None:
    for text in sessions():
        report = check_session(text)
        assert report.errors == []
        assert as_tuple(report) == as_tuple(_walk_session(text, default_forms()))


positions = st.one_of(st.integers(-4, 4), st.integers(min_value=0))
"""Line positions: near the session's start or end (exec mode: before `configure terminal`,
after `end`) as often as anywhere."""
edits = st.lists(
    st.tuples(
        st.sampled_from(["delete", "copy", "stray", "swap", "cut-tail", "cut-head"]),
        positions,
        positions,
        st.sampled_from(STRAY),
    ),
    min_size=1,
    max_size=4,
)


def edit(lines: list[str], change: tuple[str, int, int, str]) -> list[str]:
    kind, i, j, stray = change
    i, j = i % (len(lines) + 1), j % (len(lines) + 1)
    if kind == "delete":
        return lines[:i] + lines[i + 1 :]
    if kind == "copy":
        return lines[:i] + lines[j : j + 1] + lines[i:]
    if kind == "stray":
        return [*lines[:i], stray, *lines[i:]]
    if kind == "swap" and i < len(lines) and j < len(lines):
        lines = list(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines
    return lines[:i] if kind == "cut-tail" else lines[i:]


@settings(max_examples=300, deadline=None)
@given(which=st.integers(min_value=0), changes=edits)
def test_any_session_gets_the_walks_report(which: int, changes: list[Any]) -> None:
    texts = sessions()
    lines = texts[which % len(texts)].splitlines()
    for change in changes:
        lines = edit(lines, change)
    got, expected = reports("\n".join(lines) + "\n")
    assert got == expected


def reports(text: str) -> tuple[object, object]:
    """(the checker's report, the walk's report), IndexError standing for a raise."""
    found = []
    for check in (check_session, lambda t: _walk_session(t, default_forms())):
        try:
            found.append(as_tuple(check(text)))
        except IndexError:  # 'y' in exec mode leaves no mode at all: both paths raise
            found.append(IndexError)
    return found[0], found[1]


@pytest.mark.parametrize("stray", STRAY)
def test_stray_lines_at_every_mode_boundary(stray: str) -> None:
    """Every stray line at the start, in config mode's first and last line, and after `end`
    (where exec-mode faults live): the same report both ways."""
    for text in sessions()[:3]:
        lines = text.splitlines()
        for at in (0, 1, 2, len(lines) - 3, len(lines) - 2, len(lines) - 1, len(lines)):
            got, expected = reports("\n".join([*lines[:at], stray, *lines[at:]]) + "\n")
            assert got == expected, (stray, at)


def test_first_word_index_is_conservative() -> None:
    assert _first_word("interface ethernet <port>") == "interface"
    assert _first_word("exit") == "exit"
    assert _first_word("vlan<id>") is None
    assert _first_word("<name> x") is None
    assert _first_word("{a|b} c") is None
    assert _first_word("[no ]shutdown") is None
