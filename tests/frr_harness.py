"""Real FRR instances in network namespaces, for loading rendered configs (tests only).

FRR's pathspace gives one independent instance per namespace (lab-facts.md). A config is
loaded into the running daemons with `vtysh -N NS -f FILE`: unlike `vtysh -C`, the daemons
answer every rejected line ("line N: % Unknown command") and vtysh exits non-zero.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FRR_INIT = Path("/usr/lib/frr/frrinit.sh")
# Unique per test process, so concurrent runs never share a namespace.
PREFIX = os.environ.get("DPCTL_TEST_PREFIX", "dpt-") + f"{os.getpid()}-"


def daemons_file(zebra_options: str = "") -> str:
    """FRR's daemons file for a test instance; ``zebra_options`` are added to zebra's."""
    return (
        "zebra=yes\nbgpd=yes\nbfdd=yes\nstaticd=yes\nvtysh_enable=yes\n"
        'watchfrr_options="--netns"\n'
        f'zebra_options="{" ".join(["-s 90000000", zebra_options]).strip()}"\n'
    )


def frr_available() -> bool:
    return FRR_INIT.exists() and shutil.which("vtysh") is not None and os.geteuid() == 0


def sh(command: str, check: bool = True) -> str:
    """A shell command's stdout (the benches' namespace and route plumbing)."""
    return subprocess.run(
        command, shell=True, capture_output=True, text=True, check=check, timeout=120
    ).stdout


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=60)


@dataclass
class FrrInstance:
    namespace: str

    def load(self, config: str) -> tuple[int, str]:
        """Apply config text to the running daemons; (exit code, vtysh's answers)."""
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
            handle.write(config)
        try:
            result = _run("vtysh", "-N", self.namespace, "-f", handle.name, check=False)
        finally:
            os.unlink(handle.name)
        return result.returncode, (result.stdout + result.stderr).strip()

    def show(self, command: str) -> str:
        return _run("vtysh", "-N", self.namespace, "-c", command).stdout


def _start(namespace: str, interfaces: list[str]) -> FrrInstance:
    _run("ip", "netns", "add", namespace)
    batch = "link set lo up\n" + "".join(
        f"link add {name} type veth peer name p{index}\n" for index, name in enumerate(interfaces)
    )
    subprocess.run(["ip", "-n", namespace, "-batch", "-"], input=batch, text=True, check=True)
    return start_frr(namespace)


def start_frr(namespace: str, config: str = "", zebra_options: str = "") -> FrrInstance:
    """FRR's pathspace instance for an existing namespace: its files, then frrinit start."""
    conf = Path("/etc/frr") / namespace
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "daemons").write_text(daemons_file(zebra_options))
    (conf / "vtysh.conf").write_text("service integrated-vtysh-config\n")
    (conf / "frr.conf").write_text(config)
    shutil.chown(conf, "frr", "frr")
    for item in conf.iterdir():
        shutil.chown(item, "frr", "frr")
    _run(str(FRR_INIT), "start", namespace)
    return FrrInstance(namespace)


def stop_frr(namespace: str) -> None:
    """Stop the namespace's FRR and remove the namespace and its FRR files."""
    _run(str(FRR_INIT), "stop", namespace, check=False)
    _run("ip", "netns", "del", namespace, check=False)
    shutil.rmtree(Path("/etc/frr") / namespace, ignore_errors=True)
    shutil.rmtree(Path("/var/run/frr") / namespace, ignore_errors=True)


@contextmanager
def frr_instances(nodes: dict[str, list[str]]) -> Iterator[dict[str, FrrInstance]]:
    """One running FRR per node (node -> interface names); always torn down, in parallel."""
    names = {node: f"{PREFIX}{index}" for index, node in enumerate(sorted(nodes))}
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            order = list(names)
            started = dict(
                zip(order, pool.map(lambda n: _start(names[n], nodes[n]), order), strict=True)
            )
        yield started
    finally:
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(stop_frr, names.values()))
