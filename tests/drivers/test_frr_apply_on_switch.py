"""apply_on_switch.py (the FRR driver's apply step) against real FRR daemons: each step of a
deploy, a drain and an undrain ends in the same running config as ``frr-reload.py --reload``
gives a twin instance, with half its vtysh runs; a line the daemons refuse and an FRR whose
frr-reload.py cannot be loaded are reported, never taken for success."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.platforms.frr import apply_on_switch
from controller.platforms.frr.changes import (
    parse_reload_test,
    significant_lines,
    strip_running_header,
)
from controller.render.device import build_device
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY
from tests.frr_harness import FrrInstance, frr_available, frr_instances

pytestmark = [
    pytest.mark.frr,
    pytest.mark.skipif(
        not frr_available(), reason="needs root and Debian's frr (frrinit.sh, vtysh)"
    ),
]

LEAF = "p1-g1-leaf1"
SCRIPT = Path(apply_on_switch.__file__)
FRR_RELOAD = apply_on_switch.FRR_RELOAD


def _rendered() -> tuple[dict[str, str], list[str]]:
    """The leaf's frr.conf plain, isolated (drained) and back; and its ports."""
    data = yaml.safe_load((INVENTORY / "lab-dual-arp.yaml").read_text())
    fabric = build_fabric(intent_from_data(data))
    plain = render_fabric(fabric)[LEAF]["frr.conf"]
    drained = render_fabric(fabric, maintenance={LEAF: "isolated"})[LEAF]["frr.conf"]
    assert plain != drained
    ports = [i.name for i in build_device(fabric, LEAF).interfaces]
    return {"plain": plain, "drained": drained}, ports


@pytest.fixture(scope="module")
def twins() -> Iterator[tuple[dict[str, str], FrrInstance, FrrInstance]]:
    """Two FRR instances with the leaf's ports: one applied to by the script, one by
    frr-reload.py --reload."""
    configs, ports = _rendered()
    with frr_instances({"script": ports, "reload": ports}) as instances:
        yield configs, instances["script"], instances["reload"]


def run_script(instance: FrrInstance, conf: Path, *extra: str) -> tuple[int, dict[str, Any], Path]:
    running_out = conf.with_suffix(".running")
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--pathspace",
            instance.namespace,
            *extra,
            str(conf),
            *([] if "--test" in extra else [str(running_out)]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout, done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout), running_out


def frr_reload(instance: FrrInstance, conf: Path, mode: str) -> str:
    done = subprocess.run(
        [FRR_RELOAD, mode, "--stdout", "--pathspace", instance.namespace, str(conf)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def left(instance: FrrInstance, conf: Path) -> tuple[list[str], list[str]]:
    """What frr-reload.py --test still finds to delete and add (FRR's own judge)."""
    return parse_reload_test(frr_reload(instance, conf, "--test"))


def running(instance: FrrInstance) -> str:
    return strip_running_header(instance.show("show running-config"))


STEPS = ["plain", "drained", "plain", "plain"]
"""A first deploy, a drain, an undrain, a deploy that changes nothing."""


def compare(instance: FrrInstance, conf: Path, cache: Path) -> dict[str, Any]:
    """The script's --test over a reading taken now (as the driver's snapshot)."""
    reading = conf.with_suffix(".reading")
    reading.write_text(strip_running_header(instance.show("show running-config")))
    code, answer, _out = run_script(instance, conf, "--cache", str(cache), "--test", str(reading))
    assert code == 0 and answer["errors"] == [], answer
    return answer


def lines(entries: list[str]) -> list[str]:
    return significant_lines(entries)


def test_each_step_ends_where_frr_reload_ends_with_fewer_vtysh_runs(
    twins: tuple[dict[str, str], FrrInstance, FrrInstance], tmp_path: Path
) -> None:
    configs, script, reload = twins
    cache = tmp_path / "marked"
    for index, step in enumerate(STEPS):
        conf = tmp_path / f"{index}-{step}.conf"
        conf.write_text(configs[step])
        # the compare: frr-reload --test's answer, from the reading given (2 vtysh runs)
        asked = compare(script, conf, cache)
        assert (lines(asked["left_to_delete"]), lines(asked["left_to_add"])) == left(
            script, conf
        ), step
        assert asked["vtysh_runs"] == 2 and len(list(cache.iterdir())) == 1
        code, answer, running_out = run_script(script, conf, "--cache", str(cache))
        assert not cache.exists()  # the commit took the compare's mark and dropped it
        frr_reload(reload, conf, "--reload")
        assert code == 0 and answer["applied"], (step, answer)
        assert answer["errors"] == [] and answer["left_to_add"] == []
        assert left(script, conf) == ([], []), step  # frr-reload finds nothing left
        assert running(script) == running(reload), step  # the same config as frr-reload's
        # the record is the reading after the apply: FRR's running config, whole
        assert strip_running_header(running_out.read_text()) == running(script)
        changes = answer["deleted"] + answer["added"]
        if index < 3:
            assert changes > 0 and answer["passes"] == 2, (step, answer)
            # read and mark the running config, apply the adds, read and mark, frr-reload's
            # second pass, read and mark again, and one vtysh per delete (the candidate's
            # mark came from the compare; frr-reload --reload: 9 plus one per delete, then
            # --test 3 and the record 1)
            assert answer["vtysh_runs"] == 8 + answer["deleted"], (step, answer)
        else:  # nothing to change: one reading
            assert changes == 0 and answer["passes"] == 0 and answer["vtysh_runs"] == 2


def test_a_line_the_daemons_refuse_is_left_to_add_and_fails(
    twins: tuple[dict[str, str], FrrInstance, FrrInstance], tmp_path: Path
) -> None:
    configs, script, _reload = twins
    refused = " neighbor swp9 interface peer-group NO-SUCH-GROUP\n"
    bad = configs["plain"].replace(" bgp router-id", refused + " bgp router-id", 1)
    assert bad != configs["plain"]
    conf = tmp_path / "bad.conf"
    conf.write_text(bad)
    code, answer, _out = run_script(script, conf)  # no cache: marks the candidate itself
    assert code == 1 and not answer["applied"]
    assert any(
        "neighbor swp9 interface peer-group NO-SUCH-GROUP" in item for item in answer["left_to_add"]
    )
    assert answer["passes"] == 2  # frr-reload's second pass was tried too


def test_an_frr_reload_that_cannot_be_loaded_changes_nothing(
    twins: tuple[dict[str, str], FrrInstance, FrrInstance], tmp_path: Path
) -> None:
    configs, script, _reload = twins
    before = running(script)
    conf = tmp_path / "drained.conf"
    conf.write_text(configs["drained"])
    not_frr = tmp_path / "frr-reload.py"
    not_frr.write_text("print('not the frr-reload this script knows')\n")
    for path in (str(not_frr), str(tmp_path / "missing.py")):
        code, answer, _out = run_script(script, conf, "--frr-reload", path)
        assert code == apply_on_switch.UNAVAILABLE and not answer["applied"], answer
        assert running(script) == before
