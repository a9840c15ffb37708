"""Whether an ES bond member's LACP port state was computed after its last carrier loss.

Linux keeps a bond slave's LACP port states (``ad_actor_oper_port_state``,
``ad_partner_oper_port_state``) as they were when its carrier went: a member whose link came
back within a second or two read "in sync, collecting, distributing" at both ends (63 and
63) with carrier, before its LACP machines had run again, and the agent took that for a
serving port. It advertised the server's /32 and opened the bond's gate 0.8 s after the
link returned, while the server still held its port out of its bond for 10 s (CI of
2026-12-07, ``test_evpn_mh_leaf_withdraws_a_server_it_no_longer_serves``; the EVPN-MH lab:
63/63 read with no carrier 0.2-1.2 s after the loss, 199/2 a moment after the return).

So after a carrier loss (seen as no carrier, or as a new ``link_failure_count``) a member
whose states still say it serves is not believed until the agent has seen them say it does
not (its LACP renegotiating: they are fresh from then on), or until ``STALE_S`` have passed
with carrier (LACP's short timeout: the machines have run by then whatever the agent saw).
A member first seen serving (the agent started on a running fabric) is believed.

Each look carries the moment it was read (``seen_at``), and a look read before the last one
that changed what the agent believes of the member is not believed. A pass reads
``ip -d -j link show`` once and judges it twice, seconds apart in a loaded guest, around a
fresher look at sysfs (its own, and GateWatch's in another thread): that older snapshot,
still showing the old states with carrier, was believed once the sysfs look had seen LACP
renegotiate, and the /32 came back 1.0 s after the link while the server still held its
port out (CI, 2026-12-07 again, after the first fix).

One instance serves the agent's pass and its GateWatch thread: the lock orders them.
"""

from __future__ import annotations

import math
import threading
import time

STALE_S = 3.0
"""How long after its carrier returned a member's 'serving' states may still be the old
ones before the agent believes them anyway: LACP's short timeout (3 s, fast rate)."""


class Freshness:
    """Per member: since when its serving states are suspect (``math.inf`` while it has no
    carrier), the highest link failure count seen, and when the look that last changed
    either was read."""

    def __init__(self, stale_s: float = STALE_S) -> None:
        self.stale_s = stale_s
        self._suspect: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._changed_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def believe(
        self,
        member: str,
        carrier: bool,
        failures: int | None,
        says_serving: bool,
        seen_at: float | None = None,
    ) -> bool:
        """Whether ``says_serving`` (what the member's LACP states say) is to be believed,
        given one look at the member read at ``seen_at`` (monotonic; now if None): its
        carrier and its link failure count. A look older than what the agent already knows
        of the member is never believed and changes nothing."""
        seen_at = time.monotonic() if seen_at is None else seen_at
        with self._lock:
            if seen_at < self._changed_at.get(member, -math.inf):
                return False
            self._note_failures(member, failures, carrier, seen_at)
            if not carrier:
                self._mark(member, math.inf, seen_at)
                return False
            since = self._suspect.get(member)
            if since is None:
                return says_serving
            if not says_serving:  # renegotiating: what it says from now on is fresh
                self._mark(member, None, seen_at)
                return False
            if since == math.inf:  # carrier back, the states as they were: from now
                self._mark(member, seen_at, seen_at)
                return False
            if seen_at - since >= self.stale_s:
                self._mark(member, None, seen_at)
                return True
            return False

    def _mark(self, member: str, suspect_since: float | None, seen_at: float) -> None:
        """Record a change of what the agent believes of ``member`` (suspect since, or
        fresh when None), made by a look read at ``seen_at``."""
        if suspect_since is None:
            self._suspect.pop(member, None)
        elif self._suspect.get(member) != suspect_since:
            self._suspect[member] = suspect_since
        else:
            return
        self._changed_at[member] = seen_at

    def _note_failures(self, member: str, failures: int | None, carrier: bool, now: float) -> None:
        """A link failure count higher than any seen before is a carrier loss the agent did
        not see (the link came back between two looks)."""
        if failures is None:
            return
        before = self._failures.get(member)
        if before is not None and failures <= before:
            return
        self._failures[member] = failures
        if before is not None and member not in self._suspect:
            self._mark(member, now if carrier else math.inf, now)


FRESHNESS = Freshness()
"""The agent's one record (the pass and GateWatch both look at the members)."""
