"""SONiC rendering: CONFIG_DB structure, RoCE QoS, link-local fabric, shared ESIs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.platforms.sonic.tables import check_config_db
from controller.render.device import build_device
from controller.render.engine import render_fabric
from controller.render.features import UnsupportedFeature

MODES = ["dual-arp", "evpn-mh"]


def intent(mode: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": f"t-{mode}",
        "platform": "sonic",
        "switches": {"leaf": "CX732Q-N", "spine": "CX732Q-N"},
        "servers": 16,
        "gpus_per_server": 4,
        "dual_leaf_mode": mode,
        "cross_plane_protection": True,
        "addressing": {
            "loopbacks": "10.0.0.0/24",
            "rail_subnets": "10.128.0.0/16",
            "management": "172.16.0.0/24",
        },
        "roce": {"enabled": True, "cable_length_m": 5, "incast": "medium"},
        "load_balancing": {"mode": "ecmp"},
    }
    data.update(changes)
    return data


def render(data: dict[str, Any]) -> tuple[Any, dict[str, dict[str, Any]], dict[str, str]]:
    fabric = build_fabric(intent_from_data(data))
    out = render_fabric(fabric)
    dbs = {name: json.loads(files["config_db.json"]) for name, files in out.items()}
    frr = {name: files["frr.conf"] for name, files in out.items()}
    return fabric, dbs, frr


@pytest.fixture(scope="module", params=MODES)
def rendered(request: pytest.FixtureRequest) -> tuple[str, Any, dict[str, Any], dict[str, str]]:
    fabric, dbs, frr = render(intent(request.param))
    return request.param, fabric, dbs, frr


def test_small_fabric_shape(rendered: tuple[str, Any, dict[str, Any], dict[str, str]]) -> None:
    _, fabric, dbs, _ = rendered
    roles = sorted(s.role for s in fabric.switches)
    assert roles.count("leaf") == 4 and roles.count("spine") == 2
    assert len(dbs) == 6


def test_only_known_tables_and_valid(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    _, _, dbs, _ = rendered
    for name, db in dbs.items():
        assert check_config_db(db) == [], name
        meta = db["DEVICE_METADATA"]["localhost"]
        assert meta["hostname"] == name
        assert meta["docker_routing_config_mode"] == "split"
        assert meta["type"] in ("LeafRouter", "SpineRouter")


def test_ports_lanes_and_breakout(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    _, _, dbs, _ = rendered
    leaf = dbs["p1-g1-leaf1"]
    # CX732Q-N leaf: front port 1 (platform.json Ethernet0, lanes 217-224, alias QC1) is
    # 2x200G -> Ethernet0 lanes 217-220 (QC1_D1), Ethernet4 lanes 221-224 (QC1_D2).
    assert leaf["BREAKOUT_CFG"]["Ethernet0"] == {"brkout_mode": "2x200G[100G]"}
    assert leaf["PORT"]["Ethernet0"]["lanes"] == "217,218,219,220"
    assert leaf["PORT"]["Ethernet4"]["lanes"] == "221,222,223,224"
    assert leaf["PORT"]["Ethernet4"]["alias"] == "QC1_D2"
    assert leaf["PORT"]["Ethernet4"]["index"] == "0"
    assert leaf["PORT"]["Ethernet4"]["speed"] == "200000"
    # Front port 17 (Ethernet128, alias QC17) whole at 400G on its own eight lanes.
    assert leaf["PORT"]["Ethernet128"]["speed"] == "400000"
    assert leaf["PORT"]["Ethernet128"]["alias"] == "QC17"
    assert len(leaf["PORT"]["Ethernet128"]["lanes"].split(",")) == 8


def test_fabric_ports_link_local_only(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    _, fabric, dbs, _ = rendered
    for name, db in dbs.items():
        device = build_device(fabric, name)
        fabric_ports = [i.name for i in device.uplinks] + ([device.aux.name] if device.aux else [])
        assert fabric_ports
        for port in fabric_ports:
            assert db["INTERFACE"][port] == {"ipv6_use_link_local_only": "enable"}
        assert all("|" not in key for key in db["INTERFACE"]), "no addresses on fabric links"
        assert not set(db["INTERFACE"]) & {i.name for i in device.downlinks}


def test_pfc_on_lossless_queues_only(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    _, _, dbs, _ = rendered
    for db in dbs.values():
        qos = db["PORT_QOS_MAP"]
        assert set(qos) == set(db["PORT"]) - {"Ethernet256"}
        assert {entry["pfc_enable"] for entry in qos.values()} == {"3,4"}
        assert {key.split("|")[1] for key in db["BUFFER_PG"]} == {"3-4"}
        assert db["WRED_PROFILE"]["ROCE_LOSSLESS_ECN"]["ecn"] == "ecn_all"
        assert db["WRED_PROFILE"]["ROCE_LOSSLESS_ECN"]["green_min_threshold"] == "1048576"
        strict = {
            k.split("|")[1] for k, v in db["QUEUE"].items() if v["scheduler"] == "ROCE_STRICT"
        }
        assert strict == {"6", "7"}
        assert set(db["CABLE_LENGTH"]["AZURE"].values()) == {"5m"}
        assert db["DSCP_TO_TC_MAP"]["ROCE"]["26"] == "3"
        assert db["DSCP_TO_TC_MAP"]["ROCE"]["34"] == "4"


@pytest.mark.parametrize("mode", MODES)
def test_lossy_marks_ecn_on_3_and_4_and_pauses_nothing(mode: str) -> None:
    lossless = render(intent(mode))[1]
    _, dbs, _ = render(intent(mode, roce={"enabled": True, "mode": "lossy"}))
    for name, db in dbs.items():
        assert check_config_db(db) == []
        assert "pfc_enable" not in json.dumps(db)
        for table in ("BUFFER_PG", "BUFFER_PROFILE"):
            assert table not in db
        marking = {k for k, v in db["QUEUE"].items() if v.get("wred_profile")}
        assert marking == {k for k, v in lossless[name]["QUEUE"].items() if v.get("wred_profile")}
        assert {k.split("|")[1] for k in marking} == {"3", "4"}
        assert db["WRED_PROFILE"] == lossless[name]["WRED_PROFILE"]


@pytest.mark.parametrize("mode", MODES)
def test_no_pfc_when_roce_off(mode: str) -> None:
    _, dbs, _ = render(intent(mode, roce={"enabled": False}))
    for db in dbs.values():
        assert check_config_db(db) == []
        for table in ("PORT_QOS_MAP", "BUFFER_PG", "WRED_PROFILE", "QUEUE", "CABLE_LENGTH"):
            assert table not in db
        assert "pfc_enable" not in json.dumps(db)


def test_rail_gateway_and_members(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    mode, _, dbs, _ = rendered
    leaf = dbs["p1-g1-leaf1"]
    svis = leaf["VLAN_INTERFACE"]
    vlans = set(leaf["VLAN"])
    assert vlans and all(svis[v]["proxy_arp"] == "enabled" for v in vlans)
    assert all(svis[v]["static_anycast_gateway"] == "true" for v in vlans)
    assert any(key.startswith("Vlan1001|") for key in svis)
    members = {key.split("|")[1] for key in leaf["VLAN_MEMBER"]}
    if mode == "evpn-mh":
        assert all(m.startswith("PortChannel") for m in members)
        assert "VXLAN_TUNNEL" in leaf and "VXLAN_EVPN_NVO" in leaf
    else:
        assert all(m.startswith("Ethernet") for m in members)
        assert "PORTCHANNEL" not in leaf and "VXLAN_TUNNEL" not in leaf
    assert "SAG" not in dbs["p1-spine1"] and "VLAN" not in dbs["p1-spine1"]


def _segments(db: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """server -> (ESI type, LACP system MAC, channel description naming the ESI) on a leaf."""
    result = {}
    for key in db["PORTCHANNEL_MEMBER"]:
        channel, member = key.split("|")
        server = db["DEVICE_NEIGHBOR"][member]["name"]
        segment = db["EVPN_ETHERNET_SEGMENT"][channel]
        assert (segment["esi"], segment["type"]) == ("AUTO", "TYPE_3_MAC_BASED")
        result[server] = (
            segment["type"],
            db["PORTCHANNEL"][channel]["system_mac"],
            db["PORTCHANNEL"][channel]["description"],
        )
    return result


def test_pair_leaves_share_esi(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    mode, fabric, dbs, frr = rendered
    if mode != "evpn-mh":
        assert all("EVPN_ETHERNET_SEGMENT" not in db for db in dbs.values())
        return
    pairs = {(s.name, s.pair) for s in fabric.switches if s.role == "leaf" and s.plane == 1}
    assert len(pairs) == 2
    for left, right in pairs:
        assert right is not None
        a, b = _segments(dbs[left]), _segments(dbs[right])
        assert a == b and len(a) == 16
        prefs = {e["df_pref"] for e in dbs[left]["EVPN_ETHERNET_SEGMENT"].values()}
        assert prefs == {"50000"}
        assert "interface PortChannel1\n" in frr[left]
        # FRR derives the type-3 ESI from the same system MAC CONFIG_DB gives the channel.
        for _, mac, _ in a.values():
            assert f"evpn mh es-sys-mac {mac}" in frr[left] and mac in frr[right]


def test_frr_conf_split_sections(
    rendered: tuple[str, Any, dict[str, Any], dict[str, str]],
) -> None:
    _, _, _, frr = rendered
    text = frr["p1-g1-leaf1"]
    assert text.index("! >>> zebra.conf") < text.index("! >>> bgpd.conf")
    assert "neighbor Ethernet128 interface peer-group SPINES" in text
    assert "ip import-table 100" in text


def test_pbr_refused_on_sonic_with_reason() -> None:
    with pytest.raises(UnsupportedFeature, match="no leaf for a redirect target"):
        render(intent("dual-arp", load_balancing={"mode": "pbr"}))


@pytest.mark.parametrize("mode", ["ars", "spray"])
def test_unsupported_lb_on_sonic(mode: str) -> None:
    with pytest.raises(UnsupportedFeature, match="platform sonic"):
        render(intent("dual-arp", load_balancing={"mode": mode}))


def test_checker_catches_mistakes() -> None:
    _, dbs, _ = render(intent("dual-arp"))
    db = json.loads(json.dumps(dbs["p1-g1-leaf1"]))
    db["PORTS"] = {}
    db["PORT"]["Ethernet0"]["speed"] = "200G"
    del db["PORT"]["Ethernet4"]["lanes"]
    db["VLAN_MEMBER"]["Vlan9|Ethernet0"] = {"tagging_mode": "untagged"}
    db["PORT_QOS_MAP"]["Ethernet0"] = {**db["PORT_QOS_MAP"]["Ethernet0"], "tc_to_pg_map": "NOPE"}
    errors = "\n".join(check_config_db(db))
    assert "unknown table PORTS" in errors
    assert "PORT|Ethernet0: speed" in errors
    assert "PORT|Ethernet4: missing lanes" in errors
    assert "Vlan9 not in VLAN" in errors
    assert "NOPE" in errors
