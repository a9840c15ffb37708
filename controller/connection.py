"""Nornir for a fabric: one host per switch, the driver of its platform, credentials by
reference.

How the switches are reached (``SwitchAccess``: the intent's credentials, or a running lab's
guest as jump host) is decided by the caller (`controller.access`). Passwords come from the
environment variable the intent names, at run time; nothing is written.
"""

from __future__ import annotations

import os

from nornir.core import Nornir
from nornir.core.configuration import Config, LoggingConfig
from nornir.core.inventory import (
    ConnectionOptions,
    Defaults,
    Groups,
    Host,
    Hosts,
    Inventory,
)
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner

from controller.access import SwitchAccess, refuse_virtual
from controller.facts import Fabric, Switch
from controller.platforms.connection_plugin import CONNECTION_NAME, DpctlConnection

COMMAND_TIMEOUT_S = int(os.environ.get("DPCTL_COMMAND_TIMEOUT", "300"))
"""Per SSH command: frr-reload.py on a busy lab guest can take minutes."""
WORKERS = 8
"""Switches worked on at once (Nornir's threaded runner)."""


def _host(switch: Switch, access: SwitchAccess) -> Host:
    return Host(
        name=switch.name,
        hostname=switch.mgmt_ip,
        username=access.username,
        password=access.password,
        platform=switch.platform,
        data={"role": switch.role, "plane": switch.plane, "group": switch.group},
        connection_options={
            CONNECTION_NAME: ConnectionOptions(
                extras={"optional_args": dict(access.optional_args), "timeout": COMMAND_TIMEOUT_S}
            )
        },
    )


def register_connection_plugin() -> None:
    """dpctl's Nornir connection plugin, by its entry point (an installed dpctl), or directly
    (a source checkout on PYTHONPATH has no entry points)."""
    ConnectionPluginRegister.auto_register()
    if CONNECTION_NAME not in ConnectionPluginRegister.available:
        ConnectionPluginRegister.register(CONNECTION_NAME, DpctlConnection)


def build_nornir(
    fabric: Fabric, names: list[str], access: SwitchAccess, workers: int = WORKERS
) -> Nornir:
    if not access.lab:
        refuse_virtual(fabric)
    register_connection_plugin()
    hosts = Hosts({n: _host(fabric.switch_by_name[n], access) for n in names})
    return Nornir(
        inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()),
        runner=ThreadedRunner(num_workers=workers),
        config=Config(
            logging=LoggingConfig(
                enabled=False, level="WARNING", log_file="", format="", to_console=False, loggers=[]
            )
        ),
    )
