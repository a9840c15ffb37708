"""GPU servers with Ansible: `dpctl hosts configure|verify` through ansible-runner.

The inventory comes from the fabric facts (`controller.ansible_inventory`); the playbooks,
roles and modules are the Ansible collection `dpctl.fabric` in `playbooks/`
(docs/hosts-ansible.md). How the servers are reached (a real fabric's credentials, or a
running lab's guest as jump host) is the caller's ``ServerAccess`` (`controller.access`),
decided before anything runs.

Each run keeps its artifacts (inventory, events, stdout) under
``ansible/<timestamp>-<action>/`` in the fabric's state folder (`controller.opstate`).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from controller.access import ServerAccess, refuse_virtual
from controller.ansible_inventory import build_inventory
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.opstate import StateFolder
from controller.resources import collection_dir, collections_path
from controller.servers import bond_name

PLAYBOOKS = collection_dir() / "playbooks"
ANSIBLE_REQUIREMENT = "ansible-core>=2.16,<2.19"
Action = Literal["configure", "verify", "host_ports", "traffic", "lldp"]
MODULES = ("dpctl_gpu_nic", "dpctl_host_port")


class HostsError(DpctlError):
    """The GPU servers cannot be configured or verified (bad input, missing tooling)."""


@dataclass
class HostOutcome:
    name: str
    ok: bool = True
    changed: int = 0
    unreachable: bool = False
    failed: bool = False
    message: str = ""
    roce_skipped: list[str] = field(default_factory=list)
    lacp_control: dict[str, str] = field(default_factory=dict)
    """Per LACP bond: "independent", or why it is coupled (the NIC module's words)."""
    checks: list[dict[str, Any]] = field(default_factory=list)
    commands: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "changed": self.changed,
            "unreachable": self.unreachable,
            "failed": self.failed,
            "message": self.message,
            "roce_skipped": self.roce_skipped,
            "lacp_control": self.lacp_control,
            "checks": self.checks,
            "commands": self.commands,
        }


@dataclass
class HostsResult:
    action: str
    fabric: str
    check: bool
    hosts: dict[str, HostOutcome]
    artifacts: str
    seconds: float
    rc: int

    @property
    def unreachable(self) -> list[str]:
        return sorted(n for n, h in self.hosts.items() if h.unreachable)

    @property
    def failed(self) -> list[str]:
        return sorted(n for n, h in self.hosts.items() if h.failed and not h.unreachable)

    @property
    def changed(self) -> int:
        return sum(h.changed for h in self.hosts.values())

    @property
    def ok(self) -> bool:
        return not self.unreachable and not self.failed and self.rc == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "action": self.action,
            "fabric": self.fabric,
            "check": self.check,
            "changed": self.changed,
            "unreachable": self.unreachable,
            "failed": self.failed,
            "hosts": {n: h.to_dict() for n, h in self.hosts.items()},
            "artifacts": self.artifacts,
            "seconds": round(self.seconds, 2),
        }


def require_ansible() -> None:
    """ansible-runner drives `ansible-playbook` (ansible-core): both must be installed."""
    if importlib.util.find_spec("ansible_runner") is None:
        raise HostsError("ansible", "ansible-runner is not installed: pip install ansible-runner")
    if importlib.util.find_spec("ansible") is None or shutil.which("ansible-playbook") is None:
        raise HostsError(
            "ansible",
            f"ansible-core is not installed (no ansible-playbook): "
            f"pip install '{ANSIBLE_REQUIREMENT}'",
        )


def select_servers(fabric: Fabric, server: str | None) -> list[str]:
    names = [s.name for s in fabric.servers]
    if server is None:
        return names
    if server not in fabric.server_by_name:
        shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
        raise HostsError(
            "--server", f"no server {server!r} in fabric {fabric.intent.name} ({shown})"
        )
    return [server]


def _run_dir(state: StateFolder, action: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    path = state.ansible_dir / f"{stamp}-{action}"
    path.mkdir(parents=True, exist_ok=False)
    return path.resolve()


def _outcomes(events: list[dict[str, Any]], names: list[str]) -> dict[str, HostOutcome]:
    """Per-host outcome from ansible-runner's events (the playbook's own stats are counted
    per task; `changed` here counts tasks that changed something on the host)."""
    hosts = {n: HostOutcome(n) for n in names}
    for ev in events:
        data = ev.get("event_data", {})
        host = data.get("host")
        if host not in hosts:
            continue
        out = hosts[host]
        res = data.get("res", {}) if isinstance(data.get("res"), dict) else {}
        kind = ev.get("event")
        if kind == "runner_on_unreachable":
            out.unreachable, out.ok = True, False
            out.message = str(res.get("msg", "unreachable")).strip()
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            out.failed, out.ok = True, False
            out.message = str(res.get("msg", "failed")).strip()
            out.checks = res.get("checks", out.checks)
        elif kind == "runner_on_ok" and data.get("task_action", "").endswith(MODULES):
            out.changed += 1 if res.get("changed") else 0
            out.message = str(res.get("msg", ""))
            out.roce_skipped = list(res.get("roce_skipped", []))
            out.lacp_control = {str(b): str(c) for b, c in res.get("lacp_control", {}).items()}
            out.checks = res.get("checks", [])
            out.commands = {
                bond: list(nic.get("commands", []))
                for bond, nic in res.get("nics", {}).items()
                if nic.get("commands")
            }
            if res.get("commands"):
                out.commands["ports"] = list(res["commands"])
            # what else made a host "changed": without these a restarted keep-alive or a
            # rewritten file showed as a change with no commands at all
            if res.get("keepalives_started"):
                out.commands["keep-alive"] = list(res["keepalives_started"])
            if res.get("persistent"):
                out.commands["persistent"] = list(res["persistent"])
    return hosts


def _envvars(run_dir: Path) -> dict[str, str]:
    """ansible-playbook's settings for a run (its temporary files under ``run_dir``)."""
    return {
        "ANSIBLE_PIPELINING": "True",
        # no ControlPersist master: a kept master to a server whose path died hangs the next
        # run for minutes (TCP retransmits); a play has two tasks, fresh connections are cheap
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o ServerAliveInterval=5 -o ServerAliveCountMax=3",
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        # the playbooks name modules and roles by FQCN (dpctl.fabric.*): this installation's
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path()),
        "ANSIBLE_LOCAL_TEMP": str(run_dir / "tmp"),
        "ANSIBLE_FORKS": "16",
        "ANSIBLE_NOCOLOR": "True",
    }


def _mark_from_stats(hosts: dict[str, HostOutcome], stats: dict[str, Any]) -> None:
    """The play's recap has the last word on who was unreachable or failed."""
    for name in stats.get("dark", {}) or {}:
        if name in hosts:
            hosts[name].unreachable, hosts[name].ok = True, False
    for name in stats.get("failures", {}) or {}:
        if name in hosts and not hosts[name].unreachable:
            hosts[name].failed, hosts[name].ok = True, False


def run_hosts(
    fabric: Fabric,
    action: Action,
    access: ServerAccess,
    state: StateFolder,
    server: str | None = None,
    check: bool = False,
    servers: list[str] | None = None,
    extravars: dict[str, Any] | None = None,
) -> HostsResult:
    """Run one of the playbooks on the fabric's servers (one of them, or the ``servers``)."""
    names = servers if servers is not None else select_servers(fabric, server)
    if not access.lab:
        refuse_virtual(fabric)
    require_ansible()
    # deferred: only the commands that run Ansible need ansible_runner (0.1-0.3 s to import,
    # by the machine's load), and require_ansible has named what is missing first
    import ansible_runner

    inventory = build_inventory(fabric, access, names)
    run_dir = _run_dir(state, action)
    # compact: json's C encoder (indent would take the pure-Python one: 1 s at 16,384 GPUs)
    (run_dir / "inventory.json").write_text(json.dumps(inventory, sort_keys=True))
    start = time.monotonic()
    runner = ansible_runner.run(
        private_data_dir=str(run_dir),
        project_dir=str(PLAYBOOKS),
        playbook=str(PLAYBOOKS / f"{action}.yml"),
        inventory=inventory,
        cmdline="--check" if check else None,
        envvars=_envvars(run_dir),
        extravars={"dpctl_config_root": access.config_root, **(extravars or {})},
        quiet=True,
        json_mode=False,
        ident="run",
        # no signal-handler cancel: ansible-runner's own would cancel the whole run (rc 254,
        # every host unreported) on a stray SIGTERM/SIGINT; Ctrl-C still interrupts.
        cancel_callback=lambda: False,
    )
    seconds = time.monotonic() - start
    hosts = _outcomes(list(runner.events), names)
    _mark_from_stats(hosts, runner.stats or {})
    if runner.rc != 0 and not any(h.unreachable or h.failed for h in hosts.values()):
        stdout = (run_dir / "artifacts" / "run" / "stdout").read_text(errors="replace")
        raise HostsError(
            f"ansible {action}", f"ansible-playbook exited {runner.rc}: {stdout[-600:]}"
        )
    return HostsResult(
        action=action,
        fabric=fabric.intent.name,
        check=check,
        hosts=hosts,
        artifacts=str(run_dir),
        seconds=seconds,
        rc=int(runner.rc or 0),
    )


def leaf_facing_ports(fabric: Fabric, leaf: str) -> dict[str, list[dict[str, str]]]:
    """server -> its ports cabled to ``leaf``, each with the bond it is a member of."""
    ports: dict[str, list[dict[str, str]]] = {}
    for link in fabric.links_by_device.get(leaf, []):
        if link.kind == "host":
            server = fabric.server_by_name[link.a_device]
            nic = next(n for n in server.nics if link.a_port in n.ports)
            ports.setdefault(server.name, []).append({"port": link.a_port, "bond": bond_name(nic)})
    return ports


def set_leaf_facing_ports(
    fabric: Fabric,
    leaf: str,
    port_state: Literal["down", "up"],
    access: ServerAccess,
    state: StateFolder,
    check: bool = False,
) -> HostsResult:
    """The host-side drain step: every server behind ``leaf`` releases its ports to that
    leaf from their bonds, leaving them down (down), or puts them back (up); the module
    `dpctl.fabric.dpctl_host_port` says why a release and not a link down."""
    ports = leaf_facing_ports(fabric, leaf)
    if not ports:
        raise HostsError(leaf, "no server is cabled to this switch")
    return run_hosts(
        fabric,
        "host_ports",
        access,
        state,
        check=check,
        servers=sorted(ports),
        extravars={"dpctl_host_ports": ports, "dpctl_port_state": port_state},
    )
