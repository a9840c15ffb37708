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
    carrier), and the link failure count last seen."""

    def __init__(self, stale_s: float = STALE_S) -> None:
        self.stale_s = stale_s
        self._suspect: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()

    def believe(
        self,
        member: str,
        carrier: bool,
        failures: int | None,
        says_serving: bool,
        now: float | None = None,
    ) -> bool:
        """Whether ``says_serving`` (what the member's LACP states say) is to be believed,
        given one look at the member: its carrier and its link failure count."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._note_failures(member, failures, carrier, now)
            if not carrier:
                self._suspect[member] = math.inf
                return False
            since = self._suspect.get(member)
            if since is None:
                return says_serving
            if not says_serving:  # renegotiating: what it says from now on is fresh
                del self._suspect[member]
                return False
            if since == math.inf:  # carrier back, the states as they were: from now
                self._suspect[member] = now
                return False
            if now - since >= self.stale_s:
                del self._suspect[member]
                return True
            return False

    def _note_failures(self, member: str, failures: int | None, carrier: bool, now: float) -> None:
        """A link failure count that moved since the last look is a carrier loss the agent
        did not see (the link came back between two looks)."""
        if failures is None:
            return
        before = self._failures.get(member)
        self._failures[member] = failures
        if before is not None and failures != before and member not in self._suspect:
            self._suspect[member] = now if carrier else math.inf


FRESHNESS = Freshness()
"""The agent's one record (the pass and GateWatch both look at the members)."""
