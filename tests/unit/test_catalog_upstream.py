"""The switch catalog against the vendor's community-SONiC platform files (vendored, pinned).

Compared: front-panel parent port names, lane counts and front-panel index, port speed,
breakout modes and the sub-port names each mode gives, the AUX port, and the lanes the SONiC
renderer writes. Differences kept on purpose are spelled out in the expected values.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.catalog import get_model, parse_breakout
from controller.catalog.upstream import read_platform, upstream_ports
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.engine import render_fabric

MODELS = ["CX864E-N", "CX732Q-N"]
# Upstream modes the catalog does not offer: 4x25G is not a speed any role of ours uses.
UNUSED_UPSTREAM_MODES = {"CX864E-N": set(), "CX732Q-N": {"4x25G[10G](4)"}}
# Each platform.json has two 10G AUX ports (aliases X1, X2); the catalog uses X1 only, as the
# one cross-plane protection link per leaf.
AUX = {
    "CX864E-N": ("Ethernet512", "X1", ["Ethernet513"]),
    "CX732Q-N": ("Ethernet256", "X1", ["Ethernet257"]),
}


def _front_and_aux(model: str) -> tuple[dict[str, Any], dict[str, Any]]:
    ports = upstream_ports(model)
    assert ports is not None
    front = {n: p for n, p in ports.items() if "1x10G" not in p.breakout_modes}
    aux = {n: p for n, p in ports.items() if "1x10G" in p.breakout_modes}
    return front, aux


@pytest.mark.parametrize("model", MODELS)
def test_front_ports_names_lanes_speed(model: str) -> None:
    catalog = get_model(model)
    front, _ = _front_and_aux(model)
    assert len(front) == catalog.ports
    for port in range(1, catalog.ports + 1):
        parent = front[f"Ethernet{(port - 1) * catalog.lanes_per_port}"]
        assert len(parent.lanes) == catalog.lanes_per_port, parent.name
        assert parent.index == port - 1, parent.name
        assert parent.default_mode.startswith(f"1x{catalog.port_speed}[")
        assert parent.default_mode in catalog.breakout_modes


@pytest.mark.parametrize("model", MODELS)
def test_breakout_modes_match(model: str) -> None:
    catalog = get_model(model)
    front, _ = _front_and_aux(model)
    for parent in front.values():
        upstream = set(parent.breakout_modes)
        assert set(catalog.breakout_modes) <= upstream, parent.name
        assert upstream - set(catalog.breakout_modes) == UNUSED_UPSTREAM_MODES[model]
        for mode in catalog.breakout_modes:
            assert len(parent.breakout_modes[mode]) == parse_breakout(mode)[0], (parent, mode)


@pytest.mark.parametrize("model", MODELS)
def test_logical_port_names_follow_sonic_breakout_naming(model: str) -> None:
    """A sub-port of mode NxS is Ethernet<parent + k * lanes/N>, as SONiC's DPB names it."""
    catalog = get_model(model)
    front, _ = _front_and_aux(model)
    for role in catalog.roles:
        for use in ("downlink", "uplink", "fabric"):
            for lp in catalog.logical_ports(role, use):  # type: ignore[arg-type]
                parent = front[f"Ethernet{(lp.port - 1) * catalog.lanes_per_port}"]
                width = catalog.lanes_per_port // parse_breakout(lp.breakout)[0]
                first = int(parent.name.removeprefix("Ethernet")) + (lp.sub - 1) * width
                assert lp.name == f"Ethernet{first}"
                assert lp.sub <= len(parent.breakout_modes[lp.breakout])


def test_cx864e_spine_matches_the_128x400g_variant() -> None:
    """The spine's 64 x 2x400G equals the PR's 128x400G SKU: same names, same lanes."""
    variant = read_platform(
        "x86_64-asterfusion_cx864e_n-r0", "CX864E-N_128X400G_TL10E02", "CX864E-N"
    )
    ports = get_model("CX864E-N").logical_ports("spine", "fabric")
    assert [p.name for p in ports] == [
        n for n in variant if "1x10G" not in variant[n].breakout_modes
    ]
    front, _ = _front_and_aux("CX864E-N")
    for p in ports:
        parent = front[f"Ethernet{(p.port - 1) * 8}"]
        assert variant[p.name].lanes == parent.lanes[(p.sub - 1) * 4 : p.sub * 4]


@pytest.mark.parametrize("model", MODELS)
def test_aux_port(model: str) -> None:
    catalog = get_model(model)
    _, aux = _front_and_aux(model)
    name, alias, unused = AUX[model]
    assert catalog.aux.name == name and catalog.aux.speed == "10G"
    assert aux[name].breakout_modes == {"1x10G": (alias,)}
    assert sorted(aux) == sorted([name, *unused])


@pytest.mark.parametrize("model", MODELS)
def test_rendered_port_table_uses_upstream_lanes(model: str) -> None:
    data = {
        "name": "t",
        "platform": "sonic",
        "switches": {"leaf": model, "spine": model},
        "servers": 16,
        "gpus_per_server": 4,
        "dual_leaf_mode": "dual-arp",
        "cross_plane_protection": True,
        "addressing": {
            "loopbacks": "10.0.0.0/24",
            "rail_subnets": "10.128.0.0/16",
            "management": "172.16.0.0/24",
        },
    }
    fabric = build_fabric(intent_from_data(data))
    ports = upstream_ports(model)
    assert ports is not None
    parent_of = {
        alias: p
        for p in ports.values()
        for aliases in p.breakout_modes.values()
        for alias in aliases
    }
    for name in ("p1-g1-leaf1", "p1-spine1"):
        out = render_fabric(fabric, device=name, validate=False)[name]
        table = json.loads(out["config_db.json"])["PORT"]
        lanes = [lane for e in table.values() for lane in e["lanes"].split(",")]
        assert len(lanes) == len(set(lanes)), "a lane used twice"
        by_parent: dict[str, list[str]] = {}
        for port_name in sorted(table, key=lambda n: int(n.removeprefix("Ethernet"))):
            entry = table[port_name]
            parent = parent_of[entry["alias"]]
            by_parent.setdefault(parent.name, []).extend(entry["lanes"].split(","))
            assert entry["index"] == str(parent.index), port_name
        for parent_name, used in by_parent.items():
            assert used == [str(lane) for lane in ports[parent_name].lanes], parent_name
