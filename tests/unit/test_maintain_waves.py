"""The waves of `dpctl maintain` (hypothesis over buildable fabrics), their predicted impact
(one simulator run per shape, shapes proven symmetric by simulating both), the budget."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.maintain.impact import ImpactModel, shape
from controller.maintain.waves import (
    ACTIONS,
    Wave,
    WaveError,
    conflicts,
    fit_budget,
    plan_waves,
)
from tests.unit.test_generator_properties import intent_for

_FABRICS: dict[tuple[Any, ...], Fabric] = {}


def fabric_of(model: str, servers: int, gpus: int, mode: str) -> Fabric:
    key = (model, servers, gpus, mode)
    if key not in _FABRICS:
        _FABRICS[key] = build_fabric(intent_from_data(intent_for(model, servers, gpus, mode)))
    return _FABRICS[key]


fabrics = st.builds(
    fabric_of,
    st.sampled_from(["CX864E-N", "CX732Q-N"]),
    st.sampled_from([2, 8, 40, 96]),
    st.sampled_from([2, 4, 8]),
    st.sampled_from(["dual-arp", "evpn-mh"]),
)
options = st.fixed_dictionaries(
    {
        "action": st.sampled_from(ACTIONS),
        "plane": st.sampled_from([None, 1, 2]),
        "role": st.sampled_from([None, "leaf", "spine"]),
        "max_wave": st.integers(1, 9),
        "spines_per_wave": st.integers(1, 4),
    }
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabrics, options)
def test_wave_invariants(fabric: Fabric, opts: dict[str, Any]) -> None:
    waves = plan_waves(fabric, **opts)
    chosen = {s.name for s in fabric.switches_in(opts["plane"], opts["role"])}
    seen = Counter(n for w in waves for n in w.switches)
    assert set(seen) == chosen and set(seen.values()) == {1}  # every switch exactly once
    avoid = conflicts(fabric)
    for wave in waves:
        assert 1 <= len(wave.switches) <= opts["max_wave"]
        members = [fabric.switch_by_name[n] for n in wave.switches]
        assert {(s.plane, s.role) for s in members} == {(wave.plane, wave.role)}
        for name in wave.switches:  # no pair, no NIC's two leaves together
            assert not avoid.get(name, set()) & set(wave.switches)
        if wave.role == "spine":
            assert len(wave.switches) <= opts["spines_per_wave"]
    if opts["action"] == "apply":
        assert len(waves[0].switches) == 1  # the canary
        # then growing: the k-th wave at most 2**k switches (a wave cut short by the end of
        # its plane's leaves or by the spine cap does not hold the growth back)
        for k, wave in enumerate(waves):
            assert len(wave.switches) <= min(2**k, opts["max_wave"])


@settings(max_examples=60, deadline=None)
@given(
    fabrics,
    st.dictionaries(st.integers(0, 400), st.floats(0.0, 0.6), max_size=50),
    st.floats(0.05, 1.0),
)
def test_budget_respected_or_refused(
    fabric: Fabric, weights: dict[int, float], budget: float
) -> None:
    """A wave's loss is the sum of its switches' (an additive stand-in for the simulator):
    every wave left fits, or the one switch over the budget alone is named."""
    index = {s.name: i for i, s in enumerate(fabric.switches)}

    def loss(wave: Wave) -> float:
        return sum(weights.get(index[n], 0.01) for n in wave.switches)

    waves = plan_waves(fabric, "reboot", max_wave=8, spines_per_wave=8)
    try:
        fitted = fit_budget(waves, loss, budget)
    except WaveError as exc:
        assert exc.where in index and loss(Wave(1, "leaf", (exc.where,))) > budget
        assert "over --max-capacity-loss" in exc.reason
        return
    assert all(loss(w) <= budget + 1e-9 for w in fitted)
    assert sorted(n for w in fitted for n in w.switches) == sorted(
        n for w in waves for n in w.switches
    )


def test_bad_options_are_named() -> None:
    fabric = fabric_of("CX732Q-N", 8, 8, "dual-arp")
    with pytest.raises(WaveError, match="unknown action 'upgrad'"):
        plan_waves(fabric, "upgrad")  # type: ignore[arg-type]
    with pytest.raises(WaveError) as exc:
        plan_waves(fabric, "reboot", max_wave=0)
    assert exc.value.where == "--max-wave"
    with pytest.raises(WaveError) as exc:
        plan_waves(fabric, "reboot", plane=3)
    assert exc.value.where == "--plane"


def test_same_shape_same_impact_by_simulating_both() -> None:
    """The cache's premise: waves of one shape (plane, role, spread over groups) have the
    same predicted impact. Simulated here for every wave of a small fabric, no cache."""
    fabric = fabric_of("CX732Q-N", 96, 8, "dual-arp")
    waves = plan_waves(fabric, "reboot", max_wave=3, spines_per_wave=2)
    by_shape: dict[Any, set[tuple[float, float]]] = {}
    for wave in waves:
        fresh = ImpactModel(fabric)  # a new model: nothing reused between the two
        impact = fresh.predict(wave)
        by_shape.setdefault(shape(fabric, wave), set()).add(
            (round(impact.ratio, 9), round(impact.aux_ratio, 9))
        )
    assert len(by_shape) < len(waves)  # shapes repeat, so the cache saves runs
    assert all(len(values) == 1 for values in by_shape.values()), by_shape


def test_drained_leaf_steered_vs_aux() -> None:
    """A leaf drained --hosts-first: its servers' flows move to the other plane (ratio 2:
    one port carries the NIC's traffic), no flow lost; remote senders still hashing into
    the drained plane would cross the 10G AUX link (the plain failure's ratio ~20)."""
    fabric = fabric_of("CX864E-N", 130, 8, "dual-arp")
    leaf = next(s.name for s in fabric.switches if s.role == "leaf")
    impact = ImpactModel(fabric).predict(Wave(1, "leaf", (leaf,)))
    assert impact.ratio == pytest.approx(2.0) and impact.lost_flows == 0
    assert impact.aux_ratio > 10
    assert impact.capacity_loss == pytest.approx(0.5)
