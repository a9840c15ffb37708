"""``installed_servers_per_group``: a fabric sized for the whole cluster with only the first
servers of each group cabled (a cluster racked in phases, the seed-scale lab's sample)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import DpctlError
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import FabricIntent, load_intent
from controller.lab.fabric import lab_topology
from controller.lab.topology import mgmt_addresses
from tests.conftest import INVENTORY

SEED = INVENTORY / "examples" / "seed-2048-cx864e-dual-arp.yaml"


def _with(intent: FabricIntent, installed: int | None) -> Fabric:
    return build_fabric(intent.model_copy(update={"installed_servers_per_group": installed}))


@pytest.fixture(scope="module")
def whole() -> Fabric:
    return build_fabric(load_intent(SEED))


@settings(max_examples=12, deadline=None)
@given(installed=st.integers(min_value=1, max_value=128))
def test_a_sample_is_the_whole_fabric_less_the_servers_not_racked(
    whole: Fabric, installed: int
) -> None:
    sample = _with(whole.intent, installed)
    assert sample.switches == whole.switches
    assert sample.sizing == whole.sizing
    assert sample.rail_subnets == whole.rail_subnets
    kept = tuple(s for s in whole.servers if s.index <= installed)
    assert sample.servers == kept  # same names, numbers, NICs and addresses
    names = {s.name for s in kept}
    expected = tuple(
        lk for lk in whole.links if lk.kind != "host" or {lk.a_device, lk.z_device} & names
    )
    assert sample.links == expected


def test_the_seed_lab_sample_puts_a_server_on_every_rail_of_every_leaf() -> None:
    fabric = build_fabric(load_intent(INVENTORY / "lab-seed-dual-arp.yaml"))
    assert [s.name for s in fabric.servers] == ["srv0001", "srv0002", "srv0129", "srv0130"]
    assert (len(fabric.switches), fabric.sizing.links_per_leaf_spine_pair) == (48, 8)
    host_leaves = {lk.z_device for lk in fabric.links if lk.kind == "host"}
    assert host_leaves == {s.name for s in fabric.switches if s.role == "leaf"}
    for leaf in host_leaves:
        ports = [lk for lk in fabric.links_by_device[leaf] if lk.kind == "host"]
        assert len(ports) == 2  # both servers of its group, on its rail
    assert sum(lk.kind == "aux" for lk in fabric.links) == 16


def test_the_lab_keeps_each_sampled_servers_management_address() -> None:
    fabric = build_fabric(load_intent(INVENTORY / "lab-seed-evpn-mh.yaml"))
    _bridge, addresses, _plen = mgmt_addresses(lab_topology(fabric))
    assert (
        addresses["srv0129"] == fabric.server_by_name["srv0129"].mgmt_ip == "172.16.0.178"
    )  # not .52: no gap closed
    assert addresses["p2-spine8"] == fabric.switch_by_name["p2-spine8"].mgmt_ip


def test_more_than_a_group_holds_is_refused(whole: Fabric) -> None:
    with pytest.raises(DpctlError) as info:
        _with(whole.intent, 129)
    assert info.value.where == "installed_servers_per_group"
    assert info.value.reason == ("129 servers per group, but a group of this fabric holds 128")


def test_a_lab_switch_runs_bfdd_only_where_the_intent_has_bfd() -> None:
    from controller.lab.fabric import frr_daemons

    seed = build_fabric(load_intent(INVENTORY / "lab-seed-dual-arp.yaml"))
    small = build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml"))
    assert (seed.intent.bfd, frr_daemons(seed)) == (False, ("bgpd",))
    assert (small.intent.bfd, frr_daemons(small)) == (True, ("bgpd", "bfdd"))
