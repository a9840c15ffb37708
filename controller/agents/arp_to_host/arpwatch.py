"""The server's ARP heard on this leaf's ES member: the agent's entry of it goes back to the
kernel at once (``synced``)."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from . import journal, kernel
from .gate import GATE_IDLE_S
from .synced import HEAR_AGAIN_S, Synced, agents_svi, probe_line
from .taps import arp_tap, read_arp


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
        svi = agents_svi(kernel._ip_json("-4", "neigh", "show", "to", address), svis)
        if svi is not None:
            line = probe_line(address, mac, svi)
            kernel._ip_batch([line])
            self.synced.hear((address, svi), now)
            journal.log(f"{address}: its ARP reached this leaf; {line}")

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
