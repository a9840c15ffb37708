"""SonicDriver against the mocked SONiC device (recordings under mocked/sonic/)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from napalm.base.exceptions import (
    CommandErrorException,
    CommitError,
    MergeConfigException,
    ReplaceConfigException,
)

from controller.drivers.bundle import unpack
from controller.drivers.sonic_family import parse_table
from controller.platforms.sonic.driver import SonicDriver, target_config_db
from tests.drivers.candidates import SONIC_BUNDLE, SONIC_CONFIG_DB

CHECKPOINT = "sudo -n config checkpoint dpctl-"
REPLACE = "sudo -n config replace /tmp/dpctl/candidate.config_db.json"
SAVE = "sudo -n config save -y"
WRITE_MEMORY = "sudo -n docker exec bgp vtysh -c 'write memory'"
RELOAD = "sudo -n docker exec bgp /usr/lib/frr/frr-reload.py --reload --stdout --daemon "


def index(commands: list[str], prefix: str) -> int:
    return next(i for i, c in enumerate(commands) if c.startswith(prefix))


def test_open_passes_host_key_settings_not_logging_password(sonic: Any) -> None:
    params = sonic.fake.params
    assert params["known_hosts"] == "/tmp/known_hosts"
    assert params["hostname"] == "p1-g1-leaf1" and params["port"] == 22
    assert sonic.is_alive() == {"is_alive": True}
    assert "not-logged" not in repr(vars(sonic)).replace("'_password': 'not-logged'", "")
    sonic.close()
    assert sonic.is_alive() == {"is_alive": False}


def test_get_facts(sonic: Any) -> None:
    assert sonic.get_facts() == {
        "hostname": "p1-g1-leaf1",
        "fqdn": "p1-g1-leaf1",
        "vendor": "SONiC",
        "model": "CX732Q-N",
        "os_version": "SONiC.202405.0-6d5f1e2a3",
        "serial_number": "F732Q0N2A0017",
        "uptime": 266673.42,
        "interface_list": ["Ethernet0", "Ethernet4", "Ethernet128", "Ethernet136"],
    }


def test_get_interfaces(sonic: Any) -> None:
    interfaces = sonic.get_interfaces()
    assert set(interfaces) == {"Ethernet0", "Ethernet4", "Ethernet128", "Ethernet136"}
    assert interfaces["Ethernet0"] == {
        "is_up": True,
        "is_enabled": True,
        "description": "srv0001:nic1p1",
        "last_flapped": -1.0,
        "speed": 200000.0,
        "mtu": 9216,
        "mac_address": "60:eb:5a:01:12:41",
    }
    assert interfaces["Ethernet4"]["is_up"] is False and interfaces["Ethernet4"]["is_enabled"]
    assert interfaces["Ethernet128"]["speed"] == 400000.0
    assert interfaces["Ethernet136"]["is_enabled"] is False
    assert interfaces["Ethernet136"]["description"] == ""


def test_get_bgp_neighbors_from_real_frr_json(sonic: Any) -> None:
    assert sonic.get_bgp_neighbors() == {
        "global": {
            "router_id": "10.0.0.5",
            "peers": {
                "Ethernet128": {
                    "local_as": 65100,
                    "remote_as": 65000,
                    "remote_id": "10.0.0.1",
                    "is_up": True,
                    "is_enabled": True,
                    "description": "",
                    "uptime": 4,  # NAPALM: int seconds
                    "address_family": {
                        "ipv4": {
                            "received_prefixes": 1,
                            "accepted_prefixes": 1,
                            "sent_prefixes": 3,
                        },
                        "l2vpn_evpn": {
                            "received_prefixes": 0,
                            "accepted_prefixes": 0,
                            "sent_prefixes": 2,
                        },
                    },
                }
            },
        }
    }


def test_get_lldp_neighbors(sonic: Any) -> None:
    assert sonic.get_lldp_neighbors() == {
        "eth0": [{"hostname": "oob-sw1", "port": "Ethernet12"}],
        # SONiC's lldpmgrd announces the port alias as the port id
        "Ethernet128": [{"hostname": "p1-spine1", "port": "Eth1/1"}],
        # a host NIC without a system name: the chassis id stands in
        "Ethernet0": [{"hostname": "b8:3f:d2:4a:10:01", "port": "b8:3f:d2:4a:10:01"}],
    }


def test_get_host_routes(sonic: Any) -> None:
    routes = sonic.dpctl.get_host_routes()
    assert [r["prefix"] for r in routes] == [
        "10.0.0.1/32",
        "10.0.0.5/32",
        "10.128.0.2/32",
        "10.128.0.3/32",
    ]
    assert routes[2] == {
        "prefix": "10.128.0.2/32",
        "protocol": "table",
        "nexthops": ["Vlan1001"],
        "selected": True,
    }
    assert routes[0]["protocol"] == "bgp" and routes[0]["nexthops"] == ["Ethernet128"]
    assert "10.128.0.0/26" not in {r["prefix"] for r in routes}


def test_get_evpn_es(sonic: Any) -> None:
    assert sonic.dpctl.get_evpn_es() == [
        {
            "esi": "03:02:dc:00:00:01:01:00:00:01",
            "interface": "PortChannel1",
            "up": True,
            "df": True,
            "peers": ["10.0.0.17"],
        },
        {
            "esi": "03:02:dc:00:00:01:02:00:00:02",
            "interface": "PortChannel2",
            "up": False,
            "df": False,
            "peers": ["10.0.0.17"],
        },
    ]


def test_get_maintenance(sonic: Any) -> None:
    assert sonic.dpctl.get_maintenance() == {
        "graceful_shutdown": False,
        "isolated": False,
        "hosts_via_pair": False,
    }


def test_get_config_bundles_config_db_and_frr(sonic: Any) -> None:
    config = sonic.get_config()
    running = unpack(config["running"], "config_db.json")
    assert set(running) == {"config_db.json", "frr.conf"}
    assert json.loads(running["config_db.json"])["DEVICE_METADATA"]["localhost"]["mac"]
    assert "! >>> bgpd.conf" in running["frr.conf"] and "router bgp 65100" in running["frr.conf"]
    assert "ip import-table 100" in unpack(config["startup"], "x")["frr.conf"]
    assert config["candidate"] == ""
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    assert sonic.get_config(retrieve="candidate")["candidate"] == SONIC_BUNDLE


EXPECTED_DIFF = """\
--- running/config_db.json
+++ candidate/config_db.json
@@ -38,7 +38,7 @@
         "Ethernet4": {
             "admin_status": "up",
             "alias": "Eth1/2",
-            "description": "srv0002:nic1p1",
+            "description": "srv0099:nic1p1",
             "fec": "rs",
             "index": "1",
             "lanes": "4,5,6,7",
@@ -58,9 +58,6 @@
         },
         "Vlan1001|Ethernet4": {
             "tagging_mode": "untagged"
-        },
-        "Vlan1001|Ethernet8": {
-            "tagging_mode": "untagged"
         }
     }
 }
--- running/bgpd.conf
+++ candidate/bgpd.conf
@@ -11,6 +11,7 @@
 router bgp 65100
  bgp router-id 10.0.0.5
  bgp bestpath as-path multipath-relax
+ bgp graceful-shutdown
  neighbor SPINES peer-group
  neighbor SPINES remote-as external
  neighbor Ethernet128 interface peer-group SPINES
@@ -18,4 +19,3 @@
   redistribute connected route-map RM-CONNECTED
   redistribute table 100 route-map RM-HOSTS-IMPORT
   neighbor SPINES route-map RM-SPINES-OUT out
-  maximum-paths 16
"""


def test_compare_config_exact_diff(sonic: Any) -> None:
    assert sonic.compare_config() == ""  # nothing loaded
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    assert sonic.compare_config() == EXPECTED_DIFF
    sonic.discard_config()
    assert sonic.compare_config() == ""


def test_compare_config_empty_when_candidate_is_running(sonic: Any) -> None:
    running = unpack(sonic.get_config(retrieve="running")["running"], "config_db.json")
    sonic.load_replace_candidate(config=running["config_db.json"])  # plain JSON = config_db
    assert sonic.compare_config() == ""


def test_merge_candidate_keeps_running_entries(sonic: Any) -> None:
    sonic.load_merge_candidate(config=SONIC_BUNDLE)
    diff = sonic.compare_config()
    assert "Vlan1001|Ethernet8" not in diff  # merge never removes
    assert "+ bgp graceful-shutdown" in diff and "-  maximum-paths 16" not in diff


def test_target_keeps_device_fields_and_unmanaged_tables() -> None:
    running = {
        "DEVICE_METADATA": {"localhost": {"mac": "60:eb:5a:01:12:41", "hostname": "old"}},
        "FEATURE": {"bgp": {"state": "enabled"}},
        "VLAN_MEMBER": {"Vlan1|Ethernet8": {"tagging_mode": "untagged"}},
    }
    target = target_config_db(running, SONIC_CONFIG_DB)
    assert target["DEVICE_METADATA"]["localhost"]["mac"] == "60:eb:5a:01:12:41"
    assert target["DEVICE_METADATA"]["localhost"]["hostname"] == "p1-g1-leaf1"
    assert target["FEATURE"] == {"bgp": {"state": "enabled"}}
    assert "Vlan1|Ethernet8" not in target["VLAN_MEMBER"]


def test_commit_order_checkpoint_apply_save(sonic: Any) -> None:
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config()
    cmds = sonic.fake.commands
    checkpoint = index(cmds, CHECKPOINT)
    snapshot = index(cmds, "<put /tmp/dpctl/dpctl-")
    replace = index(cmds, REPLACE)
    reload_zebra = index(cmds, RELOAD + "zebra")
    reload_bgpd = index(cmds, RELOAD + "bgpd")
    save = index(cmds, SAVE)
    write = index(cmds, WRITE_MEMORY)
    assert checkpoint < snapshot < replace < reload_zebra < reload_bgpd < save < write
    assert not any("config rollback" in c for c in cmds)
    # the full target went to the device: running + candidate tables, device fields kept
    target = json.loads(sonic.fake.files["/tmp/dpctl/candidate.config_db.json"])
    assert target["DEVICE_METADATA"]["localhost"]["mac"] == "60:eb:5a:01:12:41"
    assert "Vlan1001|Ethernet8" not in target["VLAN_MEMBER"] and "FEATURE" in target
    # frr-reload got exactly the candidate's daemon section
    bgpd = sonic.fake.files["/tmp/dpctl/candidate.bgpd.conf"]
    assert "bgp graceful-shutdown" in bgpd and "ip import-table" not in bgpd
    assert (
        "sudo -n docker cp /tmp/dpctl/candidate.bgpd.conf bgp:/tmp/dpctl-candidate.bgpd.conf"
        in cmds
    )
    assert sonic.compare_config() == ""  # candidate consumed


def test_commit_without_frr_reload_uses_vtysh_f(sonic: Any) -> None:
    sonic.fake.failures["sudo -n docker exec bgp test -x"] = ("", 1)
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config()
    assert "sudo -n docker exec bgp vtysh -f /tmp/dpctl-candidate.bgpd.conf" in sonic.fake.commands


def test_commit_falls_back_to_config_load_without_gcu(sonic: Any) -> None:
    sonic.fake.failures[REPLACE] = ("Error: No such command 'replace'.\n", 2)
    sonic.fake.overrides["sudo -n config load -y /tmp/dpctl/candidate.config_db.json"] = ""
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config()
    cmds = sonic.fake.commands
    assert index(cmds, "sudo -n config load -y") < index(cmds, SAVE)


def test_rejected_config_db_raises_rolls_back_and_never_saves(sonic: Any) -> None:
    sonic.fake.failures[REPLACE] = (
        "Failed to replace config\nUsage: config replace [OPTIONS] TARGET_FILE_PATH\n"
        "Error: Given patch will produce invalid config. Error: VLAN_MEMBER ... leafref\n",
        2,
    )
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    with pytest.raises(ReplaceConfigException, match="rolled back to dpctl-"):
        sonic.commit_config()
    cmds = sonic.fake.commands
    assert index(cmds, CHECKPOINT) < index(cmds, REPLACE) < index(cmds, "sudo -n config rollback")
    assert SAVE not in cmds and WRITE_MEMORY not in cmds
    assert not any(c.startswith(RELOAD) and "candidate" in c for c in cmds)


def test_rejected_frr_line_in_merge_raises_merge_exception(sonic: Any) -> None:
    sonic.fake.failures["sudo -n docker exec bgp vtysh -f /tmp/dpctl-candidate.bgpd.conf"] = (
        "line 2: % Unknown command[25]:  neighbor SPINES bogus-knob 7\n",
        2,
    )
    sonic.load_merge_candidate(config=SONIC_BUNDLE)
    with pytest.raises(MergeConfigException, match="Unknown command"):
        sonic.commit_config()
    assert SAVE not in sonic.fake.commands
    assert any(c.startswith("sudo -n config rollback dpctl-") for c in sonic.fake.commands)


def test_no_rollback_point_no_apply(sonic: Any) -> None:
    sonic.fake.failures[CHECKPOINT] = ("Failed to create a config checkpoint\n", 1)
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    with pytest.raises(ReplaceConfigException, match="nothing applied"):
        sonic.commit_config()
    assert REPLACE not in sonic.fake.commands and SAVE not in sonic.fake.commands


def test_rollback_uses_the_saved_checkpoint(sonic: Any) -> None:
    with pytest.raises(CommandErrorException):
        sonic.rollback()
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config()
    checkpoint = sonic._checkpoint
    assert checkpoint and checkpoint.startswith("dpctl-")
    before = len(sonic.fake.commands)
    sonic.rollback()
    after = sonic.fake.commands[before:]
    assert after[0] == f"sudo -n config rollback {checkpoint}"
    assert after[1] == RELOAD + f"zebra /tmp/dpctl-{checkpoint}.zebra.conf"
    assert after[2] == RELOAD + f"bgpd /tmp/dpctl-{checkpoint}.bgpd.conf"
    assert after[-2:] == [SAVE, WRITE_MEMORY]


def test_commit_confirm_with_revert_in(sonic: Any) -> None:
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config(revert_in=300)
    cmds = sonic.fake.commands
    timer = next(c for c in cmds if c.startswith("sudo -n systemd-run"))
    assert "--unit=dpctl-revert --on-active=300" in timer and "config rollback dpctl-" in timer
    assert SAVE not in cmds and sonic.has_pending_commit()
    with pytest.raises(CommitError):
        sonic.commit_config()
    sonic.confirm_commit()
    assert "sudo -n systemctl stop dpctl-revert.timer" in sonic.fake.commands
    assert sonic.fake.commands[-2:] == [SAVE, WRITE_MEMORY] and not sonic.has_pending_commit()


def test_rollback_cancels_pending_revert(sonic: Any) -> None:
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config(revert_in=60)
    sonic.rollback()
    cmds = sonic.fake.commands
    assert index(cmds, "sudo -n systemctl stop") < index(cmds, "sudo -n config rollback")
    assert not sonic.has_pending_commit()


def test_load_rejects_bad_candidates(sonic: Any) -> None:
    with pytest.raises(ReplaceConfigException, match="not JSON"):
        sonic.load_replace_candidate(config="#### dpctl-file: config_db.json\n{oops\n")
    with pytest.raises(MergeConfigException, match="unexpected files"):
        sonic.load_merge_candidate(config="#### dpctl-file: ip.batch\nlink add x\n")
    with pytest.raises(CommitError):
        sonic.commit_config()


def test_load_from_file(sonic: Any, tmp_path: Any) -> None:
    path = tmp_path / "leaf.bundle"
    path.write_text(SONIC_BUNDLE)
    sonic.load_replace_candidate(filename=str(path))
    assert sonic.compare_config() == EXPECTED_DIFF


def test_parse_table_handles_empty_cells() -> None:
    text = "  A    B\n---  ---\n  x     \n  y    z\n"
    assert parse_table(text) == [{"A": "x", "B": ""}, {"A": "y", "B": "z"}]


def test_not_connected_is_a_clear_error() -> None:
    driver = SonicDriver("h", "u", "p")
    assert driver.is_alive() == {"is_alive": False}
    with pytest.raises(Exception, match="not connected"):
        driver.get_facts()


CHANGES = ("config checkpoint", "config replace", "config rollback", "config save", "--reload")
CHANGES += ("vtysh -f ", "write memory")
"""What changes the switch (and runs under the switch-side bound, timeout -k 5 T, there)."""


def test_every_command_that_changes_the_switch_is_bounded_there(sonic: Any) -> None:
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config(revert_in=60)
    sonic.rollback()
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    sonic.commit_config()
    sent = sonic.fake.sent
    timer = next(c for c in sent if c.startswith("sudo -n systemd-run "))
    changes = [c for c in sent if c != timer and any(w in c for w in CHANGES)]
    assert len(changes) == 15  # a commit with revert_in (4), its rollback (5), a commit (6)
    bound = "timeout -k 5 50 "  # the driver's timeout (60 s here) less 10 s
    for command in changes:  # FRR's tools: inside the container, where timeout can end them
        prefix = "sudo -n docker exec bgp " if "docker" in command else "sudo -n "
        assert command.startswith(prefix + bound), command
    revert = shlex.split(timer)[-1]  # the revert timer's script: each step bounded too
    assert [step.split()[:5] for step in revert.split(" && ")] == [
        ["timeout", "-k", "5", "50", "config"],
        ["docker", "exec", "bgp", "timeout", "-k"],
        ["docker", "exec", "bgp", "timeout", "-k"],
    ]
    reads = [c for c in sent if c not in changes and c != timer]
    assert reads and not any("timeout" in c for c in reads)


@pytest.mark.parametrize(
    ("timeout", "args", "bound"),
    [(120, {}, 110), (120, {"command_timeout": 30}, 20), (300, {"command_timeout": "8"}, 5)],
)
def test_the_bound_is_the_command_timeout_less_10_s(
    timeout: int, args: dict[str, Any], bound: int
) -> None:
    driver = SonicDriver("sw", "admin", None, timeout=timeout, optional_args=args)
    assert driver._sudo("config save -y") == f"sudo -n timeout -k 5 {bound} config save -y"


def test_a_commands_own_137_within_the_bound_is_no_timeout(sonic: Any) -> None:
    sonic.fake.failures[REPLACE] = ("Killed\n", 137)  # e.g. the OOM killer, at once
    sonic.load_replace_candidate(config=SONIC_BUNDLE)
    with pytest.raises(ReplaceConfigException, match=r"exited 137: Killed"):
        sonic.commit_config()
