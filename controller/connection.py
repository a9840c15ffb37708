"""Nornir for a fabric: one host per switch, the driver of its platform, credentials by
reference.

How the switches are reached (``SwitchAccess``: the intent's credentials, or a running lab's
guest as jump host) is decided by the caller (`controller.access`). Passwords come from the
environment variable the intent names, at run time; nothing is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

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
from controller.errors import DpctlError
from controller.facts import Fabric, Switch
from controller.platforms.connection_plugin import CONNECTION_NAME, DpctlConnection

WORKERS = 16
"""Switches worked on at once by default (Nornir's threaded runner: one thread and one SSH
session each). A switch's deploy or verify is mostly waiting on the switch (its commit, its
daemons' answers), so the controller's own cost per worker is small; 16 keeps the sessions
open at once well under a switch management network's and a bastion's limits (OpenSSH's
MaxStartups 10:30:100 by default) and the 48-switch seed fabric in 3 rounds. Measured on the
seed-scale lab: docs/lab-seed.md."""
LAB_WORKERS = 8
"""The embedded lab's default (dpctl's only value before it was a setting, the small labs'
figures were measured with it): its switches share the lab guest's one CPU, where a deploy's
work is (frr-reload.py, vtysh), so more at once only makes each slower. 16 at once on the
48-switch lab: five commits stayed silent past the 300 s command timeout and rolled back
(2026-12-06); docs/lab-seed.md has the figures."""
MAX_WORKERS = 256
CONNECT_TIMEOUT_S = 30.0
"""TCP connect, SSH banner and login of one switch: an unreachable or frozen switch is given
up (and named) after this, while the other workers go on."""
COMMAND_TIMEOUT_S = 300.0
"""Per SSH command without output: frr-reload.py on a busy lab guest can take minutes."""


def _env_number(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise DpctlError(name, f"{raw!r} is not a number from {low:g} to {high:g}")
    return value


def _env_workers() -> int | None:
    if not os.environ.get("DPCTL_WORKERS"):
        return None
    return int(_env_number("DPCTL_WORKERS", WORKERS, 1, MAX_WORKERS))


@dataclass(frozen=True)
class Limits:
    """How many switches at once and how long one may take: the CLI's --workers,
    --connect-timeout, --command-timeout, else DPCTL_WORKERS, DPCTL_CONNECT_TIMEOUT,
    DPCTL_COMMAND_TIMEOUT, else the defaults above."""

    workers: int | None = field(default_factory=lambda: _env_workers())
    """None: WORKERS, or LAB_WORKERS for the embedded lab's switches."""
    connect_timeout_s: float = field(
        default_factory=lambda: _env_number("DPCTL_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S, 1, 3600)
    )
    command_timeout_s: float = field(
        default_factory=lambda: _env_number("DPCTL_COMMAND_TIMEOUT", COMMAND_TIMEOUT_S, 1, 86400)
    )

    def __post_init__(self) -> None:
        if self.workers is not None and not 1 <= self.workers <= MAX_WORKERS:
            raise DpctlError("--workers", f"{self.workers}: from 1 to {MAX_WORKERS} switches")
        for name, value in (
            ("--connect-timeout", self.connect_timeout_s),
            ("--command-timeout", self.command_timeout_s),
        ):
            if not value > 0:
                raise DpctlError(name, f"{value:g}: a number of seconds above 0")


def limits(
    workers: int | None = None,
    connect_timeout_s: float | None = None,
    command_timeout_s: float | None = None,
) -> Limits:
    """The limits given (a CLI's options), the environment's or the defaults for the rest."""
    base = Limits()
    return Limits(
        workers=base.workers if workers is None else workers,
        connect_timeout_s=_given(connect_timeout_s, base.connect_timeout_s),
        command_timeout_s=_given(command_timeout_s, base.command_timeout_s),
    )


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


def default_workers(access: SwitchAccess) -> int:
    return LAB_WORKERS if access.lab else WORKERS


def _host(switch: Switch, access: SwitchAccess, reach: Limits) -> Host:
    args = {"connect_timeout": reach.connect_timeout_s, **access.optional_args}
    return Host(
        name=switch.name,
        hostname=switch.mgmt_ip,
        username=access.username,
        password=access.password,
        platform=switch.platform,
        data={"role": switch.role, "plane": switch.plane, "group": switch.group},
        connection_options={
            CONNECTION_NAME: ConnectionOptions(
                extras={"optional_args": args, "timeout": reach.command_timeout_s}
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
    fabric: Fabric,
    names: list[str],
    access: SwitchAccess,
    workers: int | None = None,
    reach: Limits | None = None,
) -> Nornir:
    """Nornir over ``names``: ``reach`` (default :class:`Limits`), ``workers`` overriding its
    count (drain and rollback work on one switch at a time)."""
    if not access.lab:
        refuse_virtual(fabric)
    reach = reach or Limits()
    register_connection_plugin()
    hosts = Hosts({n: _host(fabric.switch_by_name[n], access, reach) for n in names})
    return Nornir(
        inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()),
        runner=ThreadedRunner(num_workers=workers or reach.workers or default_workers(access)),
        config=Config(
            logging=LoggingConfig(
                enabled=False, level="WARNING", log_file="", format="", to_console=False, loggers=[]
            )
        ),
    )
