"""`dpctl simulate`: the flow model pinned to known truths on the seed's 2,048-GPU fabric."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.render.features import UnsupportedFeature, check_load_balancing
from controller.simulate import paths
from controller.simulate.model import Result, Scenario, simulate
from controller.simulate.topology import (
    FABRIC_DOWN,
    FABRIC_UP,
    HOST_DOWN,
    HOST_UP,
    Topology,
    build_topology,
)
from controller.simulate.traffic import Flows, build_flows
from tests.conftest import INVENTORY, run_cli, run_json

SEED = INVENTORY / "examples" / "seed-2048-cx864e-dual-arp.yaml"


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    """The seed fabric without cross-plane protection (dual-ARP's default is on)."""
    intent = load_intent(SEED)
    return build_fabric(intent.model_copy(update={"cross_plane_protection": False}))


@pytest.fixture(scope="module")
def protected() -> Fabric:
    intent = load_intent(SEED)
    return build_fabric(intent.model_copy(update={"cross_plane_protection": True}))


@pytest.fixture(scope="module")
def dual(fabric: Fabric) -> Topology:
    return build_topology(fabric, 2)


def _run(topo: Topology, **kw: object) -> Result:
    sc = Scenario(**kw)  # type: ignore[arg-type]
    return simulate(topo, build_flows(topo, sc.workload, sc.qps, sc.seed), sc)


# -- the topology is the generated fabric ----------------------------------------------------


def test_topology_has_every_cable_both_ways(fabric: Fabric, dual: Topology) -> None:
    assert dual.links == 2 * len(fabric.links)
    sz = fabric.sizing
    assert (dual.downlink >= 0).sum() == sz.leaves * sz.uplinks_per_leaf
    # every uplink of a leaf goes to a spine of its own plane, links_per_pair to each
    for leaf in range(len(dual.leaves)):
        spines, counts = np.unique(dual.uplink_spine[leaf], return_counts=True)
        assert set(counts) == {sz.links_per_leaf_spine_pair}
        assert set(dual.spine_plane[spines]) == {dual.leaf_plane[leaf]}


def test_single_plane_baseline_has_the_same_switches_and_capacity(
    fabric: Fabric, dual: Topology
) -> None:
    single = build_topology(fabric, 1)
    assert single.leaves == dual.leaves and single.spines == dual.spines
    for kind in (HOST_UP, FABRIC_UP):
        assert single.cap[single.kind == kind].sum() == dual.cap[dual.kind == kind].sum()
    assert single.ports_per_nic == 1 and set(single.cap[single.kind == HOST_UP]) == {400.0}


# -- the hash is a real CRC-32 ---------------------------------------------------------------


def test_crc32_rows_match_zlib() -> None:
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 256, size=(200, 17), dtype=np.uint8)
    got = paths.crc32_rows(rows)
    assert [int(x) for x in got] == [zlib.crc32(bytes(r)) for r in rows]


def test_five_tuple_hash_is_crc_of_the_packed_tuple() -> None:
    h = paths.five_tuple_hash(
        np.array([5]), np.array([0x0A800002]), np.array([0x0A800102]), np.array([0xC123])
    )
    packed = bytes([0, 0, 0, 5, 10, 128, 0, 2, 10, 128, 1, 2, 17, 0xC1, 0x23, 0x12, 0xB7])
    assert int(h[0]) == zlib.crc32(packed)


# -- known truths ----------------------------------------------------------------------------


@pytest.mark.parametrize("workload", ["bisection", "ring", "tree"])
@pytest.mark.parametrize("planes", [1, 2])
def test_spray_max_link_load_is_one(fabric: Fabric, workload: str, planes: int) -> None:
    r = _run(build_topology(fabric, planes), workload=workload, lb="spray", planes=planes)
    assert r.max_link_load == pytest.approx(1.0, rel=0.01)
    assert r.completion_time_ratio == pytest.approx(1.0, rel=0.01)
    assert r.lost_flows == 0


def _one_flow(topo: Topology, src: int, dst: int, sport: int) -> Flows:
    one = np.array([0])
    return Flows(
        src_server=np.array([src]),
        src_rail=one.copy(),
        dst_server=np.array([dst]),
        dst_rail=one.copy(),
        rate=np.array([100.0]),
        qp_index=one.copy(),
        sport=np.array([sport]),
        connection=one.copy(),
    )


@pytest.mark.parametrize("lb", ["ecmp", "wcmp", "pbr"])
@pytest.mark.parametrize("hash_seeds", ["same", "per-switch"])
def test_a_single_flow_uses_exactly_one_path(dual: Topology, lb: str, hash_seeds: str) -> None:
    for sport in (0xC000, 0xC001, 0xD00D):
        flows = _one_flow(dual, src=3, dst=200, sport=sport)  # group 1 -> group 2
        r = simulate(dual, flows, Scenario(lb=lb, hash_seeds=hash_seeds))
        used = np.flatnonzero(r.load > 0)
        kinds = sorted(int(k) for k in dual.kind[used])
        assert kinds == [HOST_UP, HOST_DOWN, FABRIC_UP, FABRIC_DOWN]
        assert np.allclose(r.load[used] * dual.cap[used], 100.0)
        up = used[dual.kind[used] == FABRIC_UP][0]
        down = used[dual.kind[used] == FABRIC_DOWN][0]
        assert dual.link_z[up] == dual.link_a[down]  # the same spine


def _ecmp_max_load(n: int, m: int, rng: np.random.Generator) -> int:
    """n flows with random 5-tuples hashed by the model over one group of m equal links."""
    w = paths.window(
        paths.five_tuple_hash(
            np.zeros(n, dtype=np.int64),
            rng.integers(0, 1 << 32, n, dtype=np.int64),
            rng.integers(0, 1 << 32, n, dtype=np.int64),
            rng.integers(0xC000, 0x10000, n, dtype=np.int64),
        ),
        np.zeros(n, dtype=np.int64),
    )
    pick = paths.select(w, np.zeros(n, dtype=np.int64), np.ones((1, m)))
    return int(np.bincount(pick, minlength=m).max())


@pytest.mark.parametrize(("n", "m"), [(256, 64), (64, 8), (1000, 16)])
def test_ecmp_matches_balls_into_bins(n: int, m: int) -> None:
    # reference: Monte-Carlo balls into bins with numpy's generator, not the code under test
    ref_rng = np.random.default_rng(1)
    ref = np.array([np.bincount(ref_rng.integers(0, m, n), minlength=m).max() for _ in range(4000)])
    rng = np.random.default_rng(2)
    trials = 300
    got = np.array([_ecmp_max_load(n, m, rng) for _ in range(trials)])
    spread = ref.std() / np.sqrt(trials)
    assert abs(got.mean() - ref.mean()) < 4 * spread + 0.05, (got.mean(), ref.mean())


def test_ecmp_on_the_fabric_leaf_tier_is_balls_into_bins(dual: Topology) -> None:
    # bisection: 256 flows of 100G leave each leaf over its 64 uplinks
    r = _run(dual, workload="bisection", lb="ecmp")
    per_leaf_max = np.rint(r.load[dual.uplink] * 4).max(axis=1)
    ref_rng = np.random.default_rng(3)
    ref = np.array(
        [np.bincount(ref_rng.integers(0, 64, 256), minlength=64).max() for _ in range(4000)]
    )
    spread = ref.std() / np.sqrt(per_leaf_max.size)
    assert abs(per_leaf_max.mean() - ref.mean()) < 4 * spread


def test_same_hash_on_both_tiers_polarizes_the_parallel_links(dual: Topology) -> None:
    """Every (spine, destination leaf) bundle of 8 links carries its flows on one link."""

    def used_per_bundle(hash_seeds: str) -> float:
        r = _run(dual, workload="bisection", lb="ecmp", hash_seeds=hash_seeds)
        bundles = np.where(dual.downlink >= 0, r.load[dual.downlink], 0.0)  # (spine, leaf, k)
        loaded = bundles.sum(axis=2) > 0
        return float((bundles > 0).sum(axis=2)[loaded].mean())

    assert used_per_bundle("same") == 1.0
    assert used_per_bundle("per-switch") > 6.0


def test_losing_one_of_k_spines_under_spray(fabric: Fabric, dual: Topology) -> None:
    k = fabric.sizing.spines_per_plane
    spine = dual.spines[0]
    bisection = _run(dual, workload="bisection", lb="spray", fail=(spine,))
    assert bisection.completion_time_ratio == pytest.approx(k / (k - 1), rel=0.01)
    ring = _run(dual, workload="ring", lb="spray", fail=(spine,))
    assert ring.completion_time_ratio - 1.0 < (k / (k - 1) - 1.0) / 4
    assert bisection.lost_flows == ring.lost_flows == 0


def test_leaf_failure_black_holes_remote_senders_without_protection(
    fabric: Fabric, protected: Fabric
) -> None:
    leaf = "p1-g1-leaf1"
    behind = {i for i, s in enumerate(fabric.servers) if s.group == 1}
    for workload in ("bisection", "ring"):
        topo = build_topology(fabric, 2)
        flows = build_flows(topo, workload, 4)
        sc = Scenario(workload=workload, lb="ecmp", fail=(leaf,))
        r = simulate(topo, flows, sc)
        # expected: flows on port 1 (QP index even) from servers not behind the leaf, on rail 1,
        # to servers behind it
        expected = (
            (flows.qp_index % 2 == 0)
            & (flows.src_rail == 0)
            & np.isin(flows.dst_server, list(behind))
            & ~np.isin(flows.src_server, list(behind))
        )
        assert r.lost_flows == int(expected.sum()) > 0
        assert r.aux_flows == 0
        safe = simulate(build_topology(protected, 2), flows, sc)
        assert safe.lost_flows == 0
        assert safe.aux_flows == r.lost_flows
        # the AUX link is 10G: the protected flows arrive, slowly
        assert safe.completion_time_ratio > 10


def test_leaf_failure_moves_its_servers_to_their_other_port(dual: Topology) -> None:
    r = _run(dual, workload="ring", lb="spray", fail=("p1-g1-leaf1",))
    assert r.completion_time_ratio == pytest.approx(2.0)  # 400G of QPs on one 200G port


def test_single_plane_leaf_failure_cuts_its_servers_off(fabric: Fabric) -> None:
    single = build_topology(fabric, 1)
    r = _run(single, workload="bisection", lb="spray", planes=1, fail=("p1-g1-leaf1",))
    # 64 servers behind it send 4 QPs each and receive 4 each: nothing of it arrives
    assert r.lost_flows == 64 * 4 * 2


def test_link_failure_is_one_cable(dual: Topology) -> None:
    r = _run(dual, workload="bisection", lb="spray", fail=("p1-g1-leaf1:Ethernet256",))
    assert r.lost_flows == 0 and r.completion_time_ratio > 1.0
    dead = [i for i, p in enumerate(dual.link_a_port) if p == "Ethernet256"]
    assert any(r.load[i] == 0 for i in dead)


def test_pbr_follows_the_renderers_pins(dual: Topology) -> None:
    # PBR pins two downlinks per uplink: no leaf uplink carries more than 2 NIC ports' QPs
    r = _run(dual, workload="bisection", lb="pbr")
    assert r.load[dual.uplink].max() == pytest.approx(1.0)


def test_ars_balances_the_bisection(dual: Topology) -> None:
    r = _run(dual, workload="bisection", lb="ars")
    assert r.completion_time_ratio == pytest.approx(1.0, rel=0.01)


# -- refusals and bad input --------------------------------------------------------------------


def _frr_intent(tmp_path: Path) -> Path:
    data = yaml.safe_load(SEED.read_text())
    data["platform"] = "frr"
    data["load_balancing"]["mode"] = "ecmp"
    path = tmp_path / "frr.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("mode", ["spray", "ars", "pbr"])
def test_modes_the_platform_cannot_do_are_refused_with_renders_reason(
    tmp_path: Path, mode: str
) -> None:
    with pytest.raises(UnsupportedFeature) as render_refusal:
        check_load_balancing("frr", {"CX864E-N"}, mode)
    result = run_cli("simulate", "--fabric", str(_frr_intent(tmp_path)), "--lb", mode)
    assert result.exit_code == 2
    assert "--lb" in result.stderr and render_refusal.value.reason in result.stderr.replace(
        "\n", " "
    )


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--fail", "no-such-switch"], "--fail"),
        (["--fail", "p1-g1-leaf1:Ethernet9999"], "--fail"),
        (["--qps", "0"], "--qps"),
        (["--planes", "3"], "--planes"),
        (["--workload", "broadcast"], "--workload"),
        (["--lb", "roundrobin"], "--lb"),
        (["--hash-seeds", "random"], "--hash-seeds"),
        (["--hash-select", "xor"], "--hash-select"),
    ],
)
def test_bad_input_names_the_option_and_exits_2(args: list[str], option: str) -> None:
    result = run_cli("simulate", "--fabric", str(SEED), *args)
    assert result.exit_code == 2
    assert option in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_bad_input_json_is_an_error_object() -> None:
    code, body = run_json("simulate", "--fabric", str(SEED), "--fail", "nope")
    assert code == 2 and body["ok"] is False and body["error"]["where"] == "--fail"


def test_json_has_the_figures_as_numbers() -> None:
    code, body = run_json(
        "simulate", "--fabric", str(SEED), "--workload", "bisection", "--lb", "spray"
    )
    assert code == 0
    for key in ("flows", "links", "max_link_load", "completion_time_ratio", "lost_flows"):
        assert isinstance(body[key], int | float), key
    assert body["flows"] == 256 * 8 * 4 and body["max_link_load"] == pytest.approx(1.0)


def test_plot_writes_the_figures(tmp_path: Path) -> None:
    code, body = run_json(
        "simulate", "--fabric", str(SEED), "--workload", "bisection", "--plot", str(tmp_path)
    )
    assert code == 0
    names = {Path(p).name for p in body["figures"]}
    for stem in ("histogram-bisection-ars-2p", "heatmap-bisection-ars-2p", "modes-bisection"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
    assert all(Path(p).stat().st_size > 1000 for p in body["figures"])


def test_compare_writes_the_report(tmp_path: Path) -> None:
    report = tmp_path / "docs" / "simulation.md"
    code, body = run_json("simulate", "--fabric", str(SEED), "--compare", "--report", str(report))
    assert code == 0 and body["ok"]
    text = report.read_text()
    assert "hash-polarization claim" in text and "seed-2048-dual-arp" in text
    assert (tmp_path / "docs" / "simulation" / "modes-bisection.svg").exists()
    head = body["headline"]
    # spray is ideal on either design; same-hash ECMP polarizes
    assert head["2p-spray-same-threshold"] == pytest.approx(1.0, rel=0.01)
    assert head["2p-ecmp-same-threshold"] > head["2p-ecmp-per-switch-threshold"]
    json.dumps(body)


# -- a small CX732Q-N fabric: model limits and the other workloads ------------------------------

SMALL = INVENTORY.parent / "tests" / "golden" / "intents" / "cx732q-small.yaml"


@pytest.mark.parametrize("mode", ["spray", "ars"])
def test_cx732q_refuses_what_its_asic_cannot_do(mode: str) -> None:
    with pytest.raises(UnsupportedFeature) as render_refusal:
        check_load_balancing("asternos", {"CX732Q-N"}, mode)
    result = run_cli("simulate", "--fabric", str(SMALL), "--lb", mode)
    assert result.exit_code == 2
    assert render_refusal.value.reason in result.stderr.replace("\n", " ")


@pytest.mark.parametrize("workload", ["all-to-all", "tree", "ring"])
def test_small_fabric_workloads_keep_every_nic_at_line_rate(workload: str) -> None:
    topo = build_topology(build_fabric(load_intent(SMALL)), 2)
    r = _run(topo, workload=workload, lb="wcmp")
    assert r.max_link_load == pytest.approx(1.0) and r.lost_flows == 0


def test_bisection_needs_two_leaves_per_rail() -> None:
    result = run_cli("simulate", "--fabric", str(SMALL), "--workload", "bisection")
    assert result.exit_code == 2 and "--workload" in result.stderr


def test_a_seed_alone_does_not_decorrelate_a_crc_hash() -> None:
    """CRC is linear: another seed XORs one constant into every hash, the window does not move."""
    rng = np.random.default_rng(5)
    n = 4000
    src = rng.integers(0, 1 << 32, n, dtype=np.int64)
    dst = rng.integers(0, 1 << 32, n, dtype=np.int64)
    sport = rng.integers(0xC000, 0x10000, n, dtype=np.int64)
    zero = np.zeros(n, dtype=np.int64)

    def choice(seed: int, offset: int, members: int) -> np.ndarray:
        crc = paths.five_tuple_hash(np.full(n, seed), src, dst, sport)
        return paths.select(paths.window(crc, np.full(n, offset)), zero, np.ones((1, members)))

    def links_per_spine(spine_seed: int, spine_offset: int) -> float:
        spine = choice(0, 0, 64) // 8  # leaf: 64 uplinks, 8 per spine, spine by spine
        link = choice(spine_seed, spine_offset, 8)
        return float(np.mean([np.unique(link[spine == s]).size for s in range(8)]))

    assert links_per_spine(0, 0) == 1.0  # same hash: polarized
    assert links_per_spine(0xDEADBEEF, 0) == 1.0  # another seed, same window: still polarized
    assert links_per_spine(0xDEADBEEF, 16) == 8.0  # another window: every link used


BIG = INVENTORY / "examples" / "cx864e-16384-dual-arp.yaml"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--planes", "1"], "--planes"),  # one link per pair: no single plane of the same boxes
        (["--workload", "all-to-all", "--qps", "1"], "--qps"),  # 33.5M flows
    ],
)
def test_the_largest_fabric_refuses_what_it_cannot_hold(args: list[str], option: str) -> None:
    result = run_cli("simulate", "--fabric", str(BIG), *args)
    assert result.exit_code == 2 and option in result.stderr
