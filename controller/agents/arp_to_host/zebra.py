"""What zebra and bgpd say about the servers of the EVPN SVIs: the entries the pair syncs,
whether the pair still verifies each, how long this leaf's BGP EVPN has been up; and which
kernel entries are the agent's own or verified here."""

from __future__ import annotations

from typing import Any

from .kernel import _states
from .vtysh import vtysh_documents

NEIGH_HOLD_S = 18 * 60
"""zebra's hold timer for a neighbour the pair stopped syncing as active (``evpn mh
neigh-holdtime``, not rendered: FRR's default, zebra/zebra_evpn_mh.h). zebra keeps the entry
peer-active that long so the leaf can verify the server itself meanwhile."""
HANDBACK_HOLD_S = 6.0
"""How long the pair may have stopped confirming a server before the agent hands its entry
back to the kernel to verify. The pair stops in every ordinary ARP cycle: its entry goes
STALE, and the next packet starts 5 s of DELAY, then a probe the server answers at once
(if its ARP hashes there). An entry the pair no longer verifies at all (its probes went
unanswered: 8 s after STALE it FAILS) must be taken over before that, not at the hold's end
(18 min); a hand-back during an ordinary cycle only costs a probe."""
VERIFIED_HERE = {"REACHABLE", "PERMANENT"}
"""Kernel states this leaf verified itself (zebra counts them as local activity)."""


def _hhmmss(text: str) -> float | None:
    """Seconds of zebra's ``HH:MM:SS`` timer text (thread_timer_to_hhmmss)."""
    parts = text.split(":")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return float(int(parts[0]) * 3600 + int(parts[1]) * 60 + int(parts[2]))


def held_for(entry: dict[str, Any]) -> float | None:
    """Seconds since the pair withdrew its active sync of zebra's entry (its hold timer
    runs), None if it does not."""
    hold = entry.get("peerActiveHold")
    if not isinstance(hold, str):
        return None
    remaining = _hhmmss(hold)
    return NEIGH_HOLD_S if remaining is None else max(0.0, NEIGH_HOLD_S - remaining)


def pair_confirms(entry: dict[str, Any]) -> bool:
    """Whether zebra's entry (``show evpn arp-cache vni all detail json``) says the pair
    verified the server: peer-active, and not on hold for HANDBACK_HOLD_S or longer (a
    hold means the pair withdrew its active sync; zebra keeps the flag until it ends)."""
    if entry.get("type") != "local" or not entry.get("peerActive"):
        return False
    held = held_for(entry)
    return held is None or held < HANDBACK_HOLD_S


EVPN_SETTLE_S = 10.0
"""How long this leaf's BGP EVPN must have been up before zebra's word about the pair
counts against an entry (``Synced.apply``). When bgpd goes, zebra drops its whole EVPN
state (zebra/zebra_vxlan.c, ``zebra_evpn_vrf_cfg_cleanup`` on the client's close:
advertise-all-vni off, every VNI's MACs and neighbours cleaned up) and builds it again
once a bgpd registers; the pair's syncs come back only once the sessions are up and the
routes in."""


ZEBRA_ASK = ("show evpn arp-cache vni all detail json", "show bgp l2vpn evpn summary json")
"""What the agent asks zebra and bgpd, in one vtysh (its start costs most of the CPU): the
synced entries first, so a bgpd that is not running spoils only the second answer."""


def _established_evpn_peers(summary: Any) -> dict[str, dict[str, Any]]:
    """The Established peers of ``show bgp l2vpn evpn summary json`` by name."""
    if not isinstance(summary, dict):
        return {}
    peers = summary.get("peers")
    if not isinstance(peers, dict):  # an address family's object around it
        nested = [v.get("peers") for v in summary.values() if isinstance(v, dict)]
        peers = next((p for p in nested if isinstance(p, dict)), {})
    return {
        str(name): peer
        for name, peer in peers.items()
        if isinstance(peer, dict) and peer.get("state") == "Established"
    }


def evpn_up_for(summary: Any) -> float:
    """Seconds this leaf's longest-established BGP EVPN session has been up
    (``show bgp l2vpn evpn summary json``: its peers' state and peerUptimeMsec, which bgpd
    resets on every state change), 0 with none established or no answer."""
    ups = [
        float(peer.get("peerUptimeMsec", 0)) / 1000.0
        for peer in _established_evpn_peers(summary).values()
    ]
    return max(ups, default=0.0)


EVPN_EOR_WAIT_S = 90.0
"""How long past EVPN_SETTLE_S the agent waits for every EVPN peer's End-of-RIB before it
takes zebra's word anyway (a peer that never sends one: no graceful-restart capability)."""

EOR_ASK = "show bgp neighbors json"

EOR_KEYS = ("l2VpnEvpn", "L2VPN EVPN")
"""The EVPN family's key under ``gracefulRestartInfo``: bgpd's JSON names it in camel case
since FRR 7.4, in words before (``get_afi_safi_str``'s ``for_json``)."""


def evpn_tables_received(neighbors: Any, peers: list[str]) -> bool:
    """Whether each of ``peers`` sent its End-of-RIB for L2VPN EVPN (``show bgp neighbors
    json``: ``gracefulRestartInfo.endOfRibRecv`` or the family's ``endOfRibStatus``): its
    initial table is in, so what zebra lacks of the pair's syncs is really gone."""
    if not isinstance(neighbors, dict):
        return False
    for name in peers:
        info = neighbors.get(name, {}).get("gracefulRestartInfo", {})
        recv = info.get("endOfRibRecv", {}) if isinstance(info, dict) else {}
        per_family = [info.get(k, {}).get("endOfRibStatus", {}) for k in EOR_KEYS]
        got = any(recv.get(k) is True for k in EOR_KEYS if isinstance(recv, dict)) or any(
            isinstance(st, dict) and st.get("endOfRibRecv") is True for st in per_family
        )
        if not got:
            return False
    return True


def zebra_answer(
    evpn_svis: dict[str, str],
) -> tuple[dict[tuple[str, str], dict[str, Any]], float]:
    """zebra's synced entries (``zebra_synced``) and how long this leaf's BGP EVPN has
    been up and settled (``evpn_up_for``), from one vtysh. Past EVPN_SETTLE_S, a session
    whose peer has not yet sent its End-of-RIB still counts as settling (0 s) for up to
    EVPN_EOR_WAIT_S: on a busy switch the restarted bgpd's sessions were up 10 s before
    the pair's routes were in (the lab under load, 2026-12-06: the agent handed a server's
    entry back and it failed for 40 s), asked only in that window (one more vtysh)."""
    documents = vtysh_documents(*ZEBRA_ASK)
    data = documents[0] if documents else {}
    summary = documents[1] if len(documents) > 1 else None
    up_for = evpn_up_for(summary)
    if EVPN_SETTLE_S <= up_for < EVPN_SETTLE_S + EVPN_EOR_WAIT_S:
        neighbors = next(iter(vtysh_documents(EOR_ASK)), None)
        if not evpn_tables_received(neighbors, sorted(_established_evpn_peers(summary))):
            up_for = 0.0
    return zebra_synced(data, evpn_svis), up_for


def zebra_synced(data: Any, evpn_svis: dict[str, str]) -> dict[tuple[str, str], dict[str, Any]]:
    """(ip, SVI) -> zebra's entry (MAC lower case) of every IPv4 neighbour zebra holds as
    local (learned here, or synced by the pair), from ``show evpn arp-cache vni all detail
    json``."""
    result: dict[tuple[str, str], dict[str, Any]] = {}
    for vni, entries in data.items() if isinstance(data, dict) else []:
        svi = evpn_svis.get(str(vni), "")
        for ip, entry in entries.items() if svi and isinstance(entries, dict) else []:
            if not isinstance(entry, dict) or entry.get("type") != "local" or ":" in ip:
                continue
            if entry.get("mac"):
                result[(str(ip), svi)] = {**entry, "mac": str(entry["mac"]).lower()}
    return result


def _agents_own(entry: dict[str, Any]) -> bool:
    """An entry in the form this agent installs (externally learned, never probed)."""
    return "extern_learn" in entry and "NOARP" in _states(entry)


def _verified_here(entry: dict[str, Any]) -> bool:
    """A kernel entry this leaf verified itself (not ours, not zebra's install). Any other
    entry of a server the pair verifies, or that this leaf cannot, is replaced with the
    agent's: zebra, for one, puts a synced entry back when its hold timer for the pair's
    sync ends (``evpn mh neigh-holdtime``, 18 min by default) as STALE, ``proto zebra``,
    which the kernel probes 5 s later; a leaf whose own link to the server is down cannot
    confirm it (the server answers to the anycast gateway MAC, which the pair takes), so it
    failed 3 s after that and what the leaf still routed to the server was lost until the
    agent installed it again (3.1 s of a flow in CI, 2026-12-03)."""
    return (
        bool(_states(entry) & VERIFIED_HERE)
        and not _agents_own(entry)
        and entry.get("protocol") != "zebra"
    )
