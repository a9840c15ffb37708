"""When the main loop reconciles, and whether it asks zebra then."""

from __future__ import annotations

RESYNC_S = 5.0
ZEBRA_S = 30.0
"""How often the agent asks zebra for its synced entries (EVPN-MH) when every server of a
local segment already has a neighbour here: one vtysh costs 1-2 s of CPU in the emulated
lab guest, and four leaves asking every 5 s took half of its two CPUs. While a segment's
server lacks one, it asks on every resync (RESYNC_S)."""
NEIGH_EVENT_S = 1.0
"""Neighbour events (every ARP state change, many a second under traffic) trigger at most
one reconcile a second; link events (carrier) trigger one at once."""


class Pacer:
    """When to reconcile, and whether to ask zebra (pure: the caller gives the clock)."""

    def __init__(self) -> None:
        self.last_pass = float("-inf")
        self.last_zebra = float("-inf")
        self.link = False
        self.neigh = False
        self.missing = True
        self.zebra_by = float("inf")
        """Ask zebra at this time at the latest (Synced.next_ask)."""

    def note(self, text: str) -> None:
        """Lines of ``ip monitor label link neigh``."""
        self.link = self.link or "[LINK]" in text
        self.neigh = self.neigh or "[NEIGH]" in text

    def _next_zebra(self) -> float:
        zebra_every = RESYNC_S if self.missing else ZEBRA_S
        return min(self.last_zebra + zebra_every, self.zebra_by)

    def due(self, now: float) -> tuple[bool, bool]:
        """(reconcile now, ask zebra in it)."""
        if now >= self._next_zebra():
            return True, True
        if now - self.last_pass >= RESYNC_S or self.link:
            return True, False
        return self.neigh and now - self.last_pass >= NEIGH_EVENT_S, False

    def done(
        self, now: float, asked_zebra: bool, missing: bool, zebra_by: float = float("inf")
    ) -> None:
        self.last_pass = now
        if asked_zebra:
            self.last_zebra = now
        self.link = self.neigh = False
        self.missing = missing
        self.zebra_by = zebra_by

    def wait(self, now: float) -> float:
        """Seconds until the next pass is due without any new event."""
        nxt = min(self._next_zebra(), self.last_pass + RESYNC_S)
        if self.neigh:
            nxt = min(nxt, self.last_pass + NEIGH_EVENT_S)
        return max(0.0, nxt - now)
