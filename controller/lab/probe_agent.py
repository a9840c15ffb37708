#!/usr/bin/env python3
"""Fixed-rate, sequence-numbered UDP flow (stdlib only; runs inside lab namespaces).

    probe_agent.py recv --bind IP --port P --count N --timeout S [--ready FILE]
    probe_agent.py send --dst IP --port P --count N --rate PPS [--src IP] [--subflows K]

Both ends are bounded in packet count and wall time and stop by themselves.
With ``--subflows K`` the sender spreads its packets round-robin over K sockets with
consecutive source ports (from 40000), so a bond or ECMP hashing on layer 3+4 spreads the
sub-flows over its members: with two planes, some sub-flows take each plane.
The receiver prints one JSON object: sent, received, lost, max_gap_ms (longest silence of
any one sub-flow), duplicates, subflows, subflows_hit (sub-flows that lost a packet).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import struct
import time

_DATA = struct.Struct("!4sII")  # magic, seq, total
_MAGIC, _END = b"DPLP", b"DPLE"


SOURCE_PORT_BASE = 40000


def _sockets(src: str, subflows: int) -> list[socket.socket]:
    socks = []
    for index in range(subflows):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if src or subflows > 1:
            sock.bind((src, SOURCE_PORT_BASE + index if subflows > 1 else 0))
        socks.append(sock)
    return socks


def send(dst: str, port: int, count: int, rate: float, src: str = "", subflows: int = 1) -> None:
    """Packet ``seq`` leaves from sub-flow ``seq % subflows``; the rate is the total rate."""
    socks = _sockets(src, subflows)
    interval = 1.0 / rate
    start = time.monotonic()
    for seq in range(count):
        delay = start + seq * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        with contextlib.suppress(OSError):  # no route for a moment is loss: keep the rate
            socks[seq % subflows].sendto(_DATA.pack(_MAGIC, seq, count), (dst, port))
    for _ in range(5):
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.sendto(_DATA.pack(_END, count, count), (dst, port))
        time.sleep(0.02)


def recv(
    bind: str, port: int, count: int, timeout: float, ready: str | None, subflows: int = 1
) -> dict[str, float]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((bind, port))
    if ready:
        open(ready, "w").close()
    deadline = time.monotonic() + timeout
    seen: set[int] = set()
    dups, sent, max_gap = 0, count, 0.0
    last: dict[int, float] = {}  # sub-flow (packet seq modulo sub-flows) -> last arrival
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(64)
        except TimeoutError:
            break
        if len(data) < _DATA.size:
            continue
        magic, seq, total = _DATA.unpack(data[: _DATA.size])
        if magic == _END:
            sent = total
            break
        if magic != _MAGIC:
            continue
        now = time.monotonic()
        flow = seq % subflows
        if flow in last:
            max_gap = max(max_gap, now - last[flow])
        last[flow] = now
        if seq in seen:
            dups += 1
        seen.add(seq)
        if len(seen) >= count:
            break
    received = len(seen)
    return {
        "sent": sent,
        "received": received,
        "lost": max(0, sent - received),
        "max_gap_ms": round(max_gap * 1000.0, 1),
        "duplicates": dups,
        "subflows": subflows,
        "subflows_hit": len({s % subflows for s in range(sent) if s not in seen}),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("send", "recv"))
    ap.add_argument("--dst", default="")
    ap.add_argument("--bind", default="")
    ap.add_argument("--port", type=int, default=5201)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--ready", default=None)
    ap.add_argument("--src", default="")
    ap.add_argument("--subflows", type=int, default=1)
    a = ap.parse_args()
    if a.mode == "send":
        send(a.dst, a.port, a.count, a.rate, a.src, a.subflows)
    else:
        print(json.dumps(recv(a.bind, a.port, a.count, a.timeout, a.ready, a.subflows)))


if __name__ == "__main__":
    main()
