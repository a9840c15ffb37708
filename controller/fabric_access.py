"""How dpctl reaches a real fabric: the intent's credential references.

Switches: the intent's ``credentials.username``, the password read now from the environment
variable ``credentials.password_env`` names, or ``ssh_key_file``. Servers: the same user and
key, through Ansible. A fabric of lab-only switch models (the embedded lab's ``VLAB-4``) is
refused when a switch or server is to be reached (``controller.access.refuse_virtual``).
"""

from __future__ import annotations

import os
from typing import Any

from controller.access import AccessError, FabricAccess, ServerAccess, SwitchAccess
from controller.facts import Fabric
from controller.traffic_ansible import AnsibleTraffic


def switch_access(fabric: Fabric) -> SwitchAccess:
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
    return SwitchAccess(username=creds.username, password=password, optional_args=args)


def server_access(fabric: Fabric) -> ServerAccess:
    creds = fabric.intent.credentials
    key = os.path.expanduser(creds.ssh_key_file) if creds.ssh_key_file else None
    return ServerAccess(user=creds.username, key_file=key)


def credentials_access(fabric: Fabric) -> FabricAccess:
    """The real fabric's access from the intent's credential references."""
    servers = server_access(fabric)
    return FabricAccess(
        switches=switch_access(fabric),
        servers=servers,
        traffic=AnsibleTraffic(servers),
        where="the intent's credentials",
    )
