"""One driver contract (controller/drivers/contract.py), the same for frr, sonic and asternos.

Every contract getter of every driver, on its mocked device (FRR: outputs of a real FRR 8.4,
mocked/frr/README.md), returns exactly its declared type, NAPALM's model where NAPALM has one;
and the values mean the same thing on each platform.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from controller.drivers.contract import (
    CONTRACT_GETTER_TYPES,
    GETTER_TYPES,
    DpctlDriver,
    conformance_errors,
    getter,
)
from controller.drivers.types import QosState
from tests.drivers.conftest import frr_driver

PLATFORMS = ["frr", "sonic", "asternos"]
FAMILIES = {"ipv4", "ipv6", "l2vpn_evpn"}


@pytest.fixture(params=PLATFORMS)
def driver(request: pytest.FixtureRequest) -> Any:
    if request.param == "frr":
        return frr_driver()
    return request.getfixturevalue(request.param)


def test_every_driver_implements_the_contract(driver: Any) -> None:
    assert isinstance(driver, DpctlDriver)
    assert not getattr(type(driver), "__abstractmethods__", set())


@pytest.mark.parametrize("name", sorted(CONTRACT_GETTER_TYPES))
def test_getter_returns_its_declared_type(driver: Any, name: str) -> None:
    result = getter(driver, name)()
    assert conformance_errors(GETTER_TYPES[name], result) == []


def test_bgp_means_the_same(driver: Any) -> None:
    peers = driver.get_bgp_neighbors()["global"]["peers"]
    assert peers and any(p["is_up"] for p in peers.values())
    for peer in peers.values():
        assert set(peer["address_family"]) <= FAMILIES
        assert peer["uptime"] >= 0 if peer["is_up"] else peer["uptime"] == -1
        assert peer["remote_as"] > 0 or not peer["is_up"]


def test_host_routes_mean_the_same(driver: Any) -> None:
    routes = driver.dpctl.get_host_routes()
    assert routes
    for route in routes:
        assert ipaddress.ip_network(route["prefix"]).prefixlen == 32
        assert route["prefix"].count(".") == 3
    keys = [int(ipaddress.ip_network(r["prefix"]).network_address) for r in routes]
    assert keys == sorted(keys)


def test_evpn_es_reports_local_segments_sorted(driver: Any) -> None:
    segments = driver.dpctl.get_evpn_es()
    assert [s["esi"] for s in segments] == sorted(s["esi"] for s in segments)
    assert all(s["interface"] for s in segments)  # remote-only segments have no local port


def test_qos_means_the_same(driver: Any) -> None:
    qos: QosState = driver.dpctl.get_qos_state()
    assert qos["ecn"] and all(queues == [3, 4] for queues in qos["ecn"].values())
    if driver.platform == "frr":
        assert qos["pfc"] is None and qos["ecmp_hash"] == "l4"
    else:
        assert qos["pfc"] and all(p == [3, 4] for p in qos["pfc"].values())
        assert qos["ecmp_hash"] is None


def test_conformance_check_catches_wrong_types() -> None:
    peer = {
        "local_as": 65100,
        "remote_as": 65000,
        "remote_id": "10.0.0.1",
        "is_up": True,
        "is_enabled": True,
        "description": "",
        "uptime": 4.0,  # NAPALM's model says int
        "address_family": {"ipv4": {"received_prefixes": 1, "accepted_prefixes": True}},
    }
    errors = conformance_errors(
        GETTER_TYPES["get_bgp_neighbors"], {"global": {"router_id": "x", "peers": {"a": peer}}}
    )
    assert any(e.endswith("uptime: expected int, got float 4.0") for e in errors)
    assert any("missing key 'sent_prefixes'" in e for e in errors)
    assert any("accepted_prefixes: expected int, got bool" in e for e in errors)
    qos = {"pfc": None, "ecn": {"swp1": ["3"]}, "ecmp_hash": None, "extra": 1}
    errors = conformance_errors(GETTER_TYPES["get_qos_state"], qos)
    assert "$: unexpected key 'extra'" in errors
    assert any("expected int, got str" in e for e in errors)


# ----------------------------------------------------------- FRR on real FRR 8.4 outputs


def test_frr_bgp_from_real_frr() -> None:
    leaf = frr_driver("p1-g1-leaf1").get_bgp_neighbors()
    assert leaf["global"]["router_id"] == "10.255.0.3"
    up, down = leaf["global"]["peers"]["swp3"], leaf["global"]["peers"]["swp4"]
    assert up["is_up"] and up["remote_as"] == 65000 and up["local_as"] == 65100
    assert up["uptime"] == 9 and up["remote_id"] == "10.255.0.1"
    assert up["address_family"] == {
        "ipv4": {"received_prefixes": 1, "accepted_prefixes": 1, "sent_prefixes": 2}
    }
    assert not down["is_up"] and down["uptime"] == -1 and down["is_enabled"]


def test_frr_lldp_and_host_routes_from_real_frr() -> None:
    leaf, spine = frr_driver("p1-g1-leaf1"), frr_driver("p1-spine1")
    assert leaf.get_lldp_neighbors()["swp3"] == [{"hostname": "p1-spine1", "port": "swp1"}]
    assert spine.get_lldp_neighbors()["swp1"] == [{"hostname": "p1-g1-leaf1", "port": "swp3"}]
    on_leaf = {r["prefix"]: r for r in leaf.dpctl.get_host_routes()}
    on_spine = {r["prefix"]: r for r in spine.dpctl.get_host_routes()}
    # the NIC /32 the ARP agent wrote into table 100, imported on the leaf, learnt by the spine
    assert on_leaf["10.100.0.2/32"]["protocol"] == "table"
    assert on_spine["10.100.0.2/32"] == {
        "prefix": "10.100.0.2/32",
        "protocol": "bgp",
        "nexthops": ["swp1"],
        "selected": True,
    }
    assert on_spine["10.255.0.3/32"]["nexthops"] == ["swp1"]  # the leaf's loopback


def test_frr_maintenance_from_real_frr() -> None:
    assert frr_driver("p1-g1-leaf1").dpctl.get_maintenance() == {
        "graceful_shutdown": False,
        "isolated": False,
        "hosts_via_pair": False,
    }
    assert frr_driver("p1-g1-leaf1-isolated").dpctl.get_maintenance()["isolated"] is True
    gshut = frr_driver("p1-spine1-gshut").dpctl.get_maintenance()
    assert gshut == {"graceful_shutdown": True, "isolated": False, "hosts_via_pair": False}


def test_frr_facts_types() -> None:
    facts = frr_driver("p1-spine1").get_facts()
    assert facts["hostname"] == "p1-spine1" and facts["os_version"].startswith("FRRouting 8.4")
    assert "swp1" in facts["interface_list"] and isinstance(facts["uptime"], float)


def test_lldp_detail_agrees_with_lldp(driver: Any) -> None:
    brief = driver.get_lldp_neighbors()
    detail = driver.get_lldp_neighbors_detail()
    assert brief and set(detail) == set(brief)
    for port, neighbours in detail.items():
        assert [
            {"hostname": n["remote_system_name"], "port": n["remote_port"]} for n in neighbours
        ] == brief[port]
        for n in neighbours:
            assert n["remote_chassis_id"] and n["parent_interface"] == ""
            assert set(n["remote_system_enable_capab"]) <= set(n["remote_system_capab"])
    one = next(iter(detail))
    assert driver.get_lldp_neighbors_detail(one) == {one: detail[one]}


def test_frr_lldp_detail_from_real_lldpd() -> None:
    (spine1,) = frr_driver("p1-g1-leaf1").get_lldp_neighbors_detail("swp3")["swp3"]
    assert spine1["remote_system_name"] == "p1-spine1" and spine1["remote_port"] == "swp1"
    assert spine1["remote_port_description"] == "swp1"
    assert spine1["remote_system_description"].startswith("Debian GNU/Linux 12")
    assert spine1["remote_system_capab"] == ["bridge", "router", "wlan-access-point", "station"]
    assert spine1["remote_system_enable_capab"] == ["station"]
