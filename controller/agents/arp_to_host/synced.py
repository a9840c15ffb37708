"""EVPN-MH (``evpn_svis``: VNI -> SVI): a server's ARP reply reaches only the leaf its bond hashed
it to (both leaves send from the anycast gateway MAC, which each holds as a local bridge
entry). zebra syncs the entry to the pair (`show evpn arp-cache`: type local, peer-active),
but FRR 8.4 does not make it a usable kernel neighbour on this kernel (it stays INCOMPLETE),
so the pair would have no /32. The agent installs each such synced entry itself as an
externally learned, never-probed neighbour (`extern_learn nud noarp`: zebra ignores
externally learned kernel entries as local learning, so it does not re-advertise it) while
the pair verifies the server (peer-active, not on hold for long: ``pair_confirms``). An entry
the pair no longer verifies goes back to the kernel to verify at once (a NOARP entry ignores
every ARP: ``Synced`` says why that matters), and so does one whose server's ARP reaches
this leaf (``ArpWatch``: a raw socket on each ES member); one zebra no longer lists is
removed, though not while this leaf's own BGP EVPN is settling (its bgpd restarted: zebra
forgot every sync; ``EVPN_SETTLE_S``). A server whose ES bond here does not serve it (its
ARP all goes to the pair) is installed on zebra's word alone: this leaf cannot verify it,
and zebra's own STALE re-install of it (at the end of its 18 min hold timer) would be
probed and fail (``_verified_here``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from . import journal, kernel, zebra
from .kernel import DEAD_STATES, PROTO, _states
from .pacing import NEIGH_EVENT_S
from .zebra import (
    EVPN_SETTLE_S,
    HANDBACK_HOLD_S,
    _agents_own,
    _verified_here,
    held_for,
    pair_confirms,
)

Key = tuple[str, str]
"""A neighbour: (address, SVI)."""
HEARD_QUIET_S = 1.5
"""After the server's ARP was heard here and the agent's entry handed back, how long a pass
leaves the kernel's entry alone (its probe is answered here within milliseconds; a pass
reading zebra's older word that the pair verifies would otherwise put the NOARP entry back
before the answer)."""
HEAR_AGAIN_S = 1.0
"""At most one look at the kernel a second per server (its ARP comes in bursts)."""
PROBE_AGAIN_S = 15.0
"""How often the agent probes a server zebra lists (the pair proxies it) that this leaf's
kernel has no usable entry of: the server's answer comes to whichever leaf its bond hashes
ARP to, and that one verifies it; one that is gone is probed again no more often. Longer
than a probe lasts before it fails (the rendered ``ucast_solicit`` of the EVPN SVIs, 10
probes 1 s apart), so an unanswered probe never counts as answered (``Synced.unproven``)."""


def probe_line(address: str, mac: str, svi: str) -> str:
    """The ``ip -batch`` line that gives a neighbour to the kernel in PROBE with ``mac``: it
    forwards with it and asks the server at once (a hand-back, or a fresh probe)."""
    return f"neigh replace {address} lladdr {mac} dev {svi} proto {PROTO} nud probe"


def install_line(address: str, mac: str, svi: str) -> str:
    """The ``ip -batch`` line of the agent's own entry: externally learned, never probed."""
    return f"neigh replace {address} lladdr {mac} dev {svi} proto {PROTO} extern_learn nud noarp"


def agents_svi(entries: list[dict[str, Any]], svis: set[str]) -> str | None:
    """The EVPN SVI on which ``entries`` (the kernel's neighbours of one address) hold the
    agent's NOARP entry, None if none does."""
    for entry in entries:
        dev = str(entry.get("dev", ""))
        if dev in svis and _agents_own(entry):
            return dev
    return None


def hand_back_heard(
    entries: list[dict[str, Any]], address: str, mac: str, svis: set[str]
) -> list[str]:
    """``ip -batch`` lines for a server whose ARP this leaf just received (``entries``: the
    kernel's neighbours of its address): if it holds the agent's NOARP entry, which made
    the kernel ignore that ARP, hand it back to the kernel to probe; the answer comes here
    (the server's bond hashes ARP by MAC, to this leaf now)."""
    svi = agents_svi(entries, svis)
    return [] if svi is None else [probe_line(address, mac, svi)]


class Synced:
    """The neighbours this agent installed from zebra's synced entries.

    It installs an entry only while the pair verifies the server (``pair_confirms``), or
    where this leaf cannot (its bond does not serve the server: ``apply``): an
    externally learned NOARP entry is never probed, and the kernel ignores every ARP for it
    (net/core/neighbour.c, ``__neigh_update``: only an administrative update changes a NOARP
    entry). So while it stands this leaf cannot learn the server itself, and if the server's
    ARP reaches this leaf (its bond hashes ARP by MAC, always to the same port) nobody
    verifies it any more. A planned FRR restart on a 6.12 lab left it so, 2026-12-04: the
    restarted leaf's entry FAILED, the pair still held ours, and the server's /32 stayed
    missing on the restarted leaf's plane. An entry zebra still lists but the pair no longer
    verifies is handed back to the kernel in state PROBE, same MAC: it still forwards, and
    the kernel sends its unicast probe at once. Whichever leaf the server's answer reaches
    verifies it (this one, or the pair: its SVI takes unsolicited ARP replies, arp_accept),
    and syncs it to the other; where that is the pair, this leaf's probes go unanswered and
    the agent, asking zebra at every pass meanwhile (``next_ask``), puts its own entry back
    before they fail (10 s: the EVPN SVIs' rendered ``ucast_solicit``; with the kernel's 3 s
    the put-back came too late on a loaded lab guest and the /32 went, 2026-12-04). Left
    STALE, an entry is probed only when traffic uses it: on the lab's idle fabric after a
    deploy it was not, and the other leaf's /32 stayed missing.
    One zebra no longer lists at all is deleted. The server's ARP reaching this leaf hands
    the entry back at once (ArpWatch), whatever zebra says. Until this leaf's BGP EVPN has
    been up EVPN_SETTLE_S (its bgpd restarted: zebra forgets every sync until the new
    bgpd's sessions are up), zebra's word adds entries but takes none away."""

    def __init__(self, evpn_svis: dict[str, str]) -> None:
        self.evpn_svis = evpn_svis
        self.installed: dict[tuple[str, str], str] = {}
        self.last_answer: dict[tuple[str, str], str] = {}
        """The entries the pair verified when zebra was last asked."""
        self.last_unverified: dict[tuple[str, str], str] = {}
        """The other entries zebra listed as local then (the pair's proxy, or stale)."""
        self.probing = False
        """Whether a neighbour of the EVPN SVIs was in PROBE at the last pass (or was just
        handed back): its probes are going unanswered so far."""
        self.handed_back: set[tuple[str, str]] = set()
        """Entries this agent installed and then handed back to the kernel to probe."""
        self.heard: dict[tuple[str, str], float] = {}
        """Entries ArpWatch handed back on the server's ARP, with when (time.monotonic)."""
        self.fresh: dict[tuple[str, str], float] = {}
        """Entries the agent created in PROBE, with when: zebra listed the server (the pair
        proxies it) while this kernel had no usable entry of it."""
        self.lock = threading.Lock()
        self.hold_ends: float = float("inf")
        """When the first entry on hold stops counting as verified (time.monotonic), or,
        while ``settling``, when zebra is to be asked again."""
        self.settling = False
        """Whether this leaf's BGP EVPN was up for less than EVPN_SETTLE_S when zebra was
        last asked (its bgpd restarted, or its sessions are not up): zebra's word then adds
        entries and takes none away (``apply``)."""

    def unproven(self, entries: list[dict[str, Any]], now: float) -> set[str]:
        """Addresses of entries the agent created in PROBE not yet answered: no /32 for
        them (a server that is gone would get one for as long as each probe lasts)."""
        return {
            str(n["dst"])
            for n in entries
            if "PROBE" in _states(n)
            and now - self.fresh.get((str(n["dst"]), str(n["dev"])), float("-inf")) < PROBE_AGAIN_S
        }

    def hear(self, key: tuple[str, str], now: float) -> None:
        """ArpWatch handed ``key`` back to the kernel (its thread: under the lock)."""
        with self.lock:
            self.heard[key] = now

    def next_ask(self, now: float) -> float:
        """When zebra should be asked next at the latest: at every pass (NEIGH_EVENT_S)
        while a neighbour is in PROBE (this leaf's probes of the server go unanswered where
        its ARP hashes to the pair: the pair verifies it, and the agent must put its own
        entry in before they fail, 10 s), else when an entry on hold stops counting as
        verified (so it is handed back then, not at the next routine ask)."""
        return now + NEIGH_EVENT_S if self.probing else self.hold_ends

    def apply(
        self,
        entries: list[dict[str, Any]],
        ask_zebra: bool = True,
        now: float | None = None,
        cannot_verify: frozenset[str] = frozenset(),
    ) -> bool:
        """Install what the pair verifies and the kernel lacks (``entries``: the kernel's
        neighbours), hand back what it no longer verifies; without ``ask_zebra`` only put
        back what this agent installed before (zebra may overwrite it with its own attempt)
        and replace an unverified install of an entry zebra last listed as verified. A
        server this leaf ``cannot_verify`` (its ES bond here does not serve it: its ARP goes
        to the pair) is installed on zebra's word alone, as this leaf's probes of it would
        fail; it hears none of its ARP, and the pair, which hears all of it, verifies it
        (ArpWatch hands the pair's own NOARP entry back the moment it does). True if it
        changed any."""
        now = time.monotonic() if now is None else now
        by_key = {(str(n["dst"]), str(n["dev"])): n for n in entries}
        quiet = self._forget_heard(now, by_key)
        if ask_zebra:
            self._ask_zebra(now)
        synced, unverified, listed = self._targets(by_key, ask_zebra, cannot_verify)
        batch = self._install(synced, by_key, quiet)
        handed, probed = self._hand_back(unverified, by_key, quiet, now)
        batch += handed
        for key in sorted(set(self.installed) - listed):
            batch.append(f"neigh del {key[0]} dev {key[1]}")
            del self.installed[key]
        svis = set(self.evpn_svis.values())
        self.probing = (
            bool(quiet)
            or probed
            or any("PROBE" in _states(n) for k, n in by_key.items() if k[1] in svis)
        )
        if batch:
            kernel._ip_batch(batch)
        return bool(batch)

    def _forget_heard(self, now: float, by_key: dict[Key, dict[str, Any]]) -> set[Key]:
        """The entries ArpWatch handed back within HEARD_QUIET_S (the kernel's now, to
        verify: not ours to put back); forgets the hand-backs the kernel verified since."""
        with self.lock:
            self.heard = {k: t for k, t in self.heard.items() if now - t < HEARD_QUIET_S}
            quiet = set(self.heard)
        for key in quiet:
            self.installed.pop(key, None)
        self.handed_back = {
            k for k in self.handed_back if k in by_key and not _verified_here(by_key[k])
        }
        return quiet

    def _ask_zebra(self, now: float) -> None:
        """Ask zebra: which entries the pair verifies, which it lists otherwise, and when the
        first hold ends (``next_ask``)."""
        answer, up_for = zebra.zebra_answer(self.evpn_svis)
        self.settling = up_for < EVPN_SETTLE_S
        confirmed = {k: e["mac"] for k, e in answer.items() if pair_confirms(e)}
        if self.settling:  # zebra's silence is not the pair's: keep what stands
            confirmed = {**self.installed, **self.last_answer, **confirmed}
            answer = {k: e for k, e in answer.items() if k not in confirmed}
        self.last_answer = confirmed
        self.last_unverified = {k: e["mac"] for k, e in answer.items() if k not in self.last_answer}
        holds = [held_for(e) for k, e in answer.items() if k in self.last_answer]
        self.hold_ends = min(
            (now + HANDBACK_HOLD_S - held + 1.0 for held in holds if held is not None),
            default=now + EVPN_SETTLE_S if self.settling else float("inf"),
        )

    def _targets(
        self, by_key: dict[Key, dict[str, Any]], ask_zebra: bool, cannot_verify: frozenset[str]
    ) -> tuple[dict[Key, str], dict[Key, str], set[Key]]:
        """(entries to install, with their MAC; entries zebra lists that nobody verifies;
        entries zebra lists at all): without ``ask_zebra``, only what waits in the kernel or
        was installed before, and nothing unverified."""
        trusted = dict(self.last_answer)
        trusted.update({k: m for k, m in self.last_unverified.items() if k[0] in cannot_verify})
        if ask_zebra:
            unverified = {k: m for k, m in self.last_unverified.items() if k not in trusted}
            return trusted, unverified, set(self.last_answer) | set(self.last_unverified)
        waiting = {k for k, n in by_key.items() if not _states(n) & DEAD_STATES}
        synced = {k: v for k, v in trusted.items() if k in waiting}
        synced.update(self.installed)
        return synced, {}, set(synced)

    def _install(
        self, synced: dict[Key, str], by_key: dict[Key, dict[str, Any]], quiet: set[Key]
    ) -> list[str]:
        """``ip -batch`` lines installing each of ``synced`` the kernel does not hold as ours
        or as verified here."""
        batch = []
        for (ip, svi), mac in sorted(synced.items()):
            if (ip, svi) in quiet:
                continue
            kernel = by_key.get((ip, svi), {})
            same = str(kernel.get("lladdr", "")).lower() == mac
            if same and (_agents_own(kernel) or _verified_here(kernel)):
                if _agents_own(kernel):  # ours, or an agent before this one (restarted)'s
                    self.installed[(ip, svi)] = mac
                continue
            if (ip, svi) in self.handed_back and _states(kernel) & DEAD_STATES:
                # its probes failed before the pair's sync came back: its /32 was gone
                # meanwhile (rare, and worth a line: see EVPN_UNICAST_PROBES in the renderer)
                journal.log(f"put back {ip} on {svi}: this leaf's probes of it had failed")
            self.handed_back.discard((ip, svi))
            batch.append(install_line(ip, mac, svi))
            self.installed[(ip, svi)] = mac
        return batch

    def _hand_back(
        self,
        unverified: dict[Key, str],
        by_key: dict[Key, dict[str, Any]],
        quiet: set[Key],
        now: float,
    ) -> tuple[list[str], bool]:
        """``ip -batch`` lines handing the agent's entries nobody verifies back to the kernel,
        and probing those the kernel lacks (PROBE_AGAIN_S); and whether any probe starts."""
        ours = {k for k, n in by_key.items() if _agents_own(n)}
        batch, probed = [], False
        for key in sorted((set(self.installed) | ours) & set(unverified)):
            batch.append(probe_line(key[0], unverified[key], key[1]))
            self.installed.pop(key, None)
            self.handed_back.add(key)
            probed = True
        for key, mac in sorted(unverified.items()):
            kernel = by_key.get(key, {})
            if key in ours or key in quiet or (kernel and not _states(kernel) & DEAD_STATES):
                continue
            if now - self.fresh.get(key, float("-inf")) >= PROBE_AGAIN_S:
                # zebra knows the server (the pair's proxy) and this kernel does not: ask it
                batch.append(probe_line(key[0], mac, key[1]))
                self.fresh[key] = now
                probed = True
        return batch, probed
