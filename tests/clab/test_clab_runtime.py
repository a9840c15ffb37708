"""The real thing: build the node images, `containerlab deploy` the export of lab-dual-arp,
then dpctl deploy (a real commit), verify and hosts configure against it, and destroy it.

It needs a Docker daemon and containerlab, neither of which runs on this project's machines
(`docker info` fails: no daemon), so it is skipped here with the reason `docker info` gives;
it runs as is where both exist (as root, or a user in the docker group with sudo-less
containerlab). It is slow (image builds, then about a minute for the nodes).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import INVENTORY, ROOT, run_cli

INTENT = INVENTORY / "lab-dual-arp.yaml"
IMAGES = {
    "dpctl/frr-switch:bookworm": ROOT / "labs" / "images" / "frr-switch",
    "dpctl/gpu-server:bookworm": ROOT / "labs" / "images" / "gpu-server",
}


def why_not() -> str | None:
    """Why containerlab cannot run here (None when it can)."""
    docker = shutil.which("docker")
    if docker is None:
        return "no Docker client (containerlab needs a Docker engine)"
    try:
        info = subprocess.run(
            [docker, "info"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker info` did not answer: {exc}"
    if info.returncode != 0:
        lines = [line for line in info.stderr.splitlines() if line.strip()]
        return f"`docker info` fails, no Docker daemon: {lines[-1] if lines else info.returncode}"
    if shutil.which("containerlab") is None:
        return "containerlab is not installed (Docker runs)"
    return None


REASON = why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def dpctl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from controller.cli import main; main()", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)


def wait_ssh(addresses: list[str], deadline_s: float = 180) -> None:
    end = time.monotonic() + deadline_s
    pending = list(addresses)
    while pending and time.monotonic() < end:
        for address in list(pending):
            try:
                socket.create_connection((address, 22), 1).close()
                pending.remove(address)
            except OSError:
                pass
        time.sleep(1)
    assert not pending, f"no sshd on {pending}"


def test_containerlab_deployment_end_to_end(tmp_path: Path) -> None:  # pragma: no cover
    for tag, context in IMAGES.items():
        subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], check=True)
    topology = tmp_path / "lab-dual-arp.clab.yml"
    assert run_cli("lab", "export", "-f", str(INTENT), "-o", str(topology)).exit_code == 0
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DPCTL_CLAB_TOPOLOGY": str(topology),
        "DPCTL_LAB_DIR": str(tmp_path / "no-embedded-lab"),
        "DPCTL_STATE_DIR": str(tmp_path / "state"),
    }
    subprocess.run(["containerlab", "deploy", "-t", str(topology)], check=True, timeout=900)
    try:
        data = json.loads((tmp_path / "clab-lab-dual-arp" / "topology-data.json").read_text())
        wait_ssh([node["mgmt-ipv4-address"] for node in data["nodes"].values()])
        for args in (
            ("deploy", "--plane", "1"),
            ("deploy", "--plane", "2"),
            ("hosts", "configure"),
            ("verify",),
        ):
            result = dpctl(*args, "-f", str(INTENT), "--target", "containerlab", "--json", env=env)
            body = json.loads(result.stdout)
            assert body["target"]["source"] == "containerlab"
            assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-2000:])
    finally:
        subprocess.run(
            ["containerlab", "destroy", "--cleanup", "-t", str(topology)], check=False, timeout=600
        )
