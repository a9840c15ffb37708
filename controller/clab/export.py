"""`dpctl lab export`: the topology file and, beside it, the deployment's credentials."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.clab.keys import DeploymentKeys, ensure_keys, keys_dir
from controller.clab.kinds import switch_kind
from controller.clab.topology import render
from controller.facts import Fabric
from controller.outputs import writer


@dataclass(frozen=True)
class Export:
    topology: Path
    keys: DeploymentKeys
    kind: str
    nodes: int
    links: int


def export(fabric: Fabric, target: Path, requested: str = "auto") -> Export:
    """Write ``target`` and make its credentials folder (kept when it exists); nothing is
    written when the fabric cannot run in containerlab."""
    content = render(fabric, requested, target)
    kind = switch_kind(fabric.intent.platform, requested)
    addresses = [s.mgmt_ip for s in fabric.servers]
    if kind.keys_by_bind:
        addresses = [s.mgmt_ip for s in fabric.switches] + addresses
    keys = ensure_keys(keys_dir(target, fabric.intent.name), fabric.intent.name, addresses)
    writer.write_all(target.parent, {target.name: content})
    return Export(
        topology=target,
        keys=keys,
        kind=kind.kind,
        nodes=len(fabric.switches) + len(fabric.servers),
        links=len(fabric.links),
    )
