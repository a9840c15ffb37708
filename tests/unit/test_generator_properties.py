"""Invariants of the generator over buildable sizes of both hardware models (hypothesis)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nornir import InitNornir

from controller.catalog import get_model
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.outputs.generate import generate
from controller.sizing import max_servers

MODELS = ("CX864E-N", "CX732Q-N")


def intent_for(model: str, servers: int, gpus_per_server: int, mode: str) -> dict[str, Any]:
    return {
        "name": "prop",
        "platform": "sonic",
        "switches": {"leaf": model, "spine": model},
        "servers": servers,
        "gpus_per_server": gpus_per_server,
        "dual_leaf_mode": mode,
        "addressing": {
            "loopbacks": "10.0.0.0/20",
            "rail_subnets": "10.64.0.0/10",
            "management": "172.16.0.0/16",
        },
    }


@st.composite
def buildable(draw: st.DrawFn) -> tuple[str, int, int, str]:
    model = draw(st.sampled_from(MODELS))
    gpus_per_server = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    m = get_model(model)
    limit = max_servers(m, m, gpus_per_server)
    # Keep examples fast: the largest fabrics are covered by the example and bench tests.
    servers = draw(st.integers(min_value=1, max_value=min(limit, 300)))
    mode = draw(st.sampled_from(["dual-arp", "evpn-mh"]))
    return model, servers, gpus_per_server, mode


def check_invariants(fabric: Fabric) -> None:
    sizing = fabric.sizing
    switch = fabric.switch_by_name
    host = [lk for lk in fabric.links if lk.kind == "host"]
    fabric_links = [lk for lk in fabric.links if lk.kind == "fabric"]

    # Every NIC port cabled exactly once; port 1 -> plane 1, port 2 -> plane 2.
    ends = Counter((lk.a_device, lk.a_port) for lk in host)
    expected = {(s.name, p) for s in fabric.servers for n in s.nics for p in n.ports}
    assert set(ends) == expected and set(ends.values()) == {1}
    for lk in host:
        assert lk.plane == switch[lk.z_device].plane == int(lk.a_port[-1])
        assert lk.rail in switch[lk.z_device].rails

    # No link joins the planes except aux links; aux links join the two leaves of a pair.
    for lk in fabric.links:
        a, z = switch.get(lk.a_device), switch.get(lk.z_device)
        if lk.kind == "aux":
            assert a and z and a.plane != z.plane and a.pair == z.name
        elif a and z:
            assert a.plane == z.plane == lk.plane

    # No switch port used twice.
    switch_ends = Counter(
        (d, p)
        for lk in fabric.links
        for d, p in ((lk.a_device, lk.a_port), (lk.z_device, lk.z_port))
        if d in switch
    )
    assert max(switch_ends.values()) == 1

    # Every leaf reaches every spine of its plane with the same number of links.
    pairs: dict[tuple[str, str], int] = defaultdict(int)
    for lk in fabric_links:
        pairs[(lk.a_device, lk.z_device)] += 1
    for leaf in fabric.switches_in(role="leaf"):
        for spine in fabric.switches_in(plane=leaf.plane, role="spine"):
            assert pairs[(leaf.name, spine.name)] == sizing.links_per_leaf_spine_pair

    # No leaf has more downlink than uplink capacity.
    capacity: dict[str, Counter[str]] = defaultdict(Counter)
    for lk in host:
        capacity[lk.z_device]["down"] += int(lk.speed[:-1])
    for lk in fabric_links:
        capacity[lk.a_device]["up"] += int(lk.speed[:-1])
    for leaf in fabric.switches_in(role="leaf"):
        assert capacity[leaf.name]["down"] <= capacity[leaf.name]["up"]

    # Counts agree with the sizing; EVPN-MH pairs share each NIC's ESI by construction.
    assert len(fabric.switches_in(role="leaf")) == sizing.leaves
    assert len(fabric.switches_in(role="spine")) == sizing.spines
    assert (
        len({n.esi for s in fabric.servers for n in s.nics})
        == sizing.servers * sizing.gpus_per_server
    )
    aux = [lk for lk in fabric.links if lk.kind == "aux"]
    # EVPN-MH: a pair link per leaf pair; dual-ARP: an AUX link per leaf pair, with protection
    paired = fabric.intent.dual_leaf_mode == "evpn-mh" or fabric.intent.cross_plane_protection
    assert len(aux) == (sizing.leaves // 2 if paired else 0)
    # Addresses unique.
    ips = [n.ip for s in fabric.servers for n in s.nics]
    assert len(ips) == len(set(ips))
    assert len({s.loopback for s in fabric.switches}) == len(fabric.switches)


@settings(max_examples=40, deadline=None)
@given(buildable())
def test_generator_invariants(case: tuple[str, int, int, str]) -> None:
    model, servers, gpus_per_server, mode = case
    check_invariants(
        build_fabric(intent_from_data(intent_for(model, servers, gpus_per_server, mode)))
    )


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(buildable())
def test_inventory_loads_in_nornir(tmp_path: Path, case: tuple[str, int, int, str]) -> None:
    model, servers, gpus_per_server, mode = case
    fabric = build_fabric(intent_from_data(intent_for(model, servers, gpus_per_server, mode)))
    out = tmp_path / f"{model}-{servers}-{gpus_per_server}-{mode}"
    generate(fabric, out)
    nr = InitNornir(
        runner={"plugin": "serial"},
        inventory={
            "plugin": "SimpleInventory",
            "options": {
                "host_file": str(out / "hosts.yaml"),
                "group_file": str(out / "groups.yaml"),
                "defaults_file": str(out / "defaults.yaml"),
            },
        },
        logging={"enabled": False},
    )
    assert len(nr.inventory.hosts) == len(fabric.switches)
    for sw in fabric.switches:
        host = nr.inventory.hosts[sw.name]
        assert host["role"] == sw.role and host["plane"] == sw.plane
        assert host.hostname == sw.mgmt_ip and host.platform == sw.platform
    assert len(nr.filter(plane=1).inventory.hosts) == len(fabric.switches) // 2


def test_full_16384_fabric_invariants() -> None:
    fabric = build_fabric(intent_from_data(intent_for("CX864E-N", 2048, 8, "evpn-mh")))
    check_invariants(fabric)
    assert len(fabric.links) == 2048 * 8 * 2 + 256 * 64 + 128
