"""The Linux side of a Linux + FRR switch, as data for its templates.

Applied with real tools: `ip -batch` (links, bonds, bridge, VXLAN, addresses),
`bridge -batch` (VLAN membership), `sysctl -p` (forwarding, proxy ARP), `tc -batch` (RoCE
classification and ECN). The bridge is VLAN-aware (one VLAN per rail, SVI vlan<N> with the
anycast gateway): EVPN-MH in FRR needs VLAN membership for each ES-EVI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.render.device import DeviceConfig

BRIDGE = "br0"
VXLAN_OVERHEAD = 50
VXLAN_PORT = 4789


@dataclass(frozen=True, slots=True)
class TcClass:
    """DSCP block -> prio band. DSCP blocks of 8 map to one TOS value/mask (DSCP << 2)."""

    band: int
    tos: str
    mask: str
    traffic_class: int
    ecn: bool

    @property
    def red_handle(self) -> int:
        return 10 + self.band


def tc_classes(device: DeviceConfig) -> list[TcClass]:
    """Strict priority, as Linux's prio qdisc does: TC7, TC6, then RoCE's 3 and 4, then 0. The
    RoCE classes mark ECN in both modes; Linux has no PFC, so lossless and lossy differ only
    where the datapath pauses (SONiC, AsterNOS)."""
    roce = device.roce
    if roce is None:
        return []
    order = [*sorted(roce.strict_queues, reverse=True), *roce.ecn_queues]
    classes = []
    for band, tc in enumerate(order, start=1):
        for first, last in roce.dscp_ranges(tc):
            if first % 8 or last - first != 7:
                raise ValueError(f"DSCP {first}-{last} is not an aligned block of 8")
            classes.append(TcClass(band, f"0x{first << 2:02x}", "0xe0", tc, tc in roce.ecn_queues))
    return classes


def red_parameters(device: DeviceConfig) -> dict[str, int | str]:
    """tc-red(8) for the RoCE bands: mark ECN between the one-click min and max thresholds."""
    roce = device.roce
    if roce is None:
        return {}
    avpkt = device.mtu
    return {
        "limit": 4 * roce.ecn_max_bytes,
        "min": roce.ecn_min_bytes,
        "max": roce.ecn_max_bytes,
        "avpkt": avpkt,
        # tc-red(8): burst >= (2 * min + max) / (3 * avpkt)
        "burst": (2 * roce.ecn_min_bytes + roce.ecn_max_bytes) // (3 * avpkt) + 1,
        "probability": f"{roce.ecn_probability / 100:.2f}",
    }


def tc_rules(classes: list[TcClass], red: dict[str, int | str]) -> list[tuple[str, str]]:
    """Per class, what follows ``dev <port>`` in its tc-u32 filter and (a lossless band) in
    its tc-red qdisc ("" otherwise). The same on every port, so formatted once per switch:
    looked up port by port in the template it was half of an FRR leaf's rendering (the
    16,384-GPU example's leaves have 193 ports)."""
    rules = []
    for prio, c in enumerate(classes, start=1):
        match = f"u32 match ip dsfield {c.tos} {c.mask} flowid 1:{c.band}"
        red_qdisc = (
            f"parent 1:{c.band} handle {c.red_handle}: red limit {red['limit']} "
            f"min {red['min']} max {red['max']} avpkt {red['avpkt']} burst {red['burst']} "
            f"probability {red['probability']} ecn"
        )
        rules.append((f"parent 1: protocol ip prio {prio} {match}", red_qdisc if c.ecn else ""))
    return rules


EVPN_UNICAST_PROBES = 10
"""Unicast probes (1 s apart, ``ucast_solicit``; the kernel's default is 3) before an EVPN
SVI's neighbour in PROBE fails. The ARP-to-host agent hands a server's synced entry back to
the kernel to probe whenever the pair stops confirming it, which it does in every ordinary
ARP cycle (about every 30 s); where the server's ARP hashes to the pair, the probes go
unanswered and the agent puts its entry back once the pair's fresh sync reaches zebra. With
3 probes that had to happen within 3 s: on the lab's guest with one busy loop added it did
not (5 entries FAILED in 200 s; with 10 probes, 18 hand-backs and none FAILED in 260 s,
2026-12-04), the leaf withdrew the server's /32 until its next pass, and a CI run's `verify`
found a plane-2 /32 missing on both spines. A server's failure in EVPN-MH is acted on from
its LACP state and carrier, not from ARP, so the longer budget only delays a failed probe's
verdict. The agent's PROBE_AGAIN_S must stay longer than these probes last."""


def sysctls(device: DeviceConfig) -> dict[str, int]:
    values = {
        "net.ipv4.ip_forward": 1,
        "net.ipv6.conf.all.forwarding": 1,
        "net.ipv4.fib_multipath_hash_policy": 1,
        "net.ipv6.fib_multipath_hash_policy": 1,
        "net.ipv4.conf.all.arp_announce": 2,
        "net.ipv4.conf.all.arp_ignore": 1,
    }
    for rail in device.rails:
        svi = f"vlan{rail.vlan}"
        values[f"net.ipv4.conf.{svi}.proxy_arp"] = 1
        # Ports are isolated: hosts of one rail reach each other through the gateway.
        values[f"net.ipv4.conf.{svi}.proxy_arp_pvlan"] = 1
        # lab-facts: Linux proxy ARP otherwise delays replies up to 0.8 s.
        values[f"net.ipv4.neigh.{svi}.proxy_delay"] = 0
        if device.segments:
            # EVPN-MH: a server's bond sends every ARP answer to one leaf of the pair
            # (hashed by MAC), also the answer to the other leaf's probe. Taking it makes
            # the pair verify the server and sync it, even where it had no entry left
            # (ip-sysctl.rst: arp_accept; Debian's 6.1 creates a REACHABLE entry from it,
            # measured in the lab guest 2026-12-04). The ARP-to-host agent relies on it.
            values[f"net.ipv4.conf.{svi}.arp_accept"] = 1
            values[f"net.ipv4.neigh.{svi}.ucast_solicit"] = EVPN_UNICAST_PROBES
    return values


def context(device: DeviceConfig) -> dict[str, Any]:
    classes = tc_classes(device)
    red = red_parameters(device)
    default_band = len({c.band for c in classes}) + 1
    return {
        "bridge": BRIDGE,
        "vxlan_mtu": device.mtu - VXLAN_OVERHEAD,
        "vxlan_port": VXLAN_PORT,
        "sysctls": sysctls(device),
        "tc_classes": classes,
        "red": red,
        "default_band": default_band,
        "priomap": " ".join([str(default_band - 1)] * 16),
        "tc_rules": tc_rules(classes, red),
        "arp_to_host": {
            "table": device.bgp.import_host_table,
            "interfaces": [f"vlan{r.vlan}" for r in device.rails],
            "prefixes": [r.prefix for r in device.rails],
            "bridge": BRIDGE,
            # dual-ARP: a port without carrier withdraws its servers' /32 at once. EVPN-MH:
            # the neighbour is the pair's too (synced), so the /32 follows the ES bond's
            # LACP state instead (the agent's docstring says why).
            "withdraw_on_carrier_loss": not device.segments,
            # EVPN-MH: withdraw the /32 of a server whose ES bond here does not serve it only
            # where the senders' leaves have the other plane as a backup (protection); without
            # it the plane would have no path left, and what enters here reaches the server
            # through the pair over VXLAN (the bond's bridge backup port) instead.
            "withdraw_unserved": device.cross_plane_protection,
            "evpn_svis": {str(r.vni): f"vlan{r.vlan}" for r in device.rails}
            if device.segments
            else {},
            "segments": {
                es.bond: {
                    "member": es.member,
                    "hosts": [es.host],
                    "esi": es.esi,
                    "es_id": es.es_id,
                }
                for es in device.segments
            },
        },
    }


def ecn_queues(device: DeviceConfig) -> list[int]:
    """On Linux the RoCE traffic classes mark ECN in the prio qdisc's bands they go to."""
    return sorted({c.band for c in tc_classes(device) if c.ecn})
