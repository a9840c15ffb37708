"""GPU servers configured by Ansible in the embedded lab, per dual-leaf mode, on the lab the
fabric module (`test_fabric_lab.py`) deployed (`tests/lab/conftest.py`): servers wiped bare
-> deploy the switches -> hosts configure -> hosts verify -> fabric verify -> traffic on every
rail -> idempotence, check mode, an unreachable server, a reboot -> lab down.

Tests run in file order; the last one takes the lab down (it comes down even after a failure).
Check mode and an unreachable server exercise the playbook's logic and Ansible's, the same in
either mode, and run on the dual-ARP lab only (about 3 minutes less per suite run); every
mode-dependent step (bonds, LACP, verify, idempotence, a reboot) runs in both.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from controller.deploy import deploy
from controller.hosts import HostsResult, run_hosts
from controller.lab import down, run_probe
from controller.verify import verify
from tests.conftest import run_cli
from tests.lab.conftest import Lab, leftovers

pytestmark = pytest.mark.lab
TIMES: dict[str, float] = {}


requires_ansible = pytest.mark.skipif(
    importlib.util.find_spec("ansible") is None, reason="ansible-core is not installed"
)


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


@requires_ansible
def test_bare_servers_configured_and_fabric_verifies(lab: Lab) -> None:
    for server in lab.fabric.servers:  # as a freshly imaged server: nothing of ours on it
        _wipe_runtime(lab, server.name)
        with lab.session() as s:
            assert s.root_run(f"test -e {_config_root(lab, server.name)}")[0] != 0
    before = server_state(lab)
    assert all("gpu1" not in state for state in before.values())  # truly bare
    start = time.monotonic()
    outcomes = deploy(lab.fabric, lab.access, lab.state)
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
        hv = run_hosts(lab.fabric, "verify", lab.access.servers, lab.state)
        failed = [c.to_dict() for c in verify(lab.fabric, lab.access, lab.state) if not c.ok]
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
        # bonds the module created got independent control while down (the lab's guest
        # kernels have the option: test_fabric_lab checks that against their bonding module)
        bonds = {f"gpu{nic.rail}" for nic in lab.fabric.servers[0].nics}
        for host in body["hosts"].values():
            assert host["lacp_control"] == dict.fromkeys(bonds, "independent"), host
        assert _coupled_control(lab) == {s.name: {b: 0 for b in bonds} for s in lab.fabric.servers}
    cli = run_cli("hosts", "verify", "-f", str(lab.intent), "--json")
    assert cli.exit_code == 0 and json.loads(cli.stdout)["ok"], cli.stdout


@requires_ansible
def test_traffic_between_servers_on_every_rail(lab: Lab) -> None:
    a, b = lab.fabric.servers[0], lab.fabric.servers[1]
    with lab.session() as s:
        for nic_a, nic_b in zip(a.nics, b.nics, strict=True):
            probe = run_probe(s, a.name, b.name, nic_b.ip, count=100, rate_pps=50.0)
            assert probe["received"] >= 98, (nic_a.rail, probe)
            back = run_probe(s, b.name, a.name, nic_a.ip, count=100, rate_pps=50.0)
            assert back["received"] >= 98, (nic_a.rail, back)


@requires_ansible
def test_second_configure_changes_nothing(lab: Lab) -> None:
    before = server_state(lab)
    result = _timed(
        f"{lab.mode} hosts configure (converged)",
        run_hosts(lab.fabric, "configure", lab.access.servers, lab.state),
    )
    assert result.ok and result.changed == 0, result.to_dict()
    assert server_state(lab) == before


def dual_arp_only(lab: Lab) -> None:
    if lab.mode != "dual-arp":
        pytest.skip("mode-independent playbook/Ansible behaviour: run on the dual-ARP lab")


@requires_ansible
def test_check_mode_changes_nothing(lab: Lab) -> None:
    dual_arp_only(lab)
    victim = lab.fabric.servers[0]
    nic = victim.nics[0]
    table = 100 + nic.rail
    with lab.session() as s:
        s.check(victim.name, f"ip route flush table {table}")
    drifted = server_state(lab)
    result = _timed(
        f"{lab.mode} hosts configure --check",
        run_hosts(lab.fabric, "configure", lab.access.servers, lab.state, check=True),
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
    assert (
        run_hosts(lab.fabric, "configure", lab.access.servers, lab.state, check=True).changed == 0
    )


@requires_ansible
def test_unreachable_server_reported_others_configured(lab: Lab) -> None:
    dual_arp_only(lab)
    victim, other = lab.fabric.servers[1], lab.fabric.servers[0]
    namespace = f"{lab.prefix}{victim.name}"
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
    assert run_hosts(lab.fabric, "configure", lab.access.servers, lab.state).changed == 0


def _config_root(lab: Lab, server: str) -> str:
    """Where configure puts a lab server's persistent configuration (its own '/')."""
    return lab.access.servers.config_root.replace("{{ inventory_hostname }}", server)


def _coupled_control(lab: Lab, value: int | None = None, server: str = "") -> dict[str, Any]:
    """Each server's LACP bonds' coupled_control, read back over netlink by the module the
    server runs (its applier copy); with ``value``, first set to it on ``server`` (bond down,
    set, up: as networkd leaves a bond at boot, when ``value`` is 1)."""
    out: dict[str, Any] = {}
    with lab.session() as s:
        for srv in lab.fabric.servers:
            module = f"{_config_root(lab, srv.name)}/usr/local/lib/dpctl"
            bonds = [f"gpu{nic.rail}" for nic in srv.nics]
            code = f"import sys; sys.path.insert(0, {module!r}); import dpctl_gpu_nic as m; "
            if value is not None and srv.name == server:
                code += "".join(
                    f"import subprocess as sp; sp.run(['ip','link','set',{b!r},'down'],check=True)"
                    f"; m.set_coupled_control({b!r}, {value})"
                    f"; sp.run(['ip','link','set',{b!r},'up'],check=True); "
                    for b in bonds
                )
            code += "import json; "
            code += f"print(json.dumps({{b: m.read_coupled_control(b) for b in {bonds!r}}}))"
            out[srv.name] = json.loads(s.check(srv.name, f"python3 -c {shlex.quote(code)}"))
    return out


def _wipe_runtime(lab: Lab, server: str) -> tuple[str, str]:
    """What a reboot loses: bonds deleted, ports' addresses and MTU reset and down, the NICs'
    rules and tables flushed, the keep-alives (processes of this namespace) gone."""
    srv = lab.fabric.server_by_name[server]
    pings = (
        f"for p in $(ip netns pids {lab.prefix}{server}); do "
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
        assert rc == 0 and pids.split(), (pids, err)  # the keep-alives it was started with
        s.root_run(f"kill {' '.join(pids.split())}")
        s.check(server, "; ".join(cmds))
        left = s.root_run(pings)[1]
        return s.check(server, "ip -o link show; ip -4 -o addr show; ip rule show"), left


@requires_ansible
def test_server_comes_back_from_persistent_configuration_alone(lab: Lab) -> None:
    """Reboot-equivalent: runtime network state wiped, the boot-time applier alone (reading
    the systemd-networkd files and extras that configure wrote) brings it back; `dpctl hosts
    verify` passes and a configure would change nothing."""
    victim = lab.fabric.servers[0].name
    root = _config_root(lab, victim)
    applier = f"python3 {root}/usr/local/lib/dpctl/dpctl_gpu_nic.py --apply-persistent {root}"
    with lab.session() as s:
        files = s.check(victim, f"ls {root}/etc/systemd/network {root}/etc/dpctl")
    assert "60-dpctl-gpu1.netdev" in files and "gpu-nic.json" in files
    if lab.mode == "evpn-mh":
        # as networkd leaves them at boot: the bonds up, configured, with coupled control
        # (networkd has no setting for it); the applier takes each down, sets it, and
        # restores what going down removed
        flipped = _coupled_control(lab, 1, victim)[victim]
        assert set(flipped.values()) == {1}, flipped
        with lab.session() as s:
            body = json.loads(s.check(victim, applier))
        assert body["changed"] is True  # the routes through the bonds came back
        assert set(body["lacp_control"].values()) == {"independent"}, body
        assert set(_coupled_control(lab)[victim].values()) == {0}
        _wait_verified(lab, victim)
    wiped, pings_left = _wipe_runtime(lab, victim)
    assert "gpu1" not in wiped and "lookup 101" not in wiped, wiped
    assert pings_left.split() == [], pings_left  # no keep-alive left
    start = time.monotonic()
    with lab.session() as s:
        out = s.check(victim, applier)
    TIMES[f"{lab.mode} boot applier"] = time.monotonic() - start
    assert json.loads(out)["changed"] is True
    _wait_verified(lab, victim)
    TIMES[f"{lab.mode} back in service after boot applier"] = time.monotonic() - start
    cli = run_cli("hosts", "verify", "-f", str(lab.intent), "--json")
    assert cli.exit_code == 0 and json.loads(cli.stdout)["ok"], cli.stdout
    assert (
        run_hosts(lab.fabric, "configure", lab.access.servers, lab.state, check=True).changed == 0
    )


def _wait_verified(lab: Lab, server: str) -> None:
    deadline = time.monotonic() + 90  # the leaves relearn the NICs (keep-alive, LACP)
    while True:
        hv = run_hosts(lab.fabric, "verify", lab.access.servers, lab.state, server=server)
        if hv.ok or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert hv.ok, {n: h.message for n, h in hv.hosts.items()}


def test_lab_down_leaves_nothing(lab: Lab) -> None:
    """The last test of a mode: the lab goes, before any other lab test builds its own."""
    result = run_cli("lab", "down", "-f", str(lab.intent), "--json")
    print(f"\nhosts lab timings: {json.dumps({k: round(v, 1) for k, v in TIMES.items()})}")
    assert result.exit_code == 0
    assert leftovers(lab.prefix) == {
        "namespaces": [],
        "qemu": [],
        "uml": [],
        "taps": [],
        "mounts": [],
    }
    down(lab.state_dir, prefix=lab.prefix)  # and again: nothing to do, no error
