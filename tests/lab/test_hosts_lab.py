"""GPU servers configured by Ansible in the embedded lab, per dual-leaf mode, one lab each:
lab up with bare servers -> deploy the switches -> hosts configure -> hosts verify -> fabric
verify -> traffic on every rail -> idempotence, check mode, an unreachable server -> down.

Tests run in file order and share the module's lab; the lab comes down even after a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.connection import Access, lab_access
from controller.deploy import deploy
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.hosts import HostsResult, run_hosts
from controller.intent import load_intent
from controller.lab import LabSession, down, kernel, run_probe
from controller.labfabric import bring_up, lab_dir
from controller.verify import verify
from tests.conftest import INVENTORY, run_cli

PREFIX = "dph-"
pytestmark = pytest.mark.lab
TIMES: dict[str, float] = {}


@dataclass
class Lab:
    mode: str
    intent: Path
    fabric: Fabric
    state_dir: Path
    access: Access

    def session(self) -> LabSession:
        return LabSession.open(self.state_dir)


def _require() -> None:
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    if not kernel.host_is_capable(PREFIX) and kernel.guest_kernel() is None:
        pytest.skip("no kernel with bonding/VLAN/VRF: run .ci/setup (controller/lab/setup.sh)")
    if importlib.util.find_spec("ansible") is None:
        pytest.skip("ansible-core is not installed")


@pytest.fixture(scope="module", params=["dual-arp", "evpn-mh"])
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    _require()
    mode = request.param
    root = tmp_path_factory.mktemp(f"hosts-{mode}")
    os.environ["DPCTL_LAB_DIR"] = str(root / "labs")
    os.environ["DPCTL_STATE_DIR"] = str(root / "state")
    os.environ["DPCTL_LAB_PREFIX"] = PREFIX
    intent = INVENTORY / f"lab-{mode}.yaml"
    fabric = build_fabric(load_intent(intent))
    state_dir = lab_dir(fabric.intent.name)
    try:
        start = time.monotonic()
        bring_up(fabric, state_dir, prefix=PREFIX, bare_servers=True)
        TIMES[f"{mode} lab up"] = time.monotonic() - start
        access = lab_access(state_dir)
        assert access is not None
        yield Lab(mode, intent, fabric, state_dir, access)
    finally:
        down(state_dir, prefix=PREFIX)
        for key in ("DPCTL_LAB_DIR", "DPCTL_STATE_DIR", "DPCTL_LAB_PREFIX"):
            os.environ.pop(key, None)
        print(f"\nhosts lab timings: {json.dumps({k: round(v, 1) for k, v in TIMES.items()})}")


def _timed(key: str, result: HostsResult) -> HostsResult:
    TIMES[key] = result.seconds
    return result


def server_state(lab: Lab) -> dict[str, str]:
    """What configure touches on each server, read back (counters and timers left out)."""
    cmd = (
        "ip -o link show; ip -o -d link show type bond | grep -o 'bond mode [^ ]*'; "
        "ip -4 -o addr show; ip rule show; ip route show table all; "
        "for d in $(ls /sys/class/net); do tc filter show dev $d egress; done; "
        "pgrep -a -x ping | cut -d' ' -f2- | sort"
    )
    with lab.session() as s:
        return {srv.name: s.check(srv.name, cmd) for srv in lab.fabric.servers}


def test_bare_servers_configured_and_fabric_verifies(lab: Lab) -> None:
    before = server_state(lab)
    assert all("gpu1" not in state for state in before.values())  # truly bare
    start = time.monotonic()
    outcomes = deploy(lab.fabric, access=lab.access)
    TIMES[f"{lab.mode} deploy"] = time.monotonic() - start
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}

    result = run_cli("hosts", "configure", "-f", str(lab.intent), "--json")
    body = json.loads(result.stdout)
    assert result.exit_code == 0, result.stdout
    TIMES[f"{lab.mode} hosts configure (bare)"] = body["seconds"]
    assert body["ok"] and body["changed"] == len(lab.fabric.servers)
    assert body["unreachable"] == [] and body["failed"] == []
    for host in body["hosts"].values():
        assert all("RoCE host settings skipped" in m for m in host["roce_skipped"])
        assert len(host["roce_skipped"]) == 2 * len(lab.fabric.servers[0].nics)
    artifacts = Path(body["artifacts"])
    assert (artifacts / "artifacts" / "run" / "stdout").is_file()
    assert list((artifacts / "artifacts" / "run" / "job_events").glob("*.json"))

    # the leaves learn every NIC by its ARP keep-alive and advertise its /32: poll both verifies
    deadline = time.monotonic() + 90
    while True:
        hv = run_hosts(lab.fabric, "verify")
        failed = [c.to_dict() for c in verify(lab.fabric, access=lab.access) if not c.ok]
        if (hv.ok and not failed) or time.monotonic() > deadline:
            break
        time.sleep(5)
    TIMES[f"{lab.mode} hosts verify"] = hv.seconds
    assert hv.ok, {n: h.message for n, h in hv.hosts.items()}
    assert failed == []
    names = {c["check"] for h in hv.hosts.values() for c in h.checks}
    assert any("REACHABLE" in n for n in names) and any("peer" in n for n in names)
    if lab.mode == "evpn-mh":
        assert any("LACP aggregated" in n for n in names)
    cli = run_cli("hosts", "verify", "-f", str(lab.intent), "--json")
    assert cli.exit_code == 0 and json.loads(cli.stdout)["ok"], cli.stdout


def test_traffic_between_servers_on_every_rail(lab: Lab) -> None:
    a, b = lab.fabric.servers[0], lab.fabric.servers[1]
    with lab.session() as s:
        for nic_a, nic_b in zip(a.nics, b.nics, strict=True):
            probe = run_probe(s, a.name, b.name, nic_b.ip, count=100, rate_pps=50.0)
            assert probe["received"] >= 98, (nic_a.rail, probe)
            back = run_probe(s, b.name, a.name, nic_a.ip, count=100, rate_pps=50.0)
            assert back["received"] >= 98, (nic_a.rail, back)


def test_second_configure_changes_nothing(lab: Lab) -> None:
    before = server_state(lab)
    result = _timed(f"{lab.mode} hosts configure (converged)", run_hosts(lab.fabric, "configure"))
    assert result.ok and result.changed == 0, result.to_dict()
    assert server_state(lab) == before


def test_check_mode_changes_nothing(lab: Lab) -> None:
    victim = lab.fabric.servers[0]
    nic = victim.nics[0]
    table = 100 + nic.rail
    with lab.session() as s:
        s.check(victim.name, f"ip route flush table {table}")
    drifted = server_state(lab)
    result = _timed(
        f"{lab.mode} hosts configure --check", run_hosts(lab.fabric, "configure", check=True)
    )
    assert result.ok and result.changed == 1, result.to_dict()
    commands: dict[str, Any] = result.hosts[victim.name].commands
    assert commands == {
        f"gpu{nic.rail}": [
            f"route replace {lab.fabric.intent.addressing.rail_subnets} via {nic.gateway} "
            f"dev gpu{nic.rail} table {table}"
        ]
    }
    assert server_state(lab) == drifted  # proven by reading it back
    cli = run_cli("hosts", "configure", "-f", str(lab.intent), "--server", victim.name, "--json")
    body = json.loads(cli.stdout)
    assert cli.exit_code == 0 and body["changed"] == 1 and list(body["hosts"]) == [victim.name]
    assert run_hosts(lab.fabric, "configure", check=True).changed == 0


def test_unreachable_server_reported_others_configured(lab: Lab) -> None:
    victim, other = lab.fabric.servers[1], lab.fabric.servers[0]
    namespace = f"{PREFIX}{victim.name}"
    with lab.session() as s:
        s.check(other.name, f"ip route flush table {100 + other.nics[0].rail}")  # work to do
        s.root_run(f"ip -n {namespace} link set mgmt0 down")
        try:
            result = run_cli("hosts", "configure", "-f", str(lab.intent), "--json")
        finally:
            s.root_run(f"ip -n {namespace} link set mgmt0 up")
    body = json.loads(result.stdout)
    assert result.exit_code == 1, result.stdout
    assert body["ok"] is False and body["unreachable"] == [victim.name]
    assert body["failed"] == []
    assert body["hosts"][other.name]["ok"] and body["hosts"][other.name]["changed"] == 1
    assert run_hosts(lab.fabric, "configure").changed == 0


def _wipe_runtime(lab: Lab, server: str) -> tuple[str, str]:
    """What a reboot loses: bonds deleted, ports' addresses and MTU reset and down, the NICs'
    rules and tables flushed, the keep-alives (processes of this namespace) gone."""
    srv = lab.fabric.server_by_name[server]
    pings = (
        f"for p in $(ip netns pids {PREFIX}{server}); do "
        '[ "$(cat /proc/$p/comm 2>/dev/null)" = ping ] && echo $p; done; true'
    )
    cmds = []
    for nic in srv.nics:
        table = 100 + nic.rail
        cmds += [f"ip link del gpu{nic.rail}", f"ip route flush table {table}"]
        cmds += [f"ip rule del priority {table}"]
        for port in nic.ports:
            cmds += [f"ip addr flush dev {port}", f"ip link set {port} down mtu 1500"]
    with lab.session() as s:
        rc, pids, err = s.root_run(pings)
        assert rc == 0 and pids.split(), (pids, err)  # the keep-alives configure started
        s.root_run(f"kill {' '.join(pids.split())}")
        s.check(server, "; ".join(cmds))
        left = s.root_run(pings)[1]
        return s.check(server, "ip -o link show; ip -4 -o addr show; ip rule show"), left


def test_server_comes_back_from_persistent_configuration_alone(lab: Lab) -> None:
    """Reboot-equivalent: runtime network state wiped, the boot-time applier alone (reading
    the systemd-networkd files and extras that configure wrote) brings it back; `dpctl hosts
    verify` passes and a configure would change nothing."""
    victim = lab.fabric.servers[0].name
    root = f"/run/{PREFIX}lab/servers/{victim}"
    with lab.session() as s:
        files = s.check(victim, f"ls {root}/etc/systemd/network {root}/etc/dpctl")
    assert "60-dpctl-gpu1.netdev" in files and "gpu-nic.json" in files
    wiped, pings_left = _wipe_runtime(lab, victim)
    assert "gpu1" not in wiped and "lookup 101" not in wiped, wiped
    assert pings_left.split() == [], pings_left  # no keep-alive left
    start = time.monotonic()
    with lab.session() as s:
        out = s.check(
            victim, f"python3 {root}/usr/local/lib/dpctl/dpctl_gpu_nic.py --apply-persistent {root}"
        )
    TIMES[f"{lab.mode} boot applier"] = time.monotonic() - start
    assert json.loads(out)["changed"] is True
    deadline = time.monotonic() + 90  # the leaves relearn the NICs (keep-alive, LACP)
    while True:
        hv = run_hosts(lab.fabric, "verify", server=victim)
        if hv.ok or time.monotonic() > deadline:
            break
        time.sleep(5)
    TIMES[f"{lab.mode} back in service after boot applier"] = time.monotonic() - start
    assert hv.ok, {n: h.message for n, h in hv.hosts.items()}
    cli = run_cli("hosts", "verify", "-f", str(lab.intent), "--json")
    assert cli.exit_code == 0 and json.loads(cli.stdout)["ok"], cli.stdout
    assert run_hosts(lab.fabric, "configure", check=True).changed == 0


def test_lab_down_leaves_nothing(lab: Lab) -> None:
    down(lab.state_dir, prefix=PREFIX)
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [line for line in netns.splitlines() if line.startswith(PREFIX)]
    qemu = subprocess.run(["pgrep", "-af", "qemu-system"], capture_output=True, text=True).stdout
    assert str(lab.state_dir) not in qemu
