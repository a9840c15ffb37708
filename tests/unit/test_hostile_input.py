"""Hostile and broken input: a clear error naming the field, exit code 2, nothing written
outside --out, never a Python traceback (issue 12). Each reported traceback or escape is a
regression case here; the last test runs every subcommand with a set of bad inputs. (A corrupt
maintenance state is tested with the operator state, tests/unit/test_opstate.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.main import get_command

from controller.cli import app
from controller.errors import OutputError
from controller.generator import build_fabric
from controller.intent import intent_from_data, intent_schema
from controller.outputs.writer import write_all
from tests.conftest import ROOT, run_cli


def _dpctl(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Any:
    """The real CLI in a subprocess: what a user's terminal shows, traceback or not."""
    return subprocess.run(
        [sys.executable, "-c", "from controller.cli import app; app()", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        check=False,
        timeout=120,
    )


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("field", "pattern", "reason"),
    [
        ("server", "srv{server}\n shutdown", "gives the name 'srv1\\n shutdown'"),
        ("leaf", "../../x{plane}-{group}-{leaf}", "gives the name '../../x1-1-1'"),
        ("leaf", "p{plane}-g{group}-leaf{leaf:zz}", "{leaf:zz} has a format"),
        ("server", "srv{server:c}", "{server:c} has a format"),
        ("server", "srv{server!r}", "{server!r} has a format"),
        ("spine", "s{spine:_>9}{plane}", "{spine:_>9} has a format"),
        ("spine", "{plane}{spine}" + "x" * 70, "at most 63 characters"),
        ("server", "srv{server} ", "gives the name 'srv1 '"),
        ("server", "srv{}", "unknown field"),
        ("leaf", "leaf{leaf.real}{plane}{group}", "unknown field"),
        ("leaf", "ünïcode{leaf}{plane}{group}", "only ASCII letters"),
        ("server", "srv{server", "not a valid format string"),
    ],
)
def test_naming_pattern_refused(
    tmp_path: Path, base_intent: dict[str, Any], field: str, pattern: str, reason: str
) -> None:
    base_intent["naming"] = {field: pattern}
    intent = tmp_path / "fabric.yaml"
    intent.write_text(yaml.safe_dump(base_intent, allow_unicode=True))
    result = run_cli("render", "-f", str(intent), "-o", str(tmp_path / "deep" / "out"))
    assert result.exit_code == 2, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.startswith(f"error: naming.{field}: ")
    assert reason in result.stderr
    assert _files(tmp_path) == {intent}, "nothing written, least of all outside --out"


@pytest.mark.parametrize(
    ("field", "pattern"),
    [("server", "srv{server}\n shutdown"), ("leaf", "../../{leaf}"), ("leaf", "{leaf:zz}")],
)
def test_reported_cases_in_a_terminal(
    tmp_path: Path, base_intent: dict[str, Any], field: str, pattern: str
) -> None:
    """The issue's reproductions, as a user runs them: no traceback, no file written."""
    base_intent["naming"] = {field: pattern}
    intent = tmp_path / "fabric.yaml"
    intent.write_text(yaml.safe_dump(base_intent))
    proc = _dpctl("render", "-f", str(intent), "-o", "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"naming.{field}" in proc.stderr
    assert _files(tmp_path) == {intent}


def test_safe_patterns_still_work(base_intent: dict[str, Any]) -> None:
    base_intent["naming"] = {"leaf": "L{plane}{group:02d}{leaf:x}", "server": "gpu-{server:05d}"}
    fabric = build_fabric(intent_from_data(base_intent))
    assert fabric.servers[0].name == "gpu-00001"
    assert {s.name for s in fabric.switches if s.role == "leaf"} >= {"L1011", "L2012"}


def test_schema_states_the_name_rule() -> None:
    naming = intent_schema()["$defs"]["Naming"]
    assert "at most 63 characters" in naming["properties"]["server"]["description"]
    assert "ASCII letters, digits and '-'" in naming["properties"]["leaf"]["description"]


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("planes", [{"id": 1, "description": "a\n shutdown"}, {"id": 2}], "planes.0.description"),
        ("credentials", {"username": "admin; reboot"}, "credentials.username"),
        ("credentials", {"ssh_key_file": "/k\nProxyCommand=x"}, "credentials.ssh_key_file"),
        ("switches", {"leaf": "../VLAB-4", "spine": "VLAB-4"}, "switches.leaf"),
    ],
)
def test_free_text_and_references_checked(
    base_intent: dict[str, Any], write_intent: Any, path: str, value: Any, field: str
) -> None:
    base_intent[path] = value
    result = run_cli("generate", "-f", str(write_intent(base_intent)), "-o", "/nonexistent/x")
    assert result.exit_code == 2
    assert field in result.stderr


def test_plan_table_zero_gpus_per_server_is_a_clean_error() -> None:
    proc = _dpctl("plan", "--model", "CX864E-N", "--table", "--gpus-per-server", "0")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "gpus_per_server: must be between 1 and 64, got 0" in proc.stderr


def test_plan_huge_gpus_per_server_is_refused_fast() -> None:
    result = run_cli("plan", "--model", "CX864E-N", "--table", "--gpus-per-server", str(10**12))
    assert result.exit_code == 2
    assert "between 1 and 64" in result.stderr


def test_non_utf8_intent_is_a_clean_error(tmp_path: Path) -> None:
    intent = tmp_path / "fabric.yaml"
    intent.write_bytes(b"name: lab\nplatform: frr\n# caf\xe9 in latin-1\n")
    proc = _dpctl("generate", "-f", str(intent), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{intent}:3" in proc.stderr
    assert "not UTF-8" in proc.stderr


@pytest.mark.parametrize(
    "name",
    ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/./b", "", "a\\..\\b", "a\nb", "a/.."],
)
def test_writer_refuses_names_outside_out(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(OutputError):
        write_all(out, {"ok.txt": b"x", name: b"y"})
    assert _files(tmp_path) == set(), "all or nothing: not even ok.txt"


def test_writer_refuses_a_symlink_out_of_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "dev").symlink_to(tmp_path)
    with pytest.raises(OutputError, match="resolves outside"):
        write_all(out, {"dev/escape.txt": b"y"})
    assert not (tmp_path / "escape.txt").exists()


# -- every subcommand x a set of bad inputs ----------------------------------------------------


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the CLI (its groups load their command modules when asked)."""
    found: list[tuple[str, ...]] = []
    for name in sorted(group.list_commands(None)):
        cmd = group.get_command(None, name)
        if hasattr(cmd, "list_commands"):
            found += _commands(cmd, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


COMMANDS = _commands(get_command(app))


def _bad_intents(tmp_path: Path, base: dict[str, Any]) -> dict[str, Path]:
    files: dict[str, bytes] = {
        "missing": b"",
        "not-utf8": b"name: x\xff\n",
        "not-yaml": b"name: [unclosed\n",
        "not-mapping": b"- 1\n- 2\n",
        "injected-name": yaml.safe_dump({**base, "naming": {"server": "s{server}\n shutdown"}}),
        "format-spec": yaml.safe_dump({**base, "naming": {"leaf": "{leaf:zz}{plane}{group}"}}),
        "path-escape": yaml.safe_dump({**base, "naming": {"leaf": "../../{leaf}{plane}{group}"}}),
        "huge": yaml.safe_dump({**base, "gpus": 10**40, "gpus_per_server": 2}),
        "negative": yaml.safe_dump({**base, "mtu": -1}),
        "bad-pool": yaml.safe_dump(
            {**base, "addressing": {**base["addressing"], "loopbacks": "x"}}
        ),
    }
    paths = {}
    for name, content in files.items():
        path = tmp_path / f"{name}.yaml"
        if name != "missing":
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = path
    return paths


def _args_for(command: tuple[str, ...], intent: Path, out: Path) -> list[str] | None:
    cmd = get_command(app)
    for part in command:
        cmd = cmd.commands[part]  # type: ignore[attr-defined]
    params = {p.name for p in cmd.params}
    if "fabric" not in params:
        return None
    args = [*command, "-f", str(intent)]
    if "leaf" in params:
        args.insert(len(command), "p1-g1-leaf1")
    if "out_dir" in params or "out_file" in params:
        args += ["-o", str(out / "o")]
    if "state_dir" in params:
        args += ["--state-dir", str(out / "lab")]
    return args


def test_every_subcommand_is_covered() -> None:
    assert {c[0] for c in COMMANDS} >= {"plan", "generate", "render", "deploy", "verify"}
    assert ("hosts", "configure") in COMMANDS
    assert ("lab", "up") in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=["-".join(c) for c in COMMANDS])
def test_every_subcommand_bad_intents_exit_2_without_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    base_intent: dict[str, Any],
    command: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCTL_LAB_PREFIX", "dpt-hostile-")  # never another lab's namespaces
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    base_intent.pop("gpus", None)
    base_intent["servers"] = 2
    work = tmp_path / "work"
    work.mkdir()
    for case, intent in _bad_intents(tmp_path, base_intent).items():
        args = _args_for(command, intent, work)
        if args is None:
            pytest.skip(f"{' '.join(command)} reads no intent (covered by option tests)")
        if command == ("lab", "down") and case == "huge":
            continue  # lab down needs only the fabric's name: it cleans up a fabric that grew
        result = run_cli(*args)
        shown = f"{' '.join(command)} [{case}]: {result.stderr}"
        assert result.exit_code == 2, shown
        assert result.exception is None or isinstance(result.exception, SystemExit), shown
        assert "Traceback" not in result.stderr, shown
        assert result.stderr.startswith("error: "), shown
        json_result = run_cli(*args, "--json")
        assert json_result.exit_code == 2, shown
        assert json.loads(json_result.stdout)["ok"] is False, shown
    assert _files(tmp_path) == {p for p in _files(tmp_path) if p.parent == tmp_path}


BAD_OPTIONS = [
    ["plan", "--model", "CX864E-N", "--table", "--gpus-per-server", "0"],
    ["plan", "--model", "CX864E-N", "--gpus", "-8"],
    ["plan", "--model", "CX864E-N", "--gpus", "8", "--gpus-per-server", "999999999"],
    ["plan", "--model", "../../etc", "--gpus", "8"],
    ["plan", "--model", "CX864E-N", "--gpus", str(10**30)],
    ["plan", "--gpus", "nine"],
    ["render", "--plane", "3"],
    ["render", "--device", "../../x"],
    ["deploy", "--device", "nope"],
    ["rollback"],
    ["hosts", "verify", "--server", "../x"],
    ["lab", "up", "--runtime", "docker"],
    ["lab", "export", "--kind", "junos"],
    ["schema", "--nope"],
    ["nope"],
]


@pytest.mark.parametrize("args", BAD_OPTIONS, ids=[" ".join(a) for a in BAD_OPTIONS])
def test_bad_options_exit_2_without_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "lab"))
    intent = tmp_path / "inventory" / "fabric.yaml"
    intent.parent.mkdir()
    intent.write_text((ROOT / "inventory" / "lab-dual-arp.yaml").read_text())
    result = run_cli(*args)
    assert result.exit_code == 2, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    assert result.stderr.strip()
