"""Commands that neither drive switches nor draw figures import none of the heavy libraries.

A driver module is loaded through the platform registry when its platform's driver is used,
matplotlib where figures are drawn (``controller.simulate.plots``), ansible_runner where
Ansible runs, libyang where the SONiC render check runs: everything else (``dpctl plan``,
``generate``, ``render``, ``report``, ``draw``, ``simulate`` without figures) starts without
them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "netmiko", "paramiko", "ansible_runner", "oopt_gnpy_libyang", "napalm")
LIGHT_COMMANDS = ("plan", "generate", "render", "report", "draw", "simulate")


def loaded_after(module: str) -> set[str]:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("command", LIGHT_COMMANDS)
def test_the_command_module_imports_no_heavy_library(command: str) -> None:
    loaded = loaded_after(f"controller.cli.{command}")
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    drivers = sorted(m for m in loaded if m.startswith("controller.platforms.") and ".driver" in m)
    assert not heavy and not drivers, f"dpctl {command} imports {heavy + drivers}"


def test_the_check_sees_a_heavy_import() -> None:
    assert "matplotlib" in loaded_after("controller.simulate.plots")
