"""The fabric picture as data: fabric facts -> boxes and link bundles with their coordinates.

A pure function (``build_drawing``) lays out both planes side by side (spines over leaves,
leaves framed by group with their rails) and the servers in columns below, between the two
leaves of each rail pair. Cables are aggregated into bundles (one per pair of boxes, labelled
with their count) and boxes are aggregated as the fabric grows, so that a 16,384-GPU fabric
stays readable while the lab shows every switch, server and link. The SVG template only
formats this model (``controller.outputs.drawing_model``); the live state of a `dpctl verify
--json` run and the per-cable loads of a `dpctl simulate --links-out` run are folded in by
``controller.outputs.drawing_state.apply_state``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from controller.facts import Fabric, Switch
from controller.outputs.drawing_bundles import attach, cable_bundles
from controller.outputs.drawing_model import (
    AGG_LEAF_W,
    AGG_SPINE_W_PER_MEMBER,
    BOX_H,
    BOX_W,
    FRAME_PAD,
    GAP,
    GROUP_GAP,
    MARGIN,
    MAX_FABRIC_BUNDLES_PER_PLANE,
    MAX_LEAF_BOXES_PER_PLANE,
    MAX_SERVER_BOXES,
    PLANE_TITLE_H,
    ROW_GAP,
    SERVER_ROW_GAP,
    TITLE_H,
    Box,
    Drawing,
    Frame,
    drawing_height,
)
from controller.sizing import Sizing


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


# Rows from top to bottom: plane 1 (spines, leaves), the servers, plane 2 (leaves, spines).
TOP = MARGIN + TITLE_H
Y_SPINE1 = TOP + PLANE_TITLE_H + FRAME_PAD
Y_LEAF1 = Y_SPINE1 + BOX_H["spine"] + ROW_GAP
Y_SERVER = Y_LEAF1 + BOX_H["leaf"] + SERVER_ROW_GAP
Y_LEAF2 = Y_SERVER + BOX_H["server"] + SERVER_ROW_GAP
Y_SPINE2 = Y_LEAF2 + BOX_H["leaf"] + ROW_GAP
BOTTOM = Y_SPINE2 + BOX_H["spine"] + FRAME_PAD + PLANE_TITLE_H
SIDE = MARGIN + FRAME_PAD * 2 + 60
"""Left of the rows: room for the AUX arcs beside the leaves (the same on the right)."""


@dataclass(frozen=True)
class _Aggregation:
    """Which rows draw blocks of several devices, and the notes that say so."""

    spines: bool
    leaves: bool
    servers: bool
    notes: tuple[str, ...]


def _aggregation(s: Sizing) -> _Aggregation:
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
    return _Aggregation(spine_agg, leaf_agg, server_agg, tuple(notes))


def _title(fabric: Fabric) -> str:
    s = fabric.sizing
    return (
        f"{fabric.intent.name}: {s.gpus:,} GPUs · {s.servers:,} servers · "
        f"{s.leaves} leaves · {s.spines} spines ({s.leaf_model}/{s.spine_model})"
    )


def _boxes(fabric: Fabric, agg: _Aggregation, title: str) -> tuple[list[Box], float]:
    """Every box at its place, centred in the rows' common width; the picture's width."""
    rows = {
        "spine1": _row(_spine_boxes(fabric, 1, agg.spines), Y_SPINE1, group_gap=False),
        "leaf1": _row(_leaf_boxes(fabric, 1, agg.leaves), Y_LEAF1),
        "leaf2": _row(_leaf_boxes(fabric, 2, agg.leaves), Y_LEAF2),
        "spine2": _row(_spine_boxes(fabric, 2, agg.spines), Y_SPINE2, group_gap=False),
    }
    servers = _place_servers(_server_boxes(fabric, agg.servers), rows["leaf1"], Y_SERVER)
    inner = max(max(_width(r) for r in rows.values()), _width(servers), len(title) * 9.5 - 120)
    boxes: list[Box] = []
    for row in rows.values():
        boxes += _shift(row, SIDE + (inner - _width(row)) / 2 - row[0].x)
    leaves1 = [b for b in boxes if b.kind == "leaf" and b.plane == 1]
    # servers keep their place relative to their leaves: shift them with the leaf row
    servers = _shift(servers, leaves1[0].x - rows["leaf1"][0].x)
    boxes += servers
    width = max(SIDE + inner, max(b.x + b.w for b in servers)) + FRAME_PAD * 2 + 60 + MARGIN
    return boxes, width


def _frames(boxes: list[Box], width: float) -> list[Frame]:
    """The two planes' frames and each plane's group frames around its leaves."""
    frame_w = width - 2 * MARGIN
    p1_h = Y_LEAF1 + BOX_H["leaf"] + FRAME_PAD - TOP
    p2_top = Y_LEAF2 - FRAME_PAD - 6
    frames = [
        Frame("plane", "plane 1", MARGIN, TOP, frame_w, p1_h, TOP + 21),
        Frame("plane", "plane 2", MARGIN, p2_top, frame_w, BOTTOM - p2_top, BOTTOM - 10),
    ]
    frames += _group_frames(
        [b for b in boxes if b.kind == "leaf" and b.plane == 1], label_above=True
    )
    frames += _group_frames(
        [b for b in boxes if b.kind == "leaf" and b.plane == 2], label_above=False
    )
    return frames


def build_drawing(fabric: Fabric) -> Drawing:
    """The picture of ``fabric``: every device and cable at lab size, blocks at scale.

    Plane 1 is drawn above the servers (spines over leaves) and plane 2 mirrored below them
    (leaves over spines), so that every server column sits between the two leaves of its
    rails and every host cable runs straight to its leaf; spines stay on the outside.
    """
    agg = _aggregation(fabric.sizing)
    title = _title(fabric)
    boxes, width = _boxes(fabric, agg, title)
    legend_y = BOTTOM + MARGIN
    legend = (("plane1", "plane 1 cable"), ("plane2", "plane 2 cable")) + (
        (("aux", "AUX cable (leaf pair)"),) if any(lk.kind == "aux" for lk in fabric.links) else ()
    )
    by_id = {b.id: b for b in boxes}
    return Drawing(
        title=title,
        width=round(width),
        height=drawing_height(legend_y, width, len(legend)),
        boxes=tuple(boxes),
        bundles=tuple(attach(cable_bundles(fabric, boxes), by_id)),
        frames=tuple(_frames(boxes, width)),
        aggregated=agg.notes,
        legend_y=round(legend_y),
        legend=legend,
    )
