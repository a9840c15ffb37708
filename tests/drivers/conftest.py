"""Mocked devices for the SONiC and AsterNOS NAPALM drivers (NAPALM's mocked-device pattern).

Every command a driver sends is answered from ``mocked/<platform>/<slug>.txt|json``, the slug
being the command with each run of non-alphanumerics turned into ``_`` (and the checkpoint
timestamp into ``TS``). A command with no recording fails the test, so the recordings list
exactly what the drivers send. Mutating commands with no recorded output answer "" / exit 0.
AsterNOS's SONiC shell (``system bash``) answers from ``mocked/asternos/bash/`` where AsterNOS
differs, else as the SONiC device (:data:`ASTERNOS_SHELL`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from controller.platforms.frr.driver import PART

MOCKED = Path(__file__).parent / "mocked"
TS = re.compile(r"dpctl-\d{8}-\d{6}")

# Commands whose output nobody parses: exit 0 and no output unless a recording exists.
SILENT = (
    "mkdir -p ",
    "sudo -n docker cp ",
    "sudo -n docker exec bgp test -x ",
    "sudo -n docker exec bgp /usr/lib/frr/frr-reload.py --reload",
    "sudo -n docker exec bgp vtysh -f ",
    "sudo -n docker exec bgp vtysh -c 'write memory'",
    "sudo -n systemd-run ",
    "sudo -n systemctl stop ",
)


BOUND = re.compile(r"timeout -k \d+ \d+ ")


def unbounded(command: str) -> str:
    """A command as the device answers it: the same under the switch-side bound (coreutils
    ``timeout``, controller/drivers/switch_side.py) as without it."""
    return BOUND.sub("", command)


def slug(command: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", TS.sub("dpctl-TS", command)).strip("_")


ASTERNOS_SHELL = ("asternos/bash", "sonic")
"""Where AsterNOS's SONiC shell is answered from, first found first: its own recordings (only
those that differ from the SONiC device's: ``show version``, the uptime), then the SONiC
device's, as the same Linux, FRR and sonic-utilities tools answer there."""


def recorded(platform: str, command: str) -> str | None:
    if len(slug(command)) > 200:  # long one-off commands (timers) are never recorded
        return None
    for ext in ("txt", "json"):
        path = MOCKED / platform / f"{slug(command)}.{ext}"
        if path.exists():
            return path.read_text()
    return None


class RevertTimer:
    """The device's ``dpctl-revert`` systemd timer: state on the device, shared by every
    session opened to it (a new session sees a commit another left unconfirmed)."""

    def __init__(self) -> None:
        self.active = False

    def answer(self, command: str) -> tuple[str, int] | None:
        if command.startswith("sudo -n systemd-run --unit=dpctl-revert "):
            self.active = True
        elif command == "sudo -n systemctl stop dpctl-revert.timer":
            self.active = False
        elif command == "systemctl is-active dpctl-revert.timer":  # systemctl's own answers
            return ("active\n", 0) if self.active else ("inactive\n", 3)
        return None


class FakeShell:
    """Stands in for ParamikoShell: answers from recordings, logs commands and uploads."""

    def __init__(self, timer: RevertTimer | None = None, **params: Any) -> None:
        self.timer = timer or RevertTimer()
        self.params = params
        self.commands: list[str] = []  # as the device answers them (:func:`unbounded`)
        self.sent: list[str] = []  # as the driver sent them
        self.files: dict[str, str] = {}
        self.failures: dict[str, tuple[str, int]] = {}  # command prefix -> (output, status)
        self.overrides: dict[str, str] = {}  # command -> output
        self.alive = True

    def run(self, command: str, timeout: float) -> tuple[str, int]:
        self.sent.append(command)
        command = unbounded(command)
        self.commands.append(command)
        timer = self.timer.answer(command)
        if timer is not None:
            return timer
        for prefix, answer in self.failures.items():
            if command.startswith(prefix):
                return answer
        if command in self.overrides:
            return self.overrides[command], 0
        text = recorded("sonic", command)
        if text is not None:
            return text, 0
        if command.startswith(SILENT):
            return "", 0
        raise AssertionError(f"unrecorded command sent to the mocked SONiC device: {command!r}")

    def put(self, path: str, text: str) -> None:
        self.commands.append(f"<put {path}>")
        self.files[path] = text

    def is_alive(self) -> bool:
        return self.alive

    def close(self) -> None:
        self.alive = False


class FakeConfigInvalid(Exception):
    pass


class FakeSession:
    """Stands in for netmiko's AsterfusionAsterNOSSSH (klish, ``system bash`` below it)."""

    def __init__(self, **params: Any) -> None:
        self.params = params
        self.log: list[tuple[str, Any]] = []
        self.mode = "klish"
        self.reject: set[str] = set()  # config lines AsterNOS answers with an error
        self.hang: set[str] = set()  # commands and config lines that give no prompt back
        self.overrides: dict[str, str] = {}
        self.alive = True

    def send_command(self, command_string: str, **kwargs: Any) -> str:
        self.log.append(("command", command_string))
        self._hangs(command_string)
        if command_string == "system bash":
            self.mode = "bash"
            return ""
        if command_string == "exit" and self.mode == "bash":
            self.mode = "klish"
            return ""
        if command_string in self.overrides:
            return self.overrides[command_string]
        folders = ASTERNOS_SHELL if self.mode == "bash" else ("asternos",)
        texts = (recorded(folder, command_string) for folder in folders)
        text = next((t for t in texts if t is not None), None)
        if text is None:
            raise AssertionError(f"unrecorded {self.mode} command: {command_string!r}")
        return text

    def send_config_set(self, config_commands: Sequence[str], **kwargs: Any) -> str:
        from netmiko.exceptions import ConfigInvalidException

        assert self.mode == "klish"
        sent = list(config_commands)
        self.log.append(("config", sent))
        pattern = kwargs.get("error_pattern", "")
        output = ["configure terminal"]
        for line in sent:
            output.append(line)
            self._hangs(line)
            if line in self.reject:
                output.append("% Error: Invalid input detected at '^' marker.")
                if pattern and re.search(pattern, "\n".join(output), flags=re.M):
                    raise ConfigInvalidException(
                        f"Invalid input detected at command: {line}\n" + "\n".join(output)
                    )
        return "\n".join(output)

    def _hangs(self, command: str) -> None:
        """netmiko's answer to a command whose prompt does not come back in read_timeout."""
        from netmiko.exceptions import ReadTimeout

        if command in self.hang:
            raise ReadTimeout(f"Pattern not detected: '#' in output.\n\n{command}\n")

    def save_config(self) -> str:
        self.log.append(("save", None))
        self._hangs("write")
        return "write\nAre you sure to save the configuration? [y/N]: y\nSave succeeded"

    def is_alive(self) -> bool:
        return self.alive

    def disconnect(self) -> None:
        self.alive = False


@pytest.fixture
def sonic() -> Any:
    from controller.platforms.sonic.driver import SonicDriver

    shells: list[FakeShell] = []
    timer = RevertTimer()  # the device's, across sessions

    def factory(**params: Any) -> FakeShell:
        shells.append(FakeShell(timer, **params))
        return shells[-1]

    driver = SonicDriver(
        "p1-g1-leaf1",
        "admin",
        "not-logged",
        optional_args={"known_hosts": "/tmp/known_hosts", "connection_factory": factory},
    )
    driver.open()
    driver.fake = shells[0]
    return driver


@pytest.fixture
def asternos(tmp_path: Path) -> Any:
    from controller.platforms.asternos.driver import AsterNOSDriver

    sessions: list[FakeSession] = []

    def factory(**params: Any) -> FakeSession:
        sessions.append(FakeSession(**params))
        return sessions[-1]

    driver = AsterNOSDriver(
        "p1-g1-leaf1",
        "admin",
        "not-logged",
        optional_args={
            "known_hosts": "/tmp/known_hosts",
            "connection_factory": factory,
            "checkpoint_dir": str(tmp_path / "checkpoints"),
        },
    )
    driver.open()
    driver.fake = sessions[0]
    return driver


class FakeFrrHost:
    """Stands in for FrrDriver's SSH exec channel: (exit status, stdout, stderr) per command,
    answered from mocked/frr/<device>/ (recorded from a real FRR 8.4 by record_frr.py)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.commands: list[str] = []
        self.overrides: dict[str, str] = {}

    def run(self, command: str, stdin: str | bytes | None = None) -> tuple[int, str, str]:
        """A shell over the recordings: the driver's batched reads (parts joined by a printf of
        a marker line) answer part by part, and ``vtysh -c A -c B`` prints A's output then B's,
        as vtysh does."""
        self.commands.append(command)
        separator = f"; printf '\\n{PART}\\n'; "
        parts = command.split(separator)
        return 0, f"\n{PART}\n".join(self._answer(part) for part in parts), ""

    def _answer(self, command: str) -> str:
        if command in self.overrides:
            return self.overrides[command]
        words = shlex.split(command)
        if words[0] == "vtysh" and words.count("-c") > 1:
            asks = [words[i + 1] for i, w in enumerate(words) if w == "-c"]
            return "".join(self._answer(f"vtysh -c {shlex.quote(a)}") for a in asks)
        text = recorded(f"frr/{self.device}", command)
        if text is None:
            raise AssertionError(f"unrecorded command sent to the mocked FRR device: {command!r}")
        return text


def frr_driver(device: str = "p1-g1-leaf1") -> Any:
    from controller.platforms.frr.driver import FrrDriver

    driver = FrrDriver(device, "root", None, optional_args={"known_hosts": "/tmp/known_hosts"})
    driver.fake = FakeFrrHost(device)
    driver._run = driver.fake.run  # the SSH channel is the only part replaced
    return driver


@pytest.fixture
def frr() -> Any:
    return frr_driver()
