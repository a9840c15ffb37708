"""Live state on the picture: a `dpctl verify --json` run's device states and BGP sessions
down, a `dpctl simulate --links-out` run's per-cable loads (``apply_state``)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from controller.errors import DpctlError
from controller.facts import Fabric
from controller.outputs.drawing_model import (
    BoxState,
    Drawing,
    box_of,
    bundle_id,
    cable_ends,
    drawing_height,
)


class StateFileError(DpctlError):
    """A verify or simulate JSON file does not have the expected shape."""


def _checks(verify: dict[str, Any], where: str) -> list[dict[str, Any]]:
    checks = verify.get("checks")
    if not isinstance(checks, list) or not all(
        isinstance(c, dict) and {"device", "check", "ok"} <= c.keys() for c in checks
    ):
        raise StateFileError(
            where, "not the JSON of `dpctl verify --json` (a 'checks' list of device/check/ok)"
        )
    return checks


def _field(where: str, i: int, name: str) -> str:
    return f"{where}: links[{i}].{name}"


def _link_loads(
    simulate: dict[str, Any], fabric: Fabric, where: str
) -> dict[tuple[str, str], float]:
    """Loads by device pair (both orders) from `dpctl simulate --links-out`:
    {"fabric", "planes", "links": [{"a_device", "z_device", "load" >= 0, ...}]}; the highest
    load where parallel cables join the same two devices."""
    name = simulate.get("fabric")
    if name is not None and name != fabric.intent.name:
        raise StateFileError(
            f"{where}: fabric",
            f"the run is of fabric {name!r}, the report of {fabric.intent.name!r}",
        )
    if simulate.get("planes", 2) != 2:
        raise StateFileError(
            f"{where}: planes",
            "a single-plane baseline run is not the drawn fabric (simulate with --planes 2)",
        )
    rows = simulate.get("links")
    if not isinstance(rows, list):
        raise StateFileError(
            f"{where}: links",
            "expected a list of {a_device, z_device, load} (write it with "
            "`dpctl simulate --links-out FILE`; --json holds only the summary)",
        )
    cabled = {(lk.a_device, lk.z_device) for lk in fabric.links}
    cabled |= {(z, a) for a, z in cabled}
    loads: dict[tuple[str, str], float] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise StateFileError(f"{where}: links[{i}]", "expected an object")
        for key in ("a_device", "z_device", "load"):
            if key not in row:
                raise StateFileError(_field(where, i, key), "missing")
        a, z, load = row["a_device"], row["z_device"], row["load"]
        for key, value in (("a_device", a), ("z_device", z)):
            if not isinstance(value, str):
                raise StateFileError(
                    _field(where, i, key), f"expected a device name, got {value!r}"
                )
        if isinstance(load, bool) or not isinstance(load, int | float) or not 0 <= load < math.inf:
            raise StateFileError(_field(where, i, "load"), f"expected a number >= 0, got {load!r}")
        if (a, z) not in cabled:
            raise StateFileError(
                f"{where}: links[{i}]",
                f"no cable between {a!r} and {z!r} in fabric {fabric.intent.name!r}",
            )
        for pair in ((a, z), (z, a)):
            loads[pair] = max(float(load), loads.get(pair, 0.0))
    return loads


@dataclass
class _VerifyState:
    """What a verify run says about the picture: each box's worst state, notes, ports down."""

    box_state: dict[str, BoxState] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    down_ports: set[tuple[str, str]] = field(default_factory=set)


STATE_RANK = {"ok": 0, "failed": 1, "drained": 2, "unreachable": 3}
"""A box of several devices shows the worst of their states."""


def _verify_state(verify: dict[str, Any], owner: dict[str, str], where: str) -> _VerifyState:
    found = _VerifyState()
    for c in _checks(verify, where):
        device = str(c["device"])
        if device not in owner:
            continue
        state: BoxState | None = None
        if c["check"] == "reachable" and not c["ok"]:
            state = "unreachable"
        elif str(c["check"]).startswith("maintenance (drained"):
            state = "drained"
            found.notes[owner[device]].append(f"{device} {c['check'][13:-1]}")
        elif not c["ok"]:
            state = "failed"
            found.notes[owner[device]].append(f"{device}: {c['check']}")
        if c["check"] == "bgp-sessions" and not c["ok"]:
            missing = set(c.get("expected") or []) - set(c.get("found") or [])
            found.down_ports |= {(device, str(p)) for p in missing}
        box_id = owner[device]
        if state and STATE_RANK[state] > STATE_RANK[found.box_state.get(box_id, "ok")]:
            found.box_state[box_id] = state
    return found


def _accept_state(accept: dict[str, Any], owner: dict[str, str], where: str) -> _VerifyState:
    """A `dpctl accept --json` run on the picture: each failing finding's device box failed,
    its port's cable drawn as down (the bundle it is in)."""
    rows = accept.get("findings")
    if not isinstance(rows, list) or not all(
        isinstance(r, dict) and {"status", "device", "port"} <= r.keys() for r in rows
    ):
        raise StateFileError(where, "not the JSON of `dpctl accept --json` (a 'findings' list)")
    found = _VerifyState()
    for r in rows:
        device = str(r["device"])
        if r["status"] != "fail" or device not in owner:
            continue
        found.box_state[owner[device]] = "failed"
        found.notes[owner[device]].append(f"{r['element']}: {r['what']}")
        if r["port"]:
            found.down_ports.add((device, str(r["port"])))
    return found


def _bundle_state(
    fabric: Fabric,
    owner: dict[str, str],
    down_ports: set[tuple[str, str]],
    loads: dict[tuple[str, str], float],
) -> tuple[dict[str, int], dict[str, float]]:
    """Per bundle: its cables whose BGP session is down, and its highest cable load."""
    down: dict[str, int] = defaultdict(int)
    load_of: dict[str, float] = {}
    for link in fabric.links:
        a, z = cable_ends(link)
        bid = bundle_id(link.kind, owner[a], owner[z])
        if (link.a_device, link.a_port) in down_ports or (link.z_device, link.z_port) in down_ports:
            down[bid] += 1
        load = loads.get((link.a_device, link.z_device))
        if load is not None:
            load_of[bid] = max(load, load_of.get(bid, 0.0))
    return down, load_of


def _legend(
    drawing: Drawing, verify: bool, simulate: bool, peak: float | None, accept: bool = False
) -> tuple[tuple[str, str], ...]:
    legend = list(drawing.legend)
    if verify or accept:
        down = "cables with BGP down" if not accept else "cables failing dpctl accept"
        if verify and accept:
            down = "cables with BGP down or failing dpctl accept"
        legend += [
            ("drained", "drained leaf"),
            ("failed", "device with failed checks"),
            ("unreachable", "unreachable device"),
            ("down", down),
        ]
    if simulate:
        legend += [("load", "load ÷ line rate: 0, 1, ≥2")]
        if peak is not None:
            legend += [("peak", f"most loaded: {peak:.2f}× line rate")]
    return tuple(legend)


def apply_state(
    drawing: Drawing,
    fabric: Fabric,
    verify: dict[str, Any] | None = None,
    simulate: dict[str, Any] | None = None,
    verify_name: str = "--verify",
    simulate_name: str = "--simulate",
    accept: dict[str, Any] | None = None,
) -> Drawing:
    """Colour the picture with a verify run (drained, failed, unreachable devices; cables whose
    BGP session is down) and, if given, a simulate run's per-link loads (highest per bundle)."""
    owner = box_of(drawing.boxes)
    seen = _verify_state(verify, owner, verify_name) if verify is not None else _VerifyState()
    if accept is not None:
        more = _accept_state(accept, owner, "accept.json")
        seen.down_ports |= more.down_ports
        for box, state in more.box_state.items():
            if STATE_RANK[state] > STATE_RANK[seen.box_state.get(box, "ok")]:
                seen.box_state[box] = state
        for box, notes in more.notes.items():
            seen.notes[box] = notes + seen.notes.get(box, [])
    loads = _link_loads(simulate, fabric, simulate_name) if simulate is not None else {}
    down, load_of = _bundle_state(fabric, owner, seen.down_ports, loads)
    boxes = tuple(
        replace(
            b, state=seen.box_state.get(b.id, "ok"), note="; ".join(seen.notes.get(b.id, [])[:3])
        )
        for b in drawing.boxes
    )
    peak = max(load_of.values(), default=None)
    bundles = tuple(
        replace(
            b,
            down=down.get(b.id, 0),
            load=load_of.get(b.id),
            peak=peak is not None and load_of.get(b.id) == peak,
        )
        for b in drawing.bundles
    )
    legend = _legend(drawing, verify is not None, simulate is not None, peak, accept is not None)
    return replace(
        drawing,
        boxes=boxes,
        bundles=bundles,
        has_state=verify is not None or accept is not None,
        has_load=simulate is not None,
        max_load=peak,
        legend=legend,
        height=drawing_height(drawing.legend_y, drawing.width, len(legend)),
    )
