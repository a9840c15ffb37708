"""A simulate run's per-link loads as the file `dpctl report --simulate` reads.

One entry per cable of the generated fabric, in the fabric's own orientation (a/z as in
``cabling.csv`` and the report's cabling sheets), with the load of each direction and their
maximum: ``load`` = the busier direction's offered rate over the cable's capacity (1.0 = the
NIC line rate the workload offers, the ideal even load; above 1.0 the link is oversubscribed).
The picture colours each bundle by the highest ``load`` of its cables, as it aggregates them.

Per cable rather than per directed link: half the entries, and the picture has no direction.
At 16,384 GPUs (49,152 cables) the file is about 7 MB, which is why it is a file of its own
(``--links-out``) and not part of the ``--json`` summary, whose ``links`` stays a count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.errors import OutputError
from controller.simulate.model import Result
from controller.simulate.topology import KIND_NAMES, SimulationError, Topology

FORMAT = "dpctl-simulate-links/1"


def links_document(result: Result, topo: Topology) -> dict[str, Any]:
    """The run's summary plus ``links``: every cable with its per-direction loads."""
    if topo.planes != 2:
        raise SimulationError(
            "--links-out",
            "the single-plane baseline (--planes 1) is not the generated fabric's cabling, so "
            "its per-link loads cannot be drawn on the fabric; run with --planes 2",
        )
    load = result.load
    rows = []
    for i in range(0, topo.links, 2):  # each cable added its a->z then its z->a link
        az, za = float(load[i]), float(load[i + 1])
        rows.append(
            {
                "a_device": topo.link_a[i],
                "a_port": topo.link_a_port[i],
                "z_device": topo.link_z[i],
                "z_port": topo.link_a_port[i + 1],
                "kind": KIND_NAMES[int(topo.kind[i])].split("-")[0],
                "load": round(max(az, za), 4),
                "load_az": round(az, 4),
                "load_za": round(za, 4),
            }
        )
    summary = result.to_dict()
    summary["directed_links"] = summary.pop("links")
    return {"format": FORMAT, **summary, "links": rows}


def write_links(doc: dict[str, Any], path: Path) -> int:
    """Write the document (compact JSON); returns its size in bytes."""
    text = json.dumps(doc, separators=(",", ":")) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise OutputError("--links-out", f"cannot write {path}: {exc.strerror}") from exc
    return len(text.encode())
