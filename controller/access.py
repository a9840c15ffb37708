"""How dpctl reaches a fabric's switches and servers, decided once at the edge.

A :class:`FabricAccess` is built by the command line before anything runs, from the intent's
credential references (a real fabric: :mod:`controller.fabric_access`), a running embedded lab
(:mod:`controller.lab.access`) or a containerlab deployment (:mod:`controller.clab_access`),
and passed down to deploy, verify, drain, hosts and the
traffic check, which never look for a lab themselves. Secrets are never stored here: a
password is read from the environment variable the intent names, at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from controller.catalog import get_model
from controller.errors import DpctlError
from controller.facts import Fabric

if TYPE_CHECKING:
    from controller.opstate import StateFolder
    from controller.traffic import Flow


class AccessError(DpctlError):
    """Credentials or lab access are missing."""


def refuse_virtual(fabric: Fabric) -> None:
    """A fabric of lab-only switch models exists only inside its lab: unless the access is
    the lab's, refuse instead of opening SSH to its management addresses on whatever network
    this machine is on (they are the lab's, not real devices)."""
    virtual = sorted({s.model for s in fabric.switches if get_model(s.model).lab_only})
    if virtual:
        raise AccessError(
            "fabric",
            f"{fabric.intent.name} is a lab fabric ({', '.join(virtual)} switches exist only in "
            f"the embedded lab) and its lab is not running: start it with dpctl lab up",
        )


@dataclass(frozen=True)
class SwitchAccess:
    """How the drivers log in to the switches (NAPALM's username, password, optional_args)."""

    username: str
    password: str | None
    optional_args: dict[str, Any] = field(default_factory=dict)
    lab: bool = False
    """The switches are the embedded lab's (reached through its guest)."""


@dataclass(frozen=True)
class ServerAccess:
    """How Ansible reaches the servers: user, key, host-key file, an optional jump host."""

    user: str
    key_file: str | None = None
    known_hosts: str | None = None
    jump_host: str | None = None
    jump_port: int | None = None
    jump_user: str = "root"
    connect_timeout: int = 10
    config_root: str = "/"
    """Where a server's persistent network configuration goes (an Ansible template per host:
    ``/`` on real servers; the lab's servers, namespaces of one machine, each get a folder)."""
    lab: bool = False
    """The servers are the embedded lab's."""


class TrafficRunner(Protocol):
    """The server side's runner. ``run``: probe flows between servers, each flow's receiver
    result (with its sender's per-member ``egress``), in the order of ``flows``.
    ``read_lldp``: each server's LLDP neighbours per port, as NAPALM's ``get_lldp_neighbors``
    (a server whose lldpd does not answer is left out)."""

    name: str

    def read_lldp(
        self, fabric: Fabric, state: StateFolder, servers: list[str]
    ) -> dict[str, dict[str, list[dict[str, str]]]]: ...

    def run(
        self,
        fabric: Fabric,
        state: StateFolder,
        flows: list[Flow],
        count: int,
        rate_pps: float,
        subflows: int,
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class FabricAccess:
    """Everything the operations need to reach one fabric."""

    switches: SwitchAccess
    servers: ServerAccess
    traffic: TrafficRunner
    where: str
    """For people: "credentials of the intent", "lab in .lab/<name>", ..."""
    source: str = "credentials"
    """Which kind of target this is: embedded (the embedded lab), containerlab (a
    containerlab deployment) or credentials (the intent's, a real fabric)."""
