"""Drain parity: every maintenance state means the same on frr, sonic and asternos.

Host ports are admin-down while a leaf is isolated and held down while it returns (verify's
PORTS_DOWN: LLDP on them is not expected then), up otherwise; fabric ports stay up in every
state; the BGP policy (graceful-shutdown, isolation route-maps) reads back, through the
drivers' parser of running FRR-style config, as the state verify expects (POLICY_OF).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from controller.drivers.common import maintenance_state
from controller.facts import Maintenance
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.engine import render_fabric
from controller.verify import POLICY_OF, PORTS_DOWN, maintenance_found

SMALL = Path(__file__).resolve().parent.parent / "golden" / "intents" / "cx732q-small.yaml"
LEAF = "p1-g1-leaf1"
STATES: tuple[str, ...] = get_args(Maintenance)
PLATFORMS = ("frr", "sonic", "asternos")
MODES = ("dual-arp", "evpn-mh")


@cache
def rendered(platform: str, mode: str, state: str) -> dict[str, str]:
    data: dict[str, Any] = yaml.safe_load(SMALL.read_text())
    data.update(platform=platform, dual_leaf_mode=mode)
    fabric = build_fabric(intent_from_data(data))
    return render_fabric(fabric, device=LEAF, maintenance={LEAF: state})[LEAF]  # type: ignore[dict-item]


def port_states(platform: str, files: dict[str, str]) -> dict[str, str]:
    """Admin state per physical port, read from the platform's own rendered file."""
    if platform == "frr":
        found = re.findall(r"^link set dev (\S+) mtu \d+ (up|down)$", files["ip.batch"], re.M)
        return dict(found)
    if platform == "sonic":
        ports = json.loads(files["config_db.json"])["PORT"]
        return {name: entry["admin_status"] for name, entry in ports.items()}
    blocks = re.findall(
        r"^interface (ethernet \S+)\n(.*?)^exit$", files["asternos.cli"], re.M | re.S
    )
    states: dict[str, str] = {}
    for name, body in blocks:
        lines = body.splitlines()
        if " shutdown" in lines:
            states[name] = "down"
        elif " no shutdown" in lines:
            states[name] = "up"
    return states


def host_ports(platform: str, files: dict[str, str]) -> set[str]:
    """The leaf's server-facing ports, by the platform's names (from the descriptions)."""
    if platform == "sonic":
        ports = json.loads(files["config_db.json"])["PORT"]
        return {n for n, e in ports.items() if e["description"].startswith("srv")}
    text = files["frr.conf"] if platform == "frr" else files["asternos.cli"]
    if platform == "frr":
        names = re.findall(r"^interface (\S+)\n description srv", text, re.M)
    else:
        names = re.findall(r"^interface (ethernet \S+)\n description srv", text, re.M)
    return set(names)


def routing_text(platform: str, files: dict[str, str]) -> str:
    """What the driver's get_maintenance parses: FRR-style running config."""
    return files["asternos.cli"] if platform == "asternos" else files["frr.conf"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_host_ports_follow_the_drain_state(platform: str, state: str, mode: str) -> None:
    files = rendered(platform, mode, state)
    ports = port_states(platform, files)
    hosts = host_ports(platform, files)
    assert len(hosts) == 32, hosts  # 16 servers behind the leaf, one port per rail (2 rails)
    want = "down" if state in PORTS_DOWN else "up"
    assert {ports[p] for p in hosts} == {want}
    fabric = set(ports) - hosts
    assert fabric and {ports[p] for p in fabric} == {"up"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_policy_reads_back_as_verify_expects(platform: str, state: str, mode: str) -> None:
    m = maintenance_state(routing_text(platform, rendered(platform, mode, state)))
    assert maintenance_found(m) == POLICY_OF[state]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("state", STATES)
def test_same_meaning_on_all_platforms(state: str, mode: str) -> None:
    """Per state, the three platforms agree on how many host ports are down."""
    down = {}
    for platform in PLATFORMS:
        files = rendered(platform, mode, state)
        ports = port_states(platform, files)
        down[platform] = sum(1 for p in host_ports(platform, files) if ports[p] == "down")
    assert len(set(down.values())) == 1, down
