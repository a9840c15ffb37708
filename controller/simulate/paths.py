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
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from controller.simulate.topology import BoolArray, FloatArray, IntArray, Topology

LbMode = Literal["ecmp", "wcmp", "ars", "pbr", "spray"]
LB_MODES: tuple[str, ...] = get_args(LbMode)
HashSeeds = Literal["same", "per-switch"]
HASH_SEEDS: tuple[str, ...] = get_args(HashSeeds)
Selection = Literal["threshold", "modulo"]
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
