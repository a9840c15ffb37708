"""Vendor SONiC's YANG models into controller/platforms/sonic/yang/ and regenerate the table map.

Development-time tool, not part of the installed package. Two steps:

``models``: copy ``src/sonic-yang-models/yang-models/*.yang`` of a sonic-buildimage git
directory at a commit, render its ``yang-templates/*.yang.j2`` the way its setup.py does for
the Python tooling (``yang_model_type="py"``, trim_blocks), and copy the LICENSE.

``tables``: read the vendored models with pyang (``pip install pyang``; only this script
needs it) and write ``tables.json``: for each CONFIG_DB table, the module, its top container,
the lists under the table container (keys, leaves, leaf-lists, an inner list) and the
containers. The validator translates CONFIG_DB to the models' JSON form with this map.

    python tools/vendor_sonic_yang.py models --repo /path/to/sonic-buildimage --commit SHA
    python tools/vendor_sonic_yang.py tables
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "controller" / "sonic_yang"
MODELS = TARGET / "models"
SRC = "src/sonic-yang-models"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def vendor_models(repo: Path, commit: str) -> None:
    MODELS.mkdir(parents=True, exist_ok=True)
    for old in MODELS.glob("*.yang"):
        old.unlink()
    names = _git(repo, "ls-tree", "--name-only", commit, f"{SRC}/yang-models/").split()
    for name in names:
        if name.endswith(".yang"):
            (MODELS / Path(name).name).write_text(_git(repo, "show", f"{commit}:{name}"))
    templates = _git(repo, "ls-tree", "--name-only", commit, f"{SRC}/yang-templates/").split()
    for name in templates:
        source = _git(repo, "show", f"{commit}:{name}")
        text = jinja2.Environment(trim_blocks=True).from_string(source).render(yang_model_type="py")
        (MODELS / Path(name).name.removesuffix(".j2")).write_text(text)
    (MODELS / "LICENSE").write_text(_git(repo, "show", f"{commit}:{SRC}/LICENSE"))
    print(f"{len(list(MODELS.glob('*.yang')))} modules -> {MODELS}")


def _data_children(node: Any) -> list[Any]:
    """Children as data sees them: the nodes of a choice's cases belong to the parent."""
    out = []
    for child in node.i_children:
        if child.keyword in ("choice", "case"):
            out += _data_children(child)
        else:
            out.append(child)
    return out


def _describe_list(node: Any) -> dict[str, Any]:
    keys = node.search_one("key").arg.split()
    leaves, leaf_lists, inner = [], [], []
    for child in _data_children(node):
        if child.keyword == "leaf":
            leaves.append(child.arg)
        elif child.keyword == "leaf-list":
            leaf_lists.append(child.arg)
        elif child.keyword == "list":
            inner.append(_describe_list(child))
    entry: dict[str, Any] = {"name": node.arg, "keys": keys, "leaves": leaves}
    if leaf_lists:
        entry["leaf_lists"] = leaf_lists
    if len(inner) == 1:
        entry["inner"] = inner[0]
    return entry


def _describe_container(node: Any) -> list[str]:
    return [c.arg for c in _data_children(node) if c.keyword in ("leaf", "leaf-list")]


def table_map() -> dict[str, Any]:
    from pyang import context, repository  # development-time dependency

    ctx = context.Context(repository.FileRepository(str(MODELS), use_env=False))
    modules = []
    for path in sorted(MODELS.glob("*.yang")):
        module = ctx.add_module(path.name, path.read_text())
        if module is not None:
            modules.append(module)
    ctx.validate()
    tables: dict[str, Any] = {}
    for module in modules:
        if module.keyword != "module":
            continue
        for top in module.i_children:
            if top.keyword != "container":
                continue
            for table in top.i_children:
                if table.keyword != "container":
                    continue
                lists = [_describe_list(c) for c in table.i_children if c.keyword == "list"]
                containers = {
                    c.arg: _describe_container(c)
                    for c in table.i_children
                    if c.keyword == "container"
                }
                if table.arg in tables:
                    print(f"warning: {table.arg} in {module.arg} and elsewhere", file=sys.stderr)
                tables[table.arg] = {
                    "module": module.arg,
                    "top": top.arg,
                    "lists": lists,
                    "containers": containers,
                }
    return dict(sorted(tables.items()))


def write_tables() -> None:
    tables = table_map()
    (TARGET / "tables.json").write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
    print(f"{len(tables)} tables -> {TARGET / 'tables.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    models = sub.add_parser("models")
    models.add_argument("--repo", type=Path, required=True, help="sonic-buildimage git dir")
    models.add_argument("--commit", required=True)
    sub.add_parser("tables")
    args = parser.parse_args()
    if args.step == "models":
        vendor_models(args.repo, args.commit)
    else:
        write_tables()


if __name__ == "__main__":
    main()
