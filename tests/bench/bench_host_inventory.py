"""Benchmark: the Ansible inventory of the GPU servers at 2,048 and 16,384 GPUs.

Prints, per size, the time to build the inventory from the fabric facts (facts built before
the clock starts), its size as the JSON ansible-runner writes, the hosts and the peers the
module derives from it. Goal (issue 12): linear, < 2 s and < 50 MB at 16,384 GPUs.
Run: python tests/bench/bench_host_inventory.py
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.access import ServerAccess  # noqa: E402
from controller.ansible_inventory import build_inventory  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402

INTENT = ROOT / "inventory/examples/cx864e-16384-dual-arp.yaml"
ACCESS = ServerAccess(user="root", key_file="/k/id_ed25519", known_hosts="/k/known_hosts")


def main() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    base = load_intent(INTENT)
    build_inventory(build_fabric(base.model_copy(update={"gpus": 64, "servers": None})), ACCESS)
    for gpus in (2048, 16384):
        fabric = build_fabric(base.model_copy(update={"gpus": gpus, "servers": None}))
        gc.collect()  # the fabric's own garbage is not the inventory's cost
        t0 = time.perf_counter()
        inventory = build_inventory(fabric, ACCESS)
        t1 = time.perf_counter()
        text = json.dumps(inventory, sort_keys=True)  # as hosts.py writes it
        t2 = time.perf_counter()
        group = inventory["all"]["children"]["gpu_servers"]
        per_rail = [len(m) for m in group["vars"]["rail_members"].values()]
        peers_per_server = sum(n - 1 for n in per_rail)
        print(
            f"{gpus:>6} GPUs: {len(group['hosts']):>5} hosts, build {t1 - t0:.3f} s, "
            f"+ JSON {t2 - t1:.3f} s, {len(text) / 1e6:.2f} MB "
            f"({len(text) / gpus:.0f} B per GPU); peers each server derives: {peers_per_server:,}"
        )


if __name__ == "__main__":
    main()
