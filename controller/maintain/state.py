"""The rollout's state, ``rollout.json`` in the fabric's state folder: the waves, each
switch's last finished step, where the rollout is and why it stopped.

Written only under the fabric's lock, after the step it records has finished (a step that
was running when the controller died is done again on ``--resume``: every step is safe to
repeat, docs/maintain.md), atomically (a temporary file renamed over the old one).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from controller.errors import DpctlError
from controller.facts import Fabric
from controller.maintain.waves import Wave
from controller.opstate import StateFolder
from controller.verify import Check

FORMAT = 1
STEPS = ("drain", "action", "healthy", "confirm", "undrain", "gate")
"""A switch's steps in order ("confirm" only for apply: the commit-confirm)."""
Status = Literal["running", "stopped", "done"]


class RolloutError(DpctlError):
    """The rollout state is missing, unreadable or does not fit the options; nothing changed."""


@dataclass
class Rollout:
    action: str
    waves: list[Wave]
    image: str | None = None
    revert_in: int = 0
    status: Status = "running"
    done_steps: dict[str, str] = field(default_factory=dict)
    """switch -> its last finished step ("gate": the switch is done)."""
    at: dict[str, Any] = field(default_factory=dict)
    """Where it is: wave (1-based), switch, step (the one started last)."""
    reason: str = ""
    started: str = ""
    updated: str = ""

    def finished(self, name: str) -> bool:
        return self.done_steps.get(name) == STEPS[-1]

    def after(self, name: str, step: str) -> bool:
        """Whether ``name`` has finished ``step`` already."""
        last = self.done_steps.get(name)
        return last is not None and STEPS.index(last) >= STEPS.index(step)

    def drained(self) -> list[str]:
        """Switches the rollout has drained and not yet returned to service."""
        return sorted(
            n
            for n, s in self.done_steps.items()
            if STEPS.index(s) >= STEPS.index("drain") and STEPS.index(s) < STEPS.index("undrain")
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["waves"] = [w.to_dict() for w in self.waves]
        data["format"] = FORMAT
        return data


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def save(state: StateFolder, rollout: Rollout) -> None:
    """Write ``rollout.json`` (under the lock)."""
    state.require_lock()
    rollout.updated = _now()
    rollout.started = rollout.started or rollout.updated
    path = state.rollout_path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(rollout.to_dict(), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _corrupt(state: StateFolder, detail: str) -> RolloutError:
    return RolloutError(
        str(state.rollout_path),
        f"unreadable rollout state ({detail}); `dpctl verify` shows each switch's drain "
        "state; delete the file to start a new rollout",
    )


def _wave(fabric: Fabric, data: Any) -> Wave:
    names = tuple(str(n) for n in data["switches"])
    unknown = [n for n in names if n not in fabric.switch_by_name]
    if unknown:
        raise ValueError(f"{', '.join(unknown)} not in the fabric")
    return Wave(int(data["plane"]), data["role"], names)


def load(state: StateFolder, fabric: Fabric) -> Rollout | None:
    """The recorded rollout (None when there is none)."""
    try:
        data = json.loads(state.rollout_path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise _corrupt(state, str(exc)) from None
    try:
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
        steps = {str(k): str(v) for k, v in data["done_steps"].items()}
        if any(v not in STEPS for v in steps.values()):
            raise ValueError(f"a step not one of {', '.join(STEPS)}")
        return Rollout(
            action=str(data["action"]),
            waves=[_wave(fabric, w) for w in data["waves"]],
            image=data.get("image"),
            revert_in=int(data.get("revert_in") or 0),
            status=data["status"],
            done_steps=steps,
            at=dict(data.get("at") or {}),
            reason=str(data.get("reason") or ""),
            started=str(data.get("started") or ""),
            updated=str(data.get("updated") or ""),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _corrupt(state, str(exc)) from None


def unfinished_check(state: StateFolder, fabric: Fabric) -> Check | None:
    """For `dpctl verify`: a rollout that did not finish is a failing check naming where it
    stopped and the switches it left drained (no switch is left drained silently)."""
    rollout = load(state, fabric)
    if rollout is None or rollout.status == "done":
        return None
    at = rollout.at
    where = f"wave {at.get('wave')}, {at.get('switch')}, step {at.get('step')}" if at else "start"
    drained = ", ".join(rollout.drained()) or "none"
    return Check(
        "fabric",
        f"rollout ({rollout.action})",
        False,
        "no rollout unfinished (dpctl maintain --resume finishes it)",
        f"{rollout.status} at {where}; drained by it: {drained}",
    )
