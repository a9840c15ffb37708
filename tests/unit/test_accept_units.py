"""dpctl accept's pure parts: localisation over synthetic failures, the probe plan's size,
the links' judgement, the fabric probes' direction, the JUnit XML (read back by junitparser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import junitparser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.accept import judge, links, roce
from controller.accept.collect import link_local_peers, parse_ping, ping_command
from controller.accept.junit import junit_xml
from controller.accept.localise import Probed, localise
from controller.accept.probes import (
    cable_name,
    cross_rail_probes,
    fabric_cables,
    probe_counts,
    server_probes,
)
from controller.accept.result import AcceptReport, failed, passed, skipped
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.render.engine import structured_configs
from tests.conftest import INVENTORY

EXAMPLES = Path(__file__).resolve().parents[2] / "inventory/examples"
LAB = build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml"))
PROBES = server_probes(LAB) + cross_rail_probes(LAB, base=len(server_probes(LAB)))


def run_with_fault(fabric: Fabric, bad: set[str]) -> list[Probed]:
    """Every planned server flow of ``fabric``, failing when its path holds an element of
    ``bad`` (what a fault there does to the flows through it)."""
    probes = server_probes(fabric) + cross_rail_probes(fabric, base=len(server_probes(fabric)))
    return [Probed(p.flow.name, not (set(p.path) & bad), p.path) for p in probes]


def test_probe_counts_grow_with_cables_not_pairs() -> None:
    seed = build_fabric(load_intent(EXAMPLES / "seed-2048-cx864e-dual-arp.yaml"))
    big = build_fabric(load_intent(EXAMPLES / "cx864e-16384-dual-arp.yaml"))
    for fabric in (LAB, seed, big):
        counts = probe_counts(fabric)
        host = sum(1 for lk in fabric.links if lk.kind == "host")
        leaves = len(fabric.switches_in(role="leaf"))
        assert counts["fabric-links"] == len(fabric_cables(fabric))
        assert counts["server-ports"] == host  # one flow per server port
        assert counts["cross-rail"] == leaves
    assert probe_counts(seed)["total"] == 6176
    one = probe_counts(LAB, plane=1)  # --plane 1: that plane's cables and ports only
    assert one == {"fabric-links": 4, "server-ports": 4, "cross-rail": 2, "total": 10}
    assert all(p.flow.pin and p.flow.pin.endswith("p1") for p in server_probes(LAB, plane=1))
    assert probe_counts(big)["total"] == 49408


def test_every_server_port_sends_once_and_receives_once() -> None:
    sent = [(p.flow.src, p.flow.pin) for p in server_probes(LAB)]
    assert sorted(sent) == sorted((lk.a_device, lk.a_port) for lk in LAB.links if lk.kind == "host")
    for p in server_probes(LAB):
        assert p.flow.size == 9000 and p.flow.gateway_mac
        assert p.flow.src != p.flow.dst


def test_cross_rail_flows_cross_the_spines() -> None:
    for p in cross_rail_probes(LAB):
        assert p.flow.src != p.flow.dst  # a host drops packets from its own address
        assert any(e.startswith("uplinks of") for e in p.path)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted({e for p in PROBES for e in p.path if " - " in e})))
def test_one_bad_server_cable_is_named_alone(element: str) -> None:
    """A fault on any one server cable of the lab: localisation names that cable, exactly."""
    suspects = localise(run_with_fault(LAB, {element}), {element: "link down"})
    assert [s.elements for s in suspects] == [(element,)]


def test_bad_cable_is_named_from_traffic_alone_on_the_seed() -> None:
    seed = build_fabric(load_intent(EXAMPLES / "seed-2048-cx864e-dual-arp.yaml"))
    link = next(lk for lk in seed.links if lk.kind == "host" and lk.a_device == "srv0100")
    suspects = localise(run_with_fault(seed, {cable_name(link)}))
    assert [s.elements for s in suspects] == [(cable_name(link),)]
    assert len(suspects[0].probes) >= 2


def test_a_dead_leaf_is_one_suspect_and_two_faults_are_two() -> None:
    probed = run_with_fault(LAB, {"switch p1-g1-leaf1"})
    assert [s.elements for s in localise(probed)] == [("switch p1-g1-leaf1",)]
    a, b = "srv0001:nic1p2 - p2-g1-leaf1:swp1", "srv0002:nic2p1 - p1-g1-leaf2:swp2"
    found = localise(run_with_fault(LAB, {a, b}), {a: "down", b: "down"})
    assert sorted(s.elements for s in found) == [(a,), (b,)]


def test_elements_the_traffic_cannot_tell_apart_are_named_together() -> None:
    probed = [Probed("f1", False, ("cable x", "switch s")), Probed("f2", True, ("cable y",))]
    (suspect,) = localise(probed)
    assert suspect.elements == ("cable x", "switch s") and not suspect.exact
    (suspect,) = localise(probed, {"cable x": "port down"})
    assert suspect.elements == ("cable x",) and suspect.own_evidence == ("port down",)


def test_no_failures_no_suspects() -> None:
    assert localise(run_with_fault(LAB, set())) == []


def interfaces(**override: dict[str, Any]) -> dict[str, dict[str, Any]]:
    device = structured_configs(LAB, ["p1-g1-leaf1"])["p1-g1-leaf1"]
    base = {"is_up": True, "is_enabled": True, "speed": -1.0, "mtu": 9216}
    return {i.name: {**base, **override.get(i.name, {})} for i in device.interfaces}


def test_port_findings_name_down_mtu_speed_missing() -> None:
    device = structured_configs(LAB, ["p1-g1-leaf1"])["p1-g1-leaf1"]
    ifs = interfaces(swp1={"is_up": False}, swp3={"mtu": 1500}, swp4={"speed": 40000.0})
    del ifs["swp2"]
    rows = {r.element: r for r in links.port_findings(device, ifs)}
    assert rows["p1-g1-leaf1:swp1"].what == "link down (to srv0001:nic1p1)"
    assert rows["p1-g1-leaf1:swp3"].what == "MTU 1500, planned 9216"
    assert rows["p1-g1-leaf1:swp4"].what == "speed 40000 Mb/s, planned 100000"
    assert rows["p1-g1-leaf1:swp2"].what == "port does not exist on the switch"
    assert {r.status for r in links.port_findings(device, interfaces())} == {"pass"}
    drained = {r.element: r for r in links.port_findings(device, ifs, ports_down=True)}
    assert drained["p1-g1-leaf1:swp1"].status == "skip"


def test_counters_that_grow_are_named() -> None:
    device = structured_configs(LAB, ["p1-g1-leaf1"])["p1-g1-leaf1"]
    zero = {k: 0 for k in links.COUNTERS}
    before = {i.name: dict(zero) for i in device.interfaces}
    after = {i.name: dict(zero) for i in device.interfaces}
    after["swp1"]["rx_discards"] = 3  # a Linux port's background: allowed
    after["swp2"]["tx_discards"] = 280
    after["swp3"]["rx_errors"] = 1
    rows = links.counter_findings(device, before, after)
    assert [(r.element, r.what) for r in rows] == [
        ("p1-g1-leaf1:swp2 counters", "counters grew during the test: tx_discards +280"),
        ("p1-g1-leaf1:swp3 counters", "counters grew during the test: rx_errors +1"),
    ]
    assert links.counter_findings(device, None, after)[0].status == "skip"


def test_fabric_probe_names_the_dead_direction() -> None:
    lk = fabric_cables(LAB)[0]
    a, z = f"{lk.a_device}:{lk.a_port}", f"{lk.z_device}:{lk.z_port}"
    pings = {lk.a_device: {lk.a_port: {"sent": 5, "received": 0}}}
    (row,) = judge.fabric_probe_findings([lk], pings, {a: {"rx": 40}, z: {"rx": 0}})
    assert row.failed and f"{a} -> {z} drops everything" in row.what
    (row,) = judge.fabric_probe_findings([lk], pings, {a: {"rx": 0}, z: {"rx": 12}})
    assert f"{z} -> {a} drops everything" in row.what
    (row,) = judge.fabric_probe_findings([lk], {}, {})
    assert row.failed and "no IPv6 link-local neighbour" in row.what
    ok = {lk.a_device: {lk.a_port: {"sent": 5, "received": 5}}}
    assert judge.fabric_probe_findings([lk], ok, {})[0].status == "pass"
    skip = {lk.a_device: {lk.a_port: {"skip": "klish"}}}
    assert judge.fabric_probe_findings([lk], skip, {})[0].status == "skip"


def test_missing_cable_on_a_dead_port_says_so() -> None:
    plan = judge.planned_cables(LAB, {s.name for s in LAB.switches}, None)
    gone = next(c for c, lk in plan.items() if lk.a_device == "srv0001" and lk.a_port == "nic1p1")
    rows, actions = judge.cabling_findings(plan, set(plan) - {gone}, {"p1-g1-leaf1:swp1"})
    (bad,) = [r for r in rows if r.failed]
    assert [a.kind for a in actions] == ["add"]
    assert bad.what.startswith("no link on p1-g1-leaf1:swp1")


def test_ping_parsing_and_link_local_peers() -> None:
    text = (
        "--- fe80::1%swp3 ping statistics ---\n5 packets transmitted, 3 received, 40% packet loss"
    )
    assert parse_ping(text) == (5, 3)
    assert parse_ping("connect: Network is unreachable") is None
    assert ping_command("fe80::1", "swp3", 9168).endswith("-M do -s 9168 fe80::1%swp3")
    table = [
        {"interface": "swp3", "ip": "fe80::2", "state": "REACHABLE"},
        {"interface": "swp4", "ip": "fe80::9", "state": "FAILED"},
        {"interface": "swp3", "ip": "2001:db8::1", "state": "REACHABLE"},
    ]
    assert link_local_peers(table) == {"swp3": "fe80::2"}


def report() -> AcceptReport:
    rows = [
        passed("cabling", "a:1 - b:1", "LLDP sees the planned neighbour"),
        failed("traffic", "a:2 - c:1", "link-local probe 0/5", "replace the cable", device="a"),
        skipped("roce", "RDMA bandwidth", "no RDMA here"),
    ]
    return AcceptReport("f", {"source": "embedded"}, rows, [], {"total": 3}, 12.5)


def test_junit_is_read_back_by_a_junit_parser(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(junit_xml(report()))
    xml = junitparser.JUnitXml.fromfile(str(path))
    cases = {c.name: c for suite in xml for c in suite}
    assert set(cases) == {"a:1 - b:1", "a:2 - c:1", "RDMA bandwidth"}
    (result,) = cases["a:2 - c:1"].result
    assert isinstance(result, junitparser.Failure)
    assert result.message == "link-local probe 0/5" and "replace the cable" in (result.text or "")
    assert isinstance(cases["RDMA bandwidth"].result[0], junitparser.Skipped)
    assert cases["a:1 - b:1"].is_passed
    assert sum(s.failures for s in xml) == 1 and sum(s.skipped for s in xml) == 1


def test_report_orders_failures_first() -> None:
    r = report()
    assert [f.status for f in r.ordered()] == ["fail", "skip", "pass"]
    assert not r.ok and r.counts() == {"pass": 1, "fail": 1, "skip": 1}
    assert r.to_dict()["findings"][0]["element"] == "a:2 - c:1"


@pytest.mark.parametrize("speed,mbps", [("100G", 100000.0), ("400G", 400000.0), ("10G", 10000.0)])
def test_speed_mbps(speed: str, mbps: float) -> None:
    assert links.speed_mbps(speed) == mbps


def test_known_bad_elements_explain_their_failures_first() -> None:
    """A leaf lies on more failing flows than either bad cable behind it (the lab run with a
    too-small MTU on one server port and another port dead, 2026-12-06): the cables whose own
    checks failed are named, not the leaf."""
    mtu, dead = "cable s1:p1", "cable s1:p2"
    probed = [
        Probed("a", False, (mtu, "switch leaf1", "cable s2:p1")),
        Probed("b", False, ("cable s2:p1", "switch leaf1", mtu)),
        Probed("c", False, (mtu, "switch leaf1", "switch leaf2", "cable s2:p2")),
        Probed("d", False, (dead, "switch leaf2", "switch leaf1", "cable s2:p1")),
        Probed("e", True, ("cable s2:p2", "switch leaf2"), ("cable s2:p2", "switch leaf2")),
    ]
    evidence = {mtu: "could not send 9000-byte frames", dead: "link down"}
    found = {s.elements: set(s.probes) for s in localise(probed, evidence)}
    assert found == {(mtu,): {"a", "b", "c"}, (dead,): {"d"}}


def test_lossless_queue_counters_from_tc_json() -> None:
    """`tc -s -j qdisc show` (iproute2 6.1): the RED qdiscs of the lossless bands."""
    qdiscs = [
        {"kind": "prio", "handle": "1:", "dev": "swp1", "root": True, "drops": 0},
        {
            "kind": "red",
            "handle": "13:",
            "parent": "1:3",
            "dev": "swp1",
            "drops": 2,
            "marked": 5,
            "early": 0,
            "pdrop": 2,
        },
        {
            "kind": "red",
            "handle": "14:",
            "parent": "1:4",
            "dev": "swp1",
            "drops": 0,
            "xstats": {"marked": 1},
        },
    ]
    assert roce.red_stats(qdiscs) == {
        "swp1:3": {"drops": 2, "marked": 5},
        "swp1:4": {"drops": 0, "marked": 1},
    }


def test_lossless_queue_drops_fail_marks_do_not() -> None:
    devices = structured_configs(LAB, ["p1-g1-leaf1"])
    before = {"p1-g1-leaf1": {"swp1:3": {"drops": 0, "marked": 0}}}
    marked = {"p1-g1-leaf1": {"swp1:3": {"drops": 0, "marked": 7}}}
    dropped = {"p1-g1-leaf1": {"swp1:3": {"drops": 4, "marked": 7}}}
    access = lab_like_access()
    rows = {r.element: r for r in roce.findings(LAB, devices, before, marked, access)}
    assert rows["p1-g1-leaf1 lossless queues"].status == "pass"
    assert "7 ECN marks" in rows["p1-g1-leaf1 lossless queues"].what
    assert rows["RDMA bandwidth"].status == "skip"
    rows = {r.element: r for r in roce.findings(LAB, devices, before, dropped, access)}
    assert rows["p1-g1-leaf1 lossless queues"].what == "drops on lossless queues grew: swp1:3 +4"
    unread = {"p1-g1-leaf1": "CommandErrorException: klish"}
    rows = {r.element: r for r in roce.findings(LAB, devices, unread, unread, access)}
    assert rows["p1-g1-leaf1 lossless queues"].status == "skip"


def lab_like_access() -> Any:
    from controller.access import FabricAccess, ServerAccess, SwitchAccess

    return FabricAccess(
        SwitchAccess("root", None),
        ServerAccess("root"),
        None,
        "test",
        "embedded",  # type: ignore[arg-type]
    )


def _reported(pin: str, oper: str = "up", mtu: int = 9000, speed: int = -1) -> dict[str, Any]:
    return {"ports": {pin: {"oper": oper, "mtu": mtu, "speed": speed}}}


def test_each_pinned_server_port_is_judged_once_from_its_senders_reading() -> None:
    probes = server_probes(LAB)
    results = [_reported(str(p.flow.pin)) for p in probes]
    down, small = probes[0].flow, probes[1].flow
    results[0] = _reported(str(down.pin), oper="down")
    results[1] = _reported(str(small.pin), mtu=1500, speed=400000)
    rows = judge.server_port_findings(probes + probes[:1], [*results, results[0]], 9000)
    assert len(rows) == len(probes)  # one row a port, however many flows it sent
    by = {r.element: r for r in rows}
    dead = by[f"{down.src}:{down.pin}"]
    assert dead.failed and dead.stage == "links" and "link down" in dead.what
    assert (dead.device, dead.port) == (down.src, down.pin)
    mtu = by[f"{small.src}:{small.pin}"]
    assert mtu.failed and mtu.what == "server port MTU 1500, planned 9000"
    assert mtu.fix == f"set the MTU of {small.src}:{small.pin} to the planned 9000 (dpctl hosts)"
    fine = [r for r in rows if not r.failed]
    assert len(fine) == len(probes) - 2 and all(r.what == "server port up, MTU 9000" for r in fine)
    # a flow whose agent said nothing of its ports (an older agent) adds no row
    assert judge.server_port_findings(probes[:1], [{"received": 1}], 9000) == []


def test_the_probe_agent_reads_each_ports_state_from_sysfs(tmp_path: Path) -> None:
    from controller.agents.probe_agent import port_facts

    for name, files in {
        "nic1p1": {"mtu": "9000", "operstate": "up", "speed": "400000"},
        "nic2p1": {"mtu": "1500", "operstate": "down", "speed": "-1"},
    }.items():
        (tmp_path / name).mkdir()
        for item, text in files.items():
            (tmp_path / name / item).write_text(text + "\n")
    facts = port_facts(["nic1p1", "nic2p1", "gone"], str(tmp_path))
    assert facts == {
        "nic1p1": {"mtu": 9000, "oper": "up", "speed": 400000},
        "nic2p1": {"mtu": 1500, "oper": "down", "speed": -1},
        "gone": {"mtu": -1, "oper": "absent", "speed": -1},
    }


def _host_links(plane: int | None = None) -> list[Any]:
    return [lk for lk in LAB.links if lk.kind == "host" and (plane is None or lk.plane == plane)]


def test_each_server_cable_as_its_servers_lldp_sees_it() -> None:
    links = _host_links()
    good, swapped, silent = links[0], links[1], links[2]
    lldp: dict[str, dict[str, list[dict[str, str]]]] = {}
    for lk in links:
        lldp.setdefault(lk.a_device, {})[lk.a_port] = [{"hostname": lk.z_device, "port": lk.z_port}]
    lldp[swapped.a_device][swapped.a_port] = [{"hostname": "p9-leaf", "port": "swp9"}]
    lldp[silent.a_device][silent.a_port] = []
    rows = {r.element: r for r in judge.server_lldp_findings(LAB, None, lldp)}
    assert len(rows) == len(links)
    assert rows[cable_name(good)].status == "pass"
    wrong = rows[cable_name(swapped)]
    assert wrong.failed and wrong.stage == "cabling"
    assert wrong.what == (
        f"{swapped.a_device}:{swapped.a_port}'s LLDP sees p9-leaf:swp9, planned "
        f"{swapped.z_device}:{swapped.z_port}"
    )
    assert rows[cable_name(silent)].status == "skip"  # the leaf's side judges presence
    # a server whose lldpd did not answer has no rows; --plane keeps to that plane's cables
    del lldp[good.a_device]
    assert all(r.device != good.a_device for r in judge.server_lldp_findings(LAB, None, lldp))
    one = judge.server_lldp_findings(LAB, 1, lldp)
    assert {r.element for r in one} <= {cable_name(lk) for lk in _host_links(1)}


def test_lldpcli_json_of_each_server_is_read_from_one_lab_exec() -> None:
    from controller.lab.access import LLDP_MARK, lldp_blocks

    recorded = (
        Path(__file__).resolve().parents[1]
        / "drivers/mocked/frr/p1-g1-leaf1/lldpcli_f_json_show_neighbors.json"
    ).read_text()
    out = f"{LLDP_MARK}srv0001\n{recorded}\n{LLDP_MARK}srv0002\n{LLDP_MARK}srv0003\nnot json\n"
    found = lldp_blocks(out)
    assert set(found) == {"srv0001"}  # no answer, or no JSON: left out
    assert found["srv0001"]["swp3"] == [{"hostname": "p1-spine1", "port": "swp1"}]


def test_lldp_of_each_server_is_read_from_ansibles_events() -> None:
    from controller.traffic_ansible import LLDP_TASK, lldp_from_events

    recorded = (
        Path(__file__).resolve().parents[1]
        / "drivers/mocked/frr/p1-g1-leaf1/lldpcli_f_json_show_neighbors.json"
    ).read_text()

    def event(host: str, rc: int, stdout: str, task: str = LLDP_TASK) -> dict[str, Any]:
        data = {"host": host, "task": task, "res": {"rc": rc, "stdout": stdout}}
        return {"event": "runner_on_ok", "event_data": data}

    events = [
        event("srv0001", 0, recorded),
        event("srv0002", 2, ""),  # no lldpcli: failed_when false, rc says so
        event("srv0003", 0, "lldpcli: no lldpd running"),
        event("srv0004", 0, recorded, task="Gathering Facts"),
    ]
    found = lldp_from_events(events)
    assert set(found) == {"srv0001"}
    assert found["srv0001"]["swp3"] == [{"hostname": "p1-spine1", "port": "swp1"}]
