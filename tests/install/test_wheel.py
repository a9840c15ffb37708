"""A normal install works (issue 12): build the wheel, install it into a fresh virtual
environment, and from there run `dpctl plan`, `generate` and `render` for every platform and
an Ansible syntax check of the shipped playbooks.

Slow (about a minute: an isolated wheel build plus many CLI start-ups), hence the ``install``
marker; CI runs it with the rest of the suite (.ci/run). The venv sees the system's
site-packages for the dependencies (no download of dpctl's dependencies), but dpctl itself
comes only from the wheel: the test checks that the package and its data are imported from
the venv, and runs from a folder outside the checkout without PYTHONPATH.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from controller.agents.pack import agent_archive
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.engine import as_files, render_fabric

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ("frr", "sonic", "asternos")
pytestmark = pytest.mark.install

SKIP_COPY = shutil.ignore_patterns(
    ".git", "__pycache__", "build", "dist", "*.egg-info", ".dpctl", ".lab", ".hypothesis",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", "generated", "rendered",
)  # fmt: skip


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(argv)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """(venv folder, environment without the checkout) with the freshly built wheel."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DPCTL_TEMPLATES")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # build from a clean copy: setuptools reuses a build/ folder and would ship stale files
    source = base / "src"
    shutil.copytree(ROOT, source, ignore=SKIP_COPY)
    dist = base / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(source)], base, env
    )
    (wheel,) = dist.glob("dpctl-*.whl")
    target = base / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(target)
    python = target / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], base, env)
    env["PATH"] = f"{target / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    yield target, env


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "elsewhere"
    work.mkdir(exist_ok=True)
    return work


def test_package_and_data_come_from_the_venv(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    target, env = installed
    code = (
        "import controller, controller.resources as r, controller.hosts as h;"
        "print(controller.__file__); print(r.templates_dir()); print(h.PLAYBOOKS)"
    )
    out = _run([str(target / "bin" / "python"), "-c", code], _workdir(tmp_path), env).stdout
    package, templates, playbooks = (Path(line) for line in out.split())
    site = target.resolve()
    for path in (package, templates, playbooks):
        assert path.resolve().is_relative_to(site), (path, site)
    shipped = {p.relative_to(templates) for p in templates.rglob("*.j2")}
    assert shipped == {
        p.relative_to(ROOT / "templates") for p in (ROOT / "templates").rglob("*.j2")
    }
    for rel in (
        "configure.yml",
        "verify.yml",
        "host_ports.yml",
        "../plugins/modules/dpctl_gpu_nic.py",
    ):
        assert (playbooks / rel).is_file(), rel
    # the whole collection, module_utils too
    collection = ROOT / "playbooks" / "ansible_collections" / "dpctl" / "fabric"
    in_wheel = {p.relative_to(playbooks.parent) for p in playbooks.parent.rglob("*") if p.is_file()}
    assert in_wheel >= {
        p.relative_to(collection)
        for p in collection.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert (package.parent / "catalog" / "switches.yaml").is_file()


def test_the_installed_agent_is_the_checkouts(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The ARP-to-host agent a wheel ships packs to the same zipapp, byte for byte, as the
    checkout's (its SHA-256 is the stamp a switch's applied config holds)."""
    target, env = installed
    code = (
        "import hashlib, controller.agents.pack as p; print(p.__file__); "
        "print(hashlib.sha256(p.agent_archive()).hexdigest())"
    )
    out = _run([str(target / "bin" / "python"), "-c", code], _workdir(tmp_path), env).stdout
    where, digest = out.split()
    assert Path(where).resolve().is_relative_to(target.resolve())
    assert digest == hashlib.sha256(agent_archive()).hexdigest()


def test_plan_from_the_venv(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    target, env = installed
    dpctl = str(target / "bin" / "dpctl")
    work = _workdir(tmp_path)
    out = _run([dpctl, "plan", "--model", "CX864E-N", "--gpus", "2048"], work, env)
    assert "2,048" in out.stdout
    _run([dpctl, "plan", "--model", "CX732Q-N", "--table", "--json"], work, env)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_generate_and_render_every_platform_from_the_venv(
    installed: tuple[Path, dict[str, str]], tmp_path: Path, platform: str
) -> None:
    target, env = installed
    dpctl = str(target / "bin" / "dpctl")
    data = yaml.safe_load((ROOT / "tests/golden/intents/cx732q-small.yaml").read_text())
    data["platform"] = platform
    work = _workdir(tmp_path)
    intent = work / "fabric.yaml"
    intent.write_text(yaml.safe_dump(data))
    _run([dpctl, "generate", "-f", str(intent), "-o", "gen"], work, env)
    assert (work / "gen" / "cabling.csv").stat().st_size > 0
    _run([dpctl, "render", "-f", str(intent), "-o", "rendered"], work, env)
    # the installed templates render exactly what the checkout renders
    expected = as_files(render_fabric(build_fabric(intent_from_data(data))))
    got = {
        str(p.relative_to(work / "rendered")): p.read_bytes()
        for p in (work / "rendered").rglob("*")
        if p.is_file()
    }
    assert got == expected


def test_ansible_syntax_check_of_the_shipped_playbooks(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    target, env = installed
    ansible = shutil.which("ansible-playbook")
    if ansible is None:
        pytest.fail("ansible-playbook (ansible-core, a dpctl dependency) is not installed")
    code = "import controller.hosts as h; print(h.PLAYBOOKS)"
    work = _workdir(tmp_path)
    playbooks = Path(_run([str(target / "bin" / "python"), "-c", code], work, env).stdout.strip())
    assert playbooks.resolve().is_relative_to(target.resolve())
    env = {
        **env,
        # the collections path dpctl gives ansible-runner (controller.hosts)
        "ANSIBLE_COLLECTIONS_PATH": str(playbooks.parents[3]),
        "ANSIBLE_LOCAL_TEMP": str(work / "tmp"),
        "ANSIBLE_NOCOLOR": "True",
    }
    collection = ROOT / "playbooks" / "ansible_collections" / "dpctl" / "fabric"
    books = sorted(p.name for p in (collection / "playbooks").glob("*.yml"))
    assert "configure.yml" in books and "verify.yml" in books
    for book in books:
        out = _run(
            [ansible, "--syntax-check", "-i", "localhost,", str(playbooks / book)], work, env
        )
        assert f"playbook: {playbooks / book}" in out.stdout
