"""Nornir for a fabric: one host per switch, NAPALM driver by platform, credentials by reference.

Passwords come from the environment variable the intent names, at run time; nothing is
written. When the fabric's embedded lab is running, switches are reached through the lab's
guest (ProxyJump) with the lab's key, and host keys are checked against its known_hosts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

from controller.catalog import get_model
from controller.errors import DpctlError
from controller.facts import Fabric, Switch
from controller.labfabric import lab_dir

COMMAND_TIMEOUT_S = int(os.environ.get("DPCTL_COMMAND_TIMEOUT", "300"))
"""Per SSH command: frr-reload.py on a busy lab guest can take minutes."""


class AccessError(DpctlError):
    """Credentials or lab access are missing."""


@dataclass(frozen=True)
class Access:
    username: str
    password: str | None
    optional_args: dict[str, Any] = field(default_factory=dict)
    via_lab: bool = False


def lab_access(state_dir: Path) -> Access | None:
    from controller.lab import LabStateError, load_state

    try:
        state = load_state(state_dir)
    except LabStateError:
        return None
    args: dict[str, Any] = {
        "key_file": str(state.key_path),
        "known_hosts": str(state.known_hosts),
    }
    if state.jump:
        args.update(
            {
                "jump_host": state.jump[0],
                "jump_port": state.jump[1],
                "jump_username": "root",
                "jump_key_file": str(state.key_path),
                "jump_known_hosts": str(state.known_hosts),
            }
        )
    return Access(username="root", password=None, optional_args=args, via_lab=True)


def require_lab_if_virtual(fabric: Fabric) -> None:
    """A fabric of lab-only switch models exists only inside its lab: with no lab running,
    refuse instead of opening SSH to its management addresses on whatever network this
    machine is on (they are the lab's, not real devices)."""
    virtual = sorted({s.model for s in fabric.switches if get_model(s.model).lab_only})
    if virtual:
        raise AccessError(
            "fabric",
            f"{fabric.intent.name} is a lab fabric ({', '.join(virtual)} switches exist only in "
            f"the embedded lab) and its lab is not running: start it with dpctl lab up",
        )


def fabric_access(fabric: Fabric, lab_state: Path | None = None) -> Access:
    """The lab's access if its lab runs, else the intent's credentials references."""
    lab = lab_access(lab_state or lab_dir(fabric.intent.name))
    if lab is not None:
        return lab
    creds = fabric.intent.credentials
    password = None
    if creds.password_env:
        password = os.environ.get(creds.password_env)
        if password is None and not creds.ssh_key_file:
            raise AccessError(
                "credentials.password_env",
                f"environment variable {creds.password_env} is not set (and no ssh_key_file)",
            )
    args: dict[str, Any] = {}
    if creds.ssh_key_file:
        args["key_file"] = os.path.expanduser(creds.ssh_key_file)
    return Access(username=creds.username, password=password, optional_args=args)


def _host(switch: Switch, access: Access) -> Host:
    return Host(
        name=switch.name,
        hostname=switch.mgmt_ip,
        username=access.username,
        password=access.password,
        platform=switch.platform,
        data={"role": switch.role, "plane": switch.plane, "group": switch.group},
        connection_options={
            "napalm": ConnectionOptions(
                extras={"optional_args": dict(access.optional_args), "timeout": COMMAND_TIMEOUT_S}
            )
        },
    )


def build_nornir(fabric: Fabric, names: list[str], access: Access, workers: int = 8) -> Nornir:
    if not access.via_lab:
        require_lab_if_virtual(fabric)
    ConnectionPluginRegister.auto_register()  # nornir_napalm's "napalm", by entry point
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
