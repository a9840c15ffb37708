"""The fabric picture as data: boxes, link bundles and frames with their coordinates.

What ``controller.outputs.drawing`` lays out and ``controller.outputs.drawing_state``
colours; the SVG template (``templates/report/fabric.svg.j2``) only formats it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from controller.facts import Link

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


def drawing_height(legend_y: float, width: float, entries: int) -> float:
    """The picture's height: its legend's rows from ``legend_y`` down, then the note line."""
    rows = -(-entries // max(1, int((width - 2 * MARGIN) // LEGEND_ITEM_W)))
    return round(legend_y + rows * LEGEND_ROW_H + 6 + 18)


def box_of(boxes: list[Box] | tuple[Box, ...]) -> dict[str, str]:
    """Device name -> the id of the box that draws it."""
    return {m: b.id for b in boxes for m in b.members}


def cable_ends(link: Link) -> tuple[str, str]:
    """(a, z) of a cable in the picture: spine before leaf before server; aux: plane 1 first."""
    if link.kind in ("host", "fabric"):
        return link.z_device, link.a_device
    return link.a_device, link.z_device


def bundle_id(kind: str, a_box: str, z_box: str) -> str:
    return f"{kind}:{a_box}:{z_box}"
