"""Bill of materials: switches per model and role, cables per kind and speed, and the
transceivers and breakout cables the used switch ports need."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass

from controller.catalog import get_model
from controller.facts import Fabric


@dataclass(frozen=True, slots=True)
class BomLine:
    category: str
    item: str
    count: int


def bill_of_materials(fabric: Fabric) -> list[BomLine]:
    lines: list[BomLine] = []
    switches = Counter((s.model, s.role) for s in fabric.switches)
    lines += [BomLine("switch", f"{m} {r}", n) for (m, r), n in sorted(switches.items())]
    cables = Counter((lk.kind, lk.speed) for lk in fabric.links)
    lines += [BomLine("cable", f"{k} {s}", n) for (k, s), n in sorted(cables.items())]
    lines += _switch_optics(fabric)
    nic_ports = Counter(lk.speed for lk in fabric.links if lk.kind == "host")
    lines += [BomLine("server NIC port", f"{s} port", n) for s, n in sorted(nic_ports.items())]
    return lines


def _switch_optics(fabric: Fabric) -> list[BomLine]:
    """One transceiver per used front-panel port; a 1-to-N breakout cable per port split N ways."""
    port_of: dict[tuple[str, str, str], tuple[int, str]] = {}
    for model_name, role in {(s.model, s.role) for s in fabric.switches}:
        catalog_model = get_model(model_name)
        for block_use in {b.use for b in catalog_model.blocks(role)}:
            for lp in catalog_model.logical_ports(role, block_use):
                port_of[(model_name, role, lp.name)] = (lp.port, lp.breakout)
    kind_of = {s.name: (s.model, s.role) for s in fabric.switches}
    used: set[tuple[str, int, str, str]] = set()
    for link in fabric.links:
        for device, port in ((link.a_device, link.a_port), (link.z_device, link.z_port)):
            if device not in kind_of:
                continue
            model, role = kind_of[device]
            if (model, role, port) not in port_of:  # the AUX port: counted as a 10G cable
                continue
            front, breakout = port_of[(model, role, port)]
            used.add((device, front, model, breakout))
    optics = Counter((model, breakout) for _, _, model, breakout in used)
    lines = []
    for (model, breakout), n in sorted(optics.items()):
        speed = get_model(model).port_speed
        lines.append(BomLine("transceiver", f"{speed} {model} port ({breakout.split('[')[0]})", n))
        if not breakout.startswith("1x"):
            lines.append(
                BomLine(
                    "breakout cable", f"1 to {breakout.split('x')[0]} ({breakout.split('[')[0]})", n
                )
            )
    return _merge(lines)


def _merge(lines: list[BomLine]) -> list[BomLine]:
    totals: Counter[tuple[str, str]] = Counter()
    for line in lines:
        totals[(line.category, line.item)] += line.count
    return [BomLine(c, i, n) for (c, i), n in sorted(totals.items())]


def render(fabric: Fabric) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(("category", "item", "count"))
    writer.writerows((line.category, line.item, line.count) for line in bill_of_materials(fabric))
    return buffer.getvalue().encode()
