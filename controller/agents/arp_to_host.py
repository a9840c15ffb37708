#!/usr/bin/env python3
"""ARP-to-host-route for a Linux + FRR leaf (stdlib only: it is copied to the switch).

FRR has no "redistribute neighbor". This keeps one /32 route per resolved neighbour of the
rail SVIs in a kernel table; zebra imports the table (`ip import-table N`) and BGP
redistributes it (`redistribute table N`). Event driven (`ip monitor neigh link`) with a full
resync every few seconds; a neighbour that fails or is removed loses its route.

Carrier loss (``withdraw_on_carrier_loss``, dual-ARP): the agent remembers which bridge port
each neighbour's MAC was learned on; when that port loses carrier it deletes the neighbour at
once, so the /32 is withdrawn in well under a second instead of when ARP gives up. The server
re-announces itself through the port when it carries traffic again (its ARP keep-alive).

Usage: arp_to_host.py CONFIG.json
  (keys: table, interfaces, prefixes, bridge, withdraw_on_carrier_loss)
"""

from __future__ import annotations

import ipaddress
import json
import select
import subprocess
import sys
import time
from typing import Any

RESYNC_S = 5.0
DEAD_STATES = {"FAILED", "INCOMPLETE", "NONE"}
PROTO = "static"


def _json(*cmd: str) -> list[dict[str, Any]]:
    out = subprocess.run(list(cmd), capture_output=True, text=True, check=False).stdout
    try:
        data = json.loads(out or "[]")
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _ip_json(*args: str) -> list[dict[str, Any]]:
    return _json("ip", "-j", *args)


def neighbours(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Resolved IPv4 neighbours of the rail SVIs inside the rail prefixes."""
    interfaces = set(config["interfaces"])
    nets = [ipaddress.ip_network(p) for p in config["prefixes"]]
    result = []
    for entry in _ip_json("-4", "neigh", "show"):
        dev = str(entry.get("dev", ""))
        states = {str(s) for s in entry.get("state", [])}
        if dev not in interfaces or states & DEAD_STATES or not entry.get("lladdr"):
            continue
        if any(ipaddress.ip_address(str(entry["dst"])) in net for net in nets):
            result.append(entry)
    return result


def present(table: int) -> set[tuple[str, str]]:
    routes = _ip_json("-4", "route", "show", "table", str(table))
    return {(str(r["dst"]), str(r.get("dev", ""))) for r in routes if "/" not in str(r["dst"])}


class Ports:
    """Which bridge port each MAC was last learned on, and which ports lost carrier."""

    def __init__(self, bridge: str) -> None:
        self.bridge = bridge
        self.mac_port: dict[str, str] = {}

    def learn(self) -> None:
        for e in _json("bridge", "-j", "fdb", "show", "br", self.bridge):
            port, mac = str(e.get("ifname", "")), str(e.get("mac", "")).lower()
            flags = e.get("flags", [])
            learned = e.get("state") not in ("permanent", "static") and "extern_learn" not in flags
            if port and mac and e.get("master") == self.bridge and learned:
                self.mac_port[mac] = port

    def down(self) -> set[str]:
        return {
            str(link["ifname"])
            for link in _ip_json("link", "show", "master", self.bridge)
            if "LOWER_UP" not in link.get("flags", []) or link.get("operstate") == "DOWN"
        }


def flush_behind_down_ports(neighs: list[dict[str, Any]], ports: Ports) -> list[dict[str, Any]]:
    """Delete the neighbours whose MAC sits behind a port without carrier; return the rest."""
    down = ports.down()
    dead = [n for n in neighs if ports.mac_port.get(str(n["lladdr"]).lower()) in down]
    if dead:
        batch = [f"neigh del {n['dst']} dev {n['dev']}" for n in dead]
        subprocess.run(
            ["ip", "-force", "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=False
        )
        for n in dead:
            ports.mac_port.pop(str(n["lladdr"]).lower(), None)
    return [n for n in neighs if n not in dead]


def reconcile(config: dict[str, Any], ports: Ports | None) -> None:
    table = int(config["table"])
    neighs = neighbours(config)
    if ports is not None:
        neighs = flush_behind_down_ports(neighs, ports)
        ports.learn()
    want = {(str(n["dst"]), str(n["dev"])) for n in neighs}
    have = present(table)
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
    ports = Ports(config["bridge"]) if config.get("withdraw_on_carrier_loss") else None
    monitor = subprocess.Popen(
        ["ip", "monitor", "neigh", "link"], stdout=subprocess.PIPE, text=True
    )
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
            reconcile(config, ports)
            last = now


if __name__ == "__main__":
    main(sys.argv[1])
