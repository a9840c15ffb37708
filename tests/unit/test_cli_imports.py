"""What a command imports before it answers: the start-up targets of issue 40 (`--version`
and `--help` under 0.3 s, `plan` under 0.5 s; docs/benchmarks.md "CLI start-up") rest on
these, and a timing test would only be flaky on a shared machine. Each command runs in a
fresh interpreter; the test names the libraries it must not have loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = {
    "napalm", "nornir", "netmiko", "paramiko", "ansible_runner", "jinja2", "numpy",
    "matplotlib", "oopt_gnpy_libyang",
}  # fmt: skip
"""Libraries only device, render, simulate or report commands need."""

PROBE = """
import contextlib, io, json, sys
sys.argv = ["dpctl", *json.loads(sys.argv[1])]
from controller.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def loaded(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return set(json.loads(proc.stdout))


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_version_loads_typer_and_nothing_of_dpctl() -> None:
    modules = loaded("--version")
    assert {m for m in modules if m.startswith("controller")} == {"controller", "controller.cli"}
    assert tops(modules) & (HEAVY | {"rich", "pydantic", "yaml"}) == set()


def test_help_lists_commands_without_importing_them() -> None:
    modules = loaded("--help")
    assert {m for m in modules if m.startswith("controller")} == {"controller", "controller.cli"}
    assert tops(modules) & (HEAVY | {"pydantic", "yaml"}) == set()


@pytest.mark.parametrize(
    "args",
    [("plan", "--model", "CX864E-N", "--gpus", "2048"), ("plan", "-f", "inventory/fabric.yaml")],
)
def test_plan_loads_no_driver_lab_or_renderer(args: tuple[str, ...]) -> None:
    modules = loaded(*args)
    assert tops(modules) & HEAVY == set()
    assert not {m for m in modules if m.startswith(("controller.lab", "controller.drivers"))}
    assert not {m for m in modules if m.startswith("controller.render")}
