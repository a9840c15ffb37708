"""containerlab topologies: the kind the intent's platform runs on (or a refusal saying why),
every node and cable of the plan under the names its node gives each port, the inventory's
management addresses, the deployment's credentials (never a password), and containerlab's
own schema (vendored in tests/ref/containerlab with its SOURCE)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import paramiko
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from controller.clab import deploy, interface_names, render, switch_kind, vs_interface, vs_port
from controller.clab.kinds import VS_PORTS, linux_misfit
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import load_intent
from tests.conftest import INVENTORY, ROOT, run_cli, run_json

REF = ROOT / "tests" / "ref" / "containerlab"
SCHEMA = REF / "clab.schema.json"
LAB_FABRICS = ["lab-dual-arp", "lab-evpn-mh"]
EXAMPLES = INVENTORY / "examples"
# every CX732Q-N and CX864E-N example but the 16,384-GPU ones (same port layout as the seed's
# 2,048-GPU CX864E-N fabric, 8x the nodes): each switch model, both dual-leaf modes
MODEL_EXAMPLES = [
    "cx732q-256-dual-arp",
    "cx732q-256-evpn-mh",
    "seed-2048-cx864e-dual-arp",
    "seed-2048-cx864e-evpn-mh",
]


def load_schema() -> dict[str, object]:
    """containerlab's schema, with its Unicode classes \\p{N}\\p{L} (Go regexp syntax, used only
    in the IPv6 zone pattern) written as Python's \\w so Python's re can compile them."""
    text = SCHEMA.read_text().replace(r"\\p{N}\\p{L}", r"\\w")
    schema: dict[str, object] = json.loads(text)
    return schema


def schema_errors(topo: dict[str, Any]) -> list[str]:
    schema = load_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(topo)]


def with_platform(name: str, platform: str, tmp_path: Path) -> Path:
    """An example intent with another platform (the same switches and cabling)."""
    text = (EXAMPLES / f"{name}.yaml").read_text()
    intent = tmp_path / f"{name}-{platform}.yaml"
    intent.write_text(re.sub(r"(?m)^platform: \w+$", f"platform: {platform}", text))
    return intent


def fabric_of(intent: Path) -> Fabric:
    return build_fabric(load_intent(intent))


def test_schema_check_catches_a_broken_topology() -> None:
    topo = yaml.safe_load((ROOT / "labs" / "lab-dual-arp.clab.yml").read_text())
    assert schema_errors(topo) == []
    topo["topology"]["nodes"]["srv0001"]["kind"] = "no-such-kind"
    assert schema_errors(topo)


@pytest.mark.parametrize("kind", ["auto", "linux"])
@pytest.mark.parametrize("name", LAB_FABRICS)
def test_export_is_the_cabling_plan(name: str, kind: str, tmp_path: Path) -> None:
    fabric = fabric_of(INVENTORY / f"{name}.yaml")
    out = tmp_path / f"{name}.clab.yml"
    code, body = run_json(
        "lab", "export", "-f", str(INVENTORY / f"{name}.yaml"), "--kind", kind, "-o", str(out)
    )
    assert code == 0, body
    assert body["kind"] == "linux" and body["platform"] == "frr"
    assert body["nodes"] == len(fabric.switches) + len(fabric.servers)
    topo = yaml.safe_load(out.read_text())
    nodes = topo["topology"]["nodes"]
    assert set(nodes) == {s.name for s in fabric.switches} | {s.name for s in fabric.servers}
    for switch in fabric.switches:
        node = nodes[switch.name]
        assert (node["kind"], node["image"]) == ("linux", "dpctl/frr-switch:bookworm")
        assert node["mgmt-ipv4"] == switch.mgmt_ip
        assert node["labels"]["dpctl-role"] == switch.role
    for server in fabric.servers:
        node = nodes[server.name]
        assert (node["kind"], node["image"]) == ("linux", "dpctl/gpu-server:bookworm")
        assert node["mgmt-ipv4"] == server.mgmt_ip
    assert topo["mgmt"] == {
        "network": f"dpctl-{name}",
        "ipv4-subnet": str(fabric.intent.addressing.management),
        "ipv4-gw": fabric.mgmt_gateway,
    }
    links = topo["topology"]["links"]
    endpoints = Counter(ep for link in links for ep in link["endpoints"])
    assert max(endpoints.values()) == 1, "an endpoint is used twice"
    # a Linux node's interfaces carry the plan's own port names, cable for cable
    assert [link["endpoints"] for link in links] == [
        [f"{lk.a_device}:{lk.a_port}", f"{lk.z_device}:{lk.z_port}"] for lk in fabric.links
    ]
    assert schema_errors(topo) == []


@pytest.mark.parametrize("name", MODEL_EXAMPLES)
def test_every_port_of_the_model_examples_on_linux_nodes(name: str, tmp_path: Path) -> None:
    """platform frr on CX732Q-N / CX864E-N: every port of every node is an interface of its
    plan name, every cable is there once, and the file is valid containerlab."""
    intent = with_platform(name, "frr", tmp_path)
    fabric = fabric_of(intent)
    out = tmp_path / "topo.clab.yml"
    code, body = run_json("lab", "export", "-f", str(intent), "-o", str(out))
    assert code == 0, body
    topo = yaml.safe_load(out.read_text())
    used = Counter(ep for link in topo["topology"]["links"] for ep in link["endpoints"])
    plan = Counter(
        f"{d}:{p}"
        for lk in fabric.links
        for d, p in ((lk.a_device, lk.a_port), (lk.z_device, lk.z_port))
    )
    assert used == plan and max(used.values()) == 1
    assert all(linux_misfit(ep.split(":", 1)[1]) is None for ep in used)
    assert schema_errors(topo) == []


@pytest.mark.parametrize("name", ["cx732q-256-dual-arp", "seed-2048-cx864e-dual-arp"])
def test_every_port_of_the_model_examples_against_the_sonic_rule(name: str, tmp_path: Path) -> None:
    """platform sonic on CX732Q-N / CX864E-N: each plan port EthernetN is placed by its number
    (eth<N/4+1>, the SONiC VS SKU's), never by its rank (the old export put CX732Q-N's
    Ethernet136 on eth34, which the VM calls Ethernet132); a port the SKU lacks refuses the
    export, which names them all: counted here independently of the module."""
    intent = with_platform(name, "sonic", tmp_path)
    fabric = fabric_of(intent)
    ports = {
        (d, p)
        for lk in fabric.links
        for d, p in ((lk.a_device, lk.a_port), (lk.z_device, lk.z_port))
        if d in fabric.switch_by_name
    }
    off_grid = set()
    for device, port in ports:
        number = int(port.removeprefix("Ethernet"))
        expected = f"eth{number // 4 + 1}" if number % 4 == 0 and number < 4 * VS_PORTS else None
        assert vs_interface(port) == expected, (device, port)
        if expected is None:
            off_grid.add((device, port))
        else:
            assert vs_port(expected) == port
    assert off_grid, "these models use ports beyond the VS SKU's 32"
    out = tmp_path / "topo.clab.yml"
    result = run_cli("lab", "export", "-f", str(intent), "-o", str(out))
    assert result.exit_code != 0
    message = " ".join(result.output.split())
    assert f"{len(off_grid)} plan ports have no interface on a SONiC VM" in message
    assert "Force10-S6000" in message and "eth2 = Ethernet4" in message
    assert not out.exists() and not (tmp_path / f"{fabric.intent.name}.clab-keys").exists()


@given(st.integers(min_value=0, max_value=1024))
def test_sonic_rule_is_the_vs_lane_map(number: int) -> None:
    """Ethernet<N> is on eth<N/4+1> exactly when N is a port of the VS SKU, and back."""
    iface = vs_interface(f"Ethernet{number}")
    if number % 4 == 0 and number // 4 < VS_PORTS:
        assert iface == f"eth{number // 4 + 1}" and vs_port(iface) == f"Ethernet{number}"
    else:
        assert iface is None
    assert vs_port(f"eth{number}") == (
        f"Ethernet{(number - 1) * 4}" if 1 <= number <= VS_PORTS else None
    )


def sonic_fabric_that_fits() -> Fabric:
    """lab-dual-arp's plan with SONiC port names on the VS grid (swp<k> -> Ethernet<4(k-1)>,
    aux1 -> Ethernet16): a SONiC fabric whose every port a SONiC VM has."""
    fabric = fabric_of(INVENTORY / "lab-dual-arp.yaml")
    names = {f"swp{k}": f"Ethernet{4 * (k - 1)}" for k in range(1, 5)} | {"aux1": "Ethernet16"}
    switches = set(fabric.switch_by_name)

    def rename(device: str, port: str) -> str:
        return names[port] if device in switches else port

    links = tuple(
        dataclasses.replace(
            lk, a_port=rename(lk.a_device, lk.a_port), z_port=rename(lk.z_device, lk.z_port)
        )
        for lk in fabric.links
    )
    intent = fabric.intent.model_copy(update={"platform": "sonic"})
    return dataclasses.replace(fabric, intent=intent, links=links)


def test_sonic_vm_export_when_every_port_fits(tmp_path: Path) -> None:
    fabric = sonic_fabric_that_fits()
    topo = yaml.safe_load(render(fabric, "auto", tmp_path / "x.clab.yml"))
    assert schema_errors(topo) == []
    nodes = topo["topology"]["nodes"]
    leaf = nodes["p1-g1-leaf1"]
    assert leaf["kind"] == "sonic-vm" and leaf["image"].startswith("vrnetlab/sonic_sonic-vs:")
    assert "binds" not in leaf, "a VM gets the key from containerlab, not a bind"
    assert nodes["srv0001"]["binds"] == ["lab-dual-arp.clab-keys/node:/etc/dpctl/ssh:ro"]
    mapping = dict(pair.split("=") for pair in leaf["labels"]["dpctl-ports"].split(","))
    assert mapping == {
        "eth1": "Ethernet0",
        "eth2": "Ethernet4",
        "eth3": "Ethernet8",
        "eth4": "Ethernet12",
        "eth5": "Ethernet16",
    }
    for link in topo["topology"]["links"]:
        for endpoint in link["endpoints"]:
            device, iface = endpoint.split(":")
            if device in fabric.switch_by_name:
                assert mapping_of(nodes[device])[iface] == vs_port(iface)
    assert interface_names(fabric, switch_kind("sonic"))["p1-g1-leaf1"]["Ethernet16"] == "eth5"


def mapping_of(node: dict[str, Any]) -> dict[str, str]:
    return dict(pair.split("=") for pair in node["labels"]["dpctl-ports"].split(","))


@pytest.mark.parametrize(
    ("name", "args", "where", "words"),
    [
        ("lab-dual-arp", ["--kind", "sonic-vs"], "--kind", ["no sshd", "systemd", "`bgp`"]),
        ("lab-dual-arp", ["--kind", "sonic-vm"], "--kind", ["does not run platform frr"]),
        ("lab-dual-arp", ["--kind", "ceos"], "--kind", ["unknown kind 'ceos'"]),
        ("examples/cx732q-256-dual-arp", [], "platform", ["AsterNOS has no public", "frr"]),
        ("examples/seed-2048-cx864e-evpn-mh", [], "platform", ["AsterNOS has no public"]),
    ],
)
def test_refusals_say_why_and_write_nothing(
    name: str, args: list[str], where: str, words: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "t.clab.yml"
    code, body = run_json(
        "lab", "export", "-f", str(INVENTORY / f"{name}.yaml"), *args, "-o", str(out)
    )
    assert code != 0 and body["ok"] is False
    assert body["error"]["where"] == where
    for word in words:
        assert word in body["error"]["reason"]
    assert list(tmp_path.iterdir()) == []


def test_export_writes_the_deployment_keys(tmp_path: Path) -> None:
    fabric = fabric_of(INVENTORY / "lab-dual-arp.yaml")
    out = tmp_path / "labs" / "lab-dual-arp.clab.yml"
    code, body = run_json(
        "lab", "export", "-f", str(INVENTORY / "lab-dual-arp.yaml"), "-o", str(out)
    )
    assert code == 0
    keys = tmp_path / "labs" / "lab-dual-arp.clab-keys"
    assert body["keys"] == str(keys)
    assert (keys / ".gitignore").read_text().splitlines()[-1] == "*"
    for secret in (keys / "id_ed25519", keys / "node" / "ssh_host_ed25519_key"):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        paramiko.Ed25519Key.from_private_key_file(str(secret))  # a key paramiko logs in with
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    client_pub = (keys / "id_ed25519.pub").read_text()
    assert (keys / "node" / "authorized_keys").read_text() == client_pub
    host = (keys / "node" / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    known = [line.split() for line in (keys / "known_hosts").read_text().splitlines()]
    everyone = [s.mgmt_ip for s in fabric.switches] + [s.mgmt_ip for s in fabric.servers]
    assert known == [[ip, *host] for ip in everyone]
    text = out.read_text()
    assert "password" not in text.lower() and "PRIVATE KEY" not in text
    # a second export (a changed plan) keeps the keys of a running deployment
    before = (
        (keys / "id_ed25519").read_bytes(),
        (keys / "node" / "ssh_host_ed25519_key").read_bytes(),
    )
    assert (
        run_cli(
            "lab", "export", "-f", str(INVENTORY / "lab-dual-arp.yaml"), "-o", str(out)
        ).exit_code
        == 0
    )
    after = (
        (keys / "id_ed25519").read_bytes(),
        (keys / "node" / "ssh_host_ed25519_key").read_bytes(),
    )
    assert before == after


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_keys_are_openssh_keys(tmp_path: Path) -> None:
    out = tmp_path / "lab-dual-arp.clab.yml"
    assert (
        run_cli(
            "lab", "export", "-f", str(INVENTORY / "lab-dual-arp.yaml"), "-o", str(out)
        ).exit_code
        == 0
    )
    keys = tmp_path / "lab-dual-arp.clab-keys"
    derived = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(keys / "id_ed25519")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert derived == (keys / "id_ed25519.pub").read_text().split()[:2]


def test_export_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, body = run_json("lab", "export", "-f", str(INVENTORY / "lab-dual-arp.yaml"))
    assert code == 0 and body["out"] == "labs/lab-dual-arp.clab.yml"
    assert (tmp_path / "labs" / "lab-dual-arp.clab.yml").exists()
    assert (tmp_path / "labs" / "lab-dual-arp.clab-keys" / "id_ed25519").exists()


def test_committed_lab_topologies_are_current() -> None:
    """labs/<fabric>.clab.yml are committed (their keys are made by each user's export)."""
    for name in LAB_FABRICS:
        fabric = fabric_of(INVENTORY / f"{name}.yaml")
        committed = ROOT / "labs" / f"{name}.clab.yml"
        assert committed.read_bytes() == render(fabric), f"{committed} is stale: re-export it"


@pytest.mark.skipif(
    shutil.which("containerlab") is not None, reason="containerlab is installed here"
)
def test_deploy_without_containerlab_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(DpctlError, match="containerlab is not installed"):
        deploy(tmp_path / "x.clab.yml")
