"""Raw sockets on an ES member (classic BPF filters) and the frames they read: the
server's LACPDUs and first data frame (``gate``), its ARP (``arpwatch``)."""

from __future__ import annotations

import socket
import struct

from .segments import LACP_SYNC

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


ARP_FILTER = [
    (0x28, 0, 0, 12),  # ldh [12]: the ethertype
    (0x15, 0, 1, 0x0806),  # jeq ARP
    (0x06, 0, 0, 64),  # ret 64: the ARP frame, whole
    (0x06, 0, 0, 0),  # ret 0: drop
]
"""Classic BPF for the ARP tap: only ARP is queued (a server sends a few a minute)."""


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


def read_arp(tap: socket.socket) -> list[tuple[str, str]]:
    """The (address, MAC) of each sender of the ARP the tap holds, received ones only."""
    heard = []
    for frame in received(tap, 64):
        sender = arp_sender(frame)
        if sender is not None:
            heard.append(sender)
    return heard
