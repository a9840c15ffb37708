"""Path choice per load-balancing mode, as the switches make it.

Hash: CRC-32 (the IEEE polynomial of zlib, one of the SAI ECMP hash algorithms, e.g.
SAI_HASH_ALGORITHM_CRC_32LO) over the switch's 4-byte seed and the RoCEv2 5-tuple (source
and destination address, protocol 17, source port, destination port 4791). A switch uses a
16-bit window of the 32-bit result starting at its hash offset (SAI's ECMP hash offset).
Member choice: hash-threshold (RFC 2992, as the Linux kernel's multipath routing does): the
hash space is cut into one region per next hop, sized by its weight, in next-hop order (a
leaf's uplinks in port order, i.e. spine by spine). `modulo` (window mod n) is the
alternative some ASICs use; it is a sensitivity option, not the default.

With the same seed and offset on every switch (the default: dpctl renders no hash seed) a
flow's hash is the same at the leaf and at the spine: the leaf's choice of spine fixes the
high bits of the window, so the spine's hash-threshold choice among its parallel links to the
destination leaf is the same link for every flow that reached it. That is same-hash-tier
polarization with parallel leaf-spine links. Per-switch seeds and offsets (SONiC sets the
ECMP hash seed and offset per tier in its orchagent switch.json template for this reason)
decorrelate the tiers. A seed alone does not: CRC is linear, a different seed XORs the same
constant into every flow's hash.

Modes: ecmp (hash), wcmp (hash, regions weighted by the link-bandwidth the spine advertises:
its working links to the destination leaf, `set extcommunity bandwidth num-multipaths`),
pbr (the renderer's static downlink -> uplink pin on the leaf, ECMP on the spine, ECMP at the
leaf when the pinned uplink is down or cannot reach the destination), ars (flowlets, each to
the least-loaded next hop at the time), spray (per packet: an even split over next hops).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from controller.simulate.topology import BoolArray, FloatArray, IntArray, Topology
from controller.simulate.traffic import Flows

LbMode = Literal["ecmp", "wcmp", "ars", "pbr", "spray"]
LB_MODES: tuple[str, ...] = get_args(LbMode)
HashSeeds = Literal["same", "per-switch"]
HASH_SEEDS: tuple[str, ...] = get_args(HashSeeds)
Selection = Literal["threshold", "modulo"]
SELECTIONS: tuple[str, ...] = get_args(Selection)
FLOWLETS = 8
PROTO_UDP = 17
ROCE_PORT = 4791


def _crc_table() -> NDArrayU32:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[i] = c
    return table


NDArrayU32 = np.ndarray
_TABLE = _crc_table()


def crc32_rows(data: np.ndarray) -> np.ndarray:
    """zlib's CRC-32 of each row of a (n, bytes) uint8 array, vectorised over rows."""
    crc = np.full(data.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for j in range(data.shape[1]):
        crc = _TABLE[(crc ^ data[:, j]) & 0xFF] ^ (crc >> np.uint32(8))
    return crc ^ np.uint32(0xFFFFFFFF)


def _be(values: np.ndarray, width: int) -> np.ndarray:
    v = values.astype(np.uint64)
    return np.stack(
        [
            ((v >> np.uint64(8 * (width - 1 - i))) & np.uint64(0xFF)).astype(np.uint8)
            for i in range(width)
        ],
        axis=1,
    )


def five_tuple_hash(
    seed: np.ndarray, src_ip: np.ndarray, dst_ip: np.ndarray, sport: np.ndarray
) -> np.ndarray:
    """CRC-32 over seed (4 bytes) | src | dst | proto | sport | dport, per flow (uint32)."""
    n = src_ip.shape[0]
    parts = [
        _be(np.broadcast_to(seed, (n,)), 4),
        _be(src_ip, 4),
        _be(dst_ip, 4),
        np.full((n, 1), PROTO_UDP, dtype=np.uint8),
        _be(sport, 2),
        _be(np.full(n, ROCE_PORT), 2),
    ]
    return crc32_rows(np.concatenate(parts, axis=1))


def window(crc: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The 16-bit window of the 32-bit hash starting at bit `offset` (rotating)."""
    c = crc.astype(np.uint64)
    off = np.asarray(offset, dtype=np.uint64) % np.uint64(32)
    rot = ((c >> off) | (c << (np.uint64(32) - off))) & np.uint64(0xFFFFFFFF)
    return (rot & np.uint64(0xFFFF)).astype(np.int64)


TIER_OFFSET = {"leaf": 0, "spine": 16}


def switch_seeds(names: list[str], mode: str, tier: str) -> tuple[IntArray, IntArray]:
    """(seed, hash offset) per switch.

    same: seed 0 and offset 0 everywhere (what a fabric gets when nobody sets them).
    per-switch: each switch its own seed (from its name) and each tier its own 16-bit window
    of the hash (leaves bits 0-15, spines bits 16-31), as SONiC sets seed and offset per tier.
    """
    if mode == "same":
        zeros = np.zeros(len(names), dtype=np.int64)
        return zeros, zeros.copy()
    seeds = np.array([zlib.crc32(n.encode()) for n in names], dtype=np.int64)
    return seeds, np.full(len(names), TIER_OFFSET[tier], dtype=np.int64)


def select(
    w16: IntArray, group: IntArray, weights: FloatArray, selection: str = "threshold"
) -> IntArray:
    """Member index per flow: hash-threshold over the group's weighted regions, or modulo.

    weights: (groups, members) with zeros for absent members; members present come first.
    """
    if selection == "modulo":
        n = (weights[group] > 0).sum(axis=1)
        return np.asarray(w16 % np.maximum(n, 1), dtype=np.int64)
    cum = np.cumsum(weights, axis=1)
    total = cum[:, -1]
    frac = cum / np.where(total > 0, total, 1.0)[:, None]
    m = weights.shape[1]
    flat = (np.arange(weights.shape[0])[:, None] + frac).ravel()
    q = group + w16 / 65536.0
    pos = np.searchsorted(flat, q, side="right") - group * m
    return np.asarray(np.minimum(pos, m - 1), dtype=np.int64)


@dataclass(frozen=True)
class Groups:
    """Next-hop groups of one tier: one row per (switch, destination leaf) in use."""

    key: IntArray
    """The group's (switch, destination leaf) pair as switch * L + leaf."""
    members: IntArray
    """(groups, max members): directed link ids in next-hop order, -1 padded."""
    weights: FloatArray
    """(groups, max members): 0 for absent members."""


def leaf_groups(
    topo: Topology,
    alive: BoolArray,
    src_leaf: IntArray,
    dst_leaf: IntArray,
    wcmp: bool,
) -> tuple[Groups, IntArray]:
    """The leaf tier's next-hop groups for these (source leaf, destination leaf) legs."""
    n_leaves = len(topo.leaves)
    key = src_leaf * n_leaves + dst_leaf
    uniq, inv = np.unique(key, return_inverse=True)
    y, z = uniq // n_leaves, uniq % n_leaves
    ups = topo.uplink[y]  # (g, U)
    spine = topo.uplink_spine[y]
    down_alive = _down_alive(topo, alive)  # (S, L) count of working links spine -> leaf
    reach = down_alive[np.maximum(spine, 0), z[:, None]]
    ok = (ups >= 0) & alive[np.maximum(ups, 0)] & (reach > 0)
    weights = np.where(ok, reach if wcmp else 1, 0).astype(np.float64)
    members = np.where(ok, ups, -1)
    members, weights = _compact(members, weights)
    return Groups(uniq, members, weights), np.asarray(inv, dtype=np.int64).ravel()


def spine_groups(
    topo: Topology, alive: BoolArray, spine: IntArray, dst_leaf: IntArray
) -> tuple[Groups, IntArray]:
    n_leaves = len(topo.leaves)
    key = spine * n_leaves + dst_leaf
    uniq, inv = np.unique(key, return_inverse=True)
    s, z = uniq // n_leaves, uniq % n_leaves
    links = topo.downlink[s, z]  # (g, K)
    ok = (links >= 0) & alive[np.maximum(links, 0)]
    members, weights = _compact(np.where(ok, links, -1), ok.astype(np.float64))
    return Groups(uniq, members, weights), np.asarray(inv, dtype=np.int64).ravel()


def _down_alive(topo: Topology, alive: BoolArray) -> IntArray:
    d = topo.downlink
    return np.asarray(((d >= 0) & alive[np.maximum(d, 0)]).sum(axis=2), dtype=np.int64)


def _compact(members: IntArray, weights: FloatArray) -> tuple[IntArray, FloatArray]:
    """Move present members to the front of each row, keeping their order."""
    order = np.argsort(weights <= 0, axis=1, kind="stable")
    return np.take_along_axis(members, order, axis=1), np.take_along_axis(weights, order, axis=1)


@dataclass
class Legs:
    """Fabric legs of the delivered flows that leave their leaf."""

    flow: IntArray
    src_leaf: IntArray
    dst_leaf: IntArray
    direct: BoolArray
    """True where the leg starts at the sender's own leaf (PBR pins apply)."""


@dataclass
class Segments:
    unit: list[IntArray] = field(default_factory=list)
    link: list[IntArray] = field(default_factory=list)
    rate: list[FloatArray] = field(default_factory=list)

    def add(self, unit: IntArray, link: IntArray, rate: FloatArray) -> None:
        self.unit.append(unit)
        self.link.append(link)
        self.rate.append(np.broadcast_to(rate, unit.shape).astype(np.float64))

    load: FloatArray | None = None
    """Fabric load added as a whole (modes that keep paths as a matrix, not as segments)."""
    matrix: tuple[IntArray, np.ndarray] | None = None
    """(units, links): each unit's fabric links as one row (int32), for its bottleneck."""

    def add_matrix(self, units: IntArray, links: np.ndarray, load: FloatArray) -> None:
        self.matrix = (units, links.astype(np.int32))
        self.load = load

    def arrays(self) -> tuple[IntArray, IntArray, FloatArray]:
        if not self.unit:
            e = np.zeros(0, dtype=np.int64)
            return e, e.copy(), np.zeros(0)
        return np.concatenate(self.unit), np.concatenate(self.link), np.concatenate(self.rate)


def place(
    topo: Topology,
    alive: BoolArray,
    flows: Flows,
    legs: Legs,
    src_ip: np.ndarray,
    dst_ip: np.ndarray,
    port: IntArray,
    lb: str,
    hash_seeds: str,
    selection: str,
    seed: int,
    seg: Segments,
) -> tuple[int, IntArray, BoolArray]:
    """Fabric links of each leg per LB mode: (units, unit of each leg, legs with no path)."""
    f = legs.flow
    groups, ginv = leaf_groups(topo, alive, legs.src_leaf, legs.dst_leaf, lb == "wcmp")
    partitioned = groups.weights[ginv, 0] <= 0
    rate = flows.rate[f]
    live = np.flatnonzero(~partitioned)
    if lb == "spray":
        return _spray(topo, alive, legs, groups, ginv, partitioned, rate, seg)
    if lb == "ars":
        _ars(topo, alive, legs, groups, ginv, live, rate, seed, seg)
        return len(f), np.arange(len(f)), partitioned
    leaf_seed, leaf_off = switch_seeds(topo.leaves, hash_seeds, "leaf")
    spine_seed, spine_off = switch_seeds(topo.spines, hash_seeds, "spine")
    sport = flows.sport[f]
    y = legs.src_leaf
    w = window(five_tuple_hash(leaf_seed[y], src_ip[f], dst_ip[f], sport), leaf_off[y])
    pick = select(w, ginv, groups.weights, selection)
    up = groups.members[ginv, pick]
    if lb == "pbr":
        s, r = flows.src_server[f], flows.src_rail[f]
        per = max(topo.downlinks_per_leaf // topo.uplink.shape[1], 1)
        u = np.minimum(topo.port_downlink[s, r, port[f]] // per, topo.uplink.shape[1] - 1)
        pinned = topo.uplink[y, u]
        member = (groups.members[ginv] == pinned[:, None]).any(axis=1)
        up = np.where(legs.direct & member, pinned, up)
    spine = topo.link_spine[np.maximum(up, 0)]
    sg, sinv = spine_groups(topo, alive, spine, legs.dst_leaf)
    ws = window(five_tuple_hash(spine_seed[spine], src_ip[f], dst_ip[f], sport), spine_off[spine])
    down = sg.members[sinv, select(ws, sinv, sg.weights, selection)]
    units = np.arange(len(f))
    path = np.stack([up[live], down[live]], axis=1)
    load = np.bincount(path.ravel(), weights=np.repeat(rate[live], 2), minlength=topo.links)
    seg.add_matrix(units[live], path, load.astype(np.float64))
    return len(f), units, partitioned


def _spray(
    topo: Topology,
    alive: BoolArray,
    legs: Legs,
    groups: Groups,
    ginv: IntArray,
    partitioned: BoolArray,
    rate: FloatArray,
    seg: Segments,
) -> tuple[int, IntArray, BoolArray]:
    """Per-packet even split at every hop; units are the leaf-tier groups."""
    n_groups = groups.key.shape[0]
    total = np.bincount(ginv[~partitioned], weights=rate[~partitioned], minlength=n_groups)
    present = groups.weights > 0
    count = present.sum(axis=1)
    g_idx, j_idx = np.nonzero(present)
    up = groups.members[g_idx, j_idx]
    share = total[g_idx] / count[g_idx]
    seg.add(g_idx, up, share)
    n_leaves = len(topo.leaves)
    dst = groups.key % n_leaves
    spine = topo.link_spine[up]
    key = g_idx * len(topo.spines) + spine
    uniq, inv = np.unique(key, return_inverse=True)
    per_spine = np.bincount(inv, weights=share, minlength=uniq.shape[0])
    pg, ps = uniq // len(topo.spines), uniq % len(topo.spines)
    sg, sinv = spine_groups(topo, alive, ps, dst[pg])
    sp_present = sg.weights[sinv] > 0
    k_count = sp_present.sum(axis=1)
    pi, ki = np.nonzero(sp_present)
    seg.add(pg[pi], sg.members[sinv[pi], ki], per_spine[pi] / k_count[pi])
    return n_groups, ginv, partitioned


def _ars(
    topo: Topology,
    alive: BoolArray,
    legs: Legs,
    groups: Groups,
    ginv: IntArray,
    live: IntArray,
    rate: FloatArray,
    seed: int,
    seg: Segments,
) -> None:
    """Flowlets: each to the least-loaded working next hop at the time, round by round."""
    rng = np.random.default_rng(seed)
    load = np.zeros(topo.links)
    cap = topo.cap
    n_leaves = len(topo.leaves)
    y, z = legs.src_leaf[live], legs.dst_leaf[live]
    g = ginv[live]
    piece = rate[live] / FLOWLETS
    link_spine = topo.link_spine
    members = groups.members
    present = groups.weights > 0
    count = present.sum(axis=1)
    picked = np.empty((live.shape[0], 2 * FLOWLETS), dtype=np.int32)
    for r in range(FLOWLETS):
        order = rng.permutation(live.shape[0])
        # flowlets of one leaf share its uplinks: rank them per source leaf
        rank = _rank_within(y[order], n_leaves)
        rho = np.where(present, load[np.maximum(members, 0)] / cap[np.maximum(members, 0)], np.inf)
        best = np.argsort(rho, axis=1, kind="stable")
        go = g[order]
        pick = best[go, rank % count[go]]
        up = np.empty(live.shape[0], dtype=np.int64)
        up[order] = members[go, pick]
        load += np.bincount(up, weights=piece, minlength=topo.links)
        spine = link_spine[up]
        sg, sinv = spine_groups(topo, alive, spine, z)
        sp_present = sg.weights > 0
        smem = sg.members
        srho = np.where(sp_present, load[np.maximum(smem, 0)] / cap[np.maximum(smem, 0)], np.inf)
        sbest = np.argsort(srho, axis=1, kind="stable")
        so = sinv[order]
        srank = _rank_within(so, sg.key.shape[0])
        scount = sp_present.sum(axis=1)
        down = np.empty(live.shape[0], dtype=np.int64)
        down[order] = smem[so, sbest[so, srank % scount[so]]]
        load += np.bincount(down, weights=piece, minlength=topo.links)
        picked[:, 2 * r], picked[:, 2 * r + 1] = up, down
    seg.add_matrix(live, picked, load)


def _rank_within(group: IntArray, n_groups: int) -> IntArray:
    """Each element's position among the elements of its group, in array order."""
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty_like(group)
    rank[order] = np.arange(group.shape[0]) - np.repeat(starts, counts)
    return rank
