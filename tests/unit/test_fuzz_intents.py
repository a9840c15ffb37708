"""Fuzzed intents through the CLI (issue 12): every run ends in either valid output or a clean
error naming the field with exit code 2; never a traceback, never a file outside --out, never
a rendered line where a device name was split in two.

Intents are a small valid one with one to three fields replaced by hostile values: names and
naming patterns (line breaks, path parts, format specs, unicode), numbers (negative, huge,
floats, strings), sizes, addressing, credentials, unknown keys.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.generator import build_fabric
from controller.intent import DEVICE_NAME_RE, FabricIntent, intent_from_data
from tests.conftest import run_cli

BASE: dict[str, Any] = {
    "name": "fuzz",
    "platform": "frr",
    "switches": {"leaf": "CX732Q-N", "spine": "CX732Q-N"},
    "servers": 4,
    "gpus_per_server": 4,
    "dual_leaf_mode": "dual-arp",
    "addressing": {
        "loopbacks": "10.0.0.0/24",
        "rail_subnets": "10.128.0.0/16",
        "management": "172.16.0.0/24",
    },
}

FRAGMENTS = [
    "{leaf}",
    "{plane}",
    "{group}",
    "{server}",
    "{spine}",
    "{server:04d}",
    "{leaf:x}",
    "{leaf:zz}",
    "{plane:c}",
    "{group!r}",
    "{0}",
    "{}",
    "{",
    "}",
    "../",
    "/",
    "\\",
    "\n",
    "\r",
    " ",
    "\t",
    "-",
    "_",
    ".",
    "x",
    "leaf",
    "srv",
    "ü",
    "\u202e",
    "\x00",
    ";",
    "'",
    '"',
    "shutdown",
]
fragments = st.sampled_from(FRAGMENTS) | st.text(max_size=4)
patterns = st.lists(fragments, max_size=8).map("".join)
hostile_text = st.text(max_size=40) | patterns
VALID_PATTERNS = {
    "leaf": "p{plane}-g{group}-leaf{leaf}",
    "spine": "p{plane}-spine{spine}",
    "server": "srv{server:04d}",
}


def _insert(pattern: str, inserts: list[tuple[int, str]]) -> str:
    for position, text in inserts:
        cut = position % (len(pattern) + 1)
        pattern = pattern[:cut] + text + pattern[cut:]
    return pattern


def naming_patterns(kind: str) -> st.SearchStrategy[str]:
    """Mostly a working pattern with hostile fragments inserted, sometimes anything."""
    inserts = st.lists(st.tuples(st.integers(0, 40), fragments), min_size=1, max_size=2)
    return st.builds(_insert, st.just(VALID_PATTERNS[kind]), inserts) | patterns


numbers = (
    st.integers(-10, 70)
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([True, "8", "eight", None, [], {}])
)
octet = st.integers(-1, 300)
networks = st.builds(
    lambda a, b, c, d, p: f"{a}.{b}.{c}.{d}/{p}", octet, octet, octet, octet, st.integers(-1, 33)
) | st.sampled_from(["10.0.0.0/8", "0.0.0.0/0", "10.0.0.0/31", "::1/128", "x", "", "10.0.0.0"])

# (dotted field path, strategy of a replacement value)
MUTATIONS: list[tuple[str, st.SearchStrategy[Any]]] = [
    ("name", hostile_text),
    ("naming.leaf", naming_patterns("leaf")),
    ("naming.spine", naming_patterns("spine")),
    ("naming.server", naming_patterns("server")),
    ("planes", st.just([{"id": 1, "description": "x"}, {"id": 2}])),
    ("planes.0.description", hostile_text),
    ("platform", st.sampled_from(["frr", "sonic", "asternos", "junos", ""])),
    ("switches.leaf", st.sampled_from(["CX732Q-N", "CX864E-N", "VLAB-4", "../x"]) | hostile_text),
    ("switches.spine", st.sampled_from(["CX732Q-N", "CX864E-N"]) | hostile_text),
    ("servers", st.integers(1, 40) | numbers),
    ("gpus", numbers),
    ("gpus_per_server", st.sampled_from([1, 2, 4, 8]) | numbers),
    ("dual_leaf_mode", st.sampled_from(["dual-arp", "evpn-mh", "mlag"])),
    ("cross_plane_protection", st.booleans() | numbers),
    ("mtu", numbers),
    ("vni_base", numbers),
    ("vlan_base", numbers),
    ("evpn_mh_startup_delay", numbers),
    ("asn.spine", numbers),
    ("asn.leaf_start", numbers),
    ("addressing.loopbacks", networks),
    ("addressing.rail_subnets", networks),
    ("addressing.management", networks),
    ("addressing.rail_prefixlen", numbers),
    ("addressing.anycast_gateway_mac", hostile_text),
    ("roce.cable_length_m", numbers),
    ("roce.incast", hostile_text),
    ("load_balancing.mode", st.sampled_from(["ecmp", "ars", "wcmp", "pbr", "spray", "x"])),
    ("credentials.username", hostile_text),
    ("credentials.password_env", hostile_text),
    ("credentials.ssh_key_file", hostile_text),
    ("credentials.password", hostile_text),
    ("unknown_key", hostile_text),
]


def _put(data: dict[str, Any], path: str, value: Any) -> None:
    node: Any = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value


@st.composite
def intents(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["platform"] = draw(st.sampled_from(["frr", "sonic", "asternos"]))
    data["dual_leaf_mode"] = draw(st.sampled_from(["dual-arp", "evpn-mh"]))
    chosen = draw(st.lists(st.integers(0, len(MUTATIONS) - 1), max_size=3, unique=True))
    if draw(st.booleans()):  # names reach configs, paths and shells: fuzz them half the time
        chosen.append(draw(st.sampled_from([1, 2, 3])))
    for index in chosen:
        path, strategy = MUTATIONS[index]
        if path.startswith("planes.") and not isinstance(data.get("planes"), list):
            data["planes"] = [{"id": 1}, {"id": 2}]
        _put(data, path, draw(strategy))
    return data


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _check_error(stderr: str, intent: Path, data: dict[str, Any]) -> None:
    """The message names a field of the intent (or a line of the file) before the reason."""
    assert stderr.startswith("error: "), stderr
    where = stderr.removeprefix("error: ").split(": ", 1)[0]
    top = where.split(".")[0]
    whole = where == "(top level)" and "servers or gpus" in stderr  # neither given (test_errors)
    assert (
        top in FabricIntent.model_fields or top in data or where.startswith(str(intent)) or whole
    ), stderr


def _check_names_whole(data: dict[str, Any], out: Path) -> None:
    """Every device name is one safe token, and each leaf's rendered config names each server
    port cabled to it as SERVER:PORT on one line."""
    fabric = build_fabric(intent_from_data(data))
    for name in [s.name for s in fabric.switches] + [s.name for s in fabric.servers]:
        assert DEVICE_NAME_RE.fullmatch(name), name
    for leaf in (s for s in fabric.switches if s.role == "leaf"):
        lines = {line for f in (out / leaf.name).iterdir() for line in f.read_text().splitlines()}
        for link in fabric.links_by_device[leaf.name]:
            if link.kind == "host":
                token = f"{link.a_device}:{link.a_port}"
                assert any(token in line for line in lines), (leaf.name, token)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)
@given(data=intents())
def test_fuzzed_intent_gives_output_or_a_clean_error(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        intent = root / "fabric.yaml"
        intent.write_text(yaml.safe_dump(data, allow_unicode=True))
        out = root / "out"
        for command in ("render", "generate"):
            result = run_cli(command, "-f", str(intent), "-o", str(out / command))
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                command,
                repr(result.exception),
            )
            assert "Traceback" not in result.stderr
            assert result.exit_code in (0, 2), (command, result.exit_code, result.stderr)
            if result.exit_code == 2:
                _check_error(result.stderr, intent, data)
            elif command == "render":
                _check_names_whole(data, out / "render")
            outside = {p for p in _files(root) if not p.is_relative_to(out)}
            assert outside == {intent}, outside
