"""The one driver contract every dpctl platform driver (frr, sonic, asternos) implements.

NAPALM's ``NetworkDriver`` methods keep NAPALM's meaning and NAPALM's result models
(``napalm.base.models``): ``get_facts`` (uptime a float, in seconds), ``get_interfaces``
(speed in Mbit/s as a float, -1.0 unknown), ``get_bgp_neighbors`` (``uptime`` an int in
seconds, -1 for a session that is not established; ``address_family`` keyed ``ipv4``,
``ipv6`` as NAPALM's base documents, and ``l2vpn_evpn`` for BGP EVPN, which NAPALM's base
does not name), ``get_lldp_neighbors``, ``get_lldp_neighbors_detail``, ``get_config``.
dpctl's own getters return the TypedDicts of ``controller.drivers.types``, with one meaning
on every platform.

``batched_reads`` lets a driver serve a run of getters from one read of the device.

``restore_config`` is dpctl's: it replaces the whole configuration with one that
``get_config()["running"]`` returned earlier (the backup a deploy saves before each commit),
from any connection, so ``dpctl rollback`` works after the committing session is gone.

``refresh_bgp_routes`` is dpctl's: every BGP session of the device sends its routes again and
asks its peer for theirs (FRR's ``clear bgp * soft``: route refresh, RFC 2918; no session is
reset). Deploy calls it after a commit once the device's sessions are up: a route exchanged
while a switch's policy was still being applied (both ends of a session are committed at the
same time) can stay missing otherwise. Lab, 2026-12-03: after a first deploy of both planes,
two leaves lacked a spine's loopback for ten minutes while the spine listed it as advertised
to them; ``clear bgp ipv4 unicast swp4 soft in`` on one of them brought it at once.

``conformance_errors`` checks a getter's result against its declared type, strictly (an int
is not a float, a bool is not an int, no missing or extra keys): the conformance tests run it
on every driver's getters over recorded device outputs.
"""

from __future__ import annotations

import abc
import contextlib
import types
import typing
from typing import Any, Union, get_args, get_origin, get_type_hints

from napalm.base import NetworkDriver, models

from controller.drivers import common
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState, QosState


class DpctlDriver(NetworkDriver, metaclass=abc.ABCMeta):  # type: ignore[misc]
    """What dpctl's deploy, verify, drain and rollback ask of a switch driver."""

    platform: str

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
    def get_host_routes(self) -> list[HostRoute]:
        """IPv4 /32 routes in the RIB (selected or not), sorted by address."""

    @abc.abstractmethod
    def get_evpn_es(self) -> list[EthernetSegmentState]:
        """Local EVPN Ethernet segments, sorted by ESI ([] without EVPN-MH)."""

    @abc.abstractmethod
    def get_maintenance(self) -> MaintenanceState:
        """Drain state as the running routing configuration shows it."""

    @abc.abstractmethod
    def get_qos_state(self) -> QosState:
        """PFC and ECN per port, and the ECMP hash, as the datapath is configured."""

    @abc.abstractmethod
    def restore_config(self, saved: str) -> None:
        """Make the device run ``saved`` (a ``get_config()["running"]`` text) and save it."""

    @abc.abstractmethod
    def refresh_bgp_routes(self) -> None:
        """Every BGP session sends its routes again and asks for the peer's (no reset)."""

    def batched_reads(self) -> contextlib.AbstractContextManager[None]:
        """Within this block the getters may answer from one read of the device (verify asks
        every getter once). A driver that reads each getter on its own needs nothing here."""
        return contextlib.nullcontext()


GETTER_TYPES: dict[str, Any] = {
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
"""Each contract getter and the type its result must have."""


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
        errors = [f"{path}: missing key {k!r}" for k in hints if k not in value]
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
