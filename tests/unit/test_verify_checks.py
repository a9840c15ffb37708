"""Every verify check passes on a healthy device and fails on a broken one.

The device states are what the contract getters return: recorded from a real FRR 8.4
(tests/drivers/mocked/frr, through the FRR driver) where a recording shows the fault, else
built from the fabric's plan and then broken one fault at a time.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.device import build_device
from controller.verify import (
    NotADpctlDriver,
    check_bgp,
    check_host_routes,
    check_hosts_via_pair,
    check_lldp,
    check_loopbacks,
    check_maintenance,
    check_roce_lb,
    check_segments,
    expected_ecn_queues,
    read_state,
)
from tests.conftest import INVENTORY
from tests.drivers.conftest import frr_driver


def fabric_of(mode: str, **changes: Any) -> Fabric:
    data = yaml.safe_load((INVENTORY / f"lab-{mode}.yaml").read_text())
    return build_fabric(intent_from_data({**data, **changes}))


def healthy(fabric: Fabric, name: str) -> dict[str, Any]:
    """What a switch running its plan exactly answers through the contract getters."""
    switch = fabric.switch_by_name[name]
    device = build_device(fabric, name)
    lldp = {}
    for link in fabric.links_by_device.get(name, []):
        mine, peer, port = (
            (link.a_port, link.z_device, link.z_port)
            if link.a_device == name
            else (link.z_port, link.a_device, link.a_port)
        )
        lldp[mine] = [{"hostname": peer, "port": port}]
    ports_to = {}
    for link in fabric.links_by_device.get(name, []):
        if link.kind == "fabric":
            ports_to[link.a_device] = link.z_port
    routes = [
        {"prefix": f"{s.loopback}/32", "protocol": "bgp", "nexthops": ["x"], "selected": True}
        for s in fabric.switches_in(plane=switch.plane)
        if s.name != name
    ]
    if switch.role == "spine":
        for server in fabric.servers:
            for nic in server.nics:
                leaf = nic.leaves[switch.plane - 1]
                routes.append(
                    {
                        "prefix": f"{nic.ip}/32",
                        "protocol": "bgp",
                        "nexthops": [ports_to[leaf]],
                        "selected": True,
                    }
                )
    ports = [i.name for i in device.interfaces]
    assert device.roce is not None
    lossless = sorted(device.roce.lossless_queues)
    platform_frr = device.platform == "frr"
    return {
        "bgp": {n.interface: {"is_up": True} for n in device.bgp.neighbors},
        "lldp": lldp,
        "routes": routes,
        "maintenance": {"graceful_shutdown": False, "isolated": False},
        "qos": {
            "pfc": None if platform_frr else {p: lossless for p in ports},
            "ecn": {p: expected_ecn_queues(device) for p in ports},
            "ecmp_hash": "l4" if platform_frr else None,
        },
    }


@pytest.fixture(scope="module")
def lab() -> Fabric:
    # the recorded switch answers are of an unprotected lab (no AUX session)
    return fabric_of("dual-arp", cross_plane_protection=False)


def test_bgp_session_down_fails(lab: Fabric) -> None:
    assert check_bgp(lab, build_device(lab, "p1-g1-leaf1"), healthy(lab, "p1-g1-leaf1")).ok
    # recorded: the leaf's session to p1-spine2 (not running) is Idle
    state = read_state(frr_driver("p1-g1-leaf1"), "leaf", evpn=False)
    check = check_bgp(lab, build_device(lab, "p1-g1-leaf1"), state)
    assert not check.ok and check.expected == ["swp3", "swp4"] and check.found == ["swp3"]


def test_missing_lldp_neighbour_fails(lab: Fabric) -> None:
    state = healthy(lab, "p1-spine1")
    assert check_lldp(lab, "p1-spine1", state).ok
    del state["lldp"]["swp2"]
    check = check_lldp(lab, "p1-spine1", state)
    assert not check.ok and "swp2" not in check.found and check.expected["swp2"]
    # recorded: the leaf sees p1-spine1 on swp3 only (no p1-spine2, no servers)
    recorded = read_state(frr_driver("p1-g1-leaf1"), "leaf", evpn=False)
    check = check_lldp(lab, "p1-g1-leaf1", recorded)
    assert not check.ok and check.found["swp3"] == "p1-spine1:swp1"


def test_missing_loopback_fails(lab: Fabric) -> None:
    state = healthy(lab, "p1-g1-leaf1")
    assert check_loopbacks(lab, "p1-g1-leaf1", state).ok
    state["routes"] = [r for r in state["routes"] if r["prefix"] != "10.255.0.1/32"]
    check = check_loopbacks(lab, "p1-g1-leaf1", state)
    assert not check.ok and check.found == {"missing": ["10.255.0.1/32"]}


def test_missing_host_route_fails(lab: Fabric) -> None:
    state = healthy(lab, "p1-spine1")
    assert check_host_routes(lab, "p1-spine1", state).ok
    state["routes"] = [r for r in state["routes"] if r["prefix"] != "10.100.0.2/32"]
    check = check_host_routes(lab, "p1-spine1", state)
    assert not check.ok and check.found == {"10.100.0.2/32": "missing"}
    # recorded: the spine learnt 10.100.0.2/32 through p1-g1-leaf1; the other NICs are missing
    recorded = read_state(frr_driver("p1-spine1"), "spine", evpn=False)
    check = check_host_routes(lab, "p1-spine1", recorded)
    assert not check.ok and "10.100.0.2/32" not in check.found
    assert set(check.found.values()) == {"missing"}


def test_maintenance_state_differs_fails(lab: Fabric) -> None:
    state = healthy(lab, "p1-g1-leaf1")
    assert check_maintenance(lab, "p1-g1-leaf1", state, {}).ok
    assert not check_maintenance(lab, "p1-g1-leaf1", state, {"p1-g1-leaf1": "isolated"}).ok
    recorded = {**state, "maintenance": frr_driver("p1-g1-leaf1-isolated").dpctl.get_maintenance()}
    assert check_maintenance(lab, "p1-g1-leaf1", recorded, {"p1-g1-leaf1": "isolated"}).ok
    assert not check_maintenance(lab, "p1-g1-leaf1", recorded, {}).ok


def _segments_state(fabric: Fabric, df: dict[str, bool], up: bool = True) -> dict[str, Any]:
    """Every leaf's segments, each listing the pair's VTEP as its peer."""
    states: dict[str, Any] = {}
    for leaf in {leaf for s in fabric.servers for n in s.nics for leaf in n.leaves}:
        pair = fabric.switch_by_name[leaf].pair
        assert pair
        states[leaf] = {
            "es": [
                {
                    "esi": n.esi,
                    "interface": "bond",
                    "up": up,
                    "df": df.get(leaf, False),
                    "peers": [fabric.switch_by_name[pair].loopback],
                }
                for s in fabric.servers
                for n in s.nics
                if leaf in n.leaves
            ]
        }
    return states


def handed_off_routes(fabric: Fabric, leaf: str, via: str) -> dict[str, Any]:
    """A leaf's selected /32 for every NIC behind it, all leaving through ``via``."""
    nics = [n for s in fabric.servers for n in s.nics if leaf in n.leaves]
    return {
        "routes": [
            {"prefix": f"{n.ip}/32", "protocol": "bgp", "nexthops": [via], "selected": True}
            for n in nics
        ]
    }


def test_hosts_via_pair_passes_through_the_aux_link_and_names_a_local_route() -> None:
    fabric = fabric_of("dual-arp")  # cross-plane protection: the leaf has its AUX link
    leaf = "p2-g1-leaf1"
    aux = build_device(fabric, leaf).aux
    assert aux is not None
    assert check_hosts_via_pair(fabric, leaf, handed_off_routes(fabric, leaf, aux.name)).ok
    state = handed_off_routes(fabric, leaf, aux.name)
    state["routes"][0]["nexthops"] = ["vlan1001"]  # still delivered by the leaf itself
    last = state["routes"].pop()["prefix"]  # and one server without any route
    check = check_hosts_via_pair(fabric, leaf, state)
    assert not check.ok and check.check == "hosts-via-pair"
    first = state["routes"][0]["prefix"]
    assert check.found[first] == {"via": ["vlan1001"], "expected": [aux.name]}
    assert check.found[last]["via"] == "no route"


def test_hosts_via_pair_fails_on_a_leaf_without_an_aux_link(lab: Fabric) -> None:
    check = check_hosts_via_pair(lab, "p2-g1-leaf1", handed_off_routes(lab, "p2-g1-leaf1", "x"))
    assert not check.ok and check.found["10.100.0.2/32"]["expected"] == []


def test_segment_without_designated_forwarder_fails() -> None:
    fabric = fabric_of("evpn-mh")
    plane1 = {n.leaves[0] for s in fabric.servers for n in s.nics}
    good = check_segments(fabric, _segments_state(fabric, {leaf: True for leaf in plane1}))
    assert good and all(c.ok for c in good)
    none_df = check_segments(fabric, _segments_state(fabric, {}))
    assert none_df and not any(c.ok for c in none_df)
    all_leaves = {leaf for s in fabric.servers for n in s.nics for leaf in n.leaves}
    two_df = check_segments(fabric, _segments_state(fabric, dict.fromkeys(all_leaves, True)))
    assert not any(c.ok for c in two_df)
    down = check_segments(fabric, _segments_state(fabric, dict.fromkeys(plane1, True), up=False))
    assert not any(c.ok for c in down)
    states = _segments_state(fabric, dict.fromkeys(plane1, True))
    leaf = sorted(plane1)[0]
    states[leaf]["es"].pop()  # one segment missing on one leaf
    assert not all(c.ok for c in check_segments(fabric, states))


def test_segment_whose_leaves_do_not_see_each_other_fails() -> None:
    """One DF by preference alone is not enough: each leaf must list the other as a peer."""
    fabric = fabric_of("evpn-mh")
    plane1 = {n.leaves[0] for s in fabric.servers for n in s.nics}
    states = _segments_state(fabric, dict.fromkeys(plane1, True))
    leaf = sorted(plane1)[0]
    states[leaf]["es"][0]["peers"] = []  # this leaf lost its pair as a segment peer
    checks = check_segments(fabric, states)
    failed = [c for c in checks if not c.ok]
    assert len(failed) == 1 and len(checks) > 1
    pair = fabric.switch_by_name[leaf].pair
    assert pair and failed[0].expected["peers"][leaf] == fabric.switch_by_name[pair].loopback
    assert failed[0].found[leaf]["peers"] == []


@pytest.mark.parametrize("platform", ["sonic", "asternos"])
def test_pfc_misconfigured_fails(platform: str) -> None:
    fabric = fabric_of(
        "dual-arp", platform=platform, switches={"leaf": "CX732Q-N", "spine": "CX732Q-N"}
    )
    name = "p1-g1-leaf1"
    state = healthy(fabric, name)
    checks = {c.check: c for c in check_roce_lb(fabric, build_device(fabric, name), state)}
    assert set(checks) == {"roce-ecn", "roce-pfc"} and all(c.ok for c in checks.values())
    port = next(iter(state["qos"]["pfc"]))
    for broken in ([3], [], [3, 4, 5]):
        bad = copy.deepcopy(state)
        bad["qos"]["pfc"][port] = broken
        if not broken:
            del bad["qos"]["pfc"][port]
        pfc = {c.check: c for c in check_roce_lb(fabric, build_device(fabric, name), bad)}[
            "roce-pfc"
        ]
        assert not pfc.ok, broken
    bad = copy.deepcopy(state)
    bad["qos"]["ecn"][port] = [3]
    assert not {c.check: c for c in check_roce_lb(fabric, build_device(fabric, name), bad)}[
        "roce-ecn"
    ].ok


def test_roce_and_hash_on_frr_from_recorded_qdiscs(lab: Fabric) -> None:
    recorded = read_state(frr_driver("p1-g1-leaf1"), "leaf", evpn=False)
    checks = {c.check: c for c in check_roce_lb(lab, build_device(lab, "p1-g1-leaf1"), recorded)}
    assert set(checks) == {"roce-ecn", "load-balancing"}  # no PFC in the Linux datapath
    assert all(c.ok for c in checks.values())
    bad = copy.deepcopy(recorded)
    bad["qos"]["ecn"]["swp3"] = [3]  # one lossless band lost its ECN marking
    bad["qos"]["ecmp_hash"] = "l3"
    checks = {c.check: c for c in check_roce_lb(lab, build_device(lab, "p1-g1-leaf1"), bad)}
    assert not checks["roce-ecn"].ok and not checks["load-balancing"].ok


def test_a_driver_outside_the_contract_is_refused() -> None:
    class Legacy:
        def get_bgp_neighbors(self) -> dict[str, Any]:
            return {}

    with pytest.raises(NotADpctlDriver, match="driver contract"):
        read_state(Legacy(), "leaf", evpn=False)


@pytest.mark.parametrize("platform", ["frr", "sonic", "asternos"])
def test_lossy_roce_marks_ecn_as_lossless_does_and_pauses_nothing(platform: str) -> None:
    """Lossy RoCE is ECN without PFC on every platform: TCs 3 and 4 mark, nothing pauses. A
    switch marking nothing fails ``roce-ecn`` in both modes, naming each port (the drivers
    list only the ports that mark or pause some queue); on SONiC and AsterNOS a lossy switch
    that still pauses fails ``roce-pfc``. (Until 2026-12-07 lossy meant no ECN on Linux but
    ECN on SONiC, whose verify then failed a lossy switch for the marking it rendered.)"""
    from controller.platforms.frr.reads import qos_state

    switches = {} if platform == "frr" else {"leaf": "CX732Q-N", "spine": "CX732Q-N"}
    name = "p1-g1-leaf1"
    prio_only = [{"kind": "prio", "handle": "1:", "dev": "swp1", "root": True}]
    marking_nothing = (
        qos_state(prio_only, "1")
        if platform == "frr"
        else {"pfc": {}, "ecn": {}, "ecmp_hash": None}
    )
    marking: dict[str, list[int]] = {}
    for mode in ("lossy", "lossless"):
        changes: dict[str, Any] = {"roce": {"enabled": True, "mode": mode}}
        if switches:
            changes.update(platform=platform, switches=switches)
        fabric = fabric_of("dual-arp", **changes)
        device = build_device(fabric, name)
        assert device.roce is not None
        marking[mode] = expected_ecn_queues(device)  # Linux: the prio bands of TCs 3 and 4
        ports = [i.name for i in device.interfaces]
        as_planned = healthy(fabric, name)
        judged = {c.check: c.ok for c in check_roce_lb(fabric, device, as_planned)}
        assert judged.get("roce-ecn") and judged.get("roce-pfc", True), (mode, judged)
        silent = {**as_planned, "qos": marking_nothing}
        judged = {c.check: c.ok for c in check_roce_lb(fabric, device, silent)}
        assert judged["roce-ecn"] is False, (mode, judged)
        if platform != "frr":
            paused = {p: [3, 4] for p in ports}
            pausing = {**as_planned, "qos": {**as_planned["qos"], "pfc": paused}}
            judged = {c.check: c.ok for c in check_roce_lb(fabric, device, pausing)}
            assert judged["roce-pfc"] is (mode == "lossless"), (mode, judged)
    assert marking["lossy"] == marking["lossless"] and len(marking["lossy"]) == 2, marking
    if platform != "frr":
        assert marking["lossy"] == [3, 4]
