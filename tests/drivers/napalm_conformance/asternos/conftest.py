"""NAPALM's BaseTestGetters on the AsterNOS driver, in NAPALM's pattern: the patched driver's
netmiko session (klish, and the SONiC shell under ``system bash``) is a double answering
from mocked_data/<test>/<case>/ and from the mocked AsterNOS device's recordings
(tests/drivers/mocked/asternos/, their sources in its README.md)."""

from __future__ import annotations

from typing import Any

import pytest
from napalm.base.test import conftest as parent_conftest

from controller.platforms.asternos.driver import AsterNOSDriver
from tests.drivers.conftest import MOCKED
from tests.drivers.napalm_conformance import doubles


class FakeAsterNOSSession(doubles.AsterNOSSession):
    """Defined here: NAPALM's double finds mocked_data/ next to its own module."""

    recordings = staticmethod(lambda case: MOCKED / "asternos")


class PatchedAsterNOSDriver(AsterNOSDriver):
    """The real driver; only its session is the double."""

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        args = {**(optional_args or {}), "connection_factory": lambda **_: FakeAsterNOSSession()}
        super().__init__(hostname, username, password, timeout, args)
        self.patched_attrs = ["_session"]


PatchedDriver = PatchedAsterNOSDriver


@pytest.fixture(scope="class")
def set_device_parameters(request: pytest.FixtureRequest) -> None:
    request.addfinalizer(lambda: request.cls.device.close())
    request.cls.driver = AsterNOSDriver
    request.cls.patched_driver = PatchedAsterNOSDriver
    request.cls.vendor = "asternos"
    parent_conftest.set_device_parameters(request)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parent_conftest.pytest_generate_tests(metafunc, __file__)
