"""dpctl's Ansible collection (playbooks/ansible_collections/dpctl/fabric, docs/hosts-ansible.md).

The modules' documentation as Ansible reads it (`ansible-doc`, and Ansible's own
validate-modules sanity check run from ansible-core's ansible-test), the playbooks run by
`ansible-playbook` on this machine (connection local, a server without GPU NICs: the modules
read the kernel's state and change nothing in it; the persistent files go to a temporary
folder), the boot-time applier and the lab's copy of the NIC module run without Ansible, and
the size limits of the module's split. ansible-lint runs in .ci/run.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.release import __version__ as ansible_version

from controller.generator import build_fabric
from controller.intent import load_intent
from controller.lab.fabric import server_setup_script
from controller.resources import COLLECTION, collection_dir, collection_python, collections_path
from tests.conftest import INVENTORY

FABRIC = collection_dir()
MODULES = ("dpctl_gpu_nic", "dpctl_host_port")
UTILS = "ansible_collections.dpctl.fabric.plugins.module_utils"
PERSIST = collection_python("plugins.module_utils.gpu_nic_persist")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} (ansible-core, a dpctl dependency) is not installed")
    return path


def _env(tmp: Path) -> dict[str, str]:
    """Ansible from this checkout's collections path, its temporary files under ``tmp``."""
    return {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path()),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local"),
        "ANSIBLE_REMOTE_TEMP": str(tmp / "ansible-remote"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
    }


def _run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


# -- documentation ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODULES)
def test_ansible_doc_reads_the_options_the_module_takes(name: str, tmp_path: Path) -> None:
    """What `ansible-doc` shows is what the module's argument_spec accepts: every option,
    with its type, elements, choices, default and whether it is required."""
    fqcn = f"{COLLECTION}.{name}"
    out = _run([_tool("ansible-doc"), "-t", "module", "--json", fqcn], _env(tmp_path))
    doc = json.loads(out)[fqcn]
    options = doc["doc"]["options"]
    spec = collection_python(f"plugins.modules.{name}").ARGUMENT_SPEC
    assert set(options) == set(spec)
    for option, arg in spec.items():
        shown = options[option]
        for key in ("type", "elements", "choices", "default"):
            assert shown.get(key) == arg.get(key), (option, key)
        assert shown.get("required", False) == arg.get("required", False), option
        assert shown["description"], option
    assert doc["doc"]["short_description"] and doc["return"]
    for task in yaml.safe_load(doc["examples"]):
        args = task[fqcn]
        assert set(args) <= set(spec), task["name"]
        assert {o for o, a in spec.items() if a.get("required")} <= set(args), task["name"]
    text = _run([_tool("ansible-doc"), "-t", "module", fqcn], _env(tmp_path))
    assert fqcn in text.splitlines()[0].lower()  # its heading (upper case in ansible-core 2.16)
    assert all(option in text for option in spec)


def _ignored(version: str) -> set[tuple[str, str]]:
    """(path, code) of validate-modules' errors the collection accepts, each with its reason
    (tests/sanity/ignore-X.Y.txt, ansible-test's format)."""
    path = FABRIC / "tests" / "sanity" / f"ignore-{version}.txt"
    found = set()
    for line in path.read_text().splitlines():
        entry, _, reason = line.partition(" # ")
        file, test = entry.split()
        assert reason.strip(), f"{path}: {line!r} gives no reason"
        found.add((file, test.removeprefix("validate-modules:")))
    return found


def test_ansible_validate_modules_passes(tmp_path: Path) -> None:
    """Ansible's own validate-modules (the sanity check ansible-test runs; ansible-test
    itself cannot run here: it downloads pip for its virtual environments) on both modules,
    documentation against argument_spec included: no error but those the ignore file gives
    a reason for, and no ignore entry that is not needed."""
    spec = importlib.util.find_spec("ansible_test")
    assert spec is not None and spec.origin is not None, "ansible-test (ansible-core) missing"
    tool = Path(spec.origin).parent / "_util/controller/sanity/validate-modules/validate.py"
    galaxy = yaml.safe_load((FABRIC / "galaxy.yml").read_text())
    paths = [f"plugins/modules/{name}.py" for name in MODULES]
    argv = [sys.executable, str(tool), "--format", "json", "--arg-spec"]
    argv += ["--collection", "ansible_collections/dpctl/fabric"]
    argv += ["--collection-version", galaxy["version"], *paths]
    env = {**_env(tmp_path), "PYTHONPATH": str(collections_path())}
    proc = subprocess.run(argv, cwd=FABRIC, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 3) and not proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    errors = {(path, e["code"]) for path, found in report.items() for e in found["errors"]}
    errors |= {(path, "traceback") for path, found in report.items() if found["traces"]}
    version = ".".join(ansible_version.split(".")[:2])
    assert errors == _ignored(version), json.dumps(report, indent=1)


def _tasks(path: Path) -> Iterator[dict[str, Any]]:
    for item in yaml.safe_load(path.read_text()):
        yield from item.get("tasks", [item] if "name" in item and "hosts" not in item else [])


def test_the_playbooks_give_the_modules_only_options_they_take() -> None:
    books = sorted(FABRIC.glob("playbooks/*.yml")) + sorted(FABRIC.glob("roles/*/tasks/*.yml"))
    used = set()
    for book in books:
        for task in _tasks(book):
            for name in MODULES:
                args = task.get(f"{COLLECTION}.{name}")
                if args is None:
                    continue
                used.add(name)
                spec = collection_python(f"plugins.modules.{name}").ARGUMENT_SPEC
                assert set(args) <= set(spec), (book.name, task["name"])
                required = {o for o, a in spec.items() if a.get("required")}
                assert required <= set(args), (book.name, task["name"])
    assert used == set(MODULES)


# -- the playbooks run by Ansible on this machine ---------------------------------------------
def _inventory(tmp: Path) -> Path:
    """This machine as a GPU server with no GPU NIC (connection local)."""
    group = {
        "hosts": {"localhost": {"nics": []}},
        "vars": {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "rails": {},
            "rail_members": {},
            "bond_options": {"mode": "802.3ad"},
            "arp_on_both_ports": False,
            "rail_pool": "10.100.0.0/16",
            "mtu": 9000,
            "arp_keepalive_s": 2,
            "roce": {},
        },
    }
    path = tmp / "inventory.json"
    path.write_text(json.dumps({"all": {"children": {"gpu_servers": group}}}))
    return path


def _playbook(book: str, tmp: Path, *extra: str) -> str:
    """`ansible-playbook` as dpctl runs it (the playbook's path in the collection), or
    by its name in the collection (``dpctl.fabric.X``)."""
    target = book if book.startswith(f"{COLLECTION}.") else str(FABRIC / "playbooks" / book)
    argv = [_tool("ansible-playbook"), "-i", str(_inventory(tmp)), target, *extra]
    return _run(argv, _env(tmp), cwd=tmp)


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """configure.yml run twice on this machine, its config root a temporary folder: (that
    root, the first run's output, the second's)."""
    tmp = tmp_path_factory.mktemp("ansible")
    root = tmp / "root"
    first = _playbook("configure.yml", tmp, "-e", f"dpctl_config_root={root}")
    second = _playbook("configure.yml", tmp, "-e", f"dpctl_config_root={root}")
    return root, first, second


def test_configure_writes_the_applier_with_its_module_utils(
    configured: tuple[Path, str, str],
) -> None:
    """Through AnsiballZ: the role hands the module its own source, the module adds the
    module_utils it was shipped with, byte for byte the collection's files; a second run
    changes nothing."""
    root, first, second = configured
    module = FABRIC / "plugins" / "modules" / "dpctl_gpu_nic.py"
    assert (root / PERSIST.APPLIER).read_bytes() == module.read_bytes()
    folder = root / PERSIST.APPLIER_DIR / UTILS.replace(".", "/")
    written = {p.name for p in folder.glob("*.py")}
    assert written == {f"{name}.py" for name in PERSIST.APPLIER_UTILS}
    for name in written:
        assert (folder / name).read_bytes() == (FABRIC / "plugins/module_utils" / name).read_bytes()
    assert (root / PERSIST.APPLIER_TREE / "__init__.py").read_text() == ""
    assert "changed=1" in first.split("PLAY RECAP")[1]
    assert "changed=0" in second.split("PLAY RECAP")[1]


def test_verify_and_host_ports_run(tmp_path: Path) -> None:
    """verify.yml (no NIC: no check) and host_ports.yml by its name in the collection."""
    out = _playbook("verify.yml", tmp_path)
    assert "ok=1 " in out.split("PLAY RECAP")[1]
    ports = json.dumps({"dpctl_host_ports": {"localhost": []}, "dpctl_port_state": "up"})
    out = _playbook(f"{COLLECTION}.host_ports", tmp_path, "-e", ports)
    assert "failed=0" in out.split("PLAY RECAP")[1]


# -- the NIC module without Ansible -----------------------------------------------------------
def _bare_python(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """This Python without site-packages (so without Ansible) nor PYTHONPATH, elsewhere."""
    cmd = [sys.executable, "-S", "-E", *argv]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)


def test_the_applier_copy_runs_alone(configured: tuple[Path, str, str], tmp_path: Path) -> None:
    """The written copy runs as the boot unit runs it: its module_utils come from the folder
    next to it, Ansible is not needed."""
    root = configured[0]
    applier = str(root / PERSIST.APPLIER)
    boot = _bare_python(applier, "--apply-persistent", str(root), cwd=tmp_path)
    assert boot.returncode == 0, boot.stderr
    assert json.loads(boot.stdout) == {"changed": False, "lacp_control": {}, "nics": {}}
    lacp = _bare_python(applier, "--lacp-independent", "dpctl-no-such-bond", cwd=tmp_path)
    assert lacp.returncode == 1 and lacp.stderr.startswith("dpctl-no-such-bond: "), lacp.stderr
    empty = _bare_python(applier, "--apply-persistent", str(tmp_path), cwd=tmp_path)
    assert empty.returncode == 1
    assert (
        empty.stderr.strip()
        == f"dpctl-gpu-nic: no persistent GPU NIC configuration under {tmp_path}"
    )


def test_the_lab_servers_setup_runs_the_module_with_its_module_utils(tmp_path: Path) -> None:
    """The EVPN-MH lab server's set-up script (what `sh -s` runs on it): the module_utils
    written to a temporary folder on PYTHONPATH, the module's source on standard input with
    ``--lacp-independent`` (here for a bond that does not exist: the module's own error),
    the folder removed on exit."""
    fabric = build_fabric(load_intent(INVENTORY / "lab-evpn-mh.yaml"))
    lines = server_setup_script(fabric, fabric.servers[0]).splitlines()
    start = lines.index("utils=$(mktemp -d)")
    call = next(i for i, line in enumerate(lines) if line.startswith("python3 - --lacp-"))
    assert lines[call] == "python3 - --lacp-independent gpu1 gpu2 <<'EOF'"
    end = lines.index("EOF", call)
    script = ["set -e", *lines[start:call], "python3 - --lacp-independent dpctl-no <<'EOF'"]
    script += [*lines[call + 1 : end + 1], "echo not reached"]
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        ["sh", "-s"], input="\n".join(script) + "\n", env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1 and proc.stderr.startswith("dpctl-no: "), proc.stderr
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


# -- the split ------------------------------------------------------------------------------
def _imports(path: Path) -> set[str]:
    """The collection's module_utils a Python file imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{UTILS}."):
            found.add(str(node.module).removeprefix(f"{UTILS}."))
    return found


def test_the_applier_gets_every_module_utils_the_module_imports() -> None:
    seen: set[str] = set()
    todo = _imports(FABRIC / "plugins" / "modules" / "dpctl_gpu_nic.py")
    while todo:
        name = todo.pop()
        seen.add(name)
        todo |= _imports(FABRIC / "plugins" / "module_utils" / f"{name}.py") - seen
    assert seen == set(PERSIST.APPLIER_UTILS)
    for source in PERSIST.applier_utils().values():  # each is a heredoc in the lab's script
        assert "EOF" not in source.splitlines()


def test_no_file_over_500_lines_and_no_function_over_60() -> None:
    for path in sorted(FABRIC.rglob("*.py")):
        text = path.read_text()
        assert len(text.splitlines()) <= 500, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = int(node.end_lineno or 0) - node.lineno + 1
                assert length <= 60, f"{path.name}: {node.name} has {length} lines"
