"""dpctl accept's RoCE rows on SONiC and AsterNOS: two reads of the lossless queues' counters
judged per planned port and lossless queue (3, 4).

Each read is built as the switch prints it, with our own numbers in the formats sonic-utilities'
scripts print (``pfcstat``'s two tables, ``queuestat -j`` and ``wredstat -j``'s JSON; sources
in tests/drivers/mocked/sonic/README.md), for the lab fabric's ports in SONiC's names, then
parsed by the driver's parser (controller/drivers/sonic_queues.py) and judged (controller/
accept/lossless.py). Every check is also shown failing: drops that grew fail, "N/A", a missing
port, a counter that went back and malformed output are skips naming the device and the
reason, never a pass.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from controller.accept import roce
from controller.accept.result import Finding
from controller.drivers import sonic_queues
from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.engine import structured_configs
from tests.conftest import INVENTORY
from tests.unit.test_accept_units import lab_like_access

LEAF = "p1-g1-leaf1"


def fabric_on(platform: str, **changes: Any) -> Fabric:
    data = yaml.safe_load((INVENTORY / "lab-dual-arp.yaml").read_text())
    switches = {"leaf": "CX732Q-N", "spine": "CX732Q-N"}
    data.update(platform=platform, switches=switches, **changes)
    return build_fabric(intent_from_data(data))


SONIC = fabric_on("sonic")
DEVICES = structured_configs(SONIC, [LEAF])
PORTS = [p.name for p in DEVICES[LEAF].interfaces]


def pfcstat(rx: dict[tuple[str, int], str], tx: dict[tuple[str, int], str]) -> str:
    """``pfcstat``'s two tables for every planned port (right-aligned cells, as tabulate's
    "simple" format prints them), 0 unless given."""
    out = []
    for title, given in (("Port Rx", rx), ("Port Tx", tx)):
        out.append(f"{title:>11}" + "".join(f"{f'PFC{p}':>8}" for p in range(8)))
        out.append("-" * 11 + "  ------" * 8)
        for port in PORTS:
            cells = [given.get((port, p), "0") for p in range(8)]
            out.append(f"{port:>11}" + "".join(f"{c:>8}" for c in cells))
        out.append("")
    return "\n".join(out)


def stat_json(column: str, given: dict[tuple[str, int], str]) -> str:
    """``queuestat -j`` / ``wredstat -j`` for every planned port: UC0-7 and MC8-15."""
    data: dict[str, Any] = {}
    for port in PORTS:
        queues: dict[str, Any] = {"time": "2024-06-03T10:15:42.123456"}
        for q in range(8):
            queues[f"UC{q}"] = {column: given.get((port, q), "0"), "dropbytes": "0"}
            queues[f"MC{q + 8}"] = {column: "5", "dropbytes": "0"}
        data[port] = queues
    return json.dumps(data, indent=2, sort_keys=True)


def reading(
    drops: dict[tuple[str, int], str] | None = None,
    rx: dict[tuple[str, int], str] | None = None,
    tx: dict[tuple[str, int], str] | None = None,
    marks: dict[tuple[str, int], str] | None = None,
    wred: bool = True,
) -> dict[str, Any]:
    return dict(
        sonic_queues.queue_counters(
            pfcstat(rx or {}, tx or {}),
            stat_json("droppacket", drops or {}),
            stat_json("ecnmarkedpacket", marks or {}) if wred else None,
        )
    )


def judged(before: Any, after: Any, fabric: Fabric = SONIC) -> dict[str, Finding]:
    rows = roce.findings(fabric, DEVICES, {LEAF: before}, {LEAF: after}, lab_like_access())
    assert rows[0].element == "RDMA bandwidth" and rows[0].status == "skip"
    return {r.element: r for r in rows[1:]}


def test_the_planned_ports_are_sonic_names_and_queues_3_and_4() -> None:
    assert PORTS[:2] == ["Ethernet0", "Ethernet4"] and len(PORTS) == 20
    assert DEVICES[LEAF].roce is not None and DEVICES[LEAF].roce.lossless_queues == (3, 4)


def test_nothing_grew_is_a_pass() -> None:
    rows = judged(reading(), reading())
    row = rows[f"{LEAF} lossless queues"]
    assert list(rows) == [f"{LEAF} lossless queues"]
    assert row.status == "pass" and row.device == LEAF
    assert row.what == (
        "20 ports x queues 3,4: no drops; PFC frames +0 received, +0 sent "
        "(expected under congestion); 0 ECN marks"
    )


def test_drops_that_grew_fail_naming_port_queue_and_count() -> None:
    before = reading(drops={("Ethernet0", 3): "116"}, rx={("Ethernet0", 3): "14,502"})
    after = reading(
        drops={("Ethernet0", 3): "120", ("Ethernet0", 2): "900", ("Ethernet136", 4): "1,001"},
        rx={("Ethernet0", 3): "14,562"},
    )
    rows = judged(before, after)
    assert sorted(r.status for r in rows.values()) == ["fail", "fail"]  # no pass for the leaf
    first = rows[f"{LEAF}:Ethernet0 lossless queues"]
    assert first.device == LEAF and first.port == "Ethernet0"
    assert first.what == (
        "drops on lossless queues grew: queue 3 +4 (PFC frames +60 received, +0 sent meanwhile)"
    )  # queue 2 is not lossless: its 900 drops are not judged
    assert first.evidence == {"drops": {"3": 4}} and "PFC" in first.fix
    assert rows[f"{LEAF}:Ethernet136 lossless queues"].what.startswith(
        "drops on lossless queues grew: queue 4 +1001"
    )


def test_pfc_frames_that_grew_are_a_pass_with_the_numbers() -> None:
    before = reading(rx={("Ethernet0", 3): "100"}, tx={("Ethernet128", 4): "7"})
    after = reading(
        rx={("Ethernet0", 3): "350", ("Ethernet0", 5): "999"},  # priority 5: not lossless
        tx={("Ethernet128", 4): "1,007"},
        marks={("Ethernet128", 4): "42"},
    )
    row = judged(before, after)[f"{LEAF} lossless queues"]
    assert row.status == "pass"
    assert "no drops; PFC frames +250 received, +1000 sent" in row.what
    assert row.what.endswith("; 42 ECN marks")
    assert row.evidence == {"pfc_rx": {"Ethernet0:3": 250}, "pfc_tx": {"Ethernet128:4": 1000}}


def test_an_image_without_ecn_counters_says_so() -> None:
    row = judged(reading(wred=False), reading(wred=False))[f"{LEAF} lossless queues"]
    assert row.status == "pass" and row.what.endswith("; ECN marks not counted")


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        (
            reading(drops={("Ethernet4", 3): "N/A"}),
            reading(drops={("Ethernet4", 3): "N/A"}),
            "not judged: Ethernet4 queue 3 drops: N/A; the 39 lossless queues read had no drops",
        ),
        (
            reading(rx={("Ethernet0", 4): "N/A"}),
            reading(),
            "not judged: Ethernet0 queue 4 PFC frames received: N/A",
        ),
        (
            reading(tx={("Ethernet64", 3): "500"}),
            reading(tx={("Ethernet64", 3): "3"}),
            "not judged: Ethernet64 queue 3 PFC frames sent: went back from 500 to 3 "
            "(cleared during the test?)",
        ),
        (
            {p: c for p, c in reading().items() if p != "Ethernet248"},
            reading(),
            "not judged: Ethernet248: not in the counters",
        ),
    ],
)
def test_unreadable_counters_are_a_skip_never_a_pass(before: Any, after: Any, said: str) -> None:
    rows = judged(before, after)
    assert [r.status for r in rows.values()] == ["skip"]
    row = rows[f"{LEAF} lossless queues"]
    assert row.what.startswith(said) and row.device == LEAF


def test_many_unreadable_counters_are_counted() -> None:
    na = {(p, q): "N/A" for p in PORTS for q in (3, 4)}
    row = judged(reading(drops=na), reading(drops=na))[f"{LEAF} lossless queues"]
    assert row.status == "skip" and row.what.endswith(
        "(and 36 more); the 0 lossless queues read had no drops"
    )


def test_drops_and_unreadable_counters_give_the_failure_and_the_skip() -> None:
    before = reading(drops={("Ethernet4", 4): "N/A"})
    after = reading(drops={("Ethernet4", 4): "N/A", ("Ethernet0", 3): "2"})
    rows = judged(before, after)
    assert rows[f"{LEAF}:Ethernet0 lossless queues"].status == "fail"
    skip = rows[f"{LEAF} lossless queues"]
    assert skip.status == "skip" and skip.what == "not judged: Ethernet4 queue 4 drops: N/A"


class Unreadable:
    """A switch whose tools print something else than their documented output."""

    platform = "sonic"

    def __init__(self, pfc: str, queues: str) -> None:
        self.dpctl = self
        self.outputs = (pfc, queues)

    def get_queue_counters(self) -> Any:
        return sonic_queues.queue_counters(*self.outputs, None)


@pytest.mark.parametrize(
    ("pfc", "queues", "said"),
    [
        ("bash: pfcstat: command not found", "{}", "OutputError: pfcstat: no `Port Rx` table"),
        (pfcstat({}, {}), "COUNTERS_PORT_NAME_MAP is empty!", "OutputError: no JSON in output"),
        (pfcstat({("Ethernet0", 3): "12x"}, {}), "{}", "OutputError: pfcstat: '12x' is not"),
        (pfcstat({}, {}), "{}", "OutputError: queuestat -j: expected an object of ports"),
    ],
)
def test_malformed_output_is_a_skip_naming_the_device_and_reason(
    pfc: str, queues: str, said: str
) -> None:
    unread = roce.queue_counters(Unreadable(pfc, queues))
    assert isinstance(unread, str) and unread.startswith(said)
    good = roce.queue_counters(Unreadable(pfc, stat_json("droppacket", {})))
    rows = judged(unread, reading())
    row = rows[f"{LEAF} lossless queues"]
    assert row.status == "skip" and row.device == LEAF
    assert row.what == f"not readable: {unread}"
    assert list(rows) == [f"{LEAF} lossless queues"]
    if "pfcstat" not in said:  # the same switch with well-formed output is read
        assert isinstance(good, dict) and good["Ethernet0"]["drops"][3] == 0


def test_asternos_is_judged_as_sonic() -> None:
    """AsterNOS reads the same tools under ``system bash`` (unverified there): the same
    counters give the same rows."""
    asternos = fabric_on("asternos")
    devices = structured_configs(asternos, [LEAF])
    assert [p.name for p in devices[LEAF].interfaces] == PORTS
    before, after = reading(), reading(drops={("Ethernet0", 4): "3"})
    access = lab_like_access()
    same = roce.findings(SONIC, DEVICES, {LEAF: before}, {LEAF: after}, access)
    assert roce.findings(asternos, devices, {LEAF: before}, {LEAF: after}, access) == same
    assert [r.status for r in same] == ["skip", "fail"]


def test_lossy_roce_has_no_lossless_queues_to_judge() -> None:
    roce_intent = {"enabled": True, "mode": "lossy", "cable_length_m": 5, "incast": "medium"}
    lossy = fabric_on("sonic", roce=roce_intent)
    devices = structured_configs(lossy, [LEAF])
    assert devices[LEAF].roce is not None and devices[LEAF].roce.lossless_queues == ()
    rows = roce.findings(lossy, devices, {LEAF: reading()}, {LEAF: reading()}, lab_like_access())
    assert [(r.status, r.what) for r in rows[1:]] == [("skip", "no lossless queues planned here")]
