"""What the lab benches share: a deployed lab, and how long until it verifies healthy."""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.access import FabricAccess
from controller.deploy import deploy
from controller.facts import Fabric
from controller.lab.access import lab_access
from controller.lab.fabric import bring_up
from controller.opstate import StateFolder
from controller.verify import verify


def exit_on_sigterm() -> None:
    """A bench stopped with SIGTERM unwinds (its ``finally`` takes the lab down) instead of
    dying at once and leaving the lab's QEMU running: a stopped matrix run did that."""
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))


@dataclass(frozen=True)
class Reach:
    """How a bench reaches its lab fabric: the lab's access and the fabric's state folder."""

    access: FabricAccess
    state: StateFolder


def lab_reach(fabric: Fabric, state_dir: Path) -> Reach:
    """The running lab's access, and the state folder (DPCTL_STATE_DIR or ./.dpctl)."""
    access = lab_access(state_dir)
    assert access is not None, f"no lab runs in {state_dir}"
    return Reach(access, StateFolder.for_intent(fabric.intent.name, None))


def deployed_lab(
    fabric: Fabric, state_dir: Path, prefix: str, lab: dict[str, Any] | None = None
) -> Reach:
    """The fabric's lab up (servers provisioned) and both planes deployed; ``lab``, when
    given, receives what `bring_up` reported (the guest's kernel, each server's set-up)."""
    result = bring_up(fabric, state_dir, prefix=prefix)
    if lab is not None:
        lab.update(result)
    reach = lab_reach(fabric, state_dir)
    outcomes = deploy(fabric, reach.access, reach.state)
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}
    return reach


def seconds_to_healthy(fabric: Fabric, reach: Reach, timeout: float = 180.0) -> float | None:
    """Seconds until every verify check passes, polled every 5 s; None after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(c.ok for c in verify(fabric, reach.access, reach.state)):
            return time.monotonic() - start
        time.sleep(5)
    return None
