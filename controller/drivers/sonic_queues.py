"""PFC frames and queue counters from what SONiC's own tools print (SONiC, and AsterNOS, which
runs SONiC underneath). Pure functions over the outputs; the shapes are the ones the tools'
source prints, sonic-utilities (github.com/sonic-net/sonic-utilities):

- ``pfcstat`` (what ``show pfc counters`` runs; show/main.py ``pfc counters``), branch 202405
  (commit ced89eb5c9ce4b0bf656f1e28f462314df4e5c1f) and master (691b1bbc4fd2, 2026-07):
  it has no JSON option. It prints two tabulate "simple" tables, ``Port Rx`` and ``Port Tx``,
  columns ``PFC0`` ... ``PFC7``, one row per port of COUNTERS_PORT_NAME_MAP, each cell the
  port's COUNTERS_DB ``SAI_PORT_STAT_PFC_<n>_RX_PKTS`` / ``_TX_PKTS`` with thousands commas
  (utilities_common/netstat.py ``format_number_with_comma``) or ``N/A`` where the counter is
  missing (tests/pfcstat_test.py ``show_pfc_counters_output``). After a ``pfcstat -c`` by the
  same user, a ``Last cached time was ...`` line comes before each table and the cells are
  the counts since then (``ns_diff``: never below 0).
- ``queuestat -j`` (``show queue counters --json``), the same branch: JSON (utilities_common/
  cli.py ``json_dump``) port -> {``time``, queue -> {``totalpacket``, ``totalbytes``,
  ``droppacket``, ``dropbytes``}}, the queue keyed by its type and index (``UC3``, ``MC13``,
  ``ALL20``: COUNTERS_QUEUE_TYPE_MAP and COUNTERS_QUEUE_INDEX_MAP), each value a string:
  digits, ``N/A`` where COUNTERS_DB lacks ``SAI_QUEUE_STAT_DROPPED_PACKETS``, or after a
  ``queuestat -c`` the counts since then with thousands commas (tests/queue_counter_test.py
  ``show_queue_counters_json``).
- ``wredstat -j`` (``show queue wredcounters --json``), from branch 202505 (commit
  7511bf2f8ea3582c2b67cf5016f8e8237e62882b; 202405 has no wredstat): the same shape with
  ``wreddroppacket``, ``wreddropbytes``, ``ecnmarkedpacket``, ``ecnmarkedbytes``
  (``SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS``; tests/wred_queue_counter_test.py
  ``show_queue_counters_json``). Optional: an image without it has no ECN marks to read.

A multi-ASIC switch prints one document per ASIC; only the first is read (the CX864E-N and
CX732Q-N have one ASIC). Anything else than these shapes raises :class:`OutputError` naming
the tool and what was wrong: a reader must not mistake unreadable output for zero counters.
"""

from __future__ import annotations

import re
from typing import Any

from controller.drivers.common import OutputError, load_json, natural_key
from controller.drivers.types import QueueCounters

PFCSTAT = "pfcstat"
QUEUESTAT = "queuestat -j"
WREDSTAT = "wredstat -j"
NA = "N/A"
PRIORITIES = 8
_QUEUE = re.compile(r"(UC|ALL)(\d+)")
"""Unicast queues (``ALL``: an ASIC whose queues carry both); multicast ones are not RoCE's."""

PerPort = dict[str, dict[int, int]]


def count(cell: str, tool: str) -> int:
    """A counter cell: ``1,200`` -> 1200, ``N/A`` -> -1; anything else is malformed."""
    text = cell.strip()
    if text == NA:
        return -1
    if not re.fullmatch(r"\d{1,3}(,\d{3})*|\d+", text):
        raise OutputError(f"{tool}: {cell!r} is not a counter")
    return int(text.replace(",", ""))


def pfc_frames(text: str) -> tuple[PerPort, PerPort]:
    """(received, sent) PFC frames: port -> priority -> frames, from ``pfcstat``'s tables."""
    tables: dict[str, PerPort] = {}
    direction = ""
    for line in text.splitlines():
        cells = line.split()
        if cells[:2] in (["Port", "Rx"], ["Port", "Tx"]):
            if cells[2:] != [f"PFC{p}" for p in range(PRIORITIES)]:
                raise OutputError(f"{PFCSTAT}: unexpected columns {line.strip()!r}")
            direction = cells[1]
            tables[direction] = {}
        elif not cells:
            direction = ""  # a table ends at a blank line
        elif direction and not all(set(c) == {"-"} for c in cells):  # not the rule
            if len(cells) != PRIORITIES + 1:
                raise OutputError(f"{PFCSTAT}: a row of {len(cells)} cells: {line.strip()!r}")
            tables[direction][cells[0]] = {
                p: count(cell, PFCSTAT) for p, cell in enumerate(cells[1:])
            }
    missing = [d for d in ("Rx", "Tx") if d not in tables]
    if missing:
        raise OutputError(f"{PFCSTAT}: no `Port {missing[0]}` table in {text[:200]!r}")
    return tables["Rx"], tables["Tx"]


def queue_column(data: Any, column: str, tool: str) -> PerPort:
    """port -> unicast queue index -> ``column`` (``droppacket``, ``ecnmarkedpacket``) from
    ``queuestat -j`` / ``wredstat -j``'s JSON."""
    if not isinstance(data, dict) or not data:
        raise OutputError(f"{tool}: expected an object of ports, got {str(data)[:200]!r}")
    result: PerPort = {}
    for port, queues in data.items():
        if not isinstance(queues, dict):
            raise OutputError(f"{tool}: {port}: expected an object of queues")
        found: dict[int, int] = {}
        for key, fields in sorted(queues.items(), key=lambda kv: not str(kv[0]).startswith("UC")):
            match = _QUEUE.fullmatch(str(key))
            if not match:
                continue  # "time", "cached_time", multicast queues
            if not isinstance(fields, dict) or column not in fields:
                raise OutputError(f"{tool}: {port} {key}: no {column!r}")
            found.setdefault(int(match.group(2)), count(str(fields[column]), tool))
        result[str(port)] = found
    return result


def queue_counters(pfcstat: str, queuestat: str, wredstat: str | None) -> dict[str, QueueCounters]:
    """Every port's PFC frames, queue drops and (where ``wredstat`` answered JSON) ECN marks,
    from the three tools' outputs; ``wredstat`` None or not JSON: no ECN marks."""
    received, sent = pfc_frames(pfcstat)
    drops = queue_column(load_json(queuestat), "droppacket", QUEUESTAT)
    marks: PerPort = {}
    if wredstat is not None:
        try:
            marks = queue_column(load_json(wredstat), "ecnmarkedpacket", WREDSTAT)
        except OutputError:
            marks = {}
    ports = sorted({*received, *sent, *drops}, key=natural_key)
    return {
        port: {
            "pfc_rx": received.get(port, {}),
            "pfc_tx": sent.get(port, {}),
            "drops": drops.get(port, {}),
            "ecn_marked": marks.get(port, {}),
        }
        for port in ports
    }
