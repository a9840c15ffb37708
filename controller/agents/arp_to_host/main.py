"""The agent's main loop: ``ip monitor`` events, the carrier-loss fast path, paced passes
and the threads of the EVPN-MH segments."""

from __future__ import annotations

import json
import os
import select
import subprocess
import syslog
import time

from . import journal
from .arpwatch import ArpWatch
from .carrier import Ports, carrier_lost, withdraw_behind
from .gate import GateWatch
from .heal import EviHeal
from .journal import SYSLOG_IDENT
from .pacing import Pacer
from .reconcile import reconcile
from .refresh import Refresh
from .synced import Synced


def main(path: str) -> None:
    syslog.openlog(SYSLOG_IDENT, syslog.LOG_PID, syslog.LOG_DAEMON)
    with open(path) as handle:
        config = json.load(handle)
    journal.log(f"started with {path}")  # a deploy that changed what it reads, or a boot
    ports = Ports(config["bridge"]) if config.get("withdraw_on_carrier_loss") else None
    synced = Synced(config["evpn_svis"]) if config.get("evpn_svis") else None
    segments = config.get("segments") or {}
    refresh = Refresh(set(config["evpn_svis"].values())) if synced and segments else None
    monitor = subprocess.Popen(
        ["ip", "monitor", "label", "link", "neigh"], stdout=subprocess.PIPE, bufsize=0
    )
    assert monitor.stdout is not None
    fd = monitor.stdout.fileno()
    pacer = Pacer()
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
            asking = ask_zebra and synced is not None
            missing = reconcile(config, ports, synced, ask_zebra=asking, refresh=refresh)
            zebra_by = float("inf") if synced is None else synced.next_ask(time.monotonic())
            pacer.done(now, ask_zebra, missing, zebra_by)
            if watch is not None:
                watch.wake.set()
