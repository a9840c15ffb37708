"""Workloads -> connections -> RoCEv2 flows, by the rail rules.

On a rail-optimized fabric NCCL keeps inter-server traffic on its rail: GPU r of a server talks
to GPU r of the others (cross-rail data moves over NVLink first). So every workload is built
per rail over the servers:

- ring: the ring all-reduce, server i -> server i+1 (mod N), one connection per GPU;
- tree: NCCL's double binary tree, each tree edge both ways (reduce up, broadcast down), the
  second tree the first shifted by one rank;
- all-to-all: every server to every other (MoE dispatch);
- bisection: server i -> server i + N/2 (mod N), the permutation that sends every server's
  line rate to another group: every leaf uplink is loaded, the worst case for the spines.

Every connection runs at the same rate, the one at which the busiest NIC sends or receives at
its line rate (the NIC's line rate over its most connections in either direction). A
connection is `qps` RoCEv2 queue pairs (UDP destination port 4791), each its own flow with
its own source port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from controller.simulate.topology import IntArray, SimulationError, Topology

Workload = Literal["ring", "tree", "all-to-all", "bisection"]
WORKLOADS: tuple[str, ...] = get_args(Workload)
ROCE_PORT = 4791
MAX_FLOWS = 8_000_000
"""About 1 GB of flow and path arrays: the bound of one run."""


@dataclass(frozen=True)
class Flows:
    """One row per RoCEv2 flow (queue pair)."""

    src_server: IntArray
    src_rail: IntArray
    dst_server: IntArray
    dst_rail: IntArray
    rate: np.ndarray
    """Offered rate in Gb/s: the connection's rate split evenly over its QPs."""
    qp_index: IntArray
    """The QP's number among its NIC's QPs: picks the NIC port (round-robin) and source port."""
    sport: IntArray
    connection: IntArray

    def __len__(self) -> int:
        return int(self.src_server.shape[0])


def _pairs(workload: str, n: int) -> tuple[IntArray, IntArray]:
    """(src, dst) server indices of one rail's connections."""
    idx = np.arange(n, dtype=np.int64)
    if workload == "ring":
        return idx, (idx + 1) % n
    if workload == "bisection":
        return idx, (idx + n // 2) % n
    if workload == "all-to-all":
        src = np.repeat(idx, n - 1)
        off = np.tile(np.arange(1, n, dtype=np.int64), n)
        return src, (src + off) % n
    # tree: heap-ordered binary tree over ranks, edges both ways; second tree shifted by one
    child = idx[1:]
    parent = (child - 1) // 2
    a = np.concatenate([child, parent])
    b = np.concatenate([parent, child])
    shifted_a, shifted_b = (a + 1) % n, (b + 1) % n
    return np.concatenate([a, shifted_a]), np.concatenate([b, shifted_b])


def build_flows(topo: Topology, workload: str, qps: int, seed: int = 0) -> Flows:
    """Every flow of the workload on this fabric; raises SimulationError naming the option."""
    if workload not in WORKLOADS:
        raise SimulationError("--workload", f"unknown workload {workload!r} (one of {WORKLOADS})")
    if qps < 1:
        raise SimulationError("--qps", f"must be at least 1 queue pair per connection, got {qps}")
    n, rails = topo.nic_ip.shape
    if n < 2:
        raise SimulationError(
            "--workload", f"{workload} needs at least 2 servers, the fabric has 1"
        )
    if workload == "bisection" and len(np.unique(topo.port_leaf[:, 0, 0])) < 2:
        raise SimulationError(
            "--workload", "bisection needs servers behind at least two leaves of a rail"
        )
    src, dst = _pairs(workload, n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    per_rail = src.shape[0]
    total = per_rail * rails * qps
    if total > MAX_FLOWS:
        raise SimulationError(
            "--qps",
            f"{workload} with {qps} QPs per connection makes {total:,} flows, more than the "
            f"{MAX_FLOWS:,} one run holds in memory: use fewer --qps (or ring, tree, bisection)",
        )
    line = topo.cap[topo.host_up[:, :, 0]].astype(np.float64) * topo.ports_per_nic
    conns_of = np.bincount(src, minlength=n)
    # connection c of a rail: its index among its NIC's connections
    order = np.argsort(src, kind="stable")
    local = np.empty_like(src)
    starts = np.concatenate([[0], np.cumsum(conns_of)[:-1]])
    local[order] = np.arange(per_rail) - np.repeat(starts, conns_of)
    rail = np.repeat(np.arange(rails, dtype=np.int64), per_rail)
    c_src, c_dst, c_local = np.tile(src, rails), np.tile(dst, rails), np.tile(local, rails)
    # every connection at the same rate, so that the busiest NIC sends or receives its line rate
    degree = max(int(conns_of.max()), int(np.bincount(dst, minlength=n).max()))
    c_rate = line[c_src, rail] / degree
    q = np.arange(qps, dtype=np.int64)
    conn = np.repeat(np.arange(c_src.shape[0], dtype=np.int64), qps)
    qp_index = np.repeat(c_local, qps) * qps + np.tile(q, c_src.shape[0])
    f_src, f_rail = c_src[conn], rail[conn]
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 1 << 14, size=(n, rails), dtype=np.int64)
    sport = 0xC000 | ((base[f_src, f_rail] + qp_index) & 0x3FFF)
    return Flows(
        src_server=f_src,
        src_rail=f_rail,
        dst_server=c_dst[conn],
        dst_rail=f_rail.copy(),
        rate=c_rate[conn] / qps,
        qp_index=qp_index,
        sport=sport,
        connection=conn,
    )
