"""How dpctl reaches a fabric that containerlab runs: by the management addresses
containerlab's topology data gives (each checked against the inventory), with the key and
known hosts `dpctl lab export` made for the deployment (:mod:`controller.clab.keys`).

Switches built from labs/images/frr-switch are logged in to as root; a SONiC VM as its
``admin`` (containerlab puts the keys of the ssh-agent into it, nodes/sonic_vm). Servers are
reached by Ansible (the traffic check too); they are containers without systemd, so their
persistent network files go under ``SERVER_CONFIG_ROOT`` and no boot unit is enabled. The
access is a lab's (``lab=True``): its addresses are the deployment's, on this machine's
containerlab management network, so a lab-only fabric is not refused here.
"""

from __future__ import annotations

from controller.access import FabricAccess, ServerAccess, SwitchAccess
from controller.clab import ClabError, Deployment, containers_running, read, switch_kind
from controller.clab.deployment import topology_file
from controller.facts import Fabric
from controller.traffic_ansible import AnsibleTraffic

SERVER_CONFIG_ROOT = "/var/lib/dpctl-host"
CONNECT_TIMEOUT_S = 15


def deployment_access(fabric: Fabric, deployment: Deployment) -> FabricAccess:
    """The FabricAccess of a containerlab deployment of ``fabric``."""
    keys = deployment.keys
    if not keys.client_key.is_file():
        raise ClabError(
            str(keys.root),
            "the deployment's key is missing: it is made by `dpctl lab export` beside the "
            "topology file, before `containerlab deploy`",
        )
    kind = switch_kind(fabric.intent.platform)
    args = {"key_file": str(keys.client_key), "known_hosts": str(keys.known_hosts)}
    servers = ServerAccess(
        user="root",
        key_file=str(keys.client_key),
        known_hosts=str(keys.known_hosts),
        connect_timeout=CONNECT_TIMEOUT_S,
        config_root=SERVER_CONFIG_ROOT,
        lab=True,
    )
    return FabricAccess(
        switches=SwitchAccess(username=kind.user, password=None, optional_args=args, lab=True),
        servers=servers,
        traffic=AnsibleTraffic(servers),
        where=f"the containerlab deployment {deployment.data_file.parent}",
        source="containerlab",
    )


def find_deployment(fabric: Fabric) -> Deployment | None:
    """The fabric's containerlab deployment when one is there and, where a Docker daemon
    answers, its containers run; None otherwise."""
    deployment = read(fabric, topology_file(fabric))
    if deployment is None or containers_running(fabric.intent.name) is False:
        return None
    return deployment


def containerlab_access(fabric: Fabric) -> FabricAccess | None:
    """The access of the fabric's running containerlab deployment, else None."""
    deployment = find_deployment(fabric)
    return None if deployment is None else deployment_access(fabric, deployment)
