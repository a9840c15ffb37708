"""containerlab: the fabric's topology for containerlab (kinds by platform, images, ports,
management addresses, credentials) and the deployment containerlab made of it."""

from controller.clab.deployment import ClabNode, Deployment, containers_running, read
from controller.clab.export import Export, export
from controller.clab.keys import DeploymentKeys, ensure_keys, keys_dir
from controller.clab.kinds import (
    KIND_CHOICES,
    ClabError,
    ClabKind,
    SwitchKind,
    interface_names,
    switch_kind,
    vs_interface,
    vs_port,
)
from controller.clab.runtime import deploy
from controller.clab.topology import default_path, render, topology

__all__ = [
    "KIND_CHOICES",
    "ClabError",
    "ClabKind",
    "ClabNode",
    "Deployment",
    "DeploymentKeys",
    "Export",
    "SwitchKind",
    "containers_running",
    "default_path",
    "deploy",
    "ensure_keys",
    "export",
    "interface_names",
    "keys_dir",
    "read",
    "render",
    "switch_kind",
    "topology",
    "vs_interface",
    "vs_port",
]
