"""The ARP-to-host agent a Linux + FRR commit installs: the stamp it stores, when a running
agent is kept, and the commit's own shell run for real (in a namespace of the test) against
the agent it starts."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.platforms.frr import driver as frr_module
from controller.platforms.frr.agent import (
    AGENT,
    AGENT_RUN,
    AGENT_STAMP,
    AGENT_UPLOAD,
    agent_source,
    agent_stamp,
    agent_unchanged,
)
from tests.drivers.conftest import frr_driver

APPLIED = "frr defaults traditional\nrouter bgp 65100\n bgp router-id 10.255.0.3\nexit\n"
AGENT_CONFIG = json.dumps({"table": 100, "interfaces": ["rail1"], "bridge": "br0"}) + "\n"


def _without_stamp(files: dict[str, str]) -> dict[str, str]:
    return {n: t for n, t in files.items() if n != AGENT_STAMP}


@pytest.mark.parametrize("with_agent", [True, False])
def test_the_commit_stores_the_stamp_of_the_agent_it_starts(with_agent: bool) -> None:
    driver = frr_driver()
    sent: list[tuple[str, bytes]] = []

    def run(command: str, stdin: Any = None) -> tuple[int, str, str]:
        sent.append((command, stdin))
        return 0, "", ""

    driver._run = run
    files = {"frr.conf": APPLIED, AGENT_STAMP: f"{AGENT} sha256 {'0' * 64}\n"}  # a rollback's
    if with_agent:
        files["arp-to-host.json"] = AGENT_CONFIG
    driver._finish(files, record="")
    ((command, archive),) = sent
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    if with_agent:
        assert got[f"current/{AGENT_STAMP}"].decode() == agent_stamp(files)
        assert got[AGENT_UPLOAD] == agent_source() and "exec python3" in command
    else:
        assert f"current/{AGENT_STAMP}" not in got and AGENT_UPLOAD not in got
        assert f"rm -f /etc/frr/dpctl/current/{AGENT_STAMP}" in command


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return AGENT.encode() in handle.read()
    except OSError:
        return False


NEEDS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip"
)


class AgentSwitch:
    """A state folder of the test as the switch's, and a driver whose commands run for real
    in a namespace of the test: ``commit(keep)`` is the commit's last exec (``_finish``)."""

    def __init__(self, state: Path, ns: str) -> None:
        self.state = state
        self.ns = ns
        self.pidfile = state / f"{AGENT_RUN}.pid"
        self.started: list[int] = []
        self.driver = frr_driver()
        self.driver._run = self._run
        config = {"table": 100, "interfaces": ["rail1"], "prefixes": ["10.9.0.0/29"]}
        self.files = {
            "frr.conf": APPLIED,
            "arp-to-host.json": json.dumps(config | {"bridge": "br0"}),
        }

    def _run(self, command: str, stdin: Any = None) -> tuple[int, str, str]:
        done = subprocess.run(
            ["ip", "netns", "exec", self.ns, "sh", "-c", command], input=stdin, capture_output=True
        )
        return done.returncode, done.stdout.decode(), done.stderr.decode()

    def commit(self, keep: bool) -> None:
        self.driver._finish(self.files, record="", keep_agent=keep)

    def agent_after(self, keep: bool) -> int:
        """The pid of the agent running after a commit: it must be there within 20 s."""
        self.commit(keep)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = self.pidfile.read_text().strip() if self.pidfile.exists() else ""
            if text and _alive(int(text)):
                self.started.append(int(text))
                return int(text)
            time.sleep(0.1)
        log = (self.state / f"{AGENT_RUN}.log").read_text()
        raise AssertionError(f"no agent running: {self.pidfile} {log}")

    def stop_all(self) -> None:
        recorded = [int(self.pidfile.read_text())] if self.pidfile.exists() else []
        for pid in {*self.started, *recorded}:
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)


@pytest.fixture
def agent_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentSwitch]:
    state = tmp_path / "state"
    monkeypatch.setattr(frr_module, "STATE", str(state))
    ns = f"dpd-ut-agent-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    switch = AgentSwitch(state, ns)
    try:
        yield switch
    finally:
        switch.stop_all()
        subprocess.run(["ip", "netns", "del", ns], check=False)


@NEEDS_ROOT
def test_a_commit_keeps_a_running_agent_only_when_told_and_never_kills_a_stranger(
    agent_switch: AgentSwitch,
) -> None:
    """Kept, the same agent runs on; not kept, a new one replaces it; a pid file naming a
    process that is not the agent (pid reuse) never gets that process killed."""
    stranger = subprocess.Popen(["sleep", "120"])
    try:
        first = agent_switch.agent_after(keep=True)  # none ran: started
        assert agent_switch.agent_after(keep=True) == first and _alive(first)  # kept
        second = agent_switch.agent_after(keep=False)  # replaced
        assert second != first
        _wait_gone(first)
        os.kill(second, signal.SIGTERM)
        agent_switch.pidfile.write_text(
            f"{stranger.pid}\n"
        )  # the agent died; its pid names another
        third = agent_switch.agent_after(keep=False)
        assert third not in (first, second) and stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


@NEEDS_ROOT
def test_the_agents_file_is_never_seen_half_written(agent_switch: AgentSwitch) -> None:
    """An agent reads its zipapp by path, lazily, while it imports: a commit that keeps it
    (every drain step) must never leave that path naming part of an archive. CI of
    2026-12-07 saw the agent die with zipimport's EOFError when tar rewrote the file in
    place under it. Here a reader opens the path over and over while commits run."""
    first = agent_switch.agent_after(keep=True)
    torn = _reading_while(
        lambda: [agent_switch.commit(keep=True) for _ in range(15)], agent_switch.state / AGENT
    )
    assert torn == [], f"{len(torn)} reads of a partial agent file, sizes {sorted(set(torn))[:5]}"
    assert agent_switch.agent_after(keep=True) == first  # and the agent still runs
    assert not (agent_switch.state / AGENT_UPLOAD).exists()


def _reading_while(action: Callable[[], object], path: Path) -> list[int]:
    """Sizes of the reads of ``path`` that were not the whole agent, while ``action`` ran."""
    whole = agent_source()
    torn: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                torn.append(-1)
                continue
            if data != whole:
                torn.append(len(data))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        action()
    finally:
        done.set()
        reader.join()
    return torn


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


@pytest.mark.parametrize(
    ("change", "kept"),
    [
        ("host port down (a drain step)", True),
        ("nothing", True),
        ("agent config", False),
        ("agent code", False),
        ("a link added", False),
        ("bridge.batch", False),
    ],
)
def test_the_agent_is_restarted_only_when_what_it_reads_changed(change: str, kept: bool) -> None:
    ip_batch = "link add name bond1 type bond mode 802.3ad\nlink set dev swp1 up\n"
    old = {
        "frr.conf": APPLIED,
        "ip.batch": ip_batch,
        "bridge.batch": "vlan add vid 10 dev bond1\n",
        "arp-to-host.json": AGENT_CONFIG,
    }
    old[AGENT_STAMP] = agent_stamp(old) or ""
    new = _without_stamp(old)
    if change == "host port down (a drain step)":
        new["ip.batch"] = ip_batch.replace("swp1 up", "swp1 down")
    elif change == "agent config":
        new["arp-to-host.json"] = AGENT_CONFIG.replace("100", "101")
    elif change == "agent code":
        old[AGENT_STAMP] = f"{AGENT} sha256 {'0' * 64}\n"
    elif change == "a link added":
        new["ip.batch"] = ip_batch + "link add name bond2 type bond mode 802.3ad\n"
    elif change == "bridge.batch":
        new["bridge.batch"] = "vlan add vid 20 dev bond1\n"
    assert agent_unchanged(old, new) is kept
    assert not agent_unchanged(_without_stamp(old), {"frr.conf": APPLIED})  # no agent at all
