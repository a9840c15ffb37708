"""The picture's cables: one bundle per pair of boxes and kind of cable, and its curve.

Each bundle runs from the lower edge of its higher box to the upper edge of the other, its
count label placed where labels do not crowd; an AUX bundle (a leaf pair, one leaf above the
other) is an arc beside the boxes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from controller.facts import Fabric
from controller.outputs.drawing_model import Box, Bundle, box_of, bundle_id, cable_ends


def cable_bundles(fabric: Fabric, boxes: list[Box]) -> list[Bundle]:
    """One bundle per pair of boxes and kind of cable."""
    owner = box_of(boxes)
    counts: dict[tuple[str, str, str, int | None, str], int] = defaultdict(int)
    for link in fabric.links:
        a, z = cable_ends(link)
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


def attach(bundles: list[Bundle], boxes: dict[str, Box]) -> list[Bundle]:
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
