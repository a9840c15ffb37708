#!/usr/bin/env python3
"""ARP-to-host-route for a Linux + FRR leaf (stdlib only: it is copied to the switch).

FRR has no "redistribute neighbor". This keeps one /32 route per resolved neighbour of the
rail SVIs in a kernel table; zebra imports the table (`ip import-table N`) and BGP
redistributes it (`redistribute table N`). Event driven (`ip monitor neigh link`) with a full
resync every few seconds; a neighbour that fails or is removed loses its route.

Carrier loss (``withdraw_on_carrier_loss``, dual-ARP): the agent remembers which bridge port
each neighbour's MAC was learned on; when that port loses carrier it deletes the neighbour at
once, so the /32 is withdrawn in well under a second instead of when ARP gives up. The server
re-announces itself through the port when it carries traffic again (its ARP keep-alive).
The carrier loss itself is acted on from the monitor's line, before any pass: the agent
remembers from its last pass which neighbours sit behind each port, and deletes their
neighbour entries and /32s in one `ip -batch` (a pass first runs four ip and bridge commands,
about half a second in the lab's emulated guest, 2026-12-03: carrier lost at .614, neighbour
deleted at .918, /32 at 1.158).

EVPN-MH (``evpn_svis``: VNI -> SVI): a server's ARP reply reaches only the leaf its bond hashed
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

EVPN-MH segments (``segments``: ES bond -> its member port and the server addresses behind it):
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
back to 1 once it does. A gated bond's bridge port also drops what the server sends, and the
server sends as soon as its LACP distributes; LACP changes raise no link event. So while a bond
is gated a thread of its own (GateWatch) opens the gate through sysfs at once, whatever the
pass is doing: a pass runs ip and vtysh, seconds in the lab's emulated guest under load, and a
poll that waited for it lost 3.0 s of a flow in CI. It opens the gate once this end
distributes and the server has said it is in sync (``ready_for_the_server``), and does not
wait for a poll either: it listens on the member (a raw socket, TAP_FILTER) for the server's
LACPDUs and its first data frame, and then looks at sysfs every GATE_HURRY_S (this end's LACP
follows the server's within a tick). A server with independent control (Linux 6.9+ and
Debian's 6.1.192, ``coupled_control 0``) distributes only once it hears this end collect, so
the gate opens before its first frame; until 2026-12-04 evening the gate also waited for the
server to say it collects, which Linux's LACPDU rate (3 a second) can delay until the LACPDU
that says it distributes, and the gate then opened 75 ms after the server's first frame on
the 6.1 lab. With coupled control the server distributes as soon as it is in sync, and what
it sends before this end collects is lost whatever the gate does (about 0.1 s). A sysfs
poll every GATE_POLL_S stays as the fallback (no
raw socket: no CAP_NET_RAW). Polling alone lost 0.3-0.4 s of the server's flows as its port
returned after a drain (failure matrix, 2026-12-04). Each gate change is written to the agent's
log.

Lost segment EVIs (EVPN-MH, FRR 8.4): when bgpd (re)starts or its instance is created anew,
zebra replays each local segment with its EVIs before the VNIs, and a bgpd that does not know
the VNI yet drops the EVI ("Failed to associate VNI ... VNI not present") for good: the
segment then has no local EVI in bgpd, sends no EAD-per-EVI route, and the pair never takes
this leaf as its peer (both leaves designated forwarder). Whether bgpd reads its `vni` block
or the replay first is timing (FRRouting/frr#22553 changed the order upstream). So a thread of
its own (EviHeal) compares zebra's local segment EVIs with bgpd's every HEAL_CHECK_S; an EVI
bgpd lacks while it knows the VNI from the kernel, still so HEAL_CONFIRM_S later, makes it
re-apply that segment's id on its bond (`no evpn mh es-id K`, `evpn mh es-id K`): zebra
removes the segment and adds it again with its EVIs, which bgpd now takes. The running
config is the same afterwards. Each heal is written to the agent's log.

Usage: arp_to_host.py CONFIG.json
  (keys: table, interfaces, prefixes, bridge, withdraw_on_carrier_loss, withdraw_unserved,
  evpn_svis, segments; a segment: member, hosts, esi, es_id)
"""

from __future__ import annotations

import ipaddress
import json
import os
import select
import socket
import struct
import subprocess
import sys
import syslog
import threading
import time
from collections.abc import Callable
from typing import Any

SYSLOG_IDENT = "dpctl-arp-to-host"
"""The agent's name in the switch's syslog (the program field)."""


def log(text: str) -> None:
    """One line of the agent's log: its stdout (the log file beside it, with the time) and the
    switch's syslog, where FRR's own messages go: an operator, and the failure matrix, read
    the gate, carrier and heal events in one timeline with bgpd's and zebra's. Without a
    syslog daemon the C library drops the message, and the stdout line remains."""
    print(f"{time.time():.3f} {text}", flush=True)
    syslog.syslog(syslog.LOG_INFO, text)


RESYNC_S = 5.0
ZEBRA_S = 30.0
"""How often the agent asks zebra for its synced entries (EVPN-MH) when every server of a
local segment already has a neighbour here: one vtysh costs 1-2 s of CPU in the emulated
lab guest, and four leaves asking every 5 s took half of its two CPUs. While a segment's
server lacks one, it asks on every resync (RESYNC_S)."""
NEIGH_EVENT_S = 1.0
"""Neighbour events (every ARP state change, many a second under traffic) trigger at most
one reconcile a second; link events (carrier) trigger one at once."""
DEAD_STATES = {"FAILED", "INCOMPLETE", "NONE"}
PROTO = "static"
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


def _json(*cmd: str) -> list[dict[str, Any]]:
    out = subprocess.run(list(cmd), capture_output=True, text=True, check=False).stdout
    try:
        data = json.loads(out or "[]")
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _ip_json(*args: str) -> list[dict[str, Any]]:
    return _json("ip", "-j", *args)


def _ip_batch(lines: list[str]) -> None:
    """Run ``lines`` through one ``ip -force -batch`` (a failed line does not stop the rest)."""
    subprocess.run(
        ["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=False
    )


def _states(entry: dict[str, Any]) -> set[str]:
    """A kernel neighbour's NUD states (``ip -j neigh``'s ``state`` list)."""
    return {str(s) for s in entry.get("state", [])}


def neighbours(config: dict[str, Any], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Resolved IPv4 neighbours of the rail SVIs inside the rail prefixes (``entries``:
    ``ip -j -4 neigh show``)."""
    interfaces = set(config["interfaces"])
    nets = [ipaddress.ip_network(p) for p in config["prefixes"]]
    result = []
    for entry in entries:
        dev = str(entry.get("dev", ""))
        states = _states(entry)
        if dev not in interfaces or states & DEAD_STATES or not entry.get("lladdr"):
            continue
        if any(ipaddress.ip_address(str(entry["dst"])) in net for net in nets):
            result.append(entry)
    return result


def present(table: int) -> set[tuple[str, str]]:
    routes = _ip_json("-4", "route", "show", "table", str(table))
    return {(str(r["dst"]), str(r.get("dev", ""))) for r in routes if "/" not in str(r["dst"])}


class Ports:
    """Which bridge port each MAC was last learned on, and which ports lost carrier."""

    def __init__(self, bridge: str) -> None:
        self.bridge = bridge
        self.mac_port: dict[str, str] = {}
        self.behind: dict[str, list[tuple[str, str]]] = {}
        """Port -> (address, SVI) of the neighbours whose MAC was last learned on it."""

    def remember(self, neighs: list[dict[str, Any]]) -> None:
        """Which neighbours sit behind each port, for the carrier-loss fast path."""
        behind: dict[str, list[tuple[str, str]]] = {}
        for n in neighs:
            port = self.mac_port.get(str(n["lladdr"]).lower())
            if port:
                behind.setdefault(port, []).append((str(n["dst"]), str(n["dev"])))
        self.behind = behind

    def learn(self) -> None:
        for e in _json("bridge", "-j", "fdb", "show", "br", self.bridge):
            port, mac = str(e.get("ifname", "")), str(e.get("mac", "")).lower()
            flags = e.get("flags", [])
            learned = e.get("state") not in ("permanent", "static") and "extern_learn" not in flags
            if port and mac and e.get("master") == self.bridge and learned:
                self.mac_port[mac] = port

    def down(self) -> set[str]:
        return {
            str(link["ifname"])
            for link in _ip_json("link", "show", "master", self.bridge)
            if "LOWER_UP" not in link.get("flags", []) or link.get("operstate") == "DOWN"
        }


def carrier_lost(lines: list[str], bridge: str) -> set[str]:
    """Ports of ``bridge`` that ``ip monitor label link`` lines say lost carrier (or went
    down): ``[LINK]3: swp1@if3: <NO-CARRIER,...> ... master br0 state DOWN ...``."""
    ports = set()
    for line in lines:
        if not line.startswith("[LINK]") or f" master {bridge} " not in line + " ":
            continue
        head = line[len("[LINK]") :].split(": ", 2)
        if len(head) < 3 or head[0].startswith("Deleted"):
            continue
        flags = head[2].split(">", 1)[0]
        if "NO-CARRIER" in flags or "LOWER_UP" not in flags or " state DOWN" in line:
            ports.add(head[1].split("@", 1)[0])
    return ports


def withdraw_behind(ports: Ports, down: set[str], table: int) -> list[str]:
    """The carrier-loss fast path: delete the neighbours the last pass saw behind ``down``
    and their /32s, in one ``ip -batch``, before any pass; the lines it ran."""
    batch = []
    for port in sorted(down):
        for ip, dev in ports.behind.pop(port, []):
            batch.append(f"neigh del {ip} dev {dev}")
            batch.append(f"route del {ip}/32 dev {dev} table {table}")
    if batch:
        _ip_batch(batch)
        log(f"carrier lost on {' '.join(sorted(down))}: {batch}")
    return batch


def flush_behind_down_ports(neighs: list[dict[str, Any]], ports: Ports) -> list[dict[str, Any]]:
    """Delete the neighbours whose MAC sits behind a port without carrier; return the rest."""
    down = ports.down()
    dead = [n for n in neighs if ports.mac_port.get(str(n["lladdr"]).lower()) in down]
    if dead:
        batch = [f"neigh del {n['dst']} dev {n['dev']}" for n in dead]
        _ip_batch(batch)
        for n in dead:
            ports.mac_port.pop(str(n["lladdr"]).lower(), None)
    return [n for n in neighs if n not in dead]


def serving_bonds(links: list[dict[str, Any]], segments: dict[str, Any]) -> set[str]:
    """The ES bonds whose member has carrier and serves (``lacp_serves``: the partner may
    say so a moment before this end does; a bond sends nothing on a port that is not
    distributing): ``links`` is ``ip -d -j link show``'s output."""
    by_name = {str(link.get("ifname", "")): link for link in links}
    serving = set()
    for bond, segment in segments.items():
        member = by_name.get(str(segment["member"]))
        if member is None or "LOWER_UP" not in member.get("flags", []):
            continue
        slave = member.get("linkinfo", {}).get("info_slave_data", {})
        if member.get("master") != bond or not isinstance(slave, dict):
            continue
        actor, partner = (slave.get(f"ad_{end}_oper_port_state") for end in ("actor", "partner"))
        if lacp_serves(actor, partner):
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


GATE_POLL_S = 0.2
"""While a bond is gated the agent reads its member's LACP state from sysfs at least this
often (no subprocess): the server starts sending on the port as soon as LACP distributes, and
the gated bond's bridge port (disabled without carrier) drops what it receives until the
agent opens the gate. LACP state changes raise no link event, so a resync (RESYNC_S) would
have been the wait: 5.4 s lost in the lab. The server's first data frame or its LACPDU
wakes it sooner (GateWatch)."""
GATE_HURRY_S = 0.005
"""After the server's first data frame or a LACPDU in which it says it is in sync or
collects, how often the agent looks at sysfs until this end distributes too (its LACP
follows within a tick, 100 ms in Linux)."""
GATE_HURRY_FOR_S = 1.0
"""How long it looks that often after such a frame before it falls back to GATE_POLL_S."""
ETH_P_ALL = 0x0003
LACPDU_STATE_AT = 14 + 18
"""Offset of the sender's port state in a LACPDU frame: the Ethernet header, then subtype,
version, the actor TLV's type and length, system priority, system, key, port priority and
port (IEEE 802.1AX, LACPDU structure)."""
PACKET_OUTGOING = 4
"""linux/if_packet.h: a frame the raw socket saw leave (this end's own LACPDUs)."""
TAP_FILTER = [
    (0x28, 0, 0, 12),  # ldh [12]: the ethertype
    (0x15, 3, 0, 0x8809),  # jeq slow protocols (IEEE 802.3 annex 57A): keep it whole
    (0x30, 0, 0, 0),  # ldb [0]: the destination MAC's first byte
    (0x45, 2, 0, 0x01),  # jset group bit: multicast or broadcast, drop
    (0x06, 0, 0, 16),  # ret 16: a unicast data frame, its header is enough
    (0x06, 0, 0, 256),  # ret 256: a slow-protocol frame
    (0x06, 0, 0, 0),  # ret 0: drop
]
"""Classic BPF for the tap: the kernel queues the LACPDUs whole and of unicast frames only
their header, and none of the multicast a port may send on its own (LLDP and the like, which
a server also sends on a port its bond holds out); a server's data to its gateway is unicast.
The tap is open only while a bond is gated, and closed as soon as the gate opens."""
TAP_BUFFER = 16384
"""The tap's receive buffer: a few frames is all it needs; the kernel drops beyond it."""
SO_ATTACH_FILTER = 26
GATE_IDLE_S = 5.0
"""With no bond gated, how often GateWatch looks again unless a pass wakes it first. Only a
pass gates a bond, and each pass wakes it, so this is a backstop: looking every second cost
each agent about 1 % of a CPU in the lab's emulated guest."""
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
    log(f"opened {bond} (min_links 1, sysfs{because})")


def port_states(member: str, root: str = SYSFS_NET) -> tuple[int | None, int | None]:
    """The member's LACP port state at this end and the server's as last heard (sysfs of
    the bond slave); None where it cannot be read."""
    actor, partner = (
        _sysfs_int(f"{root}/{member}/bonding_slave/ad_{end}_oper_port_state")
        for end in ("actor", "partner")
    )
    return actor, partner


def lacp_serving_now(member: str, root: str = SYSFS_NET) -> bool:
    """The member has carrier and serves (``lacp_serves``, sysfs of the bond slave)."""
    if _sysfs_int(f"{root}/{member}/carrier") != 1:
        return False
    return lacp_serves(*port_states(member, root))


def ready_for_the_server(member: str, root: str = SYSFS_NET) -> bool:
    """The member has carrier, LACP distributes at this end and the server has said, in its
    own LACPDU, that it is in sync: GateWatch opens the gate then. The server distributes
    only once it hears that this end collects (independent control) or once it is in sync
    itself (coupled), and the LACPDU that says it collects may come only with the one that
    says it distributes (Linux sends at most 3 a second): a gate that waited for it opened
    after the server's first frames (75 ms of its flow lost on the 6.1 lab, 2026-12-04)."""
    if _sysfs_int(f"{root}/{member}/carrier") != 1:
        return False
    actor, partner = port_states(member, root)
    return (
        actor is not None
        and partner is not None
        and actor & LACP_SERVING == LACP_SERVING
        and partner & LACP_SYNC == LACP_SYNC
        and not partner & LACP_DEFAULTED
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


def lacpdu_state(frame: bytes) -> int | None:
    """The sender's port state in a LACPDU (slow protocols ethertype, subtype 1, actor TLV
    first), None for any other frame."""
    if (
        len(frame) <= LACPDU_STATE_AT
        or frame[12:14] != b"\x88\x09"
        or frame[14] != 1
        or frame[16] != 1
    ):
        return None
    return frame[LACPDU_STATE_AT]


def raw_tap(member: str, program_ops: list[tuple[int, int, int, int]]) -> socket.socket | None:
    """A raw socket that gets what the member receives (taps see a frame before the bond
    takes it, and before a gated bond's bridge port drops it), filtered by the classic BPF
    ``program_ops`` from before it is bound, so no frame of another port is queued; None
    where one cannot be opened (no CAP_NET_RAW, no such port)."""
    import ctypes  # only here: the tests of the rest of the agent need no ctypes

    try:
        tap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except (OSError, AttributeError):
        return None
    try:
        code = b"".join(struct.pack("HBBI", *op) for op in program_ops)
        program = ctypes.create_string_buffer(code)
        fprog = struct.pack("HL", len(program_ops), ctypes.addressof(program))
        tap.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
        tap.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, TAP_BUFFER)
        tap.bind((member, ETH_P_ALL))
        tap.setblocking(False)
    except OSError:
        tap.close()
        return None
    return tap


def lacp_tap(member: str) -> socket.socket | None:
    """The member's tap for GateWatch (TAP_FILTER); None where there is none: GateWatch then
    polls alone."""
    return raw_tap(member, TAP_FILTER)


def received(tap: socket.socket, size: int) -> list[bytes]:
    """The first ``size`` bytes of each frame the tap holds (64 at most), those the port
    received only (not this end's own, PACKET_OUTGOING)."""
    frames = []
    for _ in range(64):
        try:
            frame, address = tap.recvfrom(size)
        except OSError:  # BlockingIOError: nothing more queued
            break
        if isinstance(address, tuple) and len(address) > 2 and address[2] == PACKET_OUTGOING:
            continue
        frames.append(frame)
    return frames


def read_tap(tap: socket.socket) -> tuple[bool, bool]:
    """Reads what the tap holds: (a LACPDU in which the server says it is in sync, so this
    end serves it once it distributes, within a LACP tick; a data frame, which the server
    sends only on a port that distributes)."""
    in_sync = data = False
    for frame in received(tap, 256):
        if frame[12:14] == b"\x88\x09":
            state = lacpdu_state(frame)
            in_sync = in_sync or (state is not None and state & LACP_SYNC == LACP_SYNC)
        else:
            data = True
    return in_sync, data


class GateWatch:
    """Opens each gated ES bond as soon as its member's LACP distributes at this end and the
    server says it is in sync, in a thread of its own: never behind a pass, and woken by the
    server's LACPDU or its first data frame (see the module's docstring)."""

    def __init__(
        self,
        segments: dict[str, Any],
        root: str = SYSFS_NET,
        tap: Callable[[str], socket.socket | None] = lacp_tap,
    ) -> None:
        self.segments = segments
        self.root = root
        self.tap = tap
        self.taps: dict[str, socket.socket] = {}
        """The members of gated bonds that have a tap open, and their taps."""
        self.hurry_until = 0.0
        self.data_seen: set[str] = set()
        """Members of gated bonds on which the server has sent data (logged once)."""
        self.wake = threading.Event()
        """Set by the main loop after each pass: a pass may have gated a bond."""

    def check(self) -> tuple[list[str], list[str]]:
        """(bonds opened now, members of bonds still gated): one look at sysfs."""
        opened, waiting = [], []
        for bond, member in gated_members(self.segments, self.root):
            if ready_for_the_server(member, self.root):
                serves = lacp_serving_now(member, self.root)
                open_gate(bond, self.root, "" if serves else "the server in sync")
                opened.append(bond)
            else:
                waiting.append(member)
        self.data_seen &= set(waiting)
        return opened, waiting

    def keep_taps(self, members: list[str]) -> None:
        """A tap on each of ``members``, none on any other port."""
        for member in list(self.taps):
            if member not in members:
                self.taps.pop(member).close()
        for member in members:
            if member not in self.taps:
                tap = self.tap(member)
                if tap is not None:
                    self.taps[member] = tap

    def wait_gated(self, members: list[str]) -> None:
        """Until the next look at sysfs: GATE_HURRY_S while a server has just sent data or
        said it distributes, else until one of ``members`` receives such a frame,
        GATE_POLL_S at most."""
        if time.monotonic() < self.hurry_until:
            time.sleep(GATE_HURRY_S)
            return
        self.keep_taps(members)
        if not self.taps:
            time.sleep(GATE_POLL_S)
            return
        ready, _, _ = select.select(list(self.taps.values()), [], [], GATE_POLL_S)
        for member, tap in self.taps.items():
            if tap not in ready:
                continue
            in_sync, data = read_tap(tap)
            if data and member not in self.data_seen:
                self.data_seen.add(member)
                here, server = port_states(member, self.root)
                log(
                    f"{member}: the server sends data (LACP port state"
                    f" here {here}, the server's as last heard {server})"
                )
            if in_sync or data:
                self.hurry_until = time.monotonic() + GATE_HURRY_FOR_S

    def run(self) -> None:
        while True:
            _opened, waiting = self.check()
            if waiting:
                self.wait_gated(waiting)
            else:
                self.keep_taps([])
                self.hurry_until = 0.0
                self.wake.wait(GATE_IDLE_S)
                self.wake.clear()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="gate-watch", daemon=True)
        thread.start()
        return thread


HEAL_CHECK_S = 30.0
"""How often EviHeal compares zebra's and bgpd's segment EVIs: one vtysh with three commands,
about 0.6 s of CPU in the lab's emulated guest."""
HEAL_CONFIRM_S = 10.0
"""A lost EVI must still be lost this much later before the agent acts: bgpd that has just
started learns its segments and VNIs over a few seconds."""
HEAL_AGAIN_S = 120.0
"""A segment whose id was re-applied is not re-applied again before this: if bgpd still
lacks its EVI, something else is wrong, and the agent's log says so once per interval
instead of churning the segment every 40 s."""


ARP_FILTER = [
    (0x28, 0, 0, 12),  # ldh [12]: the ethertype
    (0x15, 0, 1, 0x0806),  # jeq ARP
    (0x06, 0, 0, 64),  # ret 64: the ARP frame, whole
    (0x06, 0, 0, 0),  # ret 0: drop
]
"""Classic BPF for the ARP tap: only ARP is queued (a server sends a few a minute)."""
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


def arp_sender(frame: bytes) -> tuple[str, str] | None:
    """(sender's IPv4 address, sender's MAC) of an Ethernet ARP frame, request or reply
    (RFC 826 over Ethernet: hardware type 1, protocol IPv4, lengths 6 and 4); None for any
    other frame."""
    if (
        len(frame) < 42
        or frame[12:14] != b"\x08\x06"
        or frame[14:20] != b"\x00\x01\x08\x00\x06\x04"
    ):
        return None
    mac = ":".join(f"{b:02x}" for b in frame[22:28])
    return socket.inet_ntoa(frame[28:32]), mac


def arp_tap(member: str) -> socket.socket | None:
    """The member's tap for ArpWatch (ARP_FILTER), None where there is none."""
    return raw_tap(member, ARP_FILTER)


def probe_line(address: str, mac: str, svi: str) -> str:
    """The ``ip -batch`` line that gives a neighbour to the kernel in PROBE with ``mac``: it
    forwards with it and asks the server at once (a hand-back, or a fresh probe)."""
    return f"neigh replace {address} lladdr {mac} dev {svi} nud probe"


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


class ArpWatch:
    """Hands the agent's entry of a server back to the kernel the moment the server's ARP
    reaches this leaf's ES member, in a thread of its own. The agent's NOARP entry stands
    for the pair's word that it verifies the server; ARP from the server here means its bond
    now hashes ARP to this leaf, so the pair can no longer verify it and this leaf must
    (a planned restart's undrain brings the server's ARP back to the restarted leaf, say).
    Waiting for zebra to say so costs up to a routine ask (ZEBRA_S) after the pair's hold
    began, and meanwhile the pair's own probes fail and it withdraws the server's /32."""

    def __init__(
        self,
        segments: dict[str, Any],
        synced: Synced,
        tap: Callable[[str], socket.socket | None] = arp_tap,
    ) -> None:
        self.hosts = {
            str(seg["member"]): {str(h) for h in seg["hosts"]} for seg in segments.values()
        }
        self.synced = synced
        self.tap = tap
        self.taps: dict[str, socket.socket] = {}
        self.looked: dict[str, float] = {}

    def heard(self, address: str, mac: str, now: float) -> None:
        """The server at ``address`` sent ARP to this leaf."""
        if now - self.looked.get(address, float("-inf")) < HEAR_AGAIN_S:
            return
        self.looked[address] = now
        svis = set(self.synced.evpn_svis.values())
        svi = agents_svi(_ip_json("-4", "neigh", "show", "to", address), svis)
        if svi is not None:
            line = probe_line(address, mac, svi)
            _ip_batch([line])
            self.synced.hear((address, svi), now)
            log(f"{address}: its ARP reached this leaf; {line}")

    def run(self) -> None:
        while True:
            for member in self.hosts:
                if member not in self.taps:
                    tap = self.tap(member)
                    if tap is not None:
                        self.taps[member] = tap
            if not self.taps:
                time.sleep(GATE_IDLE_S)
                continue
            ready, _, _ = select.select(list(self.taps.values()), [], [], GATE_IDLE_S)
            for member, tap in self.taps.items():
                if tap in ready:
                    for address, mac in read_arp(tap):
                        if address in self.hosts[member]:
                            self.heard(address, mac, time.monotonic())

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="arp-watch", daemon=True)
        thread.start()
        return thread


def read_arp(tap: socket.socket) -> list[tuple[str, str]]:
    """The (address, MAC) of each sender of the ARP the tap holds, received ones only."""
    heard = []
    for frame in received(tap, 64):
        sender = arp_sender(frame)
        if sender is not None:
            heard.append(sender)
    return heard


def vtysh_documents(*commands: str) -> list[Any]:
    """The JSON document of each command from one vtysh run, up to the first command that
    gave none (a daemon that is not running prints an error instead)."""
    args = [arg for command in commands for arg in ("-c", command)]
    out = subprocess.run(["vtysh", *args], capture_output=True, text=True, check=False).stdout
    return json_documents(out or "")


def vtysh_json(*commands: str) -> list[Any] | None:
    """The JSON document of each command, from one vtysh run; None unless each command gave
    one."""
    docs = vtysh_documents(*commands)
    return docs if len(docs) == len(commands) else None


HEAL_COMMANDS = (
    "show evpn es-evi json",
    "show bgp l2vpn evpn es-evi json",
    "show bgp l2vpn evpn vni json",
)


def lost_segment_evis(
    zebra_evis: Any, bgp_evis: Any, bgp_vnis: Any, esis: set[str]
) -> set[tuple[str, int]]:
    """(ESI, VNI) of this leaf's segments that zebra holds as local and bgpd does not, where
    bgpd knows the VNI from the kernel (``show bgp l2vpn evpn vni json``: ``inKernel``), so
    it will not take the EVI by itself any more (the three are HEAL_COMMANDS' answers)."""
    if not (isinstance(zebra_evis, list) and isinstance(bgp_evis, list)):
        return set()
    if not isinstance(bgp_vnis, dict):
        return set()
    known = {
        int(vni)
        for vni, info in bgp_vnis.items()
        if vni.isdigit() and isinstance(info, dict) and info.get("inKernel") == "True"
    }
    local_in_bgp = {
        (str(e.get("esi")), e.get("vni"))
        for e in bgp_evis
        if isinstance(e, dict) and "local" in (e.get("type") or [])
    }
    return {
        (str(e["esi"]), int(e["vni"]))
        for e in zebra_evis
        if isinstance(e, dict)
        and str(e.get("esi")) in esis
        and isinstance(e.get("vni"), int)
        and "local" in (e.get("type") or [])
        and e["vni"] in known
        and (str(e["esi"]), e["vni"]) not in local_in_bgp
    }


def reapply_es_ids(bonds: list[tuple[str, int]]) -> tuple[int, str]:
    """Remove and add again each (bond, es-id) in one vtysh run: (exit code, its output)."""
    args = ["-c", "configure terminal"]
    for bond, es_id in bonds:
        args += ["-c", f"interface {bond}", "-c", f"no evpn mh es-id {es_id}"]
        args += ["-c", f"evpn mh es-id {es_id}", "-c", "exit"]
    done = subprocess.run(["vtysh", *args], capture_output=True, text=True, check=False)
    return done.returncode, (done.stdout + done.stderr).strip()


class EviHeal:
    """Re-applies the id of each segment whose EVI bgpd lost (see the module's docstring),
    in a thread of its own: a vtysh is seconds in a loaded guest, and a pass must not wait."""

    def __init__(self, segments: dict[str, Any]) -> None:
        self.bond_of = {
            str(seg["esi"]): (bond, int(seg["es_id"]))
            for bond, seg in sorted(segments.items())
            if seg.get("esi") and seg.get("es_id")
        }
        self.suspect: set[tuple[str, int]] = set()
        self.healed_at: dict[str, float] = {}
        """ESI -> when its id was last re-applied (monotonic clock)."""

    def check(self, now: float | None = None) -> list[str]:
        """One look; the bonds whose id it re-applied (an EVI lost at two looks in a row, and
        not re-applied within HEAL_AGAIN_S)."""
        now = time.monotonic() if now is None else now
        docs = vtysh_json(*HEAL_COMMANDS)
        if docs is None:  # bgpd or zebra not answering: start over
            self.suspect = set()
            return []
        lost = lost_segment_evis(docs[0], docs[1], docs[2], set(self.bond_of))
        confirmed, self.suspect = lost & self.suspect, lost - self.suspect
        recent = {
            evi
            for evi in confirmed
            if now - self.healed_at.get(evi[0], -HEAL_AGAIN_S) < HEAL_AGAIN_S
        }
        if recent:
            log(f"still no local EVI after a heal: {sorted(recent)}")
        confirmed -= recent
        if not confirmed:
            return []
        for esi, _vni in confirmed:
            self.healed_at[esi] = now
        bonds = sorted({self.bond_of[esi] for esi, _vni in confirmed})
        rc, out = reapply_es_ids(bonds)
        evis = ", ".join(f"{esi} VNI {vni}" for esi, vni in sorted(confirmed))
        names = " ".join(bond for bond, _ in bonds)
        log(
            f"healed {names}: bgpd had no local EVI for {evis} "
            f"(FRR 8.4 replay race); re-applied es-id, vtysh rc={rc} {out[-200:]}"
        )
        return [bond for bond, _ in bonds]

    def run(self) -> None:
        while True:
            self.check()
            time.sleep(HEAL_CONFIRM_S if self.suspect else HEAL_CHECK_S)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="evi-heal", daemon=True)
        thread.start()
        return thread


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


def json_documents(text: str) -> list[Any]:
    """The JSON documents in ``text`` one after the other (vtysh's output), up to the first
    that is not JSON (a daemon's error message)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return found
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return found
        found.append(value)


def evpn_up_for(summary: Any) -> float:
    """Seconds this leaf's longest-established BGP EVPN session has been up
    (``show bgp l2vpn evpn summary json``: its peers' state and peerUptimeMsec, which bgpd
    resets on every state change), 0 with none established or no answer."""
    if not isinstance(summary, dict):
        return 0.0
    peers = summary.get("peers")
    if not isinstance(peers, dict):  # an address family's object around it
        nested = [v.get("peers") for v in summary.values() if isinstance(v, dict)]
        peers = next((p for p in nested if isinstance(p, dict)), {})
    ups = [
        float(peer.get("peerUptimeMsec", 0)) / 1000.0
        for peer in peers.values()
        if isinstance(peer, dict) and peer.get("state") == "Established"
    ]
    return max(ups, default=0.0)


def zebra_answer(
    evpn_svis: dict[str, str],
) -> tuple[dict[tuple[str, str], dict[str, Any]], float]:
    """zebra's synced entries (``zebra_synced``) and how long this leaf's BGP EVPN has
    been up (``evpn_up_for``), from one vtysh."""
    documents = vtysh_documents(*ZEBRA_ASK)
    data = documents[0] if documents else {}
    summary = documents[1] if len(documents) > 1 else None
    return zebra_synced(data, evpn_svis), evpn_up_for(summary)


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
        with self.lock:
            self.heard = {k: t for k, t in self.heard.items() if now - t < HEARD_QUIET_S}
            quiet = set(self.heard)
        for key in quiet:  # the kernel's now, to verify: not ours to put back
            self.installed.pop(key, None)
        self.handed_back = {
            k for k in self.handed_back if k in by_key and not _verified_here(by_key[k])
        }
        if ask_zebra:
            answer, up_for = zebra_answer(self.evpn_svis)
            self.settling = up_for < EVPN_SETTLE_S
            confirmed = {k: e["mac"] for k, e in answer.items() if pair_confirms(e)}
            if self.settling:  # zebra's silence is not the pair's: keep what stands
                confirmed = {**self.installed, **self.last_answer, **confirmed}
                answer = {k: e for k, e in answer.items() if k not in confirmed}
            self.last_answer = confirmed
            self.last_unverified = {
                k: e["mac"] for k, e in answer.items() if k not in self.last_answer
            }
            holds = [held_for(e) for k, e in answer.items() if k in self.last_answer]
            self.hold_ends = min(
                (now + HANDBACK_HOLD_S - held + 1.0 for held in holds if held is not None),
                default=now + EVPN_SETTLE_S if self.settling else float("inf"),
            )
        trusted = dict(self.last_answer)
        trusted.update({k: m for k, m in self.last_unverified.items() if k[0] in cannot_verify})
        unverified: dict[tuple[str, str], str] = {}
        if ask_zebra:
            synced = trusted
            unverified = {k: m for k, m in self.last_unverified.items() if k not in trusted}
            listed = set(self.last_answer) | set(self.last_unverified)
        else:
            waiting = {k for k, n in by_key.items() if not _states(n) & DEAD_STATES}
            synced = {k: v for k, v in trusted.items() if k in waiting}
            synced.update(self.installed)
            listed = set(synced)
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
                log(f"put back {ip} on {svi}: this leaf's probes of it had failed")
            self.handed_back.discard((ip, svi))
            batch.append(f"neigh replace {ip} lladdr {mac} dev {svi} extern_learn nud noarp")
            self.installed[(ip, svi)] = mac
        ours = {k for k, n in by_key.items() if _agents_own(n)}
        probed = False
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
            _ip_batch(batch)
        return bool(batch)


def segment_hosts_missing(config: dict[str, Any], neighs: list[dict[str, Any]]) -> bool:
    """Whether a server of a local segment has no usable neighbour here (then zebra is
    asked on every resync, as its synced entry may be what is missing)."""
    known = {str(n["dst"]) for n in neighs}
    return any(
        str(host) not in known
        for segment in (config.get("segments") or {}).values()
        for host in segment["hosts"]
    )


def reconcile(
    config: dict[str, Any],
    ports: Ports | None,
    synced: Synced | None = None,
    ask_zebra: bool = True,
) -> bool:
    """One pass: synced neighbours, host routes. True if a server of a local segment still
    has no usable neighbour."""
    table = int(config["table"])
    segments = config.get("segments") or {}
    links = _ip_json("-d", "link", "show") if segments else []
    not_here = unserved_hosts(segments, serving_bonds(links, segments) | serving_now(segments))
    entries = _ip_json("-4", "neigh", "show")
    now = time.monotonic()
    if synced is not None and synced.apply(entries, ask_zebra, now, frozenset(not_here)):
        entries = _ip_json("-4", "neigh", "show")
    neighs = neighbours(config, entries)
    if synced is not None:
        unproven = synced.unproven(entries, now)
        neighs = [n for n in neighs if str(n["dst"]) not in unproven]
    missing = segment_hosts_missing(config, neighs)
    if ports is not None:
        neighs = flush_behind_down_ports(neighs, ports)
        ports.learn()
        ports.remember(neighs)
    # a bond GateWatch opened since ``links`` was read serves: never gate it again here
    serving = serving_bonds(links, segments) | serving_now(segments)
    unserved = unserved_hosts(segments, serving) if config.get("withdraw_unserved", True) else set()
    want = {(str(n["dst"]), str(n["dev"])) for n in neighs if str(n["dst"]) not in unserved}
    have = present(table)
    batch = bond_gates(links, segments, serving)
    for line in batch:  # the agent's log (stdout and syslog): when each bond was gated or opened
        log(line)
    batch += [
        f"route replace {dst}/32 dev {dev} table {table} proto {PROTO}"
        for dst, dev in sorted(want - have)
    ]
    batch += [f"route del {dst}/32 dev {dev} table {table}" for dst, dev in sorted(have - want)]
    if batch:
        _ip_batch(batch)
    return missing


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


def main(path: str) -> None:
    syslog.openlog(SYSLOG_IDENT, syslog.LOG_PID, syslog.LOG_DAEMON)
    with open(path) as handle:
        config = json.load(handle)
    log(f"started with {path}")  # a deploy that changed what it reads, or a boot
    ports = Ports(config["bridge"]) if config.get("withdraw_on_carrier_loss") else None
    synced = Synced(config["evpn_svis"]) if config.get("evpn_svis") else None
    monitor = subprocess.Popen(
        ["ip", "monitor", "label", "link", "neigh"], stdout=subprocess.PIPE, bufsize=0
    )
    assert monitor.stdout is not None
    fd = monitor.stdout.fileno()
    pacer = Pacer()
    segments = config.get("segments") or {}
    watch = GateWatch(segments) if segments else None
    if watch is not None:
        watch.start()  # an opened gate raises the bond's carrier: a link event, so a pass
    if segments:
        EviHeal(segments).start()
    if segments and synced is not None:
        ArpWatch(segments, synced).start()
    partial = ""
    while True:
        ready, _, _ = select.select([fd], [], [], pacer.wait(time.monotonic()))
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise SystemExit("ip monitor ended")
            text = chunk.decode(errors="replace")
            pacer.note(text)
            *lines, partial = (partial + text).split("\n")
            if ports is not None:
                withdraw_behind(ports, carrier_lost(lines, ports.bridge), int(config["table"]))
        now = time.monotonic()
        run, ask_zebra = pacer.due(now)
        if run:
            missing = reconcile(config, ports, synced, ask_zebra=ask_zebra and synced is not None)
            zebra_by = float("inf") if synced is None else synced.next_ask(time.monotonic())
            pacer.done(now, ask_zebra, missing, zebra_by)
            if watch is not None:
                watch.wake.set()


if __name__ == "__main__":
    main(sys.argv[1])
