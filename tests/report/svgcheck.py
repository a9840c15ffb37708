"""Check a fabric SVG's structure against the cabling plan (shared by the report tests)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from controller.facts import Fabric

NS = "{http://www.w3.org/2000/svg}"


def groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if cls in (g.get("class") or "").split()]


def svg_problems(svg: str, fabric: Fabric) -> list[str]:
    """Every leaf, spine and server drawn exactly once; every bundle drawn once and joining the
    boxes of its cables; bundle counts equal the plan's cables between those boxes."""
    root = ET.fromstring(svg)
    problems: list[str] = []
    owner: dict[str, str] = {}
    kind_of = {s.name: s.role for s in fabric.switches} | {s.name: "server" for s in fabric.servers}
    for box in groups(root, "box"):
        for member in (box.get("data-members") or "").split():
            if member in owner:
                problems.append(f"{member} drawn twice ({owner[member]}, {box.get('data-id')})")
            owner[member] = box.get("data-id") or ""
            if kind_of.get(member) != box.get("data-kind"):
                problems.append(
                    f"{member} drawn as {box.get('data-kind')}, is {kind_of.get(member)}"
                )
    for name in kind_of:
        if name not in owner:
            problems.append(f"{name} not drawn")
    expected: Counter[tuple[str, str, str]] = Counter()
    for link in fabric.links:
        if link.a_device not in owner or link.z_device not in owner:
            continue
        ends = sorted((owner[link.a_device], owner[link.z_device]))
        expected[(link.kind, ends[0], ends[1])] += 1
    drawn: Counter[tuple[str, str, str]] = Counter()
    for bundle in groups(root, "bundle"):
        ends = sorted((bundle.get("data-a") or "", bundle.get("data-z") or ""))
        key = (bundle.get("data-kind") or "", ends[0], ends[1])
        if key in drawn:
            problems.append(f"bundle {key} drawn twice")
        drawn[key] += int(bundle.get("data-count") or 0)
    for key in expected.keys() | drawn.keys():
        if expected[key] != drawn[key]:
            problems.append(f"bundle {key}: {drawn[key]} cables drawn, plan has {expected[key]}")
    total = sum(int(b.get("data-count") or 0) for b in groups(root, "bundle"))
    if total != len(fabric.links):
        problems.append(f"bundle counts sum to {total}, the plan has {len(fabric.links)} cables")
    return problems
