"""A script the FRR driver runs on a switch ends there when the controller would stop waiting
for it: a commit given up on must not go on changing the switch while the rollback runs
(seed-scale lab, 2026-12-07: ``frr-reload.py`` still running 20 minutes after its controller).

Real sshd on 127.0.0.1 (a port of its own, keys made for the test), real paramiko, the
driver's own ``_with_files``; the "switch" is this machine, its state folder a temporary one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.drivers.switch_side import SWITCH_SIDE_MARGIN_S
from controller.platforms.frr import driver as frr_module
from controller.platforms.frr.driver import FrrDriver
from tests.drivers.real_sshd import end_and_list_alive, needs_sshd, sshd

pytestmark = needs_sshd


@pytest.fixture
def switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """An sshd letting root in with a key made here; the driver's state folder in tmp_path."""
    with sshd(tmp_path) as args:
        state = tmp_path / "state"
        monkeypatch.setattr(frr_module, "STATE", str(state))
        yield {"args": args, "state": state}


def _driver(switch: dict[str, Any], timeout: int) -> FrrDriver:
    driver = FrrDriver("127.0.0.1", "root", None, timeout=timeout, optional_args=switch["args"])
    driver.open()
    return driver


def test_a_script_past_its_bound_is_ended_on_the_switch_with_what_it_started(
    switch: dict[str, Any],
) -> None:
    state = switch["state"]
    driver = _driver(switch, timeout=SWITCH_SIDE_MARGIN_S + 4)  # ended after 5 s there
    began = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="ended on the switch after 5 s"):
            driver._with_files(
                {"note": "x"},
                f"echo $$ > {state}/script.pid\nsleep 300 &\necho $! > {state}/child.pid\nwait",
            )
    finally:
        driver.close()
    took = time.monotonic() - began
    assert took < SWITCH_SIDE_MARGIN_S + 4, f"the controller waited {took:.1f} s"
    assert (state / "note").read_text() == "x"  # the files came first
    time.sleep(0.5)
    left = {name: int((state / name).read_text()) for name in ("script.pid", "child.pid")}
    running = end_and_list_alive(left)
    assert not running, f"still running on the switch: {running}"


def test_a_script_within_its_bound_answers_as_before(switch: dict[str, Any]) -> None:
    driver = _driver(switch, timeout=30)
    try:
        rc, out, err = driver._with_files({}, "echo out; echo err >&2; exit 3")
    finally:
        driver.close()
    assert (rc, out, err) == (3, "out\n", "err\n")
