"""A lab split over two User-Mode Linux instances, one per plane (controller/lab/split.py):
where each node runs, which cables cross, what each instance's build makes, and what is
refused. The split itself runs in tests/lab/test_multi_lab.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.lab import impair, runtime, substrate
from controller.lab.errors import LabError
from controller.lab.fabric import LabFabricError, lab_guests, lab_topology
from controller.lab.scripts import BuildPlan, build_script
from controller.lab.split import crossings, placement
from controller.lab.state import GuestInstance, LabState, NodeState, load_state
from controller.lab.uml import uml_command
from tests.conftest import INVENTORY, run_cli

SMALL = INVENTORY / "lab-dual-arp.yaml"


@pytest.fixture(scope="module")
def small_fabric() -> Fabric:
    return build_fabric(load_intent(SMALL))


def test_plane_two_switches_run_in_the_second_instance(small_fabric: Fabric) -> None:
    where = placement(lab_topology(small_fabric), 2)
    assert {n for n, g in where.items() if g == 1} == {
        s.name for s in small_fabric.switches if s.plane == 2
    }
    assert all(where[s.name] == 0 for s in small_fabric.servers)
    assert set(placement(lab_topology(small_fabric), 1).values()) == {0}


def test_the_crossing_cables_are_the_aux_and_plane_twos_server_cables(small_fabric: Fabric) -> None:
    crossing = crossings(lab_topology(small_fabric), 2)
    kinds = {
        (lk.a_device, lk.a_port): lk.kind for lk in small_fabric.links
    }  # the plan's own cable kinds
    found = sorted(kinds[(x.cable.a_node, x.cable.a_port)] for x in crossing)
    assert found == ["aux", "aux", "host", "host", "host", "host"]
    assert len({x.vni for x in crossing}) == len(crossing) and min(x.vni for x in crossing) > 1


def test_device_names_fit_linux_for_the_seed_lab_with_the_longest_prefix() -> None:
    topo = lab_topology(build_fabric(load_intent(INVENTORY / "lab-seed-dual-arp.yaml")))
    crossing = crossings(topo, 2)
    assert len(crossing) == 48  # 16 AUX + 32 server cables to plane 2
    names = [n for x in crossing for n in (x.tunnel("abcdefg-"), x.glue("abcdefg-"))]
    assert max(len(n) for n in names) <= 15 and len(set(names)) == len(names)


def _plan(fabric: Fabric, guest: int) -> str:
    topo = lab_topology(fabric)
    return build_script(BuildPlan(topo, "dqz-", "/run/dpl/state", guest=guest, guests=2))


def test_each_instance_builds_only_its_nodes_and_its_ends_of_the_crossing_cables(
    small_fabric: Fabric,
) -> None:
    first, second = _plan(small_fabric, 0), _plan(small_fabric, 1)
    assert "netns add dqz-p2-spine1" in second and "netns add dqz-p2-spine1" not in first
    assert "netns add dqz-srv0001" in first and "netns add dqz-srv0001" not in second
    # the management gateway's address exists once, in the jump host's instance
    assert "addr add 172.30.0.1/" in first and "addr add 172.30.0.1/" not in second
    for script, me, peer in (
        (first, "198.18.0.1", "198.18.0.2"),
        (second, "198.18.0.2", "198.18.0.1"),
    ):
        assert f"link add dqz-xm type vxlan id 1 local {me} remote {peer}" in script
        assert "link set dqz-xm master dqz-mgmt" in script
    # srv0001's second port, cabled to p2-g1-leaf1's swp1: each end in its own instance,
    # glued to the same VNI, redirected both ways
    (cable,) = [
        x
        for x in crossings(lab_topology(small_fabric), 2)
        if (x.cable.a_node, x.cable.a_port) == ("srv0001", "nic1p2")
    ]
    glue, tunnel = cable.glue("dqz-"), cable.tunnel("dqz-")
    assert f"link add nic1p2 netns dqz-srv0001 type veth peer name {glue}" in first
    assert f"link add swp1 netns dqz-p2-g1-leaf1 type veth peer name {glue}" in second
    for script in (first, second):
        assert f"link add {tunnel} type vxlan id {cable.vni} " in script
        assert f"matchall action mirred egress redirect dev {tunnel}" in script
        assert f"matchall action mirred egress redirect dev {glue}" in script
    # a cable inside one instance stays a veth pair there
    assert (
        "link add swp3 netns dqz-p2-g1-leaf1 type veth peer name swp1 netns dqz-p2-spine1" in second
    )


def test_a_lab_of_one_instance_builds_as_before(small_fabric: Fabric) -> None:
    script = build_script(BuildPlan(lab_topology(small_fabric), "dqz-", "/run/dpl/state"))
    assert "vxlan" not in script and "netns add dqz-p2-spine1" in script


def test_the_second_instance_gets_the_host_veth_end_as_a_raw_device(tmp_path: Path) -> None:
    state = _state(tmp_path, more=False)
    cmd = uml_command(state, "dqz-u000001", "169.254.9.2", 1024, 1, "dqz-wabcdeb")
    assert "vec1:transport=raw,ifname=dqz-wabcdeb,mtu=9300" in cmd
    assert any(a.startswith("umid=dqz-lab1-") for a in cmd)
    assert not any(a.startswith("vec1:") for a in uml_command(state, "t", "169.254.9.2", 1024))


def _state(tmp_path: Path, more: bool = True) -> LabState:
    return LabState(
        name="lab-dual-arp",
        prefix="dqz-",
        mode="guest",
        state_dir=str(tmp_path),
        mgmt_subnet="172.30.0.0/24",
        mgmt_bridge_ip="172.30.0.1",
        nodes={
            "p1-g1-leaf1": NodeState("switch", "leaf", 1, "dqz-p1-g1-leaf1", "172.30.0.4"),
            "p2-g1-leaf1": NodeState("switch", "leaf", 2, "dqz-p2-g1-leaf1", "172.30.0.8", 1),
            "p1-spine1": NodeState("switch", "spine", 1, "dqz-p1-spine1", "172.30.0.2"),
            "p2-spine1": NodeState("switch", "spine", 2, "dqz-p2-spine1", "172.30.0.6", 1),
        },
        guest_pid=11,
        guest_port=22,
        guest_host="169.254.9.2",
        substrate="uml",
        more_guests=[GuestInstance(12, "169.254.9.6")] if more else [],
    )


def test_a_split_state_round_trips_and_an_older_one_is_one_instance(tmp_path: Path) -> None:
    state = _state(tmp_path)
    state.save()
    assert load_state(tmp_path) == state and load_state(tmp_path).guests == 2
    data = json.loads((tmp_path / "lab.json").read_text())
    del data["more_guests"]
    for node in data["nodes"].values():
        del node["guest"]
    (tmp_path / "lab.json").write_text(json.dumps(data))
    older = load_state(tmp_path)
    assert older.guests == 1 and {n.guest for n in older.nodes.values()} == {0}


def test_a_swap_between_the_two_instances_is_refused_naming_both_ends(
    tmp_path: Path, small_fabric: Fabric
) -> None:
    """An interface cannot move between machines: refused before anything is touched (the
    session never connects: the state's placement is enough to know)."""
    _state(tmp_path).save()
    with pytest.raises(impair.ImpairError, match="run in the lab's two instances") as caught:
        impair.swap(small_fabric, tmp_path, "p1-spine1:swp1", "p2-spine1:swp1")
    assert "p1-spine1:swp1 and p2-spine1:swp1" in str(caught.value)
    assert impair.load(tmp_path).describe() == []  # nothing recorded


@pytest.mark.parametrize("guests", [0, 3])
def test_up_refuses_a_count_other_than_one_or_two_before_making_anything(
    tmp_path: Path,
    small_fabric: Fabric,
    guests: int,
) -> None:
    target = tmp_path / "lab"
    with pytest.raises(LabError, match=f"1 or 2 instances, not {guests}"):
        runtime.up(lab_topology(small_fabric), target, prefix="dqz-", guests=guests)
    assert not target.exists()


def test_up_refuses_a_split_on_qemu_before_making_anything(
    tmp_path: Path,
    small_fabric: Fabric,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(substrate, "choose", lambda *a, **k: substrate.Choice("tcg", "forced"))
    target = tmp_path / "lab"
    with pytest.raises(LabError, match=r"user-mode-linux only .* not on qemu-tcg"):
        runtime.up(lab_topology(small_fabric), target, prefix="dqz-", guests=2)
    assert not target.exists()


def test_the_variable_is_checked_where_it_enters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPCTL_LAB_GUESTS", "4")
    with pytest.raises(LabFabricError, match="must be 1 or 2, not '4'") as caught:
        lab_guests()
    assert caught.value.where == "DPCTL_LAB_GUESTS"
    assert lab_guests(2) == 2
    monkeypatch.setenv("DPCTL_LAB_GUESTS", "2")
    assert lab_guests() == 2


def test_cli_refuses_three_instances(tmp_path: Path) -> None:
    result = run_cli(
        "lab", "up", "-f", str(SMALL), "--state-dir", str(tmp_path / "x"), "--guests", "3"
    )
    assert result.exit_code == 2
    assert "--guests" in result.output and not (tmp_path / "x").exists()
