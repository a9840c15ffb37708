"""NAPALM's standard getters, once for every platform: Linux (iproute2 JSON) and FRR (vtysh
JSON) answer them the same way on a Linux + FRR switch, on SONiC and on AsterNOS.

A driver says how to run commands (``_linux_outputs``: in its Linux shell; ``_vtysh_outputs``:
FRR's vtysh, wherever FRR runs) and overrides what its platform answers from another source
(SONiC's counters come from the ASIC, not the kernel). docs/platforms/napalm-getters.md has
the table: getter x platform, the command each uses.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from napalm.base import constants as c
from napalm.base import models
from napalm.base.exceptions import CommandErrorException

from controller.drivers import environment, linux, routing
from controller.drivers.common import OutputError, load_json

RETRIEVE = ("all", "running", "startup", "candidate")
NO_PROBES = "no probes: Linux, FRR, SONiC and AsterNOS have no RPM/IP SLA probe objects"
FORMATS = ("text",)
CLI_ENCODINGS = ("text", "json")


def check_config_args(
    platform: str, retrieve: str, full: bool, format: str, why_not_full: str
) -> None:
    """Refuse what ``get_config`` cannot honour, naming the argument and the reason."""
    if retrieve not in RETRIEVE:
        raise ValueError(f"get_config: retrieve={retrieve!r} is not one of {list(RETRIEVE)}")
    if format not in FORMATS:
        raise NotImplementedError(
            f"{platform}: get_config(format={format!r}): only format='text' is supported "
            "(the device's own configuration text)"
        )
    if full:
        raise NotImplementedError(f"{platform}: get_config(full=True): {why_not_full}")


def wanted(retrieve: str, which: str) -> bool:
    return retrieve in ("all", which)


def cli_output(command: str, output: str, encoding: str) -> str | dict[str, Any]:
    """One command's answer for ``cli``: the text, or (``encoding="json"``) its JSON object."""
    if encoding == "text":
        return output
    try:
        value = load_json(output)
    except OutputError as exc:
        raise CommandErrorException(f"{command!r} did not answer JSON: {exc}") from None
    return value if isinstance(value, dict) else {"result": value}


def check_cli_encoding(encoding: str) -> None:
    if encoding not in CLI_ENCODINGS:
        raise NotImplementedError(
            f"cli(encoding={encoding!r}): one of {list(CLI_ENCODINGS)} (json decodes the "
            "answer of a command that prints JSON)"
        )


def _json_list(text: str) -> list[dict[str, Any]]:
    value = load_json(text) if text.strip() else []
    if not isinstance(value, list):
        raise OutputError(f"expected a JSON list from iproute2, got: {text[:200]!r}")
    return [item for item in value if isinstance(item, dict)]


def _json_object(text: str) -> dict[str, Any]:
    value = load_json(text) if text.strip() else {}
    if not isinstance(value, dict):
        raise OutputError(f"expected a JSON object from FRR, got: {text[:200]!r}")
    return value


class StandardGetters(metaclass=abc.ABCMeta):
    """NAPALM's standard getters over the platform's Linux and FRR (a mixin of the drivers)."""

    @abc.abstractmethod
    def _linux_outputs(self, commands: Sequence[str]) -> list[str]:
        """The outputs of ``commands`` run in the switch's Linux shell, in order."""

    @abc.abstractmethod
    def _vtysh_outputs(self, commands: Sequence[str]) -> list[str]:
        """The outputs of FRR ``commands`` (vtysh's own syntax) run in FRR's vtysh, in order."""

    def get_interfaces_ip(self) -> dict[str, models.InterfacesIPDict]:
        (addrs,) = self._linux_outputs([linux.ADDRS])
        return linux.interfaces_ip(_json_list(addrs))

    def get_interfaces_counters(self) -> dict[str, models.InterfaceCounterDict]:
        (links,) = self._linux_outputs([linux.LINK_STATS])
        return linux.interfaces_counters(_json_list(links))

    def get_arp_table(self, vrf: str = "") -> list[models.ARPTableDict]:
        neighbours, links = self._linux_outputs([linux.NEIGH4, linux.LINK_DETAILS])
        return linux.arp_table(_json_list(neighbours), _json_list(links), vrf)

    def get_ipv6_neighbors_table(self) -> list[models.IPV6NeighborDict]:
        (neighbours,) = self._linux_outputs([linux.NEIGH6])
        return linux.ipv6_neighbours(_json_list(neighbours))

    def get_network_instances(self, name: str = "") -> dict[str, models.NetworkInstanceDict]:
        (links,) = self._linux_outputs([linux.LINK_DETAILS])
        return linux.network_instances(_json_list(links), name)

    def get_vlans(self) -> dict[int, models.VlanDict]:
        vlans, links = self._linux_outputs([linux.BRIDGE_VLANS, linux.LINK_DETAILS])
        return linux.vlans(_json_list(vlans), _json_list(links))

    def get_mac_address_table(self) -> list[models.MACAdressTable]:
        (fdb,) = self._linux_outputs([linux.BRIDGE_FDB])
        return linux.mac_address_table(_json_list(fdb))

    def get_environment(self) -> models.EnvironmentDict:
        """Memory and CPU from /proc (CPU: one second's use per core), temperatures and
        fans from hwmon; Linux has no power-supply status: ``power`` {}."""
        meminfo, stat, sensors = self._linux_outputs(
            [environment.MEMINFO, environment.CPU, environment.HWMON]
        )
        temperatures, fans = environment.hwmon(sensors)
        return environment.environment(meminfo, stat, temperatures, fans, {})

    def get_route_to(
        self, destination: str = "", protocol: str = "", longer: bool = False
    ) -> dict[str, list[models.RouteDict]]:
        """zebra's RIB (one route per next hop), then bgpd's attributes of its BGP routes."""
        (answer,) = self._vtysh_outputs([routing.route_command(destination, longer)])
        routes = routing.route_to(_json_object(answer), protocol)
        command = routing.bgp_command(destination, routes)
        if command is not None:
            (table,) = self._vtysh_outputs([command])
            routing.add_bgp_attributes(routes, _json_object(table))
        return routes

    def get_bgp_neighbors_detail(
        self, neighbor_address: str = ""
    ) -> dict[str, dict[int, list[models.PeerDetailsDict]]]:
        (answer,) = self._vtysh_outputs([routing.BGP_NEIGHBORS])
        return routing.bgp_neighbors_detail(_json_object(answer), neighbor_address)

    # -- what NAPALM's model asks and these platforms do not have ---------------------------
    def get_probes_config(self) -> dict[str, models.ProbeTestDict]:
        """Not answered: Linux, FRR, SONiC and AsterNOS have no probe objects (NAPALM's
        model is Junos RPM / IOS-XR IP SLA)."""
        raise NotImplementedError(NO_PROBES)

    def get_probes_results(self) -> dict[str, models.ProbeTestResultDict]:
        """Not answered: no probe objects (see ``get_probes_config``)."""
        raise NotImplementedError(NO_PROBES)

    def get_firewall_policies(self) -> dict[str, list[models.FirewallPolicyDict]]:
        """Not answered: NAPALM's model is a zone firewall's ordered policy list (FortiOS);
        these switches have ACLs (nftables/iptables, SONiC's ACL tables), which it does not
        describe."""
        raise NotImplementedError(
            "no firewall policies: NAPALM's model is a zone firewall's policy list, these "
            "switches have ACLs"
        )

    def get_users(self) -> dict[str, models.UsersDict]:
        """Not answered: NAPALM's model asks each user's password hash (/etc/shadow, root
        only, and dpctl reads no secrets) and a Cisco privilege level 0-15 (a Linux user is
        root or a sudoer or neither)."""
        raise NotImplementedError(
            "users: NAPALM's model wants password hashes (dpctl reads no secrets) and Cisco "
            "privilege levels, which Linux does not have"
        )

    def get_optics(self) -> dict[str, models.OpticsDict]:
        """Not answered yet: transceiver DOM is per port (``ethtool -m`` on Linux, ``show
        interfaces transceiver eeprom --dom`` on SONiC) and no device dpctl's tests record
        has a transceiver (the lab's ports are veths)."""
        raise NotImplementedError(
            "optics: not read yet (no recorded transceiver: the lab's ports are veths)"
        )

    def get_ntp_peers(self) -> dict[str, models.NTPPeerDict]:
        """Not answered: dpctl configures NTP servers, never symmetric peers (SONiC's
        CONFIG_DB has an NTP_SERVER table and no peer table)."""
        raise NotImplementedError("NTP peers: none configured by these platforms (servers only)")

    def get_ntp_stats(self) -> list[models.NTPStats]:
        """Not answered yet: SONiC 202405's ``show ntp`` runs ntpd's ``ntpq -p -n``, later
        releases chrony's ``chronyc sources``, and no answer of either is recorded (this
        machine runs no NTP daemon and may not reach NTP servers to record one)."""
        raise NotImplementedError("NTP statistics: not read yet (no recorded ntpq/chronyc)")

    def get_bgp_config(self, group: str = "", neighbor: str = "") -> models.BGPConfigGroupDict:
        """Not answered yet: NAPALM's model (groups with their neighbours' policies and
        authentication keys) would be built from FRR's running config; dpctl renders that
        config itself, so ``get_config`` and its intent are the reference."""
        raise NotImplementedError("BGP configuration model: not built yet (see get_config)")

    def ping(
        self,
        destination: str,
        source: str = c.PING_SOURCE,
        ttl: int = c.PING_TTL,
        timeout: int = c.PING_TIMEOUT,
        size: int = c.PING_SIZE,
        count: int = c.PING_COUNT,
        vrf: str = c.PING_VRF,
        source_interface: str = c.PING_SOURCE_INTERFACE,
    ) -> models.PingResultDict:
        """Not answered yet: NAPALM's own test pings 8.8.8.8, which this workplace does not
        reach to record an answer; dpctl's checks use BGP and route state instead."""
        raise NotImplementedError("ping: not implemented (dpctl's checks read BGP/routes)")

    def traceroute(
        self,
        destination: str,
        source: str = c.TRACEROUTE_SOURCE,
        ttl: int = c.TRACEROUTE_TTL,
        timeout: int = c.TRACEROUTE_TIMEOUT,
        vrf: str = c.TRACEROUTE_VRF,
    ) -> models.TracerouteResultDict:
        """Not answered yet: as ``ping``."""
        raise NotImplementedError("traceroute: not implemented (dpctl's checks read routes)")
