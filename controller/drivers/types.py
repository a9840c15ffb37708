"""Typed results of the dpctl-specific getters (NAPALM's own getters keep NAPALM's models)."""

from __future__ import annotations

from typing import TypedDict


class HostRoute(TypedDict):
    prefix: str  # "10.100.0.2/32"
    protocol: str  # "bgp", "table", "kernel", ...
    nexthops: list[str]  # interface names (or addresses) the route leaves through
    selected: bool


class EthernetSegmentState(TypedDict):
    esi: str
    interface: str  # local bond / link-aggregation the ES is on
    up: bool
    df: bool  # this switch is the designated forwarder
    peers: list[str]  # VTEPs of the other PEs sharing the ES


class MaintenanceState(TypedDict):
    graceful_shutdown: bool
    isolated: bool
