"""A draining leaf hands its own servers to its pair before they leave it.

Graceful-shutdown moves the rest of the plane off a leaf (its routes get LOCAL_PREF 0, and
every other leaf prefers its own AUX backup), but not what the servers behind the leaf send
each other through it: the leaf delivers that itself, to the server's port. When a server
then releases that port (``--hosts-first``) or the leaf takes it down (isolated), whatever
the leaf is still delivering to it is lost until the leaf's ARP-to-host routes notice: in
the lab (2026-12-07, dual-ARP, QEMU TCG guest, a drain of p2-g1-leaf1 under probe flows) 10
packets of one server's flow to another on the same rail, dropped 0.4 s long as flooded
frames for a server no longer there (``ip_rcv_core``, in the kernel's ``kfree_skb`` trace)
after one dropped on the released port itself (``veth_xmit``).

So a drain takes one more step between graceful-shutdown and the servers' release,
``handed-off``: the leaf's host routes yield to its pair's over the AUX link (zebra stops
importing them and RM-HOSTS-IMPORT denies them to BGP; ``Bgp.zebra_imports_hosts`` in
``controller/render/bgp.py``), and the
drain waits until the leaf really routes every server behind it through the AUX link before
any server leaves. It applies only where there is such a route: a leaf with a pair, in a
fabric with cross-plane protection. Without it the leaf keeps delivering (nothing else
could) and the step is skipped.
"""

from __future__ import annotations

import time

from controller.access import FabricAccess
from controller.facts import Fabric
from controller.verify import Check, check_hosts_via_pair, read_one

HANDOFF_WAIT_S = 45.0
"""How long a drain waits for the leaf's routes to move to its pair: bgpd applies a changed
route-map to redistributed routes on its route-map timer (FRR's default 5 s), then zebra
installs the pair's routes; a loaded lab guest takes longer."""
POLL_S = 2.0


def hand_off_applies(fabric: Fabric, name: str) -> bool:
    """Does a drain of ``name`` hand its servers to its pair (a leaf with a pair, in a fabric
    with cross-plane protection)?"""
    switch = fabric.switch_by_name[name]
    return switch.role == "leaf" and bool(switch.pair) and fabric.intent.cross_plane_protection


def wait_until_handed_off(
    fabric: Fabric, access: FabricAccess, leaf: str, wait_s: float = HANDOFF_WAIT_S
) -> Check:
    """The leaf's ``hosts-via-pair`` check once it passes, or the last one after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        state = read_one(fabric, access, leaf)
        check = state if isinstance(state, Check) else check_hosts_via_pair(fabric, leaf, state)
        if check.ok or time.monotonic() >= deadline:
            return check
        time.sleep(POLL_S)
