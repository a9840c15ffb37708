"""Opening a gated ES bond's gate (``segments``) the moment its server can use it.

A gated bond's bridge port also drops what the server sends, and the
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
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from . import journal
from .segments import (
    SYSFS_NET,
    gated_members,
    lacp_serving_now,
    open_gate,
    port_states,
    ready_for_the_server,
)
from .taps import lacp_tap, read_tap

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


GATE_IDLE_S = 5.0
"""With no bond gated, how often GateWatch looks again unless a pass wakes it first. Only a
pass gates a bond, and each pass wakes it, so this is a backstop: looking every second cost
each agent about 1 % of a CPU in the lab's emulated guest."""


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
                journal.log(
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
