"""`dpctl report` / `dpctl draw`: the fabric picture (SVG) and a self-contained HTML page.

Data is built here (drawing model, bill of materials, cabling sheets, sizing rationale);
the Jinja2 templates in ``templates/report/`` only format it. The page needs no network:
CSS and SVG are inline, nothing is loaded from elsewhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from controller import __version__
from controller.errors import DpctlError
from controller.facts import Fabric, Link
from controller.outputs.bom import BomLine, bill_of_materials
from controller.outputs.drawing import build_drawing
from controller.outputs.drawing_model import Drawing
from controller.outputs.drawing_state import StateFileError, apply_state
from controller.resources import templates_dir


@dataclass(frozen=True, slots=True)
class CableRow:
    """One cable on a device's sheet, seen from that device."""

    cable: str
    port: str
    peer: str
    peer_port: str
    speed: str
    kind: str
    plane: str
    rail: str
    label: str


@dataclass(frozen=True, slots=True)
class Sheet:
    device: str
    role: str
    title: str
    rows: tuple[CableRow, ...]


def cable_id(index: int) -> str:
    return f"C{index + 1:05d}"


def cable_label(link: Link) -> str:
    """What goes on the cable: both ends with their ports, speed, plane, rail."""
    parts = [f"{link.a_device}:{link.a_port} ↔ {link.z_device}:{link.z_port}", link.speed]
    parts.append(f"plane {link.plane}" if link.plane else "AUX (both planes)")
    if link.rail:
        parts.append(f"rail {link.rail}")
    return " · ".join(parts)


def _row(index: int, link: Link, device: str) -> CableRow:
    near_a = link.a_device == device
    return CableRow(
        cable=cable_id(index),
        port=link.a_port if near_a else link.z_port,
        peer=link.z_device if near_a else link.a_device,
        peer_port=link.z_port if near_a else link.a_port,
        speed=link.speed,
        kind=link.kind,
        plane="" if link.plane is None else str(link.plane),
        rail="" if link.rail is None else str(link.rail),
        label=cable_label(link),
    )


def _port_key(port: str) -> tuple[str, int, str]:
    digits = "".join(c for c in port if c.isdigit())
    return (port.rstrip("0123456789"), int(digits or 0), port)


def cabling_sheets(fabric: Fabric) -> tuple[list[Sheet], list[Sheet]]:
    """(per leaf, per server): every cable of the device, in port order, with its label."""
    index = {id(link): i for i, link in enumerate(fabric.links)}
    by_device = fabric.links_by_device

    def sheet(device: str, role: str, title: str) -> Sheet:
        rows = sorted(
            (_row(index[id(lk)], lk, device) for lk in by_device.get(device, [])),
            key=lambda r: _port_key(r.port),
        )
        return Sheet(device, role, title, tuple(rows))

    leaves = [
        sheet(
            s.name,
            "leaf",
            f"{s.name} · plane {s.plane} · group {s.group} · "
            f"rails {', '.join(map(str, s.rails))} · {s.model}",
        )
        for s in fabric.switches_in(role="leaf")
    ]
    servers = [
        sheet(s.name, "server", f"{s.name} · group {s.group} · mgmt {s.mgmt_ip}")
        for s in fabric.servers
    ]
    return leaves, servers


def sizing_rationale(fabric: Fabric) -> list[tuple[str, str]]:
    """Why the fabric has the size it has, by the rail rules, with the numbers put in."""
    s = fabric.sizing
    rows = [
        (
            "Servers",
            f"{s.gpus:,} GPUs / {s.gpus_per_server} GPUs per server = {s.servers:,} servers; "
            f"each GPU's NIC has one port to each plane.",
        ),
        (
            "Leaf ports",
            f"a {s.leaf_model} leaf has {s.downlinks_per_leaf} downlinks at {s.downlink_speed} "
            f"and {s.uplinks_per_leaf} uplinks at {s.uplink_speed} (1:1 down:up capacity).",
        ),
        (
            "Groups",
            f"a group holds {s.servers_per_group} servers (one per leaf downlink): "
            f"ceil({s.servers:,} / {s.servers_per_group}) = {s.groups} group(s).",
        ),
        (
            "Rails per leaf",
            f"the largest divisor r of {s.gpus_per_server} with r × "
            f"{min(s.servers, s.servers_per_group)} servers ≤ {s.downlinks_per_leaf} downlinks: "
            f"r = {s.rails_per_leaf}, so {s.leaves_per_group} leaves per group and plane.",
        ),
        (
            "Leaves",
            f"{s.groups} group(s) × {s.leaves_per_group} = {s.leaves_per_plane} leaves per plane, "
            f"{s.leaves} in both planes.",
        ),
        (
            "Spines",
            f"{s.leaves_per_plane} leaves × {s.uplinks_per_leaf} uplinks / {s.spine_ports} spine "
            f"ports, raised to a count that divides {s.uplinks_per_leaf} evenly: "
            f"{s.spines_per_plane} spines per plane, {s.spines} in all ({s.spine_model}).",
        ),
        (
            "Leaf-spine links",
            f"{s.uplinks_per_leaf} uplinks / {s.spines_per_plane} spines = "
            f"{s.links_per_leaf_spine_pair} link(s) per leaf-spine pair; "
            f"{s.spare_ports_per_spine} spare port(s) per spine.",
        ),
        (
            "Planes",
            "the two planes are identical and have no links between them"
            + (
                "; each leaf pair (same group and rails, one per plane) shares an AUX cable."
                if any(lk.kind == "aux" for lk in fabric.links)
                else "."
            ),
        ),
    ]
    return rows


@cache
def _environment(root: Path | None = None) -> Environment:
    return Environment(
        loader=FileSystemLoader(str(root or templates_dir())),
        undefined=StrictUndefined,
        autoescape=select_autoescape(["html", "svg", "j2"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_svg(drawing: Drawing) -> str:
    return _environment().get_template("report/fabric.svg.j2").render(d=drawing)


def _read_json(path: Path | None, option: str) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise StateFileError(option, f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise StateFileError(option, f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise StateFileError(option, f"{path}: expected a JSON object")
    return data


StateFiles = tuple[Drawing, dict[str, Any] | None, dict[str, Any] | None]


def drawing_for(
    fabric: Fabric,
    verify_json: Path | None = None,
    simulate_json: Path | None = None,
    accept: dict[str, Any] | None = None,
) -> StateFiles:
    """The picture with the state files folded in, and the files' contents (read once)."""
    drawing = build_drawing(fabric)
    verify = _read_json(verify_json, "--verify")
    simulate = _read_json(simulate_json, "--simulate")
    if verify is None and simulate is None and accept is None:
        return drawing, None, None
    drawing = apply_state(
        drawing,
        fabric,
        verify,
        simulate,
        verify_name=f"--verify {verify_json}",
        simulate_name=f"--simulate {simulate_json}",
        accept=accept,
    )
    return drawing, verify, simulate


SIMULATE_FIGURES = (
    ("workload", "workload"),
    ("lb", "load balancing"),
    ("fail", "failed"),
    ("max_link_load", "max link load (× line rate)"),
    ("completion_time_ratio", "completion time (× ideal)"),
    ("lost_flows", "lost flows"),
)


def simulate_summary(simulate: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The run's scenario and headline figures, as far as the file has them."""
    if simulate is None:
        return []
    rows = []
    for key, label in SIMULATE_FIGURES:
        value = simulate.get(key)
        if value is None:
            continue
        text = (", ".join(map(str, value)) or "nothing") if isinstance(value, list) else str(value)
        rows.append((label, text))
    return rows


def render_html(
    fabric: Fabric,
    drawing: Drawing,
    verify: dict[str, Any] | None = None,
    simulate: dict[str, Any] | None = None,
    accept: dict[str, Any] | None = None,
) -> str:
    leaves, servers = cabling_sheets(fabric)
    bom: list[BomLine] = bill_of_materials(fabric)
    failed = [c for c in (verify or {}).get("checks", []) if not c.get("ok")]
    return (
        _environment()
        .get_template("report/report.html.j2")
        .render(
            fabric=fabric,
            d=drawing,
            svg=render_svg(drawing),
            bom=bom,
            leaf_sheets=leaves,
            server_sheets=servers,
            rationale=sizing_rationale(fabric),
            sizing=fabric.sizing.to_dict(),
            verify_failed=failed,
            verify_total=len((verify or {}).get("checks", [])),
            accept=accept,
            accept_failed=[f for f in (accept or {}).get("findings", []) if f["status"] == "fail"],
            sim_summary=simulate_summary(simulate),
            sim_top=sorted(
                (b for b in drawing.bundles if b.load is not None), key=lambda b: -(b.load or 0)
            )[:8],
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            version=__version__,
        )
    )


def write_report(
    fabric: Fabric,
    out_dir: Path,
    verify_json: Path | None = None,
    simulate_json: Path | None = None,
    accept_json: Path | None = None,
) -> dict[str, Any]:
    """Write ``report.html`` and ``fabric.svg`` to ``out_dir``; returns a summary."""
    accept = _read_json(accept_json, "--accept")
    drawing, verify, simulate = drawing_for(fabric, verify_json, simulate_json, accept)
    html = render_html(fabric, drawing, verify, simulate, accept)
    svg = render_svg(drawing)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "report.html").write_text(html)
        (out_dir / "fabric.svg").write_text(svg)
    except OSError as exc:
        raise DpctlError("--out", f"cannot write {out_dir}: {exc.strerror}") from exc
    return {
        "report": str(out_dir / "report.html"),
        "svg": str(out_dir / "fabric.svg"),
        "boxes": len(drawing.boxes),
        "bundles": len(drawing.bundles),
        "cables": sum(b.count for b in drawing.bundles),
        "aggregated": list(drawing.aggregated),
        "bytes": len(html.encode()),
    }


def write_svg(
    fabric: Fabric,
    out_file: Path,
    verify_json: Path | None = None,
    simulate_json: Path | None = None,
) -> dict[str, Any]:
    drawing = drawing_for(fabric, verify_json, simulate_json)[0]
    try:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_text(render_svg(drawing))
    except OSError as exc:
        raise DpctlError("--out", f"cannot write {out_file}: {exc.strerror}") from exc
    return {"svg": str(out_file), "boxes": len(drawing.boxes), "bundles": len(drawing.bundles)}
