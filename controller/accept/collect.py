"""What `dpctl accept` reads from the switches, through the drivers (Nornir, one connection
per switch, all switches in parallel). It changes nothing on them.

Two reads: before the traffic (LLDP, interfaces, counters, IPv6 neighbours) and after it
(counters again). Between them each leaf probes each of its fabric cables: it pings the far
end's IPv6 link-local address (from its IPv6 neighbour table: on a BGP-unnumbered link FRR
learnt it from the peer's router advertisements) over that port, at the fabric MTU with
don't-fragment. That is the same on every platform whose ``cli`` reaches a Linux shell (Linux +
FRR, SONiC); AsterNOS's ``cli`` runs klish ``show`` commands only, so there the fabric cable
is judged by its LLDP, its state and its counters, and the probe is a skip with that reason.
"""

from __future__ import annotations

import re
from typing import Any

from nornir.core.task import Result, Task

from controller.accept.roce import queue_counters
from controller.platforms.connection_plugin import CONNECTION_NAME

PING_COUNT = 5
PING_RE = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


def _driver(task: Task) -> Any:
    return task.host.get_connection(CONNECTION_NAME, task.nornir.config)


def _counters(driver: Any) -> dict[str, Any] | None:
    try:
        counters: dict[str, Any] = driver.get_interfaces_counters()
    except NotImplementedError:
        return None
    return counters


def read_before(task: Task) -> Result:
    """LLDP, interfaces, counters and IPv6 neighbours of one switch."""
    try:
        driver = _driver(task)
        with driver.dpctl.batched_reads():
            state = {
                "lldp": driver.get_lldp_neighbors(),
                "interfaces": driver.get_interfaces(),
                "counters": _counters(driver),
                "ipv6_neighbors": driver.get_ipv6_neighbors_table(),
                "queues": queue_counters(driver),
            }
    except Exception as exc:  # an unreachable switch is a finding, not a crash
        return Result(host=task.host, result=f"{type(exc).__name__}: {exc}", failed=True)
    return Result(host=task.host, result=state)


def read_after(task: Task) -> Result:
    """The counters of one switch again, after the traffic (and its lossless queues')."""
    try:
        driver = _driver(task)
        after = {"counters": _counters(driver), "queues": queue_counters(driver)}
        return Result(host=task.host, result=after)
    except Exception as exc:
        return Result(host=task.host, result=f"{type(exc).__name__}: {exc}", failed=True)


def ping_command(address: str, port: str, size: int) -> str:
    return f"ping -6 -n -q -c {PING_COUNT} -i 0.2 -W 2 -M do -s {size} {address}%{port}"


def parse_ping(text: str) -> tuple[int, int] | None:
    """(sent, received) from iputils ping's summary, else None."""
    match = PING_RE.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def ping_fabric(task: Task, targets: dict[str, str], size: int) -> Result:
    """Ping each port's link-local peer (``targets``: port -> address) from this switch.
    Returns port -> {"sent", "received"} or {"skip": why}."""
    try:
        driver = _driver(task)
        commands = {port: ping_command(addr, port, size) for port, addr in targets.items()}
        try:
            answers = driver.cli(list(commands.values())) if commands else {}
        except Exception as exc:  # a platform whose cli has no shell (AsterNOS: klish)
            why = f"link-local probe not possible here: {exc}"
            return Result(host=task.host, result={p: {"skip": why} for p in targets})
        out: dict[str, Any] = {}
        for port, command in commands.items():
            counted = parse_ping(str(answers.get(command, "")))
            out[port] = (
                {"sent": counted[0], "received": counted[1]}
                if counted
                else {"skip": f"no ping summary: {str(answers.get(command, ''))[-200:]}"}
            )
    except Exception as exc:
        return Result(host=task.host, result=f"{type(exc).__name__}: {exc}", failed=True)
    return Result(host=task.host, result=out)


def link_local_peers(neighbors: list[dict[str, Any]]) -> dict[str, str]:
    """Port -> the link-local address of the neighbour on it (the first, in address order;
    entries the kernel gave up on, FAILED or INCOMPLETE, are left out)."""
    peers: dict[str, str] = {}
    for entry in sorted(neighbors, key=lambda e: str(e.get("ip", ""))):
        ip, port = str(entry.get("ip", "")), str(entry.get("interface", ""))
        state = str(entry.get("state", "")).upper()
        if ip.lower().startswith("fe80:") and port and state not in ("FAILED", "INCOMPLETE"):
            peers.setdefault(port, ip)
    return peers
