"""dpctl hosts without a lab: inventory generation, error cases, the NIC module's planner."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from controller import hosts as hosts_mod
from controller.access import ServerAccess
from controller.ansible_inventory import GROUP, build_inventory, ssh_common_args
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.hosts import HostsError, _outcomes, require_ansible, select_servers
from controller.intent import load_intent
from controller.lab.fabric import server_setup_script
from controller.opstate import StateFolder
from controller.resources import collection_python
from tests.conftest import INVENTORY, run_cli

LAB_ACCESS = ServerAccess(
    user="root",
    key_file="/s/id_ed25519",
    known_hosts="/s/known_hosts",
    jump_host="127.0.0.1",
    jump_port=2222,
)


def _fabric(mode: str) -> Fabric:
    return build_fabric(load_intent(INVENTORY / f"lab-{mode}.yaml"))


def _module(name: str = "dpctl_gpu_nic") -> ModuleType:
    """A module of the dpctl.fabric collection, imported as AnsiballZ names it."""
    return collection_python(f"plugins.modules.{name}")


def _utils(name: str) -> ModuleType:
    """One of dpctl_gpu_nic's module_utils (gpu_nic_<name>)."""
    return collection_python(f"plugins.module_utils.gpu_nic_{name}")


NIC = _module()
PORT = _module("dpctl_host_port")
NETLINK, STATE, PLAN, ROCE = _utils("netlink"), _utils("state"), _utils("plan"), _utils("roce")
VERIFY, PERSIST, APPLY = _utils("verify"), _utils("persist"), _utils("apply")


# -- inventory ---------------------------------------------------------------------------
def _pairwise_peers(fabric: Fabric, server: Any) -> list[tuple[str, int, str, str]]:
    """The same-rail NICs of every other server, from this server's NIC on that rail (the
    pairwise list the inventory used to carry)."""
    return sorted(
        (other.name, nic.rail, nic.ip, own.ip)
        for own in server.nics
        for other in fabric.servers
        if other.name != server.name
        for nic in other.nics
        if nic.rail == own.rail
    )


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_inventory_has_every_server_once_with_its_nics(mode: str) -> None:
    fabric = _fabric(mode)
    inv = build_inventory(fabric, LAB_ACCESS)
    group = inv["all"]["children"]["gpu_servers"]
    assert list(group["hosts"]) == [s.name for s in fabric.servers]
    gv = group["vars"]
    for server in fabric.servers:
        host = group["hosts"][server.name]
        assert set(host) == {"ansible_host", "nics"}, "no per-pair data per host"
        assert host["ansible_host"] == server.mgmt_ip
        assert [n["ip"] for n in host["nics"]] == [n.ip for n in server.nics]
        # what the module works with: own facts completed by the rail's shared facts
        full = STATE.expand_nics(host["nics"], gv["rails"])
        for nic, facts in zip(full, server.nics, strict=True):
            assert nic == {
                "rail": facts.rail,
                "bond": f"gpu{facts.rail}",
                "ip": facts.ip,
                "prefixlen": facts.prefixlen,
                "gateway": facts.gateway,
                "ports": list(facts.ports),
                "table": 100 + facts.rail,
            }
        # peers derived by the module from the rail members = the old pairwise enumeration
        peers = STATE.peers_of(full, gv["rail_members"])
        assert sorted((p["server"], p["rail"], p["ip"], p["src"]) for p in peers) == (
            _pairwise_peers(fabric, server)
        )
    gv = group["vars"]
    assert gv["dual_leaf_mode"] == mode
    assert gv["rail_pool"] == str(fabric.intent.addressing.rail_subnets)
    assert gv["mtu"] == 9000 and gv["ansible_user"] == "root"
    assert gv["ansible_ssh_private_key_file"] == "/s/id_ed25519"
    if mode == "evpn-mh":
        assert gv["bond_options"]["mode"] == "802.3ad"
        assert gv["bond_options"]["lacp_rate"] == "fast" and not gv["arp_on_both_ports"]
    else:
        assert gv["bond_options"] == {
            "mode": "balance-xor",
            "xmit_hash_policy": "layer3+4",
            "miimon": 100,
            "updelay": 10000,
        }
        assert gv["arp_on_both_ports"]
    assert gv["roce"]["pfc_priorities"] == [3, 4]
    json.dumps(inv)  # ansible-runner writes it as JSON


def test_bond_options_match_the_lab_reference_script() -> None:
    for mode in ("dual-arp", "evpn-mh"):
        fabric = _fabric(mode)
        script = server_setup_script(fabric, fabric.servers[0])
        opts = build_inventory(fabric, LAB_ACCESS)["all"]["children"]["gpu_servers"]["vars"]
        line = next(x for x in script.splitlines() if x.startswith("link add gpu"))
        for key, value in opts["bond_options"].items():
            assert f"{key} {value}" in line


def test_inventory_limited_to_named_servers() -> None:
    fabric = _fabric("dual-arp")
    inv = build_inventory(fabric, LAB_ACCESS, [fabric.servers[1].name])
    group = inv["all"]["children"]["gpu_servers"]
    assert list(group["hosts"]) == [fabric.servers[1].name]
    # the servers not run on are still its peers
    members = group["vars"]["rail_members"]
    assert all(set(m) == {s.name for s in fabric.servers} for m in members.values())


def _big_fabric(gpus: int) -> Fabric:
    intent = load_intent(INVENTORY / "examples" / "cx864e-16384-dual-arp.yaml")
    return build_fabric(intent.model_copy(update={"gpus": gpus, "servers": None}))


def test_inventory_grows_linearly_with_gpus() -> None:
    sizes = {}
    for gpus in (512, 2048):
        inv = build_inventory(_big_fabric(gpus), LAB_ACCESS)
        group = inv["all"]["children"]["gpu_servers"]
        assert len(group["hosts"]) == gpus // 8
        assert sum(len(m) for m in group["vars"]["rail_members"].values()) == gpus
        sizes[gpus] = len(json.dumps(inv))
    assert sizes[2048] < 4.5 * sizes[512], sizes  # linear (4x), not quadratic (16x)


def test_peers_of_skips_only_the_own_nic() -> None:
    nics = [{"rail": 1, "ip": "10.0.0.2"}, {"rail": 2, "ip": "10.0.1.2"}]
    members = {"1": {"a": "10.0.0.2", "b": "10.0.0.3"}, "2": {"a": "10.0.1.2"}}
    assert STATE.peers_of(nics, members) == [
        {"server": "b", "rail": 1, "ip": "10.0.0.3", "src": "10.0.0.2"}
    ]


def test_expand_nics_refuses_an_unknown_rail() -> None:
    with pytest.raises(ValueError, match="rail 3 is not in the inventory"):
        STATE.expand_nics([{"rail": 3, "ip": "10.0.0.2"}], {"1": {"bond": "gpu1"}})


def test_jump_args_use_lab_key_known_hosts_and_proxycommand() -> None:
    args = shlex.split(ssh_common_args(LAB_ACCESS))
    proxy = next(a for a in args if a.startswith("ProxyCommand="))
    inner = shlex.split(proxy.removeprefix("ProxyCommand="))
    assert inner[0] == "ssh" and inner[-1] == "root@127.0.0.1"
    assert inner[inner.index("-i") + 1] == "/s/id_ed25519"
    assert inner[inner.index("-p") + 1] == "2222"
    assert inner[inner.index("-W") + 1] == "%h:%p"
    assert "UserKnownHostsFile=/s/known_hosts" in inner
    assert "UserKnownHostsFile=/s/known_hosts" in args
    assert "StrictHostKeyChecking=yes" in args


def test_no_jump_without_lab() -> None:
    args = ssh_common_args(ServerAccess(user="admin", key_file="/k"))
    assert "ProxyCommand" not in args and "BatchMode=yes" in args


def test_ansible_connects_with_the_access_timeout(tmp_path: Path) -> None:
    """Ansible puts its own ``-o ConnectTimeout=`` (default 10 s) before the common args and
    ssh keeps the first value: the timeout must reach ssh through Ansible's own option. Real
    ansible-runner, with an ssh that records its arguments and fails."""
    require_ansible()
    import ansible_runner

    record = tmp_path / "argv"
    fake_ssh = tmp_path / "ssh"
    fake_ssh.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\nexit 255\n')
    fake_ssh.chmod(0o755)
    access = ServerAccess(
        user="root", key_file="/s/id_ed25519", jump_host="127.0.0.1", connect_timeout=30
    )
    inventory = build_inventory(_fabric("dual-arp"), access, ["srv0001"])
    inventory["all"]["children"][GROUP]["vars"]["ansible_ssh_executable"] = str(fake_ssh)
    (tmp_path / "run").mkdir()
    ansible_runner.run(
        private_data_dir=str(tmp_path / "run"),
        host_pattern="all",
        module="ping",
        inventory=inventory,
        envvars={"ANSIBLE_SSH_RETRIES": "0"},
        quiet=True,
    )
    argv = record.read_text().splitlines()
    timeouts = [a for a in argv if a.startswith("ConnectTimeout=")]
    assert timeouts and timeouts[0] == "ConnectTimeout=30", argv


# -- errors --------------------------------------------------------------------------------
def test_unknown_server_is_named() -> None:
    fabric = _fabric("dual-arp")
    with pytest.raises(HostsError) as exc:
        select_servers(fabric, "srv9999")
    assert exc.value.where == "--server" and "srv9999" in exc.value.reason
    assert "srv0001" in exc.value.reason


def test_cli_unknown_server_exits_2_with_message() -> None:
    result = run_cli(
        "hosts",
        "configure",
        "-f",
        str(INVENTORY / "lab-dual-arp.yaml"),
        "--server",
        "nope",
        "--json",
    )
    assert result.exit_code == 2
    body = json.loads(result.stdout.splitlines()[0])
    assert body["ok"] is False and body["error"]["where"] == "--server"


def test_missing_ansible_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosts_mod.shutil, "which", lambda name: None)
    with pytest.raises(HostsError) as exc:
        require_ansible()
    assert exc.value.where == "ansible"
    assert "pip install 'ansible-core" in exc.value.reason


def test_outcomes_from_runner_events() -> None:
    events: list[dict[str, Any]] = [
        {
            "event": "runner_on_ok",
            "event_data": {
                "host": "a",
                "task_action": "dpctl_gpu_nic",
                "res": {"changed": True, "msg": "x", "roce_skipped": ["skip"], "nics": {}},
            },
        },
        {"event": "runner_on_unreachable", "event_data": {"host": "b", "res": {"msg": "down"}}},
    ]
    out = _outcomes(events, ["a", "b"])
    assert out["a"].ok and out["a"].changed == 1 and out["a"].roce_skipped == ["skip"]
    assert out["b"].unreachable and not out["b"].ok and out["b"].message == "down"


def test_a_change_without_commands_says_what_changed() -> None:
    """A restarted keep-alive or a rewritten persistent file is a change: the outcome names
    it (it used to show as changed with no commands)."""
    res = {
        "changed": True,
        "nics": {"gpu1": {"commands": [], "why": ["keep-alive ping"]}},
        "keepalives_started": ["ping -q -i 2 -I 10.0.0.2 10.0.0.1"],
        "persistent": ["persistent etc/dpctl/gpu-nic.json"],
    }
    ev = {"event": "runner_on_ok", "event_data": {"host": "a", "task_action": "dpctl_gpu_nic"}}
    ev["event_data"]["res"] = res
    out = _outcomes([ev], ["a"])["a"]
    assert out.changed == 1
    assert out.commands == {
        "keep-alive": ["ping -q -i 2 -I 10.0.0.2 10.0.0.1"],
        "persistent": ["persistent etc/dpctl/gpu-nic.json"],
    }


# -- the module's planner (idempotence logic) ------------------------------------------------
def _params(mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    fabric = _fabric(mode)
    gv = build_inventory(fabric, LAB_ACCESS)["all"]["children"]["gpu_servers"]
    host = gv["hosts"][fabric.servers[0].name]
    nics = STATE.expand_nics(host["nics"], gv["vars"]["rails"])
    return {**gv["vars"], "nics": nics}, nics[0]


def _bare_state(nic: dict[str, Any]) -> dict[str, Any]:
    return {
        "links": {
            p: {"ifname": p, "flags": ["BROADCAST", "UP"], "mtu": 1500} for p in nic["ports"]
        },
        "addrs": {},
        "rules": [],
        "routes": [],
        "clsact": [],
        "filters": {},
        "pings": [],
        "coupled": {},
    }


def _converged(p: dict[str, Any], nic: dict[str, Any]) -> dict[str, Any]:
    """The state `ip -j` shows after the plan ran (as seen in the lab)."""
    bond, a, b = nic["bond"], *nic["ports"]
    info = {PLAN.BOND_KEYS[k]: v for k, v in p["bond_options"].items()}
    state = _bare_state(nic)
    state["links"][bond] = {
        "ifname": bond,
        "flags": ["BROADCAST", "MASTER", "UP", "LOWER_UP"],
        "mtu": 9000,
        "linkinfo": {"info_kind": "bond", "info_data": info},
    }
    for port in (a, b):
        state["links"][port]["master"] = bond
    state["addrs"][bond] = [{"family": "inet", "local": nic["ip"], "prefixlen": nic["prefixlen"]}]
    state["rules"] = [{"priority": nic["table"], "src": nic["ip"], "table": str(nic["table"])}]
    state["routes"] = [
        {"dst": p["rail_pool"], "gateway": nic["gateway"], "dev": bond, "table": str(nic["table"])}
    ]
    if p["arp_on_both_ports"]:
        state["clsact"] = [bond]
        state["filters"][bond] = (
            "filter protocol arp pref 49152 u32 chain 0 \n"
            "filter protocol arp pref 49152 u32 chain 0 fh 800: ht divisor 1 \n"
            "filter protocol arp pref 49152 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 "
            "terminal flowid not_in_hw \n  match 00000000/00000000 at 0\n"
            f"\taction order 1: mirred (Egress Mirror to device {a}) pipe\n"
            "\tindex 1 ref 1 bind 1\n\n"
            f"\taction order 2: mirred (Egress Redirect to device {b}) stolen\n"
            "\tindex 2 ref 1 bind 1\n"
        )
    state["pings"] = [PLAN.keepalive_argv(nic, p["arp_keepalive_s"])]
    if p["bond_options"]["mode"] == "802.3ad":
        state["coupled"] = {bond: 0}
    return state


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_plan_from_bare_matches_reference_script(mode: str) -> None:
    p, nic = _params(mode)
    plan = PLAN.plan_nic(_bare_state(nic), nic, p)
    fabric = _fabric(mode)
    script = server_setup_script(fabric, fabric.servers[0])
    names = (nic["bond"], *nic["ports"], nic["ip"])
    reference = [x for x in script.splitlines() if any(f" {n} " in f"{x} " for n in names)]
    # both set independent LACP control on a new bond while it is down: the lab's image runs
    # the module itself for that (`--lacp-independent`), right after creating its bonds
    ref_ip = [x for x in reference if not x.startswith(("qdisc", "filter", "setsid", "python3"))]
    ours = [x.replace("route replace", "route add") for x in plan["ip"]]
    assert ours == ref_ip
    if mode == "evpn-mh":
        assert plan["independent_after"] == 1 and ours[0].startswith(f"link add {nic['bond']} ")
        assert f"python3 - --lacp-independent {nic['bond']} " in script
    else:
        assert plan["independent_after"] is None and "--lacp-independent" not in script
    assert plan["tc"] == [x for x in reference if x.startswith(("qdisc", "filter"))]
    assert plan["ping"] == PLAN.keepalive_argv(nic, 2)


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_converged_state_plans_nothing(mode: str) -> None:
    p, nic = _params(mode)
    plan = PLAN.plan_nic(_converged(p, nic), nic, p)
    assert plan == {"ip": [], "tc": [], "ping": None, "why": [], "independent_after": None}


class FakeServer:
    """`ip` and the bonds' coupled_control as a kernel with the option keeps them: records
    every command and control change in order."""

    def __init__(self, links: dict[str, Any], coupled: dict[str, int]) -> None:
        self.links, self.coupled = links, coupled
        self.log: list[str] = []

    def run(self, argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
        if argv[:3] == ["ip", "-j", "-d"]:
            return 0, json.dumps(list(self.links.values())), ""
        if argv[:2] == ["ip", "-batch"]:
            self.log += (stdin or "").splitlines()
        elif argv[:2] == ["ip", "link"]:
            self.log.append(" ".join(argv))
        return 0, "[]" if "-j" in argv else "", ""

    def control(self, bond: str) -> int | None:
        return self.coupled.get(bond)

    def set_control(self, bond: str, value: int = 0) -> int | None:
        self.log.append(f"coupled_control {value} {bond}")
        self.coupled[bond] = value
        return value


def test_a_new_lacp_bond_gets_independent_control_while_it_is_still_down() -> None:
    p, nic = _params("evpn-mh")
    bond = nic["bond"]
    plan = PLAN.plan_nic(_bare_state(nic), nic, p)
    server = FakeServer({}, {})
    APPLY.apply_plan(server.run, bond, plan, server.set_control)
    at = server.log.index(f"coupled_control 0 {bond}")
    assert server.log[:at] == [plan["ip"][0]]  # after `link add`, before ports, address, up
    assert server.log[at + 1 :] == plan["ip"][1:]
    assert any(line.endswith(" up") for line in server.log[at + 1 :])


def test_a_running_coupled_bond_is_reported_not_bounced_and_changes_at_boot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Changing a bond's control takes it down, and down drops the routes through it: a
    configure of a running server only reports it; the boot-time applier does it."""
    p, nic = _params("evpn-mh")
    p = {**p, "nics": [nic], "roce": {"enabled": False}}
    bond = nic["bond"]
    converged = _converged(p, nic)
    server = FakeServer(converged["links"], {bond: 1})

    def read_state(run: Any, nics: Any, control: Any = None) -> dict[str, Any]:
        return {**converged, "coupled": {bond: server.control(bond)}}

    monkeypatch.setattr(APPLY, "read_state", read_state)
    result = APPLY.configure(server.run, p, check=False, control=server.control)
    assert server.log == [] and result["changed"] is False
    assert result["lacp_control"] == {bond: NETLINK.COUPLED_RUNNING}
    assert "next boot" in NETLINK.COUPLED_RUNNING

    monkeypatch.setattr(APPLY, "read_persistent", lambda root: PERSIST.render_persistent(p))
    boot = APPLY.apply_persistent(server.run, str(tmp_path), server.control, server.set_control)
    assert server.log == [
        f"ip link set {bond} down",
        f"coupled_control 0 {bond}",
        f"ip link set {bond} up",
    ]
    assert boot["lacp_control"] == {bond: NIC.INDEPENDENT}
    # a kernel without the option: nothing to do, said so
    assert NETLINK.lacp_control_text(None) == NIC.COUPLED


def test_lacp_independent_names_a_bond_it_cannot_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert NETLINK.lacp_independent_main(["dpctl-no-such-bond"]) == 1
    assert capsys.readouterr().err.startswith("dpctl-no-such-bond: ")


def test_drift_plans_only_the_fix() -> None:
    p, nic = _params("dual-arp")
    state = _converged(p, nic)
    drifted = copy.deepcopy(state)
    drifted["routes"] = []
    drifted["pings"] = []
    plan = PLAN.plan_nic(drifted, nic, p)
    route = f"route replace {p['rail_pool']} via {nic['gateway']} dev {nic['bond']}"
    assert plan["ip"] == [f"{route} table {nic['table']}"]
    assert plan["tc"] == [] and plan["ping"] is not None
    # a wrong bond mode means recreate the bond and everything that hangs off it
    wrong = copy.deepcopy(state)
    wrong["links"][nic["bond"]]["linkinfo"]["info_data"]["mode"] = "active-backup"
    plan = PLAN.plan_nic(wrong, nic, p)
    assert plan["ip"][0] == f"link del {nic['bond']}" and len(plan["tc"]) == 2
    # a rule pointing elsewhere is replaced
    other = copy.deepcopy(state)
    other["rules"] = [{"priority": nic["table"], "src": "10.9.9.9", "table": "7"}]
    plan = PLAN.plan_nic(other, nic, p)
    assert plan["ip"] == [
        f"rule del priority {nic['table']}",
        f"rule add from {nic['ip']} table {nic['table']} priority {nic['table']}",
    ]


def test_evpn_removes_leftover_arp_mirroring() -> None:
    p, nic = _params("evpn-mh")
    state = _converged(p, nic)
    state["clsact"] = [nic["bond"]]
    assert PLAN.plan_nic(state, nic, p)["tc"] == [f"qdisc del dev {nic['bond']} clsact"]


def test_tc_filter_parser() -> None:
    p, nic = _params("dual-arp")
    text = _converged(p, nic)["filters"][nic["bond"]]
    a, b = nic["ports"]
    assert PLAN.parse_tc_filters(text) == [("arp", [("Mirror", a), ("Redirect", b)])]


def test_check_mode_runs_nothing() -> None:
    p, nic = _params("dual-arp")
    calls: list[list[str]] = []

    def run(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
        calls.append(argv)
        if argv[:2] == ["ip", "-j"] and "link" in argv:
            return 0, json.dumps(list(_bare_state(nic)["links"].values())), ""
        if argv[:2] in (["ip", "-j"], ["tc", "-j"]):
            return 0, "[]", ""
        return 1, "", "unsupported"

    p = {**p, "nics": [nic], "roce": {"enabled": False}}
    result = APPLY.configure(run, p, check=True)
    assert result["changed"]
    assert all(c[:2] in (["ip", "-j"], ["tc", "-j"]) or c[1] == "filter" for c in calls)
    assert not any("-batch" in c for c in calls)


def test_roce_skipped_with_message_without_tooling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ROCE.shutil, "which", lambda name: None)
    res = ROCE.roce_port(lambda *a, **k: (1, "", ""), "nic1p1", {"pfc_priorities": [3, 4]}, False)
    assert res["changed"] is False
    assert res["skipped"].startswith("RoCE host settings skipped on nic1p1")
    assert "mlnx_qos, dcb, lldptool" in res["skipped"]


def test_roce_dcb_sets_pfc_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ROCE.shutil, "which", lambda name: "/x" if name == "dcb" else None)
    pfc = {"prio_pfc": {str(i): i in (3, 4) for i in range(8)}}
    app = {"dscp_prio": [[24, 3]]}

    def run(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
        return 0, json.dumps(app if "app" in argv else pfc), ""

    roce = {"pfc_priorities": [3, 4], "dscp_to_prio": {"24": 3}}
    assert ROCE.roce_port(run, "p", roce, False)["changed"] is False
    pfc["prio_pfc"]["4"] = False
    res = ROCE.roce_port(run, "p", roce, True)
    assert res["changed"] and res["commands"][0][:4] == ["dcb", "pfc", "set", "dev"]


def test_playbooks_exist() -> None:
    for name in ("configure.yml", "verify.yml", "host_ports.yml"):
        assert (Path(hosts_mod.PLAYBOOKS) / name).is_file()


# -- the host-side drain step ------------------------------------------------------------
def test_leaf_facing_ports_are_the_servers_ports_to_that_leaf() -> None:
    fabric = _fabric("dual-arp")
    ports = hosts_mod.leaf_facing_ports(fabric, "p1-g1-leaf1")
    assert sorted(ports) == ["srv0001", "srv0002"]
    for server, entries in ports.items():
        nic = fabric.server_by_name[server].nics[0]  # rail 1
        # its plane-1 port, not the plane-2 one, and the bond the module releases it from
        assert entries == [{"port": nic.ports[0], "bond": "gpu1"}]


def test_host_step_on_a_switch_without_servers_is_refused(tmp_path: Path) -> None:
    state = StateFolder("lab-dual-arp", tmp_path)
    with pytest.raises(HostsError, match="p1-spine1: no server is cabled to this switch"):
        hosts_mod.set_leaf_facing_ports(_fabric("dual-arp"), "p1-spine1", "down", LAB_ACCESS, state)
    assert not state.path.exists()  # refused: nothing written


def test_host_port_module_refuses_unknown_ports_and_bonds() -> None:
    """Real `ip -j link` on this machine: lo exists, the other names do not."""
    commands, errors = PORT.plan(
        [{"port": "lo", "bond": "dpctl-no-bond0"}, {"port": "dpctl-no-such0", "bond": "lo"}],
        "down",
    )
    assert commands == []
    assert errors == [
        "lo: its bond dpctl-no-bond0 does not exist",
        "dpctl-no-such0: no such interface",
    ]


BOND_LINKS: dict[str, dict[str, Any]] = {
    "bond1": {"ifname": "bond1", "flags": ["MASTER", "UP", "LOWER_UP"]},
    "eth1": {"ifname": "eth1", "master": "bond1", "flags": ["SLAVE", "UP", "LOWER_UP"]},
    "eth2": {"ifname": "eth2", "master": "bond1", "flags": ["SLAVE", "UP", "LOWER_UP"]},
    "eth3": {"ifname": "eth3", "flags": ["BROADCAST"]},  # released by a drain: down
    "eth4": {"ifname": "eth4", "master": "bond1", "flags": ["SLAVE"]},  # member, admin down
    "eth5": {"ifname": "eth5", "master": "bond9", "flags": ["SLAVE", "UP"]},
    "bond9": {"ifname": "bond9", "flags": ["MASTER", "UP"]},
}


def _bond_links(monkeypatch: pytest.MonkeyPatch, links: dict[str, dict[str, Any]]) -> None:
    monkeypatch.setattr(PORT, "link_info", links.get)
    monkeypatch.setattr(
        PORT, "members", lambda bond: [v for v in links.values() if v.get("master") == bond]
    )


def _ports(*names: str) -> list[dict[str, str]]:
    return [{"port": n, "bond": "bond1"} for n in names]


def test_host_port_module_releases_a_member_and_puts_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Down releases the member from its bond (the module's docstring says why not a link
    down); up puts a released port back, and only then brings it up."""
    _bond_links(monkeypatch, BOND_LINKS)
    assert PORT.plan(_ports("eth1"), "down") == (
        [["ip", "link", "set", "dev", "eth1", "nomaster"]],
        [],
    )
    assert PORT.plan(_ports("eth3"), "down") == ([], [])  # already released and down
    assert PORT.plan(_ports("eth1"), "up") == ([], [])  # already in service
    assert PORT.plan(_ports("eth3"), "up") == (
        [
            ["ip", "link", "set", "dev", "eth3", "down"],
            ["ip", "link", "set", "dev", "eth3", "master", "bond1"],
            ["ip", "link", "set", "dev", "eth3", "up"],
        ],
        [],
    )
    # a member left admin down (by an older dpctl's drain): up brings it up; down releases it
    assert PORT.plan(_ports("eth4"), "up") == ([["ip", "link", "set", "dev", "eth4", "up"]], [])
    assert PORT.plan(_ports("eth4"), "down")[0] == [
        ["ip", "link", "set", "dev", "eth4", "nomaster"]
    ]


def test_host_port_module_refuses_the_last_path_and_a_foreign_bond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    links = {**BOND_LINKS, "eth2": {**BOND_LINKS["eth2"], "flags": ["SLAVE", "UP"]}}  # no carrier
    _bond_links(monkeypatch, links)
    commands, errors = PORT.plan(_ports("eth1", "eth5"), "down")
    assert commands == []  # nothing runs when any port is refused
    assert errors == [
        "eth1: no other member of bond1 is up (refusing to take the server's last path on "
        "this rail down)",
        "eth5: member of bond9, not of bond1",
    ]
    _bond_links(monkeypatch, BOND_LINKS)
    assert PORT.plan(_ports("eth5"), "up") == ([], ["eth5: member of bond9, not of bond1"])


def test_drain_help_offers_the_host_step() -> None:
    for command in ("drain", "undrain"):
        result = run_cli(command, "--help")
        assert result.exit_code == 0 and "--hosts-first" in result.stdout
