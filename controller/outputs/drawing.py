"""The fabric picture as data: fabric facts -> boxes and link bundles with their coordinates.

A pure function (``build_drawing``) lays out both planes side by side (spines over leaves,
leaves framed by group with their rails) and the servers in columns below, between the two
leaves of each rail pair. Cables are aggregated into bundles (one per pair of boxes, labelled
with their count) and boxes are aggregated as the fabric grows, so that a 16,384-GPU fabric
stays readable while the lab shows every switch, server and link. The SVG template only
formats this model; the live state of a `dpctl verify --json` run and the per-cable loads of
a `dpctl simulate --links-out` run are folded in by ``apply_state``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from controller.errors import DpctlError
from controller.facts import Fabric, Link, Switch

BoxKind = Literal["spine", "leaf", "server"]
BoxState = Literal["ok", "drained", "failed", "unreachable"]

# Aggregation thresholds: above them boxes stand for several devices.
MAX_SERVER_BOXES = 16
MAX_LEAF_BOXES_PER_PLANE = 32
MAX_FABRIC_BUNDLES_PER_PLANE = 32

# Geometry (SVG user units).
MARGIN = 24
BOX_W = {"spine": 104, "leaf": 104, "server": 112}
BOX_H = {"spine": 52, "leaf": 52, "server": 80}
AGG_SPINE_W_PER_MEMBER = 50
AGG_LEAF_W = 150
GAP = 14
GROUP_GAP = 26
PLANE_GAP = 56
PLANE_TITLE_H = 30
TITLE_H = 34
LEGEND_ITEM_W = 200
LEGEND_ROW_H = 20
ROW_GAP = 120
SERVER_ROW_GAP = 130
FRAME_PAD = 14


@dataclass(frozen=True, slots=True)
class Box:
    """One drawn switch or server, or a block of several when the fabric is large."""

    id: str
    kind: BoxKind
    label: str
    detail: str
    members: tuple[str, ...]
    plane: int | None
    group: int | None
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0
    state: BoxState = "ok"
    note: str = ""
    rails: tuple[int, ...] = ()

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


@dataclass(frozen=True, slots=True)
class Bundle:
    """The cables between two boxes: a (upper end) to z (lower end) in the picture."""

    id: str
    kind: str
    plane: int | None
    a: str
    """Box at the spine end (the plane-1 end of an AUX cable)."""
    z: str
    """Box at the server end (the plane-2 end of an AUX cable)."""
    count: int
    speed: str
    x1: float = 0
    y1: float = 0
    x2: float = 0
    y2: float = 0
    lx: float = 0
    ly: float = 0
    down: int = 0
    """Cables of the bundle whose BGP session a verify run found down."""
    load: float | None = None
    """Highest cable load of a simulate run (over the line rate: 1.0 = full), when given."""
    peak: bool = False
    """The bundle carries the run's highest load (every bundle tied at the maximum)."""
    path: str = ""
    """SVG path data of the bundle's curve."""

    @property
    def label(self) -> str:
        text = f"{self.count}×{self.speed}"
        if self.down:
            text += f" · {self.down} down"
        if self.load is not None:
            text += f" · {self.load:.2f}×"
        return text

    @property
    def label_width(self) -> float:
        return round(len(self.label) * 5.9 + 8, 1)

    @property
    def stroke_width(self) -> float:
        return round(min(1.2 + math.sqrt(self.count) * 0.5, 7.0), 1)

    @property
    def load_hue(self) -> int:
        """Green (120) at no load, yellow (60) at the line rate, red (0) at twice it and above."""
        return load_hue(self.load or 0.0)


LOAD_SCALE_TOP = 2.0
"""The load drawn fully red: twice the line rate (two flows hashed onto one link)."""


def load_hue(load: float) -> int:
    return round((1 - min(max(load, 0.0), LOAD_SCALE_TOP) / LOAD_SCALE_TOP) * 120)


@dataclass(frozen=True, slots=True)
class Frame:
    """A labelled rectangle: a plane, or a group of leaves in a plane."""

    kind: Literal["plane", "group"]
    label: str
    x: float
    y: float
    w: float
    h: float
    label_y: float


@dataclass(frozen=True)
class Drawing:
    title: str
    width: float
    height: float
    boxes: tuple[Box, ...]
    bundles: tuple[Bundle, ...]
    frames: tuple[Frame, ...]
    aggregated: tuple[str, ...]
    """Human notes on what was aggregated (empty when every device and link is drawn)."""
    legend_y: float = 0
    has_state: bool = False
    has_load: bool = False
    max_load: float | None = None
    legend: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def legend_items(self) -> list[tuple[str, str, float, float]]:
        """(key, text, x, y) of each legend entry, as many per row as the width holds."""
        per_row = max(1, int((self.width - 2 * MARGIN) // LEGEND_ITEM_W))
        return [
            (key, text, (i % per_row) * LEGEND_ITEM_W, (i // per_row) * LEGEND_ROW_H)
            for i, (key, text) in enumerate(self.legend)
        ]

    @property
    def note_y(self) -> float:
        rows = -(-len(self.legend) // max(1, int((self.width - 2 * MARGIN) // LEGEND_ITEM_W)))
        return rows * LEGEND_ROW_H + 6


def _height(legend_y: float, width: float, entries: int) -> float:
    rows = -(-entries // max(1, int((width - 2 * MARGIN) // LEGEND_ITEM_W)))
    return round(legend_y + rows * LEGEND_ROW_H + 6 + 18)


def _rails(rails: tuple[int, ...]) -> str:
    if not rails:
        return ""
    if len(rails) == 1:
        return f"rail {rails[0]}"
    if list(rails) == list(range(rails[0], rails[-1] + 1)):
        return f"rails {rails[0]}-{rails[-1]}"
    return "rails " + ",".join(str(r) for r in rails)


def _span(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _spine_boxes(fabric: Fabric, plane: int, aggregate: bool) -> list[Box]:
    spines = fabric.switches_in(plane=plane, role="spine")
    model = spines[0].model
    if not aggregate:
        return [
            Box(s.name, "spine", s.name, f"{s.model}\nAS{s.asn}", (s.name,), plane, None)
            for s in spines
        ]
    names = [s.name for s in spines]
    ports = fabric.sizing.spine_ports
    return [
        Box(
            f"p{plane}-spines",
            "spine",
            f"{len(spines)} spines",
            f"{_span(names)}\n{model} · {ports}×{fabric.sizing.uplink_speed} each",
            tuple(names),
            plane,
            None,
        )
    ]


def _leaf_boxes(fabric: Fabric, plane: int, aggregate: bool) -> list[Box]:
    leaves = fabric.switches_in(plane=plane, role="leaf")
    if not aggregate:
        return [
            Box(
                sw.name,
                "leaf",
                sw.name,
                f"{_rails(sw.rails)}\nAS{sw.asn}",
                (sw.name,),
                plane,
                sw.group,
                rails=sw.rails,
            )
            for sw in leaves
        ]
    by_group: dict[int, list[Switch]] = defaultdict(list)
    for leaf in leaves:
        by_group[leaf.group or 0].append(leaf)
    return [
        Box(
            f"p{plane}-g{g}-leaves",
            "leaf",
            f"{len(members)} leaves",
            _rails(tuple(r for m in members for r in m.rails))
            + f"\n{_span([m.name for m in members])}",
            tuple(m.name for m in members),
            plane,
            g,
            rails=tuple(r for m in members for r in m.rails),
        )
        for g, members in sorted(by_group.items())
    ]


def _server_boxes(fabric: Fabric, aggregate: bool) -> list[Box]:
    gpus = fabric.sizing.gpus_per_server
    if not aggregate:
        return [
            Box(
                s.name,
                "server",
                s.name,
                f"group {s.group}\n{gpus} GPUs\n{len(s.nics) * 2} NIC ports",
                (s.name,),
                None,
                s.group,
            )
            for s in fabric.servers
        ]
    by_group: dict[int, list[str]] = defaultdict(list)
    for server in fabric.servers:
        by_group[server.group].append(server.name)
    return [
        Box(
            f"g{g}-servers",
            "server",
            f"{len(names)} servers",
            f"group {g}\n{names[0]} …\n… {names[-1]}\n{len(names) * gpus:,} GPUs",
            tuple(names),
            None,
            g,
        )
        for g, names in sorted(by_group.items())
    ]


def _row(boxes: list[Box], y: float, group_gap: bool = True) -> list[Box]:
    """Boxes left to right from x=0, with a wider gap where the group changes."""
    placed, x, last_group = [], 0.0, None
    for box in boxes:
        if group_gap and last_group is not None and box.group != last_group:
            x += GROUP_GAP - GAP
        w = BOX_W[box.kind]
        if box.kind == "spine" and len(box.members) > 1:
            w = max(BOX_W["spine"] * 2, min(len(box.members), 16) * AGG_SPINE_W_PER_MEMBER)
        elif box.kind == "leaf" and len(box.members) > 1:
            w = AGG_LEAF_W
        placed.append(replace(box, x=x, y=y, w=w, h=BOX_H[box.kind]))
        x += w + GAP
        last_group = box.group
    return placed


def _width(boxes: list[Box]) -> float:
    return (max(b.x + b.w for b in boxes) - min(b.x for b in boxes)) if boxes else 0


def _shift(boxes: list[Box], dx: float) -> list[Box]:
    return [replace(b, x=b.x + dx) for b in boxes]


def _group_frames(leaf_row: list[Box], label_above: bool) -> list[Frame]:
    by_group: dict[int, list[Box]] = defaultdict(list)
    for box in leaf_row:
        by_group[box.group or 0].append(box)
    frames = []
    for g, members in sorted(by_group.items()):
        rails = tuple(sorted({r for b in members for r in b.rails}))
        top = members[0].y - (20 if label_above else 6)
        height = BOX_H["leaf"] + 26
        frames.append(
            Frame(
                "group",
                f"group {g}" + (f" · {_rails(rails)}" if rails else ""),
                members[0].x - 6,
                top,
                _width(members) + 12,
                height,
                top + 13 if label_above else top + height - 5,
            )
        )
    return frames


def _place_servers(servers: list[Box], leaves: list[Box], y: float) -> list[Box]:
    """Each group's server columns centred under its leaves; pushed right where they'd overlap."""
    centre: dict[int, list[float]] = defaultdict(list)
    for leaf in leaves:
        centre[leaf.group or 0].append(leaf.cx)
    by_group: dict[int, list[Box]] = defaultdict(list)
    for box in servers:
        by_group[box.group or 0].append(box)
    placed: list[Box] = []
    for g, members in sorted(by_group.items()):
        want = sum(centre[g]) / len(centre[g]) if centre[g] else 0
        row = _row(members, y, group_gap=False)
        placed += _shift(row, want - _width(row) / 2)
    placed.sort(key=lambda b: b.x)
    result: list[Box] = []
    for box in placed:
        floor = result[-1].x + result[-1].w + GAP if result else box.x
        result.append(replace(box, x=max(box.x, floor)))
    return result


def _box_of(boxes: list[Box] | tuple[Box, ...]) -> dict[str, str]:
    return {m: b.id for b in boxes for m in b.members}


def _ends(link: Link) -> tuple[str, str]:
    """(a, z) of a cable in the picture: spine before leaf before server; aux: plane 1 first."""
    if link.kind in ("host", "fabric"):
        return link.z_device, link.a_device
    return link.a_device, link.z_device


def bundle_id(kind: str, a_box: str, z_box: str) -> str:
    return f"{kind}:{a_box}:{z_box}"


def _bundles(fabric: Fabric, boxes: list[Box]) -> list[Bundle]:
    """One bundle per pair of boxes and kind of cable."""
    owner = _box_of(boxes)
    counts: dict[tuple[str, str, str, int | None, str], int] = defaultdict(int)
    for link in fabric.links:
        a, z = _ends(link)
        counts[(owner[a], owner[z], link.kind, link.plane, link.speed)] += 1
    return [
        Bundle(bundle_id(kind, a, z), kind, plane, a, z, n, speed)
        for (a, z, kind, plane, speed), n in counts.items()
    ]


def _on_curve(x1: float, y1: float, x2: float, y2: float, t: float) -> tuple[float, float]:
    """The point at ``t`` of the S-curve from (x1, y1) to (x2, y2), control points at mid-y."""
    u = 1 - t
    ym = (y1 + y2) / 2
    x = u**3 * x1 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t**3 * x2
    y = u**3 * y1 + 3 * u * u * t * ym + 3 * u * t * t * ym + t**3 * y2
    return round(x, 1), round(y, 1)


def _attach(bundles: list[Bundle], boxes: dict[str, Box]) -> list[Bundle]:
    """Each bundle runs from the lower edge of its higher box to the upper edge of the other;
    end points are spread along an edge in the order of the other ends. The count label sits
    near the end whose box has fewer bundles, where labels do not crowd."""
    edges: dict[tuple[str, str], list[tuple[Bundle, str]]] = defaultdict(list)
    fan: dict[str, int] = defaultdict(int)
    for b in bundles:
        if b.kind == "aux":
            continue
        top, bottom = sorted((b.a, b.z), key=lambda i: boxes[i].y)
        edges[(top, "bottom")].append((b, bottom))
        edges[(bottom, "top")].append((b, top))
        fan[b.a] += 1
        fan[b.z] += 1
    spot: dict[tuple[str, str], tuple[float, float]] = {}
    order: dict[tuple[str, str], int] = {}
    for (box_id, edge), members in edges.items():
        box = boxes[box_id]
        members.sort(key=lambda m: boxes[m[1]].cx)
        y = box.y + box.h if edge == "bottom" else box.y
        for i, (b, _) in enumerate(members):
            spot[(b.id, box_id)] = (round(box.x + box.w * (i + 1) / (len(members) + 1), 1), y)
            order[(b.id, box_id)] = i
    middle = sum(b.cx for b in boxes.values()) / len(boxes)
    placed = []
    for b in bundles:
        if b.kind == "aux":  # a leaf pair, one above the other: an arc left of the boxes
            a, z = boxes[b.a], boxes[b.z]
            left = a.cx <= middle  # bend outwards, away from the other cables
            x1 = a.x if left else a.x + a.w
            x2 = z.x if left else z.x + z.w
            y1, y2 = a.y + a.h * 0.7, z.y + z.h * 0.3
            bend = min(x1, x2) - 46 if left else max(x1, x2) + 46
            path = f"M{x1},{y1} C{bend},{y1} {bend},{y2} {x2},{y2}"
            lx, ly = round(bend + (11.5 if left else -11.5), 1), round((y1 + y2) / 2, 1)
            placed.append(replace(b, x1=x1, y1=y1, x2=x2, y2=y2, lx=lx, ly=ly, path=path))
            continue
        (x1, y1), (x2, y2) = spot[(b.id, b.a)], spot[(b.id, b.z)]
        ym = round((y1 + y2) / 2, 1)
        path = f"M{x1},{y1} C{x1},{ym} {x2},{ym} {x2},{y2}"
        near_a = fan[b.a] <= fan[b.z]
        # neighbouring labels alternate in height so that they never overlap
        step = 0.13 if order[(b.id, b.a if near_a else b.z)] % 2 else 0.0
        t = 0.22 + step if near_a else 0.78 - step
        lx, ly = _on_curve(x1, y1, x2, y2, t)
        placed.append(replace(b, x1=x1, y1=y1, x2=x2, y2=y2, lx=lx, ly=ly, path=path))
    return placed


def build_drawing(fabric: Fabric) -> Drawing:
    """The picture of ``fabric``: every device and cable at lab size, blocks at scale.

    Plane 1 is drawn above the servers (spines over leaves) and plane 2 mirrored below them
    (leaves over spines), so that every server column sits between the two leaves of its
    rails and every host cable runs straight to its leaf; spines stay on the outside.
    """
    s = fabric.sizing
    leaf_agg = s.leaves_per_plane > MAX_LEAF_BOXES_PER_PLANE
    leaf_boxes_pp = s.groups if leaf_agg else s.leaves_per_plane
    spine_agg = leaf_boxes_pp * s.spines_per_plane > MAX_FABRIC_BUNDLES_PER_PLANE
    server_agg = s.servers > MAX_SERVER_BOXES
    notes = []
    if spine_agg:
        notes.append(f"the {s.spines_per_plane} spines of a plane are one block")
    if leaf_agg:
        notes.append(f"the {s.leaves_per_group} leaves of a group are one block per plane")
    if server_agg:
        notes.append(f"the servers of a group (up to {s.servers_per_group}) are one column")
    top = MARGIN + TITLE_H
    y_spine1 = top + PLANE_TITLE_H + FRAME_PAD
    y_leaf1 = y_spine1 + BOX_H["spine"] + ROW_GAP
    y_server = y_leaf1 + BOX_H["leaf"] + SERVER_ROW_GAP
    y_leaf2 = y_server + BOX_H["server"] + SERVER_ROW_GAP
    y_spine2 = y_leaf2 + BOX_H["leaf"] + ROW_GAP
    bottom = y_spine2 + BOX_H["spine"] + FRAME_PAD + PLANE_TITLE_H
    rows = {
        "spine1": _row(_spine_boxes(fabric, 1, spine_agg), y_spine1, group_gap=False),
        "leaf1": _row(_leaf_boxes(fabric, 1, leaf_agg), y_leaf1),
        "leaf2": _row(_leaf_boxes(fabric, 2, leaf_agg), y_leaf2),
        "spine2": _row(_spine_boxes(fabric, 2, spine_agg), y_spine2, group_gap=False),
    }
    servers = _place_servers(_server_boxes(fabric, server_agg), rows["leaf1"], y_server)
    title = (
        f"{fabric.intent.name}: {s.gpus:,} GPUs · {s.servers:,} servers · "
        f"{s.leaves} leaves · {s.spines} spines ({s.leaf_model}/{s.spine_model})"
    )
    inner = max(max(_width(r) for r in rows.values()), _width(servers), len(title) * 9.5 - 120)
    left = MARGIN + FRAME_PAD * 2 + 60  # room for the AUX arcs beside the leaves
    boxes: list[Box] = []
    for row in rows.values():
        boxes += _shift(row, left + (inner - _width(row)) / 2 - row[0].x)
    leaves1 = [b for b in boxes if b.kind == "leaf" and b.plane == 1]
    # servers keep their place relative to their leaves: shift them with the leaf row
    dx = leaves1[0].x - rows["leaf1"][0].x
    servers = _shift(servers, dx)
    boxes += servers
    width = max(left + inner, max(b.x + b.w for b in servers)) + FRAME_PAD * 2 + 60 + MARGIN
    frame_w = width - 2 * MARGIN
    p1_h = y_leaf1 + BOX_H["leaf"] + FRAME_PAD - top
    p2_top = y_leaf2 - FRAME_PAD - 6
    frames = [
        Frame("plane", "plane 1", MARGIN, top, frame_w, p1_h, top + 21),
        Frame("plane", "plane 2", MARGIN, p2_top, frame_w, bottom - p2_top, bottom - 10),
    ]
    frames += _group_frames(leaves1, label_above=True)
    frames += _group_frames(
        [b for b in boxes if b.kind == "leaf" and b.plane == 2], label_above=False
    )
    legend_y = bottom + MARGIN
    legend = (("plane1", "plane 1 cable"), ("plane2", "plane 2 cable")) + (
        (("aux", "AUX cable (leaf pair)"),) if any(lk.kind == "aux" for lk in fabric.links) else ()
    )
    by_id = {b.id: b for b in boxes}
    bundles = _attach(_bundles(fabric, boxes), by_id)
    return Drawing(
        title=title,
        width=round(width),
        height=_height(legend_y, width, len(legend)),
        boxes=tuple(boxes),
        bundles=tuple(bundles),
        frames=tuple(frames),
        aggregated=tuple(notes),
        legend_y=round(legend_y),
        legend=legend,
    )


# -- live state --------------------------------------------------------------------------


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


def apply_state(
    drawing: Drawing,
    fabric: Fabric,
    verify: dict[str, Any] | None = None,
    simulate: dict[str, Any] | None = None,
    verify_name: str = "--verify",
    simulate_name: str = "--simulate",
) -> Drawing:
    """Colour the picture with a verify run (drained, failed, unreachable devices; cables whose
    BGP session is down) and, if given, a simulate run's per-link loads (highest per bundle)."""
    owner = _box_of(drawing.boxes)
    box_state: dict[str, BoxState] = {}
    notes: dict[str, list[str]] = defaultdict(list)
    down_ports: set[tuple[str, str]] = set()
    if verify is not None:
        rank = {"ok": 0, "failed": 1, "drained": 2, "unreachable": 3}
        for c in _checks(verify, verify_name):
            device = str(c["device"])
            if device not in owner:
                continue
            state: BoxState | None = None
            if c["check"] == "reachable" and not c["ok"]:
                state = "unreachable"
            elif str(c["check"]).startswith("maintenance (drained"):
                state = "drained"
                notes[owner[device]].append(f"{device} {c['check'][13:-1]}")
            elif not c["ok"]:
                state = "failed"
                notes[owner[device]].append(f"{device}: {c['check']}")
            if c["check"] == "bgp-sessions" and not c["ok"]:
                missing = set(c.get("expected") or []) - set(c.get("found") or [])
                down_ports |= {(device, str(p)) for p in missing}
            box_id = owner[device]
            if state and rank[state] > rank[box_state.get(box_id, "ok")]:
                box_state[box_id] = state
    loads = _link_loads(simulate, fabric, simulate_name) if simulate is not None else {}
    down: dict[str, int] = defaultdict(int)
    load_of: dict[str, float] = {}
    for link in fabric.links:
        a, z = _ends(link)
        bid = bundle_id(link.kind, owner[a], owner[z])
        if (link.a_device, link.a_port) in down_ports or (link.z_device, link.z_port) in down_ports:
            down[bid] += 1
        load = loads.get((link.a_device, link.z_device))
        if load is not None:
            load_of[bid] = max(load, load_of.get(bid, 0.0))
    boxes = tuple(
        replace(b, state=box_state.get(b.id, "ok"), note="; ".join(notes.get(b.id, [])[:3]))
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
    legend = list(drawing.legend)
    if verify is not None:
        legend += [
            ("drained", "drained leaf"),
            ("failed", "device with failed checks"),
            ("unreachable", "unreachable device"),
            ("down", "cables with BGP down"),
        ]
    if simulate is not None:
        legend += [("load", "load ÷ line rate: 0, 1, ≥2")]
        if peak is not None:
            legend += [("peak", f"most loaded: {peak:.2f}× line rate")]
    return replace(
        drawing,
        boxes=boxes,
        bundles=bundles,
        has_state=verify is not None,
        has_load=simulate is not None,
        max_load=peak,
        legend=tuple(legend),
        height=_height(drawing.legend_y, drawing.width, len(legend)),
    )
