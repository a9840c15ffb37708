"""Shared helpers (controller/drivers/common.py) and NAPALM's driver lookup."""

from __future__ import annotations

import pytest

from controller.drivers import common
from controller.platforms.asternos.driver import AsterNOSDriver
from controller.platforms.sonic.driver import SonicDriver
from tests.drivers.conftest import MOCKED


def test_load_json_skips_cli_noise() -> None:
    assert common.load_json('show ip route json\n{"a": [1]}\nsonic# ') == {"a": [1]}
    with pytest.raises(common.OutputError):
        common.load_json("% Unknown command")


def test_bgp_summary_shapes_agree() -> None:
    vrf_all = common.load_json(
        (
            MOCKED / "sonic" / "sudo_n_docker_exec_bgp_vtysh_c_show_bgp_vrf_all_summary_json.json"
        ).read_text()
    )
    flat = vrf_all["default"]["ipv4Unicast"]
    one_vrf = {"ipv4Unicast": flat}
    results = [common.bgp_neighbors(x) for x in (flat, one_vrf)]
    assert results[0] == results[1]
    assert results[0]["global"]["peers"]["Ethernet128"]["address_family"]["ipv4"] == {
        "received_prefixes": 1,
        "accepted_prefixes": 1,
        "sent_prefixes": 3,
    }


def test_bgp_down_and_admin_down_peers() -> None:
    summary = {
        "routerId": "10.0.0.1",
        "as": 65000,
        "vrfName": "default",
        "peers": {
            "Ethernet4": {"remoteAs": 0, "localAs": 65000, "state": "Idle", "peerUptimeMsec": 0},
            "Ethernet8": {"remoteAs": 65101, "localAs": 65000, "state": "Idle (Admin)"},
        },
    }
    peers = common.bgp_neighbors(summary)["global"]["peers"]
    assert peers["Ethernet4"]["is_up"] is False and peers["Ethernet4"]["uptime"] == -1
    assert peers["Ethernet4"]["is_enabled"] is True
    assert peers["Ethernet8"]["is_enabled"] is False


def test_lldp_single_interface_is_an_object() -> None:
    data = {
        "lldp": {
            "interface": {
                "Ethernet0": {
                    "chassis": {"p1-spine1": {"id": {"type": "mac", "value": "x"}}},
                    "port": {"id": {"type": "ifname", "value": "Ethernet8"}},
                }
            }
        }
    }
    assert common.lldp_neighbors(data) == {
        "Ethernet0": [{"hostname": "p1-spine1", "port": "Ethernet8"}]
    }
    assert common.lldp_neighbors({"lldp": {}}) == {}


def test_split_daemons() -> None:
    text = "! >>> zebra.conf\nip import-table 100\n! >>> bgpd.conf\nrouter bgp 1\n"
    assert common.split_daemons(text) == {
        "zebra.conf": "ip import-table 100\n",
        "bgpd.conf": "router bgp 1\n",
    }
    assert common.split_daemons("router bgp 1\n", default="bgpd.conf") == {
        "bgpd.conf": "router bgp 1\n"
    }


def test_negations_keep_physical_and_invert_no_lines() -> None:
    running = "interface ethernet 0/8\n description old\n shutdown\nvlan 5\nno ip forwarding\n"
    candidate = "interface ethernet 0/0\n description x\n"
    assert common.negations(running, candidate, keep=("interface ethernet",)) == [
        "ip forwarding",
        "no vlan 5",
        "interface ethernet 0/8",
        "no shutdown",
        "exit",
        "interface ethernet 0/8",
        "no description old",
        "exit",
    ]


def test_maintenance_spine_isolated_and_normal() -> None:
    isolated = (
        "route-map RM-LEAVES-OUT permit 10\n match ip address prefix-list PL-LOOPBACK\nexit\n"
    )
    normal = "route-map RM-LEAVES-OUT permit 10\n match ip address prefix-list PL-FABRIC\nexit\n"
    assert common.maintenance_state(isolated) == {
        "graceful_shutdown": False,
        "isolated": True,
        "hosts_via_pair": False,
    }
    assert common.maintenance_state(normal)["isolated"] is False
    assert common.maintenance_state("")["isolated"] is False  # no fabric maps: not isolated


@pytest.mark.parametrize(
    ("text", "via_pair"),
    [
        ("route-map RM-HOSTS-IMPORT deny 10\n match ip address prefix-list PL-HOSTS\nexit\n", True),
        (
            "route-map RM-HOSTS-IMPORT permit 10\n match ip address prefix-list PL-HOSTS\nexit\n",
            False,
        ),
        ("route-map RM-OTHER deny 10\nexit\n", False),
        ("", False),
    ],
)
def test_maintenance_hosts_via_pair_from_the_import_route_map(text: str, via_pair: bool) -> None:
    assert common.maintenance_state(text)["hosts_via_pair"] is via_pair


def test_evpn_es_accepts_remote_only_and_empty() -> None:
    assert common.evpn_es([]) == []
    assert common.evpn_es([{"esi": "03:aa", "flags": ["remote"]}]) == []


@pytest.mark.parametrize("value", ["later", 0, -1, None])
@pytest.mark.parametrize(
    ("driver", "option"), [(SonicDriver, "command_timeout"), (AsterNOSDriver, "read_timeout")]
)
def test_a_bad_timeout_option_is_refused(driver: type, option: str, value: object) -> None:
    """controller/drivers/switch_side.py ``seconds``: the option named, and what it takes."""
    with pytest.raises(ValueError) as caught:
        driver("sw", "admin", None, optional_args={option: value})
    assert str(caught.value) == f"sw: optional_args {option}={value!r}: a number of seconds above 0"
