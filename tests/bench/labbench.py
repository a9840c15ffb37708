"""What the lab benches share: a deployed lab, and how long until it verifies healthy."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from controller.connection import Access, lab_access
from controller.deploy import deploy
from controller.facts import Fabric
from controller.labfabric import bring_up
from controller.verify import verify


def exit_on_sigterm() -> None:
    """A bench stopped with SIGTERM unwinds (its ``finally`` takes the lab down) instead of
    dying at once and leaving the lab's QEMU running: a stopped matrix run did that."""
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))


def deployed_lab(
    fabric: Fabric, state_dir: Path, prefix: str, lab: dict[str, Any] | None = None
) -> Access:
    """The fabric's lab up (servers provisioned) and both planes deployed; ``lab``, when
    given, receives what `bring_up` reported (the guest's kernel, each server's set-up)."""
    result = bring_up(fabric, state_dir, prefix=prefix)
    if lab is not None:
        lab.update(result)
    access = lab_access(state_dir)
    assert access is not None
    outcomes = deploy(fabric, access=access)
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}
    return access


def seconds_to_healthy(fabric: Fabric, access: Access, timeout: float = 180.0) -> float | None:
    """Seconds until every verify check passes, polled every 5 s; None after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(c.ok for c in verify(fabric, access=access)):
            return time.monotonic() - start
        time.sleep(5)
    return None
