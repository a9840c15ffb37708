"""NAPALM's BaseTestGetters on the SONiC driver, in NAPALM's pattern: the patched driver's
SSH session is a double answering from mocked_data/<test>/<case>/ and from the mocked SONiC
device's recordings (tests/drivers/mocked/sonic/, their sources in its README.md)."""

from __future__ import annotations

from typing import Any

import pytest
from napalm.base.test import conftest as parent_conftest

from controller.platforms.sonic.driver import SonicDriver
from tests.drivers.conftest import MOCKED
from tests.drivers.napalm_conformance import doubles


class FakeSonicShell(doubles.SonicShell):
    """Defined here: NAPALM's double finds mocked_data/ next to its own module."""

    recordings = staticmethod(lambda case: MOCKED / "sonic")


class PatchedSonicDriver(SonicDriver):
    """The real driver; only its session is the double."""

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        args = {**(optional_args or {}), "connection_factory": lambda **_: FakeSonicShell()}
        super().__init__(hostname, username, password, timeout, args)
        self.patched_attrs = ["_session"]


PatchedDriver = PatchedSonicDriver


@pytest.fixture(scope="class")
def set_device_parameters(request: pytest.FixtureRequest) -> None:
    request.addfinalizer(lambda: request.cls.device.close())
    request.cls.driver = SonicDriver
    request.cls.patched_driver = PatchedSonicDriver
    request.cls.vendor = "sonic"
    parent_conftest.set_device_parameters(request)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parent_conftest.pytest_generate_tests(metafunc, __file__)
