"""How dpctl reaches a fabric's running embedded lab: through the lab's guest.

The switches and servers are namespaces inside the lab's machine (a guest, or this host):
their SSH is reached with the lab's key and host keys, through the guest's sshd as a jump
host; the traffic check runs its probe agents straight in the server namespaces.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from controller.access import FabricAccess, ServerAccess, SwitchAccess
from controller.drivers.common import lldp_neighbors
from controller.facts import Fabric
from controller.lab.errors import LabError, LabStateError
from controller.lab.probe import FlowSpec, run_flows
from controller.lab.scripts import run_dir
from controller.lab.session import LabSession
from controller.lab.state import LabState, load_state
from controller.opstate import StateFolder
from controller.traffic import Flow, TrafficError

CONNECT_TIMEOUT_S = 30
"""The lab's servers sit behind an emulated guest: under load their SSH banner took over
10 s right after a deploy (every server "unreachable")."""


class LabTraffic:
    """The probe flows from the lab's server namespaces (no Ansible)."""

    name = "lab"

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def run(
        self,
        fabric: Fabric,
        state: StateFolder,
        flows: list[Flow],
        count: int,
        rate_pps: float,
        subflows: int,
    ) -> list[dict[str, Any]]:
        specs = [
            FlowSpec(
                f.src, f.dst, f.src_ip, f.dst_ip, f.port, f.ports, f.pin, f.gateway_mac, f.size
            )
            for f in flows
        ]
        try:
            with LabSession.open(self.state_dir) as session:
                return run_flows(session, specs, count, rate_pps, subflows)
        except LabError as exc:
            raise TrafficError("lab", f"probe flows failed: {exc}") from None

    def read_lldp(
        self, fabric: Fabric, state: StateFolder, servers: list[str]
    ) -> dict[str, dict[str, list[dict[str, str]]]]:
        """Each server's lldpd, asked through its socket (one exec in the lab's machine)."""
        try:
            with LabSession.open(self.state_dir) as session:
                run = run_dir(session.state.prefix)
                script = "".join(
                    f"echo {shlex.quote(LLDP_MARK + name)}; "
                    f"lldpcli -u {run}/{name}.lldpd.sock -f json show neighbors 2>/dev/null\n"
                    for name in servers
                    if name in session.state.nodes
                )
                _rc, out, _err = session.root_run(script or "true\n")
        except LabError as exc:
            raise TrafficError("lab", f"reading the servers' LLDP failed: {exc}") from None
        return lldp_blocks(out)


LLDP_MARK = "#### dpctl-lldp "


def lldp_blocks(out: str) -> dict[str, dict[str, list[dict[str, str]]]]:
    """Per server, its lldpcli JSON as NAPALM's neighbours (a server whose lldpd printed
    nothing readable is left out)."""
    found: dict[str, dict[str, list[dict[str, str]]]] = {}
    for block in out.split(LLDP_MARK)[1:]:
        name, _sep, body = block.partition("\n")
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError:
            data = None
        if isinstance(data, dict):
            found[name.strip()] = {
                port: [{"hostname": n["hostname"], "port": n["port"]} for n in items]
                for port, items in lldp_neighbors(data).items()
            }
    return found


def _jump(state: LabState) -> dict[str, Any]:
    if state.jump is None:
        return {}
    host, port = state.jump
    return {
        "jump_host": host,
        "jump_port": port,
        "jump_username": "root",
        "jump_key_file": str(state.key_path),
        "jump_known_hosts": str(state.known_hosts),
    }


def switch_access(state: LabState) -> SwitchAccess:
    args = {
        "key_file": str(state.key_path),
        "known_hosts": str(state.known_hosts),
        # `maintain --action upgrade`: a lab switch has no image; the driver's reboot
        # stand-in restarts its FRR instead, and says so (docs/maintain.md)
        "image_stand_in": True,
        **_jump(state),
    }
    return SwitchAccess(username="root", password=None, optional_args=args, lab=True)


def server_access(state: LabState) -> ServerAccess:
    jump = _jump(state)
    return ServerAccess(
        user="root",
        key_file=str(state.key_path),
        known_hosts=str(state.known_hosts),
        jump_host=jump.get("jump_host"),
        jump_port=jump.get("jump_port"),
        connect_timeout=CONNECT_TIMEOUT_S,
        # the lab's servers share one filesystem: a folder of its own per server
        config_root=f"{run_dir(state.prefix)}/servers/{{{{ inventory_hostname }}}}",
        lab=True,
    )


def lab_access(state_dir: Path) -> FabricAccess | None:
    """The access of the lab whose state is in ``state_dir``; None when no lab runs there."""
    try:
        state = load_state(state_dir)
    except LabStateError:
        return None
    return FabricAccess(
        switches=switch_access(state),
        servers=server_access(state),
        traffic=LabTraffic(state_dir),
        where=f"the lab in {state_dir}",
    )
