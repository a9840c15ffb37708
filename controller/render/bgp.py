"""A switch's BGP: neighbours by peer group, prefix-lists, route-maps, EVPN, the switches'
graceful restart and shutdown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from controller.facts import Fabric, Maintenance, Switch
from controller.render.interfaces import Interface

ARP_HOST_TABLE = 100
HANDS_OFF: tuple[str, ...] = ("handed-off", "isolated")
"""Drain states in which a leaf reaches its own servers through its pair."""
"""Kernel table the ARP-to-host-route watcher fills and zebra imports (lab-facts: FRR has no
'redistribute neighbor'; ip import-table + redistribute table worked)."""
PEER_GROUP = {"uplink": "SPINES", "fabric": "LEAVES", "aux": "PAIR"}


@dataclass(frozen=True, slots=True)
class BgpNeighbor:
    interface: str
    cli: str
    peer_group: str
    peer_device: str
    peer_asn: int


@dataclass(frozen=True, slots=True)
class PrefixRule:
    seq: int
    action: Literal["permit", "deny"]
    prefix: str
    ge: int | None = None
    le: int | None = None


@dataclass(frozen=True)
class Bgp:
    asn: int
    router_id: str
    peer_groups: dict[str, str]
    """peer group -> its inbound route-map suffix, e.g. SPINES -> RM-SPINES-IN/OUT."""
    neighbors: tuple[BgpNeighbor, ...]
    maximum_paths: int
    bfd: bool
    keepalive_s: int
    hold_s: int
    prefix_lists: dict[str, tuple[PrefixRule, ...]]
    route_maps: tuple[RouteMap, ...]
    evpn: bool
    evpn_vnis: tuple[tuple[int, str, str], ...]
    """(VNI, route target, the pair's auto-derived RT): one RT per rail VNI, the same on both
    leaves of a pair (their ASNs differ, so FRR's auto-derived RTs would not match), imported
    and exported. The pair's auto-derived RT (its ASN's lower 2 bytes:VNI, as FRR derives it:
    NVIDIA Cumulus Linux user guide, "EVPN Enhancements", "Define RDs and RTs") is imported
    too: a bgpd restarted on FRR 8.4 can originate a segment's EAD routes with its auto-derived
    RT instead of the configured one (probably before it has applied the configured RT; not
    traced) and does not correct them later.
    Measured in the EVPN-MH lab (2026-12-03, bgpd killed, watchfrr restarted it): the leaf's
    EAD routes of one segment carried RT 65100:10000; its pair did not import them, so both
    leaves stayed designated forwarder for that segment (verify: evpn-es failed) until this
    import was added by hand, which made the pair non-DF at once. FRR 8.4 refuses an import
    of ``*:VNI`` in a VNI ("Malformed Route Target list"), so the pair's RT is named.

    A known FRR 8.4 race this rendering cannot avoid: on ``advertise-all-vni`` zebra replays
    every local segment and its EVIs to bgpd before the VNIs (FRR 8.4.4 zebra/zebra_vxlan.c,
    ``zebra_evpn_es_send_all_to_client``, then the VNI walk), and bgpd drops a segment-EVI
    whose VNI it does not know yet ("Failed to associate VNI ... VNI not present",
    bgpd/bgp_evpn_mh.c ``bgp_evpn_local_es_evi_add``). bgpd knows a VNI from its ``vni``
    block, but FRR refuses that block before ``advertise-all-vni`` ("This command is only
    supported under EVPN VRF"), so whether bgpd reads the block or zebra's replay first is
    timing (a bgpd restart under load, a first deploy, a BGP instance created anew). A
    segment that lost the race has no local EVI in bgpd (``show bgp l2vpn evpn es-evi``:
    flags ``R``, not ``LR``), sends no EAD-per-EVI route, and the pair does not activate the
    leaf as a segment peer: both leaves stay designated forwarder (scratch lab, 2026-12-03,
    with the "VNI not present" line in the restarted bgpd's log). Upstream fixed the replay
    order later (FRRouting/frr#22553, 2026-07). CI of 2026-12-03 (a slow run) found both leaves
    of a pair DF after a bgpd crash on an EVPN-MH leaf; ``verify`` reports it (evpn-es)."""
    import_host_table: int | None
    graceful_shutdown: bool
    wcmp: bool
    graceful_restart: bool = False
    """RFC 4724 restarter and helper, forwarding state preserved: on in every fabric, on every
    switch and every platform, so that a crashed bgpd keeps the leaf forwarding (its zebra
    keeps a graceful-restart client's routes; the spines keep the leaf's routes as stale until
    its End-of-RIB). Measured in the lab: README "FRR restart on a leaf, measured", and the
    failure matrix's FRR crash rows. EVPN-MH fabrics had it off from 2026-11-30 to 2026-12-03
    (a deploy of 2026-12-02 found bgpd dead on a leaf and a spine after the commit, cause not
    found; the lab did not keep FRR's logs then); turned on again after a bgpd crash on an
    EVPN-MH leaf was found to cost 39 s without it and nothing with it (lab, 2026-12-03), and
    the fault that kept the crashed leaf unhealthy was found and fixed (``evpn_vnis``). A
    planned FRR restart gains nothing from it on FRR (bgpd withdraws its routes as it stops,
    FRRouting/frr#12041): drain the leaf first.

    Rendered with ``select-defer-time 0``: no route-selection deferral. FRR defers best-path
    selection on a BGP instance younger than its restart time (120 s) for every session whose
    peer was not restarting too, until each such peer's End-of-RIB, or 360 s; and a deferring
    bgpd withholds its own End-of-RIBs (FRR 8.4.4 source: bgpd/bgp_open.c sets the R bit while
    ``t_startup`` runs, bgpd/bgp_fsm.c ``bgp_update_gr_info`` starts the deferral,
    bgpd/bgpd.h ``BGP_SEND_EOR``). Switches whose instances start a little apart (a deploy, a
    plane deployed after the other) can so wait on each other: the lab suite of 2026-12-03
    found leaves with every session up and no selected route to their plane's loopbacks for
    minutes, in both modes (the "pair session not up" failure of 2026-11-30 was probably the
    same). Measured in the lab (2026-12-03): a leaf's BGP instance created anew while one spine
    withheld its End-of-RIB had no BGP route 129 s later; with this line, all three loopback
    routes within 11 s. Zebra keeps the crashed bgpd's routes either way (preserve-fw-state),
    so the restart keeps forwarding; the spines still keep the leaf's routes as stale until
    its End-of-RIB."""
    zebra_imports_hosts: bool = True
    """False while the leaf is handed off (``HANDS_OFF``): zebra does not import the
    ARP-to-host table (no ``ip import-table``), so the pair's routes over the AUX link
    (RM-PAIR-IN) are the ones installed, and RM-HOSTS-IMPORT denies the host routes to BGP
    as well. Zebra's import wins over BGP (distance 15 against 20), and bgpd keeps a route it
    redistributes as best (weight 32768): both must go. The agent's table itself is kept,
    so the import comes back at once when the leaf returns. Raising the import's distance
    instead (``ip import-table 100 distance 250``) worked by hand, but FRR's frr-reload.py
    drops that change as an old syntax (8.4.4, "ip import-table no longer accepts
    distance"), so no deploy could apply it. Measured in the lab (2026-12-07, dual-ARP, FRR
    8.4.4): without the import and with the deny, the leaf's kernel routes a server's /32 via
    the AUX link."""


@dataclass(frozen=True, slots=True)
class RouteMapEntry:
    seq: int
    action: Literal["permit", "deny"]
    match_prefix_list: str | None = None
    match_as_path: str | None = None
    match_community: str | None = None
    set_local_preference: int | None = None
    set_prepend: tuple[int, ...] = ()
    set_community: str | None = None
    set_link_bandwidth: bool = False


@dataclass(frozen=True, slots=True)
class RouteMap:
    name: str
    entries: tuple[RouteMapEntry, ...]


LOCAL_AS_PATH = "AS-LOCAL"
"""as-path list matching routes this switch originated (^$): only those go to the spines,
so routes learned from the pair leaf of the other plane never leak into this plane."""

GSHUT_COMMUNITY_LIST = "CL-GSHUT"
"""community-list of the well-known GRACEFUL_SHUTDOWN community (RFC 8326)."""


def _fabric_in(name: str) -> RouteMap:
    """Routes from the other tier. A route a draining switch tagged GRACEFUL_SHUTDOWN gets
    LOCAL_PREF 0 (RFC 8326, receiver side: eBGP peers do not act on the tag by themselves),
    so any other path, such as a cross-plane backup over the AUX link, wins before the
    drained switch withdraws anything."""
    return RouteMap(
        name,
        (
            RouteMapEntry(
                5,
                "permit",
                "PL-FABRIC",
                match_community=GSHUT_COMMUNITY_LIST,
                set_local_preference=0,
            ),
            RouteMapEntry(10, "permit", "PL-FABRIC"),
        ),
    )


def _prefix_lists(fabric: Fabric, switch: Switch) -> dict[str, tuple[PrefixRule, ...]]:
    pools = fabric.intent.addressing
    lists: dict[str, tuple[PrefixRule, ...]] = {
        "PL-LOOPBACK": (PrefixRule(5, "permit", f"{switch.loopback}/32"),),
        "PL-FABRIC": (
            PrefixRule(5, "permit", str(pools.loopbacks), ge=32),
            PrefixRule(10, "permit", str(pools.rail_subnets), ge=32),
        ),
    }
    if switch.role == "leaf":
        lists["PL-HOSTS"] = tuple(
            PrefixRule(
                5 * (i + 1),
                "permit",
                fabric.rail_subnet_at[(switch.group or 0, rail)].prefix,
                ge=32,
            )
            for i, rail in enumerate(switch.rails)
        )
        lists["PL-ALL-HOSTS"] = (PrefixRule(5, "permit", str(pools.rail_subnets), ge=32),)
        if switch.pair:
            pair = fabric.switch_by_name[switch.pair]
            lists["PL-PAIR-LOOPBACK"] = (PrefixRule(5, "permit", f"{pair.loopback}/32"),)
    return lists


def _route_maps(
    fabric: Fabric, switch: Switch, maintenance: Maintenance, uses_pair: bool
) -> tuple[RouteMap, ...]:
    isolated = maintenance == "isolated"
    wcmp = fabric.intent.load_balancing.mode == "wcmp"
    maps = [RouteMap("RM-CONNECTED", (RouteMapEntry(10, "permit", "PL-LOOPBACK"),))]
    if switch.role == "spine":
        out = (
            (RouteMapEntry(10, "permit", "PL-LOOPBACK"),)
            if isolated
            else (RouteMapEntry(10, "permit", "PL-FABRIC", set_link_bandwidth=wcmp),)
        )
        maps += [
            _fabric_in("RM-LEAVES-IN"),
            RouteMap("RM-LEAVES-OUT", out),
        ]
        return tuple(maps)
    spines_out = [RouteMapEntry(10, "permit", "PL-LOOPBACK")]
    if not isolated:
        spines_out.append(RouteMapEntry(20, "permit", "PL-HOSTS", match_as_path=LOCAL_AS_PATH))
    hosts_import: Literal["permit", "deny"] = "deny" if maintenance in HANDS_OFF else "permit"
    maps += [
        RouteMap("RM-HOSTS-IMPORT", (RouteMapEntry(10, hosts_import, "PL-HOSTS"),)),
        _fabric_in("RM-SPINES-IN"),
        RouteMap("RM-SPINES-OUT", tuple(spines_out)),
    ]
    if uses_pair:
        pair_out = [RouteMapEntry(10, "permit", "PL-LOOPBACK", match_as_path=LOCAL_AS_PATH)]
        pair_in = [RouteMapEntry(10, "permit", "PL-PAIR-LOOPBACK")]
        if fabric.intent.cross_plane_protection:
            prepend = (switch.asn,) * 3
            pair_out.append(RouteMapEntry(20, "permit", "PL-ALL-HOSTS", set_prepend=prepend))
            pair_in.append(RouteMapEntry(20, "permit", "PL-ALL-HOSTS"))
        maps += [RouteMap("RM-PAIR-OUT", tuple(pair_out)), RouteMap("RM-PAIR-IN", tuple(pair_in))]
        if fabric.intent.dual_leaf_mode == "evpn-mh":
            # eBGP needs a policy per address family (FRR's ebgp-requires-policy): the pair
            # exchanges every EVPN route of its segments and VNIs.
            maps.append(RouteMap("RM-PAIR-EVPN", (RouteMapEntry(10, "permit"),)))
    return tuple(maps)


def build_bgp(
    fabric: Fabric, switch: Switch, interfaces: list[Interface], maintenance: Maintenance
) -> Bgp:
    intent = fabric.intent
    neighbors = []
    for port in interfaces:
        if port.use == "downlink":
            continue
        peer = fabric.switch_by_name[port.peer_device]
        neighbors.append(
            BgpNeighbor(
                interface=port.name,
                cli=port.cli,
                peer_group=PEER_GROUP[port.use],
                peer_device=peer.name,
                peer_asn=peer.asn,
            )
        )
    uses_pair = any(n.peer_group == "PAIR" for n in neighbors)
    pair_asn = fabric.switch_by_name[switch.pair].asn if switch.pair else switch.asn
    groups = {"LEAVES": "LEAVES"} if switch.role == "spine" else {"SPINES": "SPINES"}
    if uses_pair:
        groups["PAIR"] = "PAIR"
    width = ecmp_width(fabric, switch)
    return Bgp(
        asn=switch.asn,
        router_id=switch.router_id,
        peer_groups=groups,
        neighbors=tuple(neighbors),
        maximum_paths=width,
        bfd=intent.bfd,
        keepalive_s=intent.bgp_timers.keepalive,
        hold_s=intent.bgp_timers.hold,
        prefix_lists=_prefix_lists(fabric, switch),
        route_maps=_route_maps(fabric, switch, maintenance, uses_pair),
        evpn=switch.role == "leaf" and intent.dual_leaf_mode == "evpn-mh",
        evpn_vnis=tuple(
            (subnet.vni, f"{intent.asn.spine}:{subnet.vni}", f"{pair_asn & 0xFFFF}:{subnet.vni}")
            for rail in switch.rails
            for subnet in [fabric.rail_subnet_at[(switch.group or 0, rail)]]
        )
        if switch.role == "leaf" and intent.dual_leaf_mode == "evpn-mh"
        else (),
        import_host_table=ARP_HOST_TABLE if switch.role == "leaf" else None,
        graceful_shutdown=maintenance in ("graceful-shutdown", *HANDS_OFF),
        zebra_imports_hosts=maintenance not in HANDS_OFF,
        wcmp=intent.load_balancing.mode == "wcmp",
        graceful_restart=True,
    )


def ecmp_width(fabric: Fabric, switch: Switch) -> int:
    """Equal-cost paths a switch has: a leaf's uplinks; a spine's links to one leaf."""
    if switch.role == "leaf":
        return fabric.sizing.uplinks_per_leaf
    return fabric.sizing.links_per_leaf_spine_pair
