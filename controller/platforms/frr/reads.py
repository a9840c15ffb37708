"""What an FRR switch's Linux side says, in NAPALM's and dpctl's result types (pure parsers
of ``ip -j``, ``tc -j`` and sysctl output)."""

from __future__ import annotations

from typing import Any

from napalm.base import models

from controller.drivers.types import QosState

HASH_POLICIES = {"0": "l3", "1": "l4", "2": "l3-inner", "3": "custom"}
"""``net.ipv4.fib_multipath_hash_policy`` values (kernel ip-sysctl.rst)."""


def interfaces(links: list[dict[str, Any]]) -> dict[str, models.InterfaceDict]:
    """NAPALM ``get_interfaces`` from ``ip -j link show`` (speed unknown: -1.0)."""
    result: dict[str, models.InterfaceDict] = {}
    for link in links:
        flags = link.get("flags", [])
        result[str(link["ifname"])] = {
            "is_up": link.get("operstate") in ("UP", "UNKNOWN") and "UP" in flags,
            "is_enabled": "UP" in flags,
            "description": str(link.get("ifalias", "")),
            "last_flapped": -1.0,
            "speed": -1.0,
            "mtu": int(link.get("mtu", 0)),
            "mac_address": str(link.get("address", "")),
        }
    return result


def qos_state(qdiscs: list[dict[str, Any]], hash_policy: str) -> QosState:
    """ECN per port from the kernel's qdiscs: a queue is a band of the port's prio qdisc,
    marking ECN when a RED qdisc with ``ecn`` sits on it (``tc -j``: ``parent`` "1:<band>",
    ``options.ecn`` true; iproute2 tc/tc_red.c). PFC does not exist in the Linux datapath
    (None). ECMP hash: ``net.ipv4.fib_multipath_hash_policy`` (0 = L3, 1 = L4)."""
    ecn: dict[str, list[int]] = {}
    for qdisc in qdiscs:
        options = qdisc.get("options", {})
        marks = options.get("ecn") is True or "ecn" in options.get("flags", [])
        band = str(qdisc.get("parent", "")).partition(":")[2]
        if qdisc.get("kind") == "red" and marks and band.isdigit():
            ports = ecn.setdefault(str(qdisc["dev"]), [])
            ports.append(int(band))
            ports.sort()
    hashed = HASH_POLICIES.get(hash_policy, f"policy {hash_policy}")
    return QosState(pfc=None, ecn=ecn, ecmp_hash=hashed)
