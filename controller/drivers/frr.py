"""NAPALM driver for a Linux + FRR switch (the embedded lab's switches, or any Linux box).

The configuration is the bundle of rendered files (frr.conf, ip.batch, bridge.batch,
sysctl.conf, qos.tc, arp-to-host.json). A replace is a true replace:
- FRR with frr-reload.py, which computes and applies the difference to the running daemons
  (lines no longer in the file are removed), and whose --test gives compare_config;
- the Linux side by tearing down the links the previous ip.batch created and applying the
  new files with ip/bridge/tc -batch and sysctl -p.
State lives next to FRR's own configuration, in /etc/frr/dpctl/ (per node in the lab, where
/etc/frr is a private mount): current/ (applied files), rollback/<ts>/ (saved before each
commit), candidate/ (uploaded for a comparison).
"""

from __future__ import annotations

import difflib
import json
import shlex
import time
from importlib import resources
from typing import Any

import paramiko
from napalm.base import models
from napalm.base.exceptions import (
    CommandErrorException,
    ConnectionException,
    MergeConfigException,
    ReplaceConfigException,
)

from controller.drivers import bundle, common
from controller.drivers.contract import DpctlDriver
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState, QosState

STATE = "/etc/frr/dpctl"
FRR_RELOAD = "/usr/lib/frr/frr-reload.py"
MAIN_FILE = "frr.conf"
LINUX_FILES = ("ip.batch", "bridge.batch", "sysctl.conf", "qos.tc")
AGENT = "arp_to_host.py"
CONNECT_TIMEOUT_S = 30
IGNORED_RELOAD_LINES = ("frr version", "frr defaults", "hostname ", "no hostname ")


class FrrDriver(DpctlDriver):
    """optional_args: port, key_file, known_hosts, jump_host, jump_port, jump_username,
    jump_key_file, jump_known_hosts (ProxyJump through a bastion, as the lab's guest)."""

    platform = "frr"

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None = None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        self.hostname = hostname
        self.username = username
        self.password = password
        self.timeout = timeout
        self.optional_args = optional_args or {}
        self._client: paramiko.SSHClient | None = None
        self._jump: paramiko.SSHClient | None = None
        self._candidate: dict[str, str] | None = None
        self._merge = False

    # -- connection -------------------------------------------------------------------
    def _ssh_client(self, known_hosts: str | None) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if known_hosts:
            client.load_host_keys(known_hosts)
        else:
            client.load_system_host_keys()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        return client

    def open(self) -> None:
        args = self.optional_args
        sock = None
        connect = min(self.timeout, CONNECT_TIMEOUT_S)  # an unreachable switch fails fast
        try:
            if args.get("jump_host"):
                self._jump = self._ssh_client(args.get("jump_known_hosts"))
                self._jump.connect(
                    args["jump_host"],
                    port=int(args.get("jump_port", 22)),
                    username=args.get("jump_username", self.username),
                    key_filename=args.get("jump_key_file"),
                    allow_agent=True,
                    look_for_keys=False,
                    timeout=connect,
                )
                transport = self._jump.get_transport()
                assert transport is not None
                sock = transport.open_channel(
                    "direct-tcpip",
                    (self.hostname, int(args.get("port", 22))),
                    ("127.0.0.1", 0),
                    timeout=connect,
                )
            self._client = self._ssh_client(args.get("known_hosts"))
            self._client.connect(
                self.hostname,
                port=int(args.get("port", 22)),
                username=self.username,
                password=self.password,
                key_filename=args.get("key_file"),
                sock=sock,
                allow_agent=True,
                look_for_keys=False,
                timeout=connect,
                banner_timeout=connect,
                auth_timeout=connect,
            )
        except (OSError, paramiko.SSHException, AssertionError) as exc:
            self.close()
            raise ConnectionException(f"cannot connect to {self.hostname}: {exc}") from None

    def close(self) -> None:
        for client in (self._client, self._jump):
            if client is not None:
                client.close()
        self._client = self._jump = None

    def is_alive(self) -> dict[str, bool]:
        transport = self._client.get_transport() if self._client else None
        return {"is_alive": bool(transport and transport.is_active())}

    def _run(self, command: str, stdin: str | None = None) -> tuple[int, str, str]:
        if self._client is None:
            raise ConnectionException(f"{self.hostname}: not connected")
        chan_in, chan_out, chan_err = self._client.exec_command(command, timeout=self.timeout)
        if stdin is not None:
            chan_in.write(stdin)
        chan_in.channel.shutdown_write()
        out = chan_out.read().decode()
        err = chan_err.read().decode()
        return chan_out.channel.recv_exit_status(), out, err

    def _check(self, command: str, stdin: str | None = None) -> str:
        rc, out, err = self._run(command, stdin)
        if rc != 0:
            raise CommandErrorException(
                f"{self.hostname}: {command[:60]!r} failed ({rc}): {err.strip()[-400:]}"
            )
        return out

    def _put(self, path: str, text: str) -> None:
        self._check(
            f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0])} && cat > {shlex.quote(path)}", text
        )

    def _vtysh(self, command: str) -> str:
        return self._check(f"vtysh -c {shlex.quote(command)}")

    def _vtysh_json(self, command: str) -> Any:
        return json.loads(self._vtysh(command) or "{}")

    # -- candidate ----------------------------------------------------------------------
    def _load(self, filename: str | None, config: str | None) -> dict[str, str]:
        if filename is not None:
            with open(filename) as handle:
                config = handle.read()
        if config is None:
            raise ValueError("give filename or config")
        return bundle.unpack(config, MAIN_FILE)

    def load_replace_candidate(
        self, filename: str | None = None, config: str | None = None
    ) -> None:
        try:
            self._candidate, self._merge = self._load(filename, config), False
        except (OSError, ValueError) as exc:
            raise ReplaceConfigException(str(exc)) from None

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        try:
            self._candidate, self._merge = self._load(filename, config), True
        except (OSError, ValueError) as exc:
            raise MergeConfigException(str(exc)) from None

    def discard_config(self) -> None:
        self._candidate = None

    def _stored(self, folder: str) -> dict[str, str]:
        names = " ".join(shlex.quote(n) for n in (MAIN_FILE, *LINUX_FILES, "arp-to-host.json"))
        out = self._check(
            f"cd {STATE}/{folder} 2>/dev/null || exit 0; for f in {names}; do "
            f"[ -f $f ] && printf '{bundle.MARKER}%s\\n' $f && cat $f; done; true"
        )
        return bundle.unpack(out, MAIN_FILE) if out else {}

    def _frr_diff(self, text: str) -> tuple[list[str], list[str]]:
        """(lines to delete, lines to add) for FRR, from frr-reload.py --test."""
        path = f"{STATE}/candidate/{MAIN_FILE}"
        self._put(path, text)
        rc, out, err = self._run(f"{FRR_RELOAD} --test --stdout {path}")
        if rc != 0:
            raise CommandErrorException(
                f"{self.hostname}: frr-reload --test failed: {err.strip()[-400:]}"
            )
        return _parse_reload_test(out)

    def compare_config(self) -> str:
        if self._candidate is None:
            return ""
        current = self._stored("current")
        parts: list[str] = []
        if MAIN_FILE in self._candidate:
            delete, add = self._frr_diff(self._candidate[MAIN_FILE])
            if self._merge:
                delete = []
            if delete or add:
                parts.append(f"--- running/{MAIN_FILE}\n+++ candidate/{MAIN_FILE}\n")
                parts.append("".join(f"-{line}\n" for line in delete))
                parts.append("".join(f"+{line}\n" for line in add))
        for name in sorted(set(self._candidate) - {MAIN_FILE}):
            old, new = current.get(name, ""), self._candidate[name]
            parts += difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"running/{name}",
                f"candidate/{name}",
            )
        return "".join(parts)

    # -- commit / rollback --------------------------------------------------------------
    def _save_rollback_point(self) -> str:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 10**6:06d}"
        folder = f"{STATE}/rollback/{stamp}"
        running = self._vtysh("show running-config")
        self._check(f"mkdir -p {folder} && (cp -a {STATE}/current/. {folder}/ 2>/dev/null || true)")
        self._put(f"{folder}/{MAIN_FILE}", _strip_running_header(running))
        return folder

    def _apply_linux(self, old: dict[str, str], new: dict[str, str]) -> list[str]:
        """Tear down what the old ip.batch created, then apply the new Linux files."""
        errors: list[str] = []
        if all(old.get(n) == new.get(n) for n in LINUX_FILES):
            return errors
        delta = _port_state_delta(old.get("ip.batch", ""), new.get("ip.batch", ""))
        if delta is not None and all(old.get(n) == new.get(n) for n in LINUX_FILES[1:]):
            # Only host ports change admin state (drain/undrain): touch nothing else.
            self._put(f"{STATE}/current/ip.batch", new["ip.batch"])
            rc, out, err = self._run("ip -force -batch -", "\n".join(delta) + "\n")
            return [] if rc == 0 else [f"ip.batch: {(err or out).strip()[-300:]}"]
        created = _created_links(old.get("ip.batch", ""))
        script = [f"ip link del {shlex.quote(name)} 2>/dev/null" for name in reversed(created)]
        for dev in _tc_devices(old.get("qos.tc", "") + new.get("qos.tc", "")):
            script.append(f"tc qdisc del dev {shlex.quote(dev)} root 2>/dev/null")
        self._run("; ".join(script) + "; true")
        steps = (
            ("ip.batch", "ip -force -batch"),
            ("bridge.batch", "bridge -force -batch"),
            ("sysctl.conf", "sysctl -q -p"),
            ("qos.tc", "tc -force -batch"),
        )
        for name, tool in steps:
            if name not in new:
                continue
            path = f"{STATE}/current/{name}"
            self._put(path, new[name])
            rc, out, err = self._run(f"{tool} {path}")
            if rc != 0:
                errors.append(f"{name}: {(err or out).strip()[-300:]}")
        return errors

    def _apply_frr(self, text: str) -> list[str]:
        path = "/etc/frr/frr.conf"
        self._put(path, text)
        rc, out, err = self._run(f"{FRR_RELOAD} --reload --stdout {path}")
        problems = [] if rc == 0 else [f"frr-reload failed: {(err or out).strip()[-400:]}"]
        _delete, add = self._frr_diff(text)
        if add:  # lines the daemons did not take
            problems.append("FRR rejected: " + "; ".join(add[:10]))
        return problems

    def _start_agent(self, files: dict[str, str]) -> None:
        config = files.get("arp-to-host.json")
        pid = f"{STATE}/{AGENT}.pid"
        self._run(f"[ -f {pid} ] && kill $(cat {pid}) 2>/dev/null; rm -f {pid}; true")
        if not config or json.loads(config).get("table") is None:
            return
        agent = resources.files("controller.agents").joinpath(AGENT).read_text()
        self._put(f"{STATE}/{AGENT}", agent)
        self._put(f"{STATE}/current/arp-to-host.json", config)
        # setsid: the agent must outlive this SSH session (its own session, no terminal).
        self._check(
            f"setsid sh -c 'echo $$ > {pid}; exec python3 {STATE}/{AGENT} "
            f"{STATE}/current/arp-to-host.json' >{STATE}/{AGENT}.log 2>&1 </dev/null &"
        )

    def _apply(self, files: dict[str, str], old: dict[str, str]) -> None:
        problems = self._apply_linux(old, files)
        if MAIN_FILE in files:
            problems += self._apply_frr(files[MAIN_FILE])
        if problems:
            raise ReplaceConfigException(f"{self.hostname}: " + " | ".join(problems))
        self._start_agent(files)
        for name, text in files.items():
            self._put(f"{STATE}/current/{name}", text)

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if revert_in is not None:
            raise NotImplementedError("revert_in: a Linux + FRR switch has no commit-confirm")
        if self._candidate is None:
            raise ReplaceConfigException("no candidate loaded")
        self._save_rollback_point()
        current = self._stored("current")
        files = {**current, **self._candidate} if self._merge else dict(self._candidate)
        if self._merge and MAIN_FILE in self._candidate:
            rc, out, err = self._run("vtysh -f /dev/stdin", self._candidate[MAIN_FILE])
            if rc != 0:
                raise MergeConfigException(f"{self.hostname}: {(out + err).strip()[-400:]}")
            files.pop(MAIN_FILE)
        self._apply(files, current)
        self._candidate = None

    def rollback_points(self) -> list[str]:
        out = self._check(f"ls -1 {STATE}/rollback 2>/dev/null || true")
        return sorted(line for line in out.split() if line)

    def _replace_with(self, saved: dict[str, str]) -> None:
        current = self._stored("current")
        self._check(f"rm -rf {STATE}/current && mkdir -p {STATE}/current")
        self._apply(saved, current)

    def rollback(self) -> None:
        points = self.rollback_points()
        if not points:
            raise ReplaceConfigException(f"{self.hostname}: no rollback point saved")
        self._replace_with(self._stored(f"rollback/{points[-1]}"))
        self._check(f"rm -rf {STATE}/rollback/{points[-1]}")

    def restore_config(self, saved: str) -> None:
        """Run the files of a ``get_config()["running"]`` bundle again (a deploy's backup)."""
        try:
            files = bundle.unpack(saved, MAIN_FILE)
        except ValueError as exc:
            raise ReplaceConfigException(f"{self.hostname}: bad saved config: {exc}") from None
        self._replace_with(files)

    # -- getters ------------------------------------------------------------------------
    def get_config(
        self, retrieve: str = "all", full: bool = False, sanitized: bool = False
    ) -> dict[str, str]:
        running = bundle.pack(
            {
                **self._stored("current"),
                MAIN_FILE: _strip_running_header(self._vtysh("show running-config")),
            }
        )
        return {"running": running, "candidate": bundle.pack(self._candidate or {}), "startup": ""}

    def get_facts(self) -> models.FactsDict:
        hostname = self._check("hostname").strip()
        uptime = float(self._check("cut -d' ' -f1 /proc/uptime").strip())
        version = self._vtysh("show version").splitlines()
        links = json.loads(self._check("ip -j link show") or "[]")
        return {
            "hostname": hostname,
            "fqdn": hostname,
            "vendor": "Linux",
            "model": "Linux + FRR",
            "os_version": version[0].strip() if version else "",
            "serial_number": "",
            "uptime": uptime,
            "interface_list": sorted(str(link["ifname"]) for link in links),
        }

    def get_interfaces(self) -> dict[str, models.InterfaceDict]:
        result: dict[str, dict[str, Any]] = {}
        for link in json.loads(self._check("ip -j link show") or "[]"):
            flags = link.get("flags", [])
            result[str(link["ifname"])] = {
                "is_up": link.get("operstate") in ("UP", "UNKNOWN") and "UP" in flags,
                "is_enabled": "UP" in flags,
                "description": str(link.get("ifalias", "")),
                "last_flapped": -1.0,
                "speed": -1.0,
                "mtu": int(link.get("mtu", 0)),
                "mac_address": str(link.get("address", "")),
            }
        return result

    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
        return common.bgp_neighbors(
            self._vtysh_json("show bgp vrf all summary json"),
            self._vtysh_json("show bgp vrf all neighbors json"),
        )

    def _lldp(self) -> Any:
        return common.load_json(self._check("lldpcli -f json show neighbors") or "{}")

    def get_host_routes(self) -> list[HostRoute]:
        return common.host_routes(self._vtysh_json("show ip route json"))

    def get_evpn_es(self) -> list[EthernetSegmentState]:
        return common.evpn_es(self._vtysh_json("show evpn es detail json"))

    def get_qos_state(self) -> QosState:
        """ECN per port from the kernel's qdiscs: a queue is a band of the port's prio qdisc,
        marking ECN when a RED qdisc with ``ecn`` sits on it (``tc -j``: ``parent`` "1:<band>",
        ``options.ecn`` true; iproute2 tc/tc_red.c). PFC does not exist in the Linux
        datapath (None). ECMP hash: ``net.ipv4.fib_multipath_hash_policy`` (0 = L3, 1 = L4;
        kernel ip-sysctl.rst)."""
        qdiscs = json.loads(self._check("tc -j qdisc show") or "[]")
        ecn: dict[str, list[int]] = {}
        for qdisc in qdiscs:
            options = qdisc.get("options", {})
            marks = options.get("ecn") is True or "ecn" in options.get("flags", [])
            parent = str(qdisc.get("parent", ""))
            band = parent.partition(":")[2]
            if qdisc.get("kind") == "red" and marks and band.isdigit():
                ports = ecn.setdefault(str(qdisc["dev"]), [])
                ports.append(int(band))
                ports.sort()
        policy = self._check("sysctl -n net.ipv4.fib_multipath_hash_policy").strip()
        hashes = {"0": "l3", "1": "l4", "2": "l3-inner", "3": "custom"}
        return QosState(pfc=None, ecn=ecn, ecmp_hash=hashes.get(policy, f"policy {policy}"))

    def get_maintenance(self) -> MaintenanceState:
        return common.maintenance_state(self._vtysh("show running-config"))


def _strip_running_header(text: str) -> str:
    lines = text.splitlines(keepends=True)
    skip = ("Building configuration", "Current configuration", "frr version", "frr defaults")
    return "".join(line for line in lines if not line.startswith(skip) and line.strip() != "")


def _parse_reload_test(output: str) -> tuple[list[str], list[str]]:
    delete: list[str] = []
    add: list[str] = []
    target: list[str] | None = None
    for raw in output.splitlines():
        line = raw.rstrip()
        if line == "Lines To Delete":
            target = delete
        elif line == "Lines To Add":
            target = add
        elif (
            target is not None
            and line
            and not set(line) <= {"="}
            and not line.startswith(IGNORED_RELOAD_LINES)
        ):
            target.append(line)
    return delete, add


def _created_links(ip_batch: str) -> list[str]:
    """Links an ip.batch creates (`link add [link X] name N ...`), in creation order."""
    names = []
    for line in ip_batch.splitlines():
        words = line.split()
        if words[:2] == ["link", "add"] and "name" in words:
            names.append(words[words.index("name") + 1])
    return names


def _port_state_delta(old: str, new: str) -> list[str] | None:
    """The new lines, when two ip.batch files differ only in ports' admin state (up/down)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if not old_lines or len(old_lines) != len(new_lines):
        return None
    created = set(_created_links(old))
    changed = []
    for before, after in zip(old_lines, new_lines, strict=True):
        if before == after:
            continue
        a, b = before.split(), after.split()
        if (
            a[:3] != ["link", "set", "dev"]
            or a[:-1] != b[:-1]
            or {a[-1], b[-1]} != {"up", "down"}
            or a[3] in created
        ):
            return None
        changed.append(after)
    return changed


def _tc_devices(qos: str) -> list[str]:
    devices: list[str] = []
    for line in qos.splitlines():
        words = line.split()
        if words[:2] == ["qdisc", "add"] and "root" in words and words[3] not in devices:
            devices.append(words[3])
    return devices
