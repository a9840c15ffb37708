"""One pass: the synced neighbours, the ES bonds' gates and the host routes."""

from __future__ import annotations

import time
from typing import Any

from . import journal, kernel
from .carrier import Ports, flush_behind_down_ports
from .kernel import PROTO, neighbours, present
from .refresh import Refresh
from .segments import bond_gates, serving_bonds, serving_now, unserved_hosts
from .synced import Synced


def segment_hosts_missing(config: dict[str, Any], neighs: list[dict[str, Any]]) -> bool:
    """Whether a server of a local segment has no usable neighbour here (then zebra is
    asked on every resync, as its synced entry may be what is missing)."""
    known = {str(n["dst"]) for n in neighs}
    return any(
        str(host) not in known
        for segment in (config.get("segments") or {}).values()
        for host in segment["hosts"]
    )


def probe_unused(
    refresh: Refresh, entries: list[dict[str, Any]], segments: dict[str, Any], not_here: set[str]
) -> None:
    """Has the kernel probe at once what this leaf verified and no longer uses (``refresh``),
    before the pass asks zebra (seconds in a loaded guest): zebra counts the entry inactive
    until it is REACHABLE again, and the pair hands its own back after HANDBACK_HOLD_S."""
    served = {str(h) for segment in segments.values() for h in segment["hosts"]} - not_here
    probes = refresh.lines(entries, served)
    if probes:
        kernel._ip_batch(probes)


def reconcile(
    config: dict[str, Any],
    ports: Ports | None,
    synced: Synced | None = None,
    ask_zebra: bool = True,
    refresh: Refresh | None = None,
) -> bool:
    """One pass: synced neighbours, host routes, the refresh of what this leaf verified
    (``refresh``). True if a server of a local segment still has no usable neighbour."""
    table = int(config["table"])
    segments = config.get("segments") or {}
    links_at = time.monotonic()  # the look's moment (freshness): the pass judges it twice
    links = kernel._ip_json("-d", "link", "show") if segments else []
    not_here = unserved_hosts(
        segments, serving_bonds(links, segments, links_at) | serving_now(segments)
    )
    entries = kernel._ip_json("-4", "neigh", "show")
    if refresh is not None:
        probe_unused(refresh, entries, segments, not_here)
    now = time.monotonic()
    if synced is not None and synced.apply(entries, ask_zebra, now, frozenset(not_here)):
        entries = kernel._ip_json("-4", "neigh", "show")
    neighs = neighbours(config, entries)
    if synced is not None:
        unproven = synced.unproven(entries, now)
        neighs = [n for n in neighs if str(n["dst"]) not in unproven]
    missing = segment_hosts_missing(config, neighs)
    if ports is not None:
        neighs = flush_behind_down_ports(neighs, ports)
        ports.learn()
        ports.remember(neighs)
    # a bond GateWatch opened since ``links`` was read serves: never gate it again here
    serving = serving_bonds(links, segments, links_at) | serving_now(segments)
    unserved = unserved_hosts(segments, serving) if config.get("withdraw_unserved", True) else set()
    want = {(str(n["dst"]), str(n["dev"])) for n in neighs if str(n["dst"]) not in unserved}
    have = present(table)
    batch = bond_gates(links, segments, serving)
    for line in batch:  # the agent's log (stdout and syslog): when each bond was gated or opened
        journal.log(line)
    batch += [
        f"route replace {dst}/32 dev {dev} table {table} proto {PROTO}"
        for dst, dev in sorted(want - have)
    ]
    batch += [f"route del {dst}/32 dev {dev} table {table}" for dst, dev in sorted(have - want)]
    if batch:
        kernel._ip_batch(batch)
    return missing
