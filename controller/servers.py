"""The GPU servers' side of the design: how a server's NICs are set up, the same on a real
server (through Ansible, `playbooks/`) and on a lab server.

Each GPU's NIC bonds its two ports (port 1 to plane 1, port 2 to plane 2) into ``gpu<rail>``,
routes the rail pool through its own gateway from its own address (one routing table per
rail), and keeps its gateway's ARP entry alive, so the leaves keep its /32 host route.
"""

from __future__ import annotations

from typing import Any

from controller.facts import Nic

SERVER_MTU = 9000
FAILBACK_HOLD_MS = 10_000
"""A server's port that comes back waits this long before carrying traffic again (both
modes; lab-facts: dual-ARP switching back at once lost 3.3 s while the leaf's BGP came up,
10 s lost 0; EVPN-MH without it lost 5.5 s from the servers as a leaf came back, matrix of
2026-12-02)."""
NIC_TABLE_BASE = 100
"""A NIC's routing table is NIC_TABLE_BASE + its rail."""
ARP_KEEPALIVE_S = 2
"""Seconds between the keep-alive pings from each NIC to its gateway."""


def bond_name(nic: Nic) -> str:
    return f"gpu{nic.rail}"


def bond_options(mode: str) -> dict[str, Any]:
    """The bond of a GPU NIC's two ports as the dual-leaf design needs it.

    EVPN-MH: LACP (802.3ad, fast) towards the leaf pair that presents one Ethernet segment.
    Dual-ARP: both ports active (balance-xor layer3+4), and every ARP frame sent out of both
    ports. Both: a hold before a returning port carries traffic again (updelay), so that a
    leaf coming back has its routes before its servers send through it.
    """
    if mode == "evpn-mh":
        return {
            "mode": "802.3ad",
            "lacp_rate": "fast",
            "xmit_hash_policy": "layer3+4",
            "miimon": 100,
            "updelay": FAILBACK_HOLD_MS,
        }
    return {
        "mode": "balance-xor",
        "xmit_hash_policy": "layer3+4",
        "miimon": 100,
        "updelay": FAILBACK_HOLD_MS,
    }
