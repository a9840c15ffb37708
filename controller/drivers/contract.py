"""The one driver contract every dpctl platform driver (frr, sonic, asternos) implements.

NAPALM's ``NetworkDriver`` methods keep NAPALM's meaning, NAPALM's signatures and NAPALM's
result models (``napalm.base.models``): ``get_facts`` (uptime a float, in seconds),
``get_interfaces`` (speed in Mbit/s as a float, -1.0 unknown), ``get_bgp_neighbors``
(``uptime`` an int in seconds, -1 for a session that is not established; ``address_family``
keyed ``ipv4``, ``ipv6`` as NAPALM's base documents, and ``l2vpn_evpn`` for BGP EVPN, which
NAPALM's base does not name), the LLDP getters, ``get_config`` and the standard getters each
platform answers (docs/platforms/napalm-getters.md). A driver's public methods are NAPALM's
only, so NAPALM's own test suite (``BaseTestGetters``) passes on it: dpctl's operations live
on ``driver.dpctl`` (:class:`DpctlOps`), behind private hooks each driver implements, and
return the TypedDicts of ``controller.drivers.types``, with one meaning on every platform.

``dpctl.batched_reads`` lets a driver serve a run of getters from one read of the device.

``dpctl.restore_config`` replaces the whole configuration with one that
``get_config()["running"]`` returned earlier (the backup a deploy saves before each commit),
from any connection, so ``dpctl rollback`` works after the committing session is gone. A
sanitized configuration is refused there.

``dpctl.refresh_bgp_routes``: every BGP session of the device sends its routes again and
asks its peer for theirs (FRR's ``clear bgp * soft``: route refresh, RFC 2918; no session is
reset). Deploy calls it after a commit once the device's sessions are up: a route exchanged
while a switch's policy was still being applied (both ends of a session are committed at the
same time) can stay missing otherwise. Lab, 2026-12-03: after a first deploy of both planes,
two leaves lacked a spine's loopback for ten minutes while the spine listed it as advertised
to them; ``clear bgp ipv4 unicast swp4 soft in`` on one of them brought it at once.

``conformance_errors`` checks a getter's result against its declared type, strictly (an int
is not a float, a bool is not an int, no missing or extra keys; a key a ``total=False``
model marks optional may be absent): the conformance tests run it on every driver's getters
over recorded device outputs.
"""

from __future__ import annotations

import abc
import contextlib
import types
import typing
from typing import Any, Union, get_args, get_origin, get_type_hints

from napalm.base import NetworkDriver, models
from napalm.base.exceptions import ReplaceConfigException

from controller.drivers import common, sanitize
from controller.drivers.types import (
    EthernetSegmentState,
    HostRoute,
    MaintenanceState,
    QosState,
    QueueCounters,
)
from controller.errors import DpctlError


class ActionRefused(DpctlError):
    """The platform cannot do this maintenance action (or commit-confirm) the way dpctl needs
    it; the reason says why (no vendor-documented command, ...). Nothing was changed."""


class DpctlOps:
    """dpctl's own operations on a switch, reached as ``driver.dpctl``.

    NAPALM's own test suite (``napalm.base.test.getters.BaseTestGetters.test_method_signatures``)
    allows a ``NetworkDriver`` no public method that NAPALM's base class lacks, so everything
    dpctl adds to NAPALM lives on this object instead: the driver implements the private
    hooks (``_get_host_routes`` ...), and deploy, verify, drain and rollback call them here.
    """

    def __init__(self, driver: DpctlDriver) -> None:
        self._driver = driver

    def get_host_routes(self) -> list[HostRoute]:
        """IPv4 /32 routes in the RIB (selected or not), sorted by address."""
        return self._driver._get_host_routes()

    def get_evpn_es(self) -> list[EthernetSegmentState]:
        """Local EVPN Ethernet segments, sorted by ESI ([] without EVPN-MH)."""
        return self._driver._get_evpn_es()

    def get_maintenance(self) -> MaintenanceState:
        """Drain state as the running routing configuration shows it."""
        return self._driver._get_maintenance()

    def get_qos_state(self) -> QosState:
        """PFC and ECN per port, and the ECMP hash, as the datapath is configured."""
        return self._driver._get_qos_state()

    def get_queue_counters(self) -> dict[str, QueueCounters]:
        """Per port: PFC frames per priority, drops and ECN marks per queue, as the ASIC
        counts them now (``dpctl accept`` reads them before and after its traffic). Raises
        NotImplementedError where the platform keeps no such counters in one place (Linux +
        FRR: the RED qdiscs' counters are read through ``cli``)."""
        return self._driver._get_queue_counters()

    def restore_config(self, saved: str) -> None:
        """Make the device run ``saved`` (a ``get_config()["running"]`` text) and save it.
        A sanitized text (``get_config(sanitized=True)``: secrets replaced by
        ``sanitize.REMOVED``) is refused: restoring it would set the placeholders."""
        if sanitize.is_sanitized(saved):
            device = getattr(self._driver, "hostname", "?")
            raise ReplaceConfigException(
                f"{device}: the saved config is sanitized (secrets replaced by "
                f"{sanitize.REMOVED!r}); restoring it would install the placeholders"
            )
        self._driver._restore_config(saved)

    def refresh_bgp_routes(self) -> None:
        """Every BGP session sends its routes again and asks for the peer's (no reset)."""
        self._driver._refresh_bgp_routes()

    def restart_routing(self) -> None:
        """Restart the switch's routing stack (its BGP daemon and what it needs); returns once
        the restart is started: the caller waits for the sessions (maintain's health wait)."""
        self._driver._restart_routing()

    def reboot(self) -> None:
        """Restart the whole switch (or, in the lab, the switch's whole namespace stack);
        returns once the restart is under way."""
        self._driver._reboot()

    def install_image(self, url: str) -> None:
        """Install the NOS image at ``url`` as the next boot image (the caller reboots)."""
        self._driver._install_image(url)

    def batched_reads(self) -> contextlib.AbstractContextManager[None]:
        """Within this block the getters may answer from one read of the device (verify asks
        every getter once). A driver that reads each getter on its own needs nothing here."""
        return self._driver._batched_reads()


class DpctlDriver(NetworkDriver, metaclass=abc.ABCMeta):  # type: ignore[misc]
    """What dpctl's deploy, verify, drain and rollback ask of a switch driver: NAPALM's
    ``NetworkDriver`` (NAPALM's signatures exactly) plus the hooks behind ``driver.dpctl``."""

    platform: str
    hostname: str

    @property
    def dpctl(self) -> DpctlOps:
        """dpctl's operations beyond NAPALM's (see :class:`DpctlOps`)."""
        return DpctlOps(self)

    @abc.abstractmethod
    def get_facts(self) -> models.FactsDict: ...

    @abc.abstractmethod
    def get_interfaces(self) -> dict[str, models.InterfaceDict]: ...

    @abc.abstractmethod
    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]: ...

    @abc.abstractmethod
    def _lldp(self) -> Any:
        """lldpd's own JSON (``lldpcli -f json show neighbors``): all three platforms run lldpd,
        so the LLDP getters below are one implementation over it."""

    def get_lldp_neighbors(self) -> dict[str, list[models.LLDPNeighborDict]]:
        return common.lldp_neighbors(self._lldp())

    def get_lldp_neighbors_detail(
        self, interface: str = ""
    ) -> dict[str, list[models.LLDPNeighborDetailDict]]:
        found = common.lldp_neighbors_detail(self._lldp())
        return {k: v for k, v in found.items() if not interface or k == interface}

    @abc.abstractmethod
    def _get_host_routes(self) -> list[HostRoute]:
        """IPv4 /32 routes in the RIB (selected or not), sorted by address."""

    @abc.abstractmethod
    def _get_evpn_es(self) -> list[EthernetSegmentState]:
        """Local EVPN Ethernet segments, sorted by ESI ([] without EVPN-MH)."""

    @abc.abstractmethod
    def _get_maintenance(self) -> MaintenanceState:
        """Drain state as the running routing configuration shows it."""

    @abc.abstractmethod
    def _get_qos_state(self) -> QosState:
        """PFC and ECN per port, and the ECMP hash, as the datapath is configured."""

    @abc.abstractmethod
    def _restore_config(self, saved: str) -> None:
        """Make the device run ``saved`` (a ``get_config()["running"]`` text) and save it."""

    @abc.abstractmethod
    def _refresh_bgp_routes(self) -> None:
        """Every BGP session sends its routes again and asks for the peer's (no reset)."""

    def _get_queue_counters(self) -> dict[str, QueueCounters]:
        raise NotImplementedError(f"platform {self.platform}: no PFC or queue counters getter")

    def _batched_reads(self) -> contextlib.AbstractContextManager[None]:
        """See :meth:`DpctlOps.batched_reads` (default: nothing to batch)."""
        return contextlib.nullcontext()

    def _restart_routing(self) -> None:
        raise ActionRefused(self.hostname, f"platform {self.platform}: no restart-routing")

    def _reboot(self) -> None:
        raise ActionRefused(self.hostname, f"platform {self.platform}: no reboot")

    def _install_image(self, url: str) -> None:
        raise ActionRefused(self.hostname, f"platform {self.platform}: no image install")


CONTRACT_GETTER_TYPES: dict[str, Any] = {
    "get_facts": models.FactsDict,
    "get_interfaces": dict[str, models.InterfaceDict],
    "get_bgp_neighbors": dict[str, models.BGPStateNeighborsPerVRFDict],
    "get_lldp_neighbors": dict[str, list[models.LLDPNeighborDict]],
    "get_lldp_neighbors_detail": dict[str, list[models.LLDPNeighborDetailDict]],
    "get_host_routes": list[HostRoute],
    "get_evpn_es": list[EthernetSegmentState],
    "get_maintenance": MaintenanceState,
    "get_qos_state": QosState,
}
"""The getters deploy, verify and drain use, and the type each result must have."""

STANDARD_GETTER_TYPES: dict[str, Any] = {
    "get_config": models.ConfigDict,
    "get_interfaces_ip": dict[str, models.InterfacesIPDict],
    "get_interfaces_counters": dict[str, models.InterfaceCounterDict],
    "get_arp_table": list[models.ARPTableDict],
    "get_ipv6_neighbors_table": list[models.IPV6NeighborDict],
    "get_route_to": dict[str, list[models.RouteDict]],
    "get_bgp_neighbors_detail": dict[str, dict[int, list[models.PeerDetailsDict]]],
    "get_network_instances": dict[str, models.NetworkInstanceDict],
    "get_vlans": dict[int, models.VlanDict],
    "get_mac_address_table": list[models.MACAdressTable],
    "get_ntp_servers": dict[str, models.NTPServerDict],
    "get_ntp_stats": list[models.NTPStats],
    "get_snmp_information": models.SNMPDict,
    "get_environment": models.EnvironmentDict,
    "get_users": dict[str, models.UsersDict],
    "is_alive": models.AliveDict,
}
"""NAPALM's other getters, in NAPALM's models (``get_route_to``: a list of routes per prefix,
as NAPALM's documentation and its test suite have it). A platform answers those listed for it
in docs/platforms/napalm-getters.md; the others raise NotImplementedError."""

GETTER_TYPES: dict[str, Any] = {**CONTRACT_GETTER_TYPES, **STANDARD_GETTER_TYPES}
"""Every getter and the type its result must have."""

DPCTL_GETTERS = frozenset({"get_host_routes", "get_evpn_es", "get_maintenance", "get_qos_state"})
"""The getters that are dpctl's own (reached through ``driver.dpctl``)."""


def getter(driver: DpctlDriver, name: str) -> Any:
    """The bound getter ``name`` of ``driver``: dpctl's own on ``driver.dpctl``, NAPALM's on
    the driver."""
    return getattr(driver.dpctl if name in DPCTL_GETTERS else driver, name)


def _is_typed_dict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__annotations__")


def _scalar_ok(tp: type, value: Any) -> bool:
    if tp is float:
        return type(value) is float
    if tp is int:
        return type(value) is int
    return type(value) is tp


def conformance_errors(tp: Any, value: Any, path: str = "$") -> list[str]:
    """Every place where ``value`` is not of type ``tp`` (strict; [] when it conforms)."""
    if tp is Any:
        return []
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [conformance_errors(arg, value, path) for arg in get_args(tp)]
        return [] if any(not o for o in options) else [f"{path}: {value!r} is not {tp}"]
    if _is_typed_dict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected {tp.__name__}, got {type(value).__name__}"]
        hints = get_type_hints(tp)
        required = getattr(tp, "__required_keys__", hints.keys())
        errors = [f"{path}: missing key {k!r}" for k in hints if k in required and k not in value]
        errors += [f"{path}: unexpected key {k!r}" for k in value if k not in hints]
        for key, sub in hints.items():
            if key in value:
                errors += conformance_errors(sub, value[key], f"{path}.{key}")
        return errors
    if tp in (dict, typing.Dict) or origin is dict:  # noqa: UP006 (NAPALM's bare typing.Dict)
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        args = get_args(tp) or (Any, Any)
        errors = []
        for key, item in value.items():
            errors += conformance_errors(args[0], key, f"{path}[{key!r}] (key)")
            errors += conformance_errors(args[1], item, f"{path}[{key!r}]")
        return errors
    if tp in (list, typing.List) or origin is list:  # noqa: UP006
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        (item_type,) = get_args(tp) or (Any,)
        return [
            e for i, v in enumerate(value) for e in conformance_errors(item_type, v, f"{path}[{i}]")
        ]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected None, got {value!r}"]
    if isinstance(tp, type):
        if _scalar_ok(tp, value):
            return []
        return [f"{path}: expected {tp.__name__}, got {type(value).__name__} {value!r}"]
    raise TypeError(f"conformance_errors: unsupported type {tp!r}")
