"""Validate a CONFIG_DB document against SONiC's own YANG models (vendored, pinned).

The models are sonic-buildimage's ``src/sonic-yang-models`` at the commit named in
``models/README.md``; ``tables.json`` (generated from them by ``tools/vendor_sonic_yang.py``)
says, for every table, which module and list hold it. libyang comes from PyPI's
``oopt-gnpy-libyang`` (it bundles libyang 4 and exposes ``JsonStringDataTypes``, the parse
flag that lets CONFIG_DB's all-string values stand for numbers and booleans, as SONiC's own
libyang3 tooling does).

Translation rule (CONFIG_DB -> the models' RFC 7951 JSON), as SONiC's sonic_yang applies it:
- table ``T`` lives at ``<module>:<top>/T``; an entry whose key names a container of ``T``
  (DEVICE_METADATA|localhost) fills that container;
- otherwise the entry goes to the list of ``T`` whose key count equals the number of
  ``|``-separated parts of the key (INTERFACE_LIST for ``Ethernet0``,
  INTERFACE_IPPREFIX_LIST for ``Ethernet0|10.0.0.1/31``), the parts naming the key leaves;
- a list with one inner list (DSCP_TO_TC_MAP_LIST, CABLE_LENGTH_LIST) takes every field
  that is not one of its own leaves as an inner entry ``{inner key: field, value leaf: value}``.

BUFFER_POOL is not part of what dpctl renders: a unit's pools come from its HWSKU buffer
template (sizes are ASIC-specific). BUFFER_PROFILE.pool is a leafref to BUFFER_POOL, so a
document holding profiles but no pools is validated with ``HWSKU_POOL_STUB`` merged in: the
two pool names every SONiC lossless buffer template defines. The check thus proves that the
profiles name one of those pools; the pools' sizes remain the HWSKU's business.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import oopt_gnpy_libyang as ly

from controller.errors import DpctlError

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
TABLES_FILE = HERE / "tables.json"
MODELS_COMMIT = "086b03bd70f9e211aaaf5f6aefe0790b508d2a94"
MODELS_SOURCE = f"sonic-buildimage master {MODELS_COMMIT[:8]}"

HWSKU_POOL_STUB: dict[str, dict[str, str]] = {
    "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic"},
    "egress_lossless_pool": {"type": "egress", "mode": "dynamic"},
}
MAX_LISTED = 10


@dataclass(frozen=True)
class Problem:
    """One model violation, named as CONFIG_DB names things."""

    table: str
    key: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.table}|{self.key}" if self.key else self.table or "(document)"
        return f"{where} {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class SonicYangError(DpctlError):
    """A rendered config_db.json is not valid against SONiC's YANG models."""

    def __init__(self, device: str, problems: list[Problem]) -> None:
        self.problems = problems
        listed = "\n  ".join(str(p) for p in problems[:MAX_LISTED])
        more = len(problems) - MAX_LISTED
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(
            device,
            f"config_db.json is not valid against SONiC's YANG models ({MODELS_SOURCE}), "
            f"{len(problems)} problem(s):\n  {listed}{tail}",
        )


@cache
def table_map() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TABLES_FILE.read_text())
    return data


@cache
def _context() -> Any:
    # Keep libyang's messages in the context (read back per error), never on stderr: the
    # compile-time notes about cross-module XPath are not problems of the rendered config.
    ly.set_log_options(ly.LogOptions.Store)
    ly.set_log_level(ly.LogLevel.Error)
    ctx = ly.Context(
        str(MODELS), ly.ContextOptions.NoYangLibrary | ly.ContextOptions.DisableSearchCwd
    )
    for path in sorted(MODELS.glob("*.yang")):
        ctx.load_module(path.stem)
    return ctx


def _list_entry(spec: dict[str, Any], key: str, fields: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = dict(zip(spec["keys"], key.split("|"), strict=True))
    inner = spec.get("inner")
    own = set(spec["leaves"]) | set(spec.get("leaf_lists", ()))
    rows = []
    for field, value in fields.items():
        if inner is not None and field not in own:
            value_leaf = next(leaf for leaf in inner["leaves"] if leaf not in inner["keys"])
            rows.append({inner["keys"][0]: field, value_leaf: value})
        else:
            entry[field] = value
    if inner is not None and rows:
        entry[inner["name"]] = rows
    return entry


def translate(db: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """CONFIG_DB -> the models' JSON tree, and what cannot be placed in any model."""
    tables = table_map()
    tree: dict[str, Any] = {}
    problems: list[Problem] = []
    for table, entries in db.items():
        spec = tables.get(table)
        if spec is None:
            problems.append(Problem(table, "", "", "no YANG model has this table"))
            continue
        node = tree.setdefault(f"{spec['module']}:{spec['top']}", {}).setdefault(table, {})
        for key, fields in entries.items():
            if key in spec["containers"]:
                node[key] = dict(fields)
                continue
            parts = key.count("|") + 1
            lists = [s for s in spec["lists"] if len(s["keys"]) == parts]
            if not lists:
                problems.append(Problem(table, key, "", f"no list of {table} has {parts} key(s)"))
                continue
            node.setdefault(lists[0]["name"], []).append(_list_entry(lists[0], key, fields))
    return tree, problems


def _split_path(path: str) -> list[str]:
    """'/a/b[k='1.2.3.4/32']/c' -> ['a', "b[k='1.2.3.4/32']", 'c'] (slashes in quotes kept)."""
    parts, current, quote = [], "", ""
    for char in path:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "/":
            if current:
                parts.append(current)
            current = ""
            continue
        current += char
    if current:
        parts.append(current)
    return parts


def _predicates(segment: str) -> list[str]:
    values, rest = [], segment
    while "=" in rest:
        _, rest = rest.split("=", 1)
        quote = rest[0]
        value, rest = rest[1:].split(quote, 1)
        values.append(value)
    return values


_NAMED_NODE = re.compile(r'^(?:Node|Mandatory node) "([^"]+)"')


def problem_from(path: str, message: str) -> Problem:
    """Name a libyang error by table, CONFIG_DB key and field from its data path."""
    message = " ".join(message.split())
    segments = _split_path(path)
    if len(segments) < 2:
        return Problem("", "", "", message)
    table = segments[1].split(":")[-1]
    key, field = "", ""
    rest = segments[2:]
    if rest:
        head = rest[0]
        # a list entry's key leaves, or a container's name (DEVICE_METADATA|localhost)
        key = "|".join(_predicates(head)) if "[" in head else head
        for segment in rest[1:]:
            name = segment.split("[", 1)[0].split(":")[-1]
            field = "|".join(_predicates(segment)) if "[" in segment else name
    named = _NAMED_NODE.match(message)
    if named and not field:
        field = named.group(1)  # unknown or missing field: the path stops at its entry
    return Problem(table, key, field, message)


def validate(db: dict[str, Any]) -> list[Problem]:
    """Every model violation of one CONFIG_DB document, in one pass; [] when valid."""
    doc = db
    if "BUFFER_PROFILE" in db and "BUFFER_POOL" not in db:
        doc = {**db, "BUFFER_POOL": HWSKU_POOL_STUB}
    tree, problems = translate(doc)
    if problems:
        return problems
    ctx = _context()
    ctx.clean_all_errors()
    try:
        ctx.parse_data(
            json.dumps(tree),
            ly.DataFormat.JSON,
            ly.ParseOptions.Strict | ly.ParseOptions.JsonStringDataTypes,
            ly.ValidationOptions.NoState
            | ly.ValidationOptions.Present
            | ly.ValidationOptions.MultiError,
        )
    except ly.Error as exc:
        errors = [e for e in ctx.errors() if e.level.name == "Error"] if ctx.errors() else []
        found = [problem_from(e.data_path or "", e.message) for e in errors]
        ctx.clean_all_errors()
        return found or [Problem("", "", "", str(exc))]
    return []


def check_device(device: str, db: dict[str, Any]) -> None:
    """Raise SonicYangError naming the device and every violation; return when valid."""
    problems = validate(db)
    if problems:
        raise SonicYangError(device, problems)


def check_rendered(device: str, files: dict[str, str]) -> None:
    """The engine's post-render check for platform sonic: validate the written JSON itself."""
    check_device(device, json.loads(files["config_db.json"]))
