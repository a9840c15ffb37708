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

EVPN-MH (``evpn_svis``: VNI -> SVI): a server's ARP reply reaches only the leaf its bond hashed
it to (both leaves send from the anycast gateway MAC, which each holds as a local bridge
entry). zebra syncs the entry to the pair (`show evpn arp-cache`: type local, peer-active),
but FRR 8.4 does not make it a usable kernel neighbour on this kernel (it stays INCOMPLETE),
so the pair would have no /32. The agent installs each such synced entry itself as an
externally learned, never-probed neighbour (`extern_learn nud noarp`: zebra ignores
externally learned kernel entries as local learning, so it does not re-advertise it), and
removes it when zebra no longer lists it.

Usage: arp_to_host.py CONFIG.json
  (keys: table, interfaces, prefixes, bridge, withdraw_on_carrier_loss, evpn_svis)
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


def zebra_synced(evpn_svis: dict[str, str]) -> dict[tuple[str, str], str]:
    """(ip, SVI) -> MAC of every IPv4 neighbour zebra holds as local (ours or the pair's)."""
    out = subprocess.run(
        ["vtysh", "-c", "show evpn arp-cache vni all json"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    try:
        data = json.loads(out or "{}")
    except ValueError:
        return {}
    result: dict[tuple[str, str], str] = {}
    for vni, entries in data.items() if isinstance(data, dict) else []:
        svi = evpn_svis.get(str(vni), "")
        for ip, entry in entries.items() if svi and isinstance(entries, dict) else []:
            if not isinstance(entry, dict) or entry.get("type") != "local" or ":" in ip:
                continue
            if entry.get("mac"):
                result[(str(ip), svi)] = str(entry["mac"]).lower()
    return result


class Synced:
    """The neighbours this agent installed from zebra's synced entries."""

    def __init__(self, evpn_svis: dict[str, str]) -> None:
        self.evpn_svis = evpn_svis
        self.installed: dict[tuple[str, str], str] = {}

    def apply(self, ask_zebra: bool = True) -> None:
        """Install what zebra syncs and the kernel lacks; without ``ask_zebra`` only put back
        what this agent installed before (zebra may overwrite it with its own attempt)."""
        synced = zebra_synced(self.evpn_svis) if ask_zebra else dict(self.installed)
        valid = {
            (str(n["dst"]), str(n["dev"])): str(n.get("lladdr", "")).lower()
            for n in _ip_json("-4", "neigh", "show")
            if not {str(s) for s in n.get("state", [])} & DEAD_STATES and n.get("lladdr")
        }
        batch = []
        for (ip, svi), mac in sorted(synced.items()):
            if valid.get((ip, svi)) != mac:  # learned here already, or installed before
                batch.append(f"neigh replace {ip} lladdr {mac} dev {svi} extern_learn nud noarp")
                self.installed[(ip, svi)] = mac
        for key in sorted(set(self.installed) - set(synced)):
            batch.append(f"neigh del {key[0]} dev {key[1]}")
            del self.installed[key]
        if batch:
            subprocess.run(
                ["ip", "-force", "-batch", "-"],
                input="\n".join(batch) + "\n",
                text=True,
                check=False,
            )


def reconcile(
    config: dict[str, Any],
    ports: Ports | None,
    synced: Synced | None = None,
    ask_zebra: bool = True,
) -> None:
    table = int(config["table"])
    if synced is not None:
        synced.apply(ask_zebra)
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
    synced = Synced(config["evpn_svis"]) if config.get("evpn_svis") else None
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
        if now - last >= RESYNC_S:
            reconcile(config, ports, synced)  # asks zebra (vtysh): on the resync only
            last = now
        elif ready:
            reconcile(config, ports, synced, ask_zebra=False)


if __name__ == "__main__":
    main(sys.argv[1])
