"""The intent's JSON Schema says what the loader enforces (issue 40).

Users check intents with their own tools (an editor with the schema, CI with jsonschema), so
``dpctl schema`` must accept exactly what ``load_intent`` accepts. The property: start from
every example intent of the repository, mutate it (drop fields, wrong types, numeric strings,
bad strings, out-of-range numbers, extra keys, nested fields), write it as YAML and check

    load_intent accepts  <=>  jsonschema (Draft 2020-12, formats checked) says valid
                              and no rule of BEYOND_SCHEMA is broken

BEYOND_SCHEMA is the loader's short list of rules a JSON Schema cannot state (the schema's
description and docs/intent.md list them too); the test computes each with its own code.
Rules checked after the loader (sizing, catalog, pools, ASNs: the generator) are not the
loader's and are not part of this property (docs/intent.md, "After the schema").
"""

from __future__ import annotations

import copy
import ipaddress
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from controller.errors import IntentError
from controller.intent import RULES_BEYOND_SCHEMA, intent_schema, load_intent
from tests.conftest import ROOT

SEED_FILES = sorted(
    [
        *ROOT.glob("inventory/*.yaml"),
        *ROOT.glob("inventory/examples/*.yaml"),
        *ROOT.glob("tests/golden/intents/*.yaml"),
    ]
)
SEEDS: list[dict[str, Any]] = [yaml.safe_load(p.read_text()) for p in SEED_FILES]
SCHEMA = intent_schema()
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when there: 3x faster
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NAME_MAX = 63
BIG_SAMPLE = 99_999


def _naming_too_long(data: dict[str, Any]) -> bool:
    """A naming pattern whose name for field values 99999 is over 63 characters."""
    naming = data.get("naming")
    if not isinstance(naming, dict):
        return False
    fields = dict.fromkeys(("plane", "group", "leaf", "spine", "server"), BIG_SAMPLE)
    for kind in ("leaf", "spine", "server"):
        pattern = naming.get(kind)
        if not isinstance(pattern, str):
            continue
        try:  # only asked when the schema says valid: then the pattern always formats
            if len(pattern.format(**fields)) > NAME_MAX:
                return True
        except (KeyError, ValueError, IndexError, AttributeError, TypeError):
            continue
    return False


# The loader's rules no JSON Schema can state, each computed here independently. Keep this
# list equal to controller.intent.RULES_BEYOND_SCHEMA (checked below): a new entry there needs
# its own check here, and a reason in docs/intent.md.
BEYOND_SCHEMA: dict[str, Callable[[dict[str, Any]], bool]] = {
    "naming-length": _naming_too_long,
}


def test_beyond_schema_list_is_the_documented_one() -> None:
    assert set(BEYOND_SCHEMA) == set(RULES_BEYOND_SCHEMA)
    description = SCHEMA["description"]
    docs = (ROOT / "docs" / "intent.md").read_text()
    for rule in RULES_BEYOND_SCHEMA.values():
        assert rule in description and rule in docs


def _walk_schema(node: dict[str, Any], path: tuple[str, ...], out: list[tuple[str, ...]]) -> None:
    """Every property path of the schema ($refs resolved; array items by index)."""
    if "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    for branch in node.get("anyOf", []):
        _walk_schema(branch, path, out)
    for index, item in enumerate(node.get("prefixItems", [])):
        out.append((*path, str(index)))
        _walk_schema(item, (*path, str(index)), out)
    for key, sub in node.get("properties", {}).items():
        out.append((*path, key))
        _walk_schema(sub, (*path, key), out)


def _leaf_schemas() -> dict[tuple[str, ...], dict[str, Any]]:
    paths: list[tuple[str, ...]] = []
    _walk_schema(SCHEMA, (), paths)
    found: dict[tuple[str, ...], dict[str, Any]] = {}
    for path in paths:
        node: Any = SCHEMA
        for part in path:
            while "$ref" in node:
                node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
            node = node["prefixItems"][int(part)] if part.isdigit() else node["properties"][part]
        found[path] = node
    return found


FIELDS = _leaf_schemas()
PATHS = sorted(FIELDS)


def _numbers_near(node: dict[str, Any]) -> list[Any]:
    """Boundary values of an integer field, as numbers, floats and numeric strings."""
    branches = [node, *node.get("anyOf", [])]
    near: list[Any] = []
    for branch in branches:
        for key in ("minimum", "maximum"):
            if key in branch:
                bound = branch[key]
                near += [bound - 1, bound, bound + 1, float(bound), str(bound), f" {bound}"]
        for value in branch.get("enum", []):
            near += [value, str(value), float(value) if isinstance(value, int) else value]
    return near


def _strings_near(node: dict[str, Any]) -> list[Any]:
    """Enum members and defaults, also as near misses (case, spaces, line breaks)."""
    branches = [node, *node.get("anyOf", [])]
    near: list[Any] = []
    for branch in branches:
        for value in [*branch.get("enum", []), node.get("default")]:
            if isinstance(value, str):
                near += [value, value.upper(), f"{value}\n", f" {value}", f"{value} ", value + "x"]
    return near


octet = st.integers(-1, 256).map(str) | st.sampled_from(["00", "010", "0", "255", "1"])
prefix = st.integers(-1, 33).map(str) | st.sampled_from(["08", "255.255.255.0", "0.0.0.255", ""])


def _network(address: int, length: int) -> str:
    return f"{ipaddress.IPv4Address(address & (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF)}/{length}"


networks = st.one_of(
    st.builds(lambda a, b, c, d, p: f"{a}.{b}.{c}.{d}/{p}", octet, octet, octet, octet, prefix),
    st.builds(_network, st.integers(0, 2**32 - 1), st.integers(0, 32)),
    st.builds(lambda a, p: f"10.{a}.0.0/{p}", st.sampled_from(["0", "128", "64", "255"]), prefix),
    st.sampled_from(
        ["10.0.0.0/8", "10.0.0.0", "10.0.0.0/24\n", " 10.0.0.0/24", "::1/128", "not-an-ip", ""]
    ),
)
hexpair = st.text("0123456789abcdefABCDEFg", min_size=1, max_size=3)
macs = st.builds(
    lambda parts, sep: sep.join(parts),
    st.lists(hexpair, min_size=5, max_size=7),
    st.sampled_from([":", ":", "-", ""]),
) | st.sampled_from(["02:dc:00:00:00:01", "02:dc:00:00:00:01\n", "02:DC:00:00:00:01"])
NAME_FRAGMENTS = [
    "{leaf}", "{plane}", "{group}", "{server}", "{spine}", "{rack}", "{}", "{0}", "{", "}",
    "{{", "}}", "{leaf:04d}", "{leaf:x}", "{leaf:X}", "{leaf:2}", "{leaf:1}", "{leaf:01}",
    "{leaf:}", "{leaf:d}", "{leaf:099d}", "{leaf:0d}", "{leaf!r}", "{leaf!}", "{leaf:c}",
    "{leaf.real}", "{leaf[0]}", "{server:05d}", "{group:1x}", "{spine:02X}",
    "-", "x", "srv", "leaf", " ", "\n", "_", ".", "/", "ü", "9", "A" * 30,
]  # fmt: skip
names = st.lists(st.sampled_from(NAME_FRAGMENTS), min_size=0, max_size=5).map("".join)
NAMING_FIELDS = {
    "leaf": ("plane", "group", "leaf"),
    "spine": ("plane", "spine"),
    "server": ("server", "group"),
}
specs = st.sampled_from(
    ["", ":", ":d", ":x", ":X", ":1", ":01", ":04d", ":9", ":08x", ":030d", ":060X"]
)
literals = st.text("abcXYZ0189-", min_size=1, max_size=64)


@st.composite
def good_names(draw: st.DrawFn, kind: str) -> str:
    """Patterns of the name alphabet and specs, long or short: the name-length rule's ground."""
    fields = st.builds(lambda f, s: f"{{{f}{s}}}", st.sampled_from(NAMING_FIELDS[kind]), specs)
    return "".join(draw(st.lists(literals | fields, min_size=1, max_size=5)))


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([4.0, 1.5, 9216.0, 1e300, -0.0]),
    st.integers(-10, 10**6).map(str),
    st.sampled_from(["4", " 4", "4.0", "0x10", "1e3", "+4", "٤", "yes", "on", "true", "null"]),
    st.text(max_size=12),
    st.sampled_from(["", "\n", "abc\n", "admin", "DPCTL_PASSWORD", "CX864E-N", "VLAB-4"]),
    st.binary(max_size=3),
)
values = st.one_of(
    scalars,
    networks,
    macs,
    names,
    st.lists(scalars, max_size=2),
    st.dictionaries(st.sampled_from(["id", "x", "description"]), scalars, max_size=2),
)


def _parent(data: Any, path: tuple[str, ...]) -> Any:
    """The container holding path's last part, creating missing mappings; None if blocked."""
    node = data
    for part in path[:-1]:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.setdefault(part, [{"id": 1}, {"id": 2}] if part == "planes" else {})
        else:
            return None
    return node


def _apply(data: dict[str, Any], op: tuple[Any, ...]) -> None:
    kind, path, value = op
    node = _parent(data, path)
    last = path[-1]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        if kind == "drop":
            del node[int(last)]
        else:
            node[int(last)] = value
    elif isinstance(node, dict):
        if kind == "drop":
            node.pop(last, None)
        elif kind == "extra":
            node[value[0]] = value[1]
        else:
            node[last] = value


@st.composite
def field_values(draw: st.DrawFn, path: tuple[str, ...]) -> Any:
    node = FIELDS[path]
    near = _numbers_near(node) + _strings_near(node)
    if near and draw(st.booleans()):
        return draw(st.sampled_from(near))
    return draw(values)


@st.composite
def operations(draw: st.DrawFn) -> tuple[Any, ...]:
    kind = draw(st.sampled_from(["set", "set", "set", "drop", "extra", "name"]))
    path = draw(st.sampled_from(PATHS))
    if kind == "name":  # the names' alphabet and specs, long or short
        field = draw(st.sampled_from(sorted(NAMING_FIELDS)))
        return ("set", ("naming", field), draw(good_names(field)))
    if kind == "set":
        return ("set", path, draw(field_values(path)))
    if kind == "extra":
        key = draw(st.sampled_from(["spines", "password", "token", "x", 1]) | st.text(max_size=6))
        return ("extra", (*path, "_"), (key, draw(scalars)))
    return ("drop", path, None)


@st.composite
def intents(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for op in draw(st.lists(operations(), max_size=3)):
        _apply(data, op)
    return data


def _loader_verdict(text: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="d40s-") as tmp:
        path = Path(tmp) / "fabric.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_intent(path)
        except IntentError as exc:
            return False, str(exc)
    return True, ""


def check_agreement(data: dict[str, Any]) -> str:
    """Assert the property for one intent; return what both said (for the statistics)."""
    text = yaml.dump(data, Dumper=DUMPER, allow_unicode=True, sort_keys=False)
    parsed = yaml.load(text, Loader=LOADER)  # what a user's tool reads from the file
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in VALIDATOR.iter_errors(parsed)]
    broken = sorted(name for name, rule in BEYOND_SCHEMA.items() if not errors and rule(parsed))
    accepted, message = _loader_verdict(text)
    expected = not errors and not broken
    assert accepted == expected, (
        f"loader {'accepts' if accepted else 'refuses'} ({message}) but the schema says "
        f"{errors or 'valid'}{' and ' + str(broken) if broken else ''}:\n{text}"
    )
    verdict = "valid" if not errors else "invalid"
    return f"loader {'accepts' if accepted else 'refuses'}, schema {verdict} {broken or ''}"


# Each disagreement the property found (issue 40's four first), kept as a case: (field,
# value, whether both now accept, words of the loader's message when it refuses).
FOUND: list[tuple[str, Any, bool, str]] = [
    ("addressing.loopbacks", "not-an-ip", False, "is not a valid IPv4 network"),
    ("naming.leaf", "P{PLANE}-G{GROUP}-LEAF{LEAF}", False, "unknown field(s)"),
    ("gpus", None, False, "give the cluster size as servers or gpus"),
    ("gpus", "4", False, "valid integer, not the text '4' (write the number without quotes)"),
    ("gpus", 4.0, True, ""),
    ("mtu", " 9216", False, "valid integer"),
    ("asn.spine", True, False, "valid integer, not true"),
    ("vni_base", "1", False, "valid integer"),
    ("bfd", 1, False, "valid boolean"),
    ("roce.enabled", "yes", False, "valid boolean"),
    ("planes", [{"id": 1.0}, {"id": 2}], True, ""),
    ("planes", [{"id": True}, {"id": 2}], False, "valid integer, not true"),
    ("planes", [{"id": 1}, {"id": 1}], False, "exactly planes 1 and 2"),
    ("planes.0.description", "a\n", False, "free text may use"),
    ("planes.0.description", b"x", False, "valid string"),
    ("credentials.username", "admin\n", False, "should match pattern"),
    ("addressing.anycast_gateway_mac", "02:dc:00:00:00:01\n", False, "should match pattern"),
    ("name", "lab\n", False, "should match pattern"),
    ("switches.leaf", "VLAB-4\n", False, "should match pattern"),
    ("credentials.ssh_key_file", "/k\n", False, "should match pattern"),
    ("addressing.rail_subnets", 167772160, False, "write it as text"),
    ("addressing.rail_subnets", True, False, "write it as text"),
    ("addressing.loopbacks", "10.255.0.0", False, "here '10.255.0.0/32'"),
    ("addressing.loopbacks", "10.255.0.0/255.255.255.0", False, "here '10.255.0.0/24'"),
    ("addressing.loopbacks", "10.255.0.1/24", False, "host bits set"),
    ("addressing.loopbacks", "", False, "is not a valid IPv4 network"),
    ("addressing.rail_prefixlen", 31, False, "less than or equal to 30"),
    ("asn.leaf_start", 0, False, "greater than or equal to 1"),
    ("naming.spine", " p{plane}-spine{spine}", False, "gives the name ' p1-spine1'"),
    ("naming.server", "srv{server:2}", False, "gives the name 'srv 1'"),
    ("naming.server", "srv{server:1}", True, ""),
    ("naming.leaf", "{leaf:02x}{plane}{group}", True, ""),
    ("naming.spine", "{plane}{spine}" + "x" * 70, False, "at most 63 characters"),
    # hold >= 3 keepalives, the defaults (3/9 s) included (CI, 2026-12-07: keepalive 59 alone)
    ("bgp_timers", {"keepalive": 59}, False, "give hold >= 177"),
    ("bgp_timers", {"keepalive": 3}, True, ""),
    ("bgp_timers", {"keepalive": 2, "hold": 5}, False, "give hold >= 6"),
    ("bgp_timers", {"hold": 8}, False, "give hold >= 9"),
    ("bgp_timers", {"keepalive": 10, "hold": 30}, True, ""),
    ("bgp_timers", {"keepalive": 60, "hold": 180}, True, ""),
    ("bgp_timers", {"keepalive": 4.0, "hold": 12}, True, ""),
]


def _set(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    if value is None:
        data.pop(path, None)
    else:
        _apply(data, ("set", tuple(path.split(".")), value))
    return data


@pytest.mark.parametrize(("path", "value", "accepted", "reason"), FOUND, ids=repr)
def test_found_disagreements_now_agree(path: str, value: Any, accepted: bool, reason: str) -> None:
    data = _set(SEEDS[SEED_FILES.index(ROOT / "inventory/lab-dual-arp.yaml")], path, value)
    check_agreement(data)
    verdict, message = _loader_verdict(yaml.safe_dump(data, allow_unicode=True))
    assert verdict == accepted, message
    where = path if "naming" in path or "." not in path else path.rsplit(".", 1)[0]
    assert reason in message and (accepted or where.split(".")[0] in message), message


@pytest.mark.parametrize("seed", SEED_FILES, ids=[p.name for p in SEED_FILES])
def test_every_example_is_valid_for_both(seed: Path) -> None:
    data = yaml.safe_load(seed.read_text())
    assert VALIDATOR.is_valid(data)
    assert _loader_verdict(seed.read_text())[0]


@settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=intents())
def test_schema_valid_iff_loader_accepts(data: dict[str, Any]) -> None:
    event(check_agreement(data))


NETWORK = Draft202012Validator(SCHEMA["$defs"]["IPv4Network"])


@settings(max_examples=400, deadline=None)
@given(
    address=st.integers(0, 2**32 - 1),
    length=st.integers(-1, 33),
    masked=st.booleans(),
    tail=st.sampled_from(["", "\n", " "]),
)
def test_network_pattern_is_what_ipaddress_prints(
    address: int, length: int, masked: bool, tail: str
) -> None:
    """The schema's network pattern holds exactly the networks ipaddress prints."""
    if masked and 0 <= length <= 32:
        address &= (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF
    text = f"{ipaddress.IPv4Address(address)}/{length}{tail}"
    try:
        canonical = str(ipaddress.IPv4Network(text, strict=True)) == text
    except ValueError:
        canonical = False
    assert NETWORK.is_valid(text) == canonical
