"""`dpctl generate` and the example intents."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from controller.generator import build_fabric
from controller.intent import intent_from_data, load_intent
from tests.conftest import INVENTORY, run_cli, run_json

EXAMPLES = [
    *sorted((INVENTORY / "examples").glob("*.yaml")),
    INVENTORY / "fabric.yaml",
    INVENTORY / "lab-dual-arp.yaml",
    INVENTORY / "lab-evpn-mh.yaml",
]
FILES = {"hosts.yaml", "groups.yaml", "defaults.yaml", "cabling.csv", "bom.csv", "fabric.json"}


def test_examples_cover_the_required_fabrics() -> None:
    names = {p.name for p in EXAMPLES}
    for needle in ("seed-2048", "16384", "cx732q-256"):
        modes = {load_intent(p).dual_leaf_mode for p in EXAMPLES if needle in p.name}
        assert modes == {"dual-arp", "evpn-mh"}, needle
    assert "lab-dual-arp.yaml" in names and "lab-evpn-mh.yaml" in names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_generates(path: Path, tmp_path: Path) -> None:
    code, body = run_json("generate", "--fabric", str(path), "--out", str(tmp_path))
    assert code == 0 and body["ok"]
    assert {Path(f).name for f in body["files"]} == FILES


def test_output_is_byte_identical(tmp_path: Path) -> None:
    fabric = INVENTORY / "examples" / "cx732q-256-evpn-mh.yaml"
    outputs = []
    for run in ("a", "b"):
        assert run_cli("generate", "-f", str(fabric), "-o", str(tmp_path / run)).exit_code == 0
        outputs.append({p.name: p.read_bytes() for p in (tmp_path / run).iterdir()})
    assert outputs[0] == outputs[1]
    assert set(outputs[0]) == FILES  # no temporary files left behind


def test_cabling_csv(tmp_path: Path) -> None:
    assert (
        run_cli(
            "generate", "-f", str(INVENTORY / "lab-evpn-mh.yaml"), "-o", str(tmp_path)
        ).exit_code
        == 0
    )
    with (tmp_path / "cabling.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [
        "a_device",
        "a_port",
        "z_device",
        "z_port",
        "speed",
        "kind",
        "plane",
        "group",
        "rail",
    ]
    kinds = {r["kind"] for r in rows}
    assert kinds == {"host", "fabric", "aux"}
    # 2 servers x 2 NICs x 2 ports + 4 leaves x 2 uplinks + 2 AUX cables
    assert len(rows) == 8 + 8 + 2
    host = next(r for r in rows if r["a_device"] == "srv0001" and r["a_port"] == "nic2p2")
    assert host == {
        "a_device": "srv0001",
        "a_port": "nic2p2",
        "z_device": "p2-g1-leaf2",
        "z_port": "swp1",
        "speed": "100G",
        "kind": "host",
        "plane": "2",
        "group": "1",
        "rail": "2",
    }
    aux = next(r for r in rows if r["kind"] == "aux")
    assert aux["plane"] == "" and aux["a_port"] == aux["z_port"] == "aux1"


def test_seed_fabric_port_names_and_breakouts() -> None:
    fabric = build_fabric(load_intent(INVENTORY / "examples" / "seed-2048-cx864e-dual-arp.yaml"))
    leaf = fabric.switch_by_name["p1-g2-leaf3"]
    assert (leaf.group, leaf.rails, leaf.pair) == (2, (3,), "p2-g2-leaf3")
    links = fabric.links_by_device["p1-g2-leaf3"]
    down = sorted({lk.z_port for lk in links if lk.kind == "host"}, key=lambda n: int(n[8:]))
    up = sorted({lk.a_port for lk in links if lk.kind == "fabric"}, key=lambda n: int(n[8:]))
    # 128 servers on 32 ports split 4x200G (Ethernet0, 2, 4, 6, 8 ...), 64 uplinks on 2x400G.
    assert down[:5] == ["Ethernet0", "Ethernet2", "Ethernet4", "Ethernet6", "Ethernet8"]
    assert len(down) == 128 and down[-1] == "Ethernet254"
    assert len(up) == 64 and up[:2] == ["Ethernet256", "Ethernet260"] and up[-1] == "Ethernet508"
    # 8 spines per plane, 8 links to each
    per_spine = {lk.z_device for lk in links if lk.kind == "fabric"}
    assert len(per_spine) == 8


def test_nic_addressing_and_esi(tmp_path: Path) -> None:
    fabric = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))
    nic = fabric.servers[1].nics[0]
    assert (nic.ip, nic.gateway, nic.prefixlen) == ("10.100.0.3", "10.100.0.1", 29)
    assert nic.leaves == ("p1-g1-leaf1", "p2-g1-leaf1")
    assert nic.esi.startswith("03:" + nic.es_sys_mac)
    subnet = fabric.rail_subnets[1]
    assert (subnet.rail, subnet.prefix, subnet.vni, subnet.vlan) == (
        2,
        "10.100.0.8/29",
        10001,
        1002,
    )


def test_facts_file_is_json_with_everything(tmp_path: Path) -> None:
    assert (
        run_cli(
            "generate", "-f", str(INVENTORY / "lab-dual-arp.yaml"), "-o", str(tmp_path)
        ).exit_code
        == 0
    )
    facts = json.loads((tmp_path / "fabric.json").read_text())
    assert facts["sizing"]["leaves"] == 4 and len(facts["switches"]) == 8
    assert facts["link_columns"][0] == "a_device" and len(facts["links"]) == 18  # 2 AUX
    assert "password" not in (tmp_path / "defaults.yaml").read_text().replace("password_env", "")


def test_bom(tmp_path: Path) -> None:
    code, plan = run_json(
        "plan", "--fabric", str(INVENTORY / "examples" / "seed-2048-cx864e-evpn-mh.yaml")
    )
    assert code == 0
    bom = {(b["category"], b["item"]): b["count"] for b in plan["bom"]}
    assert bom[("switch", "CX864E-N leaf")] == 32 and bom[("switch", "CX864E-N spine")] == 16
    assert bom[("cable", "host 200G")] == 256 * 8 * 2
    assert bom[("cable", "fabric 400G")] == 32 * 64
    assert bom[("cable", "aux 10G")] == 16
    # Leaf host ports: 32 OSFP split 4x200G per leaf; leaf uplinks + spine ports split 2x400G.
    assert bom[("transceiver", "800G CX864E-N port (4x200G)")] == 32 * 32
    assert bom[("transceiver", "800G CX864E-N port (2x400G)")] == 32 * 32 + 16 * 64


def test_schema_command() -> None:
    result = run_cli("schema")
    schema = json.loads(result.stdout)
    assert result.exit_code == 0 and schema["title"] == "FabricIntent"
    assert "dual_leaf_mode" in schema["required"]


@pytest.mark.parametrize(
    ("mode", "given", "protected", "aux_cables"),
    [
        ("dual-arp", None, True, 2),  # the default: a leaf failure must not black-hole
        ("dual-arp", False, False, 0),
        ("evpn-mh", None, True, 2),  # the same in EVPN-MH (failure matrix, 2026-12-04)
        ("evpn-mh", False, False, 2),  # the pair link is EVPN-MH's own, protection or not
        ("evpn-mh", True, True, 2),
    ],
)
def test_cross_plane_protection_default_per_mode(
    mode: str, given: bool | None, protected: bool, aux_cables: int
) -> None:
    data = yaml.safe_load((INVENTORY / f"lab-{mode}.yaml").read_text())
    data.pop("cross_plane_protection", None)
    if given is not None:
        data["cross_plane_protection"] = given
    fabric = build_fabric(intent_from_data(data))
    assert fabric.intent.cross_plane_protection is protected
    assert sum(1 for lk in fabric.links if lk.kind == "aux") == aux_cables
