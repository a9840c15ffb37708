"""The ARP-to-host agent against the real kernel, in network namespaces of this test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.agents import arp_to_host

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("bridge") is None,
    reason="needs root and iproute2 (network namespaces)",
)


def sh(script: str) -> str:
    return subprocess.run(["sh", "-ec", script], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def leaf(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A 'leaf' namespace (bridge br0 with the gateway, port p1) and a 'server' behind p1."""
    tag = uuid.uuid4().hex[:6]
    leaf_ns, srv_ns = f"dpd-ut-leaf-{tag}", f"dpd-ut-srv-{tag}"
    sh(
        f"""
ip netns add {leaf_ns}; ip netns add {srv_ns}
ip -n {leaf_ns} link add p1 type veth peer name eth0 netns {srv_ns}
ip -n {leaf_ns} link add br0 type bridge
ip -n {leaf_ns} link set p1 master br0
ip -n {leaf_ns} link set p1 up; ip -n {leaf_ns} link set br0 up
ip -n {leaf_ns} address add 10.9.0.1/29 dev br0
ip -n {srv_ns} address add 10.9.0.2/29 dev eth0
ip -n {srv_ns} link set eth0 up
ip netns exec {srv_ns} ping -c 2 -i 0.2 -W 2 10.9.0.1 >/dev/null
"""
    )
    try:
        yield leaf_ns, srv_ns
    finally:
        subprocess.run(["ip", "netns", "del", leaf_ns], check=False)
        subprocess.run(["ip", "netns", "del", srv_ns], check=False)


def _config(withdraw: bool) -> dict[str, object]:
    """The agent's config for the fixture's leaf: br0, its /29, table 100."""
    return {
        "table": 100,
        "interfaces": ["br0"],
        "prefixes": ["10.9.0.0/29"],
        "bridge": "br0",
        "withdraw_on_carrier_loss": withdraw,
    }


def _python_in(ns: str, code: str, config: dict[str, object]) -> str:
    """Run ``code`` (given the agent's config as argv[1]) in namespace ``ns``: its stdout."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        ["ip", "netns", "exec", ns, "python3", "-c", code, json.dumps(config)],
        check=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    ).stdout


def _agent(ns: str, withdraw: bool) -> tuple[str, str]:
    """Reconcile inside ``ns``, take p1 down (if ``withdraw``), reconcile again: the table
    before and the table and neighbours after."""
    code = (
        "import json,sys; from controller.agents import arp_to_host as a; "
        "c=json.loads(sys.argv[1]); p=a.Ports('br0') if c['withdraw_on_carrier_loss'] else None; "
        "a.reconcile(c,p); a.reconcile(c,p); print(sorted(a.present(100))); import subprocess; "
        f"subprocess.run(['ip','link','set','p1','down'] if {withdraw!r} else ['true']); "
        "a.reconcile(c,p)"
    )
    before = _python_in(ns, code, _config(withdraw))
    return before, sh(f"ip -n {ns} route show table 100; ip -n {ns} neigh show dev br0")


def test_port_carrier_loss_withdraws_the_host_route_at_once(leaf: tuple[str, str]) -> None:
    leaf_ns, _ = leaf
    before, after = _agent(leaf_ns, withdraw=True)
    assert "('10.9.0.2', 'br0')" in before
    assert "10.9.0.2" not in after, after  # route and neighbour gone right after carrier loss


def test_without_carrier_loss_withdrawal_the_route_stays(leaf: tuple[str, str]) -> None:
    leaf_ns, _ = leaf
    _, after = _agent(leaf_ns, withdraw=False)
    assert f"10.9.0.2 dev br0 proto {arp_to_host.PROTO}" in after, after


def test_running_agent_withdraws_on_carrier_loss_within_a_second(
    leaf: tuple[str, str], tmp_path: Path
) -> None:
    """The agent's own loop (ip monitor, paced passes) against the kernel: the /32 appears,
    and goes within a second of the port losing carrier."""
    leaf_ns, _ = leaf
    config = tmp_path / "arp-to-host.json"
    config.write_text(json.dumps(_config(withdraw=True)))
    agent = Path(arp_to_host.__file__)
    proc = subprocess.Popen(["ip", "netns", "exec", leaf_ns, "python3", str(agent), str(config)])
    try:
        route = f"ip -n {leaf_ns} route show table 100 10.9.0.2/32 2>/dev/null || true"
        deadline = time.monotonic() + 10
        while not sh(route).strip():
            assert time.monotonic() < deadline, "no /32 from the running agent"
            time.sleep(0.1)
        time.sleep(1.5)  # past the first passes: the withdrawal must come from the link event
        sh(f"ip -n {leaf_ns} link set p1 down")
        down = time.monotonic()
        while sh(route).strip():
            assert time.monotonic() - down < 1.0, "the /32 outlived carrier loss by a second"
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_carrier_loss_fast_path_acts_on_the_monitor_line_alone(leaf: tuple[str, str]) -> None:
    """The fast path, without a pass: the kernel's own `ip monitor label link` lines for the
    port's carrier loss name the port, and the neighbours the last pass saw behind it lose
    their entry and /32 at once."""
    leaf_ns, _ = leaf
    code = (
        "import json,subprocess,sys,time; from controller.agents import arp_to_host as a; "
        "c=json.loads(sys.argv[1]); p=a.Ports('br0'); a.reconcile(c,p); a.reconcile(c,p); "
        "print('before', sorted(a.present(100)), p.behind); "
        "m=subprocess.Popen(['ip','monitor','label','link'],stdout=subprocess.PIPE,text=True); "
        "time.sleep(0.5); subprocess.run(['ip','link','set','p1','down']); "
        "lines=[m.stdout.readline().rstrip() for _ in range(2)]; m.terminate(); "
        "down=a.carrier_lost(lines,'br0'); print('down', sorted(down)); "
        "print('ran', a.withdraw_behind(p, down, 100))"
    )
    out = _python_in(leaf_ns, code, _config(withdraw=True))
    assert "('10.9.0.2', 'br0')" in out.split("before", 1)[1].split("\n", 1)[0], out
    assert "down ['p1']" in out, out
    after = sh(f"ip -n {leaf_ns} route show table 100; ip -n {leaf_ns} neigh show dev br0")
    assert "10.9.0.2" not in after, (out, after)


def test_carrier_lost_reads_only_the_bridges_ports_going_down() -> None:
    lines = [
        "[LINK]3: swp1: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9216 master br0 state DOWN ",
        "    link/ether a6:bd:d7:5c:c7:7b",
        "[LINK]4: swp2@if3: <BROADCAST,MULTICAST> mtu 9216 qdisc prio master br0 state DOWN "
        "group default ",
        "[LINK]5: swp3@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9216 master br0 state UP ",
        "[LINK]6: swp4@if5: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9216 state DOWN ",
        "[LINK]7: swp5@if6: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9216 master br1 state DOWN ",
        "[LINK]Deleted 8: swp6: <NO-CARRIER,BROADCAST,MULTICAST,UP> master br0 state DOWN ",
        "[NEIGH]10.9.0.2 dev br0 lladdr 1e:a6:0d:d4:63:ae REACHABLE",
    ]
    assert arp_to_host.carrier_lost(lines, "br0") == {"swp1", "swp2"}
