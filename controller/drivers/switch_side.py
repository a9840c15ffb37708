"""A command that changes a switch ends on the switch before the controller stops waiting.

A command the controller has given up on must not go on changing the switch: it would race
the rollback that follows a failed commit (seed-scale lab, 2026-12-07: ``frr-reload.py``
still running 20 minutes after its controller). Where the switch's shell is Linux with GNU
coreutils (Linux + FRR, community SONiC), such a command runs under coreutils ``timeout``,
which ends it and what it started (its process group: ``timeout`` makes one of its own)
:data:`SWITCH_SIDE_MARGIN_S` before the command timeout, SIGKILL :data:`KILL_AFTER_S`
later for what ignored the SIGTERM. SONiC's own scripts use ``timeout`` the same way
(sonic-utilities ``scripts/fast-reboot``: ``timeout 10s config warm_restart disable``,
exit status 124 read as "timeout"; ``scripts/generate_ssd_dump``: ``timeout -k``).

AsterNOS's klish has no such command in its documents: its driver says so instead
(``controller/platforms/asternos/driver.py``).
"""

from __future__ import annotations

SWITCH_SIDE_MARGIN_S = 10
"""A command that changes the switch is ended there this much before the command timeout."""
MIN_SWITCH_SIDE_S = 5
KILL_AFTER_S = 5
"""SIGKILL this long after timeout's SIGTERM, for what ignored it."""
ENDED_BY_TIMEOUT = (124, 137)
"""coreutils timeout's exit status: 124 after its SIGTERM, 137 (128 + 9) after the SIGKILL."""


def seconds(hostname: str, option: str, value: object) -> float:
    """A driver's timeout option (optional_args), checked: a number of seconds above 0."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = float("nan")
    if not number > 0:
        raise ValueError(
            f"{hostname}: optional_args {option}={value!r}: a number of seconds above 0"
        )
    return number


def bound_s(command_timeout: float) -> int:
    """How long a command may run on the switch: the command timeout less the margin."""
    return max(MIN_SWITCH_SIDE_S, int(command_timeout) - SWITCH_SIDE_MARGIN_S)


def bounded(argv: str, bound: int) -> str:
    """``argv`` (a command line) under coreutils timeout, ended after ``bound`` seconds."""
    return f"timeout -k {KILL_AFTER_S} {bound} {argv}"


def ended_by_bound(status: int, seconds: float, bound: int) -> bool:
    """Whether an exit status is timeout's own: 124/137 after the bound, not a command's own
    137 (the OOM killer's SIGKILL) within it."""
    return status in ENDED_BY_TIMEOUT and seconds >= bound


def raise_if_ended(
    hostname: str, what: str, status: int, seconds: float, command_timeout: float
) -> None:
    """TimeoutError naming ``what`` if its exit status after ``seconds`` is the bound's."""
    bound = bound_s(command_timeout)
    if ended_by_bound(status, seconds, bound):
        raise TimeoutError(
            f"{hostname}: ended on the switch after {bound} s, {SWITCH_SIDE_MARGIN_S} s inside "
            f"the command timeout ({command_timeout:g} s): {what[:80]!r}"
        )
