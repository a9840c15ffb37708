"""Benchmark: how long `dpctl` takes to start, as whole processes (issue 40: `dpctl --version`
and `dpctl --help` under 0.3 s, `dpctl plan` under 0.5 s on the project's 2-core machine).

Times each command N times (wall clock; median and min), with hyperfine when it is installed
(Debian's ``hyperfine``: ``-N``, no shell, 2 warm-up runs), else with subprocess and
time.perf_counter. ``python -c pass`` of the same interpreter is timed alongside: the floor no
CLI can go under. Then each command once more with ``PYTHONPROFILEIMPORTTIME=1`` (what
``python -X importtime`` prints) to show where its start-up goes: the biggest top-level
imports, each with its biggest direct children.

The machine is shared: the bench waits (up to ``--wait`` seconds) for the 1-minute load
average to drop under ``--max-load`` and prints the load before and after each run.

By default it times the `dpctl` next to this interpreter (the install you run it from). With
``--installs`` it also builds throwaway venvs under /tmp (``d40b-cli-<mode>``) holding dpctl
three ways: ``editable`` (``pip install -e .``, setuptools' default: a meta-path finder that
``site`` imports at every start-up, what .ci/setup and the README's set-up give), ``compat``
(``pip install -e . --config-settings editable_mode=compat``: a plain path in a .pth) and
``wheel`` (``pip install .`` of a clean copy of the checkout). Each of those venvs sees the
dependencies through one path-only .pth (no other .pth file of the system's site-packages
runs), so it starts like a clean machine's Python; each is removed after its run.

Run: python tests/bench/bench_cli_startup.py [--runs 15] [--installs] [--max-load 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "d40b-cli"
COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass", ["-c", "pass"]),
    ("dpctl --version", ["--version"]),
    ("dpctl --help", ["--help"]),
    ("dpctl plan --model CX864E-N --gpus 2048", ["plan", "--model", "CX864E-N", "--gpus", "2048"]),
    ("dpctl plan -f inventory/fabric.yaml", ["plan", "-f", "inventory/fabric.yaml"]),
    ("dpctl deploy --help", ["deploy", "--help"]),
]
"""(label, arguments): the first runs the interpreter itself, the others its `dpctl`."""
TARGETS = {"dpctl --version": 0.3, "dpctl --help": 0.3}
PLAN_TARGET = 0.5
SKIP_COPY = shutil.ignore_patterns(
    ".git", "__pycache__", "build", "dist", "*.egg-info", ".dpctl", ".lab", ".hypothesis",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", "generated", "rendered",
)  # fmt: skip
"""What the wheel's source copy leaves out (as tests/install/test_wheel.py does)."""
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")


def target(label: str) -> float | None:
    return PLAN_TARGET if label.startswith("dpctl plan") else TARGETS.get(label)


def argv(bin_dir: Path, args: list[str]) -> list[str]:
    if args[0] == "-c":
        return [str(bin_dir / "python"), *args]
    return [str(bin_dir / "dpctl"), *args]


def wait_for_quiet(max_load: float, wait: float) -> None:
    """Wait until the 1-minute load average is under ``max_load`` (at most ``wait`` s)."""
    deadline = time.monotonic() + wait
    while os.getloadavg()[0] >= max_load and time.monotonic() < deadline:
        time.sleep(10)


def load_text() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def time_hyperfine(commands: list[list[str]], runs: int) -> list[list[float]]:
    """Each command's wall times in seconds, measured by hyperfine (no shell)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as export:
        subprocess.run(
            [
                "hyperfine", "-N", "--warmup", "2", "--runs", str(runs), "--style", "none",
                "--export-json", export.name, *(" ".join(c) for c in commands),
            ],
            cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        results = json.loads(Path(export.name).read_text())["results"]
    return [r["times"] for r in results]


def time_subprocess(commands: list[list[str]], runs: int) -> list[list[float]]:
    """Each command's wall times in seconds (subprocess + perf_counter, 2 warm-up runs)."""
    times = []
    for command in commands:
        samples = []
        for i in range(runs + 2):
            start = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            if i >= 2:
                samples.append(time.perf_counter() - start)
        times.append(samples)
    return times


def import_tree(command: list[str]) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """The command's top-level imports as (name, cumulative us, [(child, cumulative us)]),
    from ``PYTHONPROFILEIMPORTTIME`` (children are printed before their parent)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    pending: dict[int, list[tuple[str, int]]] = {}
    top = []
    for line in proc.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if not match:
            continue
        cumulative, level, name = int(match[2]), len(match[3]) // 2, match[4]
        children = pending.pop(level + 1, [])
        pending.setdefault(level, []).append((name, cumulative))
        if level == 0:
            top.append((name, cumulative, sorted(children, key=lambda c: -c[1])))
    return sorted(top, key=lambda t: -t[1])


def print_imports(label: str, command: list[str], limit: int = 5) -> None:
    top = import_tree(command)
    total = sum(t[1] for t in top) / 1000
    print(f"  {label}: {total:.0f} ms of imports; the biggest:")
    for name, cumulative, children in top[:limit]:
        inner = ", ".join(f"{c} {us / 1000:.0f}" for c, us in children[:3])
        print(f"    {cumulative / 1000:6.1f} ms  {name}" + (f"  ({inner})" if inner else ""))


def measure(name: str, bin_dir: Path, args: argparse.Namespace) -> None:
    """Time every command of one install and show its import trees."""
    commands = [argv(bin_dir, a) for _, a in COMMANDS]
    wait_for_quiet(args.max_load, args.wait)
    print(f"\n== {name}: {bin_dir / 'dpctl'}\n{load_text()} before")
    timer = time_hyperfine if shutil.which("hyperfine") and not args.no_hyperfine else None
    times = (timer or time_subprocess)(commands, args.runs)
    print(f"{load_text()} after ({'hyperfine' if timer else 'subprocess'}, {args.runs} runs)")
    floor = statistics.median(times[0])
    print(f"  {'command':42s} {'median':>8s} {'min':>8s} {'-floor':>8s}  target")
    for (label, _), samples in zip(COMMANDS, times, strict=True):
        median, low = statistics.median(samples), min(samples)
        goal = target(label)
        verdict = "" if goal is None else f"< {goal} s {'met' if median < goal else 'MISSED'}"
        print(f"  {label:42s} {median:8.3f} {low:8.3f} {median - floor:8.3f}  {verdict}")
    for (label, _), command in zip(COMMANDS, commands, strict=True):
        print_imports(label, command)


def make_venv(mode: str, deps: list[str]) -> Path:
    """A fresh venv holding dpctl installed as ``mode``; returns its bin folder."""
    base = Path(tempfile.gettempdir()) / f"{PREFIX}-{mode}"
    shutil.rmtree(base, ignore_errors=True)
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(base)
    pip = [str(base / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps"]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if mode == "wheel":
        src = base / "src"
        shutil.copytree(ROOT, src, ignore=SKIP_COPY)  # setuptools reuses a stale build/
        subprocess.run([*pip, str(src)], check=True, env=env, cwd=base)
    else:
        extra = ["--config-settings", "editable_mode=compat"] if mode == "compat" else []
        subprocess.run([*pip, *extra, "-e", str(ROOT)], check=True, env=env, cwd=base)
    # from here on like a clean machine: no system .pth file runs, the deps are one path away
    cfg = base / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("site-packages = true", "site-packages = false"))
    (purelib,) = (base / "lib").glob("python3*/site-packages")
    (purelib / f"{PREFIX}-deps.pth").write_text("".join(f"{d}\n" for d in deps))
    return base / "bin"


def dependency_dirs() -> list[str]:
    """The site-packages folders this interpreter gets its (and dpctl's) dependencies from."""
    return [d for d in site.getsitepackages() if Path(d, "typer").is_dir()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--installs", action="store_true", help="also editable/compat/wheel")
    parser.add_argument("--max-load", type=float, default=1.0)
    parser.add_argument("--wait", type=float, default=300, help="longest wait for --max-load")
    parser.add_argument("--no-hyperfine", action="store_true")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%F %T')}")
    measure("this interpreter's dpctl", Path(sys.executable).parent, args)
    if args.installs:
        deps = dependency_dirs()
        for mode in ("editable", "compat", "wheel"):
            bin_dir = make_venv(mode, deps)
            try:
                measure(f"{mode} install", bin_dir, args)
            finally:
                shutil.rmtree(bin_dir.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
