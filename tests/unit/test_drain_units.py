"""Drain's pure parts without a lab: the pre-checks' refusals and the impact report."""

from __future__ import annotations

from typing import Any

import pytest

from controller.drain import (
    DrainReport,
    drain_steps,
    host_side,
    impact,
    pre_checks,
    servers_behind,
)
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.handoff import hand_off_applies
from controller.hosts import leaf_facing_ports
from controller.intent import intent_from_data, load_intent
from controller.opstate import LeafState
from tests.conftest import INVENTORY

LEAF, PARTNER = "p1-g1-leaf1", "p2-g1-leaf1"


def _fabric(**changes: Any) -> Fabric:
    intent = load_intent(INVENTORY / "lab-dual-arp.yaml")
    return build_fabric(intent_from_data({**intent.model_dump(mode="json"), **changes}))


def _healthy_partner(fabric: Fabric) -> dict[str, Any]:
    ports = [
        lk.z_port
        for lk in fabric.links_by_device[PARTNER]
        if lk.kind == "host"  # the partner's own ports to the servers
    ]
    return {
        "peers": {"swp3": {"is_up": True}, "swp4": {"is_up": True}},
        "interfaces": {port: {"is_up": True} for port in ports},
    }


def test_healthy_partner_allows_the_drain() -> None:
    fabric = _fabric()
    assert pre_checks(fabric, LEAF, _healthy_partner(fabric), {}) == []


def test_drained_partner_is_refused_naming_the_servers() -> None:
    fabric = _fabric()
    reasons = pre_checks(fabric, LEAF, _healthy_partner(fabric), {PARTNER: "isolated"})
    assert reasons == [
        f"partner {PARTNER} is already drained (isolated): "
        "servers srv0001, srv0002 would lose both planes"
    ]


def test_unreachable_partner_is_refused() -> None:
    reasons = pre_checks(_fabric(), LEAF, "ConnectionError: timed out", {})
    assert reasons == [f"partner {PARTNER} cannot be checked: ConnectionError: timed out"]


def test_partner_with_a_session_down_is_refused() -> None:
    fabric = _fabric()
    state = _healthy_partner(fabric)
    state["peers"]["swp4"]["is_up"] = False
    assert pre_checks(fabric, LEAF, state, {}) == [
        f"partner {PARTNER} is unhealthy: BGP sessions down on swp4"
    ]


def test_single_homed_server_is_refused_naming_its_port() -> None:
    fabric = _fabric()
    state = _healthy_partner(fabric)
    port = next(
        lk.z_port
        for lk in fabric.links_by_device[PARTNER]
        if lk.kind == "host" and lk.a_device == "srv0002"
    )
    state["interfaces"][port]["is_up"] = False
    assert pre_checks(fabric, LEAF, state, {}) == [
        f"server srv0002 is single-homed: its port to {PARTNER} ({port}) is down; "
        "draining cuts it off"
    ]


@pytest.mark.parametrize("protection", [False, True])
def test_impact_says_what_is_at_risk(protection: bool) -> None:
    lines = impact(_fabric(cross_plane_protection=protection), LEAF)
    assert lines[0] == "2 servers become single-plane (plane 2 only) on rails 1: srv0001, srv0002"
    if protection:
        assert "carried by the senders' leaves over the AUX link" in lines[-1]
        assert "10G against 400G" in lines[-1]
    else:
        assert lines[-1].startswith("AT RISK: flows other hosts hash into plane 1")


def test_impact_names_the_host_side_and_what_the_switch_side_alone_costs() -> None:
    fabric = _fabric()
    report = DrainReport(LEAF, "drain", PARTNER, servers_behind(fabric, LEAF), [], [])
    assert host_side(report, True) == (
        f"after graceful-shutdown, servers srv0001, srv0002 release their ports to {LEAF} "
        "from their bonds (Ansible): they move their own flows before the switch takes the "
        "ports away"
    )
    switch_side = host_side(report, False)
    assert switch_side.startswith("switch side only: what the servers' bonds have already put")
    assert switch_side.endswith("--hosts-first moves the servers off first")


def test_the_host_step_and_the_pre_checks_see_the_same_servers() -> None:
    fabric = _fabric()
    assert sorted(leaf_facing_ports(fabric, LEAF)) == servers_behind(fabric, LEAF)


@pytest.mark.parametrize(
    ("protection", "name", "applies"),
    [(True, LEAF, True), (False, LEAF, False), (True, "p1-spine1", False)],
)
def test_a_drain_hands_off_only_a_leaf_whose_pair_can_take_its_servers(
    protection: bool, name: str, applies: bool
) -> None:
    """Without cross-plane protection the pair has no route for the leaf's servers to give,
    and a spine has no servers: no handed-off step (its deploy would change nothing useful)."""
    fabric = _fabric(cross_plane_protection=protection)
    assert hand_off_applies(fabric, name) is applies
    steps = drain_steps(LeafState(), hand_off=hand_off_applies(fabric, name))
    assert ("handed-off" in steps) is applies
    assert steps[0] == "graceful-shutdown" and steps[-1] == "isolated"


@pytest.mark.parametrize("protection", [False, True])
def test_impact_says_the_leaf_hands_its_servers_to_its_pair(protection: bool) -> None:
    lines = impact(_fabric(cross_plane_protection=protection), LEAF)
    handed = [line for line in lines if line.startswith("from the hand-off on")]
    assert handed == (
        [
            f"from the hand-off on, {LEAF} sends what it receives for them, their traffic to "
            f"each other included, to {PARTNER} over the AUX link instead of delivering it"
        ]
        if protection
        else []
    )
