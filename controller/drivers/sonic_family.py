"""What the SONiC and AsterNOS drivers share: both run SONiC underneath (its shell, its
``show`` tables, CONFIG_DB, lldpd in its own container, FRR).

The base holds the constructor and its ``optional_args``, the session's life (open, close,
is_alive) around a factory each driver names, and the getters both answer from the SONiC
shell: facts, interfaces, LLDP, PFC/ECN. A subclass says how to run a batch of commands in
that shell (``_shell_outputs``: direct SSH exec on SONiC; ``system bash`` under klish on
AsterNOS) and how to open its session.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from typing import Any

from napalm.base import models
from napalm.base.exceptions import CommandErrorException, ConnectionException

from controller.drivers import common, environment, sonic_queues, sonic_reads
from controller.drivers.contract import DpctlDriver
from controller.drivers.sonic_reads import parse_table
from controller.drivers.standard import StandardGetters
from controller.drivers.types import QosState, QueueCounters

QOS_TABLES = ("PORT_QOS_MAP", "QUEUE", "WRED_PROFILE")
"""CONFIG_DB tables that say PFC and ECN per port (``sonic-cfggen -d --var-json TABLE``)."""
LLDP = "sudo -n docker exec lldp lldpctl -f json"
FACTS = ("show version", "hostname", "cat /proc/uptime", "show interfaces status")


def parse_show_version(text: str) -> dict[str, str]:
    """``show version``: ``Key: value`` lines (SONiC Software Version, HwSKU, Serial Number...)."""
    facts: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith(" "):
            facts.setdefault(key.strip(), value.strip())
    return facts


def _speed_mbps(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([GM]?)", text.strip())
    if not match:
        return 0.0
    value = float(match.group(1))
    return value * 1000 if match.group(2) == "G" else value


def interfaces_from_tables(
    status: str, descriptions: str, links: list[dict[str, Any]]
) -> dict[str, models.InterfaceDict]:
    """NAPALM ``get_interfaces``: ``show interfaces status``/``description`` + ``ip -j link``."""
    macs = {str(link.get("ifname")): str(link.get("address", "")) for link in links}
    descr = {
        row.get("Interface", ""): row.get("Description", "") for row in parse_table(descriptions)
    }
    result: dict[str, models.InterfaceDict] = {}
    for row in parse_table(status):
        name = row.get("Interface", "")
        if not name:
            continue
        mtu = row.get("MTU", "")
        result[name] = {
            "is_up": row.get("Oper", "") == "up",
            "is_enabled": row.get("Admin", "") == "up",
            "description": descr.get(name, "") or "",
            "last_flapped": -1.0,
            "speed": _speed_mbps(row.get("Speed", "")),
            "mtu": int(mtu) if mtu.isdigit() else 0,
            "mac_address": macs.get(name, ""),
        }
    return result


def facts_from_outputs(vendor: str, outputs: Sequence[str]) -> models.FactsDict:
    """NAPALM ``get_facts`` from the outputs of :data:`FACTS`, in that order."""
    version, hostname, uptime, status = outputs
    facts = parse_show_version(version)
    name = hostname.strip()
    return {
        "hostname": name,
        "fqdn": name,
        "vendor": vendor,
        "model": facts.get("HwSKU", facts.get("Platform", "")),
        "os_version": facts.get("SONiC Software Version", facts.get("Software Version", "")),
        "serial_number": facts.get("Serial Number", ""),
        "uptime": float(uptime.split()[0]),
        "interface_list": sorted(
            (row["Interface"] for row in parse_table(status)), key=common.natural_key
        ),
    }


class SonicFamilyDriver(StandardGetters, DpctlDriver):
    """Base of the drivers of switches that run SONiC underneath.

    optional_args shared by both: ``port`` (22), ``known_hosts`` (path; else the user's
    known_hosts, always strict), ``key_file``, ``allow_agent`` (True), ``connection_factory``
    (tests: builds the session instead of SSH). Each driver reads its own extra ones in
    ``_read_options``.
    """

    vendor = "SONiC"

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        args = dict(optional_args or {})
        self.hostname = hostname
        self.username = username
        self._password = password  # kept only to open the session; never logged
        self.timeout = timeout
        self.port = int(args.get("port", 22))
        self.known_hosts: str | None = args.get("known_hosts")
        self.key_file: str | None = args.get("key_file")
        self.allow_agent = bool(args.get("allow_agent", True))
        self._factory: Any = args.get("connection_factory")
        self._session: Any = None
        self._read_options(args)

    def _read_options(self, args: dict[str, Any]) -> None:
        """The driver's own optional_args (none by default)."""

    # ------------------------------------------------------------------ session

    @abc.abstractmethod
    def _connect(self) -> Any:
        """Open and return the session (SSH shell, netmiko connection)."""

    @abc.abstractmethod
    def _disconnect(self, session: Any) -> None: ...

    @abc.abstractmethod
    def _session_alive(self, session: Any) -> bool: ...

    @abc.abstractmethod
    def _shell_outputs(self, commands: Sequence[str]) -> list[str]:
        """The outputs of ``commands`` run in the SONiC shell, in order."""

    def open(self) -> None:
        self._session = self._connect()

    def close(self) -> None:
        if self._session is not None:
            self._disconnect(self._session)
            self._session = None

    def is_alive(self) -> dict[str, bool]:
        return {"is_alive": bool(self._session is not None and self._session_alive(self._session))}

    def _require_session(self) -> Any:
        if self._session is None:
            raise ConnectionException(f"{self.hostname}: not connected (call open() first)")
        return self._session

    # ----------------------------------------------------------------- getters

    def get_facts(self) -> models.FactsDict:
        return facts_from_outputs(self.vendor, self._shell_outputs(FACTS))

    def get_interfaces(self) -> dict[str, models.InterfaceDict]:
        status, descriptions, links = self._shell_outputs(
            ["show interfaces status", "show interfaces description", "ip -j link show"]
        )
        return interfaces_from_tables(status, descriptions, common.load_json(links))

    def _lldp(self) -> Any:
        (output,) = self._shell_outputs([LLDP])
        return common.load_json(output)

    def _config_db(self, *tables: str) -> list[dict[str, Any]]:
        """CONFIG_DB tables (``sonic-cfggen -d --var-json TABLE``; {} for an absent one)."""
        outputs = self._shell_outputs([f"sudo -n sonic-cfggen -d --var-json {t}" for t in tables])
        values = [common.load_json(o) if o.strip() else {} for o in outputs]
        return [v if isinstance(v, dict) else {} for v in values]

    def _get_qos_state(self) -> QosState:
        """PFC and ECN per port from CONFIG_DB (``sonic-cfggen -d --var-json TABLE``)."""
        outputs = self._shell_outputs(
            [f"sudo -n sonic-cfggen -d --var-json {t}" for t in QOS_TABLES]
        )
        return common.qos_from_config_db(*(common.load_json(o or "{}") for o in outputs))

    def _get_queue_counters(self) -> dict[str, QueueCounters]:
        """``pfcstat`` (``show pfc counters``: it has no JSON), ``queuestat -j`` and, where the
        image has it (sonic-utilities 202505 on), ``wredstat -j`` for the ECN marks:
        :mod:`controller.drivers.sonic_queues`. On AsterNOS through ``system bash`` as its
        other SONiC-tool reads (``portstat``): UNVERIFIED there, no AsterNOS document names
        these tools or a klish form with a documented output."""
        pfc, queues = self._shell_outputs([sonic_queues.PFCSTAT, sonic_queues.QUEUESTAT])
        try:
            (wred,) = self._shell_outputs([sonic_queues.WREDSTAT])
        except CommandErrorException:  # exit status 127: an image before wredstat
            wred = None
        return sonic_queues.queue_counters(pfc, queues, wred)

    # ------------------------------------------------ NAPALM's standard getters

    def _linux_outputs(self, commands: Sequence[str]) -> list[str]:
        return self._shell_outputs(commands)

    def get_interfaces_counters(self) -> dict[str, models.InterfaceCounterDict]:
        """The ASIC's counters (``portstat -a -j -r``), not the kernel's: see
        :func:`controller.drivers.sonic_reads.interfaces_counters`."""
        (output,) = self._shell_outputs([sonic_reads.PORTSTAT])
        data = common.load_json(output)
        return sonic_reads.interfaces_counters(data if isinstance(data, dict) else {})

    def get_vlans(self) -> dict[int, models.VlanDict]:
        """CONFIG_DB's VLAN and VLAN_MEMBER (what SONiC programs into the ASIC)."""
        return sonic_reads.vlans(*self._config_db("VLAN", "VLAN_MEMBER"))

    def get_mac_address_table(self) -> list[models.MACAdressTable]:
        """The ASIC's FDB (``show mac``; the kernel bridge does not hold what the ASIC
        learns)."""
        (output,) = self._shell_outputs([sonic_reads.SHOW_MAC])
        return sonic_reads.mac_address_table(output)

    def get_environment(self) -> models.EnvironmentDict:
        """Memory and CPU from /proc; fans, temperatures and power supplies from SONiC's
        platform tools (``show platform fan`` / ``temperature`` / ``psustatus --json``)."""
        meminfo, stat, fans, temperatures, power = self._shell_outputs(
            [
                environment.MEMINFO,
                environment.CPU,
                environment.SONIC_FANS,
                environment.SONIC_TEMPERATURES,
                environment.SONIC_PSUS,
            ]
        )
        return environment.environment(
            meminfo,
            stat,
            environment.sonic_temperatures(temperatures),
            environment.sonic_fans(fans),
            environment.sonic_power(power),
        )

    def get_ntp_servers(self) -> dict[str, models.NTPServerDict]:
        (table,) = self._config_db("NTP_SERVER")
        return sonic_reads.ntp_servers(table)

    def get_snmp_information(self) -> models.SNMPDict:
        return sonic_reads.snmp_information(*self._config_db("SNMP", "SNMP_COMMUNITY"))
