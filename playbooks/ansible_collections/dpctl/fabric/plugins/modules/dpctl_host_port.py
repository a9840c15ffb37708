#!/usr/bin/python
"""Ansible module: take a GPU server's bond member ports out of service, or back.

Used by `dpctl drain --hosts-first` before a leaf is drained: the server's port facing that
leaf leaves its bond, so the bond moves every flow it sends to the other plane at a moment
the server chooses, instead of when the switch takes its port away. `dpctl undrain
--hosts-first` puts the port back into its bond once the leaf is back in service (the bond's
updelay then holds traffic off it until it has settled).

Why a release (`ip link set PORT nomaster`) and not `ip link set PORT down`: closing a bond
member first swaps its queue for one that drops everything, and only then tells the bond,
which until that moment still hashes flows onto the member. In the lab (2026-12-05) a
`--hosts-first` drain lost 1-2 packets of a 500 packets/s flow there in 3 runs of 4; the
guest kernel's kfree_skb trace named the drop QDISC_DROP, in the sender's own context, at the
moment the host step ran. A release takes the member out of the bond's transmit array and
waits for every sender that may still hold it (synchronize_rcu in the bonding driver's
`__bond_release_one`) before it closes the port, so nothing is sent into a closing port. A
released port is left down.

Idempotent (reads `ip -j link show`), supports check mode. Refused, changing nothing on the
server: a port that is no member of the named bond (nor already released from it), and
taking a port out while no other member of its bond is up: that would cut the server's last
path on the rail, which is never what a drain means.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: dpctl_host_port
short_description: Bond member ports of a GPU server out of their bonds (down) or back (up)
description:
  - The host-side step of C(dpctl drain --hosts-first) and C(dpctl undrain --hosts-first).
  - V(down) releases each port from its bond (C(ip link set PORT nomaster)), leaving it
    down, so the bond moves its flows to the other plane before the leaf is drained; a
    release, not a link down, because the bonding driver waits for every sender that may
    still hold the member before it closes the port.
  - V(up) puts a released port back into its bond and brings it up (the bond's updelay then
    holds traffic off it until it has settled).
  - Refused, changing nothing, are a port that is no member of the named bond (nor released
    from it), and taking a port out while no other member of its bond is up (the server's
    last path on the rail).
author:
  - dpctl contributors (!UNKNOWN)
requirements:
  - iproute2 (C(ip)) on the server
options:
  ports:
    description:
      - Each port and the bond it belongs to, as dicts with C(port) and C(bond) (names).
    type: list
    elements: dict
    required: true
  state:
    description: V(down) releases the ports from their bonds; V(up) puts them back.
    type: str
    choices: [down, up]
    required: true
attributes:
  check_mode:
    description: Reports the commands it would run; runs none.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
"""

EXAMPLES = r"""
- name: The server's port facing leaf p1-g1-leaf1 out of its bond
  dpctl.fabric.dpctl_host_port:
    ports:
      - {port: ens1f0, bond: gpu1}
    state: down
"""

RETURN = r"""
commands:
  description: The C(ip) commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: str
  sample: [ip link set dev ens1f0 nomaster]
msg:
  description: How many ports were brought to the state, with how many commands.
  returned: always
  type: str
  sample: "1 ports down: 1 commands"
"""

import json
import subprocess
from typing import Any

from ansible.module_utils.basic import AnsibleModule

ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "ports": {"type": "list", "elements": "dict", "required": True},
    "state": {"type": "str", "choices": ["down", "up"], "required": True},
}


def run_cmd(argv: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def link_info(name: str) -> dict[str, Any] | None:
    rc, out, _ = run_cmd(["ip", "-j", "link", "show", "dev", name])
    if rc != 0:
        return None
    links = json.loads(out or "[]")
    return links[0] if links else None


def members(bond: str) -> list[dict[str, Any]]:
    rc, out, _ = run_cmd(["ip", "-j", "link", "show", "master", bond])
    return json.loads(out or "[]") if rc == 0 else []


def _is_up(info: dict[str, Any]) -> bool:
    return "UP" in info.get("flags", [])


def _carries(info: dict[str, Any]) -> bool:
    flags = info.get("flags", [])
    return "UP" in flags and "LOWER_UP" in flags


def port_commands(port: str, bond: str, state: str) -> tuple[list[list[str]], str | None]:
    """The `ip` commands that bring ``port`` to ``state`` (none: already there), or an error."""
    info = link_info(port)
    if info is None:
        return [], f"{port}: no such interface"
    if link_info(bond) is None:
        return [], f"{port}: its bond {bond} does not exist"
    master = info.get("master")
    if master not in (None, bond):
        return [], f"{port}: member of {master}, not of {bond}"
    if state == "down":
        if master is None:
            return ([["ip", "link", "set", "dev", port, "down"]] if _is_up(info) else []), None
        others = [m for m in members(bond) if m.get("ifname") != port and _carries(m)]
        if not others:
            return [], (
                f"{port}: no other member of {bond} is up (refusing to take the server's "
                "last path on this rail down)"
            )
        return [["ip", "link", "set", "dev", port, "nomaster"]], None
    if master is None:  # released by a drain: back into the bond (enslaving opens it)
        return [
            ["ip", "link", "set", "dev", port, "down"],
            ["ip", "link", "set", "dev", port, "master", bond],
            ["ip", "link", "set", "dev", port, "up"],
        ], None
    return ([] if _is_up(info) else [["ip", "link", "set", "dev", port, "up"]]), None


def plan(ports: list[dict[str, str]], state: str) -> tuple[list[list[str]], list[str]]:
    """(commands to run, errors): every error is reported before anything changes."""
    commands: list[list[str]] = []
    errors: list[str] = []
    for entry in ports:
        cmds, error = port_commands(entry["port"], entry["bond"], state)
        commands += cmds
        if error:
            errors.append(error)
    return commands, errors


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    ports, state = module.params["ports"], module.params["state"]
    bad = [
        p for p in ports if not isinstance(p.get("port"), str) or not isinstance(p.get("bond"), str)
    ]
    if bad:
        module.fail_json(msg=f"each port needs 'port' and 'bond' (names): {bad}")
    commands, errors = plan(ports, state)
    if errors:
        module.fail_json(msg="; ".join(errors), ports=ports)
    if not module.check_mode:
        for argv in commands:
            rc, _, err = run_cmd(argv)
            if rc != 0:
                module.fail_json(msg=f"{' '.join(argv)} failed: {err.strip()}")
    module.exit_json(
        changed=bool(commands),
        commands=[" ".join(argv) for argv in commands],
        msg=f"{len(ports)} ports {state}: {len(commands)} commands",
    )


if __name__ == "__main__":
    main()
