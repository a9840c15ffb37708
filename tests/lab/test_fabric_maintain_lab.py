"""`dpctl maintain` in the lab (runs after the fabric sequence, before the hosts sequence
takes the lab down): a rolling restart of a leaf under probe flows (opt-in), a controller
killed with -9 mid-wave and resumed into a failing gate that stops the rollout with the
switch drained, then a resume that finishes it, and commit-confirm reverting by itself
(FRR).

CI runs the smaller rollouts here (one leaf; a spine; dual-ARP for the fault and kill
tests); tests/bench/bench_maintain.py rolls every switch of both planes in both modes
(docs/benchmarks.md, "Rolling maintenance").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controller import deployed as running_record
from controller.deploy import deploy
from controller.drivers import bundle
from controller.generator import build_fabric
from controller.intent import BgpTimers
from controller.maintain import state as record
from controller.maintain.rollout import resume, start
from controller.maintain.steps import Context
from controller.maintain.waves import Wave
from controller.opstate import committed
from controller.platforms.frr.driver import FrrDriver
from controller.render.engine import render_configs, structured_configs
from tests.conftest import run_cli
from tests.lab.conftest import Lab
from tests.lab.rolling import probe_during

pytestmark = pytest.mark.lab
LEAF, SPINE = "p1-g1-leaf1", "p2-spine1"


@pytest.fixture
def deployed(lab: Lab) -> Lab:
    """The lab deployed and no rollout left from an earlier test. When this module runs on
    its own the lab is at factory state: the first deploy of every switch at once can miss
    its 90 s post-check on a loaded guest (sessions to peers still committing); a second
    deploy finds the converged switches and changes only the rest.

    Dual-ARP only: what these tests prove does not depend on the dual-leaf mode (the drain
    of each mode has its own lab test), and skipping before the deploy spares the EVPN-MH
    lab four no-change deploys (about a minute of CI)."""
    if lab.mode != "dual-arp":
        pytest.skip("rollout, resume, gate and commit-confirm are mode-independent: dual-ARP")
    outcomes = deploy(lab.fabric, lab.access, lab.state)
    if not all(o.ok for o in outcomes.values()):
        outcomes = deploy(lab.fabric, lab.access, lab.state)
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}
    lab.state.rollout_path.unlink(missing_ok=True)
    return lab


def context(lab: Lab, action: str = "restart-routing", **kw: Any) -> Context:
    return Context(lab.fabric, lab.access, lab.state, action, **kw)


@pytest.mark.skipif(
    os.environ.get("DPCTL_LAB_ROLLING") != "1",
    # 0 of 166,864 lost run alone; 3 of 52,208 lost (gap 1.9 s) after the fabric module's
    # drain test in the full suite, 2026-12-06; since the drain's hand-off (2026-12-07) the
    # dual-ARP leaf waves of bench_maintain lost 0 of 74,192 and 0 of 77,664, too few runs
    # to call reliable, and the rollout takes ~14 min of the suite's 20-30 min budget
    reason="a leaf's rollout takes ~14 min and 0 lost is measured in few runs yet: "
    "DPCTL_LAB_ROLLING=1 runs it (docs/maintain.md)",
)
def test_rolling_restart_of_a_leaf_loses_nothing(deployed: Lab) -> None:
    """Dual-ARP (the fixture's); both modes in tests/bench/bench_maintain.py --mode both."""
    lab = deployed
    events: list[dict[str, object]] = []
    rollout, probe = probe_during(
        lab.state_dir,
        lab.fabric,
        lambda: start(context(lab), [Wave(1, "leaf", (LEAF,))], events.append),
    )
    print(f"\n{lab.mode} restart-routing {LEAF}: {json.dumps(probe | {'per_flow': None})}")
    assert rollout.status == "done", rollout.reason
    steps = [e["step"] for e in events if e["event"] == "done"]
    assert steps == ["drain", "action", "healthy", "undrain", "gate"]
    assert probe["flows"] == 4 and probe["received"] > 0
    assert probe["lost"] == 0 and probe["duplicates"] == 0, probe
    assert committed(lab.state.leaf_states(lab.fabric)) == {}
    saved = record.load(lab.state, lab.fabric)
    assert saved is not None and saved.status == "done" and saved.finished(LEAF)


def _port_to(lab: Lab, switch: str, peer: str) -> str:
    link = next(
        lk
        for lk in lab.fabric.links_by_device[switch]
        if {lk.a_device, lk.z_device} == {switch, peer}
    )
    return link.a_port if link.a_device == switch else link.z_port


ONE_SPINE = """
import json, sys
from pathlib import Path
from controller.cli.common import load_fabric
from controller.cli.reach import fabric_access
from controller.maintain.rollout import start
from controller.maintain.steps import Context
from controller.maintain.waves import Wave
from controller.opstate import StateFolder
intent = Path(sys.argv[1])
fabric = load_fabric(intent)
state = StateFolder.for_intent(fabric.intent.name, intent)
ctx = Context(fabric, fabric_access(fabric), state, "restart-routing")
start(ctx, [Wave(2, "spine", (sys.argv[2],))], lambda e: print(json.dumps(e), flush=True))
"""
"""A one-spine rollout in a process of its own (the CLI's rollout of a plane's spines would
take a second spine through every step too: minutes of the CI budget)."""


def test_kill_9_mid_wave_then_a_failed_gate_then_resume_finishes(deployed: Lab) -> None:
    """One spine's rollout, interrupted twice (one rollout instead of two: about 150 s of
    the CI budget, 2026-12-06): the controller killed with -9 as the action starts, shown by
    --status and resumed; the resumed rollout's gate fails on a port put down after the
    undrain, which stops it with the spine drained again; once the port is up, --resume
    finishes."""
    lab = deployed
    argv = [sys.executable, "-c", ONE_SPINE, str(lab.intent), SPINE]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # kill it as the spine's action starts (the spine is drained)
        event = json.loads(line)
        seen.append(event)
        if event.get("event") == "step" and event.get("step") == "action":
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, seen
    status = run_cli("maintain", "-f", str(lab.intent), "--status", "--json")
    report = json.loads(status.stdout)
    assert status.exit_code == 1 and report["rollout"]["status"] == "running"
    assert report["rollout"]["at"] == {"wave": 1, "switch": SPINE, "step": "action"}
    assert report["rollout"]["done_steps"] == {SPINE: "drain"}
    assert report["drained"] == [SPINE]  # named, not silent

    port = _port_to(lab, SPINE, "p2-g1-leaf1")

    def fault(event: dict[str, object]) -> None:  # after the action and undrain: a port down
        if (event.get("event"), event.get("switch"), event.get("step")) == ("step", SPINE, "gate"):
            with lab.session() as s:
                s.check(SPINE, f"ip link set {port} down")

    try:
        rollout = resume(context(lab), fault)
        assert rollout.status == "stopped", rollout.reason
        assert f"{SPINE}: gate failed" in rollout.reason and "drained again" in rollout.reason
        assert "dpctl maintain --resume" in rollout.reason
        assert committed(lab.state.leaf_states(lab.fabric)) == {SPINE: "isolated"}
        status = run_cli("maintain", "-f", str(lab.intent), "--status")
        assert status.exit_code == 1 and SPINE in status.stdout and "drained" in status.stdout
    finally:
        with lab.session() as s:
            s.check(SPINE, f"ip link set {port} up")
    resumed = run_cli("maintain", "-f", str(lab.intent), "--resume", "--json")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    final = json.loads(resumed.stdout)
    assert final["status"] == "done" and final["done_steps"] == {SPINE: "gate"}
    assert not lab.state.leaf_states(lab.fabric)  # in service, no step left open


def _driver(lab: Lab, name: str) -> FrrDriver:
    switch = lab.fabric.switch_by_name[name]
    driver = FrrDriver(switch.mgmt_ip, "root", None, 120, lab.access.switches.optional_args)
    driver.open()
    return driver


def test_frr_commit_not_confirmed_reverts_by_itself(deployed: Lab) -> None:
    lab = deployed
    files = dict(render_configs(lab.fabric, structured_configs(lab.fabric, [LEAF])).files[LEAF])
    marker = "ip prefix-list DPCTL-REVERT-TEST seq 5 permit 10.99.0.0/16"
    head, end, _tail = files["frr.conf"].rpartition("\nend\n")  # FRR reads up to `end`
    assert end, "the rendered frr.conf ends with `end`"
    files["frr.conf"] = f"{head}\n{marker}\n!{end}"
    driver = _driver(lab, LEAF)
    try:
        driver.load_replace_candidate(config=bundle.pack(files))
        driver.commit_config(revert_in=20)
        committed_at = time.monotonic()
    finally:
        driver.close()  # the controller goes away
    fresh = _driver(lab, LEAF)  # a new session sees the pending commit
    try:
        assert fresh.has_pending_commit()
        assert marker in fresh._check("vtysh -c 'show running-config'")
        time.sleep(max(0.0, 20 - (time.monotonic() - committed_at)) + 20)
        assert not fresh.has_pending_commit()
        assert marker not in fresh._check("vtysh -c 'show running-config'")
        assert fresh._check("cat /etc/frr/dpctl/reverted").strip()
    finally:
        fresh.close()
    # the switch runs its deployed config again: a deploy has nothing to change
    again = deploy(lab.fabric, lab.access, lab.state, device=LEAF, dry_run=True)[LEAF]
    assert again.ok and not again.changed, again.diff


def test_frr_confirmed_commit_stays(deployed: Lab, tmp_path: Path) -> None:
    lab = deployed
    outcome = deploy(lab.fabric, lab.access, lab.state, device=LEAF, revert_in=600)[LEAF]
    assert outcome.ok
    driver = _driver(lab, LEAF)
    try:
        if outcome.changed:
            assert driver.has_pending_commit()
            driver.confirm_commit()
        assert not driver.has_pending_commit()
    finally:
        driver.close()


RUNNING = "vtysh -c 'show running-config'"


def test_a_rolling_apply_changes_a_switch_under_commit_confirm_never_at_its_drain(
    deployed: Lab,
) -> None:
    """The intent changed (BGP timers 4/12 instead of 3/9), rolled out to one spine: its
    drain changes only its drain state, the change arrives at the action under
    commit-confirm, pending until the confirm step; then the spine runs the new intent and
    it is recorded (controller/deployed.py). Before, the drain carried the change in one
    commit with graceful-shutdown, with no commit-confirm, and the action found nothing."""
    lab = deployed
    new = lab.fabric.intent.model_copy(update={"bgp_timers": BgpTimers(keepalive=4, hold=12)})
    seen: dict[str, object] = {}

    def look(event: dict[str, object]) -> None:
        step = event.get("step")
        if (event.get("event"), event.get("switch")) != ("step", SPINE):
            return
        if step in ("action", "confirm"):
            with lab.session() as s:
                seen[str(step)] = s.check(SPINE, RUNNING)
        if step == "confirm":
            driver = _driver(lab, SPINE)
            try:
                seen["pending"] = driver.has_pending_commit()
            finally:
                driver.close()

    ctx = Context(build_fabric(new), lab.access, lab.state, "apply", revert_in=600)
    try:
        rollout = start(ctx, [Wave(2, "spine", (SPINE,))], look)
        assert rollout.status == "done", rollout.reason
        at_action = str(seen["action"])
        assert "timers bgp 3 9" in at_action and "bgp graceful-shutdown" in at_action
        assert "timers bgp 4 12" in str(seen["confirm"]) and seen["pending"] is True
        with lab.session() as s:
            now = s.check(SPINE, RUNNING)
        assert "timers bgp 4 12" in now and "bgp graceful-shutdown" not in now
        assert running_record.intent_running(lab.state, SPINE) == new
    finally:  # the lab's intent back on the spine, for the tests after this one
        back = deploy(lab.fabric, lab.access, lab.state, device=SPINE)[SPINE]
    assert back.ok, back.error
    assert running_record.intent_running(lab.state, SPINE) == lab.fabric.intent
