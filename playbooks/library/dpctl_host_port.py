#!/usr/bin/python3
"""Ansible module: take a GPU server's bond member ports out of service, or back.

Used by `dpctl drain --hosts-first` before a leaf is drained: the server's port facing that
leaf goes administratively down, so its bond moves every flow it sends to the other plane
at a moment the server chooses, instead of when the switch takes its port away. `dpctl
undrain --hosts-first` brings the port back up once the leaf is back in service (the
bond's updelay then holds traffic off it until it has settled).

Idempotent (reads `ip -j link show`), supports check mode, and refuses a port that is not a
member of a bond: taking a server's only path down is never what a drain means.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

DOCUMENTATION = r"""
module: dpctl_host_port
short_description: Bond member ports of a GPU server administratively down or up
options:
  ports: {type: list, elements: str, required: true}
  state: {type: str, choices: [down, up], required: true}
"""


def run_cmd(argv: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def port_info(port: str) -> dict[str, Any] | None:
    rc, out, _ = run_cmd(["ip", "-j", "link", "show", "dev", port])
    if rc != 0:
        return None
    links = json.loads(out or "[]")
    return links[0] if links else None


def plan(ports: list[str], state: str) -> tuple[list[str], list[str]]:
    """(ports to change, errors)."""
    changes, errors = [], []
    for port in ports:
        info = port_info(port)
        if info is None:
            errors.append(f"{port}: no such interface")
            continue
        if not info.get("master"):
            errors.append(f"{port}: not a bond member (refusing to take a single path down)")
            continue
        if ("UP" in info.get("flags", [])) != (state == "up"):
            changes.append(port)
    return changes, errors


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec={
            "ports": {"type": "list", "elements": "str", "required": True},
            "state": {"type": "str", "choices": ["down", "up"], "required": True},
        },
        supports_check_mode=True,
    )
    ports, state = module.params["ports"], module.params["state"]
    changes, errors = plan(ports, state)
    if errors:
        module.fail_json(msg="; ".join(errors), ports=ports)
    commands = [f"ip link set dev {port} {state}" for port in changes]
    if not module.check_mode:
        for port in changes:
            rc, _, err = run_cmd(["ip", "link", "set", "dev", port, state])
            if rc != 0:
                module.fail_json(msg=f"{port}: ip link set {state} failed: {err.strip()}")
    module.exit_json(
        changed=bool(changes),
        commands=commands,
        msg=f"{len(changes)} of {len(ports)} ports set {state}",
    )


if __name__ == "__main__":
    main()
