"""dpctl against a containerlab deployment, end to end as far as this machine allows.

containerlab cannot run here (no Docker daemon: see test_clab_runtime.py), so its nodes are
stood in for by tests/clab_harness.py: namespaces cabled by the exported topology, each node
started from its image's own Dockerfile steps and ``dpctl-start`` (FRR, lldpd, sshd with the
deployment's keys). dpctl then runs from a namespace on the management bridge, as it would
on the containerlab host, with containerlab's ``topology-data.json`` (the fixture in
containerlab's format) beside the topology: ``--target`` auto picks the deployment, which
reaches every switch and server by its management address with the deployment's key and
known hosts. A real commit cannot run here: this kernel lacks VLAN devices and the prio qdisc
the rendered configs use (they run in the embedded lab's guest), so deploy runs as a dry
run (every switch reached, frr-reload.py --test inside it, the difference reported).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.clab_harness import standin
from tests.conftest import INVENTORY, ROOT, run_cli

pytestmark = pytest.mark.frr

NEEDS = ("/usr/lib/frr/frrinit.sh", "/usr/sbin/sshd", "/usr/sbin/lldpd", "/usr/bin/vtysh")
MISSING = [path for path in NEEDS if not Path(path).exists()]
INTENT = INVENTORY / "lab-dual-arp.yaml"
FIXTURE = ROOT / "tests" / "ref" / "containerlab" / "topology-data.lab-dual-arp.json"

if os.geteuid() != 0 or MISSING or shutil.which("unshare") is None:
    pytest.skip(
        f"needs root, unshare and Debian's frr, openssh-server, lldpd (missing: {MISSING})",
        allow_module_level=True,
    )


def dpctl(*args: str) -> list[str]:
    return [sys.executable, "-c", "from controller.cli import main; main()", *args]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("clab")
    topology = work / "labs" / "lab-dual-arp.clab.yml"
    assert run_cli("lab", "export", "-f", str(INTENT), "-o", str(topology)).exit_code == 0
    lab = topology.parent / "clab-lab-dual-arp"
    lab.mkdir()
    shutil.copy(FIXTURE, lab / "topology-data.json")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DPCTL_CLAB_TOPOLOGY": str(topology),
        "DPCTL_LAB_DIR": str(work / "no-embedded-lab"),
        "DPCTL_STATE_DIR": str(work / "state"),
        "SSH_AUTH_SOCK": "",
    }
    env.pop("CLAB_LABDIR_BASE", None)
    with standin(topology) as running:
        yield running, env, work


def test_deploy_dry_run_reaches_every_switch(deployment) -> None:  # type: ignore[no-untyped-def]
    running, env, work = deployment
    result = running.run(dpctl("deploy", "-f", str(INTENT), "--dry-run", "--json"), env, work)
    body = json.loads(result.stdout)
    assert body["target"]["source"] == "containerlab", body
    assert "clab-lab-dual-arp" in body["target"]["where"]
    devices = body["devices"]
    assert len(devices) == 8
    for name, outcome in devices.items():
        assert outcome["ok"], (name, outcome, running.log(name)[-400:])
        # a factory-empty FRR: the candidate's BGP is all new, seen by frr-reload.py --test
        assert outcome["changed"] and "router bgp" in outcome["diff"], name
    assert result.returncode == 0


def test_verify_reads_every_switch_and_lldp(deployment) -> None:  # type: ignore[no-untyped-def]
    """Nothing is configured (deploy ran dry): BGP is down, so verify fails, but it read each
    switch's state over SSH, and the cabling lldpd sees is the plan's (lldpd sends every 30 s:
    a node that started after its neighbour's first LLDPDU hears it on the next one)."""
    running, env, work = deployment
    deadline = time.monotonic() + 75
    while True:
        result = running.run(dpctl("verify", "-f", str(INTENT), "--json"), env, work)
        body = json.loads(result.stdout)
        lldp = [c for c in body["checks"] if c["check"] == "lldp-cabling"]
        if all(c["ok"] for c in lldp) or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert body["target"]["source"] == "containerlab"
    unreachable = [c for c in body["checks"] if "unreachable" in json.dumps(c).lower()]
    assert unreachable == []
    assert result.returncode == 1 and not body["ok"]
    assert {c["device"] for c in lldp} == set(running.nodes) - {"srv0001", "srv0002"}
    assert all(c["ok"] for c in lldp), [c for c in lldp if not c["ok"]][:3]


def test_text_output_names_the_target(deployment) -> None:  # type: ignore[no-untyped-def]
    running, env, work = deployment
    result = running.run(
        dpctl("deploy", "-f", str(INTENT), "--dry-run", "-d", "p1-spine1"), env, work
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "target: containerlab (the containerlab deployment" in result.stdout


def test_hosts_reach_every_server_with_the_key(deployment) -> None:  # type: ignore[no-untyped-def]
    """Ansible logs in to each server container by its management address, strict host key
    from the deployment's known_hosts (the servers' NIC checks fail: nothing configured)."""
    running, env, work = deployment
    result = running.run(
        dpctl("hosts", "verify", "-f", str(INTENT), "--json"), env, work, timeout=300
    )
    body = json.loads(result.stdout)
    assert body["target"]["source"] == "containerlab"
    for name, host in body["hosts"].items():
        assert not host["unreachable"], (name, host)


def test_a_wrong_key_is_refused(deployment, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The nodes take the deployment's key only: another key is refused."""
    running, env, work = deployment
    keys = work / "labs" / "lab-dual-arp.clab-keys"
    saved = (keys / "id_ed25519").read_bytes(), (keys / "id_ed25519.pub").read_bytes()
    try:
        (keys / "id_ed25519").unlink()
        (keys / "id_ed25519.pub").unlink()
        assert (
            run_cli(
                "lab",
                "export",
                "-f",
                str(INTENT),
                "-o",
                str(work / "labs" / "lab-dual-arp.clab.yml"),
            ).exit_code
            == 0
        )
        result = running.run(
            dpctl("deploy", "-f", str(INTENT), "--dry-run", "-d", "p1-spine1", "--json"), env, work
        )
        body = json.loads(result.stdout)
        assert result.returncode != 0
        assert (
            "Authentication failed" in json.dumps(body)
            or "authentication" in json.dumps(body).lower()
        )
    finally:
        (keys / "id_ed25519").write_bytes(saved[0])
        (keys / "id_ed25519.pub").write_bytes(saved[1])
        os.chmod(keys / "id_ed25519", 0o600)
