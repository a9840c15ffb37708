"""The seed's two sizing tables are acceptance tests: every row must come out exactly."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, run_json

# Total GPUs / servers, leaves, spines, 400G links per leaf-spine pair (both planes counted).
CX864E_N = [
    (512, 64, 8, 4, 32),
    (1024, 128, 16, 8, 16),
    (2048, 256, 32, 16, 8),
    (4096, 512, 64, 32, 4),
    (8192, 1024, 128, 64, 2),
    (16384, 2048, 256, 128, 1),
]
CX732Q_N = [
    (256, 32, 16, 8, 4),
    (512, 64, 32, 16, 2),
    (1024, 128, 64, 32, 1),
]
ROWS = [("CX864E-N", *row) for row in CX864E_N] + [("CX732Q-N", *row) for row in CX732Q_N]


@pytest.mark.parametrize(("model", "gpus", "servers", "leaves", "spines", "links"), ROWS)
def test_dpctl_plan_reproduces_seed_row(
    model: str, gpus: int, servers: int, leaves: int, spines: int, links: int
) -> None:
    code, plan = run_json("plan", "--model", model, "--gpus", str(gpus))
    assert code == 0
    assert (plan["gpus"], plan["servers"], plan["leaves"], plan["spines"]) == (
        gpus,
        servers,
        leaves,
        spines,
    )
    assert plan["links_per_leaf_spine_pair"] == links
    assert plan["leaves_per_plane"] * 2 == leaves and plan["spines_per_plane"] * 2 == spines
    assert plan["uplink_speed"] == "400G"


@pytest.mark.parametrize(("model", "rows"), [("CX864E-N", CX864E_N), ("CX732Q-N", CX732Q_N)])
def test_plan_table_contains_every_seed_row(model: str, rows: list[tuple[int, ...]]) -> None:
    code, table = run_json("plan", "--model", model, "--table")
    assert code == 0
    got = {
        (r["gpus"], r["servers"], r["leaves"], r["spines"], r["links_per_leaf_spine_pair"])
        for r in table["rows"]
    }
    assert set(rows) <= got
    assert max(r["gpus"] for r in table["rows"]) == rows[-1][0]  # the largest two-tier fabric


def test_64_servers_share_leaves_two_rails_each() -> None:
    code, plan = run_json("plan", "--model", "CX864E-N", "--gpus", "512")
    assert code == 0 and plan["rails_per_leaf"] == 2 and plan["leaves_per_plane"] == 4


def test_table_text_output_shows_rows() -> None:
    result = run_cli("plan", "--model", "CX732Q-N", "--table")
    assert result.exit_code == 0
    assert "1,024" in result.stdout and "Links/pair" in result.stdout


def test_uneven_spine_count_rounds_up_to_divisor_and_reports_spare_ports() -> None:
    # 384 servers: 24 leaves/plane x 64 uplinks / 128 = 12 spines, which does not divide 64;
    # the planner takes 16 spines, 4 links per pair, leaving 32 ports per spine spare.
    code, plan = run_json("plan", "--model", "CX864E-N", "--gpus", "3072")
    assert code == 0
    assert plan["spines_per_plane"] == 16
    assert plan["links_per_leaf_spine_pair"] == 4
    assert plan["spare_ports_per_spine"] == 32
