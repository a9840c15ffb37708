"""EVPN-MH segments (``segments``: ES bond -> its member port and the server addresses behind it):
the pair syncs the server's ARP entry, so a leaf whose own link to the server is gone still
holds a valid neighbour. So the /32 of a server is kept only while its bond here serves it: the
member has carrier, LACP is in sync, collecting and distributing at this end and in sync and
collecting at the server's, as its LACPDUs say (``lacp_serves``). The neighbour itself is left
to zebra. A server that holds a returning port out of its bond (updelay) is not advertised here
until it takes the port back. This withdrawal (``withdraw_unserved``, rendered with cross-plane
protection) moves the plane's flows to that server onto the senders' leaves' backup through the
other plane. Without protection the plane has no other path, so the /32 stays and what enters
here goes on through the pair (below).

What still enters this leaf for such a server (from a server on the same leaf; without
protection, from the whole plane) goes to the pair over VXLAN: each ES bond's bridge backup
port is the rail's VXLAN device (ip.batch), and the bridge uses it while the bond has no
carrier. A bond has carrier again as soon as its member has, while the server still holds the
port out and LACP has not come up: the bridge would send into a bond with nothing to send on
(13 s lost in the lab). So the agent also gates each ES bond's carrier on the same decision:
``min_links`` above its one member while it does not serve (no carrier: the backup port acts),
back to 1 once it does. The gate opens without waiting for a pass: ``gate``. What a
member's LACP states say is believed only once they postdate its last carrier loss:
``freshness``.
"""

from __future__ import annotations

import time
from typing import Any

from . import journal
from .freshness import FRESHNESS

LACP_SYNC = 0x08
LACP_DEFAULTED = 0x40
"""The partner's state is the administrative default: no LACPDU of the server heard."""
LACP_COLLECTING = LACP_SYNC | 0x10
LACP_SERVING = LACP_COLLECTING | 0x20
"""Port state bits (IEEE 802.1AX): synchronization, collecting, distributing."""


def lacp_serves(actor: int | None, partner: int | None) -> bool:
    """A port serves its server when this end is in sync, collecting and distributing and the
    server is in sync and collecting. A server whose bond runs IEEE 802.1AX's independent
    control (``coupled_control 0``: Linux 6.9+, Debian's 6.1.192) collects first and
    distributes only once it hears that this end collects: opening then, before its first
    frame, loses none of it. With coupled control (the default) collecting means
    distributing too."""
    return (
        isinstance(actor, int)
        and isinstance(partner, int)
        and actor & LACP_SERVING == LACP_SERVING
        and partner & LACP_COLLECTING == LACP_COLLECTING
    )


def serving_bonds(
    links: list[dict[str, Any]], segments: dict[str, Any], seen_at: float | None = None
) -> set[str]:
    """The ES bonds whose member has carrier and serves (``lacp_serves``: the partner may
    say so a moment before this end does; a bond sends nothing on a port that is not
    distributing): ``links`` is ``ip -d -j link show``'s output, read at ``seen_at``
    (monotonic; now if None), which ``freshness`` weighs against fresher looks."""
    by_name = {str(link.get("ifname", "")): link for link in links}
    serving = set()
    for bond, segment in segments.items():
        member = by_name.get(str(segment["member"]))
        if member is None:
            continue
        slave = member.get("linkinfo", {}).get("info_slave_data", {})
        if member.get("master") != bond or not isinstance(slave, dict):
            continue
        actor, partner = (slave.get(f"ad_{end}_oper_port_state") for end in ("actor", "partner"))
        failures = slave.get("link_failure_count")
        if FRESHNESS.believe(
            str(segment["member"]),
            "LOWER_UP" in member.get("flags", []),
            failures if isinstance(failures, int) else None,
            lacp_serves(actor, partner),
            seen_at,
        ):
            serving.add(bond)
    return serving


def unserved_hosts(segments: dict[str, Any], serving: set[str]) -> set[str]:
    """Server addresses behind an ES bond of this leaf that does not serve them now."""
    return {
        str(host)
        for bond, segment in segments.items()
        if bond not in serving
        for host in segment["hosts"]
    }


GATED_MIN_LINKS = 2
"""An ES bond has one member: min_links 2 keeps its carrier off whatever that member does."""


SYSFS_NET = "/sys/class/net"


def _sysfs_int(path: str) -> int | None:
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def gated_members(segments: dict[str, Any], root: str = SYSFS_NET) -> list[tuple[str, str]]:
    """(bond, member) of the ES bonds this agent holds gated (their min_links, from sysfs)."""
    return [
        (bond, str(segment["member"]))
        for bond, segment in sorted(segments.items())
        if _sysfs_int(f"{root}/{bond}/bonding/min_links") == GATED_MIN_LINKS
    ]


def open_gate(bond: str, root: str = SYSFS_NET, why: str = "") -> None:
    """min_links 1 through sysfs, at once: a pass (a few processes, most of a second in the
    lab's emulated guest) follows for the routes."""
    try:
        with open(f"{root}/{bond}/bonding/min_links", "w") as handle:
            handle.write("1\n")
    except OSError:
        pass  # the pass that follows sets it with ip, or reports nothing new
    because = f", {why}" if why else ""
    journal.log(f"opened {bond} (min_links 1, sysfs{because})")


def port_states(member: str, root: str = SYSFS_NET) -> tuple[int | None, int | None]:
    """The member's LACP port state at this end and the server's as last heard (sysfs of
    the bond slave); None where it cannot be read."""
    actor, partner = (
        _sysfs_int(f"{root}/{member}/bonding_slave/ad_{end}_oper_port_state")
        for end in ("actor", "partner")
    )
    return actor, partner


def _believe(member: str, root: str, says_serving: bool, seen_at: float) -> bool:
    """``says_serving`` (sysfs read from ``seen_at`` on), unless the member has no carrier
    or its states may predate its last carrier loss (``freshness``)."""
    carrier = _sysfs_int(f"{root}/{member}/carrier") == 1
    failures = _sysfs_int(f"{root}/{member}/bonding_slave/link_failure_count")
    return FRESHNESS.believe(member, carrier, failures, says_serving, seen_at)


def lacp_serving_now(member: str, root: str = SYSFS_NET) -> bool:
    """The member has carrier and serves (``lacp_serves``, sysfs of the bond slave)."""
    seen_at = time.monotonic()
    return _believe(member, root, lacp_serves(*port_states(member, root)), seen_at)


def ready_for_the_server(member: str, root: str = SYSFS_NET) -> bool:
    """The member has carrier, LACP distributes at this end and the server has said, in its
    own LACPDU, that it is in sync: GateWatch opens the gate then. The server distributes
    only once it hears that this end collects (independent control) or once it is in sync
    itself (coupled), and the LACPDU that says it collects may come only with the one that
    says it distributes (Linux sends at most 3 a second): a gate that waited for it opened
    after the server's first frames (75 ms of its flow lost on the 6.1 lab, 2026-12-04)."""
    seen_at = time.monotonic()
    actor, partner = port_states(member, root)
    return _believe(
        member,
        root,
        actor is not None
        and partner is not None
        and actor & LACP_SERVING == LACP_SERVING
        and partner & LACP_SYNC == LACP_SYNC
        and not partner & LACP_DEFAULTED,
        seen_at,
    )


def serving_now(segments: dict[str, Any], root: str = SYSFS_NET) -> set[str]:
    """The ES bonds whose member serves by sysfs at this moment (fresher than a pass's
    ``ip -d -j link show``, read before its vtysh and ip runs), and those GateWatch opened on
    the server's data that are still ready for it: the LACPDU in which the server says it
    collects can come most of a second after its data (Linux sends at most 3 a second), and
    a pass that gated such a bond again lost 160 ms of the server's flow (lab, 2026-12-04)."""
    serving = set()
    for bond, segment in segments.items():
        member = str(segment["member"])
        if lacp_serving_now(member, root) or (
            _sysfs_int(f"{root}/{bond}/bonding/min_links") == 1
            and ready_for_the_server(member, root)
        ):
            serving.add(bond)
    return serving


def bond_gates(
    links: list[dict[str, Any]], segments: dict[str, Any], serving: set[str]
) -> list[str]:
    """``ip -batch`` lines that set each ES bond's min_links: 1 while it serves its server,
    GATED_MIN_LINKS (carrier off, the bridge's backup port to the pair acts) while it does
    not; only for bonds whose min_links differs (``links``: ``ip -d -j link show``)."""
    by_name = {str(link.get("ifname", "")): link for link in links}
    lines = []
    for bond in sorted(segments):
        info = by_name.get(bond, {}).get("linkinfo", {}).get("info_data", {})
        if not isinstance(info, dict) or "min_links" not in info:
            continue  # not a bond (yet): nothing to gate
        want = 1 if bond in serving else GATED_MIN_LINKS
        if info["min_links"] != want:
            lines.append(f"link set dev {bond} type bond min_links {want}")
    return lines
