"""The split lab's carrier relay (controller/lab/carrier_relay.py), run for real: two network
namespaces stand for the two instances, each with a glue veth whose other end is "the node's
port", joined by a veth pair with an address at each end. A port set down on one side must
take the far port's carrier with it, and bring it back when it comes up; a port down on both
sides must stay down on both until each comes up."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.lab import carrier_relay

RELAY = Path(carrier_relay.__file__)
PREFIX = "dqr-"
SLOW_RESYNC_S = 60.0
SIDES = {"a": "10.211.0.1", "b": "10.211.0.2"}


def test_parse_reads_admin_state_and_carrier_of_glue_ends_only() -> None:
    glue = re.compile(r"dqr-g(\d+)")
    down = (
        "7: dqr-g100@if6: <NO-CARRIER,BROADCAST,MULTICAST,UP,M-DOWN> mtu 9300 state LOWERLAYERDOWN"
    )
    up = "7: dqr-g100@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9300 state UP"
    admin_down = "7: dqr-g101@if6: <BROADCAST,MULTICAST> mtu 9300 state DOWN"
    assert carrier_relay.parse(down, glue) == ("100", True, False)
    assert carrier_relay.parse(up, glue) == ("100", True, True)
    assert carrier_relay.parse(admin_down, glue) == ("101", False, False)
    assert carrier_relay.parse("8: dqr-x100: <BROADCAST,UP,LOWER_UP> mtu 1500", glue) is None
    assert carrier_relay.parse("Deleted 7: dqr-g100@if6: <BROADCAST> mtu 1500", glue) is None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _carrier(ns: str, dev: str) -> bool:
    out = subprocess.run(
        ["ip", "-n", ns, "-o", "link", "show", "dev", dev], capture_output=True, text=True
    ).stdout
    return "LOWER_UP" in out and "NO-CARRIER" not in out


def _wait(ns: str, dev: str, carrier: bool, timeout: float = 10.0) -> float:
    began = time.monotonic()
    while _carrier(ns, dev) != carrier:
        if time.monotonic() - began > timeout:
            raise AssertionError(f"{ns} {dev}: carrier still {not carrier} after {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - began


def _start_relays(
    tmp_path: Path, names: list[str], resync_s: float = carrier_relay.RESYNC_S
) -> list[subprocess.Popen[bytes]]:
    """One relay per side; ``resync_s`` long: a change can only travel by the monitor."""
    env = {**os.environ, "DPCTL_CARRIER_RESYNC_S": str(resync_s)}
    relays = []
    peers = list(SIDES.values())
    for ns, me, peer in ((names[0], peers[0], peers[1]), (names[1], peers[1], peers[0])):
        ends = tmp_path / f"{ns}.map"
        ends.write_text(f"100 {ns} port\n")
        argv = [sys.executable, str(RELAY), PREFIX, me, peer, "4790", str(ends)]
        relays.append(subprocess.Popen(["ip", "netns", "exec", ns, *argv], env=env))
    return relays


@pytest.fixture
def sides(tmp_path: Path) -> Iterator[list[str]]:
    """The two sides built as a lab build makes them: glue ends up, node ports still down."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2 (network namespaces)")
    names = [f"{PREFIX}{side}" for side in SIDES]
    try:
        for ns in names:
            _ip("netns", "add", ns)
        _ip("link", "add", "link0", "netns", names[0], "type", "veth", "peer", "name", "link0")
        _ip("link", "set", "link0", "netns", names[1])
        for ns, address in zip(names, SIDES.values(), strict=True):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "addr", "add", f"{address}/30", "dev", "link0")
            _ip("-n", ns, "link", "set", "link0", "up")
            _ip("-n", ns, "link", "add", "port", "type", "veth", "peer", "name", f"{PREFIX}g100")
            _ip("-n", ns, "link", "set", f"{PREFIX}g100", "up")
        yield names
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def two_sides(sides: list[str], tmp_path: Path) -> Iterator[None]:
    """Both ports up, the relays running, each port with its carrier. The resync is
    slowed to a minute once the ports are up, so what follows travels by the monitor."""
    for ns in sides:
        _ip("-n", ns, "link", "set", "port", "up")
    relays = _start_relays(tmp_path, sides, resync_s=SLOW_RESYNC_S)
    try:
        time.sleep(2.0)  # each relay's `ip monitor` subscribed (an event before it is lost)
        _wait(sides[0], "port", True)
        _wait(sides[1], "port", True)
        yield
    finally:
        for relay in relays:
            relay.kill()
            relay.wait()


def test_ports_that_come_up_after_the_relays_started_get_their_carrier(
    sides: list[str], tmp_path: Path
) -> None:
    """As in a lab build: the relays see both glue ends without carrier at first and hold
    both down; each port then comes up, and both must end with their carrier."""
    relays = _start_relays(tmp_path, sides)
    try:
        time.sleep(1.0)  # both have reported "down" and held the other's glue end down
        for ns in sides:
            _ip("-n", ns, "link", "set", "port", "up")
        for ns in sides:
            _wait(ns, "port", True, timeout=3 * carrier_relay.RESYNC_S + 2)
    finally:
        for relay in relays:
            relay.kill()
            relay.wait()


def test_a_port_down_takes_the_far_ports_carrier_and_brings_it_back(two_sides: None) -> None:
    a, b = (f"{PREFIX}{side}" for side in SIDES)
    _ip("-n", a, "link", "set", "port", "down")
    _wait(b, "port", False)  # within 10 s, with no resync for a minute: the monitor told
    time.sleep(1.0)
    assert not _carrier(b, "port")  # and nothing brought it back
    _ip("-n", a, "link", "set", "port", "up")
    _wait(b, "port", True)
    _wait(a, "port", True)


def test_both_ports_down_stay_down_until_each_comes_up(two_sides: None) -> None:
    a, b = (f"{PREFIX}{side}" for side in SIDES)
    _ip("-n", a, "link", "set", "port", "down")
    _wait(b, "port", False)
    _ip("-n", b, "link", "set", "port", "down")
    _ip("-n", a, "link", "set", "port", "up")
    time.sleep(1.0)
    assert not _carrier(a, "port")  # its far end is still down
    _ip("-n", b, "link", "set", "port", "up")
    _wait(a, "port", True)
    _wait(b, "port", True)
