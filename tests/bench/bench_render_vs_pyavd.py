"""Benchmark: dpctl's rendering of the 16,384-GPU example against Arista's pyavd on a fabric
of the same shape, in one run, each pinned to one core (issue 40: >= 50x pyavd's ms/device).

dpctl, per device (``inventory/examples/cx864e-16384-evpn-mh.yaml``: 384 switches, 256 leaves
and 128 spines, two planes), in a fresh process per platform, what ``dpctl render`` does short
of writing files: the intent loaded and validated (pydantic) and the fabric's facts built
(addresses, ASNs, 49,280 cables), once, shared by all devices; then per device its
structured configuration (``DeviceConfig``: interfaces, BGP neighbours, EVPN-MH segments,
rail gateways, RoCE, load balancing), its files from the platform's Jinja2 templates, and the
platform's checks (``render_checked``): AsterNOS, one klish session (~3,300 lines per leaf)
checked line by line against the provenance table (``asternos-syntax``); SONiC,
``config_db.json`` + ``frr.conf`` with the YANG validation OFF (``--no-validate``; it costs
0.05-0.2 s per device, bench_sonic_validate.py); FRR, six files (frr.conf, ip/bridge batches,
sysctl, tc, the ARP agent's JSON), no check. SONiC and FRR run with ECMP load balancing (the
example's ARS is AsterNOS-only), as bench_render.py does.

pyavd, per device (tests/bench/pyavd_fabric.py, in a throwaway venv, /tmp/d40b-pyavd-venv,
made with ``pip install pyavd`` when missing: pyavd is not a dpctl dependency): an AVD
``l3ls-evpn`` fabric built in code with the same switch count and cabling, 2 x 64 spines and
2 x 128 leaves, one uplink from each leaf to each spine of its plane (eBGP underlay, RFC 5549),
AVD's default EVPN overlay, a VXLAN VTEP, a VRF with the rail SVI, and 128 dual-homed servers
per leaf pair (LACP port-channel + EVPN-MH ethernet segment on both leaves); then pyavd's
public API: ``validate_inputs`` per device, ``get_avd_facts`` once, and per device
``get_device_structured_config`` and ``get_device_config`` (EOS CLI text, ~3,100 lines per
leaf). Its modules are imported and a 4-device fabric is run through once before the clock
starts (dpctl's imports are outside its clock too; its template compilation and the syntax
checker's first look at each distinct line are inside it).

Printed: ms/device (wall and CPU) for each side and stage, the ratio pyavd / dpctl for the
whole pipeline (inputs + facts + per-device config) and for the per-device part alone, and
the time of a whole ``dpctl render`` process (start-up, imports and writing 384 files
included). dpctl's figures are the median of ``--repeat`` fresh runs per platform (5;
interleaved, with their range): on this shared machine one 2-second run can be 1.5x another,
while pyavd's single run lasts minutes and averages the noise out.

Run: python tests/bench/bench_render_vs_pyavd.py [--platforms asternos sonic frr] [--quick]
(``--quick``: a 16-switch pyavd fabric, to try the bench; its figure is not comparable.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "inventory/examples/cx864e-16384-evpn-mh.yaml"
PYAVD_VENV = Path("/tmp/d40b-pyavd-venv")
PYAVD_SCRIPT = Path(__file__).with_name("pyavd_fabric.py")
REVIEW_PYAVD_MS = 262.0
"""pyavd's ms/device the issue-40 review measured on this machine (192 devices, ~2k lines)."""
TARGET_RATIO = 50.0


def core() -> int:
    return sorted(os.sched_getaffinity(0))[0]


def pin() -> None:
    os.sched_setaffinity(0, {core()})


class Clock:
    """Wall and CPU seconds per stage."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._at = (time.perf_counter(), time.process_time())

    def stop(self, stage: str) -> None:
        now = (time.perf_counter(), time.process_time())
        self.wall[stage] = now[0] - self._at[0]
        self.cpu[stage] = now[1] - self._at[1]
        self._at = now


def dpctl_worker(platform: str) -> dict[str, Any]:
    """One platform's render of the example, in this (fresh) process; its figures."""
    sys.path.insert(0, str(ROOT))
    import yaml

    from controller.cli.common import load_fabric
    from controller.render.engine import render_checked

    data = yaml.safe_load(EXAMPLE.read_text())
    data["platform"] = platform
    if platform != "asternos":
        data["load_balancing"] = {"mode": "ecmp"}
    with tempfile.TemporaryDirectory(prefix="d40b-intent-") as folder:
        intent = Path(folder, EXAMPLE.name)
        intent.write_text(yaml.safe_dump(data, sort_keys=False))
        clock = Clock()
        fabric = load_fabric(intent)  # what `dpctl render` does, as it does it
        clock.stop("intent + facts")
        rendered = render_checked(fabric, validate=False)
        clock.stop("render_checked")
    files = rendered.files
    leaf = next(n for n in files if "leaf" in n)
    return {
        "platform": platform,
        "devices": len(files),
        "wall": clock.wall,
        "cpu": clock.cpu,
        "lines_per_device": sum(t.count("\n") for f in files.values() for t in f.values())
        / len(files),
        "leaf_lines": sum(t.count("\n") for t in files[leaf].values()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_json(argv: list[str]) -> dict[str, Any]:
    """Run a worker pinned to this bench's core; the JSON on its last line of output."""
    proc = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, check=False, preexec_fn=pin
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def pyavd_python(spec: str) -> Path:
    """The throwaway venv's interpreter, with pyavd installed (made on first use)."""
    python = PYAVD_VENV / "bin" / "python"
    probe = [str(python), "-c", "import pyavd"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"making {PYAVD_VENV} with pip install {spec} (once) ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(PYAVD_VENV)
    subprocess.run([str(python), "-m", "pip", "install", "-q", spec], check=True)
    return python


def dpctl_render_process() -> tuple[float, float]:
    """Wall and CPU seconds of a whole `dpctl render` of the example (pinned, files written
    to a temporary folder)."""
    dpctl = Path(sys.executable).with_name("dpctl")
    with tempfile.TemporaryDirectory(prefix="d40b-render-") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [str(dpctl), "render", "-f", str(EXAMPLE), "-o", out],
            cwd=ROOT, check=True, stdout=subprocess.DEVNULL, preexec_fn=pin,
        )  # fmt: skip
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def dpctl_runs(platforms: list[str], repeat: int) -> dict[str, dict[str, Any]]:
    """Each platform's worker ``repeat`` times, interleaved; per platform the run with the
    median total (its stages kept together), with the range of the totals."""
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in platforms}
    for _ in range(repeat):
        for platform in platforms:
            runs[platform].append(run_json([sys.executable, __file__, "--worker", platform]))
    chosen = {}
    for platform, results in runs.items():
        ordered = sorted(results, key=lambda r: per_device(r, "wall"))
        median = ordered[len(ordered) // 2]
        median["range"] = [per_device(ordered[0], "wall"), per_device(ordered[-1], "wall")]
        chosen[platform] = median
    return chosen


def per_device(figures: dict[str, Any], kind: str, stages: list[str] | None = None) -> float:
    seconds = figures[kind]
    return 1000 * sum(seconds[s] for s in stages or seconds) / figures["devices"]


def print_side(name: str, figures: dict[str, Any]) -> None:
    stages = "; ".join(
        f"{s} {per_device(figures, 'wall', [s]):.2f}/{per_device(figures, 'cpu', [s]):.2f}"
        for s in figures["wall"]
    )
    print(
        f"{name:18s} {per_device(figures, 'wall'):8.2f} ms/device wall, "
        f"{per_device(figures, 'cpu'):8.2f} CPU  ({figures['devices']} devices, "
        f"{figures['lines_per_device']:.0f} lines/device, a leaf {figures['leaf_lines']}, "
        f"{figures['peak_rss_mb']:.0f} MB)\n{'':18s} per stage, ms/device wall/CPU: {stages}"
    )
    if "range" in figures:
        low, high = figures["range"]
        print(f"{'':18s} the median of {figures['runs']} runs; their range {low:.2f}-{high:.2f}")


def print_ratios(name: str, dpctl: dict[str, Any], pyavd: dict[str, Any]) -> None:
    avd_device = ["get_device_structured_config", "get_device_config"]
    for kind in ("wall", "cpu"):
        whole = per_device(pyavd, kind) / per_device(dpctl, kind)
        device = per_device(pyavd, kind, avd_device) / per_device(dpctl, kind, ["render_checked"])
        verdict = "met" if whole >= TARGET_RATIO else "MISSED"
        print(
            f"  {name:9s} {kind:4s}: pyavd / dpctl = {whole:6.1f}x whole pipeline "
            f"(target >= {TARGET_RATIO:.0f}x: {verdict}), {device:6.1f}x per-device part"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platforms", nargs="+", default=["asternos", "sonic", "frr"])
    parser.add_argument("--quick", action="store_true", help="a small pyavd fabric (try-out)")
    parser.add_argument("--repeat", type=int, default=5, help="dpctl runs per platform")
    parser.add_argument("--pyavd", default="pyavd", help="pip requirement for the venv")
    parser.add_argument("--max-load", type=float, default=1.0, help="wait for a quieter machine")
    parser.add_argument("--wait", type=float, default=300, help="longest wait for --max-load")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        pin()
        print(json.dumps(dpctl_worker(args.worker)))
        return
    pin()
    deadline = time.monotonic() + args.wait
    while os.getloadavg()[0] >= args.max_load and time.monotonic() < deadline:
        time.sleep(10)
    print(f"{time.strftime('%F %T')}, {os.cpu_count()} cores, pinned to core {core()}, "
          f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    dpctl = dpctl_runs(args.platforms, args.repeat)
    for figures in dpctl.values():
        figures["runs"] = args.repeat
    wall, cpu = sorted(dpctl_render_process() for _ in range(args.repeat))[args.repeat // 2]
    python = pyavd_python(args.pyavd)
    quick = ["--groups", "1", "--rails", "4", "--spines", "4", "--servers", "16"]
    pyavd = run_json([str(python), str(PYAVD_SCRIPT), *(quick if args.quick else [])])
    print(f"pyavd {pyavd['pyavd']} (Python {pyavd['python']}), load average after: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    print_side("pyavd (EOS)", pyavd)
    for platform, figures in dpctl.items():
        print_side(f"dpctl ({platform})", figures)
    devices = next(iter(dpctl.values()))["devices"]
    print(
        f"dpctl render process (the example as it is, AsterNOS, files written; median of "
        f"{args.repeat}): {wall:.2f} s wall, {cpu:.2f} s CPU = {1000 * wall / devices:.2f} "
        "ms/device wall"
    )
    for platform, figures in dpctl.items():
        print_ratios(platform, figures, pyavd)
    review = REVIEW_PYAVD_MS / TARGET_RATIO
    print(f"  (against the review's pyavd {REVIEW_PYAVD_MS:.0f} ms/device, 50x is "
          f"{review:.2f} ms/device)")  # fmt: skip


if __name__ == "__main__":
    main()
