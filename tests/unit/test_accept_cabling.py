"""The cabling punch list: every perturbation of a plan is explained exactly (applying the
punch list to what is cabled gives the plan), one swap is one action, a removed cable is one
cable to lay, an unplanned cable one to remove."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.accept.cabling import (
    Action,
    Cable,
    End,
    apply,
    cable,
    observed_cables,
    punch_list,
)
from controller.generator import build_fabric
from controller.intent import load_intent
from tests.conftest import INVENTORY

SEED = Path(__file__).resolve().parents[2] / "inventory/examples/seed-2048-cx864e-dual-arp.yaml"


def plan_of(path: Path) -> list[Cable]:
    fabric = build_fabric(load_intent(path))
    return [cable((lk.a_device, lk.a_port), (lk.z_device, lk.z_port)) for lk in fabric.links]


LAB = plan_of(INVENTORY / "lab-dual-arp.yaml")
SEED_PLAN = plan_of(SEED)


def swap_ends(cables: set[Cable], x: End, y: End) -> set[Cable]:
    """Exchange the cables plugged into ports x and y (what a person does by mistake)."""
    cx = next(c for c in cables if x in c)
    cy = next(c for c in cables if y in c)
    if cx == cy:
        return cables
    px = next(iter(cx - {x}))
    py = next(iter(cy - {y}))
    return (cables - {cx, cy}) | {cable(px, y), cable(py, x)}


@st.composite
def perturbed(draw: st.DrawFn, plan: list[Cable]) -> tuple[set[Cable], int, int]:
    """The plan with some ends exchanged and some cables left out."""
    cables = set(plan)
    all_ends = sorted(e for c in plan for e in c)
    swaps = draw(st.integers(0, 6))
    for _ in range(swaps):
        x = draw(st.sampled_from(all_ends))
        y = draw(st.sampled_from(all_ends))
        cables = swap_ends(cables, x, y)
    removed = draw(st.integers(0, 4))
    for _ in range(removed):
        if cables:
            cables.discard(draw(st.sampled_from(sorted(cables, key=sorted))))
    return cables, swaps, removed


@settings(max_examples=300, deadline=None)
@given(perturbed(LAB))
def test_lab_plan_any_perturbation_is_explained_exactly(case: tuple[set[Cable], int, int]) -> None:
    observed, _, _ = case
    assert apply(observed, punch_list(LAB, observed)) == set(LAB)


@settings(max_examples=100, deadline=None)
@given(perturbed(SEED_PLAN))
def test_seed_plan_any_perturbation_is_explained_exactly(
    case: tuple[set[Cable], int, int],
) -> None:
    observed, _, _ = case
    assert apply(observed, punch_list(SEED_PLAN, observed)) == set(SEED_PLAN)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_one_swap_is_one_action(data: st.DataObject) -> None:
    c1, c2 = data.draw(st.lists(st.sampled_from(LAB), min_size=2, max_size=2, unique=True))
    x = data.draw(st.sampled_from(sorted(c1)))
    y = data.draw(st.sampled_from(sorted(c2)))
    observed = swap_ends(set(LAB), x, y)
    actions = punch_list(LAB, observed)
    assert [a.kind for a in actions] == ["swap"]
    assert set(actions[0].wanted) == {c1, c2}
    assert apply(observed, actions) == set(LAB)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(LAB), min_size=1, max_size=5, unique=True))
def test_removed_cables_are_cables_to_lay(gone: list[Cable]) -> None:
    observed = set(LAB) - set(gone)
    actions = punch_list(LAB, observed)
    assert sorted(a.kind for a in actions) == ["add"] * len(gone)
    assert {cable(a.first, a.second) for a in actions} == set(gone)


def test_clean_plan_has_no_actions() -> None:
    assert punch_list(LAB, set(LAB)) == []


def test_swap_between_spines_is_said_at_the_leaf() -> None:
    """Two fabric cables of one leaf exchanged between its spines: one swap at the leaf."""
    observed = swap_ends(set(LAB), ("p1-spine1", "swp1"), ("p1-spine2", "swp1"))
    (action,) = punch_list(LAB, observed)
    assert action.kind == "swap"
    assert (action.first, action.second) == (("p1-g1-leaf1", "swp3"), ("p1-g1-leaf1", "swp4"))
    assert action.text.startswith("swap the cables in p1-g1-leaf1:swp3 and p1-g1-leaf1:swp4")


def test_end_in_a_free_port_is_one_move() -> None:
    """A server cable plugged into a spare port of the right leaf: move it to its port."""
    planned = cable(("srv0001", "nic1p1"), ("p1-g1-leaf1", "swp1"))
    wrong = cable(("srv0001", "nic1p1"), ("p1-g1-leaf1", "swp9"))
    observed = (set(LAB) - {planned}) | {wrong}
    (action,) = punch_list(LAB, observed)
    assert action == Action(
        "move", ("p1-g1-leaf1", "swp9"), ("p1-g1-leaf1", "swp1"), (wrong,), (planned,)
    )
    assert "move the cable end from p1-g1-leaf1:swp9 to p1-g1-leaf1:swp1" in action.text


def test_unplanned_cable_is_removed() -> None:
    extra = cable(("p1-g1-leaf1", "swp9"), ("p1-g1-leaf2", "swp9"))
    (action,) = punch_list(LAB, set(LAB) | {extra})
    assert action.kind == "remove"
    assert action.text == "remove the cable p1-g1-leaf1:swp9 - p1-g1-leaf2:swp9 (not in the plan)"


def test_three_cycle_is_fixed() -> None:
    a, b, c = LAB[0], LAB[1], LAB[8]
    observed = swap_ends(swap_ends(set(LAB), min(a), min(b)), min(b), min(c))
    assert apply(observed, punch_list(LAB, observed)) == set(LAB)


def test_observations_from_both_sides_merge() -> None:
    x, y, z = ("s1", "p1"), ("s2", "p1"), ("s3", "p1")
    assert observed_cables([(x, y), (y, x)]) == {cable(x, y)}
    # y says it sees z, x's stale LLDP says y: y's own word wins
    assert observed_cables([(x, y), (y, z)]) == {cable(y, z)}


def test_apply_refuses_impossible_steps() -> None:
    with pytest.raises(ValueError, match="occupied"):
        apply(set(LAB), [Action("add", min(LAB[0]), ("x", "y"))])


def test_stale_neighbour_after_a_swap_does_not_hide_it() -> None:
    """Right after two cables were swapped, one spine still lists its old neighbour (LLDP
    keeps it for its TTL): the mutual pair and the fresh claim still make the swap."""
    leaf3, leaf4 = ("p1-g1-leaf1", "swp3"), ("p1-g1-leaf1", "swp4")
    s1, s2 = ("p1-spine1", "swp1"), ("p1-spine2", "swp1")
    seen = [(leaf3, s2), (s2, leaf3), (leaf4, s1), (s1, leaf3)]  # s1's entry is stale
    assert observed_cables(seen) == {cable(leaf3, s2), cable(leaf4, s1)}
    observed = (set(LAB) - {cable(leaf3, s1), cable(leaf4, s2)}) | observed_cables(seen)
    assert [a.kind for a in punch_list(LAB, observed)] == ["swap"]
