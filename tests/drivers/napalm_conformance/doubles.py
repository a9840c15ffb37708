"""NAPALM's test doubles for dpctl's drivers (``napalm.base.test.double.BaseTestDouble``).

NAPALM's own drivers are tested this way (napalm/eos test/unit/conftest.py): a patched driver
whose connection object is a double answering each command from a file, per test and test
case: ``mocked_data/<test>/<test case>/<command slug>.txt|json`` next to the platform's
conftest, plus ``expected_result.json`` there. Here a test case is a recorded device, and a
command the case folder does not answer is answered from that device's recordings in
tests/drivers/mocked/ (one set of recordings for dpctl's own tests and for NAPALM's). A
command recorded nowhere raises OSError, which NAPALM's test wrapper reports as a failure.

Only the connection is replaced: the drivers' own code builds every command and parses
every answer.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from napalm.base.test.double import BaseTestDouble

from controller.platforms.frr.driver import PART
from tests.drivers.conftest import ASTERNOS_SHELL, MOCKED, slug

Recordings = Callable[[str], Path]
"""Test case -> the folder of the device's recordings."""


class RecordedDevice(BaseTestDouble):  # type: ignore[misc]
    """Answers a command from the test case's folder, else from the device's recordings."""

    recordings: Recordings = staticmethod(lambda case: MOCKED)  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[str] = []

    def _folders(self) -> list[Path]:
        """The test case's folder (next to the module defining the double, as NAPALM's
        ``find_file`` has it), then the device's recordings."""
        module = Path(str(sys.modules[self.__module__].__file__)).parent
        case = module / "mocked_data" / self.current_test / self.current_test_case
        return [case, self.recordings(self.current_test_case)]

    def answer(self, command: str) -> str:
        self.commands.append(command)
        name = slug(command)
        for folder in self._folders():
            for ext in ("txt", "json"):
                path = folder / f"{name}.{ext}"
                if path.exists():
                    return path.read_text()
        raise OSError(f"no recording of {command!r} ({name}) for {self.current_test_case!r}")


class _Stream:
    def __init__(self, text: str, status: int = 0) -> None:
        self.text = text
        self.channel = self
        self.status = status

    def read(self) -> bytes:
        return self.text.encode()

    def write(self, data: Any) -> None:
        pass

    def shutdown_write(self) -> None:
        pass

    def recv_exit_status(self) -> int:
        return self.status


class FrrClient(RecordedDevice):
    """Stands in for the FRR driver's paramiko SSHClient: ``exec_command`` answers the
    driver's one-exec batches part by part (parts joined by a printf of the marker line) and
    ``vtysh -c A -c B`` as A's answer then B's, as the shell and vtysh do."""

    def exec_command(self, command: str, timeout: float | None = None) -> tuple[Any, Any, Any]:
        separator = f"; printf '\\n{PART}\\n'; "
        out = f"\n{PART}\n".join(self._part(p) for p in command.split(separator))
        return _Stream(""), _Stream(out), _Stream("")

    def _part(self, command: str) -> str:
        words = shlex.split(command)
        if words and words[0] == "vtysh" and words.count("-c") > 1:
            asks = [words[i + 1] for i, w in enumerate(words) if w == "-c"]
            return "".join(self.answer(f"vtysh -c {shlex.quote(a)}") for a in asks)
        return self.answer(command)

    def get_transport(self) -> Any:
        return self

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        pass


class SonicShell(RecordedDevice):
    """Stands in for the SONiC driver's ParamikoShell."""

    def run(self, command: str, timeout: float) -> tuple[str, int]:
        return self.answer(command), 0

    def put(self, path: str, text: str) -> None:
        raise OSError(f"a getter wrote {path}")

    def is_alive(self) -> bool:
        return True

    def close(self) -> None:
        pass


class AsterNOSSession(RecordedDevice):
    """Stands in for netmiko's AsterNOS connection: klish, and the SONiC shell under
    ``system bash`` (answered from the ``bash/`` folders, then as the SONiC device:
    tests/drivers/conftest.py ``ASTERNOS_SHELL``)."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "klish"

    def send_command(self, command_string: str, **kwargs: Any) -> str:
        if command_string == "system bash":
            self.mode = "bash"
            return ""
        if command_string == "exit" and self.mode == "bash":
            self.mode = "klish"
            return ""
        if self.mode == "bash":
            return self.answer(f"bash: {command_string}")
        return self.answer(command_string)

    def answer(self, command: str) -> str:
        bash = command.startswith("bash: ")
        plain = command.removeprefix("bash: ")
        self.commands.append(command)
        name = slug(plain)
        folders = [f / "bash" if bash else f for f in self._folders()]
        if bash:
            folders += [MOCKED / shell for shell in ASTERNOS_SHELL[1:]]
        for folder in folders:
            for ext in ("txt", "json"):
                path = folder / f"{name}.{ext}"
                if path.exists():
                    return path.read_text()
        raise OSError(f"no recording of {command!r} ({name}) for {self.current_test_case!r}")

    def send_config_set(self, config_commands: Sequence[str], **kwargs: Any) -> str:
        raise OSError("a getter configured the switch")

    def save_config(self) -> str:
        raise OSError("a getter saved the configuration")

    def is_alive(self) -> bool:
        return True

    def disconnect(self) -> None:
        pass


def patched(platform: str, case: str = "p1-g1-leaf1", test: str = "") -> Any:
    """An open patched driver of ``platform`` answering as recorded device ``case`` (and the
    case folder of NAPALM test ``test``, when given), for dpctl's own tests."""
    import importlib

    module = importlib.import_module(f"tests.drivers.napalm_conformance.{platform}.conftest")
    device = module.PatchedDriver("127.0.0.1", "vagrant", "vagrant", 60, {})
    device.open()
    for name in device.patched_attrs:
        double = getattr(device, name)
        double.current_test, double.current_test_case = test, case
    return device
