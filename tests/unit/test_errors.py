"""Every bad input: non-zero exit, a message naming the field and the reason, nothing written."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli, run_json


def _set(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if value is _DELETE:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value
    return data


_DELETE = object()

# (change to the lab intent, field the message must name, words the reason must contain)
BAD_INTENTS = [
    ("switches.leaf", "CX999", "switches.leaf", "unknown switch model 'CX999'"),
    ("switches.spine", "NOPE", "switches.spine", "known models"),
    ("gpus", 5, "gpus", "do not fill whole servers"),
    ("gpus", 8 * 4096, "gpus", "at most"),
    ("gpus", "many", "gpus", "valid integer"),
    ("gpus_per_server", 0, "gpus_per_server", "greater than or equal to 1"),
    ("servers", 3, "servers", "disagree with gpus"),
    ("dual_leaf_mode", "mlag", "dual_leaf_mode", "'dual-arp' or 'evpn-mh'"),
    ("platform", "junos", "platform", "'asternos', 'sonic' or 'frr'"),
    ("platform", "sonic", "switches.leaf", "does not run platform 'sonic'"),
    ("load_balancing.mode", "magic", "load_balancing.mode", "'ars'"),
    ("roce.incast", "extreme", "roce.incast", "'low', 'medium' or 'high'"),
    ("roce.cable_length_m", -5, "roce.cable_length_m", "greater than or equal to 1"),
    ("addressing.loopbacks", "10.255.0.0/30", "addressing.loopbacks", "needs 8"),
    ("addressing.management", "172.30.0.0/29", "addressing.management", "needs 11"),
    ("addressing.rail_subnets", "10.100.0.0/30", "addressing.rail_subnets", "smaller than one /29"),
    (
        "addressing.rail_subnets",
        "10.255.0.0/16",
        "addressing.rail_subnets",
        "overlaps addressing.loopbacks",
    ),
    (
        "addressing.management",
        "10.255.0.128/25",
        "addressing.management",
        "overlaps addressing.loopbacks",
    ),
    ("addressing.rail_prefixlen", 30, "addressing.rail_prefixlen", "needs 3"),
    ("addressing.loopbacks", "10.255.0.1/24", "addressing.loopbacks", "host bits set"),
    ("addressing.loopbacks", "not-an-ip", "addressing.loopbacks", "is not a valid IPv4 network"),
    ("naming.leaf", "leaf{leaf}", "naming.leaf", "gives the name 'leaf1' to 2 devices"),
    ("naming.spine", "spine{rack}", "naming.spine", "unknown field(s) ['rack']"),
    ("asn.leaf_start", 64999, "asn.leaf_start", "include spine ASN 65000"),
    ("asn.spine", 0, "asn.spine", "greater than or equal to 1"),
    ("credentials.password", "hunter2", "credentials", "secrets never go in the intent"),
    ("credentials.password_env", "NOT A VAR", "credentials.password_env", "should match pattern"),
    ("planes", [{"id": 1}, {"id": 1}], "planes", "exactly planes 1 and 2"),
    ("name", "Bad Name!", "name", "should match pattern"),
    ("mtu", 20000, "mtu", "less than or equal to 9216"),
    ("bgp_timers.hold", 2, "bgp_timers.hold", "greater than or equal to 3"),
    ("bgp_timers.keepalive", 0, "bgp_timers.keepalive", "greater than or equal to 1"),
    ("bgp_timers.keepalive", 10, "bgp_timers", "less than 3 keepalives of 10 s"),
    ("bgp_timers.dead", 1, "bgp_timers.dead", "Extra inputs are not permitted"),
    ("spines", 4, "spines", "Extra inputs are not permitted"),
    ("gpus", _DELETE, "(top level)", "give the cluster size as servers or gpus"),
]


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    BAD_INTENTS,
    ids=[f"{p}=<deleted>" if v is _DELETE else f"{p}={v}" for p, v, _, _ in BAD_INTENTS],
)
def test_bad_intent_names_field_and_writes_nothing(
    base_intent: dict[str, Any],
    write_intent: Any,
    tmp_path: Path,
    path: str,
    value: Any,
    field: str,
    reason: str,
) -> None:
    fabric = write_intent(_set(base_intent, path, value))
    out = tmp_path / "out"
    result = run_cli("generate", "--fabric", str(fabric), "--out", str(out))
    assert result.exit_code == 2, result.output
    message = result.stderr
    assert f"{field}:" in message, message
    assert reason in message, message
    assert "Traceback" not in result.output + message
    assert not out.exists()


def test_json_error_names_field(base_intent: dict[str, Any], write_intent: Any) -> None:
    fabric = write_intent(_set(base_intent, "gpus", 7))
    code, body = run_json("plan", "--fabric", str(fabric))
    assert code == 2
    assert body["ok"] is False and body["error"]["where"] == "gpus"
    assert body["error"]["type"] == "SizingError"


def test_error_leaves_previous_output_untouched(
    base_intent: dict[str, Any], write_intent: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    good = write_intent(base_intent)
    assert run_cli("generate", "--fabric", str(good), "--out", str(out)).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = write_intent(_set(base_intent, "switches.leaf", "CX999"))
    assert run_cli("generate", "--fabric", str(bad), "--out", str(out)).exit_code == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("name: a\nname: b\n", ":2", "duplicate key 'name'"),
        ("name: [unclosed\n", "fabric.yaml", "not valid YAML"),
        ("- just\n- a list\n", "fabric.yaml", "must be a YAML mapping"),
    ],
)
def test_unreadable_yaml(write_intent: Any, text: str, where: str, reason: str) -> None:
    result = run_cli("plan", "--fabric", str(write_intent(text)))
    assert result.exit_code == 2
    assert where in result.stderr and reason in result.stderr


def test_missing_file(tmp_path: Path) -> None:
    result = run_cli("generate", "--fabric", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "nope.yaml" in result.stderr and "cannot read the intent file" in result.stderr


@pytest.mark.parametrize(
    ("args", "where", "reason"),
    [
        (("--model", "CX864E-N", "--gpus", "32768"), "--gpus", "at most 2048 servers (16384 GPUs)"),
        (("--model", "CX732Q-N", "--gpus", "2048"), "--gpus", "at most 128 servers (1024 GPUs)"),
        (("--model", "CX864E-N", "--gpus", "1001"), "--gpus", "do not fill whole servers"),
        (("--model", "CX000", "--gpus", "8"), "switches.leaf", "unknown switch model"),
        (
            (
                "--model",
                "CX864E-N",
            ),
            "--gpus",
            "give the cluster size",
        ),
        (
            (
                "--gpus",
                "8",
            ),
            "--model",
            "give --model",
        ),
    ],
)
def test_plan_bad_sizes(args: tuple[str, ...], where: str, reason: str) -> None:
    result = run_cli("plan", *args)
    assert result.exit_code == 2
    assert f"{where}:" in result.stderr and reason in result.stderr
