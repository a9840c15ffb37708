"""One embedded lab per dual-leaf mode, shared by the fabric and the hosts lab modules.

Building a lab and deploying both planes cost about four minutes per mode in the emulated
(TCG) guest; the two modules used to pay it twice. pytest runs every test of one mode (the fabric
sequence, then the hosts sequence, in file order) before the next mode's lab comes up.

The lab comes up with provisioned servers (as `dpctl lab up` does); the hosts sequence
first wipes the servers' runtime state to start from bare ones, and its last test takes the
lab down, so that no other lab test (test_lab_integration builds its own guest) runs beside
this one. The fixture's finaliser takes it down again, whatever failed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.access import FabricAccess
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.lab import LabSession, down, substrate
from controller.lab.access import lab_access
from controller.lab.errors import LabSetupError
from controller.lab.fabric import bring_up, lab_dir
from controller.opstate import StateFolder
from tests.conftest import INVENTORY, xdist_group_of

PREFIX = os.environ.get("DPCTL_TEST_LAB_PREFIX", "dpi-")
"""Namespaces, taps, bridges and the guest process of these modules (set it to run two lab
suites at once on one machine): the dual-ARP lab's; the others' start with its first three
characters (``MODE_PREFIX``, test_multi_lab.py)."""
MODE_PREFIX = {"dual-arp": PREFIX, "evpn-mh": PREFIX[:3] + "e-"}
"""Each mode's lab its own prefix: the two run at once, on two pytest-xdist workers."""


@dataclass
class Lab:
    mode: str
    intent: Path
    fabric: Fabric
    state_dir: Path
    access: FabricAccess
    state: StateFolder
    """The fabric's operator state folder (under DPCTL_STATE_DIR)."""
    up: dict[str, Any]
    """What `bring_up` reported: the lab's kernel, each server's set-up."""
    prefix: str = PREFIX
    """Of its namespaces (in its guest), tap and guest process."""

    def session(self) -> LabSession:
        return LabSession.open(self.state_dir)


def require_lab(prefix: str = PREFIX) -> None:
    """Skip unless this machine can run a lab (on the substrate DPCTL_LAB_SUBSTRATE forces,
    else the first it can run)."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    try:
        substrate.choose(prefix)
    except LabSetupError as exc:
        pytest.skip(f"no lab substrate ({exc}): run .ci/setup (controller/lab/setup.sh)")


def leftovers(prefix: str = PREFIX) -> dict[str, list[str]]:
    """Namespaces, guest processes (QEMU, UML), taps and mounts of this prefix still there."""
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    qemu = subprocess.run(["pgrep", "-af", "qemu-system"], capture_output=True, text=True).stdout
    umls = subprocess.run(["pgrep", "-af", "linux.uml"], capture_output=True, text=True).stdout
    mounts = Path("/proc/mounts").read_text()
    return {
        "namespaces": [line.split()[0] for line in netns.splitlines() if line.startswith(prefix)],
        "qemu": [
            line
            for line in qemu.splitlines()
            if f"{prefix}guest" in line  # its -name
        ],
        "uml": [line for line in umls.splitlines() if f"umid={prefix}" in line],
        "taps": sorted(
            p.name for p in Path("/sys/class/net").iterdir() if p.name.startswith(prefix)
        ),
        "mounts": [line for line in mounts.splitlines() if prefix in line],
    }


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under pytest-xdist every lab test of one lab runs on that lab's one worker (its
    group: tests/conftest.py): two workers would each bring the same lab up."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or item.get_closest_marker("lab") is None:
        return
    if not item.nodeid.endswith("@" + xdist_group_of(item)):
        pytest.fail("a lab's tests must share one xdist worker: run with --dist loadgroup")


@pytest.fixture(scope="session", params=["dual-arp", "evpn-mh"])
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    mode = request.param
    prefix = MODE_PREFIX[mode]
    require_lab(prefix)
    root = tmp_path_factory.mktemp(f"lab-{mode}")
    os.environ["DPCTL_LAB_DIR"] = str(root / "labs")
    os.environ["DPCTL_STATE_DIR"] = str(root / "state")
    os.environ["DPCTL_LAB_PREFIX"] = prefix
    intent = INVENTORY / f"lab-{mode}.yaml"
    fabric = build_fabric(load_intent(intent))
    state_dir = lab_dir(fabric.intent.name)
    try:
        up = bring_up(fabric, state_dir, prefix=prefix)
        access = lab_access(state_dir)
        assert access is not None
        state = StateFolder.for_intent(fabric.intent.name, intent)
        yield Lab(mode, intent, fabric, state_dir, access, state, up, prefix)
    finally:
        down(state_dir, prefix=prefix)
        for key in ("DPCTL_LAB_DIR", "DPCTL_STATE_DIR", "DPCTL_LAB_PREFIX"):
            os.environ.pop(key, None)
