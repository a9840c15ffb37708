"""The embedded lab of a fabric: its cabling plan as lab topology, and its servers' NIC set-up.

The lab builder (`controller.lab`) makes namespaces, veth cables named as the plan's ports,
FRR and sshd; this module says what to build from the fabric facts, and how a GPU server's
image would bring up its NICs. Switches stay at factory state: `dpctl deploy` configures them.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from controller.errors import DpctlError
from controller.facts import Fabric, Server
from controller.lab.errors import LabError
from controller.lab.runtime import down, up
from controller.lab.scripts import DEFAULT_FRR_DAEMONS
from controller.lab.session import LabSession
from controller.lab.substrate import label as substrate_label
from controller.lab.topology import LabCable, LabNode, LabTopology, mgmt_addresses
from controller.resources import collection_dir, collection_python
from controller.servers import (
    ARP_KEEPALIVE_S,
    FAILBACK_HOLD_MS,
    NIC_TABLE_BASE,
    SERVER_MTU,
    bond_name,
)


def lab_prefix() -> str:
    """Prefix of every namespace, bridge and process of the lab (DPCTL_LAB_PREFIX)."""
    return os.environ.get("DPCTL_LAB_PREFIX", "dpl-")


GPU_NIC_MODULE = collection_dir() / "plugins" / "modules" / "dpctl_gpu_nic.py"
"""The servers' NIC module; each EVPN-MH lab server runs it (its source is in the set-up
script, with its module_utils) as ``--lacp-independent``: independent LACP control on its
bonds where the guest's kernel has it, as the module gives real servers."""


@functools.cache
def gpu_nic_module() -> ModuleType:
    """The NIC module (a module of the dpctl.fabric collection), imported once."""
    try:
        return collection_python("plugins.modules.dpctl_gpu_nic")
    except ImportError as exc:
        raise LabFabricError("lab", f"cannot load {GPU_NIC_MODULE}: {exc}") from None


def _lacp_control_line() -> re.Pattern[str]:
    nic = gpu_nic_module()
    return re.compile(rf"\S+ ({re.escape(nic.INDEPENDENT)}|{re.escape(nic.COUPLED)})")


class LabFabricError(DpctlError):
    """The fabric cannot be built as a lab."""


GUESTS_VAR = "DPCTL_LAB_GUESTS"


def lab_guests(given: int | None = None) -> int:
    """How many UML instances the lab is split over: ``given`` (``lab up --guests``), else
    DPCTL_LAB_GUESTS, else 1 (controller/lab/split.py)."""
    if given is not None:
        return given
    raw = os.environ.get(GUESTS_VAR, "").strip() or "1"
    if raw not in ("1", "2"):
        raise LabFabricError(GUESTS_VAR, f"must be 1 or 2, not {raw!r}")
    return int(raw)


def lab_dir(fabric_name: str) -> Path:
    return Path(os.environ.get("DPCTL_LAB_DIR", ".lab")) / fabric_name


def lab_topology(fabric: Fabric) -> LabTopology:
    """Nodes in facts order (switches, then servers) with the fabric's management
    addresses; ports and cables exactly as in the cabling plan."""
    ports: dict[str, list[str]] = {s.name: [] for s in fabric.switches}
    ports.update({s.name: [] for s in fabric.servers})
    cables = []
    for link in fabric.links:
        ports[link.a_device].append(link.a_port)
        ports[link.z_device].append(link.z_port)
        cables.append(LabCable(link.a_device, link.a_port, link.z_device, link.z_port))
    nodes = [
        LabNode(s.name, "switch", s.role, s.plane, tuple(ports[s.name]), s.mgmt_ip)
        for s in fabric.switches
    ] + [
        LabNode(s.name, "server", "server", None, tuple(ports[s.name]), s.mgmt_ip)
        for s in fabric.servers
    ]
    topo = LabTopology(
        name=fabric.intent.name,
        nodes=tuple(nodes),
        cables=tuple(cables),
        mgmt_subnet=str(fabric.intent.addressing.management),
    )
    _check_mgmt(fabric, topo)
    return topo


def _check_mgmt(fabric: Fabric, topo: LabTopology) -> None:
    gateway, addresses, _ = mgmt_addresses(topo)
    expected = {s.name: s.mgmt_ip for s in fabric.switches}
    expected.update({s.name: s.mgmt_ip for s in fabric.servers})
    if gateway != fabric.mgmt_gateway or addresses != expected:
        raise LabFabricError(
            "addressing.management", "the lab would not give nodes the fabric's addresses"
        )


def frr_daemons(fabric: Fabric) -> tuple[str, ...]:
    """The optional FRR daemons a lab switch runs: bfdd only where the intent has BFD (a
    bfdd per switch costs guest CPU at start and runs at real-time priority)."""
    daemons = DEFAULT_FRR_DAEMONS
    return daemons if fabric.intent.bfd else tuple(d for d in daemons if d != "bfdd")


def server_setup_script(fabric: Fabric, server: Server) -> str:
    """Shell script a server image would run: one bond per GPU NIC over its two ports.

    EVPN-MH: LACP (802.3ad) towards the leaf pair, which presents one ES, with independent
    control where the kernel has it (the NIC module's ``--lacp-independent``: a returning
    port then distributes only once the leaf collects). Dual-ARP: both
    ports active (balance-xor), every ARP frame sent out of both ports (tc mirred). Both: a
    hold before a returning port carries traffic. Each NIC routes the rail pool through its
    own gateway from its own address (source-based table), as multi-rail servers do.
    """
    evpn = fabric.intent.dual_leaf_mode == "evpn-mh"
    pool = str(fabric.intent.addressing.rail_subnets)
    ip_lines: list[str] = []
    tc_lines: list[str] = []
    pings: list[str] = []
    for nic in server.nics:
        bond = bond_name(nic)
        table = NIC_TABLE_BASE + nic.rail
        mode = (
            "mode 802.3ad lacp_rate fast" if evpn else "mode balance-xor"
        ) + f" xmit_hash_policy layer3+4 miimon 100 updelay {FAILBACK_HOLD_MS}"
        ip_lines += [f"link add {bond} type bond {mode}"]
        for port in nic.ports:
            ip_lines += [f"link set {port} down", f"link set {port} master {bond}"]
        ip_lines += [
            f"link set {bond} mtu {SERVER_MTU} up",
            f"address add {nic.ip}/{nic.prefixlen} dev {bond}",
            f"rule add from {nic.ip} table {table} priority {table}",
            f"route add {pool} via {nic.gateway} dev {bond} table {table}",
        ]
        if not evpn:
            port_a, port_b = nic.ports
            tc_lines += [
                f"qdisc add dev {bond} clsact",
                f"filter add dev {bond} egress protocol arp u32 match u32 0 0 "
                f"action mirred egress mirror dev {port_a} "
                f"action mirred egress redirect dev {port_b}",
            ]
        # A slow keep-alive to the gateway: the ARP it refreshes goes out of both ports
        # (dual-ARP) or is synced over EVPN, so the leaves keep the host's entry, and so
        # its /32, alive without waiting for application traffic.
        pings.append(
            f"setsid -f ping -q -i {ARP_KEEPALIVE_S} -I {nic.ip} {nic.gateway} "
            "</dev/null >/dev/null 2>&1"
        )
    if evpn:
        # bonds are created down: independent LACP control can only be set then
        created = [line for line in ip_lines if line.startswith("link add ")]
        rest = [line for line in ip_lines if not line.startswith("link add ")]
        script = ["set -e", "ip -batch - <<'EOF'", *created, "EOF"]
        script += _module_utils_lines()
        script += [
            "python3 - --lacp-independent "
            f"{' '.join(bond_name(nic) for nic in server.nics)} <<'EOF'",
            GPU_NIC_MODULE.read_text().rstrip("\n"),
            "EOF",
            "ip -batch - <<'EOF'",
            *rest,
            "EOF",
        ]
    else:
        script = ["set -e", "ip -batch - <<'EOF'", *ip_lines, "EOF"]
    if tc_lines:
        script += ["tc -batch - <<'EOF'", *tc_lines, "EOF"]
    # Announce every NIC: the leaves learn its ARP entry and turn it into a host route.
    script += pings
    return "\n".join(script) + "\n"


def _module_utils_lines() -> list[str]:
    """Shell lines writing the NIC module's module_utils (the same files its boot-time
    applier gets: ``applier_utils()``) into a temporary folder on PYTHONPATH, removed on exit."""
    lines = ["utils=$(mktemp -d)", "trap 'rm -rf \"$utils\"' EXIT", 'export PYTHONPATH="$utils"']
    persist = collection_python("plugins.module_utils.gpu_nic_persist")
    for rel, source in sorted(persist.applier_utils().items()):
        lines += [f'mkdir -p "$utils/{rel.rsplit("/", 1)[0]}"', f"cat > \"$utils/{rel}\" <<'EOF'"]
        lines += [*source.splitlines(), "EOF"]
    return lines


def lacp_control_summary(setup_output: str) -> str:
    """What a server's set-up reports: "provisioned", and for LACP bonds their control
    (the NIC module's ``--lacp-independent`` lines: "BOND independent" or "BOND coupled
    (...)")."""
    line_re = _lacp_control_line()
    modes = sorted(
        {
            match.group(1)
            for line in setup_output.splitlines()
            if (match := line_re.fullmatch(line.strip()))
        }
    )
    return "provisioned" + (f"; LACP control: {', '.join(modes)}" if modes else "")


def server_summary(fabric: Fabric) -> dict[str, Any]:
    return {
        s.name: {"nics": [{"rail": n.rail, "ip": n.ip, "bond": bond_name(n)} for n in s.nics]}
        for s in fabric.servers
    }


def provision_servers(fabric: Fabric, state_dir: Path) -> dict[str, str]:
    """Run each server's NIC set-up over its SSH (as its image would at boot)."""
    results: dict[str, str] = {}
    with LabSession.open(state_dir) as session:
        for server in fabric.servers:
            rc, out, err = session.run(
                server.name, "sh -s", stdin=server_setup_script(fabric, server).encode()
            )
            if rc != 0:
                raise LabFabricError(server.name, f"NIC set-up failed: {err.strip()[-300:]}")
            results[server.name] = lacp_control_summary(out)
    return results


def bring_up(
    fabric: Fabric,
    state_dir: Path,
    prefix: str | None = None,
    bare_servers: bool = False,
    progress: Callable[[str], None] | None = None,
    guests: int | None = None,
) -> dict[str, Any]:
    """Build the fabric's lab at factory state; provision servers unless bare.

    ``progress`` is told each phase as it starts; ``guests``: :func:`lab_guests`."""
    prefix = prefix or lab_prefix()
    count = lab_guests(guests)
    try:
        if progress:
            machine = "guest" if count == 1 else f"{count} instances"
            progress(
                f"{machine}, {len(fabric.switches)} switches and {len(fabric.servers)} servers"
            )
        state = up(
            lab_topology(fabric),
            state_dir,
            prefix=prefix,
            frr_daemons=frr_daemons(fabric),
            guests=count,
        )
        if progress and not bare_servers:
            progress("provisioning servers (bonds, addresses, routes)")
        servers = {} if bare_servers else provision_servers(fabric, state_dir)
    except LabError as exc:
        raise LabFabricError(fabric.intent.name, f"lab up failed: {exc}") from None
    except LabFabricError:
        down(state_dir, prefix=prefix)
        raise
    return {
        "name": state.name,
        "mode": state.mode,
        "substrate": substrate_label(state.substrate),
        "substrate_reason": state.substrate_reason,
        "kernel": state.kernel,
        "instances": state.guests,
        "timings": state.timings,
        "servers": servers,
    }
