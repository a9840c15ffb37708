"""Benchmark: SONiC YANG validation of rendered config_db.json, per CX864E-N leaf and per fabric.

Renders each fabric as platform sonic (load balancing ecmp) without validation, then times
controller.platforms.sonic.yang on every device: the translation to the models' JSON form and the
libyang parse + validation (MultiError), on one core. Prints the one-off model load time,
per-role milliseconds (median / max) and whole-fabric seconds next to the render time.

Run: python tests/bench/bench_sonic_validate.py [INTENT.yaml ...]
(default: the seed-2048 CX864E-N examples in both dual-leaf modes; add
inventory/examples/cx864e-16384-evpn-mh.yaml for 384 devices).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.platforms.sonic import yang as sonic_yang  # noqa: E402
from controller.render.engine import render_fabric  # noqa: E402

DEFAULT = [
    "inventory/examples/seed-2048-cx864e-dual-arp.yaml",
    "inventory/examples/seed-2048-cx864e-evpn-mh.yaml",
]


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:6.1f} ms, max {max(values) * 1e3:6.1f} ms"


def bench(path: Path) -> None:
    intent = load_intent(path)
    data = intent.model_dump(mode="json")
    data.update(platform="sonic", load_balancing={"mode": "ecmp"})
    fabric = build_fabric(type(intent).model_validate(data))
    start = time.perf_counter()
    rendered = render_fabric(fabric, validate=False)
    render_s = time.perf_counter() - start
    role = {s.name: f"{s.model} {s.role}" for s in fabric.switches}
    translate: dict[str, list[float]] = {}
    total: dict[str, list[float]] = {}
    invalid = 0
    start = time.perf_counter()
    for name, files in rendered.items():
        db = json.loads(files["config_db.json"])
        t0 = time.perf_counter()
        sonic_yang.translate(db)
        t1 = time.perf_counter()
        invalid += bool(sonic_yang.validate(db))  # translates again, then libyang
        t2 = time.perf_counter()
        translate.setdefault(role[name], []).append(t1 - t0)
        total.setdefault(role[name], []).append(t2 - t1)
    fabric_s = time.perf_counter() - start
    print(f"{path.name}: {len(rendered)} devices, {invalid} invalid")
    for kind in sorted(total):
        print(
            f"  {kind:16s} translate {_ms(translate[kind])}; translate+validate {_ms(total[kind])}"
        )
    print(f"  whole fabric: validate {fabric_s:.2f} s, render (no validation) {render_s:.2f} s")


def main() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"load avg {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    start = time.perf_counter()
    sonic_yang.validate({})
    print(
        f"load {len(list(sonic_yang.MODELS.glob('*.yang')))} YANG modules: "
        f"{time.perf_counter() - start:.2f} s ({sonic_yang.MODELS_SOURCE})"
    )
    for arg in sys.argv[1:] or DEFAULT:
        bench(ROOT / arg)


if __name__ == "__main__":
    main()
