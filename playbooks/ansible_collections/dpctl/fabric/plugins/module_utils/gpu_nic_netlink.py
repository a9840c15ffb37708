"""LACP independent control of a GPU server's bonds, over rtnetlink (dpctl_gpu_nic).

With coupled control (Linux's default) a bond's port distributes as soon as its partner says
it is in sync, before it knows the partner collects: what it sends then is lost. IEEE
802.1AX independent control collects first and distributes once the partner collects
(Linux 6.9, "bonding: Add independent control state machine", commit 240fd405528b; Debian
12's 6.1.192 has it too). It is the bond option ``coupled_control 0``: settable only while
the bond is down, only over netlink (no sysfs file), and iproute2 names it only from 6.10,
so this module sends the request itself. A kernel without the option ignores the
attribute and reports none: the read-back tells.

Standard library only: the lab's servers run `dpctl_gpu_nic.py --lacp-independent` with
this file next to it, without Ansible.
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
"""What ``--lacp-independent`` prints after each bond's name (the lab reads it)."""


def nl_attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("HH", length, kind) + payload + b"\0" * (-length % 4)


def nl_attrs(data: bytes) -> dict[int, bytes]:
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


def nl_request(msg_type: int, flags: int, ifindex: int, payload: bytes = b"") -> bytes:
    """Send one rtnetlink link message and return the first reply."""
    body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, ifindex, 0, 0) + payload
    header = struct.pack("IHHII", 16 + len(body), msg_type, flags, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        sock.bind((0, 0))
        sock.send(header + body)
        return sock.recv(65536)


def nl_ack_error(reply: bytes) -> int:
    """The errno of an NLMSG_ERROR reply (0: acknowledged)."""
    _length, msg_type = struct.unpack_from("IH", reply)
    if msg_type != NLMSG_ERROR:
        return 0
    return -int(struct.unpack_from("i", reply, 16)[0])


def coupled_control(reply: bytes) -> int | None:
    """The bond's coupled_control in an RTM_NEWLINK reply to RTM_GETLINK, None when the
    kernel does not report it (it has no such option)."""
    link = nl_attrs(reply[16 + 16 :])
    info = nl_attrs(link.get(IFLA_LINKINFO, b""))
    value = nl_attrs(info.get(IFLA_INFO_DATA, b"")).get(IFLA_BOND_COUPLED_CONTROL)
    return value[0] if value else None


def read_coupled_control(bond: str) -> int | None:
    """``bond``'s coupled_control as its kernel reports it (None: no such option)."""
    return coupled_control(nl_request(RTM_GETLINK, NLM_F_REQUEST, socket.if_nametoindex(bond)))


def set_coupled_control(bond: str, value: int = 0) -> int | None:
    """Set coupled_control on ``bond`` (which must be down); return what the kernel now
    reports (None: it has no such option)."""
    index = socket.if_nametoindex(bond)
    option = nl_attr(IFLA_BOND_COUPLED_CONTROL, bytes([value]))
    data = nl_attr(IFLA_INFO_DATA | NLA_F_NESTED, option)
    info = nl_attr(IFLA_LINKINFO | NLA_F_NESTED, nl_attr(IFLA_INFO_KIND, b"bond\0") + data)
    error = nl_ack_error(nl_request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, index, info))
    if error:
        raise OSError(error, f"{bond}: coupled_control {value} refused")
    return read_coupled_control(bond)


def lacp_independent_main(bonds: list[str]) -> int:
    """`dpctl_gpu_nic.py --lacp-independent BOND...` (each bond down): one line per bond,
    ``BOND independent`` or ``BOND coupled (kernel has no coupled_control)``; 1 on an error.
    The lab's server images run this between creating their bonds and bringing them up."""
    for bond in bonds:
        try:
            independent = set_coupled_control(bond) == 0
        except OSError as exc:
            print(f"{bond}: {exc}", file=sys.stderr)
            return 1
        print(f"{bond} {INDEPENDENT if independent else COUPLED}")
    return 0


COUPLED_RUNNING = "coupled (a running bond changes at the next boot: the bond must be down)"


def lacp_control_text(value: int | None) -> str:
    """What a LACP bond's coupled_control means for the operator."""
    if value == 0:
        return INDEPENDENT
    return COUPLED if value is None else COUPLED_RUNNING
