"""The fabric intent: one short YAML file from which everything else follows.

Schema first (pydantic v2, extra keys forbidden): a typo in a key is an error, never a
silently ignored line. Credentials are references (environment variable names, key file
paths); a secret written into the intent is refused.

The loader and the JSON Schema (``dpctl schema``) draw the same line (issue 40): users check
intents with their own tools, so a value the schema refuses is refused here and the other way
round, but for RULES_BEYOND_SCHEMA (tests/unit/test_schema_loader_agree.py). Types are JSON's:
``gpus: "4"`` is text, not a number, and is refused (write ``gpus: 4``), as are ``true`` for
a number and ``1`` or ``"yes"`` for a flag. A network engineer reads a quoted value as text,
YAML and every JSON Schema tool do too, and a loader that quietly turned text into numbers
would accept ``" 4"`` or ``"4.0"`` while the user's editor flags them. ``4.0`` is the number
4 (JSON Schema counts it as an integer), so it is accepted.
"""

from __future__ import annotations

import re
import string
from ipaddress import IPv4Network
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from controller import intent_patterns as patterns
from controller import platforms
from controller.errors import IntentError
from controller.intent_rules import hold_covers_keepalives

DualLeafMode = Literal["dual-arp", "evpn-mh"]


def _known_platform(value: Any) -> Any:
    """A platform of the registry (built-in, entry point or registered), named like pydantic
    names a Literal's choices."""
    known = platforms.names()
    if isinstance(value, str) and value not in known:
        choices = ", ".join(f"'{n}'" for n in known[:-1]) + f" or '{known[-1]}'"
        raise ValueError(f"Input should be {choices}")
    return value


PlatformName = Annotated[
    str,
    AfterValidator(_known_platform),
    Field(json_schema_extra=lambda schema: schema.update(enum=list(platforms.names()))),
]
LoadBalancingMode = Literal["ars", "wcmp", "pbr", "spray", "ecmp"]
IncastLevel = Literal["low", "medium", "high"]
SonicRelease = Literal["master", "202605", "202511"]
Text = Annotated[str, Strict()]


def _json_integer(value: Any) -> Any:
    """JSON's integers: 4.0 is the number 4 (as in JSON Schema); text and true/false are not."""
    if isinstance(value, bool):
        raise ValueError(f"Input should be a valid integer, not {str(value).lower()}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        number = re.fullmatch(r"\s*[+-]?[0-9]+\s*", value)
        hint = " (write the number without quotes)" if number else ""
        raise ValueError(f"Input should be a valid integer, not the text {shown!r}{hint}")
    return value


JSON_INTEGER = BeforeValidator(_json_integer)
# Bounds go inside the Annotated, before the validator: given to the field of an optional or
# re-annotated integer, pydantic writes them to the JSON Schema as "ge"/"le", which no JSON
# Schema tool knows (the schema/loader property test found it).
Integer = Annotated[int, Strict(), JSON_INTEGER]
Count = Annotated[int, Strict(), Field(ge=1), JSON_INTEGER]
Asn = Annotated[int, Strict(), Field(ge=1, le=4_294_967_294), JSON_INTEGER]
MacAddress = Annotated[Text, Field(pattern=patterns.MAC_ADDRESS)]


def _parse_network(value: Any) -> IPv4Network:
    """Give ipaddress's own reason (host bits set, bad octet) instead of a generic one, and
    take only the form ipaddress prints (what the schema's pattern states)."""
    if not isinstance(value, str):
        raise ValueError(
            f"{value!r} is not a valid IPv4 network: write it as text like '10.0.0.0/24'"
        )
    try:
        network = IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid IPv4 network: {exc}") from None
    if str(network) != value:
        raise ValueError(
            f"{value!r} is not a valid IPv4 network as written: give it as address/prefix "
            f"length without leading zeros, here {str(network)!r}"
        )
    return network


Pool = Annotated[
    IPv4Network,
    BeforeValidator(_parse_network),
    WithJsonSchema({"type": "string", "pattern": patterns.IPV4_NETWORK}),
]

NAME_FIELDS = {
    "leaf": {"plane", "group", "leaf"},
    "spine": {"plane", "spine"},
    "server": {"server", "group"},
}

# Every generated device name reaches switch configs (descriptions, BGP neighbour text),
# file paths (render/<device>/) and Ansible/SSH command lines: it must be one DNS label.
DEVICE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,62}$")
DEVICE_NAME_RULE = (
    "device names may use only ASCII letters, digits and '-', start with a letter or digit "
    "and be at most 63 characters (one DNS label)"
)
# Format specs a naming field may carry: zero padding, width, decimal/hex; nothing that could
# produce other characters ({server:c}) or fill with arbitrary text ({server:_>5}).
FORMAT_SPEC_RE = re.compile(r"^(0?[1-9][0-9]?)?[dxX]?$")
# Values a pattern is tried with when the intent is read (the generator checks every real name
# again): small and large, so width and alphabet problems show here.
SAMPLE_VALUES = (1, 99_999)
FREE_TEXT_RE = patterns.FREE_TEXT
FREE_TEXT_RULE = (
    "free text may use ASCII letters, digits, spaces and _ . , : ; ( ) / + = @ # - "
    "(at most 200 characters; no quotes, braces, backslashes or line breaks)"
)


def check_device_name(name: str, where: str) -> str:
    """Raise ValueError unless ``name`` is a safe device name (see DEVICE_NAME_RULE)."""
    if not DEVICE_NAME_RE.fullmatch(name):
        raise ValueError(f"{where} gives the name {name!r}: {DEVICE_NAME_RULE}")
    return name


# The loader's rules no JSON Schema can state; the schema's description and docs/intent.md
# list them, and the schema/loader property test checks each with its own code.
RULES_BEYOND_SCHEMA = {
    "naming-length": (
        "naming.leaf, naming.spine, naming.server: the name a pattern gives for field values "
        "1 and 99999 is at most 63 characters (the length depends on how wide each field "
        "expands, a sum a JSON Schema cannot compute)"
    ),
}


class _Strict(BaseModel):
    # python-re: the patterns are shared with the JSON Schema (controller/intent_patterns.py)
    # and use a lookahead, which pydantic's default (Rust) engine has not.
    model_config = ConfigDict(extra="forbid", frozen=True, regex_engine="python-re")


CatalogModel = Annotated[Text, Field(pattern=patterns.CATALOG_MODEL)]


class SwitchModels(_Strict):
    leaf: CatalogModel = Field(description="Catalog model of every leaf, e.g. CX864E-N")
    spine: CatalogModel = Field(description="Catalog model of every spine")


class Plane(_Strict):
    id: Annotated[Literal[1, 2], BeforeValidator(_json_integer)]
    description: Text = Field(
        default="", description=FREE_TEXT_RULE, json_schema_extra={"pattern": FREE_TEXT_RE}
    )

    @field_validator("description")
    @classmethod
    def _safe_text(cls, text: str) -> str:
        if not re.fullmatch(FREE_TEXT_RE, text):
            raise ValueError(f"{text[:60]!r}: {FREE_TEXT_RULE}")
        return text


class Addressing(_Strict):
    loopbacks: Pool = Field(description="Pool for switch loopbacks (router id, VTEP)")
    rail_subnets: Pool = Field(description="Pool cut into one subnet per (group, rail)")
    management: Pool = Field(description="Out-of-band management: switches, then servers")
    rail_prefixlen: Annotated[int, Strict(), Field(ge=8, le=30), JSON_INTEGER] | None = Field(
        default=None,
        description="Prefix length per rail subnet (default: smallest fit)",
    )
    anycast_gateway_mac: MacAddress = "02:dc:00:00:00:01"


class AsnScheme(_Strict):
    spine: Asn = Field(default=65000, description="Spines of plane p use spine + p - 1")
    leaf_start: Asn = Field(default=65100, description="Leaves get leaf_start, +1, ... fabric-wide")


class Roce(_Strict):
    enabled: StrictBool = True
    cable_length_m: Integer = Field(default=5, ge=1, le=40000)
    incast: IncastLevel = "medium"
    mode: Literal["lossless", "lossy"] = Field(
        default="lossless", description="Both mark ECN on TCs 3, 4; lossless adds PFC (not Linux)"
    )


class LoadBalancing(_Strict):
    mode: LoadBalancingMode = "ecmp"
    spray_algorithm: Literal["random", "round-robin"] = "random"


class BgpTimers(_Strict):
    """BGP keepalive and hold time of every session (``timers bgp KEEPALIVE HOLD``)."""

    keepalive: Integer = Field(default=3, ge=1, le=60, description="Keepalive interval, s")
    hold: Integer = Field(
        default=9,
        ge=3,
        le=180,
        description="Hold time, s: a session whose peer is silent this long goes down. At "
        "least 3 keepalives (RFC 4271, 4.4 suggests a third of the hold time)",
    )

    @model_validator(mode="after")
    def _three_keepalives_per_hold(self) -> BgpTimers:
        if self.hold < 3 * self.keepalive:
            raise ValueError(
                f"hold {self.hold} s is less than 3 keepalives of {self.keepalive} s: "
                f"a session would drop on one lost keepalive; give hold >= {3 * self.keepalive}"
            )
        return self


class Credentials(_Strict):
    """References only: where the secret lives, never the secret."""

    username: Text = Field(
        default="admin",
        pattern=patterns.USERNAME,
        description="Login user: letters, digits, _ . - (at most 32, not starting with - or .)",
    )
    password_env: Text | None = Field(default=None, pattern=patterns.ENV_NAME)
    ssh_key_file: Text | None = Field(
        default=None,
        pattern=patterns.KEY_PATH,
        max_length=4096,
        description="Path of the SSH private key (no control characters, at most 4096)",
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("password", "secret", "private_key", "token"):
                if key in data:
                    raise ValueError(
                        f"'{key}' holds a secret; secrets never go in the intent: name an "
                        "environment variable with password_env or a key file with ssh_key_file"
                    )
        return data


class Naming(_Strict):
    """Patterns of the device names (Python format strings over the fields listed per kind).

    Every name a pattern expands to must be a safe device name: ASCII letters, digits and
    '-', starting with a letter or digit, at most 63 characters. A field may carry only a
    width/zero-padding and d/x/X as format spec (e.g. {server:04d}).
    """

    # The validator below gives the reason in words; the schema states the same rule as a
    # pattern (but for the names' length: RULES_BEYOND_SCHEMA).
    leaf: Text = Field(
        default="p{plane}-g{group}-leaf{leaf}",
        description="Leaf names; fields {plane} {group} {leaf}. " + DEVICE_NAME_RULE,
        json_schema_extra={"pattern": patterns.naming_pattern(NAME_FIELDS["leaf"])},
    )
    spine: Text = Field(
        default="p{plane}-spine{spine}",
        description="Spine names; fields {plane} {spine}. " + DEVICE_NAME_RULE,
        json_schema_extra={"pattern": patterns.naming_pattern(NAME_FIELDS["spine"])},
    )
    server: Text = Field(
        default="srv{server:04d}",
        description="GPU server names; fields {server} {group}. " + DEVICE_NAME_RULE,
        json_schema_extra={"pattern": patterns.naming_pattern(NAME_FIELDS["server"])},
    )

    @field_validator("leaf", "spine", "server")
    @classmethod
    def _safe_pattern(cls, pattern: str, info: ValidationInfo) -> str:
        kind = str(info.field_name)
        allowed = NAME_FIELDS[kind]
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        try:
            parts = list(string.Formatter().parse(pattern))
        except ValueError as exc:
            raise ValueError(f"pattern {shown!r} is not a valid format string ({exc})") from None
        used = {f for _, f, _, _ in parts if f is not None}
        unknown = used - allowed
        if "" in used or unknown:
            raise ValueError(
                f"pattern {shown!r} uses unknown field(s) {sorted(unknown or {'{}'})}; "
                f"allowed: {sorted(allowed)}"
            )
        for _, field, spec, conversion in parts:
            if field is None:
                continue
            if conversion or not FORMAT_SPEC_RE.fullmatch(spec or ""):
                bad = f"!{conversion}" if conversion else f":{spec}"
                raise ValueError(
                    f"pattern {shown!r}: field {{{field}{bad}}} has a format the names cannot "
                    "use; allowed: {field}, {field:04d}, {field:x} (width, zero padding, d/x/X)"
                )
        for value in SAMPLE_VALUES:
            name = pattern.format(**dict.fromkeys(allowed, value))
            check_device_name(name, f"pattern {shown!r}")
        return pattern


# Cross-field rules of the loader, in the schema's words: servers or gpus given as a number,
# and the two planes are 1 and 2.
SIZE_GIVEN: list[Any] = [
    {"required": [key], "properties": {key: {"type": "integer"}}} for key in ("servers", "gpus")
]
PLANES_ONE_AND_TWO: list[Any] = [
    {"contains": {"type": "object", "required": ["id"], "properties": {"id": {"const": i}}}}
    for i in (1, 2)
]


class FabricIntent(_Strict):
    """A dual-plane, rail-optimized GPU back-end fabric."""

    model_config = ConfigDict(json_schema_extra={"anyOf": SIZE_GIVEN})

    name: Text = Field(pattern=patterns.FABRIC_NAME, description="Fabric name")
    platform: PlatformName
    switches: SwitchModels
    servers: Count | None = Field(default=None, description="GPU servers (or give gpus)")
    gpus: Count | None = Field(default=None, description="Total GPUs (or give servers)")
    gpus_per_server: Integer = Field(default=8, ge=1, le=64)
    installed_servers_per_group: Count | None = Field(
        default=None,
        description="Servers cabled so far in each group, its first N positions: the switch "
        "layer is built and configured for the whole cluster, servers, their cables, host "
        "ports' per-server settings and checks only for these (a cluster racked in phases; "
        "the seed-scale lab's server sample). Default: every server",
    )
    planes: tuple[Plane, Plane] = Field(
        default=(Plane(id=1), Plane(id=2)), json_schema_extra={"allOf": PLANES_ONE_AND_TWO}
    )
    dual_leaf_mode: DualLeafMode
    # On in both modes: without it a leaf's failure or drain (and in EVPN-MH a server link's)
    # black-holes the plane's half of every flow into the servers behind that leaf for the
    # whole outage (README, "Cross-plane protection"; docs/failure-matrix.md).
    cross_plane_protection: StrictBool = Field(
        default=True,
        description="Backup path for the host routes between the two leaves of a pair (dual-ARP: "
        "an AUX link to the other plane's leaf; EVPN-MH: over the pair's own session). "
        "Default: on in both dual-leaf modes",
    )
    addressing: Addressing
    asn: AsnScheme = AsnScheme()
    roce: Roce = Roce()
    load_balancing: LoadBalancing = LoadBalancing()
    credentials: Credentials = Credentials()
    naming: Naming = Naming()
    mtu: Integer = Field(default=9216, ge=1500, le=9216)
    bfd: StrictBool = True
    bgp_timers: BgpTimers = Field(
        default=BgpTimers(),
        json_schema_extra={"allOf": hold_covers_keepalives()},
        description="BGP keepalive/hold of every session (default 3/9 s; with BFD on, BFD "
        "finds a dead link first). The seed-scale lab relaxes them: its one guest runs 48 "
        "switches' daemons",
    )
    evpn_mh_startup_delay: Integer = Field(
        default=180,
        ge=0,
        le=3600,
        description="Seconds EVPN-MH keeps ES ports down after a restart (FRR default 180)",
    )
    sonic_release: SonicRelease = Field(
        default="master",
        description="SONiC release the platform-sonic configs target: 'master' means "
        "sonic-buildimage master at or after the vendored YANG models' commit (086b03bd); "
        "release branches lack models dpctl needs and are refused with the reason",
    )
    vni_base: Integer = Field(default=10000, ge=1, le=16_000_000)
    vlan_base: Integer = Field(default=1000, ge=2, le=3000)

    @field_validator("planes")
    @classmethod
    def _two_planes(cls, planes: tuple[Plane, Plane]) -> tuple[Plane, Plane]:
        if sorted(p.id for p in planes) != [1, 2]:
            raise ValueError("a dual-plane fabric has exactly planes 1 and 2")
        return planes

    @model_validator(mode="after")
    def _gpu_count(self) -> FabricIntent:
        if self.servers is None and self.gpus is None:
            raise ValueError("give the cluster size as servers or gpus")
        return self


def _no_duplicate_keys(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


class _IntentLoader(yaml.SafeLoader):
    pass


_IntentLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicate_keys)


def _field_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def intent_from_data(data: Any, source: str = "intent") -> FabricIntent:
    if not isinstance(data, dict):
        raise IntentError(source, "the intent must be a YAML mapping of fields")
    try:
        return FabricIntent.model_validate(data)
    except ValidationError as exc:
        problems = [
            (_field_path(e["loc"]), e["msg"].removeprefix("Value error, ")) for e in exc.errors()
        ]
        where, reason = problems[0]
        more = "".join(f"\n  {field}: {msg}" for field, msg in problems[1:])
        raise IntentError(where, reason + more) from None


def load_intent(path: Path) -> FabricIntent:
    """Read and validate an intent file; any problem is an IntentError naming the field."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise IntentError(str(path), f"cannot read the intent file ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise IntentError(
            f"{path}:{line}",
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the intent file as UTF-8",
        ) from None
    try:
        data = yaml.load(text, Loader=_IntentLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        reason = getattr(exc, "problem", None) or str(exc)
        raise IntentError(where, f"not valid YAML: {reason}") from None
    return intent_from_data(data, str(path))


SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def intent_schema() -> dict[str, Any]:
    """The intent's JSON Schema (Draft 2020-12): what load_intent accepts, but for the rules
    it lists in its description (RULES_BEYOND_SCHEMA) and those checked once the fabric is
    built from the intent (docs/intent.md)."""
    schema = FabricIntent.model_json_schema()
    network = {"type": "string", "pattern": patterns.IPV4_NETWORK}
    schema["$defs"]["IPv4Network"] = {**network, "description": patterns.IPV4_NETWORK_RULE}
    for prop in schema["$defs"]["Addressing"]["properties"].values():
        if all(prop.get(key) == value for key, value in network.items()):
            del prop["type"], prop["pattern"]
            prop["$ref"] = "#/$defs/IPv4Network"
    beyond = "; ".join(RULES_BEYOND_SCHEMA.values())
    schema["description"] += (
        f" Rules this schema cannot state, checked by dpctl when it reads the intent: {beyond}."
        " Checked when dpctl builds the fabric (dpctl plan): the catalog's switch models and "
        "their platforms, the sizes, the address pools' sizes and overlaps, the ASNs "
        "(docs/intent.md)."
    )
    return {"$schema": SCHEMA_DIALECT, **schema}
