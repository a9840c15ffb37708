"""The ARP-to-host agent's decisions: EVPN-MH segments (a server's /32 only while the leaf's ES
bond serves it) and the pacing of its passes.

The decision reads `ip -d -j link show` (iproute2's JSON of each bond member: its master, its
flags and the LACP partner's port state). The host kernel here has no bonding, so the
member's data is written out as iproute2 prints it; the fabric lab's EVPN-MH test
(`tests/lab/test_fabric_lab.py`) runs it against real bonds.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.agents import arp_to_host
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY

SEGMENTS = {"bond3": {"member": "swp5", "hosts": ["10.100.0.2"]}}
IN_SYNC = 0x3D  # activity, aggregation, sync, collecting, distributing (short timeout off)


def member(
    flags: tuple[str, ...] = ("BROADCAST", "UP", "LOWER_UP"),
    master: str = "bond3",
    partner: int | None = IN_SYNC,
) -> dict[str, Any]:
    slave: dict[str, Any] = {"state": "ACTIVE", "mii_status": "UP"}
    if partner is not None:
        slave["ad_partner_oper_port_state"] = partner
    return {
        "ifname": "swp5",
        "flags": list(flags),
        "master": master,
        "linkinfo": {"info_slave_kind": "bond", "info_slave_data": slave},
    }


def test_bond_serves_a_server_in_sync_collecting_and_distributing() -> None:
    assert arp_to_host.serving_bonds([member()], SEGMENTS) == {"bond3"}


@pytest.mark.parametrize(
    ("link", "why"),
    [
        (member(flags=("BROADCAST", "UP")), "no carrier (the cable or the server's port is down)"),
        (member(partner=0x01), "LACP partner defaulted: the server holds the port out (updelay)"),
        (member(partner=0x0D), "in sync but not yet collecting or distributing"),
        (member(partner=None), "no LACP partner state at all"),
        (member(master="bond9"), "the member is enslaved elsewhere"),
    ],
)
def test_bond_does_not_serve(link: dict[str, Any], why: str) -> None:
    assert arp_to_host.serving_bonds([link], SEGMENTS) == set(), why


def test_missing_member_does_not_serve() -> None:
    assert arp_to_host.serving_bonds([], SEGMENTS) == set()


def test_render_lists_each_segment_with_its_server_address() -> None:
    """Each EVPN-MH leaf's agent config names its ES bonds, their member and the address of
    the server NIC behind each; dual-ARP leaves have none."""
    fabric = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))
    files = render_fabric(fabric)
    for switch in fabric.switches:
        config = json.loads(files[switch.name]["arp-to-host.json"])
        if switch.role != "leaf":
            assert config["segments"] == {}
            continue
        addresses = {
            nic.ip
            for link in fabric.links_by_device[switch.name]
            if link.kind == "host"
            for server in [fabric.server_by_name[link.a_device]]
            for nic in server.nics
            if nic.rail in switch.rails
        }
        listed = {h for seg in config["segments"].values() for h in seg["hosts"]}
        assert listed == addresses and listed, switch.name
        assert all(seg["member"].startswith("swp") for seg in config["segments"].values())
    dual = render_fabric(build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml")))
    assert all(json.loads(f["arp-to-host.json"])["segments"] == {} for f in dual.values())


def test_pacer_link_event_reconciles_at_once_neighbour_events_once_a_second() -> None:
    pacer = arp_to_host.Pacer()
    assert pacer.due(100.0) == (True, True)  # first pass asks zebra
    pacer.done(100.0, asked_zebra=True, missing=False)
    assert pacer.due(100.1) == (False, False)
    pacer.note("[NEIGH]10.100.0.2 dev vlan1001 lladdr 02:00:00:00:00:01 REACHABLE\n")
    assert pacer.due(100.5) == (False, False)  # neighbour churn: held
    assert pacer.wait(100.5) == pytest.approx(0.5)
    assert pacer.due(101.0) == (True, False)
    pacer.done(101.0, asked_zebra=False, missing=False)
    pacer.note("[LINK]5: swp1: <NO-CARRIER,BROADCAST,UP> mtu 9216 state DOWN\n    link/ether")
    assert pacer.due(101.01) == (True, False)  # carrier: no wait


def test_pacer_asks_zebra_every_30_s_or_every_resync_while_a_server_is_missing() -> None:
    pacer = arp_to_host.Pacer()
    pacer.done(0.0, asked_zebra=True, missing=False)
    assert pacer.due(5.0) == (True, False)  # the resync, without zebra
    pacer.done(5.0, asked_zebra=False, missing=False)
    assert pacer.due(30.0) == (True, True)
    pacer.done(30.0, asked_zebra=True, missing=True)
    assert pacer.wait(30.0) == pytest.approx(arp_to_host.RESYNC_S)
    assert pacer.due(35.0) == (True, True)  # a server lacks its neighbour: zebra each resync
