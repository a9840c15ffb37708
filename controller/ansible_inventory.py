"""An Ansible inventory of a fabric's GPU servers, from the same facts as the switches.

Pure functions: fabric facts (and how to reach the servers) in, an inventory dict out, in
the YAML/JSON inventory structure Ansible and ansible-runner take. Every server is listed once,
as a host of group ``gpu_servers`` with ``ansible_host`` = its management address and its own
NICs (rail, address, prefix length, gateway). What is the same for every server is said once,
in the group variables: per rail the bond, the two ports and the routing table (``rails``),
and the rail's members, server -> address (``rail_members``), from which the
``dpctl_gpu_nic`` module derives each NIC's same-rail peers; the dual-leaf mode with its bond
options; the rail pool.

Size grows linearly with the GPUs: one NIC entry and one rail-member entry per GPU (the
pairwise peer list it replaces grew with the square of the servers).
"""

from __future__ import annotations

import shlex
from typing import Any

from controller.access import ServerAccess
from controller.errors import DpctlError
from controller.facts import Fabric, Server
from controller.render.roce import DSCP_TO_TC, ROCE_QUEUES
from controller.servers import ARP_KEEPALIVE_S, NIC_TABLE_BASE, SERVER_MTU, bond_name, bond_options

GROUP = "gpu_servers"


def ssh_common_args(access: ServerAccess) -> str:
    """``ansible_ssh_common_args``: strict host keys from the given file, jump by ProxyCommand."""
    args: list[str] = []
    if access.jump_host:
        proxy = ["ssh"]
        if access.key_file:
            proxy += ["-i", access.key_file, "-o", "IdentitiesOnly=yes"]
        if access.known_hosts:
            proxy += ["-o", f"UserKnownHostsFile={access.known_hosts}"]
            proxy += ["-o", "StrictHostKeyChecking=yes"]
        proxy += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={access.connect_timeout}"]
        proxy += ["-W", "%h:%p", "-p", str(access.jump_port or 22)]
        proxy += [f"{access.jump_user}@{access.jump_host}"]
        args += ["-o", f"ProxyCommand={shlex.join(proxy)}"]
    if access.known_hosts:
        args += ["-o", f"UserKnownHostsFile={access.known_hosts}"]
        args += ["-o", "StrictHostKeyChecking=yes"]
    # No ConnectTimeout here: Ansible puts its own `-o ConnectTimeout=` (its `timeout`
    # option) before these arguments and ssh keeps the first value it reads, so the connect
    # timeout is set through `ansible_ssh_timeout` (build_inventory) instead.
    args += ["-o", "BatchMode=yes"]
    return shlex.join(args)


def _roce_vars(fabric: Fabric) -> dict[str, Any]:
    roce = fabric.intent.roce
    lossless = roce.enabled and roce.mode == "lossless"
    return {
        "enabled": roce.enabled,
        "trust": "dscp",
        "pfc_priorities": list(ROCE_QUEUES) if lossless else [],
        # DSCP -> priority for the classes the switches treat specially (the rest is 0).
        "dscp_to_prio": {str(d): tc for d, tc in sorted(DSCP_TO_TC.items()) if tc},
    }


class InventoryError(DpctlError):
    """The fabric facts cannot be expressed as the compact inventory (a per-rail fact differs)."""


def server_vars(server: Server) -> dict[str, Any]:
    """The host variables of one server: management address and its own NICs' addressing."""
    nics = [
        {"rail": nic.rail, "ip": nic.ip, "prefixlen": nic.prefixlen, "gateway": nic.gateway}
        for nic in server.nics
    ]
    return {"ansible_host": server.mgmt_ip, "nics": nics}


def rail_vars(fabric: Fabric) -> dict[str, dict[str, Any]]:
    """Per rail (key: the rail number as text, as JSON keeps it): bond, ports and routing
    table, the same on every server."""
    rails: dict[str, dict[str, Any]] = {}
    for server in fabric.servers:
        for nic in server.nics:
            shared = {
                "bond": bond_name(nic),
                "ports": list(nic.ports),
                "table": NIC_TABLE_BASE + nic.rail,
            }
            if rails.setdefault(str(nic.rail), shared) != shared:
                raise InventoryError(
                    server.name, f"rail {nic.rail} NIC differs from the other servers': {shared}"
                )
    return rails


def rail_members(fabric: Fabric) -> dict[str, dict[str, str]]:
    """Per rail: server -> its NIC address on that rail (each server's peers on a rail are
    the other members; the module derives them)."""
    members: dict[str, dict[str, str]] = {}
    for server in fabric.servers:
        for nic in server.nics:
            members.setdefault(str(nic.rail), {})[server.name] = nic.ip
    return members


def build_inventory(
    fabric: Fabric, access: ServerAccess, servers: list[str] | None = None
) -> dict[str, Any]:
    """The inventory dict of the fabric's servers (all of them, or those named)."""
    wanted = set(servers) if servers is not None else None
    hosts = {s.name: server_vars(s) for s in fabric.servers if wanted is None or s.name in wanted}
    mode = fabric.intent.dual_leaf_mode
    group_vars: dict[str, Any] = {
        "ansible_user": access.user,
        "ansible_ssh_common_args": ssh_common_args(access),
        # the server's own SSH connect (and banner) timeout; see ssh_common_args
        "ansible_ssh_timeout": access.connect_timeout,
        "ansible_python_interpreter": "auto_silent",
        "fabric_name": fabric.intent.name,
        "dual_leaf_mode": mode,
        "bond_options": bond_options(mode),
        "arp_on_both_ports": mode == "dual-arp",
        "rail_pool": str(fabric.intent.addressing.rail_subnets),
        "rails": rail_vars(fabric),
        # every server of the fabric, also when only some are run on: peers stay complete
        "rail_members": rail_members(fabric),
        "mtu": SERVER_MTU,
        "arp_keepalive_s": ARP_KEEPALIVE_S,
        "roce": _roce_vars(fabric),
    }
    if access.key_file:
        group_vars["ansible_ssh_private_key_file"] = access.key_file
    return {"all": {"children": {GROUP: {"hosts": hosts, "vars": group_vars}}}}
