"""`dpctl accept` and `dpctl lab impair` on bad input: exit 2, the field and the reason,
nothing changed; the impair bookkeeping (wiring after swaps, which ends move, LLDP parsing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.generator import build_fabric
from controller.intent import load_intent
from controller.lab import impair
from tests.conftest import INVENTORY, run_cli

LAB = INVENTORY / "lab-dual-arp.yaml"
FABRIC = build_fabric(load_intent(LAB))


@pytest.fixture(autouse=True)
def no_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPCTL_LAB_PREFIX", "dpt-accept-")
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setenv("DPCTL_STATE_DIR", str(tmp_path / "state"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch:port", "--down"], "CABLE 'nosuch:port': not a cable end"),
        (["srv0001:nic9p9", "--down"], "CABLE 'srv0001:nic9p9': not a cable end"),
        (["srv0001:nic1p1", "--down", "--mtu", "1500"], "give exactly one of"),
        (["srv0001:nic1p1"], "give exactly one of"),
        (["--down"], "name at least one cable end"),
        (["srv0001:nic1p1", "--loss", "150"], "--loss must be 0 < PCT <= 100, not 150"),
        (["srv0001:nic1p1", "--mtu", "20"], "--mtu must be 68..65535, not 20"),
        (["--swap", "srv0001:nic1p1"], "needs two CABLE ends, got 1"),
        (["--swap", "srv0001:nic1p1", "p1-g1-leaf1:swp3"], "both server ends or both switch"),
        (["--swap", "srv0001:nic1p1", "p1-g1-leaf1:swp1"], "two ends of two different cables"),
        (["srv0001:nic1p1", "--down"], "no lab state"),
    ],
)
def test_lab_impair_bad_input_exits_2_naming_why(args: list[str], message: str) -> None:
    result = run_cli("lab", "impair", "-f", str(LAB), *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split()), result.stderr
    assert "Traceback" not in result.stderr


def test_accept_without_a_lab_is_refused() -> None:
    result = run_cli("accept", "-f", str(LAB), "--target", "embedded")
    assert result.exit_code == 2
    assert "the embedded lab of lab-dual-arp is not running" in result.stderr


def test_wiring_follows_the_recorded_swaps() -> None:
    swaps = [("p1-spine1:swp1", "p1-spine2:swp1")]
    peer = impair.wiring(FABRIC, swaps)
    assert peer[("p1-spine1", "swp1")] == ("p1-g1-leaf1", "swp4")
    assert peer[("p1-g1-leaf1", "swp4")] == ("p1-spine1", "swp1")
    assert impair.wiring(FABRIC, swaps + swaps) == impair.wiring(FABRIC, [])


def test_swap_moves_server_ends_or_ends_on_two_switches() -> None:
    peer = impair.wiring(FABRIC, [])
    leaves = (("p2-g1-leaf1", "swp2"), ("p2-g1-leaf2", "swp2"))
    assert impair._movable(FABRIC, *leaves, peer) == (("srv0002", "nic1p2"), ("srv0002", "nic2p2"))
    spines = (("p1-spine1", "swp1"), ("p1-spine2", "swp1"))
    assert impair._movable(FABRIC, *spines, peer) == spines
    same_leaf = (("p1-g1-leaf1", "swp3"), ("p1-g1-leaf1", "swp4"))
    assert impair._movable(FABRIC, *same_leaf, peer) == spines


def test_lldp_neighbour_from_lldpcli_keyvalue() -> None:
    out = (
        "END p1-spine1:swp1\n"
        "lldp.swp1.chassis.name=p1-g1-leaf1\nlldp.swp1.port.ifname=swp3\n"
        "END p1-spine2:swp1\n"
    )
    assert impair._neighbour(out, ("p1-spine1", "swp1")) == ("p1-g1-leaf1", "swp3")
    assert impair._neighbour(out, ("p1-spine2", "swp1")) is None


def test_clear_restores_a_ports_own_qos_lines() -> None:
    lines = impair.qos_lines(FABRIC, ("p1-g1-leaf1", "swp3"))
    assert lines[0].startswith("qdisc add dev swp3 root handle 1: prio")
    assert all(" dev swp3 " in line for line in lines)
    assert impair.qos_lines(FABRIC, ("srv0001", "nic1p1")) == []
