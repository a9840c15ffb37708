"""The containerlab target: containerlab's topology-data.json (a fixture in containerlab's own
format, tests/ref/containerlab) read and checked against the inventory, the FabricAccess it
gives, and the edge's choice between the embedded lab, a containerlab deployment and the
intent's credentials (`--target`)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from controller.access import AccessError
from controller.clab import ClabError
from controller.clab_access import SERVER_CONFIG_ROOT, containerlab_access
from controller.cli.reach import fabric_access
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.traffic_ansible import AnsibleTraffic
from tests.conftest import INVENTORY, ROOT, run_cli, run_json

REF = ROOT / "tests" / "ref" / "containerlab"
FIXTURE = REF / "topology-data.lab-dual-arp.json"
INTENT = INVENTORY / "lab-dual-arp.yaml"


@pytest.fixture
def deployed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lab-dual-arp exported to tmp/labs and 'deployed': containerlab's topology data in
    clab-lab-dual-arp/ beside the topology file; no embedded lab, no Docker answering."""
    topology = tmp_path / "labs" / "lab-dual-arp.clab.yml"
    assert run_cli("lab", "export", "-f", str(INTENT), "-o", str(topology)).exit_code == 0
    lab = topology.parent / "clab-lab-dual-arp"
    lab.mkdir()
    shutil.copy(FIXTURE, lab / "topology-data.json")
    monkeypatch.setenv("DPCTL_CLAB_TOPOLOGY", str(topology))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-embedded-lab"))
    monkeypatch.delenv("CLAB_LABDIR_BASE", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")  # no docker client: the file is all there is
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")  # what a credentials target would read
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    return topology


def edit_data(topology: Path, change: Any) -> None:
    path = topology.parent / "clab-lab-dual-arp" / "topology-data.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_fixture_has_the_fields_of_containerlabs_template() -> None:
    """Every node of the fixture has exactly the keys auto.tmpl writes for a node."""
    template = (REF / "auto.tmpl").read_text()
    node_block = template[template.index('"index"') : template.index('"port-bindings"')]
    keys = set(re.findall(r'"([a-z0-9-]+)":', node_block)) | {"port-bindings"}
    data = json.loads(FIXTURE.read_text())
    assert {"name", "type", "clab", "ssh-pub-keys", "nodes", "links"} == set(data)
    for node in data["nodes"].values():
        assert set(node) == keys


def test_access_from_the_deployment(deployed: Path) -> None:
    fabric = build_fabric(load_intent(INTENT))
    access = fabric_access(fabric)
    keys = deployed.parent / "lab-dual-arp.clab-keys"
    assert access.source == "containerlab"
    assert str(deployed.parent / "clab-lab-dual-arp") in access.where
    assert access.switches.username == "root" and access.switches.password is None
    assert access.switches.optional_args == {
        "key_file": str(keys / "id_ed25519"),
        "known_hosts": str(keys / "known_hosts"),
    }
    assert access.switches.lab and access.servers.lab, "a lab's access: no refuse_virtual"
    assert access.servers.user == "root"
    assert access.servers.key_file == str(keys / "id_ed25519")
    assert access.servers.known_hosts == str(keys / "known_hosts")
    assert access.servers.jump_host is None
    assert access.servers.config_root == SERVER_CONFIG_ROOT
    assert isinstance(access.traffic, AnsibleTraffic)
    explicit = fabric_access(fabric, "containerlab")
    assert (explicit.switches, explicit.servers, explicit.where) == (
        access.switches,
        access.servers,
        access.where,
    )


def test_explicit_targets(deployed: Path) -> None:
    fabric = build_fabric(load_intent(INTENT))
    with pytest.raises(AccessError, match="the embedded lab of lab-dual-arp is not running"):
        fabric_access(fabric, "embedded")
    creds = fabric_access(fabric, "credentials")  # refused when used (refuse_virtual)
    assert creds.source == "credentials" and not creds.switches.lab
    with pytest.raises(AccessError, match="unknown target 'lab'"):
        fabric_access(fabric, "lab")


def test_no_deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    monkeypatch.setenv("DPCTL_CLAB_TOPOLOGY", str(tmp_path / "labs" / "lab-dual-arp.clab.yml"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-embedded-lab"))
    fabric = build_fabric(load_intent(INTENT))
    assert containerlab_access(fabric) is None
    with pytest.raises(AccessError, match="no running containerlab deployment of lab-dual-arp"):
        fabric_access(fabric, "containerlab")
    assert fabric_access(fabric).source == "credentials"


def test_a_real_fabric_goes_to_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPCTL_CLAB_TOPOLOGY", str(tmp_path / "none.clab.yml"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-embedded-lab"))
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used-here")
    fabric = build_fabric(load_intent(INVENTORY / "examples" / "cx732q-256-dual-arp.yaml"))
    access = fabric_access(fabric)
    assert (access.source, access.where) == ("credentials", "the intent's credentials")
    assert not access.switches.lab


def test_lab_fabric_with_neither_is_refused_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPCTL_CLAB_TOPOLOGY", str(tmp_path / "none.clab.yml"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "no-embedded-lab"))
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    code, body = run_json("deploy", "-f", str(INTENT), "--dry-run")
    assert code != 0
    assert "is a lab fabric (VLAB-4 switches exist only in the embedded lab)" in json.dumps(body)


def test_explicit_credentials_on_a_lab_fabric(
    deployed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--target credentials skips the deployment: a lab fabric is then refused as before."""
    monkeypatch.chdir(deployed.parent)
    code, body = run_json("deploy", "-f", str(INTENT), "--target", "credentials", "--dry-run")
    assert code != 0 and "is a lab fabric" in json.dumps(body)
    code, body = run_json("deploy", "-f", str(INTENT), "--target", "nowhere")
    assert code != 0 and body["error"]["where"] == "--target"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["nodes"].pop("p1-spine1"), "lacks 1 nodes of lab-dual-arp (p1-spine1)"),
        (
            lambda d: d["nodes"]["srv0002"].update({"mgmt-ipv4-address": "172.30.0.99"}),
            "srv0002 at 172.30.0.99 (inventory: 172.30.0.11)",
        ),
        (lambda d: d.update({"name": "other"}), "is lab 'other', not fabric lab-dual-arp"),
        (lambda d: d.pop("nodes"), "no `nodes` object"),
        (lambda d: d["nodes"]["p1-spine2"].pop("mgmt-ipv4-address"), "no mgmt-ipv4-address"),
    ],
)
def test_a_deployment_that_does_not_match_the_inventory(
    deployed: Path, change: Any, words: str
) -> None:
    edit_data(deployed, change)
    fabric = build_fabric(load_intent(INTENT))
    with pytest.raises(ClabError) as caught:
        fabric_access(fabric)
    assert words in str(caught.value.reason) + str(caught.value.where)


def test_unreadable_topology_data(deployed: Path) -> None:
    (deployed.parent / "clab-lab-dual-arp" / "topology-data.json").write_text("{not json")
    with pytest.raises(ClabError, match="cannot read containerlab's topology data"):
        fabric_access(build_fabric(load_intent(INTENT)))


def test_missing_key_says_how_it_is_made(deployed: Path) -> None:
    (deployed.parent / "lab-dual-arp.clab-keys" / "id_ed25519").unlink()
    with pytest.raises(ClabError, match="made by `dpctl lab export`"):
        fabric_access(build_fabric(load_intent(INTENT)))


def test_labdir_base_is_honoured(
    deployed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLAB_LABDIR_BASE moves containerlab's lab folder (types/topo_paths.go): dpctl follows."""
    base = tmp_path / "elsewhere"
    base.mkdir()
    shutil.move(str(deployed.parent / "clab-lab-dual-arp"), base)
    fabric = build_fabric(load_intent(INTENT))
    assert containerlab_access(fabric) is None
    monkeypatch.setenv("CLAB_LABDIR_BASE", str(base))
    access = containerlab_access(fabric)
    assert access is not None and str(base) in access.where


def fake_docker(tmp_path: Path, output: str, code: int = 0) -> Path:
    """A `docker` client standing in for a daemon that answers (none runs here): prints
    ``output`` for `docker ps` and exits ``code``; it records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "docker"
    script.write_text(
        f'#!/bin/sh\necho "$@" > {tmp_path}/docker-args\nprintf "{output}"\nexit {code}\n'
    )
    script.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(
    ("output", "code", "found"),
    [("", 0, False), ("3f2a9c1b7d4e\\n", 0, True), ("", 1, True)],
    ids=["daemon-says-none-run", "daemon-lists-containers", "daemon-unreachable"],
)
def test_docker_decides_when_it_answers(
    deployed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    output: str,
    code: int,
    found: bool,
) -> None:
    """A destroyed lab's folder stays (destroy without --cleanup): when Docker answers that no
    container of the lab runs, the deployment is not used; when it cannot answer, the
    topology data is all dpctl has, and it is used."""
    monkeypatch.setenv("PATH", str(fake_docker(tmp_path, output, code)))
    fabric = build_fabric(load_intent(INTENT))
    access = containerlab_access(fabric)
    assert (access is not None) == found
    args = (tmp_path / "docker-args").read_text().split()
    assert args == ["ps", "-q", "--filter", "label=containerlab=lab-dual-arp"]
