"""Deploy and verify logic that needs no switch: the lock, the FRR driver's parsers, the checks."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controller.access import SwitchAccess
from controller.connection import build_nornir
from controller.deploy import DeviceOutcome, deploy_task
from controller.drivers import bundle
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.opstate import StateFolder
from controller.platforms.connection_plugin import CONNECTION_NAME
from controller.platforms.frr.changes import created_links, parse_reload_test, tc_devices
from controller.render.device import build_device
from controller.render.engine import render_fabric
from controller.verify import check_bgp, check_host_ports, check_host_routes, check_lldp
from tests.conftest import INVENTORY, run_cli

LAB = INVENTORY / "lab-dual-arp.yaml"


def test_second_concurrent_deploy_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-lab"))
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    with StateFolder("lab-dual-arp", tmp_path).lock("deploy"):
        result = run_cli("deploy", "-f", str(LAB), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert "another operation on fabric lab-dual-arp is running" in error["reason"]
    assert error["where"] == str(tmp_path / "lab-dual-arp" / "lock")


def test_bundle_round_trip() -> None:
    files = {"frr.conf": "hostname x\n", "ip.batch": "link set lo up\n", "empty": ""}
    assert bundle.unpack(bundle.pack(files), "frr.conf") == files
    assert bundle.unpack("hostname x\n", "frr.conf") == {"frr.conf": "hostname x\n"}
    with pytest.raises(ValueError, match="repeated"):
        bundle.unpack(f"{bundle.MARKER}a\nx\n{bundle.MARKER}a\ny\n", "a")


def test_frr_reload_output_parsed_to_diff_lines() -> None:
    output = "\n".join(
        [
            "",
            "Lines To Delete",
            "===============",
            "no hostname vm",
            "router bgp 65000",
            " no neighbor swp9 interface",
            "",
            "Lines To Add",
            "============",
            "router bgp 65000",
            " neighbor swp2 interface peer-group LEAVES",
            "",
        ]
    )
    delete, add = parse_reload_test(output)
    assert delete == ["router bgp 65000", " no neighbor swp9 interface"]  # hostname noise dropped
    assert add == ["router bgp 65000", " neighbor swp2 interface peer-group LEAVES"]


def test_linux_teardown_finds_created_links_and_qdiscs() -> None:
    fabric = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))
    files = render_fabric(fabric, device="p1-g1-leaf1")["p1-g1-leaf1"]
    assert created_links(files["ip.batch"]) == ["br0", "bond1", "bond2", "vxlan10000", "vlan1001"]
    assert tc_devices(files["qos.tc"]) == ["swp1", "swp2", "swp3", "swp4"]


def _state(
    peers: dict[str, bool] | None = None,
    lldp: dict[str, Any] | None = None,
    routes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "bgp": {p: {"is_up": up} for p, up in (peers or {}).items()},
        "lldp": lldp or {},
        "routes": routes or [],
    }


def test_bgp_check_names_missing_and_extra_sessions() -> None:
    fabric = build_fabric(load_intent(LAB))
    leaf = build_device(fabric, "p1-g1-leaf1")
    good = check_bgp(fabric, leaf, _state({"aux1": True, "swp3": True, "swp4": True}))
    bad = check_bgp(fabric, leaf, _state({"aux1": True, "swp3": True, "swp4": False, "swp1": True}))
    assert good.ok and not bad.ok
    assert bad.expected == ["aux1", "swp3", "swp4"] and bad.found == ["aux1", "swp1", "swp3"]


def test_lldp_check_catches_a_swapped_cable() -> None:
    fabric = build_fabric(load_intent(LAB))
    swapped = {
        "swp1": [{"hostname": "p1-g1-leaf2", "port": "swp3"}],
        "swp2": [{"hostname": "p1-g1-leaf1", "port": "swp3"}],
    }
    check = check_lldp(fabric, "p1-spine1", _state(lldp=swapped))
    assert not check.ok and check.expected["swp1"] == "p1-g1-leaf1:swp3"


@pytest.mark.parametrize("drain", ["none", "graceful-shutdown", "isolated", "returning"])
def test_host_port_check_follows_the_drain_state(drain: str) -> None:
    fabric = build_fabric(load_intent(LAB))
    leaf = "p1-g1-leaf1"
    hosts = [lk.z_port for lk in fabric.links_by_device[leaf] if lk.kind == "host"]
    fabric_ports = [lk.a_port for lk in fabric.links_by_device[leaf] if lk.kind != "host"]
    down = drain in ("isolated", "returning")
    drained = {leaf: drain}

    def state(host_enabled: bool) -> dict[str, Any]:
        interfaces = {p: {"is_enabled": host_enabled} for p in hosts}
        interfaces.update({p: {"is_enabled": True} for p in fabric_ports})
        return {"interfaces": interfaces}

    good = check_host_ports(fabric, leaf, state(not down), drained)
    broken = check_host_ports(fabric, leaf, state(down), drained)
    assert hosts and good.ok and not broken.ok
    assert sorted(broken.found["wrong"]) == sorted(hosts)


def test_host_route_check_catches_a_route_through_the_wrong_leaf() -> None:
    fabric = build_fabric(load_intent(LAB))
    routes = []
    for server in fabric.servers:
        for nic in server.nics:
            leaf = nic.leaves[0]
            port = next(
                lk.z_port for lk in fabric.links_by_device["p1-spine1"] if lk.a_device == leaf
            )
            routes.append(
                {"prefix": f"{nic.ip}/32", "protocol": "bgp", "nexthops": [port], "selected": True}
            )
    assert check_host_routes(fabric, "p1-spine1", _state(routes=routes)).ok
    routes[0]["nexthops"] = ["swp2"]  # the other leaf: a route that does not follow the rail
    routes.pop()  # and one NIC missing
    check = check_host_routes(fabric, "p1-spine1", _state(routes=routes))
    assert not check.ok
    assert check.found["10.100.0.2/32"] == {"via": ["p1-g1-leaf2"], "expected": "p1-g1-leaf1"}
    assert "missing" in check.found.values()


@pytest.mark.parametrize(
    "args",
    [
        ("deploy", "--dry-run"),
        ("verify",),
        ("rollback", "--device", "p1-spine1"),
        ("hosts", "verify"),
    ],
)
def test_lab_fabric_without_its_lab_is_refused_before_any_connection(
    args: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lab fabric's management addresses exist only inside its lab: with no lab running,
    dpctl must refuse, not open SSH to them on this machine's network."""
    import socket

    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-lab"))
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")

    def no_network(*_a: Any, **_k: Any) -> None:
        raise AssertionError("dpctl tried to open a network connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    backups = tmp_path / "lab-dual-arp" / "backups" / "p1-spine1"
    backups.mkdir(parents=True)  # so rollback gets as far as connecting
    (backups / "20261130T000000Z.cfg").write_text("hostname p1-spine1\n")
    result = run_cli(*args, "-f", str(LAB), "--json")
    assert result.exit_code == 2, result.output
    assert "its lab is not running" in result.output


class _FakeSwitch:
    """A committed switch as deploy_task sees it: records the calls in order."""

    def __init__(self, refresh_fails: bool = False) -> None:
        self.calls: list[str] = []
        self.committed = False
        self.refresh_fails = refresh_fails
        self.dpctl = self  # dpctl's operations (driver.dpctl) are this fake's too
        self.config_asks: list[tuple[str, bool]] = []

    def load_replace_candidate(self, config: str) -> None:
        self.calls.append("load")

    def compare_config(self) -> str:
        self.calls.append("compare")
        return "" if self.committed else "+router bgp 65100\n"

    def discard_config(self) -> None:
        self.calls.append("discard")

    def get_config(self, retrieve: str = "all", sanitized: bool = False) -> dict[str, str]:
        self.config_asks.append((retrieve, sanitized))
        return {"running": "hostname old\n"}

    def get_bgp_neighbors(self) -> dict[str, Any]:
        self.calls.append("sessions")
        return {"global": {"peers": {"swp1": {"is_up": True}}}}

    def commit_config(self) -> None:
        self.calls.append("commit")
        self.committed = True

    def refresh_bgp_routes(self) -> None:
        self.calls.append("refresh")
        if self.refresh_fails:
            raise RuntimeError("% Unknown command: clear bgp * soft")

    def rollback(self) -> None:
        self.calls.append("rollback")


def _deploy_one(switch: _FakeSwitch, dry_run: bool = False) -> DeviceOutcome:
    """deploy_task on a real Nornir whose host's ``dpctl`` connection is ``switch``."""
    fabric = build_fabric(load_intent(LAB))
    nr = build_nornir(fabric, ["p1-g1-leaf1"], SwitchAccess("u", None, lab=True))
    connection = SimpleNamespace(connection=switch, close=lambda: None)
    nr.inventory.hosts["p1-g1-leaf1"].connections[CONNECTION_NAME] = connection  # type: ignore[assignment]
    result = nr.run(
        task=deploy_task,
        files={"p1-g1-leaf1": {"frr.conf": "router bgp 65100\n"}},
        state=StateFolder.for_intent("lab-dual-arp", None),
        dry_run=dry_run,
        peers_in_run={"p1-g1-leaf1": {"swp1"}},
    )
    outcome: DeviceOutcome = result["p1-g1-leaf1"][0].result
    return outcome


def test_a_commit_refreshes_the_routes_once_the_sessions_are_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route refresh comes after the read-back and the sessions, never on a dry run."""
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path))
    switch = _FakeSwitch()
    outcome = _deploy_one(switch)
    assert outcome.ok and outcome.changed, outcome
    assert switch.calls[switch.calls.index("commit") :] == [
        "commit", "load", "compare", "discard", "sessions", "refresh"
    ]  # fmt: skip
    dry = _FakeSwitch()
    assert _deploy_one(dry, dry_run=True).ok and "refresh" not in dry.calls


def test_the_backup_a_deploy_saves_is_the_running_config_never_sanitized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollback backup is get_config's running config as the switch runs it (a sanitized
    one, secrets replaced by placeholders, would restore the placeholders)."""
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path))
    switch = _FakeSwitch()
    outcome = _deploy_one(switch)
    assert switch.config_asks == [("running", False)]
    assert outcome.backup and Path(outcome.backup).read_text() == "hostname old\n"


def test_a_refresh_the_switch_refuses_fails_the_post_check_and_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path))
    switch = _FakeSwitch(refresh_fails=True)
    outcome = _deploy_one(switch)
    assert not outcome.ok and outcome.rolled_back, outcome
    assert outcome.error and "clear bgp * soft" in outcome.error
    assert switch.calls[-1] == "rollback"


class _World:
    """Two switches' BGP session: up once both have committed their config."""

    def __init__(self) -> None:
        self.committed: set[str] = set()


class _Peer(_FakeSwitch):
    def __init__(self, world: _World, name: str, iface: str) -> None:
        super().__init__()
        self.world, self.name, self.iface = world, name, iface

    def commit_config(self) -> None:
        super().commit_config()
        self.world.committed.add(self.name)

    def get_bgp_neighbors(self) -> dict[str, Any]:
        self.calls.append("sessions")
        up = len(self.world.committed) == 2
        return {"global": {"peers": {self.iface: {"is_up": up}}}}


def test_more_switches_than_workers_post_check_waits_only_for_settled_peers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One worker for a leaf and its spine: the leaf commits while the spine has not started,
    so its post-check cannot wait for that session (it would time out and roll back, as the
    48-switch lab's first 16 leaves did); the spine, settling second, checks it."""
    import controller.deploy as deploy_module
    from controller.deploy import peers_in_run

    monkeypatch.setattr(deploy_module, "POST_CHECK_TIMEOUT_S", 4.0)
    fabric = build_fabric(load_intent(LAB))
    leaf, spine = "p1-g1-leaf1", "p1-spine1"
    devices = {n: build_device(fabric, n) for n in (leaf, spine)}
    in_run = peers_in_run(devices)
    assert set(in_run[leaf].values()) == {spine} and set(in_run[spine].values()) == {leaf}
    world = _World()
    switches = {
        leaf: _Peer(world, leaf, next(iter(in_run[leaf]))),
        spine: _Peer(world, spine, next(iter(in_run[spine]))),
    }
    nr = build_nornir(fabric, [leaf, spine], SwitchAccess("u", None, lab=True), workers=1)
    for name, switch in switches.items():
        connection = SimpleNamespace(connection=switch, close=lambda: None)
        nr.inventory.hosts[name].connections[CONNECTION_NAME] = connection  # type: ignore[assignment]
    result = nr.run(
        task=deploy_task,
        files={leaf: {"frr.conf": "router bgp 65100\n"}, spine: {"frr.conf": "router bgp 1\n"}},
        state=StateFolder.for_intent("lab-dual-arp", None),
        dry_run=False,
        peers_in_run=in_run,
        settled=deploy_module.Settled(),
    )
    outcomes = {n: result[n][0].result for n in (leaf, spine)}
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}
    assert outcomes[leaf].seconds < 2.0  # it did not wait out the post-check's timeout
    assert outcomes[spine].sessions_up == [switches[spine].iface]


def test_a_backup_keeps_the_intent_the_switch_ran_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So a rollback to it records that intent again (controller/deployed.py)."""
    from controller import deployed
    from controller.backups import intent_of_backup

    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path))
    state = StateFolder.for_intent("lab-dual-arp", None)
    assert intent_of_backup(Path(str(_deploy_one(_FakeSwitch()).backup))) is None  # unknown
    intent = load_intent(LAB)
    with state.lock("test"):
        deployed.record(state, intent, ["p1-g1-leaf1"])
    backup = _deploy_one(_FakeSwitch()).backup
    assert backup and intent_of_backup(Path(backup)) == intent.model_dump_json()
