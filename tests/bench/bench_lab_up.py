"""Print lab-up / down times for a leaf-spine topology (a script, not a test).

python3 tests/bench/bench_lab_up.py [--leaves 2] [--spines 1] [--servers-per-leaf 1]
(the substrate: the machine's default, or DPCTL_LAB_SUBSTRATE)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from controller.lab import LabCable, LabNode, LabSession, LabTopology, down, up


def leaf_spine(leaves: int, spines: int, per_leaf: int) -> LabTopology:
    nodes: list[LabNode] = []
    cables: list[LabCable] = []
    for s in range(1, spines + 1):
        ports = tuple(f"swp{i}" for i in range(1, leaves + 1))
        nodes.append(LabNode(f"spine{s}", "switch", "spine", 1, ports))
    for leaf in range(1, leaves + 1):
        ports = tuple(f"swp{i}" for i in range(1, spines + per_leaf + 1))
        nodes.append(LabNode(f"leaf{leaf}", "switch", "leaf", 1, ports))
        for s in range(1, spines + 1):
            cables.append(LabCable(f"leaf{leaf}", f"swp{s}", f"spine{s}", f"swp{leaf}"))
        for h in range(1, per_leaf + 1):
            srv = f"srv{leaf}x{h}"
            nodes.append(LabNode(srv, "server", "server", None, ("nic1p1",)))
            cables.append(LabCable(f"leaf{leaf}", f"swp{spines + h}", srv, "nic1p1"))
    return LabTopology("bench", tuple(nodes), tuple(cables), "172.30.0.0/24")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaves", type=int, default=2)
    ap.add_argument("--spines", type=int, default=1)
    ap.add_argument("--servers-per-leaf", type=int, default=1)
    ap.add_argument("--prefix", default="dpa-")
    ap.add_argument("--mode", choices=("auto", "guest", "native"), default="auto")
    ap.add_argument("--frr-daemons", default="bgpd,bfdd", help="besides zebra, staticd")
    a = ap.parse_args()
    topo = leaf_spine(a.leaves, a.spines, a.servers_per_leaf)
    state_dir = Path(tempfile.mkdtemp(prefix="dpl-bench-")) / "state"
    t0 = time.monotonic()
    try:
        daemons = tuple(d for d in a.frr_daemons.split(",") if d)
        state = up(topo, state_dir, prefix=a.prefix, mode=a.mode, frr_daemons=daemons)
        t_up = time.monotonic() - t0
        with LabSession(state) as s:
            t1 = time.monotonic()
            s.run(topo.nodes[0].name, "true")
            t_first = time.monotonic() - t1
            t1 = time.monotonic()
            s.run(topo.nodes[0].name, "vtysh -c 'show version'")
            t_vtysh = time.monotonic() - t1
    finally:
        t2 = time.monotonic()
        down(state_dir, prefix=a.prefix)
        t_down = time.monotonic() - t2
    print(
        json.dumps(
            {
                "nodes": len(topo.nodes),
                "cables": len(topo.cables),
                "mode": state.mode,
                "substrate": state.substrate,
                "phases_s": state.timings,
                "lab_up_s": round(t_up, 2),
                "first_node_ssh_s": round(t_first, 2),
                "vtysh_s": round(t_vtysh, 2),
                "down_s": round(t_down, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
