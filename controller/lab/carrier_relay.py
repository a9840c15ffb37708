"""Carry a cable's carrier between the two instances of a split lab (controller/lab/split.py).

Runs in the root namespace of each instance (the guest's python3, standard library only).
A cable between the instances is a tunnel glued to a veth: when a node's port goes down,
the glue end in its instance loses its carrier, but nothing crosses the tunnel. This agent
watches its instance's glue ends (``ip -o monitor link``) and tells the other instance's
agent, over UDP on the link between them, whether the node's port of each cable is
administratively up; the other agent sets its own glue end of that cable up or down to
match, so the node's port there has or loses its carrier, as at the far end of a real cable.

A glue end that is up and has its carrier means its node port is up (a veth has carrier
when its peer is up). Anything else is asked of the node's port directly (``ip -n NS link
show dev PORT``, from the map file: one line ``VNI NAMESPACE PORT`` per cable end in this
instance): while this agent holds a glue end down (the far port is down) its carrier says
nothing, and without asking, two ports down at once (the glue ends are made before the
ports come up) held both glue ends down for good; a glue end just set up shows no carrier
for a moment, which, believed, had the two agents flap each other's ends without end.
Every few seconds each agent repeats what it sees, so a datagram lost, or an agent started
after the other, changes nothing for long.

Usage: ``carrier_relay.py PREFIX LOCAL_ADDRESS PEER_ADDRESS PORT MAP_FILE``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time

RESYNC_S = float(os.environ.get("DPCTL_CARRIER_RESYNC_S", "3"))
"""How often each agent repeats what it sees (the tests lengthen it to tell the monitor's
prompt report from the resync's)."""
FLAGS = re.compile(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>")


def parse(line: str, glue: re.Pattern[str]) -> tuple[str, bool, bool] | None:
    """(vni, administratively up, carrier) of a glue end's ``ip -o link`` line, else None."""
    if line.startswith("Deleted"):
        return None
    match = FLAGS.match(line)
    if not match or not (name := glue.fullmatch(match.group(1))):
        return None
    flags = set(match.group(2).split(","))
    return name.group(1), "UP" in flags, "LOWER_UP" in flags and "NO-CARRIER" not in flags


def read_map(text: str) -> dict[str, tuple[str, str]]:
    """VNI -> (namespace, port) of this instance's cable ends."""
    ends = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3:
            ends[fields[0]] = (fields[1], fields[2])
    return ends


class Relay:
    def __init__(
        self, prefix: str, local: str, peer: str, port: int, ends: dict[str, tuple[str, str]]
    ) -> None:
        self.prefix = prefix
        self.glue = re.compile(re.escape(prefix) + r"g(\d+)")
        self.peer = (peer, port)
        self.ends = ends
        self.told: dict[str, bool] = {}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((local, port))

    def report(self, vni: str, admin_up: bool, carrier: bool, again: bool = False) -> None:
        """Tell the other instance whether this end's node port is up. A glue end up with
        its carrier says so; anything else asks the port itself: a glue end held down says
        nothing, and one just set up shows no carrier for a moment (trusting that, the two
        agents set each other's ends down and up without end). The monitor tells only a
        change; the resync (``again``) repeats."""
        if vni not in self.ends:
            return
        up = (admin_up and carrier) or self.port_up(*self.ends[vni])
        if not again and self.told.get(vni) == up:
            return
        self.told[vni] = up
        self.sock.sendto(f"{vni} {'up' if up else 'down'}".encode(), self.peer)

    @staticmethod
    def port_up(namespace: str, port: str) -> bool:
        out = subprocess.run(
            ["ip", "-n", namespace, "-o", "link", "show", "dev", port],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        match = FLAGS.match(out)
        return match is not None and "UP" in match.group(2).split(",")

    def watch(self) -> None:
        with subprocess.Popen(
            ["ip", "-o", "monitor", "link"], stdout=subprocess.PIPE, text=True
        ) as monitor:
            assert monitor.stdout is not None
            for line in monitor.stdout:
                if parsed := parse(line, self.glue):
                    self.report(*parsed)

    def resync(self) -> None:
        while True:
            out = subprocess.run(
                ["ip", "-o", "link", "show"], capture_output=True, text=True, check=False
            ).stdout
            for line in out.splitlines():
                if parsed := parse(line, self.glue):
                    self.report(*parsed, again=True)
            time.sleep(RESYNC_S)

    def follow(self) -> None:
        while True:
            data, _addr = self.sock.recvfrom(64)
            vni, _sep, state = data.decode(errors="replace").partition(" ")
            if vni.isdigit() and state in ("up", "down"):
                subprocess.run(
                    ["ip", "link", "set", f"{self.prefix}g{vni}", state],
                    capture_output=True,
                    check=False,
                )


def main(argv: list[str]) -> None:
    prefix, local, peer, port, map_file = argv
    with open(map_file) as fh:
        ends = read_map(fh.read())
    relay = Relay(prefix, local, peer, int(port), ends)
    for target in (relay.watch, relay.resync):
        threading.Thread(target=target, daemon=True).start()
    relay.follow()


if __name__ == "__main__":
    main(sys.argv[1:])
