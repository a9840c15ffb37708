"""A GPU server's NICs: the intended ones from the inventory, the kernel's from iproute2 JSON
(dpctl_gpu_nic).

The inventory lists each server once with its own NICs (rail, ip, prefixlen, gateway); what
every server shares is given once per rail in ``rails`` (bond, ports, table); verify also
takes ``rail_members`` (per rail, server -> address) and derives each NIC's peers from it.
State is read with `ip -j` (and, for LACP bonds, coupled_control over netlink).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_netlink import (
    read_coupled_control,
)

Run = Any  # callable(argv, stdin=None) -> (rc, out, err)


# -- inventory facts ------------------------------------------------------------------------
def expand_nics(nics: list[dict[str, Any]], rails: dict[str, Any]) -> list[dict[str, Any]]:
    """Each NIC's own facts completed with its rail's shared ones (bond, ports, table)."""
    full = []
    for nic in nics:
        rail = rails.get(str(nic["rail"]))
        if rail is None and not {"bond", "ports", "table"} <= set(nic):
            raise ValueError(f"rail {nic['rail']} is not in the inventory's rails")
        full.append({**(rail or {}), **nic})
    return full


def peers_of(nics: list[dict[str, Any]], members: dict[str, Any]) -> list[dict[str, Any]]:
    """The same-rail NICs of the other servers, each reached from this server's NIC."""
    return [
        {"server": server, "rail": nic["rail"], "ip": ip, "src": nic["ip"]}
        for nic in nics
        for server, ip in sorted(members.get(str(nic["rail"]), {}).items())
        if ip != nic["ip"]
    ]


# -- reading state -----------------------------------------------------------------------
def run_cmd(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _json(run: Run, argv: list[str]) -> list[dict[str, Any]]:
    rc, out, err = run(argv)
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {err.strip()}")
    data = json.loads(out or "[]")
    return data if isinstance(data, list) else []


def read_state(
    run: Run, nics: list[dict[str, Any]], control: Any = read_coupled_control
) -> dict[str, Any]:
    """Everything the planner looks at, in a few `ip -j` calls (and, for each LACP bond, its
    coupled_control over netlink: ``control(bond)``)."""
    links = {link["ifname"]: link for link in _json(run, ["ip", "-j", "-d", "link", "show"])}
    addrs = {a["ifname"]: a.get("addr_info", []) for a in _json(run, ["ip", "-j", "addr", "show"])}
    rules = _json(run, ["ip", "-j", "-4", "rule", "show"])
    routes = _json(run, ["ip", "-j", "-4", "route", "show", "table", "all"])
    qdiscs = _json(run, ["tc", "-j", "qdisc", "show"])
    filters: dict[str, str] = {}
    for nic in nics:
        if nic["bond"] in links:
            _, out, _ = run(["tc", "filter", "show", "dev", nic["bond"], "egress"])
            filters[nic["bond"]] = out
    coupled = {
        nic["bond"]: control(nic["bond"])
        for nic in nics
        if _info_data(links.get(nic["bond"], {})).get("mode") == "802.3ad"
    }
    return {
        "links": links,
        "addrs": addrs,
        "rules": rules,
        "routes": routes,
        "clsact": sorted(q["dev"] for q in qdiscs if q.get("kind") == "clsact"),
        "filters": filters,
        "pings": keepalive_processes(),
        "coupled": coupled,
    }


def _info_data(link: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = link.get("linkinfo", {}).get("info_data", {})
    return data


def keepalive_processes() -> list[list[str]]:
    """Command lines of the processes in this network namespace (PID namespace is shared)."""
    try:
        own_ns = os.readlink("/proc/self/ns/net")
    except OSError:
        own_ns = ""
    found: list[list[str]] = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode() for a in fh.read().split(b"\0") if a]
            if not argv or os.path.basename(argv[0]) != "ping":
                continue
            if own_ns and os.readlink(f"/proc/{pid}/ns/net") != own_ns:
                continue
        except OSError:
            continue
        found.append(argv)
    return found
