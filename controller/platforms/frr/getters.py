"""The getters of the Linux + FRR driver: NAPALM's (facts, interfaces, BGP, LLDP, config, cli
and the standard ones of :mod:`controller.drivers.standard`) and dpctl's (behind
``driver.dpctl``). Every read is one SSH exec (a command, or several through ``_reads``);
inside ``dpctl.batched_reads()`` verify's getters answer from one read of the switch."""

from __future__ import annotations

import abc
import json
import shlex
from collections.abc import Sequence
from typing import Any

from napalm.base import models

from controller.drivers import bundle, common, sanitize, standard
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState, QosState
from controller.platforms.frr import reads
from controller.platforms.frr.changes import MAIN_FILE, Snapshot

SHOW_RUNNING = "show running-config"
BGP_SUMMARY = "show bgp vrf all summary json"
BGP_NEIGHBORS = "show bgp vrf all neighbors json"
HOST_ROUTES = "show ip route json"
EVPN_ES = "show evpn es detail json"
LINKS = "ip -j link show"
LLDP = "lldpcli -f json show neighbors"
QDISCS = "tc -j qdisc show"
HASH_POLICY = "sysctl -n net.ipv4.fib_multipath_hash_policy"
STARTUP = "cat /etc/frr/frr.conf"
"""What FRR loads when it starts (integrated config; the Linux side is applied by dpctl)."""
NO_NTP = "NTP: a Linux + FRR switch's NTP client (chrony, ntpsec, timesyncd) is not dpctl's"
NO_FULL = (
    "FRR has no running-config with defaults (FRR 8.4's `show running-config` takes a daemon "
    "or `no-header`, no `all`), so the running config is already all there is"
)


class FrrGetters(standard.StandardGetters):
    """A mixin of :class:`~controller.platforms.frr.driver.FrrDriver`: the driver gives the
    SSH exec (``_run``/``_check``/``_reads``) and the snapshot of its stored files."""

    hostname: str
    _cache: dict[str, str]
    _candidate: dict[str, str] | None

    @abc.abstractmethod
    def _run(self, command: str, stdin: str | bytes | None = None) -> tuple[int, str, str]: ...

    @abc.abstractmethod
    def _check(self, command: str, stdin: str | bytes | None = None) -> str: ...

    @abc.abstractmethod
    def _reads(self, commands: list[str] | tuple[str, ...]) -> dict[str, str]: ...

    @abc.abstractmethod
    def _recent_snapshot(self) -> Snapshot: ...

    def _vtysh(self, command: str) -> str:
        return self._check(f"vtysh -c {shlex.quote(command)}")

    def _vtysh_json(self, command: str) -> Any:
        return json.loads(self._vtysh(command) or "{}")

    def _linux_outputs(self, commands: Sequence[str]) -> list[str]:
        if len(commands) == 1:
            return [self._check(commands[0])]
        outputs = self._reads(list(commands))
        return [outputs[c] for c in commands]

    def _vtysh_outputs(self, commands: Sequence[str]) -> list[str]:
        return [self._vtysh(c) for c in commands]

    # -- NAPALM ---------------------------------------------------------------------------
    def get_config(
        self,
        retrieve: str = "all",
        full: bool = False,
        sanitized: bool = False,
        format: str = "text",
    ) -> models.ConfigDict:
        """``running``: the bundle of the applied files with FRR's running config as
        frr.conf (a deploy's backup, what ``dpctl.restore_config`` takes); ``startup``:
        /etc/frr/frr.conf, what FRR loads when it starts; ``candidate``: the loaded bundle.
        ``sanitized`` removes FRR's secrets (:mod:`controller.drivers.sanitize`)."""
        standard.check_config_args("frr", retrieve, full, format, NO_FULL)
        result: models.ConfigDict = {"running": "", "startup": "", "candidate": ""}
        if standard.wanted(retrieve, "running"):
            snap = self._recent_snapshot()
            result["running"] = bundle.pack({**snap.files, MAIN_FILE: snap.running})
        if standard.wanted(retrieve, "startup"):
            result["startup"] = bundle.pack({MAIN_FILE: self._check(STARTUP)})
        if standard.wanted(retrieve, "candidate"):
            result["candidate"] = bundle.pack(self._candidate or {})
        if sanitized:
            result = {k: sanitize.frr_text(v) for k, v in result.items()}
        return result

    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str | dict[str, Any]]:
        """Each command in the switch's shell; a ``show ...`` command (no Linux program has
        that name) goes to FRR's vtysh. The answer is what the command printed (stdout, then
        stderr), a failing one included."""
        standard.check_cli_encoding(encoding)
        result: dict[str, str | dict[str, Any]] = {}
        for command in commands:
            line = f"vtysh -c {shlex.quote(command)}" if command.startswith("show ") else command
            _rc, out, err = self._run(line)
            result[command] = standard.cli_output(command, out + err, encoding)
        return result

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
        return reads.interfaces(json.loads(self._check(LINKS) or "[]"))

    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
        if not self._cache:  # both in one vtysh
            asks = [f"vtysh -c {shlex.quote(c)}" for c in (BGP_SUMMARY, BGP_NEIGHBORS)]
            found = self._reads(asks)
            summary, neighbors = (json.loads(found[c] or "{}") for c in asks)
            return common.bgp_neighbors(summary, neighbors)
        return common.bgp_neighbors(self._vtysh_json(BGP_SUMMARY), self._vtysh_json(BGP_NEIGHBORS))

    def _lldp(self) -> Any:
        return common.load_json(self._check(LLDP) or "{}")

    def get_ntp_servers(self) -> dict[str, models.NTPServerDict]:
        """Not answered: a Linux + FRR switch's NTP client is whatever its distribution runs
        (chrony, ntpsec, systemd-timesyncd: each its own files), not part of the platform
        dpctl drives, and none runs on the machines its recordings come from."""
        raise NotImplementedError(NO_NTP)

    def get_snmp_information(self) -> models.SNMPDict:
        """Not answered: a Linux + FRR switch has no SNMP agent that is part of the platform
        (net-snmp, if installed, is configured outside dpctl), and none is recorded."""
        raise NotImplementedError("SNMP: no SNMP agent is part of a Linux + FRR switch")

    # -- dpctl (driver.dpctl) -------------------------------------------------------------
    def _get_host_routes(self) -> list[HostRoute]:
        return common.host_routes(self._vtysh_json(HOST_ROUTES))

    def _get_evpn_es(self) -> list[EthernetSegmentState]:
        return common.evpn_es(self._vtysh_json(EVPN_ES))

    def _get_qos_state(self) -> QosState:
        qdiscs = json.loads(self._check(QDISCS) or "[]")
        return reads.qos_state(qdiscs, self._check(HASH_POLICY).strip())

    def _get_maintenance(self) -> MaintenanceState:
        return common.maintenance_state(self._vtysh(SHOW_RUNNING))
