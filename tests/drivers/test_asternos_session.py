"""write's confirmation in a rendered AsterNOS session is a session answer, not configuration."""

from __future__ import annotations

from controller.drivers.common import normalize_config
from controller.platforms.asternos.driver import session_lines

SESSION = "configure terminal\ninterface vlan 10\n description y\nexit\nend\nwrite\ny\n"


def test_write_answer_is_not_pushed() -> None:
    assert session_lines(SESSION) == ["interface vlan 10", "description y", "exit"]
    # a `y` that does not answer write is kept (and the checker would refuse it)
    assert session_lines("configure terminal\ny\nend\n") == ["y"]


def test_write_answer_is_not_configuration() -> None:
    assert normalize_config(SESSION) == "interface vlan 10\n description y\n"
    assert normalize_config("y\n") == "y\n"
