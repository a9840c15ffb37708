"""AsterNOS rendering: klish sessions that pass the syntax checker, in both dual-leaf modes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.platforms.asternos.provenance import default_table
from controller.platforms.asternos.syntax import check_cli, check_session
from controller.render.engine import render_fabric
from controller.render.features import UnsupportedFeature

MODES = ["dual-arp", "evpn-mh"]


def intent(mode: str, model: str = "CX732Q-N", **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": f"t-{mode}",
        "platform": "asternos",
        "switches": {"leaf": model, "spine": model},
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


def render(data: dict[str, Any]) -> dict[str, str]:
    out = render_fabric(build_fabric(intent_from_data(data)))
    return {name: files["asternos.cli"] for name, files in out.items()}


@pytest.mark.parametrize("lb", ["ecmp", "wcmp", "pbr"])
@pytest.mark.parametrize("mode", MODES)
def test_sessions_pass_checker(mode: str, lb: str) -> None:
    cli = render(intent(mode, load_balancing={"mode": lb}))
    assert len(cli) == 6
    for name, text in cli.items():
        assert check_cli(text) == [], name
        lines = text.splitlines()
        assert lines[0] == "configure terminal"
        assert lines[-3:] == ["end", "write", "y"]
        assert f"hostname {name}" in lines


@pytest.mark.parametrize("lb", ["ars", "spray"])
def test_cx864e_advanced_lb(lb: str) -> None:
    cli = render(
        intent("evpn-mh", "CX864E-N", load_balancing={"mode": lb, "spray_algorithm": "round-robin"})
    )
    for text in cli.values():
        assert check_cli(text) == []
    leaf = cli["p1-g1-leaf1"]
    if lb == "ars":
        assert "load-balance ars flowlet" in leaf and " ars enable" in leaf
    else:
        assert "\nhash algorithm ecmp round_robin\n" in leaf
        assert "packet-spray" not in leaf


def test_leaf_content_dual_arp() -> None:
    leaf = render(intent("dual-arp"))["p1-g1-leaf1"]
    assert "interface ethernet 0/0\n breakout 2x200G[100G]\nexit" in leaf
    assert "interface ethernet 0/128\n description p1-spine1:" in leaf
    assert " ipv6 use-link-local-only" in leaf
    assert " switchport access vlan 1001" in leaf
    assert "interface vlan 1001\n" in leaf and " arp proxy mode anycast_gw" in leaf
    assert " arp to-host table 100" in leaf
    assert "qos roce lossless profile roce_lossless_5m_medium" in leaf
    assert " neighbor ethernet 0/128 interface peer-group SPINES" in leaf
    # one naming in the whole session (descriptions quote the peer's own port names)
    commands = [ln for ln in leaf.splitlines() if not ln.startswith(" description ")]
    assert not [ln for ln in commands if "Ethernet" in ln]
    assert "link-aggregation" not in leaf and "evpn mh" not in leaf


def _segments(text: str) -> dict[str, tuple[str, str]]:
    """server -> (es-id, es-sys-mac) from the link-aggregation blocks."""
    blocks = re.findall(
        r"interface link-aggregation \d+\n description ES (\S+) rail \d+\n(.*?)\nexit", text, re.S
    )
    result = {}
    for server, body in blocks:
        es_id = re.search(r"evpn mh es-id (\d+)", body)
        mac = re.search(r"evpn mh es-sys-mac (\S+)", body)
        assert es_id and mac
        result[server] = (es_id[1], mac[1])
    return result


def test_pair_leaves_share_es_evpn_mh() -> None:
    cli = render(intent("evpn-mh"))
    for left, right in (("p1-g1-leaf1", "p2-g1-leaf1"), ("p1-g1-leaf2", "p2-g1-leaf2")):
        a, b = _segments(cli[left]), _segments(cli[right])
        assert a == b and len(a) == 16
        assert " evpn mh es-df-pref 50000" in cli[left]
        assert " evpn mh es-df-pref 30000" in cli[right]
    leaf = cli["p1-g1-leaf1"]
    assert " link-aggregation-group 1\n" in leaf and " mode active" not in leaf
    lag = "interface link-aggregation 1\n description ES srv0001 rail 1\n mtu 9216\n"
    assert lag + " lacp mode dynamic\n" in leaf
    assert leaf.index("interface link-aggregation 1\n") < leaf.index(" link-aggregation-group 1\n")
    assert "interface vxlan 0\n source " in leaf and " vni 10000" in leaf
    assert " arp proxy mode evpn" in leaf
    assert "address-family l2vpn evpn" in leaf


def test_roce_off_renders_no_easy_roce() -> None:
    for text in render(intent("dual-arp", roce={"enabled": False})).values():
        assert check_cli(text) == []
        assert "qos roce" not in text


@pytest.mark.parametrize("lb", ["spray", "ars"])
def test_unsupported_lb_on_cx732q(lb: str) -> None:
    with pytest.raises(UnsupportedFeature, match="CX732Q-N"):
        render(intent("dual-arp", load_balancing={"mode": lb}))


def test_checker_rejects_broken_lines() -> None:
    good = render(intent("dual-arp"))["p1-g1-leaf1"]
    lines = good.splitlines()
    at = lines.index("interface ethernet 0/128")
    broken = [*lines[: at + 1], " swichport acess vlan 1001", *lines[at + 1 :]]
    errors = check_cli("\n".join(broken))
    assert len(errors) == 1
    assert errors[0].startswith(f"line {at + 2}: no if-ethernet form in the table")
    # a command valid in one mode is refused in another
    assert check_cli("configure terminal\n mtu 9216\nend\n")[0].startswith("line 2: no config form")
    # values out of range and unbalanced modes
    assert "5000 outside 1-4094" in check_cli("configure terminal\nvlan 5000\nexit\nend\n")[0]
    assert "missing exit/end" in check_cli("configure terminal\ninterface vlan 10\n")[-1]
    assert check_cli("write\ny\n") == ["no 'configure terminal' in the session"]
    # write's confirmation must be answered
    assert "confirm mode" in check_cli("configure terminal\nend\nwrite\n")[-1]


def test_line_with_form_not_in_table_fails() -> None:
    """A form the templates could emit but the table does not hold is an error."""
    good = render(intent("dual-arp"))["p1-g1-leaf1"]
    assert check_cli(good) == []
    bad = good.replace(" mtu 9216\n", " mtu 9216\n speed 400000\n", 1)
    assert check_cli(bad) == [
        f"line {bad.splitlines().index(' speed 400000') + 1}: "
        "no if-ethernet form in the table: 'speed 400000'"
    ]


@pytest.mark.parametrize("item", default_table().contradicted, ids=lambda c: c.example)
def test_contradicted_forms_are_refused(item: Any) -> None:
    """Every form a document contradicts is refused, in the mode it was rendered in."""
    enter = {"config": "", "if-ethernet": "interface ethernet 0/0\n"}[item.mode]
    session = f"configure terminal\n{enter} {item.example}\nend\nwrite\ny\n"
    errors = check_cli(session)
    assert any(f"no {item.mode} form in the table" in e for e in errors), errors


def test_unverified_lines_are_counted() -> None:
    leaf = render(intent("evpn-mh", "CX864E-N", load_balancing={"mode": "spray"}))["p1-g1-leaf1"]
    report = check_session(leaf)
    assert report.errors == []
    assert report.lines == report.documented + report.unverified
    assert report.documented > 0 and report.unverified > 0
    assert "hash algorithm ecmp {random|round_robin}" not in report.unverified_forms
    assert report.unverified_forms["lacp mode dynamic"] == leaf.count("interface link-aggregation")
