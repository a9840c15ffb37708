"""The import graph of controller/: stages import only downwards, nothing imports the lab but
the lab and the command line, no import cycles, and the agents stand alone.

Imports are read from the source (``ast``), every ``import`` at any depth except those under
``if TYPE_CHECKING:`` (annotations only, never executed).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "controller"

RECORDS = (
    "controller.platforms.frr",
    "controller.platforms.sonic",
    "controller.platforms.asternos",
)
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            "controller",
            "controller.errors",
            "controller.resources",
            "controller.platforms",
            "controller.platforms.spec",
            *RECORDS,
        ),
    ),
    (
        "intent",
        (
            "controller.intent",
            "controller.intent_patterns",
            "controller.intent_rules",
            "controller.catalog",
        ),
    ),
    (
        "facts",
        (
            "controller.sizing",
            "controller.addressing",
            "controller.facts",
            "controller.generator",
            "controller.servers",
        ),
    ),
    (
        "per-device data and text",
        (
            "controller.render",
            *(f"{r}.{m}" for r in RECORDS for m in ("render", "tables", "syntax", "provenance")),
            "controller.platforms.sonic.release",
            "controller.platforms.sonic.yang",
        ),
    ),
    (
        "outputs",
        (
            "controller.outputs",
            "controller.simulate",
            "controller.clab",
            "controller.maintain",  # the package; waves and their predicted impact
            "controller.maintain.waves",
            "controller.maintain.impact",
        ),
    ),
    (
        "drivers",
        (
            "controller.drivers",
            "controller.platforms.connection_plugin",
            *(
                f"{r}.{m}"
                for r in RECORDS
                for m in (
                    "driver",
                    "ssh",
                    "changes",
                    "agent",
                    "reads",
                    "getters",
                    "shell",
                    "confirm",
                    "actions",
                    "reload",
                    "apply_on_switch",
                )
            ),
        ),
    ),
    (
        "operations",
        (
            "controller.access",
            "controller.fabric_access",
            "controller.clab_access",
            "controller.connection",
            "controller.opstate",
            "controller.deployed",
            "controller.backups",
            "controller.deploy",
            "controller.rollback",
            "controller.verify",
            "controller.handoff",
            "controller.drain",
            "controller.hosts",
            "controller.ansible_inventory",
            "controller.traffic",
            "controller.traffic_ansible",
            "controller.accept",
            "controller.pipeline",
            "controller.maintain.rollout",
            "controller.maintain.state",
            "controller.maintain.steps",
        ),
    ),
    ("lab", ("controller.lab",)),
    ("command line", ("controller.cli",)),
]
AGENTS = "controller.agents"
"""Programs copied to switches and servers: standard library only (agents.pack, which
builds the ARP-to-host zipapp on the controller, reads the agents' files, imports none)."""


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            yield from (n for c in child.orelse for n in [c, *_walk(c)])
            continue
        yield child
        yield from _walk(child)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The controller modules ``name`` imports (a package's import of a submodule included)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            # `from pkg import submodule` depends on the submodule; any other name on pkg
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for index, (_label, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def test_every_module_has_a_stage() -> None:
    unplaced = [m for m in modules() if layer_of(m) < 0 and not m.startswith(AGENTS)]
    assert unplaced == [], f"modules in no stage of LAYERS: {unplaced}"


def test_stages_import_only_downwards() -> None:
    upward = [
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in graph().items()
        if not a.startswith(AGENTS)
        for b in sorted(targets)
        if not b.startswith(AGENTS) and layer_of(b) > layer_of(a)
    ]
    assert upward == []


def test_only_the_lab_and_the_command_line_import_the_lab() -> None:
    leaks = [
        f"{a} imports {b}"
        for a, targets in graph().items()
        for b in sorted(targets)
        if b.startswith("controller.lab") and not a.startswith(("controller.lab", "controller.cli"))
    ]
    assert leaks == []


def test_agents_import_nothing_of_the_controller() -> None:
    leaks = [
        f"{a} imports {b}"
        for a, targets in graph().items()
        if a.startswith(AGENTS)
        for b in sorted(targets)
        if not b.startswith(AGENTS)
    ]
    assert leaks == []


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules around it (None when there is none)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles() -> None:
    edges = graph()
    assert _cycle(edges) is None, " -> ".join(_cycle(edges) or [])


@pytest.mark.parametrize(
    ("edges", "found"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": set()}, None),
    ],
)
def test_the_cycle_finder_finds_a_cycle(
    edges: dict[str, set[str]], found: list[str] | None
) -> None:
    assert _cycle(edges) == found


def test_the_checks_catch_an_upward_and_a_lab_import(tmp_path: Path) -> None:
    """The same rules on a made-up module: render importing deploy, verify importing the lab."""
    source = tmp_path / "m.py"
    source.write_text("from controller.deploy import deploy\nimport controller.lab.access\n")
    known = set(modules())
    found = imports_of("controller.render.device", source, known)
    assert found == {"controller.deploy", "controller.lab.access"}
    assert layer_of("controller.deploy") > layer_of("controller.render.device")
    assert layer_of("controller.lab.access") == len(LAYERS) - 2


def test_the_pipeline_runs_stage_by_stage(tmp_path: Path) -> None:
    """The named stages, chained by hand up to the text, on the lab fabric."""
    from controller import pipeline

    intent = pipeline.load_intent(ROOT / "inventory" / "lab-dual-arp.yaml")
    fabric = pipeline.fabric_facts(intent)
    names = [s.name for s in fabric.switches_in(plane=1)]
    devices = pipeline.structured_configs(fabric, names)
    rendered = pipeline.device_configs(fabric, devices)
    assert sorted(rendered.files) == sorted(names)
    assert all("frr.conf" in files for files in rendered.files.values())
