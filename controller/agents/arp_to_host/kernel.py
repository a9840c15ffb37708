"""The kernel's neighbours and routes: ``ip -j`` read, ``ip -batch`` written."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from typing import Any

DEAD_STATES = {"FAILED", "INCOMPLETE", "NONE"}
PROTO = "static"
"""The protocol of every route and neighbour the agent writes. The kernel keeps a
neighbour's protocol through every later update that names none (net/core/neighbour.c,
``neigh_add``: it is set only when given), so without it an entry zebra once installed kept
``proto zebra`` through the agent's own entry, its hand-back and the kernel's verification,
and a server this leaf had verified read as zebra's install to the agent
(``zebra._verified_here``) and to the lab tests (CI, 2026-12-06 and 2026-12-07). Named on
each write, ``proto zebra`` means zebra wrote the entry last."""


def _json(*cmd: str) -> list[dict[str, Any]]:
    out = subprocess.run(list(cmd), capture_output=True, text=True, check=False).stdout
    try:
        data = json.loads(out or "[]")
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _ip_json(*args: str) -> list[dict[str, Any]]:
    return _json("ip", "-j", *args)


def _ip_batch(lines: list[str]) -> None:
    """Run ``lines`` through one ``ip -force -batch`` (a failed line does not stop the rest)."""
    subprocess.run(
        ["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=False
    )


def _states(entry: dict[str, Any]) -> set[str]:
    """A kernel neighbour's NUD states (``ip -j neigh``'s ``state`` list)."""
    return {str(s) for s in entry.get("state", [])}


def neighbours(config: dict[str, Any], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Resolved IPv4 neighbours of the rail SVIs inside the rail prefixes (``entries``:
    ``ip -j -4 neigh show``)."""
    interfaces = set(config["interfaces"])
    nets = [ipaddress.ip_network(p) for p in config["prefixes"]]
    result = []
    for entry in entries:
        dev = str(entry.get("dev", ""))
        states = _states(entry)
        if dev not in interfaces or states & DEAD_STATES or not entry.get("lladdr"):
            continue
        if any(ipaddress.ip_address(str(entry["dst"])) in net for net in nets):
            result.append(entry)
    return result


def present(table: int) -> set[tuple[str, str]]:
    routes = _ip_json("-4", "route", "show", "table", str(table))
    return {(str(r["dst"]), str(r.get("dev", ""))) for r in routes if "/" not in str(r["dst"])}
