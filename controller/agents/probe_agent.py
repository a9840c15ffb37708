#!/usr/bin/env python3
"""Fixed-rate, sequence-numbered UDP flow (stdlib only; runs inside lab namespaces).

    probe_agent.py recv --bind IP --port P --count N --timeout S [--ready FILE]
                        [--subflows K] [--rate PPS] [--done FILE] [--flowing FILE]
    probe_agent.py send --dst IP --port P --count N --rate PPS [--src IP] [--subflows K]
                        [--sport-base B] [--sniff IF1,IF2] [--stop FILE]
                        [--pin IF --gw-mac MAC --size BYTES]

Both ends are bounded in packet count and wall time and stop by themselves; with ``--stop``
the sender also stops early once FILE exists (the run being measured is over) and tells the
receiver how many it sent.
With ``--subflows K`` the sender spreads its packets round-robin over K sockets with
consecutive source ports (from 40000), so a bond or ECMP hashing on layer 3+4 spreads the
sub-flows over its members: with two planes, some sub-flows take each plane.
The receiver prints one JSON object: sent, received, lost, max_gap_ms (longest silence of
any one sub-flow; given the sender's ``--rate``, a run of lost packets counts as silence
too, also at a flow's start or end or for a sub-flow that received nothing), duplicates,
reordered (packets that arrived after a later packet of their sub-flow), subflows,
subflows_hit (sub-flows that lost a packet) and ``per_subflow`` (the same counts for each
sub-flow, with ``lost_run``: its most consecutive packets lost, and ``lost_runs``: each run
of lost packets as [first seq, last seq]; ``first_seq`` is the first packet that arrived).
With ``--sniff`` (root: packet sockets) the sender prints which of the named interfaces (a
bond's members) each sub-flow left through:
``{"egress": {"<sub-flow>": {"<interface>": packets}}}``.

The receiver ends at the sender's end marker, or ``DONE_GRACE_S`` after ``--done FILE``
appears (the caller creates it once every sender has exited: a flow whose end marker was
lost still ends promptly), or at ``--timeout`` (the last resort). Its own start is not the
flow's start: on a loaded host the senders may start seconds after the receivers, and a
deadline counted from the receiver's start cut such flows short and counted their tail as
lost. ``receiver_dropped`` is what the receiving socket itself dropped because its buffer
was full (``/proc/net/udp``): packets the network delivered but the probe host was too busy
to read, reported apart from the network's loss. Each packet carries the sender's clock:
``sender_paused_ms`` is the longest the sender itself fell behind its schedule between two
arrivals of one sub-flow (a busy host not running it), ``network_gap_ms`` the longest
silence less that pause (what the network is to blame for), and ``extra_delay_ms`` the most
a packet took beyond the flow's fastest (arrival less send time: a queue, a neighbour being
resolved; the two clocks' offset cancels). ``first_arrival`` and ``last_arrival``
(epoch s, 0: nothing arrived) say which span of time the flow covered, and ``--flowing
FILE`` is created at the first arrival: a measurement around an event starts the event only
once its flows are flowing (on a loaded lab guest a sender can start tens of seconds late).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import socket
import struct
import time
from typing import Any

_DATA = struct.Struct("!4sIId")  # magic, seq, total, the sender's clock at sending (epoch s)
_MAGIC, _END = b"DPLP", b"DPLE"


SOURCE_PORT_BASE = 40000


ETH_P_ALL = 0x0003  # outgoing frames reach only all-protocol packet sockets
SO_RCVBUFFORCE = 33  # Linux: SO_RCVBUF past rmem_max (root)
RECV_BUFFER = 4 << 20
DONE_GRACE_S = 2.0  # in-flight packets still accepted after the senders have exited


def _sockets(src: str, subflows: int, base: int = SOURCE_PORT_BASE) -> list[socket.socket]:
    socks = []
    for index in range(subflows):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if src or subflows > 1:
            sock.bind((src, base + index if subflows > 1 else 0))
        socks.append(sock)
    return socks


def _sniffers(interfaces: list[str]) -> dict[str, socket.socket]:
    """A packet socket per interface: it also sees what the host sends through it."""
    result = {}
    for name in interfaces:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind((name, ETH_P_ALL))
        sock.setblocking(False)
        result[name] = sock
    return result


def udp_ports(frame: bytes) -> tuple[int, int] | None:
    """(source, destination) port of an Ethernet/IPv4/UDP frame, else None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00" or frame[14 + 9] != 17:
        return None
    udp = 14 + (frame[14] & 0x0F) * 4
    if len(frame) < udp + 4:
        return None
    sport, dport = struct.unpack("!HH", frame[udp : udp + 4])
    return sport, dport


def count_egress(
    sniffers: dict[str, socket.socket], port: int, base: int, subflows: int
) -> dict[str, dict[str, int]]:
    """Sub-flow -> interface -> packets of this probe seen leaving through it.

    An interface that went down (or away) meanwhile ends its packet socket with an error
    (ENETDOWN): that sniffer is closed and removed from ``sniffers``, and the sender goes on
    sending. A port failing during the probe is what the probe measures, not a reason for
    the sender to die and turn the rest of the flow into loss."""
    egress: dict[str, dict[str, int]] = {}
    for name, sock in list(sniffers.items()):
        while select.select([sock], [], [], 0)[0]:
            try:
                frame, address = sock.recvfrom(256)
            except BlockingIOError:
                break
            except OSError:
                sock.close()
                del sniffers[name]
                break
            ports = udp_ports(frame)
            if address[2] != socket.PACKET_OUTGOING or ports is None or ports[1] != port:
                continue
            flow = ports[0] - base
            if 0 <= flow < subflows:
                by_if = egress.setdefault(str(flow), {})
                by_if[name] = by_if.get(name, 0) + 1
    return egress


class _Pinned:
    """Sends a flow's packets as raw Ethernet/IPv4/UDP frames on one interface (a bond
    member) to the first hop's MAC (the rail's gateway): the kernel's routing and the bond's
    hash are bypassed, so each packet leaves through that port and no other. ``size`` is the
    IP packet's length; don't-fragment set, UDP checksum 0 (none: RFC 768)."""

    def __init__(self, pin: str, gw_mac: str, src: str, dst: str, port: int, size: int) -> None:
        self.ifname = pin
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((pin, 0))
        self.head: bytes = bytes.fromhex(gw_mac.replace(":", "")) + self.sock.getsockname()[4]
        self.addresses = socket.inet_aton(src) + socket.inet_aton(dst)
        self.port, self.pad, self.errors = port, max(0, size - 28 - _DATA.size), 0

    def frame(self, sport: int, data: bytes) -> bytes:
        payload = data + b"\0" * self.pad
        ip = struct.pack("!BBHHHBBH", 0x45, 0, 28 + len(payload), 0, 0x4000, 64, 17, 0)
        ip += self.addresses
        total = sum(struct.unpack("!10H", ip))  # the header checksum (RFC 791), in two folds
        total = (total & 0xFFFF) + (total >> 16)
        ip = ip[:10] + struct.pack("!H", ~(total + (total >> 16)) & 0xFFFF) + ip[12:]
        udp = struct.pack("!HHHH", sport, self.port, 8 + len(payload), 0)
        return self.head + b"\x08\x00" + ip + udp + payload

    def send(self, sport: int, data: bytes) -> None:
        try:
            self.sock.send(self.frame(sport, data))
        except OSError:  # too big for the port (its MTU), the port down: counted, lost
            self.errors += 1


def send(
    dst: str,
    port: int,
    count: int,
    rate: float,
    src: str = "",
    subflows: int = 1,
    base: int = SOURCE_PORT_BASE,
    sniff: list[str] | None = None,
    stop: str = "",
    pinned: _Pinned | None = None,
) -> dict[str, Any]:
    """Packet ``seq`` leaves from sub-flow ``seq % subflows``; the rate is the total rate.
    Once ``stop`` names an existing file (looked for every 16 packets), no more are sent.
    With ``pinned``, the packets leave as raw frames on its one interface."""
    sniffers = _sniffers(sniff or [])
    ports = port_facts(sorted(set(sniff or []) | ({pinned.ifname} if pinned else set())))
    egress: dict[str, dict[str, int]] = {}
    socks = _sockets(src, subflows, base) if pinned is None else []

    def emit(flow: int, data: bytes) -> None:
        if pinned is not None:
            pinned.send(base + flow, data)
            return
        with contextlib.suppress(OSError):  # no route for a moment is loss: keep the rate
            socks[flow].sendto(data, (dst, port))

    interval = 1.0 / rate
    start = time.monotonic()
    sent = count
    for seq in range(count):
        if stop and seq % 16 == 0 and os.path.exists(stop):
            sent = seq
            break
        delay = start + seq * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        emit(seq % subflows, _DATA.pack(_MAGIC, seq, count, time.time()))
        if sniffers and seq % 64 == 63:
            _merge(egress, count_egress(sniffers, port, base, subflows))
    if sniffers:
        _merge(egress, count_egress(sniffers, port, base, subflows))
    for _ in range(5):
        for flow in range(subflows):
            emit(flow, _DATA.pack(_END, sent, sent, time.time()))
        time.sleep(0.02)
    result: dict[str, Any] = {"egress": egress, "ports": ports}
    if went_down := sorted(set(sniff or []) - set(sniffers)):
        result["sniff_down"] = went_down  # their counts stop when they went down
    if pinned is not None:
        result["send_errors"] = pinned.errors
    return result


def port_facts(names: list[str], sysfs: str = "/sys/class/net") -> dict[str, dict[str, Any]]:
    """Each port's MTU, operational state and speed (Mbit/s, -1 unknown: a veth's, a port
    down) as the kernel says them: sysfs reads, no process started."""

    def read(name: str, item: str) -> str:
        try:
            with open(os.path.join(sysfs, name, item)) as handle:
                return handle.read().strip()
        except OSError:
            return ""

    facts: dict[str, dict[str, Any]] = {}
    for name in names:
        mtu, speed = read(name, "mtu"), read(name, "speed")
        facts[name] = {
            "mtu": int(mtu) if mtu.isdigit() else -1,
            "oper": read(name, "operstate") or "absent",
            "speed": int(speed) if speed.lstrip("-").isdigit() and int(speed) > 0 else -1,
        }
    return facts


def _merge(into: dict[str, dict[str, int]], more: dict[str, dict[str, int]]) -> None:
    for flow, by_if in more.items():
        for name, packets in by_if.items():
            into.setdefault(flow, {})[name] = into.get(flow, {}).get(name, 0) + packets


def _receiver(bind: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECV_BUFFER)
    except OSError:  # not root: as much as rmem_max allows
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
    sock.bind((bind, port))
    return sock


def socket_drops(sock: socket.socket) -> int:
    """What the kernel dropped for this UDP socket (its buffer full): the last column of
    its line in ``/proc/self/net/udp`` (of the namespace the agent runs in), found by inode."""
    inode = str(os.fstat(sock.fileno()).st_ino)
    with contextlib.suppress(OSError), open("/proc/self/net/udp") as table:
        for line in table:
            fields = line.split()
            if len(fields) >= 13 and fields[9] == inode:
                return int(fields[-1])
    return 0


class _Tally:
    """What the receiver learns of each sub-flow (packet seq modulo sub-flows) as packets
    arrive: its silences, split into the sender's own pauses and the network's share, its
    duplicates and reordered packets, and the flow's fastest and slowest transit."""

    def __init__(self, subflows: int, rate: float | None) -> None:
        self.subflows, self.rate = subflows, rate
        self.seen: set[int] = set()
        self.dups = 0
        self.last: dict[int, float] = {}  # sub-flow -> last arrival (monotonic)
        self.gap = [0.0] * subflows
        self.gap_end = [0.0] * subflows  # wall-clock time of the arrival that ended the gap
        self.highest = [-1] * subflows
        self.flow_dups, self.flow_late = [0] * subflows, [0] * subflows
        # the sender's own pauses: between two arrivals of a sub-flow, how far its send times
        # lag its schedule (the guest not running it), so a gap splits into sender and network
        self.paused, self.net_gap = [0.0] * subflows, [0.0] * subflows
        self.late_at: list[list[float]] = [[] for _ in range(subflows)]  # reordered: when
        self.last_sent: dict[int, tuple[int, float]] = {}  # sub-flow -> its newest (seq, sent)
        self.transit = [float("inf"), float("-inf")]  # fastest and slowest arrival - send time
        self.first_at = self.last_at = 0.0  # wall clock of the first and the last packet

    def arrival(self, seq: int, sent_at: float, now: float, wall: float) -> None:
        """Packet ``seq`` sent at ``sent_at`` (the sender's clock) arrived at ``now``
        (monotonic), ``wall`` (the wall clock)."""
        self.last_at = wall
        if not self.first_at:
            self.first_at = wall
        flow = seq % self.subflows
        self.transit[0], self.transit[1] = (
            min(self.transit[0], self.last_at - sent_at),
            max(self.transit[1], self.last_at - sent_at),
        )
        if flow in self.last:
            self._silence(flow, seq, sent_at, now)
        if flow not in self.last_sent or seq > self.last_sent[flow][0]:
            self.last_sent[flow] = (seq, sent_at)
        self.last[flow] = now
        if seq in self.seen:
            self.dups += 1
            self.flow_dups[flow] += 1
        elif seq < self.highest[flow]:
            self.flow_late[flow] += 1
            if len(self.late_at[flow]) < MAX_LOST_RUNS:
                self.late_at[flow].append(round(time.time(), 3))
        self.highest[flow] = max(self.highest[flow], seq)
        self.seen.add(seq)

    def _silence(self, flow: int, seq: int, sent_at: float, now: float) -> None:
        """The time since the sub-flow's last arrival, less the sender's own pause."""
        before = self.last_sent.get(flow)
        lag = 0.0
        if self.rate and before is not None and seq > before[0]:
            lag = max(0.0, sent_at - before[1] - (seq - before[0]) / self.rate)
        self.paused[flow] = max(self.paused[flow], lag)
        self.net_gap[flow] = max(self.net_gap[flow], now - self.last[flow] - lag)
        if now - self.last[flow] > self.gap[flow]:
            self.gap[flow], self.gap_end[flow] = now - self.last[flow], time.time()

    def result(self, sent: int, sock: socket.socket) -> dict[str, object]:
        interval = self.subflows / self.rate if self.rate else None
        result = summarise(
            sent,
            self.seen,
            self.subflows,
            self.gap,
            self.flow_dups,
            self.flow_late,
            interval,
            self.gap_end,
            self.paused,
            self.net_gap,
            self.late_at,
        )
        fastest, slowest = self.transit
        result["extra_delay_ms"] = (
            round((slowest - fastest) * 1000.0, 1) if slowest >= fastest else 0.0
        )
        result["receiver_dropped"] = socket_drops(sock)
        result["first_arrival"] = round(self.first_at, 3)
        result["last_arrival"] = round(self.last_at, 3)
        return result


def recv(
    bind: str,
    port: int,
    count: int,
    timeout: float,
    ready: str | None,
    subflows: int = 1,
    rate: float | None = None,
    done: str | None = None,
    flowing: str | None = None,
) -> dict[str, object]:
    sock = _receiver(bind, port)
    if ready:
        open(ready, "w").close()
    deadline = time.monotonic() + timeout
    tally = _Tally(subflows, rate)
    sent = count
    done_seen = False
    next_look = 0.0
    while (now := time.monotonic()) < deadline:
        if done and not done_seen and now >= next_look:
            next_look = now + 0.2
            if os.path.exists(done):
                done_seen = True
                deadline = min(deadline, now + DONE_GRACE_S)
        sock.settimeout(max(0.01, min(0.2, deadline - now)))
        try:
            data = sock.recv(64)
        except TimeoutError:
            continue
        if len(data) < _DATA.size:
            continue
        magic, seq, total, sent_at = _DATA.unpack(data[: _DATA.size])
        if magic == _END:
            sent = total
            break
        if magic != _MAGIC:
            continue
        now, wall = time.monotonic(), time.time()
        if not tally.first_at and flowing:
            open(flowing, "w").close()  # the first arrival: the flow is flowing
        tally.arrival(seq, sent_at, now, wall)
        if len(tally.seen) >= count:
            break
    result = tally.result(sent, sock)
    sock.close()
    return result


def longest_lost_run(seen: set[int], flow: int, sent: int, subflows: int) -> int:
    """Most consecutive packets of one sub-flow that never arrived, counting a run at its
    start or end and a sub-flow that received nothing (then: all its packets)."""
    run = longest = 0
    for seq in range(flow, sent, subflows):
        run = 0 if seq in seen else run + 1
        longest = max(longest, run)
    return longest


MAX_LOST_RUNS = 20


def lost_runs(seen: set[int], flow: int, sent: int, subflows: int) -> list[list[int]]:
    """The sub-flow's runs of lost packets as [first seq, last seq] (the first MAX_LOST_RUNS):
    with the sender's rate they place each loss in time, not only the longest silence."""
    runs: list[list[int]] = []
    for seq in range(flow, sent, subflows):
        if seq in seen:
            continue
        if runs and runs[-1][1] == seq - subflows:
            runs[-1][1] = seq
        elif len(runs) < MAX_LOST_RUNS:
            runs.append([seq, seq])
        else:
            break
    return runs


def summarise(
    sent: int,
    seen: set[int],
    subflows: int,
    gap: list[float],
    flow_dups: list[int],
    flow_late: list[int],
    interval: float | None = None,
    gap_end: list[float] | None = None,
    paused: list[float] | None = None,
    net_gap: list[float] | None = None,
    late_at: list[list[float]] | None = None,
) -> dict[str, object]:
    """Per sub-flow and in all. A sub-flow's longest silence is the longest time between two
    of its arrivals, and, with the sender's packet ``interval`` (sub-flows / rate), at least
    (its longest run of lost packets + 1) x interval: a silence at the start or the end of a
    flow, or a sub-flow that received nothing, has no two arrivals around it."""
    per_subflow: list[dict[str, Any]] = []
    for flow in range(subflows):
        expected = len(range(flow, sent, subflows))
        got = sum(1 for s in seen if s % subflows == flow and s < sent)
        run = longest_lost_run(seen, flow, sent, subflows)
        lost_silence = (run + 1) * interval if interval and run else 0.0
        silence = max(gap[flow], lost_silence)
        network = max(net_gap[flow] if net_gap else gap[flow], lost_silence)
        per_subflow.append(
            {
                "sent": expected,
                "received": got,
                "lost": max(0, expected - got),
                "lost_run": run,
                "lost_runs": lost_runs(seen, flow, sent, subflows),
                "duplicates": flow_dups[flow],
                "reordered": flow_late[flow],
                "max_gap_ms": round(silence * 1000.0, 1),
                "network_gap_ms": round(network * 1000.0, 1),
                "sender_paused_ms": round(paused[flow] * 1000.0, 1) if paused else 0.0,
                # when the longest silence between two arrivals ended (epoch s; 0: none)
                "gap_end": round(gap_end[flow], 3) if gap_end else 0.0,
                # when its reordered packets arrived (epoch s, the first MAX_LOST_RUNS)
                "reordered_at": late_at[flow] if late_at else [],
            }
        )
    received = len(seen)
    return {
        "first_seq": min(seen, default=-1),
        "sent": sent,
        "received": received,
        "lost": max(0, sent - received),
        "max_gap_ms": max((float(f["max_gap_ms"]) for f in per_subflow), default=0.0),
        "network_gap_ms": max((float(f["network_gap_ms"]) for f in per_subflow), default=0.0),
        "sender_paused_ms": max((float(f["sender_paused_ms"]) for f in per_subflow), default=0.0),
        "duplicates": sum(flow_dups),
        "reordered": sum(flow_late),
        "subflows": subflows,
        "subflows_hit": sum(1 for f in per_subflow if f["lost"]),
        "per_subflow": per_subflow,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("send", "recv"))
    for option in ("--dst", "--bind", "--src", "--pin", "--gw-mac"):  # --pin: raw frames on it
        ap.add_argument(option, default="")  # --gw-mac: to this first hop
    ap.add_argument("--port", type=int, default=5201)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--ready", default=None)
    ap.add_argument("--subflows", type=int, default=1)
    ap.add_argument("--sport-base", type=int, default=SOURCE_PORT_BASE)
    ap.add_argument("--sniff", default="", help="interfaces to count egress on (comma list)")
    ap.add_argument("--stop", default="", help="stop sending once this file exists")
    ap.add_argument("--done", default=None, help="the senders have exited once this exists")
    ap.add_argument("--flowing", default=None, help="created when the first packet arrives")
    ap.add_argument("--size", type=int, default=0, help="IP packet size (--pin)")
    a = ap.parse_args()
    if a.mode == "send":
        sniff = [i for i in a.sniff.split(",") if i]
        pinned = _Pinned(a.pin, a.gw_mac, a.src, a.dst, a.port, a.size) if a.pin else None
        args = (a.dst, a.port, a.count, a.rate, a.src, a.subflows, a.sport_base, sniff, a.stop)
        egress = send(*args, pinned)
        if sniff or pinned:
            print(json.dumps(egress))
    else:
        got = recv(
            a.bind, a.port, a.count, a.timeout, a.ready, a.subflows, a.rate, a.done, a.flowing
        )
        print(json.dumps(got))


if __name__ == "__main__":
    main()
