"""`dpctl maintain` without a fabric to touch: --plan, --status, the rollout record, bad
input and refusals (each named, exit 2, nothing changed)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from controller.generator import build_fabric
from controller.intent import load_intent
from controller.maintain import state as record
from controller.maintain.rollout import MaintainRefused, start, steps_of
from controller.maintain.state import Rollout, RolloutError
from controller.maintain.steps import Context, neighbours
from controller.maintain.waves import Wave, check_image, plan_waves
from controller.opstate import StateFolder
from tests.conftest import INVENTORY, run_cli, run_json, switch_access

EXAMPLE = INVENTORY / "examples" / "cx864e-16384-evpn-mh.yaml"
LAB = INVENTORY / "lab-dual-arp.yaml"


def test_plan_of_the_16384_gpu_example_in_under_5_s() -> None:
    started = time.perf_counter()
    code, report = run_json("maintain", "-f", str(EXAMPLE), "--action", "restart-routing", "--plan")
    seconds = time.perf_counter() - started
    assert code == 0 and seconds < 5, seconds
    waves = report["waves"]
    assert sum(len(w["switches"]) for w in waves) == 384
    leaf = waves[0]
    assert leaf["role"] == "leaf" and leaf["impact"]["completion_time_ratio"] == 2.0
    assert leaf["impact"]["aux_ratio"] > 10  # what a plain failure would cost
    assert report["simulator_runs"] <= 6  # one run per shape (two for a leaf shape)


def test_plan_with_budget_splits_spine_waves_and_refuses_a_leaf_alone() -> None:
    code, report = run_json(
        "maintain", "-f", str(LAB), "--action", "reboot", "--plan", "--max-capacity-loss", "60"
    )
    assert code == 0
    spines = [w for w in report["waves"] if w["role"] == "spine"]
    assert [len(w["switches"]) for w in spines] == [2, 2]  # the budget lets both go at once
    result = run_cli(
        "maintain", "-f", str(LAB), "--action", "reboot", "--plan", "--max-capacity-loss", "10"
    )
    assert result.exit_code == 2
    assert "p1-g1-leaf1" in result.stderr and "over --max-capacity-loss 10%" in result.stderr


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ((), "--action"),
        (("--action", "upgrade"), "--image"),
        (("--action", "reboot", "--image", "http://x/i.bin"), "--image"),
        (("--action", "upgrade", "--image", "sonic.bin"), "not an image URL"),
        (("--action", "upgrade", "--image", "http://x/"), "not an image URL"),
        (("--action", "upgrade", "--image", "javascript://x/a.bin"), "not an image URL"),
        (("--action", "upgrade", "--image", "http://x/a.bin; reboot"), "spaces or control"),
        (("--action", "reboot", "--role", "router"), "--role"),
        (("--action", "reboot", "--workload", "allreduce"), "--workload"),
    ],
)
def test_bad_input_is_named(args: tuple[str, ...], where: str) -> None:
    result = run_cli("maintain", "-f", str(LAB), "--plan", *args)
    assert result.exit_code == 2 and where in result.stderr


@pytest.mark.parametrize("image", ["http://10.0.0.5/sonic.bin", "/host/images/sonic.bin"])
def test_an_image_url_or_absolute_path_is_taken(image: str) -> None:
    check_image(image)  # no error


def test_status_without_and_with_a_rollout(tmp_path: Path) -> None:
    state = ["--state-dir", str(tmp_path)]
    result = run_cli(*state, "maintain", "-f", str(LAB), "--status")
    assert result.exit_code == 0 and "no rollout recorded" in result.stdout
    fabric = build_fabric(load_intent(LAB))
    folder = StateFolder.for_intent(fabric.intent.name, LAB, tmp_path)
    waves = plan_waves(fabric, "restart-routing")
    rollout = Rollout("restart-routing", waves, done_steps={"p1-g1-leaf1": "healthy"})
    rollout.status, rollout.at = "stopped", {"wave": 1, "switch": "p1-g1-leaf1", "step": "undrain"}
    with folder.lock("test"):
        record.save(folder, rollout)
    code, report = run_json(*state, "maintain", "-f", str(LAB), "--status")
    assert code == 1 and report["rollout"]["status"] == "stopped"
    assert report["rollout"]["at"]["switch"] == "p1-g1-leaf1"
    loaded = record.load(folder, fabric)
    assert loaded is not None and loaded.drained() == ["p1-g1-leaf1"]
    assert loaded.waves == waves and loaded.after("p1-g1-leaf1", "action")
    assert not loaded.after("p1-g1-leaf1", "undrain")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("{oops", "unreadable rollout state"),
        ('{"format": 9}', "format 9"),
        (
            '{"format": 1, "action": "reboot", "status": "running", "done_steps": {}, '
            '"waves": [{"plane": 1, "role": "leaf", "switches": ["nope"]}]}',
            "nope not in the fabric",
        ),
    ],
)
def test_corrupt_rollout_state_is_named(tmp_path: Path, text: str, detail: str) -> None:
    fabric = build_fabric(load_intent(LAB))
    folder = StateFolder.for_intent(fabric.intent.name, LAB, tmp_path)
    folder.path.mkdir(parents=True)
    folder.rollout_path.write_text(text)
    with pytest.raises(RolloutError, match=detail):
        record.load(folder, fabric)
    result = run_cli("--state-dir", str(tmp_path), "maintain", "-f", str(LAB), "--status")
    assert result.exit_code == 2 and "rollout.json" in result.stderr


def test_save_needs_the_lock(tmp_path: Path) -> None:
    folder = StateFolder("f", tmp_path)
    with pytest.raises(Exception, match="without the fabric's lock"):
        record.save(folder, Rollout("reboot", []))


def _context(tmp_path: Path, intent: Path, action: str, args: dict[str, Any]) -> Context:
    fabric = build_fabric(load_intent(intent))
    access = switch_access("admin", "x", args)
    return Context(fabric, access, StateFolder(fabric.intent.name, tmp_path), action)


@pytest.mark.parametrize("action", ["restart-routing", "reboot", "apply", "upgrade"])
def test_asternos_refused_before_anything(tmp_path: Path, action: str) -> None:
    ctx = _context(tmp_path, INVENTORY / "examples" / "cx732q-256-dual-arp.yaml", action, {})
    waves = plan_waves(ctx.fabric, action)  # type: ignore[arg-type]
    with pytest.raises(MaintainRefused, match="AsterNOS: no vendor-documented command"):
        start(ctx, waves)
    assert not ctx.state.rollout_path.exists() and not ctx.state.lock_path.exists()


def test_frr_upgrade_refused_outside_the_lab(tmp_path: Path) -> None:
    ctx = _context(tmp_path, LAB, "upgrade", {})
    with pytest.raises(MaintainRefused, match="no NOS image"):
        start(ctx, plan_waves(ctx.fabric, "upgrade"))
    assert not ctx.state.rollout_path.exists()


def test_an_unfinished_rollout_blocks_a_new_one(tmp_path: Path) -> None:
    ctx = _context(tmp_path, LAB, "reboot", {})
    with ctx.state.lock("test"):
        record.save(ctx.state, Rollout("reboot", [Wave(1, "spine", ("p1-spine1",))]))
    with pytest.raises(MaintainRefused, match="finish it with --resume"):
        start(ctx, plan_waves(ctx.fabric, "reboot"))
    assert json.loads(ctx.state.rollout_path.read_text())["action"] == "reboot"


def test_steps_and_neighbours() -> None:
    assert steps_of("apply") == ("drain", "action", "healthy", "confirm", "undrain", "gate")
    assert "confirm" not in steps_of("reboot")
    fabric = build_fabric(load_intent(LAB))
    assert neighbours(fabric, "p1-g1-leaf1") == ["p1-spine1", "p1-spine2", "p2-g1-leaf1"]
    assert neighbours(fabric, "p1-spine1") == ["p1-g1-leaf1", "p1-g1-leaf2"]


def test_verify_names_an_unfinished_rollout(tmp_path: Path) -> None:
    fabric = build_fabric(load_intent(LAB))
    folder = StateFolder.for_intent(fabric.intent.name, LAB, tmp_path)
    assert record.unfinished_check(folder, fabric) is None
    rollout = Rollout("reboot", plan_waves(fabric, "reboot"), done_steps={"p1-spine1": "action"})
    rollout.at = {"wave": 2, "switch": "p1-spine1", "step": "healthy"}
    with folder.lock("test"):
        record.save(folder, rollout)
    check = record.unfinished_check(folder, fabric)
    assert check is not None and not check.ok
    assert check.found == "running at wave 2, p1-spine1, step healthy; drained by it: p1-spine1"
    rollout.status = "done"
    with folder.lock("test"):
        record.save(folder, rollout)
    assert record.unfinished_check(folder, fabric) is None


def test_resume_returns_a_switch_a_failed_gate_drained_again(tmp_path: Path) -> None:
    from controller.maintain.rollout import _reconcile

    ctx = _context(tmp_path, LAB, "reboot", {})
    devices = set(ctx.fabric.switch_by_name)
    steps = {"p1-spine1": "undrain", "p1-spine2": "undrain", "p1-g1-leaf1": "gate"}
    rollout = Rollout("reboot", plan_waves(ctx.fabric, "reboot"), done_steps=dict(steps))
    with ctx.state.lock("test"):
        for name in ("p1-spine1", "p1-g1-leaf1"):  # a failed gate's re-drain; an operator's
            ctx.state.begin_step(devices, name, "isolated")
            ctx.state.end_step(devices, name, committed_ok=True)
    _reconcile(ctx, rollout)
    assert rollout.done_steps == {**steps, "p1-spine1": "healthy"}
