#!/usr/bin/python
"""Ansible module: a GPU server's NICs for a dual-plane rail-optimized fabric.

action=configure brings every GPU NIC to the state `controller/labfabric.py:
server_setup_script()` builds: a bond of the NIC's plane-1 and plane-2 ports (LACP for
EVPN-MH; balance-xor for dual-ARP plus a tc clsact egress filter that mirrors
every ARP frame to port 1 and redirects it to port 2), MTU, the address, a source-based
table per NIC (rule from the NIC's address, rail pool via its gateway) and a slow ARP
keep-alive to the gateway; then RoCE host settings where the NIC's tooling exists.

Persistent (default): configure first writes the server's persistent network configuration
under ``config_root`` (``/`` on a server; its own folder per lab server), then applies what
those files say. action=verify changes nothing.

The work is in the collection's module_utils (gpu_nic_*: state, plan, apply, persist,
verify, roce, netlink, script). This file is also run as a script, without Ansible, with
those module_utils on its import path (next to it under ``ansible_collections/``, or through
PYTHONPATH; gpu_nic_script):

- ``dpctl_gpu_nic.py --apply-persistent ROOT``: the boot-time applier (the unit's
  ExecStart on a server; run by hand, or by the lab, where networkd does not run);
- ``dpctl_gpu_nic.py --lacp-independent BOND...`` (each bond down): independent LACP
  control on the bonds, one line per bond; the lab's server images run it between creating
  their bonds and bringing them up.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: dpctl_gpu_nic
short_description: Bond, address, source routing, dual-ARP and RoCE settings of GPU NICs
description:
  - Brings every GPU NIC of a server of a dual-plane rail-optimized fabric to its intended
    state (O(action=configure)), or checks it without changing anything (O(action=verify)).
  - A NIC is a bond of its plane-1 and plane-2 ports (LACP for EVPN multihoming, balance-xor
    for dual-ARP), its address, a source-based routing table (a rule from the NIC's address,
    the rail pool through its gateway), the MTU and a slow ARP keep-alive to the gateway. In
    dual-ARP mode a tc egress filter sends every ARP frame out of both ports.
  - State is read with iproute2 JSON; only the commands that are needed run (one
    C(ip -batch) and one C(tc -batch) per NIC), so a converged server reports no change.
  - With O(persistent=true), configure first writes systemd-networkd files (bonds, ports, MTU,
    address, table, rule), C(/etc/dpctl/gpu-nic.json) and the C(dpctl-gpu-nic.service)
    oneshot for what networkd cannot express, under O(config_root); then it applies what
    those files say.
  - A LACP bond this module creates gets IEEE 802.1AX independent control (the kernel's
    C(coupled_control 0)) while it is still down; a running bond keeps its control until the
    next boot, when the oneshot sets it.
author:
  - dpctl contributors (!UNKNOWN)
requirements:
  - iproute2 (C(ip), C(tc)) on the server
  - Linux bonding; independent LACP control needs a kernel with C(coupled_control)
options:
  action:
    description:
      - V(configure) brings the NICs to their intended state; V(verify) checks them (bond
        members up with carrier and aggregated, the NIC as intended, the gateway's neighbour
        entry reachable, every same-rail peer answering ping) and changes nothing.
    type: str
    choices: [configure, verify]
    default: configure
  nics:
    description:
      - This server's GPU NICs, each a dict with C(rail), C(ip), C(prefixlen) and
        C(gateway); C(bond), C(ports) and C(table) come from O(rails) unless given here.
    type: list
    elements: dict
    required: true
  rails:
    description:
      - What every server shares per rail, keyed by the rail number as a string; each a dict
        with C(bond) (the bond's name), C(ports) (plane-1 and plane-2 port) and C(table).
    type: dict
    default: {}
  rail_members:
    description:
      - Per rail (the rail number as a string), every server's address on it; verify derives
        each NIC's same-rail peers from it.
    type: dict
    default: {}
  bond_options:
    description:
      - The bonds' options as C(ip link add ... type bond) takes them (C(mode), C(lacp_rate),
        C(xmit_hash_policy), C(miimon), C(updelay)).
    type: dict
    required: true
  arp_on_both_ports:
    description:
      - Dual-ARP mode, every ARP frame the bond sends goes out of both ports (mirrored to the
        first, redirected to the second).
    type: bool
    default: false
  rail_pool:
    description:
      - The prefix of every rail's addresses, routed through each NIC's gateway in the NIC's
        own table.
    type: str
    required: true
  mtu:
    description: The MTU of the bonds and their ports.
    type: int
    default: 9000
  arp_keepalive_s:
    description: Interval in seconds of the ARP keep-alive (a ping) from each NIC to its gateway.
    type: int
    default: 2
  roce:
    description:
      - RoCE host settings; with C(enabled), each port trusts DSCP and has PFC on
        C(pfc_priorities) (C(dscp_to_prio) maps DSCP values to priorities) through the first
        of mlnx_qos, dcb or lldptool that supports it; a port none supports is skipped with a
        message.
    type: dict
    default: {}
  neighbour_timeout:
    description:
      - Verify, seconds the first round of checks waits for the gateway's neighbour entry to
        become reachable.
    type: float
    default: 12.0
  settle_s:
    description:
      - Verify repeats its checks until all pass or this many seconds have passed (the
        planes converge after a configure).
    type: float
    default: 60.0
  config_root:
    description:
      - Where the persistent configuration goes (C(/) on a server; a folder of its own per
        lab server).
    type: str
    default: /
  persistent:
    description: Configure writes the persistent configuration first and applies what it says.
    type: bool
    default: true
  applier:
    description:
      - This module's own source, written as the boot-time applier
        (C(/usr/local/lib/dpctl/dpctl_gpu_nic.py), with the module_utils it imports) that the
        oneshot runs; empty leaves an applier written earlier in place.
    type: str
    default: ""
attributes:
  check_mode:
    description: Reports the files it would write and the commands it would run; runs none.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
"""

EXAMPLES = r"""
- name: GPU NICs configured (dual-ARP)
  dpctl.fabric.dpctl_gpu_nic:
    nics:
      - {rail: 1, ip: 10.1.0.10, prefixlen: 31, gateway: 10.1.0.11}
    rails:
      "1": {bond: gpu1, ports: [ens1f0, ens1f1], table: 101}
    bond_options: {mode: balance-xor, xmit_hash_policy: layer3+4, miimon: 100, updelay: 10000}
    arp_on_both_ports: true
    rail_pool: 10.0.0.0/8

- name: GPU NICs checked
  dpctl.fabric.dpctl_gpu_nic:
    action: verify
    nics:
      - {rail: 1, ip: 10.1.0.10, prefixlen: 31, gateway: 10.1.0.11}
    rails:
      "1": {bond: gpu1, ports: [ens1f0, ens1f1], table: 101}
    rail_members:
      "1": {srv0001: 10.1.0.10, srv0002: 10.1.0.12}
    bond_options: {mode: 802.3ad, lacp_rate: fast, xmit_hash_policy: layer3+4}
    rail_pool: 10.0.0.0/8
"""

RETURN = r"""
msg:
  description: What was done (configure), or how many checks passed and how long verify waited.
  returned: always
  type: str
  sample: 8/8 checks passed (0.4 s)
persistent:
  description: The persistent files written (C(persistent PATH)) or removed (C(remove stale PATH)).
  returned: action=configure
  type: list
  elements: str
  sample: [persistent etc/dpctl/gpu-nic.json]
nics:
  description: Per bond, the C(ip) and C(tc) batch lines run (C(commands)) and why (C(why)).
  returned: action=configure
  type: dict
  sample: {gpu3: {commands: [link set gpu3 mtu 9000 up], why: [gpu3 mtu 9000 up]}}
keepalives_started:
  description: The ARP keep-alive command lines started.
  returned: action=configure
  type: list
  elements: str
roce:
  description: Per port, the tool that set its RoCE settings, whether it changed and the commands.
  returned: action=configure
  type: list
  elements: dict
roce_skipped:
  description: Ports whose RoCE settings no NIC QoS tool supports, with what was tried.
  returned: action=configure
  type: list
  elements: str
lacp_control:
  description: Per LACP bond, C(independent) or why its control is coupled.
  returned: action=configure
  type: dict
  sample: {gpu1: independent}
checks:
  description: Every check with its bond, name, result (C(ok)) and detail.
  returned: action=verify
  type: list
  elements: dict
  sample: [{bond: gpu1, check: ens1f0 carrier, ok: true, detail: "BROADCAST,UP,LOWER_UP"}]
waited_s:
  description: Seconds verify waited for every check to pass.
  returned: action=verify
  type: float
  sample: 3.1
"""

import sys
from typing import Any

try:
    from ansible.module_utils.basic import AnsibleModule
except ImportError:  # run as a script without Ansible: the boot-time applier, the lab's servers
    AnsibleModule = None

from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_apply import configure
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_netlink import (
    COUPLED,
    INDEPENDENT,
    read_coupled_control,
    set_coupled_control,
)
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_script import script_main
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_state import (
    expand_nics,
    peers_of,
    run_cmd,
)
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_verify import verify_nics

__all__ = ["COUPLED", "INDEPENDENT", "main", "read_coupled_control", "set_coupled_control"]
"""What the lab reads from this file: the words of ``--lacp-independent``, and the netlink
calls its tests make on a server's applier copy."""

ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "action": {"type": "str", "choices": ["configure", "verify"], "default": "configure"},
    "nics": {"type": "list", "elements": "dict", "required": True},
    "bond_options": {"type": "dict", "required": True},
    "arp_on_both_ports": {"type": "bool", "default": False},
    "rail_pool": {"type": "str", "required": True},
    "mtu": {"type": "int", "default": 9000},
    "arp_keepalive_s": {"type": "int", "default": 2},
    "roce": {"type": "dict", "default": {}},
    "rails": {"type": "dict", "default": {}},
    "rail_members": {"type": "dict", "default": {}},
    "neighbour_timeout": {"type": "float", "default": 12.0},
    "settle_s": {"type": "float", "default": 60.0},
    "config_root": {"type": "str", "default": "/"},
    "persistent": {"type": "bool", "default": True},
    # its own source (~12 kB): kept out of the run's logged events
    "applier": {"type": "str", "default": "", "no_log": True},
}


def _verify(p: dict[str, Any]) -> dict[str, Any]:
    p["peers"] = peers_of(p["nics"], p["rail_members"])
    checks, waited = verify_nics(run_cmd, p)
    failed = [c for c in checks if not c["ok"]]
    msg = (
        f"{len(checks) - len(failed)}/{len(checks)} checks passed ({waited} s)"
        if not failed
        else f"failed after waiting {waited} s for convergence: "
        + "; ".join(f"{c['bond']} {c['check']} ({c['detail']})" for c in failed)
    )
    return {
        "changed": False,
        "failed": bool(failed),
        "checks": checks,
        "msg": msg,
        "waited_s": waited,
    }


def run_module() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = dict(module.params)
    try:
        p["nics"] = expand_nics(p["nics"], p["rails"])
        if p["action"] == "verify":
            module.exit_json(**_verify(p))
        root = p["config_root"] if p["persistent"] else None
        result = configure(run_cmd, p, module.check_mode, root)
        msg = "; ".join(result["roce_skipped"]) or "configured"
        module.exit_json(msg=msg, **result)
    except (RuntimeError, ValueError, OSError) as exc:
        module.fail_json(msg=str(exc))


def main() -> None:
    """As an Ansible module; as a script with ``--apply-persistent`` or ``--lacp-independent``
    (gpu_nic_script, which exits with the script's status)."""
    script_main(sys.argv)
    run_module()


if __name__ == "__main__":
    main()
