"""`dpctl generate`: every output of a fabric, as bytes in memory, then written together."""

from __future__ import annotations

from pathlib import Path

from controller.facts import Fabric
from controller.outputs import bom, cabling, facts_file, nornir_inventory, writer


def render_outputs(fabric: Fabric) -> dict[str, bytes]:
    files = nornir_inventory.render(fabric)
    files["cabling.csv"] = cabling.render(fabric)
    files["bom.csv"] = bom.render(fabric)
    files["fabric.json"] = facts_file.render(fabric)
    return files


def generate(fabric: Fabric, out_dir: Path) -> list[Path]:
    return writer.write_all(out_dir, render_outputs(fabric))
