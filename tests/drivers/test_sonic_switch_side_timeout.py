"""A command the SONiC driver gave up on does not go on changing the switch: ``config replace``
and FRR's frr-reload.py (in the bgp container) end on the switch before the command timeout,
with what they started, and the rollback runs after them, not alongside.

Real sshd on 127.0.0.1, real paramiko, the driver's own commit; the switch's commands are
fakes on the sessions' PATH (tests/drivers/real_sshd.py): ``sudo``, sonic-utilities' ``config``
and ``show``, ``vtysh``, ``systemctl``, and a ``docker`` whose ``exec`` runs the command
outside the client's process tree, as Docker does (ending the client does not end it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from napalm.base.exceptions import ReplaceConfigException

from controller.drivers.bundle import pack
from controller.drivers.switch_side import SWITCH_SIDE_MARGIN_S
from controller.platforms.sonic import driver as sonic_module
from controller.platforms.sonic.driver import SonicDriver
from tests.drivers.real_sshd import end_and_list_alive, needs_sshd, sshd

pytestmark = needs_sshd

TIMEOUT_S = SWITCH_SIDE_MARGIN_S + 4  # ended after 5 s on the switch

HANGS = """echo $$ > {state}/{name}.pid
sleep 300 &
echo $! > {state}/{name}-child.pid
wait
"""
FAKES = {
    "sudo": '[ "$1" = -n ] && shift\nexec "$@"\n',
    # sonic-utilities' `config`: every call logged; `replace` hangs with a child
    "config": 'echo "$1 $(date +%s.%N)" >> {state}/config.log\n'
    'if [ "$1" = replace ]; then\n' + HANGS.format(state="{state}", name="replace") + "fi\n",
    "show": "echo '{{}}'\n",  # show runningconfiguration all: an empty CONFIG_DB
    "vtysh": 'echo "frr version 8.5"\n',
    "systemctl": "echo inactive\nexit 3\n",  # no revert timer
    # `docker exec C CMD...`: CMD in a session of its own, its output through files
    "docker": 'if [ "$1" = cp ]; then cp "$2" "${{3#*:}}"; exit; fi\n'
    "shift 2\nout=$(mktemp -d {state}/exec.XXXXXX)\n"
    'setsid "$@" > "$out/o" 2> "$out/e" < /dev/null &\n'
    'wait $!; rc=$?; cat "$out/o"; cat "$out/e" >&2; exit $rc\n',
    # frr-reload.py: hangs with a child on a candidate, applies a rollback point at once
    "frr-reload.py": 'echo "$* $(date +%s.%N)" >> {state}/frr-reload.log\n'
    'case "$*" in *candidate*)\n' + HANGS.format(state="{state}", name="reload") + ";; esac\n",
}


@pytest.fixture
def switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    state = tmp_path / "state"
    bin_dir = tmp_path / "bin"
    for folder in (state, bin_dir):
        folder.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body.format(state=state))
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sonic_module, "REMOTE_DIR", str(tmp_path / "remote" / "dpctl"))
    monkeypatch.setattr(sonic_module, "FRR_RELOAD", str(bin_dir / "frr-reload.py"))
    (tmp_path / "remote").mkdir()
    with sshd(tmp_path, path_first=bin_dir) as args:
        driver = SonicDriver(
            "127.0.0.1", "root", None, optional_args={**args, "command_timeout": TIMEOUT_S}
        )
        driver.open()
        try:
            yield {"driver": driver, "state": state}
        finally:
            driver.close()
            # what the fakes started, by PID, so a failing test leaves nothing running
            end_and_list_alive({p.name: int(p.read_text()) for p in state.glob("*.pid")})


def _commit(switch: dict[str, Any], files: dict[str, str]) -> tuple[str, float]:
    switch["driver"].load_replace_candidate(config=pack(files))
    began = time.monotonic()
    with pytest.raises(ReplaceConfigException) as caught:
        switch["driver"].commit_config()
    return str(caught.value), time.monotonic() - began


def _still_running(state: Path, name: str) -> dict[str, int]:
    pids = {p.name: int(p.read_text()) for p in state.glob(f"{name}*.pid")}
    assert len(pids) == 2, f"the fake {name} did not start: {pids}"
    return end_and_list_alive(pids)


def test_a_config_replace_past_its_bound_ends_on_the_switch_before_the_rollback(
    switch: dict[str, Any],
) -> None:
    message, took = _commit(switch, {"config_db.json": '{"VLAN": {}}\n'})
    assert "127.0.0.1: commit rejected (127.0.0.1: ended on the switch after 5 s" in message
    assert "(14 s): 'config replace " in message and "; rolled back to dpctl-" in message
    assert took < TIMEOUT_S, f"the controller waited {took:.1f} s"
    assert not _still_running(switch["state"], "replace")
    calls = [line.split() for line in (switch["state"] / "config.log").read_text().splitlines()]
    assert [c[0] for c in calls] == ["checkpoint", "replace", "rollback"]
    assert float(calls[2][1]) - float(calls[1][1]) >= 5  # the rollback came after the bound


def test_frr_reload_past_its_bound_ends_inside_the_bgp_container(
    switch: dict[str, Any],
) -> None:
    frr = "! >>> bgpd.conf\nrouter bgp 65100\n"
    message, took = _commit(switch, {"frr.conf": frr})
    assert "127.0.0.1: commit rejected (127.0.0.1: ended on the switch after 5 s" in message
    assert took < TIMEOUT_S, f"the controller waited {took:.1f} s"
    assert not _still_running(switch["state"], "reload")  # the container's process, too
    reloads = (switch["state"] / "frr-reload.log").read_text().splitlines()
    assert "candidate.bgpd.conf" in reloads[0] and len(reloads) == 3  # then both daemons' own
