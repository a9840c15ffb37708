"""The FRR commit-confirm timer's shell (controller/platforms/frr/confirm.py), run for real
by sh on this machine against a scratch state folder: each command in its own process, as
each would come over a new SSH session."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from controller.platforms.frr.confirm import (
    REVERT_PID,
    REVERT_SCRIPT,
    cancel,
    pending,
    revert_script,
    start_timer,
)


def sh(command: str) -> str:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout


def arm(state: Path, seconds: int) -> None:
    (state / REVERT_SCRIPT).write_text(f"rm -f {state}/{REVERT_PID}\necho reverted > {state}/r\n")
    sh(start_timer(str(state), seconds))


def test_not_confirmed_reverts_by_itself(tmp_path: Path) -> None:
    arm(tmp_path, 1)
    assert sh(pending(str(tmp_path))).strip() == "pending"  # another process sees it
    deadline = time.monotonic() + 10
    while not (tmp_path / "r").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (tmp_path / "r").read_text() == "reverted\n"
    assert sh(pending(str(tmp_path))).strip() == ""
    assert sh(cancel(str(tmp_path))).strip() == ""  # too late to confirm


def test_confirmed_never_reverts(tmp_path: Path) -> None:
    # 6 s, not 2: under a full suite's load the confirm once came after a 2 s timer had
    # fired (CI of 2026-12-07: "" instead of "cancelled")
    arm(tmp_path, 6)
    pid = int((tmp_path / REVERT_PID).read_text())
    assert sh(cancel(str(tmp_path))).strip() == "cancelled"
    time.sleep(7)
    assert not (tmp_path / "r").exists() and not (tmp_path / REVERT_PID).exists()
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0
    assert sh(pending(str(tmp_path))).strip() == ""


def test_revert_script_restores_the_rollback_folder_first() -> None:
    saved = {"frr.conf": "router bgp 65100\n", "ip.batch": "link set dev swp1 up\n"}
    applied = {"frr.conf": "router bgp 65100\n neighbor x\n", "ip.batch": saved["ip.batch"]}
    script = revert_script("/etc/frr/dpctl", "/etc/frr/dpctl/rollback/T1", applied, saved, "#")
    lines = script.splitlines()
    assert lines[0].startswith(f"rm -f /etc/frr/dpctl/{REVERT_PID}")  # no confirm from here
    assert "cp -a /etc/frr/dpctl/rollback/T1/. /etc/frr/dpctl/current/" in lines[1]
    assert not any("ip -force -batch" in line for line in lines)  # Linux files unchanged
    assert any("frr-reload.py --reload" in line for line in lines)
    with pytest.raises(ValueError, match="at least 1 second"):
        start_timer("/x", 0)
