"""Nornir's connection plugin ``dpctl``: opens the NAPALM driver of the host's platform.

Registered by the entry point ``nornir.plugins.connections: dpctl`` (pyproject.toml), so any
Nornir script can use dpctl's drivers with ``task.host.get_connection("dpctl", ...)``. It
replaces nornir_napalm's ``napalm`` plugin for dpctl's platforms because that one finds a
driver by NAPALM's module-name lookup (``napalm_<platform>`` or ``custom_napalm.<platform>``),
which would need dpctl to install top-level packages named after each platform into
site-packages; here the platform registry gives the driver class. Parameters are those of
nornir_napalm's plugin: ``extras`` goes to the driver's constructor (``optional_args``,
``timeout``), the host's port becomes ``optional_args["port"]``.
"""

from __future__ import annotations

from typing import Any

from nornir.core.configuration import Config

from controller import platforms
from controller.drivers.contract import DpctlDriver

CONNECTION_NAME = "dpctl"


class DpctlConnection:
    """A dpctl driver as a Nornir connection (``self.connection`` is the open driver)."""

    connection: DpctlDriver

    def open(
        self,
        hostname: str | None,
        username: str | None,
        password: str | None,
        port: int | None,
        platform: str | None,
        extras: dict[str, Any] | None = None,
        configuration: Config | None = None,
    ) -> None:
        if platform is None:
            raise platforms.PlatformError("platform", f"host {hostname}: no platform set")
        parameters: dict[str, Any] = {
            "hostname": hostname,
            "username": username,
            "password": password,
            "optional_args": {},
        }
        parameters.update(extras or {})
        if port and "port" not in parameters["optional_args"]:
            parameters["optional_args"]["port"] = port
        driver = platforms.get(platform).driver_class(**parameters)
        driver.open()
        self.connection = driver

    def close(self) -> None:
        self.connection.close()
