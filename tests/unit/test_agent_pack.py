"""The ARP-to-host agent as it ships: one deterministic zipapp of its package.

The FRR driver stores the archive's SHA-256 with the applied config and restarts a switch's
agent when it differs, so the archive must be the same bytes for the same code (any build,
any machine: no timestamps, no build order, no compression library in it) and differ for
any other code. It runs with the standard library alone: the switch has no controller.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path

from controller.agents import pack
from controller.platforms.frr.agent import AGENT, agent_stamp
from tests.conftest import ROOT

PACKAGE = ROOT / "controller" / "agents" / "arp_to_host"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_same_code_builds_the_same_bytes() -> None:
    files = pack.agent_files()
    first = pack.build_archive(files)
    assert pack.build_archive(dict(reversed(list(files.items())))) == first  # any order
    assert pack.build_archive(pack.agent_files()) == first == pack.agent_archive()


def test_a_fresh_process_elsewhere_builds_the_same_bytes(tmp_path: Path) -> None:
    """Another process, time zone, umask and working folder, from a copy of the sources with
    other mtimes and modes: the same digest (nothing of the build's moment or place is in
    the archive)."""
    copy = tmp_path / "copy" / "controller"
    shutil.copytree(PACKAGE.parent, copy / "agents", copy_function=shutil.copy)
    shutil.copy(ROOT / "controller" / "__init__.py", copy)
    for path in copy.rglob("*.py"):
        os.utime(path, (1_000_000_000, 1_234_567_890))
        path.chmod(0o600)
    code = (
        "import hashlib, os, controller; os.umask(0o077); "
        "from controller.agents.pack import agent_archive; "
        "print(controller.__file__, hashlib.sha256(agent_archive()).hexdigest())"
    )
    env = {**os.environ, "PYTHONPATH": str(copy.parent), "TZ": "Asia/Kathmandu"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(copy / "__init__.py"), _sha(pack.agent_archive())]


def test_one_byte_or_a_name_changes_the_digest() -> None:
    files = pack.agent_files()
    base = _sha(pack.build_archive(files))
    name = "arp_to_host/kernel.py"
    changed = {**files, name: files[name].replace(b'PROTO = "static"', b'PROTO = "statid"')}
    assert changed[name] != files[name]
    assert _sha(pack.build_archive(changed)) != base
    renamed = {("arp_to_host/kernel2.py" if k == name else k): v for k, v in files.items()}
    assert _sha(pack.build_archive(renamed)) != base


def test_the_stamp_is_the_archives_digest() -> None:
    stamp = agent_stamp({"arp-to-host.json": '{"table": 100}'})
    assert stamp == f"{AGENT} sha256 {_sha(pack.agent_archive())}\n"


def test_the_archive_holds_the_package_sources_only() -> None:
    """Every .py of the package and the entry point; no bytecode, whatever sits beside them."""
    with zipfile.ZipFile(BytesIO(pack.agent_archive())) as archive:
        names = archive.namelist()
        infos = archive.infolist()
    expected = {f"arp_to_host/{p.name}" for p in PACKAGE.glob("*.py")} | {"__main__.py"}
    assert names == sorted(expected)
    assert all(i.date_time == pack.EPOCH and i.compress_type == zipfile.ZIP_STORED for i in infos)


def test_the_agent_imports_the_standard_library_and_itself_only() -> None:
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                top = node.module.split(".")[0]
            elif isinstance(node, ast.Import):
                top = node.names[0].name.split(".")[0]
            else:
                continue
            assert top in sys.stdlib_module_names, f"{path.name} imports {top}"


def test_the_archive_runs_without_the_controller(tmp_path: Path) -> None:
    """python3 -I, from a folder without the checkout: every module of the agent imports
    from the archive, and the entry point gets as far as reading its config."""
    agent = tmp_path / "arp_to_host.pyz"
    agent.write_bytes(pack.agent_archive())
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    code = (
        f"import sys; sys.path.insert(0, {str(agent)!r}); import importlib; "
        f"[importlib.import_module('arp_to_host.' + m) for m in {modules!r}]; "
        "print(sorted(m for m in sys.modules if m.startswith('controller')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    imported = subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert imported.returncode == 0 and imported.stdout.strip() == "[]", imported.stderr
    run = subprocess.run(
        [sys.executable, "-I", str(agent), str(tmp_path / "none.json")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and "none.json" in run.stderr, run.stderr


def test_no_module_over_500_lines_no_function_over_60() -> None:
    for path in [*PACKAGE.glob("*.py"), ROOT / "controller" / "agents" / "pack.py"]:
        text = path.read_text()
        assert text.count("\n") <= 500, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length <= 60, f"{path.name}: {node.name} has {length} lines"
