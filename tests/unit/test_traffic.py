"""The data-plane check's pure parts and its probe agent on the loopback (no lab)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from controller.agents import probe_agent
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.traffic import (
    TrafficError,
    TrafficReport,
    _summary,
    aggregate,
    plan_flows,
    validate,
)
from controller.traffic_ansible import extravars, results_from_events
from tests.conftest import INVENTORY, run_cli

FABRIC = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))


def _clean(subflows: int, per: int = 10) -> list[dict[str, Any]]:
    return [
        {"sent": per, "received": per, "lost": 0, "duplicates": 0, "reordered": 0, "max_gap_ms": 5}
        for _ in range(subflows)
    ]


def _result(flow_ports: tuple[str, str], planes: list[int]) -> dict[str, Any]:
    """A receiver result whose sub-flow i left through the port of plane ``planes[i]``."""
    return {
        "per_subflow": _clean(len(planes)),
        "egress": {str(i): {flow_ports[p - 1]: 10} for i, p in enumerate(planes)},
    }


def test_flows_cover_every_rail_both_ways_with_distinct_ports() -> None:
    flows = plan_flows(FABRIC)
    assert {(f.rail, f.src, f.dst) for f in flows} == {
        (r, a, b) for r in (1, 2) for a, b in (("srv0001", "srv0002"), ("srv0002", "srv0001"))
    }
    assert len({f.port for f in flows}) == len(flows)
    srv = FABRIC.server_by_name["srv0001"]
    first = next(f for f in flows if f.src == "srv0001" and f.rail == 1)
    assert first.ports == srv.nics[0].ports and first.src_ip == srv.nics[0].ip


def test_rows_per_rail_and_plane_and_the_duplicates_fail_naming_the_rail() -> None:
    flows = plan_flows(FABRIC)
    results = [_result(f.ports, [1, 2, 1, 2]) for f in flows]
    assert all(r.ok for r in aggregate(FABRIC, flows, results))
    rail2 = next(i for i, f in enumerate(flows) if f.rail == 2)
    results[rail2]["per_subflow"][1]["duplicates"] = 7  # sub-flow 1 left into plane 2
    rows = {(r.rail, r.plane): r for r in aggregate(FABRIC, flows, results)}
    assert [k for k, r in rows.items() if not r.ok] == [(2, 2)]
    assert rows[(2, 2)].reason == "7 duplicates"
    assert rows[(2, 2)].subflows == 4 and rows[(2, 2)].sent == 40


def test_loss_a_plane_not_covered_and_a_subflow_that_never_left_all_fail() -> None:
    flows = plan_flows(FABRIC)
    results = [_result(f.ports, [1, 1, 1, 1]) for f in flows]
    results[0]["per_subflow"][0].update(received=7, lost=3)
    del results[0]["egress"]["3"]
    rows = {(r.rail, r.plane): r for r in aggregate(FABRIC, flows, results)}
    assert rows[(1, 1)].reason == "3 of 70 lost"
    assert "no sub-flow hashed into plane 2" in rows[(1, 2)].reason
    assert "never left the sender" in rows[(1, 0)].reason
    assert rows[(2, 1)].ok and not rows[(2, 2)].ok


@pytest.mark.parametrize(
    ("args", "field"),
    [((0.1,), "--seconds"), ((3.0, 1.0), "--rate"), ((3.0, 100.0, 1), "--subflows")],
)
def test_bad_options_name_the_option(args: tuple[Any, ...], field: str) -> None:
    with pytest.raises(TrafficError) as err:
        validate(*args)
    assert err.value.where == field


def test_cli_refuses_a_bad_duration_before_anything_runs() -> None:
    result = run_cli(
        "verify", "-f", str(INVENTORY / "lab-evpn-mh.yaml"), "--traffic", "--seconds", "0"
    )
    assert result.exit_code == 2 and "--seconds" in result.output


def test_ansible_results_are_read_from_the_job_events() -> None:
    flows = plan_flows(FABRIC)[:2]
    assert [f["sport_base"] for f in extravars(flows, 100, 50.0, 4)["dpctl_traffic"]["flows"]] == [
        40000,
        40100,
    ]

    def event(task: str, port: int, stdout: str) -> dict[str, Any]:
        res = {"item": {"item": {"port": port}}, "stdout": stdout}
        return {"event": "runner_item_on_ok", "event_data": {"task": task, "res": res}}

    events = [
        event("Receiver result", flows[0].port, '{"sent": 100, "per_subflow": []}'),
        event("Sender result", flows[0].port, '{"egress": {"0": {"nic1p1": 25}}}'),
    ]
    with pytest.raises(TrafficError, match=flows[1].name):
        results_from_events(events, flows)
    events.append(event("Receiver result", flows[1].port, '{"sent": 100, "per_subflow": []}'))
    got = results_from_events(events, flows)
    assert got[0]["egress"] == {"0": {"nic1p1": 25}} and got[1]["egress"] == {}
    assert got[0]["sniff_down"] == got[1]["sniff_down"] == []
    events[1] = event("Sender result", flows[0].port, '{"egress": {}, "sniff_down": ["nic1p1"]}')
    assert results_from_events(events, flows)[0]["sniff_down"] == ["nic1p1"]


def _recv_in_thread(
    port: int, count: int, subflows: int, rate: float | None = None
) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(
            probe_agent.recv("127.0.0.1", port, count, 10.0, None, subflows, rate)
        )
    )
    thread.start()
    time.sleep(0.3)
    return thread, result


def test_agent_counts_duplicates_and_reordering_per_subflow() -> None:
    thread, result = _recv_in_thread(45881, 40, 4)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    order = [*range(9), *range(10, 14), 13, 13, *range(14, 40), 9]  # 13 three times, 9 late
    before = time.time()
    for seq in order:
        sock.sendto(
            probe_agent._DATA.pack(probe_agent._MAGIC, seq, 40, time.time()), ("127.0.0.1", 45881)
        )
    sock.sendto(probe_agent._DATA.pack(probe_agent._END, 40, 40, 0.0), ("127.0.0.1", 45881))
    sock.close()
    thread.join(15)
    assert (result["lost"], result["duplicates"], result["reordered"]) == (0, 2, 1)
    flow1 = result["per_subflow"][1]  # 9 and 13 are sub-flow 1 of 4
    assert (flow1["duplicates"], flow1["reordered"], flow1["received"]) == (2, 1, 10)
    assert all(f["duplicates"] == 0 for i, f in enumerate(result["per_subflow"]) if i != 1)
    # when the late one arrived, so that the matrix can place reordering against an event
    (late,) = flow1["reordered_at"]
    assert before - 0.001 <= late <= time.time() + 0.001  # kept to the millisecond
    assert all(f["reordered_at"] == [] for i, f in enumerate(result["per_subflow"]) if i != 1)


@pytest.mark.skipif(os.geteuid() != 0, reason="packet sockets need root")
def test_agent_counts_the_interface_each_subflow_leaves_through() -> None:
    thread, result = _recv_in_thread(45882, 40, 4)
    sent = probe_agent.send(
        "127.0.0.1", 45882, 40, 400.0, src="127.0.0.1", subflows=4, base=41000, sniff=["lo"]
    )
    thread.join(15)
    assert result["received"] == 40
    assert sent["egress"] == {str(i): {"lo": 10} for i in range(4)}


def test_agent_counts_a_silent_subflow_and_a_silent_end_as_gaps() -> None:
    """Silence with no arrival after it (a dead sub-flow, a flow cut off near its end) was
    missing from max_gap_ms: a probe reported 814 ms while two of its four sub-flows
    received nothing for 35 s. Given the rate, a run of lost packets is silence too."""
    thread, result = _recv_in_thread(45883, 400, 4, rate=100.0)  # 40 ms per sub-flow packet
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(400):
        dead = seq % 4 == 1 or (seq % 4 == 2 and seq >= 300)  # sub-flow 1 dead, 2 cut at 300
        if not dead:
            sock.sendto(
                probe_agent._DATA.pack(probe_agent._MAGIC, seq, 400, time.time()),
                ("127.0.0.1", 45883),
            )
            time.sleep(0.001)  # paced: a burst can overflow the receiver's socket buffer
    sock.sendto(probe_agent._DATA.pack(probe_agent._END, 400, 400, 0.0), ("127.0.0.1", 45883))
    sock.close()
    thread.join(15)
    per = result["per_subflow"]
    assert [f["lost_run"] for f in per] == [0, 100, 25, 0]
    assert per[1]["max_gap_ms"] == pytest.approx(101 * 40.0)  # all 100 lost: 4 s of silence
    assert per[2]["max_gap_ms"] == pytest.approx(26 * 40.0)
    assert result["max_gap_ms"] == pytest.approx(4040.0) and result["subflows_hit"] == 2
    # without the rate, only silences between two arrivals count (the old, blind measure)
    thread, blind = _recv_in_thread(45884, 8, 4)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in (0, 2, 3, 4, 6, 7):
        sock.sendto(
            probe_agent._DATA.pack(probe_agent._MAGIC, seq, 8, time.time()), ("127.0.0.1", 45884)
        )
    sock.sendto(probe_agent._DATA.pack(probe_agent._END, 8, 8, 0.0), ("127.0.0.1", 45884))
    sock.close()
    thread.join(15)
    assert blind["per_subflow"][1]["lost_run"] == 2 and blind["lost"] == 2
    assert blind["per_subflow"][1]["max_gap_ms"] == 0.0  # no two arrivals: no silence seen


def test_agent_receiver_ends_soon_after_the_done_file_when_the_end_marker_is_lost(
    tmp_path: Path,
) -> None:
    """The receiver's deadline used to count from its own start: on a loaded lab guest the
    senders started seconds later and the flows' tails were cut and counted lost (CI of
    2026-12-01: 336 of 400 on one rail in steady state). Callers now give it a generous
    last-resort deadline and tell it when every sender has exited."""
    done = tmp_path / "flow.done"
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(
            probe_agent.recv("127.0.0.1", 45885, 40, 60.0, None, 4, 100.0, str(done))
        )
    )
    thread.start()
    time.sleep(1.0)  # a late sender
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(36):  # the last 4 and the end marker never arrive
        sock.sendto(
            probe_agent._DATA.pack(probe_agent._MAGIC, seq, 40, time.time()), ("127.0.0.1", 45885)
        )
    sock.close()
    started = time.monotonic()
    done.touch()
    thread.join(15)
    assert time.monotonic() - started < probe_agent.DONE_GRACE_S + 1.0
    assert (result["received"], result["lost"], result["receiver_dropped"]) == (36, 4, 0)
    assert [f["lost_run"] for f in result["per_subflow"]] == [1, 1, 1, 1]


def test_agent_reports_what_its_own_socket_dropped() -> None:
    """Packets the network delivered but the busy probe host could not read in time are
    counted apart (the socket's drops in /proc/net/udp), so a loss can be told from the
    fabric's."""
    sock = probe_agent._receiver("127.0.0.1", 45886)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # a burst cannot fit
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(200):
        tx.sendto(
            probe_agent._DATA.pack(probe_agent._MAGIC, seq, 200, time.time()), ("127.0.0.1", 45886)
        )
    tx.close()
    dropped = probe_agent.socket_drops(sock)
    sock.close()
    assert 0 < dropped < 200


def _report(flows: list[Any], results: list[dict[str, Any]]) -> TrafficReport:
    """The report of a 1 s probe at 20 packets/s in 2 sub-flows with these results."""
    return TrafficReport(
        fabric="lab",
        runner="lab",
        seconds=1.0,
        rate_pps=20.0,
        subflows=2,
        rows=aggregate(FABRIC, flows, results),
        flows=[{**asdict(f), **_summary(r)} for f, r in zip(flows, results, strict=True)],
    )


def test_a_receivers_own_drops_are_named_apart_from_the_fabrics_loss() -> None:
    flows = plan_flows(FABRIC)
    lossy = [{**_result(f.ports, [1, 2]), "receiver_dropped": 0} for f in flows]
    lossy[0]["per_subflow"][0].update(received=4, lost=6)
    lossy[0]["receiver_dropped"] = 6
    report = _report(flows, lossy)
    assert not report.ok
    assert report.failures[0] == "rail 1 plane 1: 6 of 20 lost"
    assert report.failures[1].startswith(f"{flows[0].name}: 6 of the lost packets were dropped")
    clean = [{**_result(f.ports, [1, 2]), "receiver_dropped": 0} for f in flows]
    assert TrafficReport("lab", "lab", 1.0, 20.0, 2, aggregate(FABRIC, flows, clean), []).ok


def test_a_sender_port_that_went_down_is_named_in_the_failures() -> None:
    flows = plan_flows(FABRIC)
    lossy = [{**_result(f.ports, [1, 2]), "sniff_down": []} for f in flows]
    lossy[0]["per_subflow"][0].update(received=7, lost=3)
    lossy[0]["sniff_down"] = [flows[0].ports[0]]
    report = _report(flows, lossy)
    assert report.failures == [
        "rail 1 plane 1: 3 of 20 lost",
        f"{flows[0].name}: {flows[0].ports[0]} went down during the probe (its sub-flows' "
        "planes are counted from before that)",
    ]
    assert report.to_dict()["flows"][0]["sniff_down"] == [flows[0].ports[0]]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and network namespaces"
)
def test_the_sender_goes_on_when_a_sniffed_port_goes_down() -> None:
    """A bond member going down mid-probe ends its packet socket with ENETDOWN; the sender
    used to die of it, so the rest of the flow read as the fabric's loss."""
    tag = uuid.uuid4().hex[:6]
    a, b = f"dpd-ut-snd-{tag}", f"dpd-ut-rcv-{tag}"
    root = Path(__file__).resolve().parents[2]
    code = (
        "import json; from controller.agents import probe_agent as p; print(json.dumps(p.send("
        "'10.9.2.2', 45890, 300, 100.0, src='10.9.2.1', subflows=2, base=41100, sniff=['va'])))"
    )
    try:
        for script in (
            f"ip netns add {a}; ip netns add {b}",
            f"ip -n {a} link add va type veth peer name vb netns {b}",
            f"ip -n {a} address add 10.9.2.1/30 dev va; ip -n {b} address add 10.9.2.2/30 dev vb",
            f"ip -n {a} link set va up; ip -n {b} link set vb up",
        ):
            subprocess.run(["sh", "-ec", script], check=True, capture_output=True)
        sender = subprocess.Popen(
            ["ip", "netns", "exec", a, "python3", "-c", code],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)  # about half of its 3 s
        subprocess.run(["ip", "-n", a, "link", "set", "va", "down"], check=True)
        out, err = sender.communicate(timeout=30)
        assert sender.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["sniff_down"] == ["va"]
        counted = sum(n for by_if in result["egress"].values() for n in by_if.values())
        assert 0 < counted < 300  # what left before the port went down
    finally:
        subprocess.run(["ip", "netns", "del", a], check=False)
        subprocess.run(["ip", "netns", "del", b], check=False)


def test_agent_reports_when_each_subflows_longest_gap_ended() -> None:
    """The matrix needs to place a silence against the steps of a drain: each sub-flow's
    longest gap carries the wall-clock time of the arrival that ended it."""
    thread, result = _recv_in_thread(45885, 8, 2)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(8):
        if seq == 6:  # sub-flow 0: 0, 2, 4 quickly, then 0.5 s of silence before 6
            time.sleep(0.5)
            resumed = time.time()
        sock.sendto(
            probe_agent._DATA.pack(probe_agent._MAGIC, seq, 8, time.time()), ("127.0.0.1", 45885)
        )
    sock.sendto(probe_agent._DATA.pack(probe_agent._END, 8, 8, 0.0), ("127.0.0.1", 45885))
    sock.close()
    thread.join(15)
    flow0, flow1 = result["per_subflow"]
    assert flow0["max_gap_ms"] >= 450.0
    assert resumed - 0.002 <= flow0["gap_end"] <= resumed + 0.5  # rounded to 1 ms
    assert resumed - 0.002 <= flow1["gap_end"] <= resumed + 0.5  # 7 came after it too
