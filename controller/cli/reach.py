"""Where the fabric is, decided at the edge and said out loud: ``--target`` picks the
embedded lab, a containerlab deployment or the intent's credentials; ``auto`` takes the
first that exists, in that order (a running embedded lab, else a containerlab deployment of
the fabric, else the credentials: a lab-only fabric with neither is refused there). Only
commands that talk to switches or servers import this (it loads the lab's code)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from controller.access import AccessError, FabricAccess
from controller.clab_access import containerlab_access
from controller.fabric_access import credentials_access
from controller.facts import Fabric
from controller.lab.access import lab_access
from controller.lab.fabric import lab_dir

TARGETS = ("auto", "embedded", "containerlab", "credentials")
TargetOpt = Annotated[
    str,
    typer.Option(
        "--target",
        help="Where the fabric runs: embedded (dpctl lab up), containerlab (a containerlab "
        "deployment of `dpctl lab export`'s topology; DPCTL_CLAB_TOPOLOGY names the file, "
        "default labs/<fabric>.clab.yml), credentials (real switches) or auto: the first "
        "that exists in that order.",
    ),
]


WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Switches worked on at once (env DPCTL_WORKERS; default 16, 8 in the embedded "
        "lab, whose switches share one CPU: docs/lab-seed.md).",
    ),
]
ConnectTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--connect-timeout",
        help="Seconds for a switch's TCP connect, SSH banner and login before it is named "
        "unreachable (env DPCTL_CONNECT_TIMEOUT; default 30).",
    ),
]
CommandTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--command-timeout",
        help="Seconds a command on a switch may stay silent (env DPCTL_COMMAND_TIMEOUT; "
        "default 300).",
    ),
]


def _embedded(fabric: Fabric) -> FabricAccess | None:
    access = lab_access(lab_dir(fabric.intent.name))
    return None if access is None else dataclasses.replace(access, source="embedded")


def fabric_access(fabric: Fabric, target: str = "auto") -> FabricAccess:
    """The access of ``target`` (AccessError when that target is not there)."""
    if target not in TARGETS:
        raise AccessError("--target", f"unknown target {target!r}: one of {', '.join(TARGETS)}")
    name = fabric.intent.name
    if target in ("auto", "embedded"):
        access = _embedded(fabric)
        if access is not None or target == "embedded":
            if access is None:
                raise AccessError("--target", f"the embedded lab of {name} is not running")
            return access
    if target in ("auto", "containerlab"):
        access = containerlab_access(fabric)
        if access is not None or target == "containerlab":
            if access is None:
                raise AccessError(
                    "--target",
                    f"no running containerlab deployment of {name} (containerlab writes "
                    f"clab-{name}/topology-data.json beside the topology file)",
                )
            return access
    return credentials_access(fabric)  # a lab-only fabric is refused when it is used


def target_summary(access: FabricAccess) -> dict[str, Any]:
    """What the command's --json says about where it went."""
    return {"source": access.source, "where": access.where}


def target_line(access: FabricAccess) -> str:
    return f"target: {access.source} ({access.where})"
