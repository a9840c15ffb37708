#!/usr/bin/env python3
"""The lab guest's syslog (stdlib only; runs as root in the guest).

    syslog_sink.py SOCKET LOGFILE [--max-bytes N]

The switches' FRR logs to syslog (the rendered ``log syslog informational``, as on a real
Linux + FRR switch), and so does lldpd; the lab guest runs no syslog daemon, so their
messages were lost and a daemon that died in the lab left no trace. This binds SOCKET
(``/dev/log``) and appends each message to LOGFILE as ``<guest epoch> <node> <message>``.
The node is the lab namespace of the sending process (its network namespace, matched
against ``/run/netns``; ``-`` for the guest itself), taken from the sender's credentials
(SO_PASSCRED), so one file serves every switch. LOGFILE is kept under ``--max-bytes`` by
moving it to LOGFILE.1 when full (it lives in the guest's memory).
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import time

UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid


def namespaces() -> dict[int, str]:
    """inode of each named network namespace -> its name."""
    names = {}
    try:
        entries = os.listdir("/run/netns")
    except OSError:
        return {}
    for name in entries:
        try:
            names[os.stat(f"/run/netns/{name}").st_ino] = name
        except OSError:
            continue
    return names


class Tagger:
    """pid -> lab node name, cached per pid (a cache miss re-reads /run/netns)."""

    def __init__(self) -> None:
        self.by_inode: dict[int, str] = {}
        self.by_pid: dict[int, str] = {}

    def node(self, pid: int) -> str:
        if pid in self.by_pid:
            return self.by_pid[pid]
        try:
            inode = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return "?"  # gone already
        if inode not in self.by_inode:
            self.by_inode = namespaces()
        name = self.by_inode.get(inode, "-")
        if len(self.by_pid) > 4096:
            self.by_pid.clear()
        self.by_pid[pid] = name
        return name


def serve(sock_path: str, log_path: str, max_bytes: int) -> None:
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    os.chmod(sock_path, 0o666)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    tagger = Tagger()
    out = open(log_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
    while True:
        data, ancillary, _flags, _addr = sock.recvmsg(16384, socket.CMSG_SPACE(UCRED.size))
        pid = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = UCRED.unpack(payload[: UCRED.size])[0]
        text = data.decode("utf-8", "replace").rstrip("\n\x00")
        out.write(f"{time.time():.3f} {tagger.node(pid) if pid else '?'} {text}\n")
        if out.tell() > max_bytes:
            out.close()
            os.replace(log_path, f"{log_path}.1")
            out = open(log_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("socket")
    parser.add_argument("logfile")
    parser.add_argument("--max-bytes", type=int, default=32 * 1024 * 1024)
    args = parser.parse_args()
    serve(args.socket, args.logfile, args.max_bytes)


if __name__ == "__main__":
    main()
