"""The maintenance actions on driver.dpctl and commit-confirm from a new session, per
platform, against the mocked devices (recordings plus the device's timer state)."""

from __future__ import annotations

from typing import Any

import pytest
from napalm.base.exceptions import CommandErrorException, CommitError

from controller.drivers.contract import ActionRefused
from controller.platforms.frr import actions
from controller.platforms.frr.driver import FrrDriver
from controller.platforms.sonic.driver import SonicDriver
from tests.drivers.candidates import SONIC_BUNDLE
from tests.drivers.conftest import FakeShell, RevertTimer


def test_sonic_actions_send_the_documented_commands(sonic: Any) -> None:
    sonic.fake.overrides.update(
        {
            "sudo -n systemctl restart bgp": "",
            "sudo -n sonic-installer install -y 'http://images/sonic x.bin'": "Done",
            "sudo -n sh -c 'sleep 2; reboot' >/dev/null 2>&1 </dev/null &": "",
        }
    )
    sonic.dpctl.restart_routing()
    sonic.dpctl.install_image("http://images/sonic x.bin")
    sonic.dpctl.reboot()
    assert sonic.fake.commands[-3:] == list(sonic.fake.overrides)


def test_sonic_failed_install_is_an_error(sonic: Any) -> None:
    sonic.fake.failures["sudo -n sonic-installer install"] = ("Error: image not valid", 1)
    with pytest.raises(CommandErrorException, match="image not valid"):
        sonic.dpctl.install_image("http://x/bad.bin")


def test_sonic_pending_commit_seen_and_confirmed_from_a_new_session() -> None:
    timer = RevertTimer()  # the device's: both sessions reach the same switch
    shells: list[FakeShell] = []

    def factory(**params: Any) -> FakeShell:
        shells.append(FakeShell(timer, **params))
        return shells[-1]

    def session() -> SonicDriver:
        driver = SonicDriver(
            "p1-g1-leaf1", "admin", "x", optional_args={"connection_factory": factory}
        )
        driver.open()
        return driver

    first = session()
    first.load_replace_candidate(config=SONIC_BUNDLE)
    first.commit_config(revert_in=120)
    first.close()  # the controller that committed is gone
    second = session()
    assert second.has_pending_commit()
    with pytest.raises(CommitError, match="pending confirmation"):
        second.load_replace_candidate(config=SONIC_BUNDLE)
        second.commit_config()
    second.confirm_commit()
    assert "sudo -n systemctl stop dpctl-revert.timer" in shells[-1].commands
    assert not second.has_pending_commit()
    with pytest.raises(CommitError, match="no commit is pending"):
        second.confirm_commit()


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda d: d.dpctl.restart_routing(), "a routing restart"),
        (lambda d: d.dpctl.reboot(), "a reboot"),
        (lambda d: d.dpctl.install_image("http://x/i.bin"), "an image install"),
    ],
)
def test_asternos_refuses_with_the_reason(asternos: Any, call: Any, what: str) -> None:
    before = list(asternos.fake.log)
    with pytest.raises(ActionRefused, match=f"no klish command for {what}") as exc:
        call(asternos)
    assert exc.value.where == "p1-g1-leaf1" and "nothing was changed" in exc.value.reason
    assert asternos.fake.log == before  # nothing sent to the switch


def test_frr_restart_routing_runs_the_script_and_checks_its_answer(frr: FrrDriver) -> None:
    frr.fake.overrides[actions.restart_routing()] = "restarted\n"
    frr.dpctl.restart_routing()
    frr.fake.overrides[actions.reboot()] = "timeout\n"
    with pytest.raises(CommandErrorException, match="reboot: timeout"):
        frr.dpctl.reboot()


def test_frr_upgrade_refused_unless_the_lab_stands_in(frr: FrrDriver) -> None:
    with pytest.raises(ActionRefused, match="no NOS image"):
        frr.dpctl.install_image("http://x/i.bin")
    frr.optional_args["image_stand_in"] = True
    frr.dpctl.install_image("http://x/i.bin")  # the rollout's reboot stand-in follows
    assert frr.fake.commands == []


def test_frr_restart_script_waits_for_new_pids() -> None:
    script = actions.restart_daemons(("bgpd", "bfdd"))
    assert "kill -TERM $p" in script and "/run/frr/$d.pid" in script
    assert script.endswith("echo timeout")
    assert "systemctl restart frr" in actions.restart_routing()
