#!/usr/bin/env python3
"""ARP-to-host-route for a Linux + FRR leaf (stdlib only: it is copied to the switch).

FRR has no "redistribute neighbor". This keeps one /32 route per resolved neighbour of the
rail SVIs in a kernel table; zebra imports the table (`ip import-table N`) and BGP
redistributes it (`redistribute table N`). Event driven (`ip monitor neigh`) with a full
resync every few seconds; a neighbour that fails or is removed loses its route.

Usage: arp_to_host.py CONFIG.json   (keys: table, interfaces, prefixes)
"""

from __future__ import annotations

import ipaddress
import json
import select
import subprocess
import sys
import time

RESYNC_S = 5.0
DEAD_STATES = {"FAILED", "INCOMPLETE", "NONE"}
PROTO = "static"


def _ip_json(*args: str) -> list[dict[str, object]]:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, check=False).stdout
    try:
        data = json.loads(out or "[]")
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def wanted(config: dict[str, object]) -> set[tuple[str, str]]:
    interfaces = set(config["interfaces"])  # type: ignore[call-overload]
    nets = [ipaddress.ip_network(p) for p in config["prefixes"]]  # type: ignore[attr-defined]
    result = set()
    for entry in _ip_json("-4", "neigh", "show"):
        dev = str(entry.get("dev", ""))
        states = {str(s) for s in entry.get("state", [])}  # type: ignore[attr-defined]
        if dev not in interfaces or states & DEAD_STATES or not entry.get("lladdr"):
            continue
        dst = ipaddress.ip_address(str(entry["dst"]))
        if any(dst in net for net in nets):
            result.add((str(dst), dev))
    return result


def present(table: int) -> set[tuple[str, str]]:
    routes = _ip_json("-4", "route", "show", "table", str(table))
    return {(str(r["dst"]), str(r.get("dev", ""))) for r in routes if "/" not in str(r["dst"])}


def reconcile(config: dict[str, object]) -> None:
    table = int(config["table"])  # type: ignore[call-overload]
    want, have = wanted(config), present(table)
    batch = [
        f"route replace {dst}/32 dev {dev} table {table} proto {PROTO}"
        for dst, dev in sorted(want - have)
    ]
    batch += [f"route del {dst}/32 dev {dev} table {table}" for dst, dev in sorted(have - want)]
    if batch:
        subprocess.run(
            ["ip", "-force", "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=False
        )


def main(path: str) -> None:
    with open(path) as handle:
        config = json.load(handle)
    monitor = subprocess.Popen(["ip", "monitor", "neigh"], stdout=subprocess.PIPE, text=True)
    assert monitor.stdout is not None
    last = 0.0
    while True:
        ready, _, _ = select.select([monitor.stdout], [], [], RESYNC_S)
        if ready:
            line = monitor.stdout.readline()
            if not line:
                raise SystemExit("ip monitor ended")
        now = time.monotonic()
        if ready or now - last >= RESYNC_S:
            reconcile(config)
            last = now


if __name__ == "__main__":
    main(sys.argv[1])
