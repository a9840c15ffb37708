"""A klish command that gives no prompt back on AsterNOS: it cannot be ended on the switch
(AsterNOS documents no way to bound one), so the driver says it may still be running there and
what to check, closes the session, and types nothing more into it: no restore behind a busy
CLI, no rollback from that session. Against the mocked device (netmiko's ReadTimeout as
netmiko raises it when the prompt does not come back in read_timeout)."""

from __future__ import annotations

from typing import Any

import pytest
from napalm.base.exceptions import CommandErrorException

from controller.platforms.asternos.driver import AsterNOSDriver
from tests.drivers.candidates import ASTERNOS_CLI

STILL_RUNNING = r"MAY STILL BE RUNNING ON THE SWITCH"


def test_a_config_line_without_prompt_is_reported_running_and_nothing_follows(
    asternos: Any,
) -> None:
    asternos.fake.hang.add("arp proxy mode anycast_gw")
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    with pytest.raises(TimeoutError) as caught:
        asternos.commit_config()
    message = str(caught.value)
    assert "p1-g1-leaf1: no prompt within 60 s after a configuration session of" in message
    assert STILL_RUNNING in message and "unverified on AsterNOS" in message
    assert "`show running-config`" in message
    assert "`dpctl rollback -f FILE --device p1-g1-leaf1`" in message
    log = list(asternos.fake.log)
    assert [kind for kind, _ in log].count("config") == 1  # no restore typed in behind it
    assert ("save", None) not in log
    assert not asternos.fake.alive  # the session closed: its hang-up may end the command
    assert asternos.is_alive() == {"is_alive": False}


def test_a_rollback_after_it_is_refused_with_what_to_check(asternos: Any) -> None:
    asternos.fake.hang.add("arp proxy mode anycast_gw")
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    with pytest.raises(TimeoutError):
        asternos.commit_config()
    sent = len(asternos.fake.log)
    with pytest.raises(CommandErrorException) as caught:
        asternos.rollback()
    message = str(caught.value)
    assert message.startswith("p1-g1-leaf1: nothing more is sent from this session, no rollback")
    assert "may still be running on the switch" in message
    assert "`dpctl rollback -f FILE --device p1-g1-leaf1` from a new session" in message
    assert len(asternos.fake.log) == sent
    with pytest.raises(CommandErrorException, match="nothing more is sent"):
        asternos.get_facts()


def test_a_write_without_prompt_is_reported_running(asternos: Any) -> None:
    asternos.fake.hang.add("write")
    asternos.load_replace_candidate(config=ASTERNOS_CLI)
    with pytest.raises(TimeoutError, match=f"after `write`: it {STILL_RUNNING}"):
        asternos.commit_config()
    assert not asternos.fake.alive


def test_a_read_without_prompt_types_no_exit_into_the_busy_shell(asternos: Any) -> None:
    asternos.fake.hang.add("show version")
    with pytest.raises(TimeoutError, match="after `show version` in `system bash`"):
        asternos.get_facts()
    commands = [entry for kind, entry in asternos.fake.log if kind == "command"]
    assert commands == ["system bash", "show version"]  # no `exit` behind it
    assert not asternos.fake.alive


def test_a_new_session_may_send_again(asternos: Any) -> None:
    asternos.fake.hang.add("show running-config")
    with pytest.raises(TimeoutError):
        asternos.get_config("running")
    asternos.open()  # the operator checked the switch
    asternos._session.overrides["show running-config"] = ASTERNOS_CLI
    assert asternos.get_config("running")["running"] == ASTERNOS_CLI


def test_read_timeout_is_the_command_timeout_unless_given() -> None:
    driver = AsterNOSDriver("sw", "admin", None, timeout=120, optional_args={})
    assert driver.read_timeout == 120
    given = AsterNOSDriver("sw", "admin", None, timeout=120, optional_args={"read_timeout": 30})
    assert given.read_timeout == 30
