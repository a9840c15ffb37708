"""SONiC output against SONiC's own YANG models (vendored), with libyang.

Every example and lab fabric, rendered with ``platform: sonic`` in both dual-leaf modes and
every load-balancing mode sonic supports, must validate; broken documents must be rejected
naming table, key and field; the CLI must exit 2 and write nothing on an invalid config.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from controller import platforms
from controller.catalog import get_model
from controller.cli import app
from controller.errors import IntentError
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.platforms.sonic import render as sonic
from controller.platforms.sonic import yang as sonic_yang
from controller.render.engine import render_fabric
from controller.render.features import UnsupportedFeature

ROOT = Path(__file__).resolve().parents[2]
FABRICS = [
    *sorted([*ROOT.glob("inventory/*.yaml"), *ROOT.glob("inventory/examples/*.yaml")]),
    ROOT / "tests/golden/intents/cx732q-small.yaml",
]
SONIC_LB = sorted(
    mode for mode, reason in platforms.get("sonic").load_balancing.items() if not reason
)
FULL_FABRIC_MAX = 24  # larger fabrics: a sample of devices (the bench validates them all)


def as_sonic(path: Path, mode: str, lb: str, **changes: Any) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    data.update(platform="sonic", dual_leaf_mode=mode, load_balancing={"mode": lb}, **changes)
    return dict(data)


def sample(names: list[str], roles: dict[str, str]) -> list[str]:
    """All devices of a small fabric; else the first leaf pair and spine of each plane, and
    the last leaf (the last group: highest VLAN/VNI, addresses and port numbers)."""
    if len(names) <= FULL_FABRIC_MAX:
        return names
    picked: list[str] = []
    for plane in ("p1-", "p2-"):
        leaves = [n for n in names if n.startswith(plane) and roles[n] == "leaf"]
        spines = [n for n in names if n.startswith(plane) and roles[n] == "spine"]
        picked += [*leaves[:2], leaves[-1], spines[0]]
    return sorted(set(picked))


@pytest.mark.parametrize("lb", SONIC_LB)
@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
@pytest.mark.parametrize("path", FABRICS, ids=lambda p: p.stem)
def test_every_fabric_validates_as_sonic(path: Path, mode: str, lb: str) -> None:
    data = as_sonic(path, mode, lb)
    if "sonic" not in get_model(data["switches"]["leaf"]).platforms:
        # The embedded lab's VLAB-4 is Linux + FRR only: sonic is refused, with the reason.
        with pytest.raises(IntentError, match="does not run platform 'sonic'"):
            build_fabric(intent_from_data(data))
        return
    fabric = build_fabric(intent_from_data(data))
    roles = {s.name: s.role for s in fabric.switches}
    names = sample(list(roles), roles)
    for name in names:
        files = render_fabric(fabric, device=name, validate=False)[name]
        problems = sonic_yang.validate(json.loads(files["config_db.json"]))
        assert problems == [], f"{path.stem} {mode} {lb} {name}: {problems[:3]}"


@pytest.fixture(scope="module")
def leaf_db() -> dict[str, Any]:
    data = as_sonic(ROOT / "tests/golden/intents/cx732q-small.yaml", "evpn-mh", "ecmp")
    fabric = build_fabric(intent_from_data(data))
    files = render_fabric(fabric, device="p1-g1-leaf1")["p1-g1-leaf1"]
    db: dict[str, Any] = json.loads(files["config_db.json"])
    assert sonic_yang.validate(db) == []
    return db


def _broken(db: dict[str, Any], table: str, key: str, **fields: str) -> list[sonic_yang.Problem]:
    doc = copy.deepcopy(db)
    doc[table].setdefault(key, {}).update(fields)
    return sonic_yang.validate(doc)


@pytest.mark.parametrize(
    ("table", "key", "fields", "field", "words"),
    [
        ("PORT", "Ethernet0", {"mtu": "9300"}, "mtu", "range"),
        ("PORT", "Ethernet0", {"speed": "fast"}, "speed", "Invalid type"),
        ("PORT", "Ethernet0", {"bogus_field": "1"}, "bogus_field", "not found"),
        ("VLAN_MEMBER", "Vlan1001|Ethernet999", {"tagging_mode": "untagged"}, "port", "leafref"),
        ("DEVICE_METADATA", "localhost", {"type": "Bogus"}, "type", "pattern"),
        ("QUEUE", "Ethernet0|3", {"scheduler": "NO_SUCH"}, "scheduler", "leafref"),
        ("EVPN_MH_GLOBAL", "default", {"startup_delay": "9999"}, "startup_delay", "range"),
    ],
)
def test_broken_config_names_table_key_field(
    leaf_db: dict[str, Any],
    table: str,
    key: str,
    fields: dict[str, str],
    field: str,
    words: str,
) -> None:
    problems = _broken(leaf_db, table, key, **fields)
    assert problems, "the broken document validated"
    assert {(p.table, p.key, p.field) for p in problems} == {(table, key, field)}
    assert words in problems[0].message


def test_type0_esi_of_old_renderer_is_rejected(leaf_db: dict[str, Any]) -> None:
    """What dpctl rendered before (type 0 with a type-3 ESI) fails the model's must."""
    problems = _broken(
        leaf_db,
        "EVPN_ETHERNET_SEGMENT",
        "PortChannel1",
        type="TYPE_0_OPERATOR_CONFIGURED",
        esi="03:02:d1:00:00:01:01:00:00:01",
    )
    assert [(p.table, p.key) for p in problems] == [("EVPN_ETHERNET_SEGMENT", "PortChannel1")]
    assert "Invalid ESI/type combination" in problems[0].message


def test_port_redirect_action_has_no_model(leaf_db: dict[str, Any]) -> None:
    """Why pbr is refused on sonic: REDIRECT:<port> is not a PACKET_ACTION the models allow."""
    doc = copy.deepcopy(leaf_db)
    doc["ACL_TABLE"] = {"PBR": {"type": "L3", "stage": "ingress", "ports": ["Ethernet0"]}}
    doc["ACL_RULE"] = {
        "PBR|PIN": {"PRIORITY": "10", "IP_TYPE": "IPV4ANY", "PACKET_ACTION": "REDIRECT:Ethernet4"}
    }
    problems = sonic_yang.validate(doc)
    named = [(p.table, p.key, p.field) for p in problems]
    assert named == [("ACL_RULE", "PBR|PIN", "PACKET_ACTION")]
    doc["ACL_RULE"]["PBR|PIN"]["PACKET_ACTION"] = "FORWARD"
    assert sonic_yang.validate(doc) == []


def test_unknown_table_and_bad_key_shape(leaf_db: dict[str, Any]) -> None:
    doc = copy.deepcopy(leaf_db)
    doc["NO_SUCH_TABLE"] = {"x": {}}
    doc["QUEUE"]["Ethernet0|3|extra"] = {"scheduler": "ROCE_DWRR"}
    messages = {str(p) for p in sonic_yang.validate(doc)}
    assert "NO_SUCH_TABLE: no YANG model has this table" in messages
    assert "QUEUE|Ethernet0|3|extra: no list of QUEUE has 3 key(s)" in messages


def test_buffer_pool_stub_only_when_pools_absent(leaf_db: dict[str, Any]) -> None:
    """Profiles must name a pool the HWSKU stub defines; a document's own pools win."""
    bad = _broken(leaf_db, "BUFFER_PROFILE", next(iter(leaf_db["BUFFER_PROFILE"])), pool="nope")
    assert [(p.table, p.field) for p in bad] == [("BUFFER_PROFILE", "pool")]
    own = copy.deepcopy(leaf_db)
    own["BUFFER_POOL"] = {"other_pool": {"type": "ingress", "mode": "dynamic"}}
    assert {p.field for p in sonic_yang.validate(own)} == {"pool"}


def test_translation_forms(leaf_db: dict[str, Any]) -> None:
    tree, problems = sonic_yang.translate(leaf_db)
    assert problems == []
    meta = tree["sonic-device_metadata:sonic-device_metadata"]["DEVICE_METADATA"]
    assert meta["localhost"]["hostname"] == "p1-g1-leaf1"  # a container key
    dscp = tree["sonic-dscp-tc-map:sonic-dscp-tc-map"]["DSCP_TO_TC_MAP"]["DSCP_TO_TC_MAP_LIST"]
    assert {"dscp": "24", "tc": "3"} in dscp[0]["DSCP_TO_TC_MAP"]  # fields as inner entries
    interface = tree["sonic-interface:sonic-interface"]["INTERFACE"]
    assert set(interface) == {"INTERFACE_LIST"}
    loopback = tree["sonic-loopback-interface:sonic-loopback-interface"]["LOOPBACK_INTERFACE"]
    assert set(loopback) == {"LOOPBACK_INTERFACE_LIST", "LOOPBACK_INTERFACE_IPPREFIX_LIST"}


@pytest.mark.parametrize("release", ["202511", "202605"])
@pytest.mark.parametrize(
    ("mode", "table"), [("evpn-mh", "EVPN_ETHERNET_SEGMENT"), ("dual-arp", "SAG")]
)
def test_release_without_models_refused(release: str, mode: str, table: str) -> None:
    data = as_sonic(
        ROOT / "tests/golden/intents/cx732q-small.yaml", mode, "ecmp", sonic_release=release
    )
    with pytest.raises(UnsupportedFeature, match=f"SONiC {release}.*{table}"):
        render_fabric(build_fabric(intent_from_data(data)))


def _intent_file(tmp_path: Path) -> Path:
    path = tmp_path / "fabric.yaml"
    data = as_sonic(ROOT / "tests/golden/intents/cx732q-small.yaml", "dual-arp", "ecmp")
    path.write_text(yaml.safe_dump(data))
    return path


def test_cli_invalid_config_exit_2_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sonic.config_db

    def mtu_out_of_range(d: Any) -> dict[str, Any]:
        db = real(d)
        first = sorted(db["PORT"])[0]
        db["PORT"][first] = {**db["PORT"][first], "mtu": "9300"}
        return db

    monkeypatch.setattr(sonic, "config_db", mtu_out_of_range)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", "-f", str(_intent_file(tmp_path)), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert not out.exists()
    assert "Traceback" not in result.output
    message = " ".join(result.output.split())
    assert "p1-g1-leaf1" in message or "p1-spine1" in message
    assert "PORT|Ethernet0 mtu: Unsatisfied range" in message
    skipped = CliRunner().invoke(
        app, ["render", "-f", str(_intent_file(tmp_path)), "-o", str(out), "--no-validate"]
    )
    assert skipped.exit_code == 0, skipped.output
    assert any(out.glob("*/config_db.json"))


def test_cli_valid_sonic_render(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", "-f", str(_intent_file(tmp_path)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(list(out.glob("*/config_db.json"))) == 6
