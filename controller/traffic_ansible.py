"""The traffic check on a real fabric: the probe agent on the servers through Ansible.

`playbooks/traffic.yml` starts every flow's receiver, then every sender, and collects each
agent's JSON line; the results are read back from ansible-runner's job events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.access import ServerAccess
from controller.agents import PROBE_AGENT
from controller.drivers.common import lldp_neighbors
from controller.facts import Fabric
from controller.hosts import HostsError, run_hosts
from controller.opstate import StateFolder
from controller.traffic import Flow, TrafficError


def extravars(flows: list[Flow], count: int, rate_pps: float, subflows: int) -> dict[str, Any]:
    return {
        "dpctl_probe_agent": str(PROBE_AGENT),
        "dpctl_traffic": {
            "count": count,
            "rate": rate_pps,
            "subflows": subflows,
            "flows": [
                {
                    "src": f.src,
                    "dst": f.dst,
                    "src_ip": f.src_ip,
                    "dst_ip": f.dst_ip,
                    "port": f.port,
                    "sport_base": 40000 + 100 * index,
                    "sniff": [] if f.pin else list(f.ports),
                    # dpctl accept: raw frames on this one bond member (none: the bond's hash)
                    "pin": f.pin or "",
                    "gateway_mac": f.gateway_mac,
                    "size": f.size,
                }
                for index, f in enumerate(flows)
            ],
        },
    }


def results_from_events(events: list[dict[str, Any]], flows: list[Flow]) -> list[dict[str, Any]]:
    """Each flow's receiver result plus its sender's ``egress``, from the job events."""
    received: dict[int, dict[str, Any]] = {}
    egress: dict[int, dict[str, Any]] = {}
    for event in events:
        data = event.get("event_data", {})
        if event.get("event") != "runner_item_on_ok":
            continue
        task, res = data.get("task", ""), data.get("res", {})
        item = res.get("item", {}).get("item", {})
        if task not in ("Receiver result", "Sender result") or "port" not in item:
            continue
        lines = [line for line in str(res.get("stdout", "")).splitlines() if line.strip()]
        try:
            body = json.loads(lines[-1]) if lines else {}
        except ValueError:
            body = {}
        target = received if task == "Receiver result" else egress
        target[int(item["port"])] = body
    missing = [f.name for f in flows if f.port not in received]
    if missing:
        raise TrafficError("ansible", f"no probe result for: {', '.join(missing)}")
    return [
        {
            **received[f.port],
            "egress": egress.get(f.port, {}).get("egress", {}),
            "sniff_down": egress.get(f.port, {}).get("sniff_down", []),
            "send_errors": int(egress.get(f.port, {}).get("send_errors", 0)),
            "ports": egress.get(f.port, {}).get("ports", {}),
        }
        for f in flows
    ]


LLDP_TASK = "LLDP neighbours"
"""The task of playbooks/lldp.yml whose stdout is a server's ``lldpcli -f json``."""


def lldp_from_events(events: list[dict[str, Any]]) -> dict[str, dict[str, list[dict[str, str]]]]:
    """Per server, its LLDP neighbours (NAPALM's shape) from lldp.yml's job events; a server
    whose lldpcli failed or printed no JSON is left out."""
    found: dict[str, dict[str, list[dict[str, str]]]] = {}
    for event in events:
        data = event.get("event_data", {})
        res = data.get("res", {})
        if event.get("event") != "runner_on_ok" or data.get("task") != LLDP_TASK:
            continue
        if not isinstance(res, dict) or res.get("rc") != 0:
            continue
        try:
            parsed = json.loads(str(res.get("stdout", "")))
        except ValueError:
            continue
        if isinstance(parsed, dict):
            found[str(data.get("host"))] = {
                port: [{"hostname": n["hostname"], "port": n["port"]} for n in items]
                for port, items in lldp_neighbors(parsed).items()
            }
    return found


class AnsibleTraffic:
    """The probe flows through `playbooks/traffic.yml` on the servers (the traffic runner of
    a real fabric; it works against the lab's servers too, through its jump host)."""

    name = "ansible"

    def __init__(self, access: ServerAccess) -> None:
        self.access = access

    def run(
        self,
        fabric: Fabric,
        state: StateFolder,
        flows: list[Flow],
        count: int,
        rate_pps: float,
        subflows: int,
    ) -> list[dict[str, Any]]:
        servers = sorted({f.src for f in flows} | {f.dst for f in flows})
        try:
            result = run_hosts(
                fabric,
                "traffic",
                self.access,
                state,
                servers=servers,
                extravars=extravars(flows, count, rate_pps, subflows),
            )
        except HostsError as exc:
            raise TrafficError("ansible", str(exc)) from None
        bad = [name for name, h in result.hosts.items() if not h.ok]
        if bad:
            raise TrafficError("ansible", f"probe playbook failed on {', '.join(bad)}")
        return results_from_events(_events(result.artifacts), flows)

    def read_lldp(
        self, fabric: Fabric, state: StateFolder, servers: list[str]
    ) -> dict[str, dict[str, list[dict[str, str]]]]:
        try:
            result = run_hosts(fabric, "lldp", self.access, state, servers=servers)
        except HostsError as exc:
            raise TrafficError("ansible", str(exc)) from None
        return lldp_from_events(_events(result.artifacts))


def _events(artifacts: str | Path) -> list[dict[str, Any]]:
    events_dir = Path(artifacts) / "artifacts" / "run" / "job_events"
    return [json.loads(p.read_text()) for p in sorted(events_dir.glob("*.json"))]
