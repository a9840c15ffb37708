"""Nornir SimpleInventory (hosts.yaml, groups.yaml, defaults.yaml) for the fabric's switches.

Each host carries only what touches it (role, plane, group, rails, ASN, loopback, pair);
the cabling and servers stay in the facts file. Credentials are references: the password
is read from the environment variable the intent names, at run time, never written here.
"""

from __future__ import annotations

from typing import Any

import yaml

from controller.facts import Fabric, Switch

try:
    _Dumper: type[yaml.SafeDumper] = yaml.CSafeDumper  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper


def dump_yaml(data: Any) -> bytes:
    text: str = yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False)
    return text.encode()


ROLE_GROUP = {"leaf": "leaves", "spine": "spines"}


def host_entry(switch: Switch) -> dict[str, Any]:
    groups = [f"plane{switch.plane}", ROLE_GROUP[switch.role], f"platform_{switch.platform}"]
    return {
        "hostname": switch.mgmt_ip,
        "platform": switch.platform,
        "groups": groups,
        "data": {
            "role": switch.role,
            "plane": switch.plane,
            "group": switch.group,
            "index": switch.index,
            "rails": list(switch.rails),
            "asn": switch.asn,
            "loopback": switch.loopback,
            "router_id": switch.router_id,
            "model": switch.model,
            "pair": switch.pair,
        },
    }


def hosts(fabric: Fabric) -> dict[str, Any]:
    return {s.name: host_entry(s) for s in fabric.switches}


def groups(fabric: Fabric) -> dict[str, Any]:
    result: dict[str, Any] = {f"plane{p}": {"data": {"plane": p}} for p in (1, 2)}
    result.update({group: {"data": {"role": role}} for role, group in ROLE_GROUP.items()})
    result[f"platform_{fabric.intent.platform}"] = {"data": {"platform": fabric.intent.platform}}
    return result


def defaults(fabric: Fabric) -> dict[str, Any]:
    creds = fabric.intent.credentials
    return {
        "username": creds.username,
        "data": {
            "fabric": fabric.intent.name,
            "dual_leaf_mode": fabric.intent.dual_leaf_mode,
            "facts_file": "fabric.json",
            "password_env": creds.password_env,
            "ssh_key_file": creds.ssh_key_file,
        },
    }


def render(fabric: Fabric) -> dict[str, bytes]:
    return {
        "hosts.yaml": dump_yaml(hosts(fabric)),
        "groups.yaml": dump_yaml(groups(fabric)),
        "defaults.yaml": dump_yaml(defaults(fabric)),
    }
