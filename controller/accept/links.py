"""Links: each planned switch port up at its planned speed and MTU, and its error and drop
counters still at what they were before the test (pure, over the drivers' getters).

Speeds: NAPALM's ``get_interfaces`` speed is in Mbit/s, -1 where the platform does not say
(a Linux switch's ``ip link`` has no speed: the lab's veths); then the speed is not judged.
Counters: ``get_interfaces_counters`` (the kernel's on Linux + FRR, the ASIC's on SONiC and
AsterNOS: docs/platforms/napalm-getters.md); -1 is NAPALM's "not kept".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.accept.result import Finding, failed, passed, skipped
from controller.render.device import DeviceConfig

COUNTERS = ("rx_errors", "tx_errors", "rx_discards", "tx_discards")
DISCARDS_ALLOWED = 10
"""Discards a port may add during one run without failing: a Linux port counts as received
and dropped every frame no protocol takes (the lab's leaves: +3 per host port per run, the
servers' IPv6 multicast on an isolated bridge port); errors are never allowed."""


def speed_mbps(speed: str) -> float:
    """'100G' -> 100000.0, '400G' -> 400000.0, '10G' -> 10000.0 (the catalog's port speeds)."""
    number, unit = speed[:-1], speed[-1].upper()
    scale = {"G": 1000.0, "M": 1.0, "T": 1_000_000.0}[unit]
    return float(number) * scale


def port_findings(
    device: DeviceConfig,
    interfaces: Mapping[str, Mapping[str, Any]],
    ports_down: bool = False,
) -> list[Finding]:
    """One row per planned port: present, enabled, up, planned speed and MTU. ``ports_down``:
    the switch is drained (its host ports are down by design, not judged)."""
    rows = []
    for port in device.interfaces:
        name = f"{device.hostname}:{port.name}"
        where = {"device": device.hostname, "port": port.name}
        peer = f"{port.peer_device}:{port.peer_port}"
        if ports_down and port.use == "downlink":
            rows.append(skipped("links", name, "host port of a drained leaf (down by design)"))
            continue
        found = interfaces.get(port.name)
        if found is None:
            rows.append(
                failed(
                    "links",
                    name,
                    "port does not exist on the switch",
                    f"check the port name / breakout of {name} (planned to {peer})",
                    **where,
                )
            )
            continue
        problems, fixes = _port_problems(port.speed, port.mtu, found, name, peer)
        if problems:
            evidence = {k: found.get(k) for k in ("is_up", "is_enabled", "speed", "mtu")}
            rows.append(
                failed(
                    "links", name, "; ".join(problems), "; ".join(fixes), evidence=evidence, **where
                )
            )
        else:
            rows.append(passed("links", name, f"up, MTU {port.mtu}", **where))
    return rows


def _port_problems(
    speed: str, mtu: int, found: Mapping[str, Any], name: str, peer: str
) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    fixes: list[str] = []
    if not found.get("is_enabled"):
        problems.append("admin down")
        fixes.append(f"enable {name} (dpctl deploy puts the planned state back)")
    elif not found.get("is_up"):
        problems.append(f"link down (to {peer})")
        fixes.append(
            f"check the cable {name} - {peer}: seated at both ends, transceivers, the far port up"
        )
    want = speed_mbps(speed)
    got = float(found.get("speed", -1.0))
    if got > 0 and got != want:
        problems.append(f"speed {got:g} Mb/s, planned {want:g}")
        fixes.append(f"set {name} to {speed} (and check the optic/cable type)")
    got_mtu = int(found.get("mtu", 0))
    if got_mtu != mtu:
        problems.append(f"MTU {got_mtu}, planned {mtu}")
        fixes.append(f"set the MTU of {name} to {mtu} (dpctl deploy)")
    return problems, fixes


def counter_findings(
    device: DeviceConfig,
    before: Mapping[str, Mapping[str, int]] | None,
    after: Mapping[str, Mapping[str, int]] | None,
) -> list[Finding]:
    """A planned port whose error or drop counters grew during the test is named, with the
    growth of each; a switch without the counters getter is one skipped row."""
    if before is None or after is None:
        return [skipped("links", f"{device.hostname} counters", "counters not readable")]
    rows = []
    for port in device.interfaces:
        name = f"{device.hostname}:{port.name}"
        grew = _growth(before.get(port.name), after.get(port.name))
        if any(v > (DISCARDS_ALLOWED if "discards" in k else 0) for k, v in grew.items()):
            text = ", ".join(f"{k} +{v}" for k, v in sorted(grew.items()))
            rows.append(
                failed(
                    "links",
                    f"{name} counters",
                    f"counters grew during the test: {text}",
                    f"errors: clean or replace the optic/cable at {name} and its peer "
                    f"{port.peer_device}:{port.peer_port}; discards: look for congestion or "
                    "a wrong MTU/VLAN on the port",
                    evidence={"grew": grew},
                    device=device.hostname,
                    port=port.name,
                )
            )
    return rows


def _growth(before: Mapping[str, int] | None, after: Mapping[str, int] | None) -> dict[str, int]:
    """How much each error/discard counter grew (counters -1, not kept, left out)."""
    if before is None or after is None:
        return {}
    return {
        k: int(after[k]) - int(before[k])
        for k in COUNTERS
        if int(before.get(k, -1)) >= 0 and int(after.get(k, -1)) > int(before.get(k, -1))
    }
