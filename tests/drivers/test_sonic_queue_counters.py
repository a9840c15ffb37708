"""PFC frames and queue counters of the SONiC and AsterNOS drivers (``dpctl.get_queue_counters``),
read from recorded outputs in the formats sonic-utilities prints.

The recordings (mocked/sonic/README.md) are ours, in the formats sonic-utilities' scripts print
(``pfcstat``'s two tables; ``queuestat -j`` / ``wredstat -j``'s JSON with its ``time``): four
ports of a CX864E-N leaf as dpctl names them, PFC frames on priorities 3 and 4, drops on
lossless queue 3 of Ethernet128 and "N/A" for the AUX port Ethernet512. AsterNOS is answered with
the same recordings (it runs the same tools in its SONiC shell: conftest.py
``ASTERNOS_SHELL``). Every check here is shown failing on a broken input too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.accept import roce
from controller.drivers import sonic_queues
from controller.drivers.common import OutputError, load_json
from controller.drivers.contract import conformance_errors
from controller.drivers.types import QueueCounters
from tests.drivers.conftest import MOCKED, frr_driver

PFC = (MOCKED / "sonic" / "pfcstat.txt").read_text()
QUEUES = (MOCKED / "sonic" / "queuestat_j.json").read_text()
WRED = (MOCKED / "sonic" / "wredstat_j.json").read_text()
PORTS = ["Ethernet0", "Ethernet2", "Ethernet128", "Ethernet512"]


def test_pfcstat_tables_per_port_and_priority() -> None:
    received, sent = sonic_queues.pfc_frames(PFC)
    assert list(received) == list(sent) == PORTS
    assert received["Ethernet128"] == {0: 0, 1: 0, 2: 0, 3: 1098334, 4: 56010, 5: 0, 6: 0, 7: 0}
    assert sent["Ethernet0"][3] == 9120 and sent["Ethernet2"][4] == 35  # "9,120": commas
    assert received["Ethernet512"] == dict.fromkeys(range(8), -1)  # "N/A": no such counter


def test_pfcstat_after_a_clear_and_na() -> None:
    """After a user's ``pfcstat -c``: a ``Last cached time`` line before each table, the
    counts since (commas); a counter COUNTERS_DB lacks is "N/A"."""
    text = "Last cached time was 2025-03-18T09:30:00\n" + PFC.replace(" 14,502 ", "    N/A ")
    text = text.replace("    Port Tx", "Last cached time was 2025-03-18T09:30:00\n    Port Tx")
    received, sent = sonic_queues.pfc_frames(text)
    assert received["Ethernet0"][3] == -1 and sent["Ethernet0"][3] == 9120
    assert received["Ethernet0"][4] == 3871


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (PFC.replace(" 3,871 ", " 3,8o1 "), "'3,8o1' is not a counter"),
        (PFC.replace(" 56,010 ", " 56,01 "), "'56,01' is not a counter"),
        (PFC.replace("Ethernet2       0", "Ethernet2", 1), "a row of 8 cells"),
        (PFC.split("\n\n")[0], "no `Port Tx` table"),
        (PFC.replace("PFC7", "PFC8", 1), "unexpected columns"),
        ("bash: pfcstat: command not found\n", "no `Port Rx` table"),
        ("", "no `Port Rx` table"),
    ],
)
def test_pfcstat_malformed_is_an_error(broken: str, said: str) -> None:
    with pytest.raises(OutputError, match=said.replace("(", r"\(")):
        sonic_queues.pfc_frames(broken)


def test_queuestat_unicast_drops_per_queue() -> None:
    drops = sonic_queues.queue_column(load_json(QUEUES), "droppacket", "q")
    assert sorted(drops) == sorted(PORTS)  # JSON order (sorted keys), not the natural one
    assert all(sorted(d) == list(range(8)) for d in drops.values())
    assert drops["Ethernet128"][3] == 57 and drops["Ethernet128"][4] == 0  # UC3, UC4
    assert drops["Ethernet0"][0] == 312 and drops["Ethernet0"][3] == 0
    assert drops["Ethernet512"][3] == -1  # "N/A"
    assert 8 not in drops["Ethernet0"]  # MC8 (1,204 packets, no drops): multicast, not RoCE's


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ({}, "expected an object of ports"),
        ([], "expected an object of ports"),
        ({"Ethernet0": []}, "expected an object of queues"),
        ({"Ethernet0": {"UC3": {"totalpacket": "1"}}}, "no 'droppacket'"),
        ({"Ethernet0": {"UC3": {"droppacket": "-5"}}}, "'-5' is not a counter"),
        ({"Ethernet0": {"UC3": {"droppacket": "12,34"}}}, "'12,34' is not a counter"),
    ],
)
def test_queuestat_malformed_is_an_error(broken: Any, said: str) -> None:
    with pytest.raises(OutputError, match=said):
        sonic_queues.queue_column(broken, "droppacket", "queuestat -j")
    assert sonic_queues.queue_column(
        {"Ethernet0": {"time": "t", "UC3": {"droppacket": "1,234"}}}, "droppacket", "q"
    ) == {"Ethernet0": {3: 1234}}  # a well-formed one, for contrast


def test_unicast_is_preferred_over_all_for_the_same_index() -> None:
    data = {"Ethernet0": {"ALL3": {"droppacket": "N/A"}, "UC3": {"droppacket": "7"}}}
    assert sonic_queues.queue_column(data, "droppacket", "q") == {"Ethernet0": {3: 7}}


def test_sonic_driver_reads_pfc_queues_and_ecn(sonic: Any) -> None:
    counters = sonic.dpctl.get_queue_counters()
    assert conformance_errors(dict[str, QueueCounters], counters) == []
    assert conformance_errors(dict[str, QueueCounters], {"Ethernet0": {"drops": {}}}) != []
    assert list(counters) == PORTS
    port = counters["Ethernet128"]
    assert port["pfc_rx"][3] == 1098334 and port["pfc_tx"][4] == 18256
    assert port["drops"][3] == 57 and port["ecn_marked"][3] == 240117
    assert counters["Ethernet0"]["ecn_marked"][4] == 2206  # wredstat's ecnmarkedpacket of UC4
    assert counters["Ethernet512"]["ecn_marked"][3] == -1  # "N/A"
    sent = sonic.fake.commands
    assert sent[-3:] == ["pfcstat", "queuestat -j", "wredstat -j"]


def test_an_image_without_wredstat_counts_no_ecn_marks(sonic: Any) -> None:
    """sonic-utilities before 202505 has no wredstat: the shell answers 127."""
    sonic.fake.failures["wredstat"] = ("bash: wredstat: command not found\n", 127)
    counters = sonic.dpctl.get_queue_counters()
    assert all(c["ecn_marked"] == {} for c in counters.values())
    assert counters["Ethernet128"]["drops"][3] == 57  # the rest is read as before


def test_sonic_without_pfcstat_is_a_reason_not_zeros(sonic: Any) -> None:
    sonic.fake.failures["pfcstat"] = ("bash: pfcstat: command not found\n", 127)
    why = roce.queue_counters(sonic)
    assert isinstance(why, str) and "pfcstat" in why and "127" in why


def test_asternos_reads_the_same_tools_under_system_bash(sonic: Any, asternos: Any) -> None:
    """AsterNOS: sonic-utilities' tools in the SONiC shell under klish (``system bash``), as
    its ``portstat`` read; unverified there (no AsterNOS document names them)."""
    counters = asternos.dpctl.get_queue_counters()
    assert counters == sonic.dpctl.get_queue_counters()
    assert counters["Ethernet128"]["drops"][3] == 57
    log = [c for kind, c in asternos.fake.log if kind == "command"]
    assert log[log.index("pfcstat") - 1] == "system bash"
    assert log[-1] == "exit"  # back to klish


def test_asternos_without_the_tools_is_a_skip_reason(asternos: Any) -> None:
    asternos.fake.overrides["pfcstat"] = "bash: pfcstat: command not found\n"
    why = roce.queue_counters(asternos)
    assert isinstance(why, str)
    assert why.startswith("OutputError: pfcstat: no `Port Rx` table") and "not found" in why
    asternos.fake.overrides["wredstat -j"] = "bash: wredstat: command not found\n"
    asternos.fake.overrides["pfcstat"] = PFC
    counters = roce.queue_counters(asternos)  # no wredstat: no ECN marks, the rest read
    assert isinstance(counters, dict) and counters["Ethernet0"]["ecn_marked"] == {}
    assert counters["Ethernet128"]["pfc_rx"][3] == 1098334


def test_frr_has_no_such_getter_and_keeps_its_qdiscs() -> None:
    """Linux + FRR as before: no getter, its RED qdiscs through ``cli``."""
    driver = frr_driver()
    with pytest.raises(NotImplementedError):
        driver.dpctl.get_queue_counters()
    red = {"kind": "red", "parent": "1:3", "dev": "swp1", "drops": 2, "marked": 5}
    driver.fake.overrides[roce.QDISC_STATS] = json.dumps([red])
    assert roce.queue_counters(driver) == {"swp1:3": {"drops": 2, "marked": 5}}
