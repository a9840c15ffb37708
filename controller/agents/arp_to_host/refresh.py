"""EVPN-MH: a leaf keeps REACHABLE the neighbours it verified itself, while its ES bond serves
the server.

zebra advertises a local neighbour to the pair as active only while the kernel holds it
REACHABLE (FRR, zebra/rt_netlink.c: ``NUD_LOCAL_ACTIVE`` is PERMANENT, NOARP or REACHABLE;
with EVPN-MH it advertises reachable neighbours only). An entry nothing is sent through
goes STALE after the kernel's reachable time (15-45 s) and stays STALE. A drain's hand-off
does exactly that: the leaf routes its own servers through its pair and sends nothing to
them itself. The pair's agent, seeing the sync held for HANDBACK_HOLD_S, hands its NOARP
entry back to its kernel to verify; the server answers the anycast gateway MAC through the
port its bond hashes that to, this leaf's, so the pair's probes go unanswered, and once they
failed (10 s) the pair dropped the server's traffic until the sync came back. The rolling
apply bench of 2026-12-07 lost 223 packets so, in the canary's hand-off (EVPN-MH lab): all
from srv0002 to srv0001 on rail 1, ending as the pair logged "put back 10.100.0.2 ... this
leaf's probes of it had failed"; a drain of the lab sampled every second showed the
drained leaf's entry STALE from 108 s and the pair's in PROBE from 122 s to 136 s.

So a pass asks the kernel to probe, at once, an entry that went STALE here after this leaf
had verified it (REACHABLE, not the agent's own), while the server's bond here serves it:
the kernel asks the server by unicast, the answer comes back to this leaf, and the entry is
REACHABLE again within a second, before the pair's hold ends. The same drain with it: the
drained leaf's entry stayed REACHABLE through the hand-off, the pair never probed. An entry
in DELAY is probed too: traffic found it STALE, and the kernel waits 5 s before it probes
(``delay_first_probe_time``), all of them inactive to zebra (3.5-6.8 s in that lab, longer
than the pair's hold). A leaf whose bond does not serve the server does not probe it (its
answers go to the pair), nor does one that never verified it (the same)."""

from __future__ import annotations

from typing import Any

from .kernel import _states
from .synced import Key, probe_line
from .zebra import _agents_own

TRACKED_STATES = {"REACHABLE", "STALE", "DELAY", "PROBE"}
"""States in which an entry this leaf verified is still followed (a probe that failed ends
in FAILED: the leaf no longer verifies it, and the agent's other rules take over)."""

WAITING_STATES = {"STALE", "DELAY"}
"""States in which the kernel would not ask the server now (STALE: until traffic uses the
entry; DELAY: for 5 s more), and zebra counts the entry inactive."""


class Refresh:
    """The entries of the EVPN SVIs this leaf verified itself, followed from pass to pass."""

    def __init__(self, svis: set[str]) -> None:
        self.svis = svis
        self.verified: set[Key] = set()

    def lines(self, entries: list[dict[str, Any]], served: set[str]) -> list[str]:
        """``ip -batch`` lines that probe each entry gone STALE or DELAY that this leaf
        verified and whose server its bond serves (``served``: their addresses);
        ``entries`` is the kernel's ``ip -j -4 neigh show``."""
        batch, followed = [], set()
        for entry in entries:
            key = (str(entry.get("dst", "")), str(entry.get("dev", "")))
            states = _states(entry)
            if key[1] not in self.svis or _agents_own(entry) or not states & TRACKED_STATES:
                continue
            if "REACHABLE" in states:
                followed.add(key)
            elif key in self.verified:
                followed.add(key)
                mac = str(entry.get("lladdr", ""))
                if states & WAITING_STATES and key[0] in served and mac:
                    batch.append(probe_line(key[0], mac, key[1]))
        self.verified = followed
        return batch
