"""Human output and exit codes of every command (CliRunner, with fakes where a switch or a
lab would be needed): words for people, never a Python repr; 0 done, 1 failed, 2 bad input."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from controller.cli.output import lab_down_text, live_enabled, step_name
from controller.deploy import DeviceOutcome
from controller.drain import DrainRefused, DrainReport
from controller.verify import Check
from tests.conftest import INVENTORY, run_cli

LAB = str(INVENTORY / "lab-dual-arp.yaml")
REPR = re.compile(r"\{'|\[<|<[A-Za-z_.]+ object at|\w+\(\w+=")


def assert_human(output: str) -> None:
    assert not REPR.search(output), f"Python repr in human output:\n{output}"
    assert "Traceback" not in output


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setenv("DPCTL_PASSWORD", "not-used")
    monkeypatch.chdir(tmp_path)


def test_version_and_exit_codes_in_help() -> None:
    result = run_cli("--version")
    assert result.exit_code == 0 and re.fullmatch(r"dpctl \d+\.\d+\.\d+\n", result.output)
    helptext = run_cli("--help").output
    assert "Exit codes: 0 done" in helptext and "2 bad input or refused" in helptext


def test_lab_down_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "controller.cli.lab.down",
        lambda *a, **k: {
            "guest_stopped": [4553],
            "namespaces_removed": [],
            "taps_removed": ["dpl-u1a2b30"],
        },
    )
    result = run_cli("lab", "down", "-f", LAB)
    assert result.exit_code == 0
    assert_human(result.output)
    # the guest is QEMU or User-Mode Linux: named by its pid only
    assert "stopped the lab guest (pid 4553); removed tap dpl-u1a2b30" in result.output
    assert "nothing was running" in lab_down_text("x", {"guest_stopped": []})
    # the check itself catches the old output
    with pytest.raises(AssertionError):
        assert_human("lab down x: {'guest_stopped': [4553], 'namespaces_removed': []}")


def checks(failing: bool) -> list[Check]:
    result = [
        Check("p1-spine1", "bgp-sessions", True, ["swp1", "swp2"], ["swp1", "swp2"]),
        Check("p1-g1-leaf1", "bgp-sessions", True, ["swp3", "swp4"], ["swp3", "swp4"]),
        Check("p1-g1-leaf1", "maintenance (in service)", True, "none", "none"),
        Check("p1-g1-leaf2", "maintenance (drained: isolated)", True, "isolated", "isolated"),
        Check("p1-spine1", "host-routes", True, {"10.100.0.2/32": 1}, {"10.100.0.2/32": 1}),
    ]
    if failing:
        result.append(Check("p1-spine2", "bgp-sessions", False, ["swp1", "swp2"], ["swp2"]))
    return result


def test_healthy_verify_prints_a_summary_per_check_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("controller.cli.verify.run_verify", lambda *a, **k: checks(False))
    result = run_cli("verify", "-f", LAB)
    assert result.exit_code == 0
    assert_human(result.output)
    assert "failed" not in result.output.split("checks by kind")[0]  # no empty failure table
    for kind in ("bgp-sessions", "maintenance", "host-routes"):
        assert re.search(rf"{kind}\s.*ok", result.output), kind
    assert "drained: p1-g1-leaf2" in result.output
    assert "5/5 checks passed" in result.output


def test_failing_verify_lists_failures_first_and_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("controller.cli.verify.run_verify", lambda *a, **k: checks(True))
    result = run_cli("verify", "-f", LAB)
    assert result.exit_code == 1
    assert_human(result.output)
    assert result.output.index("p1-spine2") < result.output.index("checks by kind")
    assert "swp1, swp2" in result.output and "1 of 6 checks failed" in result.output


@pytest.mark.parametrize("ok", [True, False])
def test_deploy_table_and_exit_code(monkeypatch: pytest.MonkeyPatch, ok: bool) -> None:
    def fake(*a: Any, **k: Any) -> dict[str, DeviceOutcome]:
        bad = DeviceOutcome(ok=False, error="commit failed: timeout", rolled_back=True)
        return {"p1-spine1": DeviceOutcome(ok=True, changed=True, seconds=1.5)} | (
            {} if ok else {"p1-spine2": bad}
        )

    monkeypatch.setattr("controller.cli.deploy.run_deploy", fake)
    result = run_cli("deploy", "-f", LAB, "--plane", "1")
    assert result.exit_code == (0 if ok else 1)
    assert_human(result.output)
    assert "p1-spine1" in result.output
    assert ok or "rolled back" in result.output


def report(action: str, states: list[str]) -> DrainReport:
    r = DrainReport("p1-g1-leaf1", action, "p2-g1-leaf1", ["srv0001"], [], ["one plane"])
    r.steps = [{"state": s, "ok": True, "error": None, "seconds": 2.0} for s in states]
    r.ok = True
    return r


def test_undrain_names_its_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "controller.cli.undrain.run_undrain",
        lambda *a, **k: report("undrain", ["returning", "none"]),
    )
    result = run_cli("undrain", "p1-g1-leaf1", "-f", LAB)
    assert result.exit_code == 0
    assert_human(result.output)
    assert not re.search(r"step none\b", result.output)
    assert "step in service" in result.output and "undrain of p1-g1-leaf1 done" in result.output
    assert step_name("none") != "none"


def test_refused_drain_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: Any, **k: Any) -> DrainReport:
        raise DrainRefused("p1-g1-leaf1", "refused: pair leaf p2-g1-leaf1 is drained")

    monkeypatch.setattr("controller.cli.drain.run_drain", refuse)
    result = run_cli("drain", "p1-g1-leaf1", "-f", LAB)
    assert result.exit_code == 2 and "refused" in result.output
    assert_human(result.output)


BAD_INPUT = [
    ("plan",),
    ("plan", "--model", "CX999"),
    ("generate", "-f", "missing.yaml"),
    ("render", "-f", "missing.yaml"),
    ("render", "--plane", "3"),
    ("deploy", "-f", "missing.yaml"),
    ("verify", "-f", "missing.yaml"),
    ("rollback", "-f", LAB),
    ("drain", "p1-g1-leaf1", "-f", "missing.yaml"),
    ("undrain", "p1-g1-leaf1", "-f", "missing.yaml"),
    ("lab", "up", "-f", LAB, "--runtime", "docker"),
    ("lab", "down", "-f", "missing.yaml"),
    ("lab", "status", "-f", "missing.yaml"),
    ("lab", "export", "-f", "missing.yaml"),
    ("lab", "logs", "-f", "missing.yaml"),
    ("lab", "logs", "-f", LAB, "--state-dir", "/nonexistent/dpi-lab"),
    ("hosts", "configure", "-f", "missing.yaml"),
    ("hosts", "verify", "-f", "missing.yaml"),
    ("report", "-f", "missing.yaml"),
    ("draw", "-f", "missing.yaml"),
    ("no-such-command",),
]


@pytest.mark.parametrize("args", BAD_INPUT, ids=lambda a: " ".join(a[:2]))
def test_bad_input_exits_2_without_traceback(args: tuple[str, ...]) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert_human(result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_progress_only_at_a_terminal_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Console(force_terminal=True)
    monkeypatch.delenv("CI", raising=False)
    assert live_enabled(terminal, as_json=False)
    assert not live_enabled(terminal, as_json=True)
    assert not live_enabled(Console(force_terminal=False), as_json=False)
    monkeypatch.setenv("CI", "true")
    assert not live_enabled(terminal, as_json=False)


def test_nornir_writes_no_log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nornir.core.task import Result

    monkeypatch.chdir(tmp_path)  # nornir's default file log lands in the current directory

    from controller.access import SwitchAccess
    from controller.connection import build_nornir
    from controller.generator import build_fabric
    from controller.intent import load_intent

    fabric = build_fabric(load_intent(Path(LAB)))
    nr = build_nornir(fabric, ["p1-spine1"], SwitchAccess("u", "p", lab=True))
    results = nr.run(task=lambda task: Result(host=task.host, result="x"))
    assert results["p1-spine1"][0].result == "x"
    assert not (tmp_path / "nornir.log").exists()
    assert list(tmp_path.glob("*.log")) == []


def test_lab_up_reports_each_phase_as_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from types import SimpleNamespace

    from controller.generator import build_fabric
    from controller.intent import load_intent
    from controller.lab import fabric as labfabric

    seen: list[str] = []
    monkeypatch.setattr(
        "controller.lab.fabric.up",
        lambda *a, **k: (
            seen.append("up ran")
            or SimpleNamespace(
                name="x",
                mode="m",
                kernel="k",
                timings={},
                substrate="s",
                substrate_reason="r",
                guests=1,
            )
        ),
    )
    monkeypatch.setattr(labfabric, "provision_servers", lambda *a: seen.append("provisioned") or {})
    fabric = build_fabric(load_intent(Path(LAB)))
    labfabric.bring_up(fabric, tmp_path, prefix="dpt-", progress=seen.append)
    assert seen == [
        "guest, 8 switches and 2 servers",
        "up ran",
        "provisioning servers (bonds, addresses, routes)",
        "provisioned",
    ]
