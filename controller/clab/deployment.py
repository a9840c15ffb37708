"""A containerlab deployment of a fabric, as containerlab itself describes it.

``containerlab deploy -t DIR/<fabric>.clab.yml`` writes ``clab-<name>/topology-data.json`` in
DIR, or in ``$CLAB_LABDIR_BASE`` when that is set (srl-labs/containerlab
types/topo_paths.go SetLabDirByPrefix). Its default template (core/export_templates/auto.tmpl,
docs/manual/inventory.md "Topology Data") gives ``name`` and, per node under ``nodes``,
``shortname``, ``longname``, ``kind``, ``image``, ``mgmt-ipv4-address`` and ``labels`` (the
topology's own labels plus containerlab's). dpctl reads that file and checks it against the
inventory: every switch and server present, each at the management address the inventory
gives it. A plain ``containerlab destroy`` keeps the folder (only ``--cleanup`` removes it),
so when a Docker daemon answers, dpctl also asks it whether the lab's containers run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.clab.keys import DeploymentKeys, keys_dir
from controller.clab.kinds import ClabError
from controller.clab.topology import default_path
from controller.facts import Fabric

TOPOLOGY_DATA = "topology-data.json"
LAB_DIR_PREFIX = "clab-"
TOPOLOGY_ENV = "DPCTL_CLAB_TOPOLOGY"
"""The topology file of the deployment (default labs/<fabric>.clab.yml)."""


@dataclass(frozen=True)
class ClabNode:
    name: str
    kind: str
    image: str
    mgmt_ipv4: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Deployment:
    """One deployed lab: where its data is, its nodes, the credentials dpctl made for it."""

    name: str
    data_file: Path
    nodes: dict[str, ClabNode]
    keys: DeploymentKeys


def topology_file(fabric: Fabric) -> Path:
    return Path(os.environ.get(TOPOLOGY_ENV) or default_path(fabric))


def lab_dir(topology: Path, name: str) -> Path:
    """Where containerlab puts the lab's folder (same rule as containerlab's)."""
    base = os.environ.get("CLAB_LABDIR_BASE") or str(topology.resolve().parent)
    return Path(base) / f"{LAB_DIR_PREFIX}{name}"


def parse_nodes(data: dict[str, Any], where: str) -> dict[str, ClabNode]:
    """The nodes of a topology-data.json document; ClabError naming a malformed field."""
    raw = data.get("nodes")
    if not isinstance(raw, dict):
        raise ClabError(where, "no `nodes` object: not containerlab's topology data")
    nodes: dict[str, ClabNode] = {}
    for key, node in raw.items():
        if not isinstance(node, dict) or not isinstance(node.get("mgmt-ipv4-address"), str):
            raise ClabError(f"{where}: nodes.{key}", "no mgmt-ipv4-address")
        labels = node.get("labels") or {}
        nodes[key] = ClabNode(
            name=str(node.get("shortname") or key),
            kind=str(node.get("kind", "")),
            image=str(node.get("image", "")),
            mgmt_ipv4=node["mgmt-ipv4-address"],
            labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        )
    return nodes


def check_against(fabric: Fabric, nodes: dict[str, ClabNode], where: str) -> None:
    """Every switch and server deployed, each at its inventory management address."""
    expected = {s.name: s.mgmt_ip for s in fabric.switches}
    expected |= {s.name: s.mgmt_ip for s in fabric.servers}
    missing = sorted(set(expected) - set(nodes))
    if missing:
        raise ClabError(
            where,
            f"the deployment lacks {len(missing)} nodes of {fabric.intent.name} "
            f"({', '.join(missing[:5])}): deploy a current `dpctl lab export`",
        )
    moved = [
        f"{n} at {nodes[n].mgmt_ipv4} (inventory: {ip})"
        for n, ip in expected.items()
        if nodes[n].mgmt_ipv4 != ip
    ]
    if moved:
        raise ClabError(
            where, f"nodes are not at their inventory addresses: {', '.join(moved[:5])}"
        )


def read(fabric: Fabric, topology: Path) -> Deployment | None:
    """The deployment of ``topology`` (None when containerlab has written no data for it)."""
    data_file = lab_dir(topology, fabric.intent.name) / TOPOLOGY_DATA
    if not data_file.is_file():
        return None
    try:
        data = json.loads(data_file.read_text())
    except (OSError, ValueError) as exc:
        raise ClabError(
            str(data_file), f"cannot read containerlab's topology data: {exc}"
        ) from None
    if not isinstance(data, dict) or data.get("name") != fabric.intent.name:
        name = data.get("name") if isinstance(data, dict) else None
        raise ClabError(str(data_file), f"is lab {name!r}, not fabric {fabric.intent.name}")
    nodes = parse_nodes(data, str(data_file))
    check_against(fabric, nodes, str(data_file))
    return Deployment(fabric.intent.name, data_file, nodes, keys_dir(topology, fabric.intent.name))


def containers_running(name: str) -> bool | None:
    """Whether Docker runs containers of lab ``name`` (containerlab's ``containerlab`` label);
    None when no Docker daemon answers here (then the topology data is all dpctl knows)."""
    docker = shutil.which("docker")
    if docker is None:
        return None
    try:
        result = subprocess.run(
            [docker, "ps", "-q", "--filter", f"label=containerlab={name}"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return bool(result.stdout.strip())
