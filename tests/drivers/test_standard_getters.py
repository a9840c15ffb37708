"""NAPALM's standard getters of dpctl's drivers, read against the devices' own answers.

The FRR device is a real FRR 8.4 + iproute2 6.1 leaf with two spines and two servers
(mocked/frr/napalm/, tests/drivers/record_frr_napalm.py); SONiC's Linux and FRR answers come
from the same tools in SONiC's names, its own tools' written by us in the formats
sonic-utilities prints (mocked/sonic/README.md). Facts asserted here are read off those
recordings by hand: which neighbours, which next hops, which counters are non-zero.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from napalm.base import NetworkDriver

from controller.drivers import environment, linux, routing, sonic_reads
from controller.drivers.contract import STANDARD_GETTER_TYPES, conformance_errors
from tests.drivers.conftest import MOCKED
from tests.drivers.napalm_conformance.doubles import patched

LEAF = MOCKED / "frr" / "napalm" / "p1-g1-leaf1"


def _raw(name: str) -> Any:
    return json.loads((LEAF / name).read_text())


# ------------------------------------------------------------------- Linux (iproute2)


def test_counters_are_the_kernels_per_port() -> None:
    counters = patched("frr").get_interfaces_counters()
    raw = {link["ifname"]: link["stats64"] for link in _raw("ip_j_s_link_show.json")}
    for port in ("swp1", "swp2", "swp3", "swp4", "br0"):
        rx, tx = raw[port]["rx"], raw[port]["tx"]
        assert (
            counters[port]["rx_octets"] == rx["bytes"]
            and counters[port]["tx_octets"] == tx["bytes"]
        )
        assert counters[port]["rx_discards"] == rx["dropped"]
        assert counters[port]["tx_discards"] == tx["dropped"]
        assert counters[port]["rx_unicast_packets"] == rx["packets"] - rx["multicast"]
        assert counters[port]["tx_broadcast_packets"] == -1  # the kernel has no such counter
    # what the leaf sent before a veth's far end was up: counted as transmit drops
    assert counters["swp3"]["tx_discards"] > 0 and counters["swp3"]["rx_errors"] == 0


def test_a_counter_iproute2_did_not_print_is_minus_one() -> None:
    link = {"ifname": "x", "stats64": {"rx": {"bytes": 5, "packets": 2}, "tx": {}}}
    counters = linux.interfaces_counters([link])["x"]
    assert counters["rx_octets"] == 5 and counters["rx_multicast_packets"] == -1
    assert counters["rx_unicast_packets"] == 2 and counters["tx_octets"] == -1


def test_the_servers_are_in_the_arp_table_and_the_fdb_on_their_ports() -> None:
    driver = patched("frr")
    arp = {entry["ip"]: entry for entry in driver.get_arp_table()}
    fdb = {entry["mac"]: entry for entry in driver.get_mac_address_table()}
    for server, port in (("10.100.0.2", "swp1"), ("10.100.0.3", "swp2")):
        assert arp[server]["interface"] == "br0" and arp[server]["age"] >= 0
        assert fdb[arp[server]["mac"]]["interface"] == port
        assert not fdb[arp[server]["mac"]]["static"]
    # BGP unnumbered: zebra's 169.254.0.1 entries, one per spine port
    unnumbered = [e for e in driver.get_arp_table() if e["ip"] == "169.254.0.1"]
    assert sorted(e["interface"] for e in unnumbered) == ["swp3", "swp4"]
    # the bridge's own addresses (state permanent) and the ports' filters (self) are not hosts
    assert len(fdb) == 2


def test_arp_of_one_vrf() -> None:
    links = json.loads(
        (
            MOCKED.parent
            / "napalm_conformance/frr/mocked_data/test_get_arp_table_with_vrf/vrf_TEST"
            / "ip_j_d_link_show.json"
        ).read_text()
    )
    neighbours = _raw("ip_j_s_4_neigh_show.json")
    in_test = linux.arp_table(neighbours, links, "TEST")
    assert [e["interface"] for e in in_test] == ["swp4"]
    default = linux.arp_table(neighbours, links, "default")
    assert "swp4" not in {e["interface"] for e in default} and default
    assert linux.arp_table(neighbours, links, "global") == default
    assert linux.arp_table(neighbours, links, "NOPE") == []
    assert len(linux.arp_table(neighbours, links)) == len(in_test) + len(default)


def test_ipv6_neighbours_hold_both_spines_routers() -> None:
    table = patched("frr").get_ipv6_neighbors_table()
    spines = {e["interface"] for e in table if e["ip"].startswith("fe80::")}
    assert {"swp3", "swp4", "br0"} <= spines
    assert all(e["state"] in ("REACHABLE", "STALE", "DELAY", "PROBE", "PERMANENT") for e in table)


def test_interfaces_ip() -> None:
    ips = patched("frr").get_interfaces_ip()
    assert ips["br0"]["ipv4"] == {"10.100.0.1": {"prefix_length": 29}}  # the gateway
    assert ips["lo"]["ipv4"]["10.255.0.3"] == {"prefix_length": 32}  # the loopback
    assert all(a.startswith("fe80::") for a in ips["swp3"]["ipv6"])  # unnumbered: LL only


def test_vlans_are_the_bridge_ports_and_the_svi_names_them() -> None:
    assert patched("frr").get_vlans() == {1001: {"name": "", "interfaces": ["swp1", "swp2"]}}
    links = [
        {"ifname": "br0", "linkinfo": {"info_kind": "bridge"}},
        {
            "ifname": "vlan1001",
            "link": "br0",
            "linkinfo": {"info_kind": "vlan", "info_data": {"id": 1001}},
        },
        {"ifname": "swp1", "master": "br0", "linkinfo": {"info_kind": "veth"}},
    ]
    bridge = [
        {"ifname": "swp1", "vlans": [{"vlan": 1000, "vlanEnd": 1001, "flags": ["PVID"]}]},
        {"ifname": "br0", "vlans": [{"vlan": 1001}]},
    ]
    assert linux.vlans(bridge, links) == {
        1000: {"name": "", "interfaces": ["swp1"]},
        1001: {"name": "vlan1001", "interfaces": ["swp1"]},
    }


def test_network_instances_split_links_by_vrf() -> None:
    links = [
        {"ifname": "mgmt", "linkinfo": {"info_kind": "vrf"}},
        {"ifname": "eth0", "master": "mgmt"},
        {"ifname": "Ethernet0", "master": "Vlan1000"},
        {"ifname": "Vlan1000", "linkinfo": {"info_kind": "bridge"}},
    ]
    found = linux.network_instances(links)
    assert found["mgmt"]["type"] == "L3VRF"
    assert found["mgmt"]["interfaces"]["interface"] == {"eth0": {}}
    assert set(found["default"]["interfaces"]["interface"]) == {"Ethernet0", "Vlan1000"}
    assert list(linux.network_instances(links, "mgmt")) == ["mgmt"]


# ------------------------------------------------------------------------------ FRR


def test_route_to_lists_each_ecmp_next_hop() -> None:
    routes = patched("frr").get_route_to(destination="1.0.4.0/24", protocol="bgp")
    assert list(routes) == ["1.0.4.0/24"]
    hops = routes["1.0.4.0/24"]
    assert sorted(r["outgoing_interface"] for r in hops) == ["swp3", "swp4"]  # both spines
    assert all(r["selected_next_hop"] and r["current_active"] for r in hops)
    assert all(r["next_hop"].startswith("fe80::") and r["preference"] == 20 for r in hops)
    assert {r["routing_table"] for r in hops} == {"default"}


def test_route_to_longer_and_by_address() -> None:
    driver = patched("frr")
    longer = driver.get_route_to(destination="1.0.4.0/24", protocol="bgp", longer=True)
    assert sorted(longer) == ["1.0.4.0/24", "1.0.4.128/25"]
    assert [r["outgoing_interface"] for r in longer["1.0.4.128/25"]] == ["swp3"]  # spine1 only
    assert list(driver.get_route_to(destination="1.0.4.1")) == ["1.0.4.0/24"]  # longest match
    assert driver.get_route_to(destination="1.0.4.0/24", protocol="static") == {}


def test_bgp_routes_carry_bgpds_attributes() -> None:
    for platform, peers in (("frr", 2), ("sonic", 1), ("asternos", 1)):
        routes = patched(platform).get_route_to(destination="1.0.4.0/24", protocol="bgp")
        hops = routes["1.0.4.0/24"]
        assert len(hops) == peers  # FRR: both spines; SONiC's device has one
        for route in hops:
            attributes = route["protocol_attributes"]
            assert attributes["peer_id"] == route["next_hop"]  # BGP unnumbered: the LL
            assert attributes["remote_as"] == 65000 and attributes["as_path"] == "65000"
            assert attributes["local_as"] == 65100 and attributes["local_preference"] == 100


def test_a_local_preference_a_policy_set_is_the_paths() -> None:
    """A route-map's ``set local-preference 0`` (dpctl's answer to graceful-shutdown) shows."""
    route = {"protocol": "bgp", "next_hop": "fe80::1", "protocol_attributes": {}}
    table = {
        "localAS": 65100,
        "defaultLocPrf": 100,
        "routes": {"10.0.0.1/32": [{"peerId": "fe80::1", "path": "", "locPrf": 0}]},
    }
    routes: Any = {"10.0.0.1/32": [route]}
    routing.add_bgp_attributes(routes, table)
    assert route["protocol_attributes"]["local_preference"] == 0
    assert route["protocol_attributes"]["remote_as"] == 65100  # no AS in the path: iBGP/local


@pytest.mark.parametrize(
    ("destination", "prefixes", "command"),
    [
        ("1.0.4.0/24", ["1.0.4.0/24"], "show bgp ipv4 unicast 1.0.4.0/24 longer-prefixes json"),
        ("1.0.4.1", ["1.0.4.0/24"], "show bgp ipv4 unicast 1.0.4.0/24 longer-prefixes json"),
        ("", ["1.0.4.0/24", "10.0.0.1/32"], "show bgp ipv4 unicast json"),
    ],
)
def test_bgp_command(destination: str, prefixes: list[str], command: str) -> None:
    routes: Any = {p: [{"protocol": "bgp"}] for p in prefixes}
    assert routing.bgp_command(destination, routes) == command
    static: Any = {"1.0.4.0/24": [{"protocol": "static"}]}
    assert routing.bgp_command(destination, static) is None


def test_route_to_no_route() -> None:
    # what FRR 8.4 printed here for an address with no route (`show ip route 9.9.9.9 json`)
    assert routing.route_to({"0.0.0.0/0": []}) == {}


@pytest.mark.parametrize(
    ("destination", "longer", "command"),
    [
        ("", False, "show ip route json"),
        ("10.0.0.1", False, "show ip route 10.0.0.1 json"),
        ("10.0.0.0/8", True, "show ip route 10.0.0.0/8 longer-prefixes json"),
        ("10.0.0.1", True, "show ip route 10.0.0.1/32 longer-prefixes json"),
        ("2001:db8::/32", False, "show ipv6 route 2001:db8::/32 json"),
    ],
)
def test_route_command(destination: str, longer: bool, command: str) -> None:
    assert routing.route_command(destination, longer) == command


def test_a_bad_destination_is_named() -> None:
    with pytest.raises(ValueError, match=r"destination '10\.0\.0\.0; reboot'"):
        routing.route_command("10.0.0.0; reboot", False)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00:00:05", 5), ("12:03:04", 43384), ("1d02h03m", 93780), ("2w3d04h", 1483200), ("", -1)],
)
def test_frr_route_ages(text: str, seconds: int) -> None:
    assert routing.uptime_seconds(text) == seconds


def test_bgp_neighbors_detail() -> None:
    detail = patched("frr").get_bgp_neighbors_detail()
    spines = {p["remote_address"]: p for p in detail["global"][65000]}
    assert sorted(spines) == ["swp3", "swp4"]  # BGP unnumbered: the interface names
    for peer in spines.values():
        assert peer["up"] and peer["connection_state"] == "Established"
        assert peer["local_as"] == 65100 and peer["import_policy"] == "RM-SPINES-IN"
        assert peer["export_policy"] == "RM-SPINES-OUT" and peer["local_address"].startswith("fe80")
        assert peer["holdtime"] == 9 and peer["keepalive"] == 3  # timers bgp 3 9
        assert peer["input_messages"] > 0 and peer["received_prefix_count"] > 0
    (pair,) = detail["global"][0]  # aux1: no far end, the AS not known yet
    assert pair["remote_address"] == "aux1" and not pair["up"] and pair["local_address"] == ""
    only = patched("frr").get_bgp_neighbors_detail(neighbor_address="swp4")
    assert [p["remote_address"] for p in only["global"][65000]] == ["swp4"]


def test_bgp_detail_agrees_with_bgp_neighbors() -> None:
    driver = patched("frr")
    summary = driver.get_bgp_neighbors()["global"]["peers"]
    detail = {
        p["remote_address"]: p
        for ps in driver.get_bgp_neighbors_detail()["global"].values()
        for p in ps
    }
    assert set(summary) == set(detail)
    for name, peer in summary.items():
        assert peer["is_up"] == detail[name]["up"]
        accepted = sum(af["accepted_prefixes"] for af in peer["address_family"].values())
        assert accepted == detail[name]["accepted_prefix_count"]


# ------------------------------------------------------------- SONiC's own tools


def test_sonic_counters_are_the_asics() -> None:
    counters = patched("sonic").get_interfaces_counters()
    assert sorted(counters) == ["Ethernet0", "Ethernet128", "Ethernet136", "Ethernet4"]
    # portstat_a_j_r.json: Ethernet0 RX_ERR "12", RX_DRP "1,043", TX_DRP "3,204" (commas)
    assert counters["Ethernet0"]["rx_errors"] == 12 and counters["Ethernet0"]["rx_discards"] == 1043
    assert counters["Ethernet0"]["tx_discards"] == 3204
    assert counters["Ethernet128"]["tx_discards"] == 58 and counters["Ethernet4"]["rx_errors"] == 0
    assert counters["Ethernet0"]["tx_errors"] == -1  # "N/A" in COUNTERS_DB
    assert counters["Ethernet0"]["rx_octets"] == -1  # not in portstat's JSON


def test_sonic_mac_table_vlans_ntp_snmp() -> None:
    driver = patched("sonic")
    macs = driver.get_mac_address_table()
    assert [(m["mac"], m["vlan"], m["interface"], m["static"]) for m in macs] == [
        ("D2:3E:30:52:E3:47", 1001, "Ethernet0", False),  # srv0001 (its ARP entry's MAC)
        ("D2:3E:30:52:E3:4A", 1001, "Ethernet0", False),
        ("02:DC:00:01:00:02", 1001, "Ethernet4", True),  # static: kept on a down port
    ]
    assert driver.get_vlans() == {
        1001: {"name": "Vlan1001", "interfaces": ["Ethernet0", "Ethernet4", "Ethernet8"]}
    }
    assert driver.get_ntp_servers() == {
        "172.16.0.2": {"address": "172.16.0.2", "association_type": "SERVER"},
        "172.16.0.3": {"address": "172.16.0.3"},  # an older image's {}
    }
    snmp = driver.get_snmp_information()
    assert snmp["community"] == {
        "p1-fabric-ro": {"acl": "N/A", "mode": "ro"},
        "p1-fabric-rw": {"acl": "N/A", "mode": "rw"},
    }
    assert snmp["location"] == "p1 hall A row 3 rack g1"
    assert snmp["contact"] == "fabric-noc fabric-noc@example.net"


def test_sonic_and_asternos_answer_the_same_from_the_same_shell() -> None:
    sonic, asternos = patched("sonic"), patched("asternos")
    for name in ("get_interfaces_counters", "get_vlans", "get_mac_address_table", "get_arp_table"):
        assert getattr(sonic, name)() == getattr(asternos, name)()
    assert sonic.get_route_to("1.0.4.0/24", "bgp") == asternos.get_route_to("1.0.4.0/24", "bgp")


def test_portstat_numbers() -> None:
    data = {"Ethernet0": {"RX_ERR": "1,234,567", "RX_DRP": "N/A", "TX_ERR": "0", "TX_DRP": ""}}
    counters = sonic_reads.interfaces_counters(data)["Ethernet0"]
    assert counters["rx_errors"] == 1234567 and counters["rx_discards"] == -1
    assert counters["tx_errors"] == 0 and counters["tx_discards"] == -1


# -------------------------------------------------------------------- environment


def test_cpu_use_is_the_sampled_seconds() -> None:
    stat = "cpu0 100 0 100 800 0 0 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0 0 0\n"
    stat += "cpu0 150 0 150 900 0 0 0 0 0 0\ncpu1 0 0 0 1100 0 0 0 0 0 0\n"
    assert environment.cpu(stat) == {0: {"%usage": 50.0}, 1: {"%usage": 0.0}}
    assert environment.cpu("cpu0 1 2 3 4\n") == {}  # one read: no interval to measure


def test_memory_in_bytes() -> None:
    meminfo = "MemTotal:       1000 kB\nMemFree:   100 kB\nMemAvailable:    400 kB\n"
    assert environment.memory(meminfo) == {"available_ram": 1024000, "used_ram": 614400}


def test_hwmon_sensors() -> None:
    text = "hwmon0/temp1_input:81000\nhwmon0/temp1_max:80000\nhwmon0/temp1_crit:95000\n"
    text += "hwmon0/temp2_input:40000\nhwmon1/fan1_input:0\nhwmon1/fan2_input:5200\n"
    temperatures, fans = environment.hwmon(text)
    assert temperatures["hwmon0/temp1"] == {
        "temperature": 81.0,
        "is_alert": True,
        "is_critical": False,
    }
    assert temperatures["hwmon0/temp2"] == {
        "temperature": 40.0,
        "is_alert": False,
        "is_critical": False,
    }
    assert fans == {"hwmon1/fan1": {"status": False}, "hwmon1/fan2": {"status": True}}


def test_sonic_platform_tools() -> None:
    env = patched("sonic").get_environment()
    # fanshow: four drawers of two fans (FAN-3R "Not OK" at 0%), then the PSUs' fans
    fans = {name: fan["status"] for name, fan in env["fans"].items()}
    assert len(fans) == 10 and fans["FAN-1F"] and fans["PSU 1 FAN 1"]
    assert [name for name, ok in fans.items() if not ok] == ["FAN-3R", "PSU 2 FAN 1"]
    # psushow: PSU 1 OK at 415.35 W; PSU 2 present, "NOT OK" (no input), 0.0 W
    assert env["power"] == {
        "PSU 1": {"status": True, "output": 415.35, "capacity": -1.0},
        "PSU 2": {"status": False, "output": 0.0, "capacity": -1.0},
    }
    assert env["temperature"] == {}  # tempershow: "Thermal Not detected"
    table = (
        "  Sensor    Temperature    High TH    Low TH    Crit High TH    Crit Low TH    Warning  "
        "Timestamp\n--------  -------------  ---------  --------  --------------  -------------"
        "  ---------  ---------\n    CPU1           92.5         90       N/A             100"
        "            N/A      False  20250101\n"
    )
    assert environment.sonic_temperatures(table) == {
        "CPU1": {"temperature": 92.5, "is_alert": True, "is_critical": False}
    }


# -------------------------------------------------------------------- conformance


ARGS: dict[str, tuple[Any, ...]] = {"get_route_to": ("1.0.4.0/24", "bgp", True)}
DOC = Path(__file__).resolve().parents[2] / "docs" / "platforms" / "napalm-getters.md"
PLATFORMS = ("frr", "sonic", "asternos")


def documented() -> dict[str, dict[str, bool]]:
    """docs/platforms/napalm-getters.md's table: getter -> platform -> answered (a cell that
    starts "no" or "not yet" says the getter raises NotImplementedError)."""
    table: dict[str, dict[str, bool]] = {}
    for line in DOC.read_text().split("## get_config")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        names = [n.split("(")[0] for n in re.findall(r"`([^`]+)`", cells[0])]
        for name in names:
            table[name] = {
                p: not cell.startswith(("no", "not yet"))
                for p, cell in zip(PLATFORMS, cells[1:], strict=True)
            }
    return table


def test_the_documented_table_covers_every_napalm_getter() -> None:
    getters = {
        name
        for name in dir(NetworkDriver)
        if name.startswith("get_") or name in ("cli", "ping", "traceroute", "is_alive")
    }
    assert getters - set(documented()) == set()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_platform_answers_what_the_table_says(platform: str) -> None:
    driver = patched(platform)
    show = "show running-config" if platform == "asternos" else "show version"  # recorded
    calls = {"ping": ("10.0.0.1",), "traceroute": ("10.0.0.1",), "cli": ([show],)}
    for name, row in sorted(documented().items()):
        answered = row[platform]
        call = getattr(driver, name)
        if answered:
            assert call(*ARGS.get(name, calls.get(name, ()))) is not None, name
        else:
            with pytest.raises(NotImplementedError) as failure:
                call(*calls.get(name, ()))
            assert str(failure.value), f"{name} must say why it is not answered"


IMPLEMENTED = {
    platform: {name for name, row in documented().items() if row[platform]}
    for platform in PLATFORMS
}


@pytest.mark.parametrize("platform", sorted(IMPLEMENTED))
def test_every_standard_getter_returns_napalms_model_strictly(platform: str) -> None:
    """Stricter than NAPALM's own test (an int is not a float, nested models too)."""
    driver = patched(platform)
    for name in sorted(STANDARD_GETTER_TYPES):
        call = getattr(driver, name)
        if name not in IMPLEMENTED[platform] and name != "is_alive":
            with pytest.raises(NotImplementedError):
                call()
            continue
        result = call(*ARGS.get(name, ()))
        assert result and conformance_errors(STANDARD_GETTER_TYPES[name], result) == [], name
