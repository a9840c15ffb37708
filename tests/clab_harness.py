"""Stand-ins for a containerlab deployment's nodes on a machine without Docker (tests only).

Each node of an exported topology becomes what containerlab would make of it, as far as this
machine allows: a network namespace with ``eth0`` on a management bridge (the fabric's
management subnet, the bridge holding the gateway address, like containerlab's ``mgmt``
network), one veth per cable under the names the topology gives its endpoints, and the
node's image started by its own ``dpctl-start``: the Dockerfile's non-apt RUN steps and its
COPY steps are applied to overlays of /etc, /root and /usr/local in a private mount
namespace (Debian 12 here supplies the packages the image installs), the topology's bind of
the deployment's key folder is mounted read-only at the same place, /run is a fresh tmpfs.
So FRR, lldpd and sshd run with the image's files and the deployment's keys, and dpctl
reaches them by their management addresses, from a "host" namespace on that bridge.
Everything is named with ``PREFIX`` and removed on exit (processes by PID: the namespaces'
own, which this harness started).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PREFIX = os.environ.get("DPCTL_TEST_PREFIX", "dpt-") + f"c{os.getpid()}-"
IMAGES = Path(__file__).resolve().parents[1] / "labs" / "images"
OVERLAID = ("/etc", "/root", "/usr/local")


def ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def image_steps(image: str) -> list[str]:
    """The Dockerfile's build steps as shell lines, in order: its RUN commands but apt's (the
    packages are this machine's), its COPY as cp."""
    text = re.sub(r"\\\n", " ", (IMAGES / image / "Dockerfile").read_text())
    steps: list[str] = []
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "RUN":
            commands = (c.strip() for c in rest.split("&&"))
            steps += [c for c in commands if not c.startswith(("apt-get", "rm -rf /var/lib/apt"))]
        elif word == "COPY":
            source, target = rest.split()
            steps.append(f"mkdir -p {shlex.quote(os.path.dirname(target))}")
            steps.append(f"cp {shlex.quote(str(IMAGES / image / source))} {shlex.quote(target)}")
    return steps


def node_script(node: str, image: str, role: str, upper: Path, binds: list[str]) -> str:
    """The shell line run in the node's namespaces: lay the image over the host, then start."""
    lines = ["set -e", f"hostname {shlex.quote(node)}"]
    for index, path in enumerate(OVERLAID):
        up, work = upper / f"u{index}", upper / f"w{index}"
        lines.append(f"mkdir -p {up} {work}")
        lines.append(
            f"mount -t overlay overlay -o lowerdir={path},upperdir={up},workdir={work} {path}"
        )
    lines.append("mount -t tmpfs tmpfs /run")
    lines += image_steps(image)
    for bind in binds:
        host, inside, *_ = bind.split(":")
        lines += [f"mkdir -p {inside}", f"mount --bind {shlex.quote(host)} {inside}"]
        lines.append(f"mount -o remount,bind,ro {inside}")
    lines.append(f"exec /usr/local/sbin/dpctl-start {role}")
    return "\n".join(lines)


@dataclass
class Deployment:
    """The stand-in of one deployment: its namespaces and where dpctl runs."""

    host: str
    nodes: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: Path = Path()

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> Any:
        """A command in the host namespace (on the management bridge)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.host, *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )

    def log(self, node: str) -> str:
        path = self.logs / f"{node}.log"
        return path.read_text() if path.exists() else ""


def _cable(topology: dict[str, Any], nodes: dict[str, str]) -> None:
    for link in topology["topology"]["links"]:
        (a, a_if), (z, z_if) = (ep.split(":", 1) for ep in link["endpoints"])
        ip(
            "-n",
            nodes[a],
            "link",
            "add",
            a_if,
            "type",
            "veth",
            "peer",
            "name",
            z_if,
            "netns",
            nodes[z],
        )
        ip("-n", nodes[a], "link", "set", a_if, "up")
        ip("-n", nodes[z], "link", "set", z_if, "up")


def _mgmt(topology: dict[str, Any], host: str, nodes: dict[str, str]) -> None:
    prefix = topology["mgmt"]["ipv4-subnet"].split("/")[1]
    ip("netns", "add", host)
    ip("-n", host, "link", "set", "lo", "up")
    ip("-n", host, "link", "add", "br0", "type", "bridge")
    ip("-n", host, "addr", "add", f"{topology['mgmt']['ipv4-gw']}/{prefix}", "dev", "br0")
    ip("-n", host, "link", "set", "br0", "up")
    for index, (name, ns) in enumerate(nodes.items()):
        ip("netns", "add", ns)
        ip("-n", ns, "link", "set", "lo", "up")
        ip(
            "-n",
            host,
            "link",
            "add",
            f"m{index}",
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            ns,
        )
        ip("-n", host, "link", "set", f"m{index}", "master", "br0", "up")
        address = topology["topology"]["nodes"][name]["mgmt-ipv4"]
        ip("-n", ns, "addr", "add", f"{address}/{prefix}", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")


def _start(deployment: Deployment, topology: dict[str, Any], topo_dir: Path, work: Path) -> None:
    for name, ns in deployment.nodes.items():
        node = topology["topology"]["nodes"][name]
        image = "frr-switch" if node["image"].startswith("dpctl/frr-switch") else "gpu-server"
        role = "switch" if image == "frr-switch" else "server"
        binds = [str(topo_dir / b) if not b.startswith("/") else b for b in node.get("binds", [])]
        script = node_script(name, image, role, work / name, binds)
        with open(deployment.logs / f"{name}.log", "wb") as log:
            deployment.processes[name] = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "unshare",
                    "--mount",
                    "--uts",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    script,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )


def wait_ssh(deployment: Deployment, topology: dict[str, Any], deadline_s: float = 60) -> None:
    """Until every node's sshd answers on port 22 of its management address."""
    addresses = [n["mgmt-ipv4"] for n in topology["topology"]["nodes"].values()]
    probe = (
        "import socket,sys\n"
        "for a in sys.argv[1:]:\n"
        "    socket.create_connection((a, 22), 1).close()\n"
    )
    end = time.monotonic() + deadline_s
    while True:
        result = deployment.run(["python3", "-c", probe, *addresses], os.environ.copy(), Path("/"))
        if result.returncode == 0:
            return
        dead = [n for n, p in deployment.processes.items() if p.poll() is not None]
        if dead or time.monotonic() > end:
            logs = {n: deployment.log(n)[-600:] for n in dead or list(deployment.nodes)[:1]}
            raise RuntimeError(f"nodes did not come up (exited: {dead}): {logs}")
        time.sleep(0.5)


def _stop(deployment: Deployment) -> None:
    for ns in [*deployment.nodes.values(), deployment.host]:
        pids = subprocess.run(
            ["ip", "netns", "pids", ns], capture_output=True, text=True, check=False
        ).stdout.split()
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    for process in deployment.processes.values():
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    for ns in [*deployment.nodes.values(), deployment.host]:
        ip("netns", "del", ns, check=False)


@contextmanager
def standin(topology_file: Path) -> Iterator[Deployment]:
    """The nodes of ``topology_file`` running as described above; always torn down."""
    topology = yaml.safe_load(topology_file.read_text())
    names = list(topology["topology"]["nodes"])
    nodes = {name: f"{PREFIX}{index}" for index, name in enumerate(names)}
    work = Path(tempfile.mkdtemp(prefix=PREFIX))
    deployment = Deployment(host=f"{PREFIX}h", nodes=nodes, logs=work)
    try:
        _mgmt(topology, deployment.host, nodes)
        _cable(topology, nodes)
        _start(deployment, topology, topology_file.parent, work)
        wait_ssh(deployment, topology)
        yield deployment
    finally:
        _stop(deployment)
        subprocess.run(["rm", "-rf", str(work)], check=False)
