"""NAPALM's BaseTestGetters on the Linux + FRR driver, in NAPALM's pattern (napalm/eos's
test/unit/conftest.py): the patched driver's SSH client is a double answering from
mocked_data/<test>/<case>/ and from the recordings of a real FRR 8.4 + iproute2
(tests/drivers/mocked/frr/napalm/<case>/, tests/drivers/record_frr_napalm.py)."""

from __future__ import annotations

from typing import Any

import pytest
from napalm.base.test import conftest as parent_conftest

from controller.platforms.frr.driver import FrrDriver
from tests.drivers.conftest import MOCKED
from tests.drivers.napalm_conformance import doubles

DEVICES = {"vrf_TEST": "p1-g1-leaf1"}
"""Test cases that are a recorded device with a few answers of their own (the case folder)."""


class FakeFrrClient(doubles.FrrClient):
    """Defined here: NAPALM's double finds mocked_data/ next to its own module."""

    recordings = staticmethod(lambda case: MOCKED / "frr" / "napalm" / DEVICES.get(case, case))


class PatchedFrrDriver(FrrDriver):
    """The real driver; only its SSH client is the double."""

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(hostname, username, password, timeout, optional_args)
        self.patched_attrs = ["_client"]

    def open(self) -> None:
        self._client = FakeFrrClient()  # type: ignore[assignment]


PatchedDriver = PatchedFrrDriver


@pytest.fixture(scope="class")
def set_device_parameters(request: pytest.FixtureRequest) -> None:
    request.addfinalizer(lambda: request.cls.device.close())
    request.cls.driver = FrrDriver
    request.cls.patched_driver = PatchedFrrDriver
    request.cls.vendor = "frr"
    parent_conftest.set_device_parameters(request)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parent_conftest.pytest_generate_tests(metafunc, __file__)
