"""AsterNOSDriver against the mocked AsterNOS device (recordings under mocked/asternos/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from napalm.base.exceptions import (
    CommandErrorException,
    MergeConfigException,
    ReplaceConfigException,
)

from controller.platforms.asternos.driver import saved_session_lines, session_lines
from tests.drivers.candidates import ASTERNOS_CLI
from tests.drivers.conftest import MOCKED

EXPECTED_DIFF = """\
--- running/asternos.cli
+++ candidate/asternos.cli
@@ -7,7 +7,7 @@
 interface ethernet 0/4
  description srv0002:nic1p1
  mtu 9216
- switchport access vlan 1002
+ switchport access vlan 1001
  no shutdown
 interface ethernet 0/128
  description p1-spine1:Ethernet0
@@ -20,8 +20,6 @@
  ip address 10.128.0.1/26
  mac-address 02:dc:00:00:00:01
  arp proxy mode anycast_gw
-interface vlan 1002
- ip address 10.128.0.65/26
 ip prefix-list PL-HOSTS seq 5 permit 10.128.0.0/26 ge 32
 ip prefix-list PL-LOOPBACK seq 5 permit 10.0.0.5/32
 route-map RM-SPINES-OUT permit 10
@@ -36,5 +34,5 @@
  address-family ipv4 unicast
   redistribute connected
   neighbor SPINES route-map RM-SPINES-OUT out
+  maximum-paths 16
 vlan 1001
-vlan 1002
"""

NEGATIONS = [
    "no interface vlan 1002",
    "interface ethernet 0/4",
    "no switchport access vlan 1002",
    "exit",
    "no vlan 1002",
]


def configs(fake: Any) -> list[list[str]]:
    return [entry for kind, entry in fake.log if kind == "config"]


def test_open_uses_netmiko_asternos_with_strict_host_keys(asternos: Any) -> None:
    params = asternos.fake.params
    assert params["device_type"] == "asterfusion_asternos"
    assert params["ssh_strict"] is True
    assert params["alt_host_keys"] is True and params["alt_key_file"] == "/tmp/known_hosts"
    assert params["system_host_keys"] is False
    assert asternos.is_alive() == {"is_alive": True}
    asternos.close()
    assert asternos.is_alive() == {"is_alive": False}


def test_get_facts_from_the_sonic_shell(asternos: Any) -> None:
    assert asternos.get_facts() == {
        "hostname": "p1-g1-leaf1",
        "fqdn": "p1-g1-leaf1",
        "vendor": "Asterfusion",
        "model": "CX732Q-N",
        "os_version": "AsterNOS-V5.2R012P01",
        "serial_number": "F732Q0N2A0017",
        "uptime": 86400.0,
        "interface_list": ["Ethernet0", "Ethernet4", "Ethernet128", "Ethernet136"],
    }
    commands = [entry for kind, entry in asternos.fake.log if kind == "command"]
    assert commands[0] == "system bash" and commands[-1] == "exit"
    assert asternos.fake.mode == "klish"


def test_get_interfaces(asternos: Any) -> None:
    interfaces = asternos.get_interfaces()
    assert interfaces["Ethernet128"]["description"] == "p1-spine1:Ethernet0"
    assert interfaces["Ethernet4"]["is_up"] is False
    assert interfaces["Ethernet0"]["speed"] == 200000.0


def test_get_lldp_neighbors(asternos: Any) -> None:
    assert asternos.get_lldp_neighbors()["Ethernet128"] == [
        {"hostname": "p1-spine1", "port": "Eth1/1"}
    ]


def test_get_bgp_neighbors_from_klish_json(asternos: Any) -> None:
    peers = asternos.get_bgp_neighbors()["global"]["peers"]
    assert peers["Ethernet128"]["is_up"] is True
    assert peers["Ethernet128"]["remote_as"] == 65000
    assert peers["Ethernet128"]["address_family"]["ipv4"]["sent_prefixes"] == 3
    assert peers["Ethernet128"]["remote_id"] == ""  # not in `show ip bgp summary json`


def test_get_host_routes_and_evpn_es(asternos: Any) -> None:
    assert [r["prefix"] for r in asternos.dpctl.get_host_routes() if r["protocol"] == "table"] == [
        "10.128.0.2/32",
        "10.128.0.3/32",
    ]
    assert [(e["interface"], e["df"]) for e in asternos.dpctl.get_evpn_es()] == [
        ("PortChannel1", True),
        ("PortChannel2", False),
    ]


def test_get_maintenance(asternos: Any) -> None:
    assert asternos.dpctl.get_maintenance() == {
        "graceful_shutdown": False,
        "isolated": False,
        "hosts_via_pair": False,
    }
    isolated = (MOCKED / "asternos" / "show_running_config_isolated.txt").read_text()
    asternos.fake.overrides["show running-config"] = isolated
    assert asternos.dpctl.get_maintenance() == {
        "graceful_shutdown": True,
        "isolated": True,
        "hosts_via_pair": False,
    }


def test_get_config(asternos: Any) -> None:
    config = asternos.get_config()
    assert "router bgp 65100" in config["running"] and config["startup"]
    assert config["candidate"] == ""


def test_compare_config_exact_diff(asternos: Any) -> None:
    assert asternos.compare_config() == ""
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    assert asternos.compare_config() == EXPECTED_DIFF
    asternos.discard_config()
    assert asternos.compare_config() == ""


def test_compare_config_empty_for_running(asternos: Any) -> None:
    asternos.load_replace_candidate(config=asternos.get_config("running")["running"])
    assert asternos.compare_config() == ""


def test_merge_compare_never_removes(asternos: Any) -> None:
    asternos.load_merge_candidate(config=ASTERNOS_CLI)
    diff = asternos.compare_config()
    assert "+  maximum-paths 16" in diff and "-vlan 1002" not in diff


def test_commit_order_rollback_point_push_write(asternos: Any, tmp_path: Path) -> None:
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    asternos.commit_config()
    kinds = [kind for kind, _ in asternos.fake.log]
    assert asternos.fake.log[0] == ("command", "show running-config")  # rollback point first
    assert kinds[-2:] == ["config", "save"]
    (pushed,) = configs(asternos.fake)
    assert pushed[: len(NEGATIONS)] == NEGATIONS
    assert pushed[len(NEGATIONS) :] == session_lines(ASTERNOS_CLI)
    assert "configure terminal" not in pushed and "write" not in pushed and "end" not in pushed
    saved = list((tmp_path / "checkpoints").glob("p1-g1-leaf1.dpctl-*.cli"))
    assert len(saved) == 1 and "vlan 1002" in saved[0].read_text()


def test_merge_commit_sends_no_negations(asternos: Any) -> None:
    asternos.load_merge_candidate(config=ASTERNOS_CLI)
    asternos.commit_config()
    (pushed,) = configs(asternos.fake)
    assert pushed == session_lines(ASTERNOS_CLI)


def test_rejected_line_raises_restores_and_never_writes(asternos: Any) -> None:
    asternos.fake.reject.add("arp proxy mode anycast_gw")
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    with pytest.raises(ReplaceConfigException, match="arp proxy mode anycast_gw"):
        asternos.commit_config()
    pushes = configs(asternos.fake)
    assert len(pushes) == 2  # the candidate, then the restore of the saved running-config
    assert "vlan 1002" in pushes[1] and "switchport access vlan 1002" in pushes[1]
    assert ("save", None) not in asternos.fake.log


def test_rejected_merge_raises_merge_exception(asternos: Any) -> None:
    asternos.fake.reject.add("maximum-paths 16")
    asternos.load_merge_candidate(config=ASTERNOS_CLI)
    with pytest.raises(MergeConfigException, match="restored"):
        asternos.commit_config()
    assert ("save", None) not in asternos.fake.log


def test_rollback_replays_the_saved_running_config(asternos: Any) -> None:
    with pytest.raises(CommandErrorException):
        asternos.rollback()
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    asternos.commit_config()
    saved = (MOCKED / "asternos" / "show_running_config.txt").read_text()
    # the device now runs the candidate
    asternos.fake.overrides["show running-config"] = ASTERNOS_CLI
    asternos.rollback()
    restore = configs(asternos.fake)[-1]
    assert restore[:8] == [
        "router bgp 65100",
        "address-family ipv4 unicast",
        "no maximum-paths 16",
        "exit",
        "exit",
        "interface ethernet 0/4",
        "no switchport access vlan 1001",
        "exit",
    ]
    replay = saved_session_lines(saved)
    assert replay == restore[-len(replay) :]
    # the running-config's banner is not sent; its blocks are closed as a session needs
    assert "Building configuration..." not in restore
    assert replay[replay.index("vlan 1002") + 1] == "exit"
    assert replay[-3:] == ["neighbor SPINES route-map RM-SPINES-OUT out", "exit", "exit"]
    assert asternos.fake.log[-1] == ("save", None)


def test_revert_in_is_not_supported(asternos: Any) -> None:
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    with pytest.raises(NotImplementedError, match="commit-confirmed"):
        asternos.commit_config(revert_in=60)
    assert configs(asternos.fake) == []


def test_bundle_with_other_files_is_rejected(asternos: Any) -> None:
    with pytest.raises(ReplaceConfigException, match=r"asternos\.cli"):
        asternos.load_replace_candidate(config="#### dpctl-file: frr.conf\nrouter bgp 1\n")
