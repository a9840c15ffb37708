"""Which intent each switch runs (controller/deployed.py): recorded after a deploy committed,
forgotten after a rollback, and what a drain step renders from; a corrupt record named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller import deployed, drain
from controller.deploy import DeviceOutcome, _record_running
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import BgpTimers, FabricIntent, load_intent
from controller.opstate import StateError, StateFolder
from tests.conftest import INVENTORY

LAB = INVENTORY / "lab-dual-arp.yaml"
LEAF, SPINE = "p1-g1-leaf1", "p1-spine1"


def _intents() -> tuple[FabricIntent, FabricIntent]:
    old = load_intent(LAB)
    return old, old.model_copy(update={"bgp_timers": BgpTimers(keepalive=4, hold=12)})


def test_a_switch_runs_the_intent_last_recorded_for_it(tmp_path: Path) -> None:
    state = StateFolder("lab-dual-arp", tmp_path)
    old, new = _intents()
    assert deployed.intent_running(state, LEAF) is None  # nothing recorded yet
    with state.lock("test"):
        deployed.record(state, old, [LEAF, SPINE])
        deployed.record(state, new, [SPINE])
    assert deployed.intent_running(state, LEAF) == old
    assert deployed.intent_running(state, SPINE) == new
    with state.lock("test"):
        deployed.forget(state, [LEAF])
    assert deployed.intent_running(state, LEAF) is None
    held = json.loads(deployed.path_of(state).read_text())
    assert len(held["intents"]) == 1, "an intent no switch runs is not kept"
    assert "DPCTL_PASSWORD" in held["intents"][next(iter(held["intents"]))]  # the name only


def test_the_record_changes_only_under_the_lock(tmp_path: Path) -> None:
    state = StateFolder("lab-dual-arp", tmp_path)
    with pytest.raises(StateError, match="without the fabric's lock"):
        deployed.record(state, _intents()[0], [LEAF])
    assert not deployed.path_of(state).exists()


def test_a_drain_renders_the_switch_from_the_intent_it_runs(tmp_path: Path) -> None:
    """The intent file changed since the switch was deployed: its drain is rendered from what
    it runs (the change waits for a deploy or `maintain --action apply`); without a record,
    or once the switch runs the new intent, from the intent given."""
    state = StateFolder("lab-dual-arp", tmp_path)
    old, new = _intents()
    fabric = build_fabric(new)
    assert deployed.fabric_running(state, fabric, LEAF) is fabric  # no record
    with state.lock("test"):
        deployed.record(state, old, [LEAF])
    running = deployed.fabric_running(state, fabric, LEAF)
    assert running.intent == old and running.intent.bgp_timers.hold == 9
    with state.lock("test"):
        deployed.record(state, new, [LEAF])
    assert deployed.fabric_running(state, fabric, LEAF) is fabric


def test_a_drain_step_deploys_the_running_intent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drain step's deploy gets the fabric of the intent the leaf runs, at the step's
    drain state (the lab test in tests/lab/test_fabric_maintain_lab.py reads it from FRR)."""
    state = StateFolder("lab-dual-arp", tmp_path)
    old, new = _intents()
    seen: list[tuple[Fabric, dict[str, Any]]] = []

    def fake_deploy(fabric: Fabric, *_args: Any, **kw: Any) -> dict[str, DeviceOutcome]:
        seen.append((fabric, kw["maintenance"]))
        return {LEAF: DeviceOutcome(ok=True)}

    monkeypatch.setattr(drain, "deploy", fake_deploy)
    op = drain.Operation(build_fabric(new), None, state)  # type: ignore[arg-type]
    with state.lock("test"):
        deployed.record(state, old, [LEAF])
        assert drain._step(op, LEAF, "graceful-shutdown").ok
    ((fabric, maintenance),) = seen
    assert fabric.intent == old and maintenance == {LEAF: "graceful-shutdown"}


@pytest.mark.parametrize(
    ("outcome", "confirmed", "after"),
    [
        (DeviceOutcome(ok=True, changed=True), True, "new"),
        (DeviceOutcome(ok=True, changed=False), True, "new"),
        (DeviceOutcome(ok=True, changed=True), False, "old"),  # waits for its confirm
        (DeviceOutcome(ok=True, changed=False), False, "new"),  # ran it already
        (DeviceOutcome(ok=False, backup="b", rolled_back=True), True, "old"),
        (DeviceOutcome(ok=False, backup="b", rolled_back=False), True, None),  # unknown
        (DeviceOutcome(ok=False, backup=None), True, "old"),  # failed before any commit
    ],
)
def test_a_deploy_records_what_it_left_running(
    tmp_path: Path, outcome: DeviceOutcome, confirmed: bool, after: str | None
) -> None:
    state = StateFolder("lab-dual-arp", tmp_path)
    old, new = _intents()
    with state.lock("test"):
        deployed.record(state, old, [LEAF])
        _record_running(build_fabric(new), state, {LEAF: outcome}, confirmed=confirmed)
    expected = {"old": old, "new": new, None: None}[after]
    assert deployed.intent_running(state, LEAF) == expected


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("{", "cannot be read"),
        ('{"format": 9}', "is not a format-1 record"),
        ('{"format": 1, "intents": {}}', "lacks its 'intents' or 'switches' table"),
        (
            '{"format": 1, "intents": {}, "switches": {"p1-g1-leaf1": "ab"}}',
            "names an intent it does not hold for p1-g1-leaf1",
        ),
        (
            '{"format": 1, "intents": {"ab": "{}"}, "switches": {"p1-g1-leaf1": "ab"}}',
            "holds an intent this dpctl cannot read",
        ),
    ],
)
def test_a_corrupt_record_is_named_with_its_repair(tmp_path: Path, text: str, detail: str) -> None:
    state = StateFolder("lab-dual-arp", tmp_path)
    deployed.path_of(state).parent.mkdir(parents=True)
    deployed.path_of(state).write_text(text)
    with pytest.raises(StateError) as caught:
        deployed.intent_running(state, LEAF)
    message = str(caught.value)
    assert detail in message and "deployed.json" in message and "dpctl deploy" in message


def test_a_drain_says_when_the_leaf_runs_another_intent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--dry-run's impact report names it: the drain keeps what the leaf runs."""
    from tests.unit.test_drain_units import _healthy_partner

    state = StateFolder("lab-dual-arp", tmp_path)
    old, new = _intents()
    fabric = build_fabric(new)
    monkeypatch.setattr(drain, "_partner_state", lambda op, partner: _healthy_partner(fabric))
    op = drain.Operation(fabric, None, state)  # type: ignore[arg-type]

    def impact() -> list[str]:
        with state.lock("test"):
            report = drain._prepare(fabric, LEAF, "drain")
            return drain._drain_locked(op, report, True, False, True).impact

    assert not any("runs another intent" in line for line in impact())
    with state.lock("test"):
        deployed.record(state, old, [LEAF])
    assert impact()[-1].startswith(f"{LEAF} runs another intent than the one given")


def test_a_deploy_refuses_a_corrupt_record_before_it_changes_anything(tmp_path: Path) -> None:
    """The record is written after the commits: a corrupt one is named before any switch is
    touched (here before any connection: the access is never used)."""
    from controller.deploy import deploy

    state = StateFolder("lab-dual-arp", tmp_path)
    deployed.path_of(state).parent.mkdir(parents=True)
    deployed.path_of(state).write_text("{")
    fabric = build_fabric(_intents()[0])
    with pytest.raises(StateError, match=r"deployed\.json"):
        deploy(fabric, None, state)  # type: ignore[arg-type]


def test_a_drain_or_gate_checks_each_switch_against_the_intent_it_runs(tmp_path: Path) -> None:
    """A rolling apply takes a SONiC fabric from lossless to lossy RoCE: plane 2's spine is
    rolled, plane 1's not yet. Against the intent file, the spine's PFC (still lossless) failed
    ``roce-pfc``, so a drain's plane verify or a gate looking at the spine failed a rollout
    that had done nothing wrong; checked as deployed, each switch passes against what it
    runs, and still fails where it is wrong for that."""
    from controller.verify import device_checks, expected
    from tests.unit.test_verify_checks import fabric_of, healthy

    state = StateFolder("lab-dual-arp", tmp_path)
    rolled = "p2-spine1"
    sonic = {"platform": "sonic", "switches": {"leaf": "CX732Q-N", "spine": "CX732Q-N"}}
    old_fabric = fabric_of("dual-arp", **sonic)
    new_fabric = fabric_of("dual-arp", **sonic, roce={"enabled": True, "mode": "lossy"})
    with state.lock("test"):
        deployed.record(state, old_fabric.intent, [SPINE])
        deployed.record(state, new_fabric.intent, [rolled])
    live = {SPINE: healthy(old_fabric, SPINE), rolled: healthy(new_fabric, rolled)}

    def failing(as_deployed: bool) -> dict[str, list[str]]:
        judged = expected(new_fabric, state, [SPINE, rolled], as_deployed)
        return {
            name: [c.check for c in device_checks(*judged[name], live[name], None, {}) if not c.ok]
            for name in (SPINE, rolled)
        }

    assert failing(as_deployed=False) == {SPINE: ["roce-pfc"], rolled: []}
    assert failing(as_deployed=True) == {SPINE: [], rolled: []}
    port = next(iter(live[SPINE]["qos"]["ecn"]))
    live[SPINE]["qos"]["ecn"][port] = []  # the spine lost its marking on one port
    assert failing(as_deployed=True) == {SPINE: ["roce-ecn"], rolled: []}
