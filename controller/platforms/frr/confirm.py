"""Commit-confirm on a Linux + FRR switch (NAPALM's ``commit_config(revert_in=N)``,
``confirm_commit``, ``has_pending_commit``): a timer on the switch itself.

A commit with ``revert_in`` first uploads a revert script (the rollback point the commit
saves, put back: the Linux files rebuilt as ``rollback()`` does, FRR through frr-reload.py)
and starts ``sleep N; sh revert.sh`` in a session of its own (``setsid``: it outlives the
SSH session and the controller), its PID in ``revert.pid``; only then does the commit apply
anything. ``confirm_commit`` kills that session; ``has_pending_commit`` asks the switch
whether the timer still runs, so both work from a new session, a new driver or a new
controller. A switch whose controller disappears reverts by itself after N seconds.

Why not ``systemd-run --on-active`` (SONiC's way): the lab's switches are namespaces with no
systemd, as are many Linux boxes running FRR in a container; ``setsid`` + ``sleep`` runs
everywhere a shell does. What the revert does not put back: the ARP-to-host agent keeps the
code of the commit (its configuration file is restored, the agent re-reads it on restart).
"""

from __future__ import annotations

import shlex

from controller.platforms.frr.changes import LINUX_FILES, MAIN_FILE, rebuild_script

REVERT_PID = "revert.pid"
REVERT_SCRIPT = "revert.sh"
REVERT_LOG = "revert.log"
FRR_RELOAD = "/usr/lib/frr/frr-reload.py"


def revert_script(
    state: str, rollback: str, applied: dict[str, str], saved: dict[str, str], marker: str
) -> str:
    """The script that puts ``saved`` (the files of the rollback folder ``rollback``) back
    in place of ``applied`` (what the commit applies)."""
    _files, linux = rebuild_script(state, applied, saved, marker)
    if all(applied.get(n) == saved.get(n) for n in LINUX_FILES):
        linux = []
    lines = [  # the PID first: from here on the commit is no longer pending (or confirmable)
        f"rm -f {state}/{REVERT_PID} {state}/applied-running.conf",
        f"rm -rf {state}/current && mkdir -p {state}/current && "
        f"cp -a {shlex.quote(rollback)}/. {state}/current/",
        *linux,
    ]
    if MAIN_FILE in saved:
        lines.append(
            f"cat {state}/current/{MAIN_FILE} > /etc/frr/frr.conf && "
            f"{FRR_RELOAD} --reload --stdout /etc/frr/frr.conf > {state}/{REVERT_LOG} 2>&1"
        )
    lines.append(f"rm -rf {shlex.quote(rollback)} {state}/{REVERT_SCRIPT}")
    lines.append(f"date -u +%FT%TZ > {state}/reverted")
    return "\n".join(lines) + "\n"


def start_timer(state: str, seconds: int) -> str:
    """Start the timer (a session of its own) and record its PID (= its process group)."""
    if seconds < 1:
        raise ValueError(f"revert_in must be at least 1 second, not {seconds}")
    inner = f"sleep {int(seconds)}; sh {state}/{REVERT_SCRIPT}"
    return (
        f"rm -f {state}/reverted; setsid sh -c {shlex.quote(inner)} </dev/null >/dev/null 2>&1 & "
        f"echo $! > {state}/{REVERT_PID}"
    )


def pending(state: str) -> str:
    """Prints ``pending`` while the timer runs."""
    return (
        f'p=$(cat {state}/{REVERT_PID} 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" '
        "2>/dev/null && echo pending; true"
    )


def cancel(state: str) -> str:
    """Stop the timer (its whole process group), forget it; prints ``cancelled`` if it ran."""
    return (
        f"p=$(cat {state}/{REVERT_PID} 2>/dev/null); "
        f'if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill -TERM "-$p" && echo cancelled; '
        f"fi; rm -f {state}/{REVERT_PID} {state}/{REVERT_SCRIPT}; true"
    )
