"""End to end: a lab up on its substrate, hand-pushed BGP unnumbered, bond, probe, down."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.lab import (
    LabCable,
    LabNode,
    LabSession,
    LabSetupError,
    LabState,
    LabTopology,
    down,
    kernel,
    run_probe,
    status,
    substrate,
    up,
)
from tests.lab.conftest import leftovers, require_lab

PREFIX = "dpa-"  # this suite's namespace/process prefix
pytestmark = pytest.mark.lab

TOPO = LabTopology(
    name="itest",
    mgmt_subnet="172.30.0.0/24",
    nodes=(
        LabNode("spine1", "switch", "spine", 1, ("swp1", "swp2")),
        LabNode("leaf1", "switch", "leaf", 1, ("swp1", "swp2")),
        LabNode("leaf2", "switch", "leaf", 1, ("swp1", "swp2")),
        LabNode("srv1", "server", "server", None, ("nic1p1",)),
        LabNode("srv2", "server", "server", None, ("nic1p1",)),
    ),
    cables=(
        LabCable("leaf1", "swp1", "spine1", "swp1"),
        LabCable("leaf2", "swp1", "spine1", "swp2"),
        LabCable("leaf1", "swp2", "srv1", "nic1p1"),
        LabCable("leaf2", "swp2", "srv2", "nic1p1"),
    ),
)
# node -> (ASN, router-id, fabric ports, server-facing port, server subnet gateway)
BGP = {
    "spine1": (65000, "10.0.0.1", ("swp1", "swp2"), None, None),
    "leaf1": (65101, "10.0.0.11", ("swp1",), "swp2", "10.11.0.1/24"),
    "leaf2": (65102, "10.0.0.12", ("swp1",), "swp2", "10.12.0.1/24"),
}
SERVERS = {"srv1": ("10.11.0.2/24", "10.11.0.1"), "srv2": ("10.12.0.2/24", "10.12.0.1")}


def _require_lab_prereqs() -> None:
    require_lab(PREFIX)
    try:
        kernel.require_tools("/usr/lib/frr/watchfrr", "/usr/sbin/sshd", "lldpd")
    except LabSetupError as exc:
        pytest.skip(f"lab prerequisites missing ({exc}); run controller/lab/setup.sh")


STARTED: dict[str, float] = {}
"""When the module's lab began to come up (what the host may not have seen change since)."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    _require_lab_prereqs()
    state_dir = tmp_path_factory.mktemp("lab") / "state"
    STARTED["time"] = time.time()
    try:
        yield up(TOPO, state_dir, prefix=PREFIX)
    finally:
        down(state_dir, prefix=PREFIX)


def bgp_config(node: str) -> list[str]:
    asn, router_id, fabric, host_port, gateway = BGP[node]
    cmds = ["configure terminal", "frr defaults datacenter"]
    if host_port and gateway:
        cmds += [f"interface {host_port}", f"ip address {gateway}", "exit"]
    cmds += [
        f"router bgp {asn}",
        f"bgp router-id {router_id}",
        "no bgp ebgp-requires-policy",
        "bgp bestpath as-path multipath-relax",
        "neighbor FABRIC peer-group",
        "neighbor FABRIC remote-as external",
    ]
    cmds += [f"neighbor {port} interface peer-group FABRIC" for port in fabric]
    if gateway:
        net = gateway.split("/")[0].rsplit(".", 1)[0] + ".0/24"
        cmds += ["address-family ipv4 unicast", f"network {net}", "exit-address-family"]
    return [*cmds, "end"]


def wait_route(session: LabSession, node: str, prefix: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rc, out, _ = session.run(node, f"ip route show {prefix}")
        if rc == 0 and out.strip():
            return
        time.sleep(0.5)
    pytest.fail(f"{node}: no route to {prefix} after {timeout}s")


def wait_lldp(session: LabSession, node: str, needle: str, timeout: float = 40.0) -> str:
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        out = session.check(node, "lldpcli -f keyvalue show neighbors")
        if needle in out:
            return out
        time.sleep(1.0)
    pytest.fail(f"{node}: no {needle} in LLDP after {timeout}s: {out}")


def test_the_uml_guest_writes_nothing_on_the_host(lab: LabState) -> None:
    """The UML guest runs on this machine's own root file system: everything the lab wrote
    while coming up (FRR's and sshd's files, the nodes' configs, a config FRR saved) is in
    the guest's overlay, and this machine has no file of it, new or changed, outside the
    state folder; every host file system the guest mounts is read-only."""
    if lab.substrate != "uml":
        pytest.skip(f"the {lab.substrate} lab does not share this machine's file system")
    with LabSession(lab) as s:
        s.vtysh("leaf1", "configure terminal", "hostname leaf1", "end", "write memory")
        mounts = s.root_run("cat /proc/mounts")[1].splitlines()
        rc, written, err = s.root_run("cd /run/dpl/writes && find . -mindepth 1 ! -type d")
    assert rc == 0, err
    roots = [m.split() for m in mounts if m.split()[1] == "/"]
    assert roots[-1][0] == roots[-1][2] == "overlay", roots  # the guest's / is the overlay
    hostfs = [m.split() for m in mounts if m.split()[2] == "hostfs"]
    assert hostfs and all("ro" in m[3].split(",") for m in hostfs), hostfs
    paths = [Path(line[1:]) for line in written.splitlines()]
    assert Path("/etc/frr/dpa-leaf1/frr.conf") in paths  # what `write memory` saved, in RAM
    assert Path(f"{lab.state_dir}/lab.json") not in paths
    since = STARTED["time"]
    changed = [
        str(p) for p in paths if p.exists() and max(p.stat().st_mtime, p.stat().st_ctime) > since
    ]
    assert not changed, f"the host's copy changed while the lab ran: {changed}"
    assert not _host_paths_named(PREFIX, since, Path(lab.state_dir))


def _host_paths_named(prefix: str, since: float, state_dir: Path) -> list[str]:
    """Paths of this machine's root file system with ``prefix`` in their name, new or
    changed since ``since``, outside ``state_dir``."""
    marker = state_dir.parent / "since"
    marker.touch()
    os.utime(marker, (since, since))
    skip = ["/proc", "/sys", "/dev", str(state_dir)]
    prune = [arg for path in skip for arg in ("-path", path, "-o")][:-1]
    pick = ["-newer", str(marker), "-name", f"*{prefix}*", "-print"]
    find = ["find", "/", "-xdev", "(", *prune, ")", "-prune", "-o", *pick]
    found = subprocess.run(find, capture_output=True, text=True).stdout
    return found.split()


def test_lab_end_to_end(lab: LabState) -> None:
    state_dir = Path(lab.state_dir)
    st = status(state_dir)
    assert all(n["running"] for n in st["nodes"].values()), st
    assert st["nodes"]["leaf1"]["role"] == "leaf" and st["nodes"]["leaf1"]["plane"] == 1

    with LabSession.open(state_dir) as s:
        # factory state: FRR runs, with no BGP configured yet; the hostname is the node's
        assert "router bgp" not in s.vtysh("leaf1", "show running-config")
        assert s.check("leaf1", "hostname").strip() == "leaf1"
        lldp = wait_lldp(s, "spine1", "lldp.swp1.chassis.name=leaf1")
        assert "lldp.swp1.port.ifname=swp1" in lldp, lldp

        for node in BGP:
            s.vtysh(node, *bgp_config(node))
        for name, (addr, gw) in SERVERS.items():
            s.check(name, f"ip addr add {addr} dev nic1p1 && ip route add 10.0.0.0/8 via {gw}")

        assert s.wait_bgp_established("spine1", 2, timeout=90) == {"swp1", "swp2"}
        s.wait_bgp_established("leaf1", 1, timeout=30)
        s.wait_bgp_established("leaf2", 1, timeout=30)
        wait_route(s, "leaf1", "10.12.0.0/24")
        wait_route(s, "leaf2", "10.11.0.0/24")

        # the lab kernel has bonding (802.3ad), 802.1Q and VRF
        s.check(
            "srv1",
            "ip link add bond0 type bond mode 802.3ad && ip link add link bond0 name bond0.10 "
            "type vlan id 10 && ip link add vrf1 type vrf table 10",
        )
        assert "802.3ad" in s.check("srv1", "cat /sys/class/net/bond0/bonding/mode")

        result = run_probe(s, "srv1", "srv2", "10.12.0.2", count=200, rate_pps=100.0)
        assert result["sent"] == 200
        assert result["received"] >= 198, result
        assert result["lost"] == result["sent"] - result["received"]

    down(state_dir)
    assert_nothing_left(lab)


def assert_nothing_left(lab: LabState) -> None:
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [line for line in netns.splitlines() if line.startswith(PREFIX)]
    if lab.guest_pid and Path(f"/proc/{lab.guest_pid}").exists():
        cmdline = Path(f"/proc/{lab.guest_pid}/cmdline").read_bytes()
        assert b"qemu" not in cmdline and b"linux.uml" not in cmdline
    for program in ("qemu-system", "linux.uml"):
        found = subprocess.run(["pgrep", "-af", program], capture_output=True, text=True).stdout
        assert lab.state_dir not in found, found
    left = leftovers(PREFIX)
    assert left["uml"] == [] and left["taps"] == [], left
    mounts = Path("/proc/mounts").read_text()
    assert lab.state_dir not in mounts and f"/{PREFIX}" not in mounts
    assert not Path(lab.state_dir, "lab.json").exists()


def test_down_after_killed_up(tmp_path: Path) -> None:
    """A run killed mid-``up`` leaves a detached guest (QEMU, or UML and its tap); ``down``
    finds and removes it, without a state file."""
    _require_lab_prereqs()
    chosen = substrate.choose(PREFIX)
    if chosen.name == "native":
        pytest.skip("guest substrates only: no guest on a capable host")
    state_dir = tmp_path / "state"
    code = (
        "import sys\n"
        "from controller.lab import up\n"
        "from tests.lab.test_lab_integration import TOPO\n"
        f"up(TOPO, {str(state_dir)!r}, prefix={PREFIX!r})\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        ["python3", "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)}
    )
    try:
        deadline = time.monotonic() + 60
        pid_file = state_dir / "guest" / ("uml.pid" if chosen.name == "uml" else "qemu.pid")
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # mid-boot
    finally:
        proc.kill()
        proc.wait()
    qemu_pid = int(pid_file.read_text()) if pid_file.exists() else None
    (state_dir / "lab.json").unlink(missing_ok=True)  # worst case: no state file either
    report = down(state_dir, prefix=PREFIX)
    if qemu_pid is not None:
        assert report["guest_stopped"] == [qemu_pid]
    assert down(state_dir, prefix=PREFIX) == {
        "guest_stopped": [],
        "namespaces_removed": [],
        "taps_removed": [],
    }
    for program in ("qemu-system", "linux.uml"):
        found = subprocess.run(["pgrep", "-af", program], capture_output=True, text=True).stdout
        assert str(state_dir) not in found
    assert leftovers(PREFIX)["taps"] == []
