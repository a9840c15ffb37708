"""Turn on IEEE 802.1AX independent control on LACP bonds (stdlib only: a lab server runs it).

With coupled control (Linux's default) a bond's port starts distributing as soon as its partner
says it is in sync, before it knows the partner collects, so what it sends in that moment is
lost. Linux 6.9 added independent control ("bonding: Add independent control state machine",
commit 240fd405528b; Debian 12's 6.1.192 has it too): the port collects first and distributes
once the partner says it collects. It is the bond option ``coupled_control 0``, settable only
while the bond is down and only through netlink (no sysfs file); iproute2 learned it in 6.10,
and Debian 12's iproute2 is 6.1, so this sends the netlink request itself and reads the option
back. A kernel without the option ignores the attribute; the read-back tells.

Usage: bond_control.py BOND [BOND ...]   (each bond down; prints one line per bond:
``BOND independent`` or ``BOND coupled (kernel has no coupled_control)``; exit 1 on a
netlink error)
"""

from __future__ import annotations

import socket
import struct
import sys

RTM_NEWLINK = 16
RTM_GETLINK = 18
NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLA_F_NESTED = 0x8000
IFLA_LINKINFO = 18
IFLA_INFO_KIND = 1
IFLA_INFO_DATA = 2
IFLA_BOND_COUPLED_CONTROL = 32
"""include/uapi/linux/if_link.h, since Linux 6.9 (and in Debian's 6.1.192)."""
INDEPENDENT = "independent"
COUPLED = "coupled (kernel has no coupled_control)"
"""What ``main`` prints after each bond's name (``labfabric.lacp_control_summary`` reads it)."""


def attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("HH", length, kind) + payload + b"\0" * (-length % 4)


def attrs(data: bytes) -> dict[int, bytes]:
    """The attributes in ``data`` by type (nested flag cleared)."""
    found: dict[int, bytes] = {}
    pos = 0
    while pos + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, pos)
        if length < 4:
            break
        found[kind & ~NLA_F_NESTED] = data[pos + 4 : pos + length]
        pos += (length + 3) & ~3
    return found


def request(msg_type: int, flags: int, ifindex: int, payload: bytes = b"") -> bytes:
    """Send one rtnetlink link message and return the first reply."""
    body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, ifindex, 0, 0) + payload
    header = struct.pack("IHHII", 16 + len(body), msg_type, flags, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        sock.bind((0, 0))
        sock.send(header + body)
        return sock.recv(65536)


def ack_error(reply: bytes) -> int:
    """The errno of an NLMSG_ERROR reply (0: acknowledged)."""
    _length, msg_type = struct.unpack_from("IH", reply)
    if msg_type != NLMSG_ERROR:
        return 0
    return -int(struct.unpack_from("i", reply, 16)[0])


def coupled_control(reply: bytes) -> int | None:
    """The bond's coupled_control in an RTM_NEWLINK reply to RTM_GETLINK, None when the
    kernel does not report it (it has no such option)."""
    link = attrs(reply[16 + 16 :])
    info = attrs(link.get(IFLA_LINKINFO, b""))
    value = attrs(info.get(IFLA_INFO_DATA, b"")).get(IFLA_BOND_COUPLED_CONTROL)
    return value[0] if value else None


def set_independent(bond: str) -> bool:
    """coupled_control 0 on ``bond`` (down); True when the kernel now runs it so."""
    index = socket.if_nametoindex(bond)
    data = attr(IFLA_INFO_DATA | NLA_F_NESTED, attr(IFLA_BOND_COUPLED_CONTROL, b"\0"))
    info = attr(IFLA_LINKINFO | NLA_F_NESTED, attr(IFLA_INFO_KIND, b"bond\0") + data)
    error = ack_error(request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, index, info))
    if error:
        raise OSError(error, f"{bond}: coupled_control 0 refused")
    return coupled_control(request(RTM_GETLINK, NLM_F_REQUEST, index)) == 0


def main(bonds: list[str]) -> int:
    for bond in bonds:
        try:
            independent = set_independent(bond)
        except OSError as exc:
            print(f"{bond}: {exc}", file=sys.stderr)
            return 1
        print(f"{bond} {INDEPENDENT if independent else COUPLED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
