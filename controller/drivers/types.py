"""Typed results of the dpctl-specific getters (NAPALM's own getters keep NAPALM's models)."""

from __future__ import annotations

from typing import TypedDict


class HostRoute(TypedDict):
    prefix: str  # "10.100.0.2/32"
    protocol: str  # "bgp", "table", "kernel", ...
    nexthops: list[str]  # interface names (or addresses) the route leaves through
    selected: bool


class EthernetSegmentState(TypedDict):
    """A local Ethernet segment (remote-only segments are not reported)."""

    esi: str
    interface: str  # local bond / link-aggregation the ES is on
    up: bool
    df: bool  # this switch is the designated forwarder
    peers: list[str]  # VTEPs of the other PEs sharing the ES


class MaintenanceState(TypedDict):
    graceful_shutdown: bool
    isolated: bool
    hosts_via_pair: bool
    """The leaf's host routes denied to BGP and not imported by zebra: it reaches its own
    servers through its pair (drain state handed-off, and isolated)."""


class QosState(TypedDict):
    """What the switch's datapath does for RoCE and ECMP, per port.

    pfc: port -> priorities with PFC enabled (a port without PFC is absent); None where the
      datapath has no PFC at all (Linux: the FRR driver), so a check can refuse it by reason.
    ecn: port -> queues that mark ECN (a port without ECN marking is absent).
    ecmp_hash: "l3" or "l4" (fields of the multipath hash) where the driver reads it; None
      where the platform keeps its ASIC default and dpctl renders no hash setting.
    """

    pfc: dict[str, list[int]] | None
    ecn: dict[str, list[int]]
    ecmp_hash: str | None


class QueueCounters(TypedDict):
    """One switch port's counters of its traffic classes, each keyed by priority or queue
    index; -1 where the switch answers "N/A" (a counter its ASIC or image does not keep).

    pfc_rx / pfc_tx: PFC pause frames received / sent, per priority (0-7).
    drops: packets dropped, per unicast queue.
    ecn_marked: packets WRED marked with ECN, per unicast queue; {} where the image cannot
      say (no such tool, or it printed no queue of this port).
    """

    pfc_rx: dict[int, int]
    pfc_tx: dict[int, int]
    drops: dict[int, int]
    ecn_marked: dict[int, int]
