"""Which containerlab node a switch becomes, decided by the intent's platform, and how the
plan's port names become that node's interface names.

- ``frr`` -> containerlab's ``linux`` kind running the image built from
  ``labs/images/frr-switch`` (Debian 12 FRR with frr-reload.py, lldpd, sshd): the FRR
  driver's own layout, reached over SSH as root with the deployment's key. Interfaces keep
  the plan's names (``swp1``, ``Ethernet0``): a Linux container's interfaces are named by the
  topology's endpoints.
- ``sonic`` -> ``sonic-vm``: community SONiC in a VM (srl-labs/vrnetlab ``sonic``), which has
  sshd, systemd and Docker with FRR in its ``bgp`` container, what dpctl's SONiC driver
  uses. The ``sonic-vs`` container kind cannot serve: containerlab starts its daemons with
  ``supervisord`` in one container (nodes/sonic/sonic.go PostDeploy), so there is no sshd,
  no systemd-run and no ``bgp`` container. A SONiC VM's ports are those of the VS image's
  hardware SKU (Force10-S6000: 32 ports, eth<k> carries Ethernet<4(k-1)>, lanemap.ini of
  sonic-buildimage's device/virtual/x86_64-kvm_x86_64-r0/Force10-S6000; containerlab's
  docs/manual/kinds/sonic-vm.md "previous interface + 4"), so a plan port is placed by its
  number, never by its rank, and a plan with a port the SKU lacks is refused by name.
- ``asternos`` -> refused: AsterNOS has no public container or VM image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from controller.errors import DpctlError
from controller.facts import Fabric

ClabKind = Literal["linux", "sonic-vm"]
KIND_CHOICES = ("auto", "linux", "sonic-vm", "sonic-vs")

FRR_SWITCH_IMAGE = "dpctl/frr-switch:bookworm"
"""Built from labs/images/frr-switch (see labs/images/README.md)."""
GPU_SERVER_IMAGE = "dpctl/gpu-server:bookworm"
"""Built from labs/images/gpu-server."""
SONIC_VM_IMAGE = "vrnetlab/sonic_sonic-vs:202405"
"""What srl-labs/vrnetlab's ``sonic`` Makefile tags a sonic-vs-202405.qcow2 as."""

VS_SKU = "Force10-S6000"
VS_PORTS = 32
VS_LANES_PER_PORT = 4
MGMT_INTERFACE = "eth0"
IFNAME_MAX = 15
"""Linux interface names are at most IFNAMSIZ - 1 bytes."""

SONIC_VS_REFUSAL = (
    "the sonic-vs container cannot be driven by dpctl: containerlab starts its SONiC daemons "
    "with supervisord in one container, which has no sshd, no systemd (systemd-run) and no "
    "`bgp` container, all three of which dpctl's SONiC driver uses; sonic-vm (SONiC in a VM "
    "through vrnetlab) has them"
)
ASTERNOS_REFUSAL = (
    "AsterNOS has no public container or VM image (Asterfusion ships it on its switches "
    "only), so containerlab cannot run it; to lab this fabric's design, copy the intent "
    "with `platform: frr` (Linux + FRR switches) and export that"
)


class ClabError(DpctlError):
    """containerlab export, deployment or access failed."""


@dataclass(frozen=True)
class SwitchKind:
    """The containerlab node of the fabric's switches."""

    kind: ClabKind
    image: str
    user: str
    """Who dpctl logs in as: root (our image) or the SONiC VM's admin."""
    keys_by_bind: bool
    """The deployment's key reaches the node through a bind mount (our images); a VM gets it
    from containerlab (the ssh-agent's and ~/.ssh keys, nodes/sonic_vm PostDeploy)."""


KINDS: dict[str, SwitchKind] = {
    "frr": SwitchKind("linux", FRR_SWITCH_IMAGE, "root", keys_by_bind=True),
    "sonic": SwitchKind("sonic-vm", SONIC_VM_IMAGE, "admin", keys_by_bind=False),
}


def switch_kind(platform: str, requested: str = "auto") -> SwitchKind:
    """The node kind for a platform; ``requested`` (from --kind) must agree with it."""
    if requested not in KIND_CHOICES:
        raise ClabError("--kind", f"unknown kind {requested!r}; choose one of {KIND_CHOICES}")
    if requested == "sonic-vs":
        raise ClabError("--kind", SONIC_VS_REFUSAL)
    if platform == "asternos":
        raise ClabError("platform", ASTERNOS_REFUSAL)
    if platform not in KINDS:
        raise ClabError("platform", f"no containerlab node kind for platform {platform!r}")
    chosen = KINDS[platform]
    if requested not in ("auto", chosen.kind):
        raise ClabError(
            "--kind",
            f"--kind {requested} does not run platform {platform} (the intent's platform): "
            f"its switches are {chosen.kind} nodes",
        )
    return chosen


_ETHERNET = re.compile(r"Ethernet(\d+)")
_ETH = re.compile(r"eth(\d+)")


def vs_interface(port: str) -> str | None:
    """The SONiC VM interface that carries plan port ``port``: eth<N/4 + 1> for Ethernet<N>
    when the VS SKU has that port, else None."""
    match = _ETHERNET.fullmatch(port)
    if match is None:
        return None
    number = int(match.group(1))
    if number % VS_LANES_PER_PORT or number // VS_LANES_PER_PORT >= VS_PORTS:
        return None
    return f"eth{number // VS_LANES_PER_PORT + 1}"


def vs_port(interface: str) -> str | None:
    """The inverse: the SONiC port eth<k> carries (Ethernet<4(k-1)>), None off the SKU."""
    match = _ETH.fullmatch(interface)
    if match is None or not 1 <= int(match.group(1)) <= VS_PORTS:
        return None
    return f"Ethernet{(int(match.group(1)) - 1) * VS_LANES_PER_PORT}"


def vs_misfit(port: str) -> str | None:
    """Why a plan port has no place on the SONiC VM (None when it has one)."""
    if vs_interface(port) is not None:
        return None
    match = _ETHERNET.fullmatch(port)
    if match is None:
        return "not a SONiC EthernetN name"
    number = int(match.group(1))
    if number % VS_LANES_PER_PORT:
        return f"lane {number} is not a multiple of {VS_LANES_PER_PORT}"
    return f"beyond Ethernet{(VS_PORTS - 1) * VS_LANES_PER_PORT}"


def linux_misfit(port: str) -> str | None:
    """Why a plan port cannot be a Linux container interface of that name (None if it can)."""
    if port == MGMT_INTERFACE:
        return "eth0 is the container's management interface"
    if not 0 < len(port) <= IFNAME_MAX or any(c in port for c in "/: \t") or port in (".", ".."):
        return f"not a Linux interface name (at most {IFNAME_MAX} characters, no / : or space)"
    return None


def interface_names(fabric: Fabric, kind: SwitchKind) -> dict[str, dict[str, str]]:
    """Device -> plan port -> the containerlab interface carrying it; every port of every
    cable, or ClabError naming each port that has no interface on its node."""
    names: dict[str, dict[str, str]] = {}
    misfits: list[str] = []
    switches = {s.name for s in fabric.switches}
    for link in fabric.links:
        for device, port in ((link.a_device, link.a_port), (link.z_device, link.z_port)):
            vm = device in switches and kind.kind == "sonic-vm"
            iface = vs_interface(port) if vm else port
            why = vs_misfit(port) if vm else linux_misfit(port)
            if why is not None or iface is None:
                misfits.append(f"{device}:{port} ({why})")
                continue
            names.setdefault(device, {})[port] = iface
    if misfits:
        raise ClabError("ports", _misfit_reason(kind, misfits))
    return names


def _misfit_reason(kind: SwitchKind, misfits: list[str]) -> str:
    shown = ", ".join(misfits[:6]) + (f" and {len(misfits) - 6} more" if len(misfits) > 6 else "")
    if kind.kind == "sonic-vm":
        return (
            f"{len(misfits)} plan ports have no interface on a SONiC VM: {shown}. The SONiC VS "
            f"image's SKU ({VS_SKU}) has {VS_PORTS} ports, Ethernet0 to "
            f"Ethernet{(VS_PORTS - 1) * VS_LANES_PER_PORT} every {VS_LANES_PER_PORT} lanes "
            "(eth1 = Ethernet0, eth2 = Ethernet4, ...), and dpctl's PORT table for a real "
            "model carries that model's lanes, which the VS SKU does not have"
        )
    return f"{len(misfits)} plan ports cannot be container interfaces: {shown}"
