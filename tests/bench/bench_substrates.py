"""Benchmark: the README's main job on each lab substrate, in one run.

For each substrate (the one this machine chooses by default, then QEMU TCG) and each fabric:
lab up, deploy plane 1, deploy plane 2, verify (polled until every check passes), their sum
(the main job), a no-change deploy; then, on a second lab, a full deploy of both planes at
once onto factory-state switches. Each figure comes with the CPU seconds the lab's guest
used meanwhile (the host CPU time of its QEMU or UML processes): unlike the wall time, it
does not grow with what else this machine runs, so the load average is printed too.

Run (root, after ``.ci/setup``; the TCG column after
``DPCTL_LAB_SUBSTRATE=tcg bash controller/lab/setup.sh``)::

    python3 tests/bench/bench_substrates.py [--substrates default,tcg,uml-x2] [INTENT ...]

(default: inventory/lab-dual-arp.yaml and inventory/lab-evpn-mh.yaml; ``uml-x2``: the lab
split over two User-Mode Linux instances, one per plane, ``lab up --guests 2``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.deploy import deploy  # noqa: E402
from controller.facts import Fabric  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import load_intent  # noqa: E402
from controller.lab import LabStateError, down, load_state, substrate  # noqa: E402
from controller.lab.access import lab_access  # noqa: E402
from controller.lab.fabric import bring_up, lab_dir  # noqa: E402
from controller.opstate import StateFolder  # noqa: E402
from controller.verify import verify  # noqa: E402
from tests.bench.labbench import exit_on_sigterm  # noqa: E402

PREFIX = "dpk-"
STEPS = ("lab up", "deploy plane 1", "deploy plane 2", "verify")
Figure = tuple[float, float]
"""(wall seconds, the guest's CPU seconds)."""


def guest_cpu_s(state_dir: Path) -> float:
    """CPU seconds of the lab's guest processes so far (reaped children included); 0
    natively."""
    try:
        state = load_state(state_dir)
    except LabStateError:  # no lab, no guest
        return 0.0
    sub = substrate.of_state(state)
    ticks = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and sub.is_ours(int(entry.name), state.path):
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def timed(state_dir: Path, action: Callable[[], Any]) -> Figure:
    cpu, start = guest_cpu_s(state_dir), time.monotonic()
    action()
    return round(time.monotonic() - start, 1), round(guest_cpu_s(state_dir) - cpu, 1)


def _ok(outcomes: dict[str, Any]) -> None:
    failed = {n: o.error for n, o in outcomes.items() if not o.ok}
    if failed:
        raise SystemExit(f"deploy failed: {failed}")


def _verify_until_healthy(
    fabric: Fabric, access: Any, state: StateFolder, timeout: float = 180.0
) -> None:
    deadline = time.monotonic() + timeout
    while not all(c.ok for c in verify(fabric, access, state)):
        if time.monotonic() > deadline:
            raise SystemExit(f"verify did not pass within {timeout:.0f} s")


def _access(state_dir: Path) -> Any:
    access = lab_access(state_dir)
    if access is None:
        raise SystemExit(f"no lab runs in {state_dir}")
    return access


def main_job(fabric: Fabric, state: StateFolder) -> dict[str, Figure]:
    """The main job's steps and a no-change deploy on one lab, then a full deploy on another."""
    figures: dict[str, Figure] = {}
    state_dir = lab_dir(fabric.intent.name)
    try:
        figures["lab up"] = timed(state_dir, lambda: bring_up(fabric, state_dir, prefix=PREFIX))
        access = _access(state_dir)
        for plane in (1, 2):
            figures[f"deploy plane {plane}"] = timed(
                state_dir, lambda p=plane: _ok(deploy(fabric, access, state, plane=p))
            )
        figures["verify"] = timed(state_dir, lambda: _verify_until_healthy(fabric, access, state))
        figures["main job"] = (
            round(sum(figures[s][0] for s in STEPS), 1),
            round(sum(figures[s][1] for s in STEPS), 1),
        )
        again: dict[str, Any] = {}
        figures["no-change deploy"] = timed(
            state_dir, lambda: again.update(deploy(fabric, access, state))
        )
        if any(o.changed for o in again.values()):
            raise SystemExit("the no-change deploy changed something")
    finally:
        down(state_dir, prefix=PREFIX)
    try:
        bring_up(fabric, state_dir, prefix=PREFIX)
        access = _access(state_dir)
        figures["full deploy, both planes"] = timed(
            state_dir, lambda: _ok(deploy(fabric, access, state))
        )
    finally:
        down(state_dir, prefix=PREFIX)
    return figures


SPLIT = "uml-x2"
"""The lab split over two UML instances, one per plane (``lab up --guests 2``)."""


def run(fabric: Fabric, intent: Path, forced: str | None) -> tuple[str, dict[str, Figure]]:
    """One substrate (``forced``, else the default choice; ``uml-x2``: UML split over two
    instances): its label and figures."""
    split = forced == SPLIT
    os.environ["DPCTL_LAB_GUESTS"] = "2" if split else "1"
    if split:
        forced = "uml"
    if forced:
        os.environ[substrate.ENV_VAR] = forced
    else:
        os.environ.pop(substrate.ENV_VAR, None)
    os.environ["DPCTL_LAB_DIR"] = tempfile.mkdtemp(prefix="dpctl-bench-labs-")
    os.environ["DPCTL_STATE_DIR"] = tempfile.mkdtemp(prefix="dpctl-bench-state-")
    choice = substrate.choose(PREFIX)
    state = StateFolder.for_intent(fabric.intent.name, intent)
    return choice.label + (" x2" if split else ""), main_job(fabric, state)


def table(name: str, results: list[tuple[str, dict[str, Figure]]]) -> str:
    head = f"| {name} | " + " | ".join(label for label, _f in results) + " |"
    lines = [head, "|---|" + "---:|" * len(results)]
    for key in results[0][1]:
        cells = [f"{f[key][0]:.1f} s ({f[key][1]:.1f} s CPU)" for _l, f in results]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("intents", nargs="*")
    parser.add_argument("--substrates", default="default,tcg")
    args = parser.parse_args()
    intents = args.intents or [
        str(ROOT / "inventory" / "lab-dual-arp.yaml"),
        str(ROOT / "inventory" / "lab-evpn-mh.yaml"),
    ]
    wanted = [s.strip() for s in args.substrates.split(",") if s.strip()]
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs", flush=True)
    for intent in intents:
        fabric = build_fabric(load_intent(Path(intent)))
        results = []
        for name in wanted:
            load = os.getloadavg()[0]
            label, figures = run(fabric, Path(intent), None if name == "default" else name)
            results.append((f"{label} (load {load:.1f})", figures))
            print(f"{fabric.intent.name} on {label}: {figures}", flush=True)
        print(table(fabric.intent.name, results), flush=True)


if __name__ == "__main__":
    main()
