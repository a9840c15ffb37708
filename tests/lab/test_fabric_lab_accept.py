"""`dpctl accept` on the embedded lab, per dual-leaf mode: a clean fabric passes three runs in
a row (no false alarm), then six faults injected at once with `dpctl lab impair` are each
named: two fabric cables swapped between spines, a server port cabled to the wrong leaf, a
dead server port, a too-small MTU on one server port, a fabric link that drops everything
in one direction (netem), a leaf-spine link down. Everything is put back at the end.

The file sorts after test_fabric_lab.py: on the shared lab (tests/lab/conftest.py) it runs
once that module has deployed and verified the fabric, and before the hosts module takes the
lab on; run alone, the deploy here brings a fresh lab to the planned state. Cost in the UML
guest (2026-12-06, run alone with other helpers' labs beside it): 32 minutes for both modes,
per mode a deploy, three clean runs of 86-156 s, the faults (each swap waits until LLDP
shows it, 60-100 s), one run of 92-140 s, and the clear.

In the default suite: the faults, in EVPN-MH mode (5.5 minutes on the shared lab in a full
run, 2026-12-07: on the EVPN-MH lab's worker, which finishes before the dual-ARP one).
With DPCTL_LAB_ACCEPT=1: also the three clean runs, and both tests in dual-ARP mode (about 7
minutes a mode run alone, 2026-12-07). Until 2026-12-06 the whole file was opt-in: in two of
four dual-ARP runs the receiving spine's lldpd never took up the port a swap moved into its
namespace (180 s), so the punch list (right for what LLDP showed) said a move and a missing
cable instead of one swap. `lab impair --swap` now restarts the lldpd of the nodes whose
ports moved (controller/lab/scripts.py ``lldpd_restart_script``), and a swap shows in LLDP
in 5-16 s (24 swaps and clears in a row, 2026-12-07); the test asserts it settled.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

from controller.accept import judge
from controller.accept.run import accept
from controller.deploy import deploy
from controller.lab import impair
from controller.traffic_ansible import AnsibleTraffic
from controller.verify import verify
from tests.conftest import run_cli
from tests.lab.conftest import Lab

pytestmark = [pytest.mark.lab]

ALL = os.environ.get("DPCTL_LAB_ACCEPT") == "1"
"""Run the three clean runs, and EVPN-MH mode, too (CI's budget: DPCTL_LAB_ACCEPT=1)."""


def only_when_asked(lab: Lab, default_modes: tuple[str, ...]) -> None:
    if not ALL and lab.mode not in default_modes:
        pytest.skip(f"CI's budget: {lab.mode} runs this with DPCTL_LAB_ACCEPT=1")


FAULTS: list[tuple[str, ...]] = [
    ("--swap", "p1-spine1:swp1", "p1-spine2:swp1"),
    ("--swap", "p2-g1-leaf1:swp2", "p2-g1-leaf2:swp2"),
    ("srv0001:nic2p1", "--down"),
    ("srv0001:nic1p1", "--mtu", "1500"),
    ("p2-g1-leaf2:swp3", "--loss", "100", "--one-way"),
    ("p2-g1-leaf1:swp4", "--down"),
]


def failing(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["status"] == "fail"]


def test_accept_clean_lab_three_runs_no_false_alarm(lab: Lab) -> None:
    only_when_asked(lab, ())
    outcomes = deploy(lab.fabric, lab.access, lab.state)
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}
    for run in range(3):
        report = accept(lab.fabric, lab.access, lab.state)
        bad = [(f.element, f.what) for f in report.failures()]
        print(f"{lab.mode} clean run {run + 1}: {report.seconds:.0f} s {report.phases}")
        assert report.ok, f"run {run + 1}: {bad}"
        assert report.probes["total"] == 20
        assert {f.status for f in report.findings} <= {"pass", "skip"}


def named(rows: list[dict[str, Any]], stage: str, element: str, *words: str) -> bool:
    return any(
        r["stage"] == stage and r["element"] == element and all(w in r["what"] for w in words)
        for r in rows
    )


def test_accept_names_each_injected_fault(lab: Lab) -> None:
    only_when_asked(lab, ("evpn-mh",))
    # the planned state: a no-change deploy on the shared lab, a first one run alone
    outcomes = deploy(lab.fabric, lab.access, lab.state)
    assert all(o.ok for o in outcomes.values()), {n: o.error for n, o in outcomes.items()}
    # the servers' own LLDP, through the lab and through Ansible (a real fabric's way): the
    # same neighbours, each server port seeing its planned leaf port
    servers = sorted(lab.fabric.server_by_name)
    by_lab = lab.access.traffic.read_lldp(lab.fabric, lab.state, servers)
    by_ansible = AnsibleTraffic(lab.access.servers).read_lldp(lab.fabric, lab.state, servers)
    assert by_lab == by_ansible and set(by_lab) == set(servers), (by_lab, by_ansible)
    clean = judge.server_lldp_findings(lab.fabric, None, by_lab)
    assert clean and all(r.status == "pass" for r in clean), [r.what for r in clean]
    intent = str(lab.intent)
    try:
        for fault in FAULTS:
            result = run_cli("lab", "impair", "-f", intent, *fault, "--json")
            assert result.exit_code == 0, result.output
            said = json.loads(result.stdout)["impaired"]
            assert not any("did not show" in line for line in said), said  # LLDP settled
        status = json.loads(run_cli("lab", "status", "-f", intent, "--json").stdout)
        assert len(status["impaired"]) == len(FAULTS)
        result = run_cli("accept", "-f", intent, "--json")
        assert result.exit_code == 1, result.output
        report = json.loads(result.stdout)
        print(f"{lab.mode} faults: {report['seconds']} s {report['phases']}")
        rows = failing(report)
        punch = [a["text"] for a in report["punch_list"]]
        # two fabric cables swapped between spines: one swap, said at the leaf
        spines = "swap the cables in p1-g1-leaf1:swp3 and p1-g1-leaf1:swp4"
        assert any(t.startswith(spines) for t in punch), punch
        # a server port cabled to the wrong leaf: one swap of srv0002's two plane-2 cables
        server = ("swap", "srv0002:nic1p2", "srv0002:nic2p2")
        assert any(all(w in t for w in server) for t in punch), punch
        # ... and seen so from the server's side too (its own lldpd)
        seen = "srv0002:nic1p2's LLDP sees p2-g1-leaf2:swp2, planned p2-g1-leaf1:swp2"
        assert any(r["stage"] == "cabling" and r["what"] == seen for r in rows), [
            r["what"] for r in rows if r["stage"] == "cabling"
        ]
        # a dead server port: its leaf port is down, the cable not seen, the port itself down
        assert named(rows, "links", "p1-g1-leaf2:swp1", "link down (to srv0001:nic2p1)")
        assert named(rows, "links", "srv0001:nic2p1", "server port link down")
        # a too-small MTU on a server port: its full-size frames cannot leave, localised to it
        assert named(rows, "links", "srv0001:nic1p1", "server port MTU 1500, planned 9000")
        flow = "srv0001 -> srv0002 rail 1 via nic1p1"
        assert named(rows, "traffic", flow, "could not leave srv0001:nic1p1")
        assert any(
            r["stage"] == "localisation"
            and r["element"] == "srv0001:nic1p1 - p1-g1-leaf1:swp1"
            and "MTU" in r["fix"]
            for r in rows
        ), [r for r in rows if r["stage"] == "localisation"]
        # one direction of a fabric cable drops everything: the direction is named
        cable = "p2-g1-leaf2:swp3 - p2-spine1:swp2"
        assert named(rows, "traffic", cable, "p2-g1-leaf2:swp3 -> p2-spine1:swp2 drops everything")
        # a leaf-spine link down
        assert named(rows, "links", "p2-g1-leaf1:swp4", "admin down")
        assert named(rows, "links", "p2-spine2:swp1", "link down")
        # nothing else is blamed: every failing row names an element of an injected fault
        involved = (
            "p1-g1-leaf1:swp3",
            "p1-g1-leaf1:swp4",
            "p1-spine1:swp1",
            "p1-spine2:swp1",
            "srv0002:nic1p2",
            "srv0002:nic2p2",
            "srv0001:nic2p1",
            "srv0001:nic1p1",
            "p2-g1-leaf2:swp3",
            "p2-g1-leaf1:swp4",
            "p2-spine2:swp1",
            "p1-g1-leaf1:swp1",
            "p1-g1-leaf2:swp1",
            "p2-g1-leaf1:swp2",
            "p2-g1-leaf2:swp2",
            "via nic1p2",
            "via nic2p2",
            "via nic1p1",
            "via nic2p1",
        )
        stray = [r for r in rows if not any(e in r["element"] or e in r["what"] for e in involved)]
        assert not stray, stray
    finally:
        cleared = run_cli("lab", "impair", "-f", intent, "--clear")
        assert cleared.exit_code == 0, cleared.output
        assert impair.load(lab.state_dir).describe() == []
    # put back as planned: the next tests take this lab on (a swap once left two spine ports
    # without their RoCE qdiscs, and the hosts module's verify failed on roce-ecn)
    deadline = time.monotonic() + 120
    while (bad := [c for c in verify(lab.fabric, lab.access, lab.state) if not c.ok]) and (
        time.monotonic() < deadline
    ):
        time.sleep(5)
    assert not bad, [c.to_dict() for c in bad]
