"""The GPU servers' persistent network configuration (systemd-networkd files + extras) and the
boot-time applier that programs the kernel from those files alone (pure parts; the kernel
part runs in tests/lab/test_hosts_lab.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.ansible_inventory import build_inventory
from controller.resources import collection_dir
from tests.unit.test_hosts import (
    APPLY,
    LAB_ACCESS,
    PERSIST,
    PLAN,
    STATE,
    VERIFY,
    _bare_state,
    _fabric,
)


def _server_params(mode: str) -> dict[str, Any]:
    fabric = _fabric(mode)
    gv = build_inventory(fabric, LAB_ACCESS)["all"]["children"]["gpu_servers"]
    # as the module's main() does: the host's own NIC facts completed by its rails' shared ones
    nics = STATE.expand_nics(gv["hosts"][fabric.servers[0].name]["nics"], gv["vars"]["rails"])
    return {**gv["vars"], "nics": nics}


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_files_read_back_to_the_same_parameters(mode: str) -> None:
    p = _server_params(mode)
    files = PERSIST.render_persistent(p)
    back = PERSIST.params_from_persistent(files)
    for key in ("bond_options", "mtu", "rail_pool", "arp_on_both_ports", "arp_keepalive_s"):
        assert back[key] == p[key], key
    want = sorted(({k: v for k, v in n.items() if k != "rail"} for n in p["nics"]), key=str)
    assert sorted(back["nics"], key=str) == want


@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_applier_plans_from_files_what_configure_plans_from_params(mode: str) -> None:
    p = _server_params(mode)
    back = PERSIST.params_from_persistent(PERSIST.render_persistent(p))
    by_bond = {n["bond"]: n for n in back["nics"]}
    for nic in p["nics"]:
        state = _bare_state(nic)
        assert PLAN.plan_nic(state, by_bond[nic["bond"]], back) == PLAN.plan_nic(state, nic, p)


def test_networkd_files_say_what_networkd_can() -> None:
    p = _server_params("dual-arp")
    nic = p["nics"][0]
    files = PERSIST.render_persistent(p)
    netdev = dict(PERSIST.parse_ini(files[f"etc/systemd/network/60-dpctl-{nic['bond']}.netdev"]))
    assert netdev["Bond"] == {
        "Mode": "balance-xor",
        "TransmitHashPolicy": "layer3+4",
        "MIIMonitorSec": "100ms",
        "UpDelaySec": "10000ms",  # the dual-ARP hold before a returning port carries traffic
    }
    network = PERSIST.parse_ini(files[f"etc/systemd/network/60-dpctl-{nic['bond']}.network"])
    sections = dict(network)
    assert sections["Network"]["Address"] == f"{nic['ip']}/{nic['prefixlen']}"
    assert sections["Route"] == {
        "Destination": p["rail_pool"],
        "Gateway": nic["gateway"],
        "Table": str(nic["table"]),
    }
    assert sections["RoutingPolicyRule"]["From"] == f"{nic['ip']}/32"
    port = dict(PERSIST.parse_ini(files[f"etc/systemd/network/60-dpctl-{nic['ports'][0]}.network"]))
    assert port["Network"] == {"Bond": nic["bond"]} and port["Link"] == {"MTUBytes": "9000"}
    extras = json.loads(files["etc/dpctl/gpu-nic.json"])  # what networkd cannot express
    assert extras["arp_on_both_ports"] is True and extras["arp_keepalive_s"] == 2
    assert "--apply-persistent /" in files["etc/systemd/system/dpctl-gpu-nic.service"]
    evpn = PERSIST.render_persistent(_server_params("evpn-mh"))
    bond = dict(PERSIST.parse_ini(evpn[f"etc/systemd/network/60-dpctl-{nic['bond']}.netdev"]))
    assert bond["Bond"]["Mode"] == "802.3ad" and bond["Bond"]["LACPTransmitRate"] == "fast"


def test_persist_writes_only_differences_and_removes_stale(tmp_path: Path) -> None:
    p = _server_params("evpn-mh")
    want = PERSIST.render_persistent(p)
    assert PERSIST.persist(str(tmp_path), want, check=True)  # would write everything
    assert not (tmp_path / "etc").exists()  # check mode wrote nothing
    assert len(PERSIST.persist(str(tmp_path), want, check=False)) == len(want)
    assert PERSIST.read_persistent(str(tmp_path)) == want
    assert PERSIST.persist(str(tmp_path), want, check=False) == []  # converged: nothing
    stale = tmp_path / "etc/systemd/network/60-dpctl-gpu9.netdev"
    stale.write_text("[NetDev]\nName=gpu9\n")
    (tmp_path / "etc/systemd/network/10-other.network").write_text("[Match]\nName=eth0\n")
    assert PERSIST.persist(str(tmp_path), want, check=False) == [
        "remove stale etc/systemd/network/60-dpctl-gpu9.netdev"
    ]
    assert (tmp_path / "etc/systemd/network/10-other.network").exists()  # not ours: kept


def test_applier_travels_with_the_files_and_is_executable(tmp_path: Path) -> None:
    """The role hands the module its own source; it is written as the boot unit's
    ExecStart with the other files (mode 0755), and left alone by a run that does not
    give it (stale removal is for our networkd files only)."""
    source = (collection_dir() / "plugins" / "modules" / "dpctl_gpu_nic.py").read_text()
    p = {**_server_params("dual-arp"), "applier": source}
    want = PERSIST.render_persistent(p)
    assert want[PERSIST.APPLIER] == source
    assert f"persistent {PERSIST.APPLIER}" in PERSIST.persist(str(tmp_path), want, check=False)
    applier = tmp_path / PERSIST.APPLIER
    assert applier.read_text() == source and applier.stat().st_mode & 0o777 == 0o755
    without = PERSIST.render_persistent({**p, "applier": ""})
    assert PERSIST.APPLIER not in without
    assert PERSIST.persist(str(tmp_path), without, check=False) == []
    assert applier.exists()


def test_role_passes_the_module_its_own_source() -> None:
    role = collection_dir() / "roles" / "gpu_nic" / "tasks" / "main.yml"
    tasks = yaml.safe_load(role.read_text())
    (configure,) = [t for t in tasks if "dpctl.fabric.dpctl_gpu_nic" in t]
    applier = configure["dpctl.fabric.dpctl_gpu_nic"]["applier"]
    assert "role_path ~ '/../../plugins/modules/dpctl_gpu_nic.py'" in applier
    assert "rstrip=false" in applier  # byte for byte
    # no generic file/copy tasks: each costs a Python module run per server
    assert not [t for t in tasks if {"ansible.builtin.copy", "ansible.builtin.file"} & set(t)]


def test_broken_persistent_files_are_named() -> None:
    p = _server_params("dual-arp")
    files = PERSIST.render_persistent(p)
    bond = p["nics"][0]["bond"]
    net = f"etc/systemd/network/60-dpctl-{bond}.network"
    broken = {**files, net: files[net].replace("[Route]", "[Route]\n[Route]")}
    with pytest.raises(ValueError, match=f"{bond}.network: expected one \\[Route\\]"):
        PERSIST.params_from_persistent(broken)
    missing = {
        k: v for k, v in files.items() if not k.endswith(f"{p['nics'][0]['ports'][1]}.network")
    }
    with pytest.raises(ValueError, match=f"{bond}: ports or address missing"):
        PERSIST.params_from_persistent(missing)
    with pytest.raises(ValueError, match="not a networkd line"):
        PERSIST.parse_ini("[Match]\nName eth0\n")


def test_configure_with_root_applies_what_the_files_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configure() writes the files, then plans from them: a hand edit of a file that the
    parameters do not match is what gets applied (until the next configure rewrites it)."""
    p = _server_params("dual-arp")
    nic = p["nics"][0]
    p = {**p, "nics": [nic], "roce": {"enabled": False}}
    applied: list[dict[str, Any]] = []
    monkeypatch.setattr(APPLY, "apply_plan", lambda run, bond, plan, sc: applied.append(plan))
    monkeypatch.setattr(APPLY, "persist", lambda root, want, check: ["persistent (test)"])
    edited = dict(PERSIST.render_persistent(p))
    net = f"etc/systemd/network/60-dpctl-{nic['bond']}.network"
    edited[net] = edited[net].replace(f"Gateway={nic['gateway']}", "Gateway=10.254.0.1")
    monkeypatch.setattr(APPLY, "read_persistent", lambda root: edited)

    def run(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
        if argv[:2] == ["ip", "-j"] and "link" in argv:
            return 0, json.dumps(list(_bare_state(nic)["links"].values())), ""
        return 0, "[]", ""

    with pytest.raises(RuntimeError, match="did not converge"):  # nothing really applied
        APPLY.configure(run, p, check=False, root=str(tmp_path))
    assert any("via 10.254.0.1" in line for line in applied[0]["ip"])
    assert applied[0]["ping"][-1] == "10.254.0.1"


# -- convergence bounds (the flaky host check) ----------------------------------------------
def test_verify_waits_for_convergence_within_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after a configure, checks fail until the planes converge: verify repeats them
    until they pass or settle_s has passed; at the bound the failures are reported."""
    passes: list[float] = []
    now = [0.0]
    results = iter([False, False, True])

    def once(run: Any, p: dict[str, Any], neighbour_timeout: float) -> list[dict[str, Any]]:
        passes.append(neighbour_timeout)
        now[0] += 5.0
        return [{"bond": "gpu1", "check": "peer ping", "ok": next(results), "detail": ""}]

    monkeypatch.setattr(VERIFY, "verify_once", once)
    sleep = lambda s: now.__setitem__(0, now[0] + s)  # noqa: E731
    clock = lambda: now[0]  # noqa: E731
    checks, waited = VERIFY.verify_nics(None, {"settle_s": 60}, sleep, clock)
    assert checks[0]["ok"] and len(passes) == 3 and waited == 21.0
    assert passes == [12.0, 2.0, 2.0]  # the full neighbour wait only on the first pass
    results = iter([False] * 100)
    now[0] = 0.0
    checks, waited = VERIFY.verify_nics(None, {"settle_s": 20}, sleep, clock)
    assert not checks[0]["ok"] and 20.0 <= waited < 30.0  # bounded, then failed


def test_configure_waits_for_the_keepalive_to_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keep-alive shows as `ping` only once setsid's child has exec'd: configure waits
    for what it applied to read back (up to APPLY_SETTLE_S) instead of a fixed 0.2 s."""
    p = _server_params("evpn-mh")
    nic = p["nics"][0]
    p = {**p, "nics": [nic]}
    reads = [0]
    ping = PLAN.keepalive_argv(nic, p["arp_keepalive_s"])

    def read_state(run: Any, nics: Any, control: Any = None) -> dict[str, Any]:
        reads[0] += 1
        from tests.unit.test_hosts import _converged

        state = _converged(p, nic)
        state["pings"] = [ping] if reads[0] >= 4 else [["setsid", "-f", *ping]]
        return state

    monkeypatch.setattr(APPLY, "read_state", read_state)
    now = [0.0]
    sleep = lambda s: now.__setitem__(0, now[0] + s)  # noqa: E731
    assert APPLY.wait_applied(None, p, sleep, lambda: now[0]) == {}
    assert reads[0] == 4
    reads[0] = -1000  # never shows: the leftover is reported at the bound
    now[0] = 0.0
    left = APPLY.wait_applied(None, p, sleep, lambda: now[0])
    assert list(left) == [nic["bond"]] and "keep-alive" in left[nic["bond"]][0]
    assert now[0] >= APPLY.APPLY_SETTLE_S
