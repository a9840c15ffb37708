"""Fast tests of the lab runtime's pure parts (no namespaces, no QEMU)."""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controller.agents import probe_agent
from controller.lab import (
    LabCable,
    LabError,
    LabNode,
    LabTopology,
    LabTopologyError,
    down,
    kernel,
    scripts,
    syslog_sink,
)
from controller.lab.errors import LabCommandError
from controller.lab.executor import LocalExecutor, atomic_write_command
from controller.lab.session import parse_syslog_message
from controller.lab.state import LabState, NodeState, load_state
from controller.lab.topology import mgmt_addresses, validate

TOPO = LabTopology(
    name="unit",
    mgmt_subnet="172.30.0.0/29",
    nodes=(
        LabNode("leaf1", "switch", "leaf", 1, ("swp1", "swp2", "swp9")),
        LabNode("spine1", "switch", "spine", 1, ("swp1",)),
        LabNode("srv1", "server", "server", None, ("nic1p1",)),
    ),
    cables=(
        LabCable("leaf1", "swp1", "spine1", "swp1"),
        LabCable("leaf1", "swp2", "srv1", "nic1p1"),
    ),
)


def test_mgmt_addresses_bridge_first() -> None:
    bridge, addrs, plen = mgmt_addresses(TOPO)
    assert bridge == "172.30.0.1"
    assert addrs == {"leaf1": "172.30.0.2", "spine1": "172.30.0.3", "srv1": "172.30.0.4"}
    assert plen == 29


@pytest.mark.parametrize(
    ("topo", "message"),
    [
        (replace(TOPO, mgmt_subnet="172.30.0.0/30"), "too small"),
        (replace(TOPO, cables=(*TOPO.cables, LabCable("leaf1", "swp1", "srv1", "x"))), "port"),
        (replace(TOPO, nodes=(*TOPO.nodes, TOPO.nodes[0])), "duplicate"),
        (
            replace(TOPO, nodes=(LabNode("Leaf", "switch", "leaf", 1, ("swp1",)),)),
            "bad node name",
        ),
        (
            replace(TOPO, nodes=(LabNode("l", "switch", "leaf", 1, ("a-very-long-port-name",)),)),
            "bad port",
        ),
        (replace(TOPO, nodes=(LabNode("l", "switch", "leaf", 1, ("mgmt0",)),)), "bad port"),
    ],
)
def test_validate_rejects(topo: LabTopology, message: str) -> None:
    with pytest.raises(LabTopologyError, match=message):
        validate(topo, "dpa-")


def test_mgmt_addresses_keep_a_nodes_own_address() -> None:
    """A fabric with servers not racked yet has gaps in its management addresses: a node
    that names its address keeps it, the others take the next free one in order."""
    srv = replace(TOPO.nodes[2], mgmt_ip="172.30.0.6")
    _bridge, addrs, _plen = mgmt_addresses(replace(TOPO, nodes=(*TOPO.nodes[:2], srv)))
    assert addrs == {"leaf1": "172.30.0.2", "spine1": "172.30.0.3", "srv1": "172.30.0.6"}


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("172.30.0.9", "node srv1: management address 172.30.0.9 not a host of 172.30.0.0/29"),
        ("172.30.0.7", "node srv1: management address 172.30.0.7 not a host of 172.30.0.0/29"),
        ("172.30.0.1", "node srv1: management address 172.30.0.1 not a host of 172.30.0.0/29"),
        ("not-an-ip", "node srv1: management address not-an-ip not a host of 172.30.0.0/29"),
        ("172.30.0.2", "two nodes have the same management address"),
    ],
)
def test_mgmt_addresses_refuse_a_bad_own_address(address: str, message: str) -> None:
    srv = replace(TOPO.nodes[2], mgmt_ip=address)
    with pytest.raises(LabTopologyError) as info:
        mgmt_addresses(replace(TOPO, nodes=(*TOPO.nodes[:2], srv)))
    assert str(info.value) == message


def test_validate_rejects_bad_prefix() -> None:
    with pytest.raises(LabTopologyError, match="prefix"):
        validate(TOPO, "Bad_")


def test_build_script_batches_links_and_starts_daemons() -> None:
    plan = scripts.BuildPlan(topo=TOPO, prefix="dpa-", state_path="/run/dpl/state")
    text = scripts.build_script(plan)
    assert "netns add dpa-leaf1" in text
    assert "link add swp1 netns dpa-leaf1 type veth peer name swp1 netns dpa-spine1" in text
    assert "link add nic1p1" not in text  # cabled: made as veth peer, not created alone
    assert "link add swp9 type dummy" in text  # uncabled port exists, down
    # each switch's daemons in its namespace, then its watchfrr; not on servers
    watchfrr = (
        "watchfrr -N dpa-leaf1 -d -F traditional --netns -t 600 -T 60 zebra bgpd staticd bfdd"
    )
    assert watchfrr in text and "-N dpa-srv1" not in text
    zebra = (
        "nsenter --net=/run/netns/dpa-leaf1 sh -c " + "'\"'\"'/usr/lib/frr/zebra -N dpa-leaf1 -d"
    )
    assert text.index(zebra) < text.index(watchfrr)
    assert "unshare -u sh -c 'hostname leaf1" in text
    assert "mount --bind /run/frr/dpa-leaf1 /run/frr" in text
    assert "ListenAddress=172.30.0.4" in text  # servers get sshd too
    assert "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding" in text
    assert text.count("ip -batch") == 1 + len(TOPO.nodes)


def test_guest_build_starts_its_syslog_before_any_daemon() -> None:
    guest = scripts.build_script(scripts.BuildPlan(TOPO, "dpa-", "/s", syslog=True))
    start = "setsid -f python3 /run/dpa-lab/syslog_sink.py /dev/log /run/dpa-lab/log/syslog.log"
    assert start in guest
    assert guest.index(start) < guest.index("/usr/lib/frr/zebra") < guest.index("lldpd -u")
    native = scripts.build_script(scripts.BuildPlan(TOPO, "dpa-", "/s"))
    assert "syslog_sink" not in native  # the host's own syslog is left alone


def test_syslog_sink_keeps_each_message_with_its_node(tmp_path: Path) -> None:
    """Messages sent to the sink's socket land in its file with the sender's node ("-": a
    process outside the lab's namespaces, as this test is); a full file moves to .1."""
    sock, log = tmp_path / "log.sock", tmp_path / "syslog.log"
    sink = subprocess.Popen(
        [sys.executable, syslog_sink.__file__, str(sock), str(log), "--max-bytes", "400"]
    )
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        sender = logging.handlers.SysLogHandler(address=str(sock))
        logger = logging.getLogger("dpi-sink-test")
        logger.addHandler(sender)
        logger.setLevel(logging.INFO)
        for n in range(8):
            logger.warning("bgpd[42]: message %d of the test", n)
        sender.close()
        deadline = time.monotonic() + 10
        while "message 7" not in "".join(p.read_text() for p in tmp_path.glob("syslog.log*")):
            assert time.monotonic() < deadline, "the sink did not write the last message"
            time.sleep(0.05)
    finally:
        sink.terminate()
        sink.wait(10)
    kept = Path(f"{log}.1").read_text().splitlines() + log.read_text().splitlines()
    assert len(kept) == 8
    stamp, node, message = kept[0].split(" ", 2)
    assert abs(float(stamp) - time.time()) < 60 and node == "-"
    assert parse_syslog_message(message) == {
        "severity": "warning",
        "message": "bgpd[42]: message 0 of the test",
    }


def test_syslog_sink_names_the_senders_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    ours = Path("/proc/self/ns/net").stat().st_ino
    monkeypatch.setattr(syslog_sink, "namespaces", lambda: {ours: "dpa-leaf1"})
    tagger = syslog_sink.Tagger()
    assert tagger.node(os.getpid()) == "dpa-leaf1"
    assert tagger.node(2**22 + 1) == "?"  # no such process (pid_max is at most 2**22)


def test_syslog_lines_without_a_priority_are_kept_whole() -> None:
    assert parse_syslog_message("<30>Dec  2 11:39:51 zebra[7]: up") == {
        "severity": "info",
        "message": "zebra[7]: up",
    }
    assert parse_syslog_message("not syslog") == {"severity": "", "message": "not syslog"}


def test_frr_starts_empty() -> None:
    text = scripts.build_script(scripts.BuildPlan(TOPO, "dpa-", "/s"))
    assert ": > /etc/frr/dpa-leaf1/frr.conf" in text
    assert 'watchfrr_options="--netns -t 600 -T 60"' in text
    assert 'bfdd_wrap="/usr/bin/chrt --fifo 50"' in text  # no false BFD downs under load


def test_first_frr_start_uses_the_options_watchfrr_restarts_with() -> None:
    """The lab starts each daemon itself; watchfrr restarts one through watchfrr.sh, which
    reads the daemons file: both from the same options, so a restarted daemon runs as the
    first did."""
    daemons = ("bgpd", "bfdd")
    start = scripts.frr_start_command("dpa-leaf1", daemons)
    lines = scripts.frr_daemons_file(daemons).splitlines()
    assert 'frr_profile="traditional"' in lines
    for daemon, options in scripts.frr_daemon_options(daemons).items():
        assert f'{daemon}_options="{options}"' in lines
        wrap = "/usr/bin/chrt --fifo 50 " if daemon == "bfdd" else ""
        assert f"{wrap}/usr/lib/frr/{daemon} -N dpa-leaf1 -d -F traditional {options}" in start
    assert list(scripts.frr_daemon_options(daemons)) == ["zebra", "bgpd", "staticd", "bfdd"]
    with pytest.raises(LabError, match="not an optional FRR daemon: 'zebra'"):
        scripts.frr_start_command("dpa-leaf1", ("zebra",))


def test_status_reads_pid_files_without_a_process_each(tmp_path: Path) -> None:
    """The status script runs every second while lab up waits for FRR: its pid files are read
    by the shell itself (each exec costs 15-65 ms in a guest). Run here against real pid
    files: a live process, a dead one, none."""
    live = subprocess.Popen(["sleep", "30"])
    try:
        run = tmp_path / "run"
        run.mkdir()
        (run / "a.sshd.pid").write_text(f"{live.pid}\n")
        (run / "b.sshd.pid").write_text("999999999\n")
        script = scripts.status_script([("a", "ns-a", False), ("b", "ns-b", False)], "x")
        script = script.replace("/run/xlab", str(run))
        assert "cat " not in script
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
        assert out.split("\n")[:2] == ["a 0 1 -", "b 0 0 -"]
    finally:
        live.kill()
        live.wait()


def test_cpio_layout() -> None:
    cpio = kernel._Cpio()
    cpio.add_dir("bin")
    cpio.add_file("init", b"#!/bin/sh\n", 0o755)
    data = cpio.finish()
    assert data.startswith(b"070701")
    assert b"init\0" in data and data.rstrip(b"\0").endswith(b"TRAILER!!!")
    assert len(data) % 4 == 0


def test_state_roundtrip(tmp_path: Path) -> None:
    state = LabState(
        name="x",
        prefix="dpa-",
        mode="guest",
        state_dir=str(tmp_path),
        mgmt_subnet="172.30.0.0/24",
        mgmt_bridge_ip="172.30.0.1",
        nodes={"leaf1": NodeState("switch", "leaf", 1, "dpa-leaf1", "172.30.0.2")},
        guest_pid=123,
        guest_port=22,
        guest_host="169.254.7.2",
        substrate="uml",
        substrate_reason="host kernel lacks bonding",
    )
    state.save()
    assert load_state(tmp_path) == state
    assert json.loads((tmp_path / "lab.json").read_text())["guest_port"] == 22
    assert state.jump == ("169.254.7.2", 22)


def test_a_state_from_before_the_substrates_is_a_qemu_guest(tmp_path: Path) -> None:
    from controller.lab import substrate

    old = {"name": "x", "prefix": "dpa-", "mode": "guest", "state_dir": str(tmp_path)}
    old |= {"mgmt_subnet": "172.30.0.0/24", "mgmt_bridge_ip": "172.30.0.1", "nodes": {}}
    (tmp_path / "lab.json").write_text(json.dumps({**old, "guest_pid": 7, "guest_port": 2222}))
    state = load_state(tmp_path)
    assert state.jump == ("127.0.0.1", 2222)
    assert substrate.of_state(state).name == "tcg"


def test_down_is_idempotent_on_missing_state(tmp_path: Path) -> None:
    sdir = tmp_path / "nothing-here"
    report = down(sdir, prefix="dpa-unit-")
    assert report == {"guest_stopped": [], "namespaces_removed": [], "taps_removed": []}
    assert down(sdir, prefix="dpa-unit-") == report


def test_probe_agent_on_loopback() -> None:
    """Sender and receiver of the probe, both on 127.0.0.1, bounded in count and time."""
    result: dict[str, float] = {}
    ready = threading.Event()

    def receive() -> None:
        result.update(probe_agent.recv("127.0.0.1", 45871, 50, 10.0, None))

    thread = threading.Thread(target=receive)
    thread.start()
    ready.wait(0.3)
    probe_agent.send("127.0.0.1", 45871, 50, 500.0)
    thread.join(15)
    assert result["sent"] == 50
    assert result["received"] + result["lost"] == 50
    assert result["received"] >= 45
    assert result["max_gap_ms"] >= 0


def test_probe_receiver_says_when_its_flow_arrived(tmp_path: Path) -> None:
    """first/last arrival bracket the flow, and --flowing appears with its first packet."""
    result: dict[str, float] = {}
    flowing = tmp_path / "flowing"

    def receive() -> None:
        result.update(
            probe_agent.recv("127.0.0.1", 45879, 40, 10.0, None, 1, 200.0, None, str(flowing))
        )

    thread = threading.Thread(target=receive)
    thread.start()
    time.sleep(0.3)
    assert not flowing.exists()
    before = time.time()
    probe_agent.send("127.0.0.1", 45879, 40, 200.0)
    thread.join(15)
    assert flowing.exists()
    # the agent reports epoch seconds rounded to the millisecond
    assert before - 0.001 <= result["first_arrival"] < result["last_arrival"] <= time.time()
    assert result["last_arrival"] - result["first_arrival"] >= 0.15  # 40 packets at 200/s


def test_probe_agent_subflows_from_a_bound_source() -> None:
    """Four sub-flows from consecutive source ports of a bound address, all delivered."""
    result: dict[str, float] = {}
    thread = threading.Thread(
        target=lambda: result.update(probe_agent.recv("127.0.0.1", 45872, 80, 10.0, None, 4))
    )
    thread.start()
    time.sleep(0.3)
    probe_agent.send("127.0.0.1", 45872, 80, 400.0, src="127.0.0.1", subflows=4)
    thread.join(15)
    assert result["sent"] == 80 and result["subflows"] == 4
    assert result["received"] == 80 and result["subflows_hit"] == 0
    assert 0 < result["max_gap_ms"] < 1000


def test_probe_agent_stops_early_on_the_stop_file(tmp_path: Path) -> None:
    """A probe sized for 20 s (1,000 at 50 pps) ends within a second of its stop file and
    reports what it sent until then, nothing lost; without the file it would go on."""
    stop = tmp_path / "probe.stop"
    result: dict[str, float] = {}
    thread = threading.Thread(
        target=lambda: result.update(probe_agent.recv("127.0.0.1", 45874, 1000, 30.0, None, 2))
    )
    thread.start()
    time.sleep(0.3)
    threading.Timer(1.0, stop.touch).start()
    began = time.monotonic()
    probe_agent.send("127.0.0.1", 45874, 1000, 50.0, subflows=2, stop=str(stop))
    took = time.monotonic() - began
    thread.join(15)
    assert took < 3.0, took
    assert 30 <= result["sent"] < 150, result
    assert result["received"] == result["sent"] and result["lost"] == 0


@pytest.mark.parametrize("held_by", ["the sender", "the network"])
def test_probe_tells_a_sender_pause_from_a_network_silence(held_by: str) -> None:
    """0.6 s without packets, nothing lost, on loopback at 100/s in 2 sub-flows. The sender
    stamps each packet with its clock: paused itself, its stamps show the pause (the emulated
    guest not running it); on time but held on the way, its stamps keep the schedule and the
    packets arrive late (a queue, an unresolved neighbour)."""
    result: dict[str, float] = {}
    thread = threading.Thread(
        target=lambda: result.update(
            probe_agent.recv("127.0.0.1", 45876, 100, 10.0, None, 2, 100.0)
        )
    )
    thread.start()
    time.sleep(0.3)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = time.time()
    for seq in range(100):
        if seq == 40:
            time.sleep(0.6)
        scheduled = start + seq / 100.0 + (0.6 if seq >= 40 else 0.0)
        time.sleep(max(0.0, scheduled - time.time()))
        stamp = time.time() if held_by == "the sender" else start + seq / 100.0
        sock.sendto(
            probe_agent._DATA.pack(probe_agent._MAGIC, seq, 100, stamp), ("127.0.0.1", 45876)
        )
    sock.sendto(probe_agent._DATA.pack(probe_agent._END, 100, 100, 0.0), ("127.0.0.1", 45876))
    sock.close()
    thread.join(15)
    assert result["lost"] == 0 and result["max_gap_ms"] >= 580, result
    if held_by == "the sender":
        assert result["sender_paused_ms"] >= 540 and result["network_gap_ms"] < 300, result
        assert result["extra_delay_ms"] < 300, result
    else:
        assert result["sender_paused_ms"] < 60 and result["network_gap_ms"] >= 580, result
        assert result["extra_delay_ms"] >= 540, result


def test_probe_agent_counts_the_subflow_that_lost_packets() -> None:
    """Sub-flow 1 of 4 (seq 41, 45, 49) is lost while it is silent for 0.3 s: 3 lost, one
    sub-flow hit, and the gap is that silence."""
    result: dict[str, float] = {}
    thread = threading.Thread(
        target=lambda: result.update(probe_agent.recv("127.0.0.1", 45873, 80, 10.0, None, 4))
    )
    thread.start()
    time.sleep(0.3)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(80):
        if seq in (41, 45, 49):
            continue
        if seq == 42:
            time.sleep(0.3)
        packet = probe_agent._DATA.pack(probe_agent._MAGIC, seq, 80, time.time())
        sock.sendto(packet, ("127.0.0.1", 45873))
        time.sleep(0.002)
    sock.sendto(probe_agent._DATA.pack(probe_agent._END, 80, 80, 0.0), ("127.0.0.1", 45873))
    sock.close()
    thread.join(15)
    assert (result["lost"], result["subflows_hit"]) == (3, 1)
    assert result["max_gap_ms"] >= 300


class _HangingSubstrate:
    """A substrate whose machines stay alive (real processes) and whose first ``hangs`` boots
    never answer on SSH."""

    name = "tcg"

    def __init__(self, hangs: int) -> None:
        self.hangs = hangs
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stopped: list[int] = []

    def start(self, state: LabState, memory_mb: int) -> None:
        self.procs.append(subprocess.Popen(["sleep", "60"]))
        state.guest_pid = self.procs[-1].pid

    def wait_ready(self, state: LabState, timeout: float) -> object:
        from controller.lab.errors import GuestBootError

        if len(self.procs) <= self.hangs:
            raise GuestBootError(f"guest sshd not answering (boot {len(self.procs)})")
        return "executor"

    def stop(self, state_dir: Path, state: LabState | None, prefix: str) -> object:
        assert state is not None and state.guest_pid is not None
        for proc in self.procs:
            if proc.pid == state.guest_pid:
                proc.kill()
                proc.wait()
        self.stopped.append(len(self.procs))
        return None

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def _boot_with_hangs(tmp_path: Path, hangs: int) -> tuple[_HangingSubstrate, LabState, Any]:
    from controller.lab import substrate

    state = LabState("x", "dpa-", "guest", str(tmp_path), "172.30.0.0/24", "172.30.0.1")
    sub = _HangingSubstrate(hangs)
    try:
        return sub, state, substrate.boot(sub, state, 1024, 1.0)  # type: ignore[arg-type]
    except LabError as exc:
        return sub, state, exc
    finally:
        sub.close()


def test_a_hung_guest_boot_is_stopped_and_booted_once_more(tmp_path: Path) -> None:
    sub, state, result = _boot_with_hangs(tmp_path, hangs=1)
    assert result == "executor"
    assert len(sub.procs) == 2 and sub.stopped == [1] and state.guest_pid == sub.procs[1].pid


def test_two_hung_guest_boots_are_an_error_naming_both(tmp_path: Path) -> None:
    sub, _state, result = _boot_with_hangs(tmp_path, hangs=2)
    assert isinstance(result, LabError)
    assert re.search(r"boot 2.*the boot before it hung too.*boot 1", str(result)), result
    assert len(sub.procs) == 2 and sub.stopped == [1]


class _FakeSession:
    """root_run answers with the flowing files still missing, one fewer each call."""

    def __init__(self, missing: list[str]) -> None:
        self.state = SimpleNamespace(prefix="dpa-")
        self.missing = missing
        self.calls = 0

    def root_run(self, script: str, timeout: float = 300.0) -> tuple[int, str, str]:
        self.calls += 1
        out = "\n".join(self.missing)
        self.missing = self.missing[1:]
        return 0, out, ""


def test_an_event_waits_until_every_probe_flow_flows(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.lab import probe, wait_probes_flowing

    monkeypatch.setattr(probe.time, "sleep", lambda _s: None)
    session = _FakeSession(["/run/dpa-lab/probe.5400.flowing", "/run/dpa-lab/probe.5401.flowing"])
    wait_probes_flowing(session, [5400, 5401])  # type: ignore[arg-type]
    assert session.calls == 3  # two missing, then one, then none


def test_a_probe_flow_that_never_flows_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.lab import LabTimeoutError, probe, wait_probes_flowing

    clock = iter(range(0, 10_000, 100))
    monkeypatch.setattr(probe.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(probe.time, "sleep", lambda _s: None)
    session = _FakeSession(["/run/dpa-lab/probe.5401.flowing"] * 50)
    with pytest.raises(LabTimeoutError, match="ports 5401 not flowing after 300 s"):
        wait_probes_flowing(session, [5400, 5401], timeout=300)  # type: ignore[arg-type]


def test_probe_places_every_run_of_lost_packets() -> None:
    """Sub-flow 1 of 2 lost seq 3 and 5-9 (its packets 1,3,5,7,9,...): two runs; sub-flow 0 none."""
    seen = set(range(20)) - {3, 5, 7, 9}
    result = probe_agent.summarise(20, seen, 2, [0.0, 0.0], [0, 0], [0, 0], 0.02)
    runs = [f["lost_runs"] for f in result["per_subflow"]]  # type: ignore[attr-defined]
    assert runs == [[], [[3, 9]]]
    seen = set(range(20)) - {3, 7}
    result = probe_agent.summarise(20, seen, 2, [0.0, 0.0], [0, 0], [0, 0], 0.02)
    assert [f["lost_runs"] for f in result["per_subflow"]] == [[], [[3, 3], [7, 7]]]  # type: ignore[attr-defined]
    assert result["first_seq"] == 0


class _StatusExecutor:
    """Answers the status script with the next of ``answers`` (the last one repeats)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.calls = 0

    def run_script(self, script: str, timeout: float = 300.0) -> tuple[int, str, str]:
        self.calls += 1
        return 0, self.answers[min(self.calls, len(self.answers)) - 1], ""


def _unit_state() -> LabState:
    nodes = {
        n.name: NodeState(n.kind, n.role, n.plane, f"dpa-{n.name}", "172.30.0.9")
        for n in TOPO.nodes
    }
    return LabState("unit", "dpa-", "guest", "/tmp/dpi-unit", "172.30.0.0/29", "172.30.0.1", nodes)


def test_lab_up_waits_until_every_switch_runs_frr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A switch whose bgpd is not up yet (watchfrr restarting it) holds the lab back; once
    all run, they must still run FRR_SETTLE_S later."""
    from controller.lab import runtime

    clock = iter(float(t) for t in range(0, 1000))
    monkeypatch.setattr(runtime.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(runtime.time, "sleep", lambda _s: None)
    up = "leaf1 1 1 1\nspine1 1 1 1\n"
    executor = _StatusExecutor(["leaf1 1 1 0\nspine1 1 1 1\n", up, "leaf1 1 1 0\n", up])
    runtime._wait_frr(_unit_state(), [executor], timeout=100)  # type: ignore[list-item]
    assert executor.calls >= 4 + runtime.FRR_SETTLE_S - 1  # the relapse restarted the settle


def test_lab_up_names_the_switches_without_frr(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.lab import LabTimeoutError, runtime

    clock = iter(float(t) for t in range(0, 10_000, 10))
    monkeypatch.setattr(runtime.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(runtime.time, "sleep", lambda _s: None)
    executor = _StatusExecutor(["leaf1 1 1 1\nspine1 1 0 0\n"])
    with pytest.raises(LabTimeoutError, match="FRR not running on spine1 100 s after"):
        runtime._wait_frr(_unit_state(), [executor], timeout=100)  # type: ignore[list-item]


def _readers_see_only_whole_files(path: Path, write: Any) -> list[int]:
    """Rewrite ``path`` (two 1 MiB contents, alternately) while readers read it: the sizes of
    what they saw that was neither whole content."""
    contents = [b"a" * 2**20, b"b" * 2**20]
    write(contents[0])
    torn: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            data = path.read_bytes()
            if data not in contents:
                torn.append(len(data))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(40):
            write(contents[i % 2])
    finally:
        stop.set()
        for t in threads:
            t.join()
    return torn


def test_local_put_file_is_never_seen_half_written(tmp_path: Path) -> None:
    """Concurrent probes each put the probe agent, then run it: a reader must never see a
    truncated file (a matrix run's probe died of "SyntaxError: '[' was never closed")."""
    agent = tmp_path / "run" / "probe_agent.py"
    executor = LocalExecutor()
    torn = _readers_see_only_whole_files(agent, lambda d: executor.put_file(str(agent), d, 0o755))
    assert torn == []
    assert agent.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in agent.parent.iterdir()] == ["probe_agent.py"]  # no temp left


def test_guest_put_file_command_is_never_seen_half_written(tmp_path: Path) -> None:
    """The guest's put_file runs this shell command over SSH; run here by the same shell."""
    agent = tmp_path / "probe_agent.py"

    def write(data: bytes) -> None:
        cmd = atomic_write_command(str(agent), 0o700)
        subprocess.run(["sh", "-c", cmd], input=data, check=True)

    assert _readers_see_only_whole_files(agent, write) == []
    assert agent.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in tmp_path.iterdir()] == ["probe_agent.py"]
    with pytest.raises(LabCommandError, match="unsafe path"):
        atomic_write_command("/run/x'; rm -rf /", 0o644)


def test_an_lldpd_restart_ends_the_old_by_pid_then_starts_and_binds_in_the_sshd_namespaces() -> (
    None
):
    from controller.lab.scripts import lldpd_restart_script, lldpd_steps

    node = LabNode("p1-spine1", "switch", "spine", 1, ("swp1", "swp2"))
    script = lldpd_restart_script("/run/dpx", node, "dpx-p1-spine1")
    check = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    lines = script.splitlines()
    # the old lldpd: the namespace's processes named lldpd, by PID (never by pattern)
    assert "ip netns pids dpx-p1-spine1" in lines[0] and "= lldpd" in lines[0]
    assert lines[1] == '[ -z "$old" ] || kill $old'
    assert lines[3] == "rm -f /run/dpx/p1-spine1.lldpd.sock"
    # the new one where the old ran: the sshd's network, hostname and mount namespaces, its
    # socket bound again on /run/lldpd.socket (the old bind is undone first)
    assert lines[4].startswith("nsenter -t $(cat /run/dpx/p1-spine1.sshd.pid) -n -u -m sh -c ")
    assert "umount /run/lldpd.socket" in lines[4]
    for step in lldpd_steps("/run/dpx", node):
        assert step.split(" ")[0] in lines[4]
    assert "mount --bind /run/dpx/p1-spine1.lldpd.sock /run/lldpd.socket" in lines[4]


def test_a_swap_puts_each_switch_places_own_qdiscs_back() -> None:
    from controller.generator import build_fabric
    from controller.intent import load_intent
    from controller.lab import impair

    fabric = build_fabric(
        load_intent(Path(__file__).resolve().parents[2] / "inventory/lab-dual-arp.yaml")
    )
    sent: list[str] = []
    nodes = {
        name: SimpleNamespace(namespace=f"dpx-{name}")
        for name in ("p1-spine1", "p1-spine2", "srv0001")
    }
    session = SimpleNamespace(
        state=SimpleNamespace(nodes=nodes),
        root_run=lambda s, guest=0: (sent.append(s), (0, "", ""))[1],
        guest_of=lambda _node: 0,
    )
    impair.restore_qos(session, fabric, [("p1-spine1", "swp1"), ("srv0001", "nic1p1")])  # type: ignore[arg-type]
    (script,) = sent
    own = impair.qos_lines(fabric, ("p1-spine1", "swp1"))
    assert own and all("dev swp1" in line for line in own)
    assert script.startswith("tc -n dpx-p1-spine1 qdisc del dev swp1 root")
    assert "tc -n dpx-p1-spine1 -force -batch - <<'DPCTL_QOS'\n" + "\n".join(own) in script
    assert "srv0001" not in script  # a server's port has no rendered qdiscs
    check = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
