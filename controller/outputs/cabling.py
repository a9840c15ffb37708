"""cabling.csv: one row per cable, the plan installers follow and LLDP is checked against."""

from __future__ import annotations

import csv
import io

from controller.facts import CABLING_COLUMNS, Fabric


def render(fabric: Fabric) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CABLING_COLUMNS)
    writer.writerows(link.row() for link in fabric.links)
    return buffer.getvalue().encode()
