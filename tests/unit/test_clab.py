"""containerlab topologies: every node and cable of the plan, valid kinds, unique endpoints."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
import yaml

from controller.clab import deploy, port_map, render
from controller.errors import DpctlError
from controller.generator import build_fabric
from controller.intent import load_intent
from tests.conftest import INVENTORY, ROOT, run_cli, run_json

SCHEMA = ROOT.parent / "shared" / "ref" / "containerlab" / "clab.schema.json"
LAB_FABRICS = ["lab-dual-arp", "lab-evpn-mh"]


def load_schema() -> dict[str, object]:
    """containerlab's schema, with its Unicode classes \\p{N}\\p{L} (Go regexp syntax, used only
    in the IPv6 zone pattern) written as Python's \\w so Python's re can compile them."""
    text = SCHEMA.read_text().replace(r"\\p{N}\\p{L}", r"\\w")
    schema: dict[str, object] = json.loads(text)
    return schema


@pytest.mark.skipif(not SCHEMA.exists(), reason=f"containerlab schema not found at {SCHEMA}")
def test_schema_check_catches_a_broken_topology() -> None:
    schema = load_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    topo = yaml.safe_load((ROOT / "labs" / "lab-dual-arp.clab.yml").read_text())
    topo["topology"]["nodes"]["srv0001"]["kind"] = "no-such-kind"
    assert list(validator.iter_errors(topo))


@pytest.mark.parametrize("kind", ["sonic-vs", "linux"])
@pytest.mark.parametrize("name", LAB_FABRICS)
def test_export_is_the_cabling_plan(name: str, kind: str, tmp_path: Path) -> None:
    fabric = build_fabric(load_intent(INVENTORY / f"{name}.yaml"))
    out = tmp_path / f"{name}.clab.yml"
    code, body = run_json(
        "lab", "export", "-f", str(INVENTORY / f"{name}.yaml"), "--kind", kind, "-o", str(out)
    )
    assert code == 0 and body["nodes"] == len(fabric.switches) + len(fabric.servers)
    topo = yaml.safe_load(out.read_text())
    nodes = topo["topology"]["nodes"]
    assert set(nodes) == {s.name for s in fabric.switches} | {s.name for s in fabric.servers}
    assert {n["kind"] for n in nodes.values()} <= {kind, "linux"}
    links = topo["topology"]["links"]
    assert len(links) == len(fabric.links)
    endpoints = Counter(ep for link in links for ep in link["endpoints"])
    assert max(endpoints.values()) == 1, "an endpoint is used twice"
    mapping = port_map(fabric, kind)  # type: ignore[arg-type]
    for link, plan in zip(links, fabric.links, strict=True):
        assert link["endpoints"] == [
            mapping.endpoint(plan.a_device, plan.a_port),
            mapping.endpoint(plan.z_device, plan.z_port),
        ]
    if kind == "sonic-vs":
        # eth1 -> Ethernet0, +4 per port: the k-th plan port of a switch is eth<k>.
        leaf = nodes["p1-g1-leaf1"]["labels"]["dpctl-ports"].split(",")
        assert leaf[:4] == ["eth1=swp1", "eth2=swp2", "eth3=swp3", "eth4=swp4"]


@pytest.mark.skipif(not SCHEMA.exists(), reason=f"containerlab schema not found at {SCHEMA}")
@pytest.mark.parametrize("kind", ["sonic-vs", "linux"])
@pytest.mark.parametrize("name", LAB_FABRICS)
def test_export_validates_against_containerlab_schema(name: str, kind: str, tmp_path: Path) -> None:
    out = tmp_path / "topo.clab.yml"
    assert (
        run_cli(
            "lab", "export", "-f", str(INVENTORY / f"{name}.yaml"), "--kind", kind, "-o", str(out)
        ).exit_code
        == 0
    )
    schema = load_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    topo = yaml.safe_load(out.read_text())
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(topo)]
    assert errors == []


def test_export_default_path_and_bad_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, body = run_json(
        "lab", "export", "-f", str(INVENTORY / "lab-dual-arp.yaml"), "--kind", "linux"
    )
    assert code == 0 and body["out"] == "labs/lab-dual-arp.clab.yml"
    assert (tmp_path / "labs" / "lab-dual-arp.clab.yml").exists()
    result = run_cli("lab", "export", "-f", str(INVENTORY / "lab-dual-arp.yaml"), "--kind", "ceos")
    assert result.exit_code != 0 and "ceos" in result.output + result.stderr


def test_committed_lab_topologies_are_current() -> None:
    """labs/<fabric>.clab.yml are committed with FRR (`linux`) switches, like the embedded lab."""
    for name in LAB_FABRICS:
        fabric = build_fabric(load_intent(INVENTORY / f"{name}.yaml"))
        committed = ROOT / "labs" / f"{name}.clab.yml"
        assert committed.read_bytes() == render(fabric, "linux"), (
            f"{committed} is stale: re-export it"
        )


@pytest.mark.skipif(
    shutil.which("containerlab") is not None, reason="containerlab is installed here"
)
def test_deploy_without_containerlab_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(DpctlError, match="containerlab is not installed"):
        deploy(tmp_path / "x.clab.yml")


@pytest.mark.skipif(
    shutil.which("containerlab") is None,
    reason="containerlab is not installed (it needs a Docker engine, which cannot run here)",
)
def test_deploy_with_containerlab(tmp_path: Path) -> None:  # pragma: no cover - needs Docker
    out = tmp_path / "lab.clab.yml"
    assert (
        run_cli(
            "lab",
            "export",
            "-f",
            str(INVENTORY / "lab-dual-arp.yaml"),
            "--kind",
            "linux",
            "-o",
            str(out),
        ).exit_code
        == 0
    )
    assert "lab-dual-arp" in deploy(out)
