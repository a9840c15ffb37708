"""The ARP-to-host agent's decisions: EVPN-MH segments (a server's /32 only while the leaf's ES
bond serves it) and the pacing of its passes.

The decision reads `ip -d -j link show` (iproute2's JSON of each bond member: its master, its
flags and the LACP partner's port state). The host kernel here has no bonding, so the
member's data is written out as iproute2 prints it; the fabric lab's EVPN-MH test
(`tests/lab/test_fabric_lab.py`) runs it against real bonds.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from controller.agents.arp_to_host import (
    arpwatch,
    freshness,
    gate,
    journal,
    pacing,
    segments,
    taps,
    vtysh,
    zebra,
)
from controller.agents.arp_to_host import heal as agent_heal
from controller.agents.arp_to_host import kernel as agent_kernel
from controller.agents.arp_to_host import synced as agent_synced
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY

SEGMENTS = {"bond3": {"member": "swp5", "hosts": ["10.100.0.2"]}}


@pytest.fixture(autouse=True)
def fresh_lacp_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own record of the members' carrier losses (the agent keeps one)."""
    monkeypatch.setattr(segments, "FRESHNESS", freshness.Freshness())


IN_SYNC = 0x3D  # activity, aggregation, sync, collecting, distributing (short timeout off)


def member(
    flags: tuple[str, ...] = ("BROADCAST", "UP", "LOWER_UP"),
    master: str = "bond3",
    partner: int | None = IN_SYNC,
    actor: int = IN_SYNC,
) -> dict[str, Any]:
    slave: dict[str, Any] = {"state": "ACTIVE", "mii_status": "UP"}
    slave["ad_actor_oper_port_state"] = actor
    if partner is not None:
        slave["ad_partner_oper_port_state"] = partner
    return {
        "ifname": "swp5",
        "flags": list(flags),
        "master": master,
        "linkinfo": {"info_slave_kind": "bond", "info_slave_data": slave},
    }


def test_bond_serves_a_server_in_sync_collecting_and_distributing() -> None:
    assert segments.serving_bonds([member()], SEGMENTS) == {"bond3"}


@pytest.mark.parametrize(
    ("link", "why"),
    [
        (member(flags=("BROADCAST", "UP")), "no carrier (the cable or the server's port is down)"),
        (member(partner=0x01), "LACP partner defaulted: the server holds the port out (updelay)"),
        (member(partner=0x0D), "in sync but not yet collecting or distributing"),
        (member(partner=None), "no LACP partner state at all"),
        (member(actor=0x4F), "the server distributes, this leaf's port not yet (defaulted)"),
        (member(master="bond9"), "the member is enslaved elsewhere"),
    ],
)
def test_bond_does_not_serve(link: dict[str, Any], why: str) -> None:
    assert segments.serving_bonds([link], SEGMENTS) == set(), why


def test_missing_member_does_not_serve() -> None:
    assert segments.serving_bonds([], SEGMENTS) == set()


def bond(min_links: int, name: str = "bond3") -> dict[str, Any]:
    return {
        "ifname": name,
        "flags": ["BROADCAST", "MASTER", "UP"],
        "linkinfo": {"info_kind": "bond", "info_data": {"mode": "802.3ad", "min_links": min_links}},
    }


@pytest.mark.parametrize(
    ("min_links", "serving", "lines", "why"),
    [
        (1, {"bond3"}, [], "serving and ungated: nothing to do"),
        (1, set(), ["link set dev bond3 type bond min_links 2"], "stopped serving: carrier off"),
        (2, {"bond3"}, ["link set dev bond3 type bond min_links 1"], "serves again: ungate"),
        (2, set(), [], "still not serving and gated: nothing to do"),
    ],
)
def test_bond_carrier_follows_the_serving_decision(
    min_links: int, serving: set[str], lines: list[str], why: str
) -> None:
    """A bond that does not serve its server gets min_links above its one member, so that it
    has no carrier and the bridge's backup port (VXLAN to the pair) takes its traffic."""
    assert segments.bond_gates([bond(min_links), member()], SEGMENTS, serving) == lines, why


def test_bond_gate_leaves_what_is_not_a_bond_alone() -> None:
    not_yet = {"ifname": "bond3", "flags": ["UP"]}  # no linkinfo: not a bond (yet)
    assert segments.bond_gates([not_yet], SEGMENTS, set()) == []
    assert segments.bond_gates([], SEGMENTS, set()) == []
    other = bond(1, name="bond9")  # a bond of no segment of this leaf
    assert segments.bond_gates([other], SEGMENTS, set()) == []


def test_unserved_hosts_are_those_behind_bonds_that_do_not_serve() -> None:
    assert segments.unserved_hosts(SEGMENTS, set()) == {"10.100.0.2"}
    assert segments.unserved_hosts(SEGMENTS, {"bond3"}) == set()


def test_render_lists_each_segment_with_its_server_address() -> None:
    """Each EVPN-MH leaf's agent config names its ES bonds, their member and the address of
    the server NIC behind each; dual-ARP leaves have none."""
    fabric = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))
    files = render_fabric(fabric)
    for switch in fabric.switches:
        config = json.loads(files[switch.name]["arp-to-host.json"])
        if switch.role != "leaf":
            assert config["segments"] == {}
            continue
        addresses = {
            nic.ip
            for link in fabric.links_by_device[switch.name]
            if link.kind == "host"
            for server in [fabric.server_by_name[link.a_device]]
            for nic in server.nics
            if nic.rail in switch.rails
        }
        listed = {h for seg in config["segments"].values() for h in seg["hosts"]}
        assert listed == addresses and listed, switch.name
        assert all(seg["member"].startswith("swp") for seg in config["segments"].values())
    dual = render_fabric(build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml")))
    assert all(json.loads(f["arp-to-host.json"])["segments"] == {} for f in dual.values())


def test_pacer_link_event_reconciles_at_once_neighbour_events_once_a_second() -> None:
    pacer = pacing.Pacer()
    assert pacer.due(100.0) == (True, True)  # first pass asks zebra
    pacer.done(100.0, asked_zebra=True, missing=False)
    assert pacer.due(100.1) == (False, False)
    pacer.note("[NEIGH]10.100.0.2 dev vlan1001 lladdr 02:00:00:00:00:01 REACHABLE\n")
    assert pacer.due(100.5) == (False, False)  # neighbour churn: held
    assert pacer.wait(100.5) == pytest.approx(0.5)
    assert pacer.due(101.0) == (True, False)
    pacer.done(101.0, asked_zebra=False, missing=False)
    pacer.note("[LINK]5: swp1: <NO-CARRIER,BROADCAST,UP> mtu 9216 state DOWN\n    link/ether")
    assert pacer.due(101.01) == (True, False)  # carrier: no wait


def test_pacer_asks_zebra_every_30_s_or_every_resync_while_a_server_is_missing() -> None:
    pacer = pacing.Pacer()
    pacer.done(0.0, asked_zebra=True, missing=False)
    assert pacer.due(5.0) == (True, False)  # the resync, without zebra
    pacer.done(5.0, asked_zebra=False, missing=False)
    assert pacer.due(30.0) == (True, True)
    pacer.done(30.0, asked_zebra=True, missing=True)
    assert pacer.wait(30.0) == pytest.approx(pacing.RESYNC_S)
    assert pacer.due(35.0) == (True, True)  # a server lacks its neighbour: zebra each resync


def fake_sysfs(root: Any, min_links: int, carrier: int, actor: int, partner: int) -> str:
    """The sysfs files the agent polls while a bond is gated (bonding's sysfs names)."""
    (root / "bond3" / "bonding").mkdir(parents=True)
    (root / "bond3" / "bonding" / "min_links").write_text(f"{min_links}\n")
    slave = root / "swp5" / "bonding_slave"
    slave.mkdir(parents=True)
    (root / "swp5" / "carrier").write_text(f"{carrier}\n")
    (slave / "ad_actor_oper_port_state").write_text(f"{actor}\n")
    (slave / "ad_partner_oper_port_state").write_text(f"{partner}\n")
    return str(root)


def test_gated_bond_is_polled_until_lacp_distributes_at_both_ends(tmp_path: Any) -> None:
    root = fake_sysfs(tmp_path / "a", 2, 1, IN_SYNC, IN_SYNC)
    assert segments.gated_members(SEGMENTS, root) == [("bond3", "swp5")]
    assert segments.lacp_serving_now("swp5", root)
    segments.open_gate("bond3", root)
    assert segments.gated_members(SEGMENTS, root) == []
    for case, args in {
        "no carrier": (2, 0, IN_SYNC, IN_SYNC),
        "the server still holds the port out (partner defaulted)": (2, 1, 0x4F, 0x00),
        "the server distributes, this end not yet": (2, 1, 0x4F, IN_SYNC),
    }.items():
        other = fake_sysfs(tmp_path / case.replace(" ", "-"), *args)
        assert not segments.lacp_serving_now("swp5", other), case
    ungated = fake_sysfs(tmp_path / "open", 1, 1, IN_SYNC, IN_SYNC)
    assert segments.gated_members(SEGMENTS, ungated) == []
    assert segments.gated_members(SEGMENTS, str(tmp_path / "none")) == []
    assert not segments.lacp_serving_now("swp5", str(tmp_path / "none"))


def test_gate_opens_while_a_pass_still_runs(tmp_path: Any) -> None:
    """GateWatch opens a gated bond within a poll of LACP distributing at both ends, while
    the main loop is still busy in a pass (the sleep here): a gate polled between passes
    stayed shut for 3.0 s of a flow in CI, a pass (ip, vtysh) being that slow under load."""
    root = fake_sysfs(tmp_path, 2, 1, IN_SYNC, 0x4F)  # the server holds the port out
    watch = gate.GateWatch(SEGMENTS, root)
    watch.start()
    time.sleep(0.5)
    assert segments.gated_members(SEGMENTS, root) == [("bond3", "swp5")]
    assert segments.serving_now(SEGMENTS, root) == set()
    (tmp_path / "swp5" / "bonding_slave" / "ad_partner_oper_port_state").write_text("61\n")
    flipped = time.monotonic()
    while segments.gated_members(SEGMENTS, root) and time.monotonic() - flipped < 2.0:
        time.sleep(0.02)  # the main loop's pass would be running here
    waited = time.monotonic() - flipped
    assert segments.gated_members(SEGMENTS, root) == [], "still gated after 2 s"
    assert waited < gate.GATE_POLL_S + 0.3, waited
    assert segments.serving_now(SEGMENTS, root) == {"bond3"}
    assert (tmp_path / "bond3" / "bonding" / "min_links").read_text().strip() == "1"


def test_gate_watch_leaves_an_open_bond_and_a_bond_not_serving_alone(tmp_path: Any) -> None:
    held = gate.GateWatch(SEGMENTS, fake_sysfs(tmp_path / "held", 2, 1, IN_SYNC, 0x4F))
    assert held.check() == ([], ["swp5"])  # gated, not serving: stays gated, keeps watching
    opened = gate.GateWatch(SEGMENTS, fake_sysfs(tmp_path / "open", 1, 0, 0, 0))
    assert opened.check() == ([], [])  # not gated: nothing to do, whatever LACP says
    ready = gate.GateWatch(SEGMENTS, fake_sysfs(tmp_path / "ready", 2, 1, IN_SYNC, 61))
    assert ready.check() == (["bond3"], [])


# FRR 8.4's replay race, as the lab showed it on p1-g1-leaf1 (2026-12-03): zebra holds both
# segment EVIs as local, the restarted bgpd only as remote (the pair's routes), while it knows
# the VNI from the kernel.
ESI_1, ESI_2 = "03:02:d1:00:00:01:01:00:00:01", "03:02:d1:00:00:02:01:00:00:03"
ZEBRA_EVIS = [
    {"esi": ESI_1, "vni": 10000, "type": ["local"]},
    {"esi": ESI_2, "vni": 10000, "type": ["local"]},
]
VTEP = [{"vtep_ip": "10.255.0.7", "flags": ["ead-per-es", "ead-per-evi"]}]
BGP_LOST = [
    {"esi": ESI_1, "vni": 10000, "type": ["remote"], "vteps": VTEP},
    {"esi": ESI_2, "vni": 10000, "type": ["remote"], "vteps": VTEP},
]
BGP_WHOLE = [dict(e, type=["local", "remote"]) for e in BGP_LOST]
BGP_VNIS = {
    "advertiseAllVnis": "Enabled",
    "numVnis": 1,
    "10000": {"vni": 10000, "inKernel": "True"},
}
HEAL_SEGMENTS = {
    "bond1": {"member": "swp1", "hosts": ["10.0.0.2"], "esi": ESI_1, "es_id": 1},
    "bond2": {"member": "swp2", "hosts": ["10.0.0.10"], "esi": ESI_2, "es_id": 3},
}


def test_lost_segment_evis_are_local_in_zebra_and_not_in_bgpd() -> None:
    esis = {ESI_1, ESI_2}
    lost = agent_heal.lost_segment_evis(ZEBRA_EVIS, BGP_LOST, BGP_VNIS, esis)
    assert lost == {(ESI_1, 10000), (ESI_2, 10000)}
    assert agent_heal.lost_segment_evis(ZEBRA_EVIS, BGP_WHOLE, BGP_VNIS, esis) == set()
    # bgpd holding nothing at all for the segment (the pair's routes not there yet) is lost too
    assert agent_heal.lost_segment_evis(ZEBRA_EVIS, [], BGP_VNIS, esis) == lost


@pytest.mark.parametrize(
    ("bgp_vnis", "esis", "why"),
    [
        ({"numVnis": 0}, {ESI_1, ESI_2}, "bgpd does not know the VNI yet: it may still come"),
        ({"10000": {"vni": 10000, "inKernel": "False"}}, {ESI_1, ESI_2}, "VNI not from zebra"),
        (BGP_VNIS, set(), "not a segment of this leaf's agent"),
        (None, {ESI_1, ESI_2}, "bgpd did not answer"),
    ],
)
def test_no_lost_evi_without_a_known_vni_or_a_segment_of_ours(
    bgp_vnis: Any, esis: set[str], why: str
) -> None:
    assert agent_heal.lost_segment_evis(ZEBRA_EVIS, BGP_LOST, bgp_vnis, esis) == set(), why


def test_vtysh_json_reads_each_commands_document(monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = {"out": json.dumps(ZEBRA_EVIS, indent=2) + "\n" + json.dumps(BGP_VNIS) + "\n"}

    class Done:
        returncode = 0
        stderr = ""

        @property
        def stdout(self) -> str:
            return outputs["out"]

    monkeypatch.setattr(vtysh.subprocess, "run", lambda *a, **k: Done())
    assert vtysh.vtysh_json("a", "b") == [ZEBRA_EVIS, BGP_VNIS]
    assert vtysh.vtysh_json("a", "b", "c") is None  # one command gave no JSON
    outputs["out"] = "% bgpd is not running\n" + json.dumps(BGP_VNIS)
    assert vtysh.vtysh_json("a", "b") is None


def test_heal_acts_on_an_evi_lost_at_two_looks_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first look only suspects (a bgpd just started learns over a few seconds); the
    second re-applies the ids of the bonds whose EVI is still lost; a look without an answer
    (bgpd restarting) starts over."""
    answers: list[list[Any] | None] = [
        [ZEBRA_EVIS, BGP_LOST, BGP_VNIS],
        None,
        [ZEBRA_EVIS, BGP_LOST, BGP_VNIS],
        [ZEBRA_EVIS, BGP_LOST, BGP_VNIS],
        [ZEBRA_EVIS, BGP_WHOLE, BGP_VNIS],
    ]
    applied: list[list[tuple[str, int]]] = []
    monkeypatch.setattr(vtysh, "vtysh_json", lambda *c: answers.pop(0))

    def reapply(bonds: list[tuple[str, int]]) -> tuple[int, str]:
        applied.append(bonds)
        return 0, ""

    monkeypatch.setattr(agent_heal, "reapply_es_ids", reapply)
    heal = agent_heal.EviHeal(HEAL_SEGMENTS)
    assert heal.check(1000.0) == []  # suspected
    assert heal.check(1010.0) == []  # no answer: start over
    assert heal.check(1020.0) == []  # suspected again
    assert heal.check(1030.0) == ["bond1", "bond2"]
    assert applied == [[("bond1", 1), ("bond2", 3)]]
    assert heal.check(1060.0) == [] and heal.suspect == set()


def test_heal_does_not_churn_a_segment_it_could_not_heal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment still lost after its id was re-applied is re-applied again only after
    HEAL_AGAIN_S."""
    monkeypatch.setattr(vtysh, "vtysh_json", lambda *c: [ZEBRA_EVIS, BGP_LOST, BGP_VNIS])
    applied: list[list[tuple[str, int]]] = []
    monkeypatch.setattr(agent_heal, "reapply_es_ids", lambda b: (applied.append(b), (0, ""))[1])
    heal = agent_heal.EviHeal(HEAL_SEGMENTS)
    times = [0.0, 10.0, 40.0, 50.0, 80.0, 90.0, 130.0, 140.0]
    healed = [heal.check(t) for t in times]
    assert [i for i, bonds in enumerate(healed) if bonds] == [1, 7], healed
    assert len(applied) == 2


def test_render_gives_each_segment_its_esi_and_es_id() -> None:
    """The agent re-applies the es-id the frr.conf of the same render gives the bond."""
    fabric = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))
    files = render_fabric(fabric)
    for switch in fabric.switches:
        if switch.role != "leaf":
            continue
        config = json.loads(files[switch.name]["arp-to-host.json"])
        frr = files[switch.name]["frr.conf"]
        for bond, seg in config["segments"].items():
            assert f"interface {bond}\n" in frr
            stanza = frr.split(f"interface {bond}\n", 1)[1].split("exit", 1)[0]
            assert f" evpn mh es-id {seg['es_id']}\n" in stanza, (switch.name, bond)
            assert seg["esi"].startswith("03:")


SERVER_ENTRY = "neigh replace 10.100.0.2 lladdr f6:39:47:bf:45:01 dev vlan1001"
PROBE_LINE = f"{SERVER_ENTRY} proto static nud probe"
"""The agent's hand-back of srv0001 on vlan1001 (``synced.probe_line``)."""
NOARP_LINE = f"{SERVER_ENTRY} proto static extern_learn nud noarp"
"""The agent's own entry of it (``synced.install_line``)."""
ZEBRA_STALE = {"dst": "10.100.0.2", "dev": "vlan1001", "lladdr": "f6:39:47:bf:45:01"}


@pytest.mark.parametrize(
    ("extra", "verified"),
    [
        ({"state": ["STALE"], "protocol": "zebra"}, False),  # zebra's re-install at hold expiry
        ({"state": ["DELAY"], "protocol": "zebra"}, False),
        ({"state": ["NOARP"], "protocol": "zebra", "extern_learn": None}, False),  # ours
        ({"state": ["STALE"]}, False),  # learned by this leaf's kernel, not verified since
        ({"state": ["REACHABLE"]}, True),
    ],
)
def test_verified_here_names_only_what_this_leafs_kernel_verified(
    extra: dict[str, Any], verified: bool
) -> None:
    assert zebra._verified_here({**ZEBRA_STALE, **extra}) is verified


ZEBRA_SYNCED = {("10.100.0.2", "vlan1001"): "f6:39:47:bf:45:01"}
SETTLED = 3600.0
"""Seconds this leaf's BGP EVPN has been up, in the tests that are not about a restart."""


def _synced(
    monkeypatch: pytest.MonkeyPatch, verified: bool = True
) -> tuple[agent_synced.Synced, list[list[str]]]:
    """A Synced whose zebra lists ZEBRA_SYNCED (as verified by the pair or not); the ip
    batches it would run."""
    batches: list[list[str]] = []
    flags = {"peerActive": True} if verified else {"localInactive": True}
    answer = {k: {"type": "local", "mac": mac, **flags} for k, mac in ZEBRA_SYNCED.items()}
    monkeypatch.setattr(agent_kernel, "_ip_batch", batches.append)
    monkeypatch.setattr(zebra, "zebra_answer", lambda svis: (dict(answer), SETTLED))
    return agent_synced.Synced({"10000": "vlan1001"}), batches


def _synced_batches(
    monkeypatch: pytest.MonkeyPatch, kernel: list[dict[str, Any]]
) -> list[list[str]]:
    synced, batches = _synced(monkeypatch)
    synced.installed = dict(ZEBRA_SYNCED)  # the agent installed it before
    synced.apply(kernel, ask_zebra=False)
    synced.apply(kernel, ask_zebra=True)
    return batches


def test_synced_entry_zebra_put_back_as_stale_is_replaced_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At its hold timer's end zebra re-installs the synced neighbour STALE; left so, the
    kernel probes it and, with this leaf's link to the server down, fails it 8 s later."""
    kernel = [{**ZEBRA_STALE, "state": ["STALE"], "protocol": "zebra"}]
    replace = NOARP_LINE
    assert _synced_batches(monkeypatch, kernel) == [[replace], [replace]]


def test_synced_entry_already_ours_or_verified_here_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours = [{**ZEBRA_STALE, "state": ["NOARP"], "protocol": "zebra", "extern_learn": None}]
    verified = [{**ZEBRA_STALE, "state": ["REACHABLE"]}]
    assert _synced_batches(monkeypatch, ours) == []
    assert _synced_batches(monkeypatch, verified) == []


@pytest.mark.parametrize("state", ["STALE", "DELAY", "PROBE"])
def test_an_entry_this_leaf_cannot_verify_takes_the_pairs_word(
    monkeypatch: pytest.MonkeyPatch, state: str
) -> None:
    """The kernel's own unverified entry (a hand-back, or learned from the server's ARP
    request) while the pair verifies the server: its probes would go unanswered here
    whenever the server's ARP hashes to the pair, so the agent's entry replaces it."""
    synced, batches = _synced(monkeypatch)
    synced.apply([{**ZEBRA_STALE, "state": [state]}], ask_zebra=True)
    assert batches == [[NOARP_LINE]]


def test_synced_entry_a_restarted_agent_finds_is_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new agent (deploy, reboot) takes the NOARP entries it finds as its own, so a later
    STALE re-install by zebra is replaced at the next event, not at the next ask of zebra."""
    synced, batches = _synced(monkeypatch)
    ours = [{**ZEBRA_STALE, "state": ["NOARP"], "protocol": "zebra", "extern_learn": None}]
    synced.apply(ours, ask_zebra=True)
    assert batches == [] and synced.installed == ZEBRA_SYNCED
    synced.apply([{**ZEBRA_STALE, "state": ["STALE"], "protocol": "zebra"}], ask_zebra=False)
    assert len(batches) == 1 and batches[0][0].startswith("neigh replace 10.100.0.2 ")


def test_stale_reinstall_over_an_entry_the_leaf_had_learned_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The leaf's kernel had learned the server itself (so the agent installed nothing);
    zebra's later STALE re-install is replaced at the next pass from zebra's last answer,
    without asking zebra again."""
    synced, batches = _synced(monkeypatch)
    synced.apply([{**ZEBRA_STALE, "state": ["REACHABLE"]}], ask_zebra=True)
    assert batches == [] and synced.installed == {}
    monkeypatch.setattr(zebra, "zebra_answer", lambda svis: pytest.fail("asked zebra"))
    synced.apply([{**ZEBRA_STALE, "state": ["STALE"], "protocol": "zebra"}], ask_zebra=False)
    assert len(batches) == 1 and batches[0][0].startswith("neigh replace 10.100.0.2 ")
    # a failed entry the agent never installed waits for zebra's next answer
    synced.installed = {}
    synced.apply([{**ZEBRA_STALE, "state": ["FAILED"]}], ask_zebra=False)
    assert len(batches) == 1


# FRR 8.4.4's `show evpn arp-cache vni all detail json` (zebra_evpn_print_neigh): per VNI, the
# count and one object per address; sync flags present only when set, the hold timer as the
# time left (HH:MM:SS).
DETAIL = {
    "10000": {
        "numArpNd": 4,
        "10.100.0.2": {
            "ip": "10.100.0.2",
            "type": "local",
            "state": "active",
            "mac": "F6:39:47:BF:45:01",
            "localInactive": True,
            "peerActive": True,
        },
        "10.100.0.3": {
            "ip": "10.100.0.3",
            "type": "local",
            "state": "active",
            "mac": "f6:39:47:bf:45:02",
            "localInactive": True,
        },
        "10.100.0.4": {"ip": "10.100.0.4", "type": "remote", "mac": "f6:39:47:bf:45:03"},
        "fe80::1": {"ip": "fe80::1", "type": "local", "mac": "f6:39:47:bf:45:04"},
    },
    "20000": {"numArpNd": 0},
}


# `show bgp l2vpn evpn summary json` of FRR 8.4 (bgpd/bgp_vty.c, bgp_show_summary; the
# fields the agent reads: each peer's state and peerUptimeMsec)
SUMMARY = {
    "routerId": "10.0.0.11",
    "peers": {
        "swp51": {"state": "Established", "peerUptimeMsec": 42000, "pfxRcd": 8},
        "swp52": {"state": "Established", "peerUptimeMsec": 7000, "pfxRcd": 8},
        "swp53": {"state": "Active", "peerUptimeMsec": 900000},
    },
}


# `show bgp neighbors json` (bgpd/bgp_vty.c, bgp_show_peer): End-of-RIB received per family
def _neighbors(*with_eor: str, key: str = "l2VpnEvpn") -> dict[str, Any]:
    return {
        name: {"gracefulRestartInfo": {"endOfRibRecv": {key: True} if name in with_eor else {}}}
        for name in ("swp51", "swp52", "swp53")
    }


def _fake_vtysh(
    monkeypatch: pytest.MonkeyPatch, out: list[str], neighbors: dict[str, Any]
) -> list[list[str]]:
    seen: list[list[str]] = []

    def run(cmd: list[str], **_: Any) -> Any:
        seen.append(cmd)
        text = json.dumps(neighbors) if zebra.EOR_ASK in cmd else out[0]
        return type("Done", (), {"stdout": text})()

    monkeypatch.setattr(vtysh.subprocess, "run", run)
    return seen


def test_zebra_and_bgpd_are_asked_in_one_vtysh(monkeypatch: pytest.MonkeyPatch) -> None:
    out = [json.dumps(DETAIL) + "\n" + json.dumps(SUMMARY) + "\n"]
    seen = _fake_vtysh(monkeypatch, out, {})
    settled = {
        **SUMMARY,
        "peers": {"swp51": {**SUMMARY["peers"]["swp51"], "peerUptimeMsec": 420000}},
    }
    out[0] = json.dumps(DETAIL) + "\n" + json.dumps(settled) + "\n"
    got, up_for = zebra.zebra_answer({"10000": "vlan1001", "20000": "vlan1002"})
    assert up_for == 420.0 and len(seen) == 1  # long settled: no End-of-RIB question
    out[0] = json.dumps(DETAIL) + "\n" + json.dumps(SUMMARY) + "\n"
    seen = _fake_vtysh(monkeypatch, out, _neighbors("swp51", "swp52"))

    got, up_for = zebra.zebra_answer({"10000": "vlan1001", "20000": "vlan1002"})
    assert seen[0] == [
        "vtysh",
        "-c",
        "show evpn arp-cache vni all detail json",
        "-c",
        "show bgp l2vpn evpn summary json",
    ]
    assert seen[1:] == [["vtysh", "-c", zebra.EOR_ASK]]  # up 42 s: are the tables in?
    assert up_for == 42.0  # the longest-established session
    assert sorted(got) == [("10.100.0.2", "vlan1001"), ("10.100.0.3", "vlan1001")]
    first, stale = got[("10.100.0.2", "vlan1001")], got[("10.100.0.3", "vlan1001")]
    assert first["mac"] == "f6:39:47:bf:45:01" and zebra.pair_confirms(first)
    assert not zebra.pair_confirms(stale)  # the 6.12 lab's stale one
    # bgpd not running: zebra's answer stands, the EVPN is not up
    out[0] = json.dumps(DETAIL) + "\n% bgpd is not running\n"
    got, up_for = zebra.zebra_answer({"10000": "vlan1001"})
    assert len(got) == 2 and up_for == 0.0
    out[0] = ""  # vtysh answered nothing at all
    assert zebra.zebra_answer({"10000": "vlan1001"}) == ({}, 0.0)


@pytest.mark.parametrize(
    ("neighbors", "up_for"),
    [
        (_neighbors("swp51", "swp52"), 42.0),  # both established peers sent End-of-RIB
        (_neighbors("swp51", "swp52", key="L2VPN EVPN"), 42.0),  # FRR before 7.4's key
        (_neighbors("swp51"), 0.0),  # swp52's table is not in yet: still settling
        (_neighbors("swp51", "swp52", key="ipv4Unicast"), 0.0),  # another family's
        (
            {
                n: {
                    "gracefulRestartInfo": {"l2VpnEvpn": {"endOfRibStatus": {"endOfRibRecv": True}}}
                }
                for n in ("swp51", "swp52")
            },
            42.0,
        ),
        ({}, 0.0),  # bgpd gave no answer
    ],
)
def test_evpn_counts_as_settled_once_every_peer_sent_its_end_of_rib(
    monkeypatch: pytest.MonkeyPatch, neighbors: dict[str, Any], up_for: float
) -> None:
    out = [json.dumps(DETAIL) + "\n" + json.dumps(SUMMARY) + "\n"]
    _fake_vtysh(monkeypatch, out, neighbors)
    assert zebra.zebra_answer({"10000": "vlan1001"})[1] == up_for


def test_evpn_settles_without_end_of_rib_after_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer that never sends End-of-RIB (no graceful-restart capability) delays the
    agent's removals by EVPN_EOR_WAIT_S at most."""
    late = zebra.EVPN_SETTLE_S + zebra.EVPN_EOR_WAIT_S + 1
    summary = {"peers": {"swp51": {"state": "Established", "peerUptimeMsec": late * 1000}}}
    out = [json.dumps(DETAIL) + "\n" + json.dumps(summary) + "\n"]
    seen = _fake_vtysh(monkeypatch, out, {})
    assert zebra.zebra_answer({"10000": "vlan1001"})[1] == late and len(seen) == 1


@pytest.mark.parametrize(
    ("summary", "up_for"),
    [
        (SUMMARY, 42.0),
        ({"l2VpnEvpn": SUMMARY}, 42.0),  # inside its address family's object
        ({"peers": {"swp53": {"state": "Connect", "peerUptimeMsec": 5000}}}, 0.0),
        ({"peers": {}}, 0.0),
        (None, 0.0),
        ([1, 2], 0.0),
    ],
)
def test_evpn_up_for_reads_the_longest_established_session(summary: Any, up_for: float) -> None:
    assert zebra.evpn_up_for(summary) == up_for


def test_a_restarted_bgpd_takes_no_entry_away_until_its_evpn_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """zebra drops its whole EVPN state when bgpd goes (zebra_evpn_vrf_cfg_cleanup) and
    lists the pair's syncs again only once the new bgpd's sessions are up: its silence, or a
    hold that ran out while they were down, is not the pair's word. The bench's FRR crash
    (6.1 lab, 2026-12-04) lost 3.1 s into the crashed leaf's servers from 7.9 s after the
    kill, which fits (not traced)."""
    synced, batches = _synced(monkeypatch)
    answer: dict[tuple[str, str], dict[str, Any]] = {}
    up = [0.0]
    monkeypatch.setattr(zebra, "zebra_answer", lambda svis: (dict(answer), up[0]))
    synced.installed = dict(ZEBRA_SYNCED)  # the agent's entry, the pair verifies the server
    ours = [{**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}]
    assert not synced.apply(ours, ask_zebra=True, now=100.0)  # bgpd gone: zebra lists nothing
    assert batches == [] and synced.installed == ZEBRA_SYNCED and synced.settling
    assert synced.next_ask(100.0) == 100.0 + zebra.EVPN_SETTLE_S
    # the new bgpd registered: zebra lists it again, its hold long over (started at the crash)
    held = {"type": "local", "mac": "f6:39:47:bf:45:01", "peerActive": True}
    held["peerActiveHold"] = _left(HOLD - 30)
    answer.update({("10.100.0.2", "vlan1001"): held})
    up[0] = zebra.EVPN_SETTLE_S - 1
    assert not synced.apply(ours, ask_zebra=True, now=110.0)
    assert batches == [] and synced.installed == ZEBRA_SYNCED
    # settled, and the pair never synced it again: now it is the pair's word
    up[0] = zebra.EVPN_SETTLE_S
    assert synced.apply(ours, ask_zebra=True, now=120.0)
    assert batches[-1][0].endswith("nud probe") and not synced.settling
    # settled, and zebra no longer lists it at all: deleted
    answer.clear()
    synced.installed = dict(ZEBRA_SYNCED)
    assert synced.apply(ours, ask_zebra=True, now=130.0)
    assert batches[-1] == ["neigh del 10.100.0.2 dev vlan1001"]


HOLD = zebra.NEIGH_HOLD_S


def _left(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


@pytest.mark.parametrize(
    ("entry", "confirms"),
    [
        ({"type": "local", "peerActive": True}, True),
        ({"type": "local", "peerActive": True, "localInactive": True}, True),
        ({"type": "local", "peerActive": True, "peerActiveHold": _left(HOLD - 5)}, True),
        ({"type": "local", "peerActive": True, "peerActiveHold": _left(HOLD - 30)}, False),
        ({"type": "local", "peerActive": True, "peerActiveHold": "soon"}, False),
        ({"type": "local", "localInactive": True}, False),  # hold over: nobody verifies it
        ({"type": "local", "peerProxy": True, "localInactive": True}, False),
        ({"type": "remote", "peerActive": True}, False),
    ],
)
def test_pair_confirms_while_peer_active_and_not_on_hold_for_long(
    entry: dict[str, Any], confirms: bool
) -> None:
    assert zebra.pair_confirms(entry) is confirms


def test_an_entry_the_pair_no_longer_verifies_goes_back_to_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept NOARP, it would ignore the server's ARP for good: this leaf could never verify
    it, and the pair has nothing left to sync (the 6.12 lab's planned restart, 2026-12-04).
    Handed back with its MAC in state PROBE, it still forwards, and the kernel verifies it
    at once."""
    synced, batches = _synced(monkeypatch, verified=False)
    synced.installed = dict(ZEBRA_SYNCED)
    ours = [{**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}]
    assert synced.apply(ours, ask_zebra=True, now=50.0)
    assert batches == [[PROBE_LINE]]
    assert synced.installed == {}
    # zebra is asked at every pass while the kernel probes it ...
    assert synced.next_ask(51.0) == 51.0 + pacing.NEIGH_EVENT_S
    probing = [{**ZEBRA_STALE, "state": ["PROBE"]}]
    synced.apply(probing, ask_zebra=True, now=52.0)
    assert synced.next_ask(52.0) == 52.0 + pacing.NEIGH_EVENT_S
    # ... until it settles: verified here (the server's answer reached this leaf) ...
    synced.apply([{**ZEBRA_STALE, "state": ["REACHABLE"]}], ask_zebra=True, now=53.0)
    assert synced.next_ask(53.0) == float("inf")
    # ... or by the pair, and the agent's entry is back before the probes fail
    again, batches = _synced(monkeypatch)
    again.apply(probing, ask_zebra=True, now=52.0)
    assert batches[-1][0].endswith("extern_learn nud noarp")
    again.apply([{**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}], now=53.0)
    assert again.next_ask(53.0) == float("inf")
    # a restarted agent's entry it never installed itself goes back too
    fresh, batches = _synced(monkeypatch, verified=False)
    fresh.apply(ours, ask_zebra=True, now=0.0)
    assert batches == [[PROBE_LINE]]
    # the kernel's own entries, and zebra's, are the kernel's to verify already
    for kernel in (
        [{**ZEBRA_STALE, "state": ["STALE"]}],
        [{**ZEBRA_STALE, "state": ["STALE"], "protocol": "zebra"}],
    ):
        other, batches = _synced(monkeypatch, verified=False)
        assert not other.apply(kernel, ask_zebra=True) and batches == []


@pytest.mark.parametrize(("state", "logged"), [("PROBE", False), ("FAILED", True)])
def test_a_handed_back_entry_put_back_after_its_probes_failed_is_logged(
    monkeypatch: pytest.MonkeyPatch, state: str, logged: bool
) -> None:
    """Put back while the kernel still probes it: the ordinary cycle, silent. Put back after
    its probes failed: the /32 was gone meanwhile, which the agent's log (and syslog) says."""
    lines: list[str] = []
    monkeypatch.setattr(journal, "log", lines.append)
    synced, batches = _synced(monkeypatch, verified=False)
    synced.installed = dict(ZEBRA_SYNCED)
    synced.apply([{**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}], now=50.0)
    assert batches[-1][0].endswith("nud probe") and lines == []
    again = {"type": "local", "mac": "f6:39:47:bf:45:01", "peerActive": True}
    monkeypatch.setattr(
        zebra, "zebra_answer", lambda svis: ({("10.100.0.2", "vlan1001"): again}, SETTLED)
    )
    synced.apply([{**ZEBRA_STALE, "state": [state]}], ask_zebra=True, now=53.0)
    assert batches[-1][0].endswith("extern_learn nud noarp")
    expected = ["put back 10.100.0.2 on vlan1001: this leaf's probes of it had failed"]
    assert lines == (expected if logged else [])
    # once put back it is the agent's again: a later failure of the kernel's is not a hand-back
    assert synced.handed_back == set()


def test_the_unproven_window_outlasts_the_rendered_probes() -> None:
    """The agent (stdlib only, copied to the switch) cannot import the renderer: its
    PROBE_AGAIN_S, the window in which a fresh probe gets no /32, must stay longer than the
    rendered probes last (1 s apart), or a gone server would get a /32 before its probes
    fail."""
    from controller.platforms.frr.render import EVPN_UNICAST_PROBES

    assert agent_synced.PROBE_AGAIN_S > EVPN_UNICAST_PROBES * 1.0


def test_an_entry_zebra_no_longer_lists_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    synced, batches = _synced(monkeypatch)
    synced.installed = {("10.100.0.9", "vlan1001"): "f6:39:47:bf:45:09"}
    synced.apply([], ask_zebra=True)
    assert batches == [
        [
            NOARP_LINE,
            "neigh del 10.100.0.9 dev vlan1001",
        ]
    ]
    assert synced.installed == ZEBRA_SYNCED


def test_pacer_asks_zebra_by_the_time_synced_names() -> None:
    pacer = pacing.Pacer()
    pacer.done(0.0, asked_zebra=True, missing=False, zebra_by=1.0)
    assert pacer.wait(0.0) == pytest.approx(1.0)
    assert pacer.due(0.5) == (False, False)
    assert pacer.due(1.0) == (True, True)
    pacer.done(1.0, asked_zebra=True, missing=False)
    assert pacer.due(2.0) == (False, False)
    assert pacer.due(31.0) == (True, True)


def test_an_entry_on_hold_is_looked_at_again_when_it_stops_counting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pair withdrew its active sync 4 s ago (ordinary: its entry went STALE): still
    verified, and zebra is asked again when HANDBACK_HOLD_S is over, not 30 s later."""
    synced, batches = _synced(monkeypatch)
    held = {"type": "local", "mac": "f6:39:47:bf:45:01", "peerActive": True}
    held["peerActiveHold"] = _left(HOLD - 4)
    monkeypatch.setattr(
        zebra, "zebra_answer", lambda svis: ({("10.100.0.2", "vlan1001"): held}, SETTLED)
    )
    ours = [{**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}]
    assert not synced.apply(ours, ask_zebra=True, now=100.0)
    assert synced.next_ask(100.0) == pytest.approx(100.0 + zebra.HANDBACK_HOLD_S - 4 + 1)
    held["peerActiveHold"] = _left(HOLD - zebra.HANDBACK_HOLD_S - 1)
    assert synced.apply(ours, ask_zebra=True, now=109.0)
    assert batches[-1][0].endswith("nud probe")


# A server whose bond runs independent control (Linux 6.9+, coupled_control 0) says it is in
# sync and collecting before it distributes, and distributes only once it hears this end
# collect: its port serves from then on, before its first frame.
COLLECTING_ONLY = 0x1D  # activity, aggregation, sync, collecting (not distributing)


def test_a_server_that_collects_is_served_before_it_distributes() -> None:
    assert segments.lacp_serves(IN_SYNC, COLLECTING_ONLY)
    assert segments.serving_bonds([member(partner=COLLECTING_ONLY)], SEGMENTS) == {"bond3"}


@pytest.mark.parametrize(
    ("actor", "partner", "why"),
    [
        (COLLECTING_ONLY, IN_SYNC, "this end collects but does not distribute yet"),
        (IN_SYNC, 0x0D, "the server is in sync but does not collect yet"),
        (IN_SYNC, 0x15, "the server says it collects but is out of sync"),
        (IN_SYNC, None, "no partner state"),
        (None, IN_SYNC, "no actor state"),
    ],
)
def test_lacp_serves_needs_this_end_distributing_and_the_server_collecting(
    actor: int | None, partner: int | None, why: str
) -> None:
    assert not segments.lacp_serves(actor, partner), why


def test_a_pass_keeps_a_bond_gate_watch_opened_on_the_servers_data(tmp_path: Any) -> None:
    """GateWatch opens on the server's first data frame once this end distributes and the
    server is in sync, before the LACPDU saying it collects arrives (up to 300 ms later). A
    pass reading sysfs in that window must not gate the bond again (it did in the lab,
    2026-12-04: 160 ms of the server's flow lost)."""
    opened_on_data = fake_sysfs(tmp_path / "data", 1, 1, IN_SYNC, 0x0D)
    assert segments.serving_now(SEGMENTS, opened_on_data) == {"bond3"}
    assert segments.bond_gates([bond(1)], SEGMENTS, {"bond3"}) == []
    for case, args in {
        "still gated: not GateWatch's to keep": (2, 1, IN_SYNC, 0x0D),
        "open, but the server fell back to defaults": (1, 1, IN_SYNC, 0x01),
        "open, but this end no longer distributes": (1, 1, COLLECTING_ONLY, 0x0D),
        "open, but no carrier": (1, 0, IN_SYNC, 0x0D),
    }.items():
        root = fake_sysfs(tmp_path / case.split(":")[0].replace(" ", "-"), *args)
        assert segments.serving_now(SEGMENTS, root) == set(), case


def test_gate_watch_opens_when_the_server_collects_before_it_distributes(tmp_path: Any) -> None:
    root = fake_sysfs(tmp_path, 2, 1, IN_SYNC, COLLECTING_ONLY)
    assert gate.GateWatch(SEGMENTS, root).check() == (["bond3"], [])
    assert (tmp_path / "bond3" / "bonding" / "min_links").read_text().strip() == "1"


@pytest.mark.parametrize(
    ("actor", "partner", "opens", "why"),
    [
        (IN_SYNC, 0x0D, True, "the server in sync: it distributes only after this end"),
        (IN_SYNC, 0x0F, True, "the same, short timeout"),
        (COLLECTING_ONLY, 0x0D, False, "this end does not distribute yet"),
        (0x0D, 0x0D, False, "this end in sync only"),
        (IN_SYNC, 0x07, False, "the server not in sync"),
        (IN_SYNC, 0x4F, False, "the server's state defaulted: no LACPDU of it heard"),
    ],
)
def test_gate_watch_opens_once_this_end_distributes_and_the_server_is_in_sync(
    tmp_path: Any, actor: int, partner: int, opens: bool, why: str
) -> None:
    """The server's LACPDU saying it collects can come only with the one saying it
    distributes (Linux sends 3 a second): a gate that waited for it opened 75 ms after the
    server's first frames (6.1 lab, 2026-12-04)."""
    root = fake_sysfs(tmp_path, 2, 1, actor, partner)
    opened, waiting = gate.GateWatch(SEGMENTS, root).check()
    assert (opened == ["bond3"]) is opens and (waiting == ["swp5"]) is not opens, why


def _lacpdu_frame(state: int) -> bytes:
    """A LACPDU's first bytes as the tap keeps them: header, subtype 1, version 1, the actor
    TLV (type 1, length 20) with the sender's port state at its end."""
    actor = bytes([1, 20]) + bytes(14) + bytes([state])
    frame = bytes.fromhex("0180c200000202aa00000001") + b"\x88\x09" + bytes([1, 1]) + actor
    return frame.ljust(124, b"\x00")


@pytest.mark.parametrize(
    ("frames", "expect", "why"),
    [
        ([_lacpdu_frame(COLLECTING_ONLY)], (True, False), "the server collects: hurry"),
        ([_lacpdu_frame(IN_SYNC)], (True, False), "the server collects and distributes"),
        ([_lacpdu_frame(0x0D)], (True, False), "in sync: this end serves it within a tick"),
        ([_lacpdu_frame(0x47)], (False, False), "not in sync: nothing to hurry for"),
        ([bytes(12) + b"\x08\x00" + bytes(2)], (False, True), "a data frame (its header)"),
    ],
)
def test_tap_hurries_on_a_lacpdu_saying_the_server_is_in_sync(
    frames: list[bytes], expect: tuple[bool, bool], why: str
) -> None:
    import socket

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with ours, theirs:
        ours.setblocking(False)
        for frame in frames:
            theirs.send(frame)
        assert taps.lacpdu_state(_lacpdu_frame(0x1D)) == 0x1D
        assert taps.read_tap(ours) == expect, why


def _arp_frame(op: int, sender_mac: str, sender_ip: str, ethertype: bytes = b"\x08\x06") -> bytes:
    mac = bytes.fromhex(sender_mac.replace(":", ""))
    body = b"\x00\x01\x08\x00\x06\x04" + op.to_bytes(2, "big") + mac
    body += bytes(map(int, sender_ip.split("."))) + b"\x00" * 6 + bytes([10, 100, 0, 1])
    return b"\xff" * 6 + mac + ethertype + body


@pytest.mark.parametrize("op", [1, 2])  # a request (to the gateway) or a reply (to a probe)
def test_arp_sender_reads_the_senders_address_and_mac(op: int) -> None:
    frame = _arp_frame(op, "f6:39:47:bf:45:01", "10.100.0.2")
    assert taps.arp_sender(frame) == ("10.100.0.2", "f6:39:47:bf:45:01")


@pytest.mark.parametrize(
    "frame",
    [
        _arp_frame(1, "f6:39:47:bf:45:01", "10.100.0.2", ethertype=b"\x08\x00"),  # IPv4
        _arp_frame(1, "f6:39:47:bf:45:01", "10.100.0.2")[:41],  # cut short
        _arp_frame(1, "f6:39:47:bf:45:01", "10.100.0.2")[:14]
        + b"\x00\x06"
        + _arp_frame(1, "f6:39:47:bf:45:01", "10.100.0.2")[16:],  # not Ethernet hardware
    ],
)
def test_arp_sender_ignores_what_is_not_ethernet_ipv4_arp(frame: bytes) -> None:
    assert taps.arp_sender(frame) is None


def test_heard_server_with_the_agents_entry_is_handed_back_to_probe() -> None:
    """The server's ARP reached this leaf, which holds the agent's NOARP entry: the kernel
    ignored it, so the entry goes back to the kernel, which probes and gets the answer here."""
    ours = {**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}
    lines = agent_synced.hand_back_heard([ours], "10.100.0.2", "f6:39:47:bf:45:01", {"vlan1001"})
    assert lines == [PROBE_LINE]
    for kernel in (
        {**ZEBRA_STALE, "state": ["REACHABLE"]},  # the kernel took the ARP itself
        {**ZEBRA_STALE, "state": ["STALE"], "protocol": "zebra"},
        {**ours, "dev": "vlan9"},  # not an EVPN SVI
    ):
        assert agent_synced.hand_back_heard([kernel], "10.100.0.2", "x", {"vlan1001"}) == []


def test_arp_watch_hands_back_once_a_second_and_quiets_the_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What ArpWatch handed back stays the kernel's for HEARD_QUIET_S, although zebra's last
    word is that the pair verifies the server (else a pass would put NOARP back before the
    probe's answer); then the usual rules apply again."""
    synced, batches = _synced(monkeypatch)
    synced.apply([{**ZEBRA_STALE, "state": ["FAILED"]}], ask_zebra=True, now=0.0)
    assert synced.installed == ZEBRA_SYNCED and len(batches) == 1
    ours = {**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}
    monkeypatch.setattr(agent_kernel, "_ip_json", lambda *args: [ours])
    watch = arpwatch.ArpWatch(SEGMENTS, synced, tap=lambda member: None)
    watch.heard("10.100.0.2", "f6:39:47:bf:45:01", 10.0)
    watch.heard("10.100.0.2", "f6:39:47:bf:45:01", 10.5)  # the same burst: not again
    assert batches[1:] == [[PROBE_LINE]]
    probing = [{**ZEBRA_STALE, "state": ["PROBE"]}]
    assert not synced.apply(probing, ask_zebra=False, now=10.6)
    assert synced.installed == {} and synced.next_ask(10.6) == 10.6 + pacing.NEIGH_EVENT_S
    assert not synced.apply([{**ZEBRA_STALE, "state": ["REACHABLE"]}], ask_zebra=True, now=11.0)
    # quiet over, the kernel's probes failed, the pair verifies it: the agent's entry again
    assert synced.apply(probing, ask_zebra=True, now=10.0 + agent_synced.HEARD_QUIET_S)
    assert batches[-1][0].endswith("extern_learn nud noarp")


def test_a_server_zebra_knows_and_this_kernel_does_not_is_probed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The leaf lost its entry (FAILED, or none): zebra still lists the server, proxied by
    the pair. The agent creates it in PROBE with zebra's MAC, so the kernel asks the server
    at once; no /32 until it answers, and no second probe within PROBE_AGAIN_S."""
    synced, batches = _synced(monkeypatch, verified=False)
    probe = PROBE_LINE
    assert synced.apply([{**ZEBRA_STALE, "state": ["FAILED"]}], ask_zebra=True, now=0.0)
    assert synced.apply([], ask_zebra=True, now=agent_synced.PROBE_AGAIN_S)
    assert not synced.apply([], ask_zebra=True, now=agent_synced.PROBE_AGAIN_S + 1)
    assert batches == [[probe], [probe]]
    probing = [{**ZEBRA_STALE, "state": ["PROBE"]}]
    second = agent_synced.PROBE_AGAIN_S  # when the second probe started
    assert synced.unproven(probing, second + 1) == {"10.100.0.2"}
    assert synced.unproven([{**ZEBRA_STALE, "state": ["REACHABLE"]}], second + 1) == set()
    assert synced.unproven(probing, second + agent_synced.PROBE_AGAIN_S) == set()
    # a usable entry of the kernel's own is left to it
    other, batches = _synced(monkeypatch, verified=False)
    assert not other.apply([{**ZEBRA_STALE, "state": ["STALE"]}], ask_zebra=True, now=0.0)


def test_a_server_this_leaf_cannot_verify_is_installed_on_zebras_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The leaf's ES bond does not serve the server (its link is down): the server's ARP all
    goes to the pair, so this leaf's probes would fail. zebra's STALE re-install is replaced
    at once, the agent's entry is not handed back, and a lost one is installed, not probed,
    whether the pair verifies the server yet or not (it hears all its ARP: ArpWatch)."""
    synced, batches = _synced(monkeypatch, verified=False)
    noarp = NOARP_LINE
    cannot = frozenset({"10.100.0.2"})
    zebra_stale = [{**ZEBRA_STALE, "state": ["STALE"], "protocol": "zebra"}]
    synced.apply([], ask_zebra=True, now=0.0, cannot_verify=cannot)  # lost: installed
    assert batches == [[noarp]]
    ours = [{**ZEBRA_STALE, "state": ["NOARP"], "extern_learn": None}]
    assert not synced.apply(ours, ask_zebra=True, now=1.0, cannot_verify=cannot)
    assert synced.apply(zebra_stale, ask_zebra=False, now=2.0, cannot_verify=cannot)
    assert batches == [[noarp], [noarp]]
    # its bond serves it again: the pair does not verify it, so it goes back to the kernel
    assert synced.apply(ours, ask_zebra=True, now=3.0)
    assert batches[-1] == [PROBE_LINE]


def test_agent_log_line_goes_to_stdout_with_the_time_and_to_syslog(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lab test of `lab logs` shows the line arriving in the switch's syslog; here: the
    same text in both places, the stdout line stamped for the log file."""
    sent: list[tuple[int, str]] = []
    monkeypatch.setattr(journal.syslog, "syslog", lambda *a: sent.append(a))
    journal.log("opened gpu1 (min_links 1, sysfs)")
    stamp, _sp, text = capsys.readouterr().out.strip().partition(" ")
    assert abs(float(stamp) - time.time()) < 5 and text == "opened gpu1 (min_links 1, sysfs)"
    assert sent == [(journal.syslog.LOG_INFO, text)]
