"""Targeted assertions on the per-device data and rendered configs (all platforms' common core)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
import yaml

from controller.errors import DpctlError
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.device import build_device
from controller.render.engine import render_fabric
from controller.render.features import UnsupportedFeature
from tests.conftest import INVENTORY, run_cli, run_json


def lab(mode: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((INVENTORY / f"lab-{mode}.yaml").read_text())
    return {**data, **changes}


def seed(mode: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (INVENTORY / "examples" / f"seed-2048-cx864e-{mode}.yaml").read_text()
    )
    return {**data, **changes}


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_one_bgp_neighbor_per_uplink_and_none_elsewhere(mode: str) -> None:
    fabric = build_fabric(intent_from_data(seed(mode, platform="frr")))
    for name in ("p1-g1-leaf1", "p2-g2-leaf8", "p1-spine3"):
        device = build_device(fabric, name)
        uplinks = {i.name for i in device.uplinks}
        fabric_neighbors = {n.interface for n in device.bgp.neighbors if n.peer_group != "PAIR"}
        assert fabric_neighbors == uplinks
        assert len(device.bgp.neighbors) == len(uplinks) + (1 if device.aux else 0)
        assert not {i.name for i in device.downlinks} & {n.interface for n in device.bgp.neighbors}
        for n in device.bgp.neighbors:  # every session stays inside the plane, or is the pair's
            peer = fabric.switch_by_name[n.peer_device]
            assert peer.plane == device.plane or (
                n.peer_group == "PAIR" and peer.name == device.pair
            )


@pytest.mark.parametrize("protection", [True, False])
@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_no_host_route_crosses_planes(mode: str, protection: bool) -> None:
    """Only the PAIR session joins the planes: loopbacks only without protection, host routes
    as a prepended backup with it."""
    fabric = build_fabric(intent_from_data(lab(mode, cross_plane_protection=protection)))
    for switch in fabric.switches_in(role="leaf"):
        device = build_device(fabric, switch.name)
        maps = {rm.name: rm for rm in device.bgp.route_maps}
        spines_out = maps["RM-SPINES-OUT"].entries
        # Towards the spines: the loopback, and host /32s this leaf originated (as-path ^$).
        assert [(e.match_prefix_list, e.match_as_path) for e in spines_out] == [
            ("PL-LOOPBACK", None),
            ("PL-HOSTS", "AS-LOCAL"),
        ]
        if "RM-PAIR-OUT" not in maps:  # dual-ARP without protection has no pair session
            assert mode == "dual-arp" and not protection
            continue
        pair_out = maps["RM-PAIR-OUT"].entries
        if protection:
            assert pair_out[1].set_prepend == (switch.asn,) * 3  # backup only, never preferred
        else:
            assert [e.match_prefix_list for e in pair_out] == ["PL-LOOPBACK"]


@pytest.mark.parametrize("protection", [True, False])
def test_evpn_mh_agent_withdraws_unserved_servers_only_with_protection(protection: bool) -> None:
    """Without protection a withdrawn /32 would leave the plane no path to the server (the
    failure matrix of 2026-12-04: the whole outage lost); the pair's VXLAN carries it instead."""
    fabric = build_fabric(intent_from_data(lab("evpn-mh", cross_plane_protection=protection)))
    config = json.loads(
        render_fabric(fabric, device="p1-g1-leaf1")["p1-g1-leaf1"]["arp-to-host.json"]
    )
    assert config["segments"] and config["withdraw_unserved"] is protection


def test_pair_leaves_share_esi_and_sys_mac() -> None:
    fabric = build_fabric(intent_from_data(seed("evpn-mh", platform="frr")))
    by_server_rail: dict[tuple[str, int], list[tuple[str, str, str]]] = defaultdict(list)
    for leaf in fabric.switches_in(role="leaf"):
        for es in build_device(fabric, leaf.name).segments:
            by_server_rail[(es.server, es.rail)].append((leaf.name, es.esi, es.es_sys_mac))
    assert len(by_server_rail) == 256 * 8
    for entries in by_server_rail.values():
        assert len(entries) == 2
        (leaf_a, esi_a, mac_a), (leaf_b, esi_b, mac_b) = entries
        assert fabric.switch_by_name[leaf_a].pair == leaf_b
        assert (esi_a, mac_a) == (esi_b, mac_b)
    assert len({e[0][1] for e in by_server_rail.values()}) == 256 * 8  # ESIs unique per NIC


def test_pair_leaves_share_rts_and_import_each_others_auto_rt() -> None:
    """Both leaves of a pair export and import one RT per rail VNI, and each also imports the
    RT FRR derives from its pair's ASN (low 16 bits:VNI): a restarted bgpd on FRR 8.4 can
    originate a segment's EAD routes with that one (lab, 2026-12-03), which the pair must
    still import or both leaves stay designated forwarder."""
    data = seed("evpn-mh", platform="frr", load_balancing={"mode": "ecmp"})
    data["asn"] = {**data["asn"], "leaf_start": 4200000000}  # 4-byte ASNs: FRR uses 16 bits
    fabric = build_fabric(intent_from_data(data))
    spine_asn = fabric.intent.asn.spine
    for leaf in fabric.switches_in(role="leaf"):
        assert leaf.pair is not None
        pair = fabric.switch_by_name[leaf.pair]
        mine = build_device(fabric, leaf.name).bgp.evpn_vnis
        theirs = build_device(fabric, pair.name).bgp.evpn_vnis
        assert [(vni, rt) for vni, rt, _ in mine] == [(vni, rt) for vni, rt, _ in theirs]
        for vni, rt, pair_rt in mine:
            assert rt == f"{spine_asn}:{vni}"
            assert pair_rt == f"{pair.asn % 65536}:{vni}"
    config = render_fabric(fabric, device="p1-g1-leaf1")["p1-g1-leaf1"]["frr.conf"]
    pair_low = fabric.switch_by_name["p2-g1-leaf1"].asn % 65536
    assert f"   route-target import {pair_low}:" in config


def test_ecn_exactly_on_3_and_4_when_roce_on_lossless_or_lossy() -> None:
    on = render_fabric(build_fabric(intent_from_data(lab("dual-arp"))), device="p1-g1-leaf1")
    qos = on["p1-g1-leaf1"]["qos.tc"]
    assert "ECN TCs 3,4, PFC TCs 3,4 (not applicable on Linux)" in qos
    assert qos.count("ecn\n") == 2 * 4  # RED+ECN on the two RoCE bands of 4 ports
    lossy = render_fabric(
        build_fabric(intent_from_data(lab("dual-arp", roce={"enabled": True, "mode": "lossy"}))),
        device="p1-g1-leaf1",
    )["p1-g1-leaf1"]["qos.tc"]
    assert "ECN TCs 3,4, PFC TCs none (not applicable on Linux)" in lossy
    assert _without_comments(lossy) == _without_comments(qos)  # Linux has no PFC to drop
    off = render_fabric(
        build_fabric(intent_from_data(lab("dual-arp", roce={"enabled": False}))),
        device="p1-g1-leaf1",
    )
    assert "qdisc" not in off["p1-g1-leaf1"]["qos.tc"]


def test_dual_arp_leaf_pair_shares_anycast_gateway() -> None:
    fabric = build_fabric(intent_from_data(lab("dual-arp")))
    a, b = (build_device(fabric, n) for n in ("p1-g1-leaf2", "p2-g1-leaf2"))
    assert [(r.gateway_prefix, r.gateway_mac) for r in a.rails] == [
        (r.gateway_prefix, r.gateway_mac) for r in b.rails
    ]
    assert not a.segments  # no ES in dual-ARP mode
    # the pair's AUX link (cross-plane protection, on by default in dual-ARP)
    assert a.aux is not None and (a.aux.peer_device, a.aux.peer_port) == ("p2-g1-leaf2", "aux1")
    unprotected = build_fabric(intent_from_data(lab("dual-arp", cross_plane_protection=False)))
    assert build_device(unprotected, "p1-g1-leaf2").aux is None  # no leaf-to-leaf link
    files = render_fabric(fabric, device="p1-g1-leaf2")["p1-g1-leaf2"]
    assert "net.ipv4.conf.vlan1002.proxy_arp = 1" in files["sysctl.conf"]
    assert "address replace 10.100.0.9/29 dev vlan1002" in files["ip.batch"]


def test_maintenance_switches_drain_policy() -> None:
    fabric = build_fabric(intent_from_data(lab("dual-arp")))
    drained = render_fabric(fabric, device="p1-g1-leaf1", maintenance={"p1-g1-leaf1": "isolated"})
    text = drained["p1-g1-leaf1"]["frr.conf"]
    assert " bgp graceful-shutdown\n" in text
    assert "route-map RM-SPINES-OUT permit 20" not in text  # host routes withdrawn, loopback kept
    normal = render_fabric(fabric, device="p1-g1-leaf1")["p1-g1-leaf1"]["frr.conf"]
    assert " bgp graceful-shutdown\n" not in normal
    assert "route-map RM-SPINES-OUT permit 20" in normal


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_graceful_restart_never_defers_route_selection(mode: str) -> None:
    """Every switch restarts gracefully (routes kept in zebra and at the peers) but never
    defers best-path selection: FRR's deferral waits for End-of-RIBs that peers deferring
    themselves withhold (Bgp.graceful_restart in render/bgp.py; lab test
    test_new_bgp_instance_selects_routes_while_a_peer_withholds_end_of_rib)."""
    fabric = build_fabric(intent_from_data(lab(mode)))
    for name, files in render_fabric(fabric).items():
        text = files["frr.conf"]
        assert (
            " bgp graceful-restart\n bgp graceful-restart preserve-fw-state\n"
            " bgp graceful-restart select-defer-time 0\n"
        ) in text, name


def test_receivers_deprefer_graceful_shutdown_routes() -> None:
    """RFC 8326 receiver side on every switch: a GSHUT-tagged route from the other tier gets
    LOCAL_PREF 0, so a draining leaf is avoided wherever another path exists."""
    fabric = build_fabric(intent_from_data(lab("dual-arp")))
    rendered = render_fabric(fabric)
    for name, route_map in (("p1-g1-leaf2", "RM-SPINES-IN"), ("p1-spine1", "RM-LEAVES-IN")):
        text = rendered[name]["frr.conf"]
        assert "bgp community-list standard CL-GSHUT seq 5 permit graceful-shutdown\n" in text
        assert (
            f"route-map {route_map} permit 5\n match ip address prefix-list PL-FABRIC\n"
            " match community CL-GSHUT\n set local-preference 0\nexit\n"
        ) in text
        assert f"route-map {route_map} permit 10\n match ip address prefix-list PL-FABRIC\n" in text


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"load_balancing": {"mode": "ars"}}, "'ars' is not supported on platform frr"),
        ({"load_balancing": {"mode": "spray"}}, "'spray' is not supported on platform frr"),
        ({"load_balancing": {"mode": "pbr"}}, "'pbr' is not supported on platform frr"),
    ],
)
def test_unsupported_load_balancing_fails_render(
    changes: dict[str, Any], reason: str, tmp_path: Any, write_intent: Any
) -> None:
    with pytest.raises(UnsupportedFeature, match=reason):
        render_fabric(build_fabric(intent_from_data(lab("dual-arp", **changes))))
    fabric_file = write_intent(lab("dual-arp", **changes))
    out = tmp_path / "out"
    result = run_cli("render", "--fabric", str(fabric_file), "--out", str(out))
    assert (
        result.exit_code == 2
        and "load_balancing.mode:" in result.stderr
        and reason in result.stderr
    )
    assert not out.exists()


def test_spray_refused_on_cx732q() -> None:
    intent = intent_from_data(
        seed(
            "dual-arp",
            switches={"leaf": "CX732Q-N", "spine": "CX732Q-N"},
            gpus=256,
            load_balancing={"mode": "spray"},
        )
    )
    with pytest.raises(DpctlError, match="model CX732Q-N"):
        render_fabric(build_fabric(intent))


def test_render_cli_plane_and_device(tmp_path: Any) -> None:
    code, body = run_json(
        "render", "-f", str(INVENTORY / "lab-evpn-mh.yaml"), "-o", str(tmp_path), "--plane", "2"
    )
    assert code == 0 and sorted(body["devices"]) == [
        "p2-g1-leaf1",
        "p2-g1-leaf2",
        "p2-spine1",
        "p2-spine2",
    ]
    assert body["devices"]["p2-spine1"] == sorted(
        ["frr.conf", "ip.batch", "bridge.batch", "sysctl.conf", "arp-to-host.json", "qos.tc"]
    )
    code, body = run_json(
        "render",
        "-f",
        str(INVENTORY / "lab-evpn-mh.yaml"),
        "-o",
        str(tmp_path / "x"),
        "--device",
        "nope",
    )
    assert code == 2 and body["error"]["where"] == "--device"


def test_render_is_deterministic(tmp_path: Any) -> None:
    for run in ("a", "b"):
        assert (
            run_cli(
                "render", "-f", str(INVENTORY / "lab-evpn-mh.yaml"), "-o", str(tmp_path / run)
            ).exit_code
            == 0
        )
    files_a = {
        p.relative_to(tmp_path / "a"): p.read_bytes()
        for p in (tmp_path / "a").rglob("*")
        if p.is_file()
    }
    files_b = {
        p.relative_to(tmp_path / "b"): p.read_bytes()
        for p in (tmp_path / "b").rglob("*")
        if p.is_file()
    }
    assert files_a == files_b and len(files_a) == 48


@pytest.mark.parametrize("platform", ["frr", "sonic", "asternos"])
def test_bgp_timers_from_the_intent_on_every_platform(platform: str) -> None:
    """``bgp_timers`` reaches every switch's router bgp on each platform, the default 3/9 s
    included (the three render through the shared frr/_bgp.j2)."""
    models = {"leaf": "CX864E-N", "spine": "CX864E-N"}
    for timers, line in ((None, " timers bgp 3 9\n"), ({"keepalive": 10, "hold": 30}, None)):
        data = lab("dual-arp", platform=platform, switches=models)
        if timers:
            data["bgp_timers"] = timers
            line = " timers bgp 10 30\n"
        assert line is not None
        rendered = render_fabric(build_fabric(intent_from_data(data)))
        for name, files in rendered.items():
            text = "".join(files.values())
            assert text.count(line) == 1, (platform, name, line)
            assert text.count("timers bgp ") == 1, (platform, name)


def _without_comments(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]
