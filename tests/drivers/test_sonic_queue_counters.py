"""PFC frames and queue counters of the SONiC and AsterNOS drivers (``dpctl.get_queue_counters``),
read from recorded outputs in the formats sonic-utilities prints.

The recordings (mocked/sonic/README.md) are sonic-utilities' own test vectors: ``pfcstat.txt``
is tests/pfcstat_test.py ``show_pfc_counters_output`` (branch 202405, commit ced89eb5c9ce),
verbatim; ``queuestat_j.json`` tests/queue_counter_test.py ``show_queue_counters_json`` (same
commit) and ``wredstat_j.json`` tests/wred_queue_counter_test.py ``show_queue_counters_json``
(branch 202505, commit 7511bf2f8ea3), each with the ``time`` the scripts print and the tests
strip. Every check here is shown failing on a broken input too.
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


def test_pfcstat_tables_per_port_and_priority() -> None:
    received, sent = sonic_queues.pfc_frames(PFC)
    assert sorted(received) == sorted(sent) == ["Ethernet0", "Ethernet4", "Ethernet8"]
    assert received["Ethernet0"] == {
        0: 1200,
        1: 201,
        2: 202,
        3: 203,
        4: 204,
        5: 205,
        6: 206,
        7: 207,
    }
    assert sent["Ethernet8"][0] == 1810 and sent["Ethernet4"][4] == 414  # "1,810": commas


def test_pfcstat_after_a_clear_and_na() -> None:
    """After a user's ``pfcstat -c``: a ``Last cached time`` line before each table, the
    counts since (commas); a counter COUNTERS_DB lacks is "N/A" (the test's -s all vector)."""
    text = "Last cached time was 2024-06-03T10:00:00\n" + PFC.replace(" 203 ", " N/A ")
    text = text.replace("  Port Tx", "Last cached time was 2024-06-03T10:00:00\n  Port Tx")
    received, sent = sonic_queues.pfc_frames(text)
    assert received["Ethernet0"][3] == -1 and sent["Ethernet0"][3] == 213


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (PFC.replace(" 204 ", " 2o4 "), "'2o4' is not a counter"),
        (PFC.replace(" 1,400 ", " 1,40 "), "'1,40' is not a counter"),
        (PFC.replace(" 207\n", "\n", 1), "a row of 8 cells"),
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
    assert drops["Ethernet0"][3] == 19 and drops["Ethernet0"][4] == 12  # UC3, UC4
    assert drops["Ethernet8"][3] == 63
    assert drops["Ethernet0"][20] == -1  # ALL20: "N/A"
    assert 10 not in drops["Ethernet0"]  # MC10: multicast, not RoCE's


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
    assert counters["Ethernet4"]["pfc_rx"][3] == 403 and counters["Ethernet4"]["pfc_tx"][4] == 414
    assert counters["Ethernet4"]["drops"][3] == 48 and counters["Ethernet4"]["ecn_marked"][3] == 48
    assert counters["Ethernet0"]["ecn_marked"][4] == 12  # wredstat's ecnmarkedpacket of UC4
    sent = sonic.fake.commands
    assert sent[-3:] == ["pfcstat", "queuestat -j", "wredstat -j"]


def test_an_image_without_wredstat_counts_no_ecn_marks(sonic: Any) -> None:
    """sonic-utilities before 202505 has no wredstat: the shell answers 127."""
    sonic.fake.failures["wredstat"] = ("bash: wredstat: command not found\n", 127)
    counters = sonic.dpctl.get_queue_counters()
    assert all(c["ecn_marked"] == {} for c in counters.values())
    assert counters["Ethernet0"]["drops"][3] == 19  # the rest is read as before


def test_sonic_without_pfcstat_is_a_reason_not_zeros(sonic: Any) -> None:
    sonic.fake.failures["pfcstat"] = ("bash: pfcstat: command not found\n", 127)
    why = roce.queue_counters(sonic)
    assert isinstance(why, str) and "pfcstat" in why and "127" in why


def test_asternos_reads_the_same_tools_under_system_bash(sonic: Any, asternos: Any) -> None:
    """AsterNOS: sonic-utilities' tools in the SONiC shell under klish (``system bash``), as
    its ``portstat`` read; unverified there (no AsterNOS document names them)."""
    assert asternos.dpctl.get_queue_counters() == sonic.dpctl.get_queue_counters()
    log = [c for kind, c in asternos.fake.log if kind == "command"]
    assert log[log.index("pfcstat") - 1] == "system bash"
    assert log[-1] == "exit"  # back to klish


def test_asternos_without_the_tools_is_a_skip_reason(asternos: Any) -> None:
    asternos.fake.overrides["pfcstat"] = "bash: pfcstat: command not found\n"
    why = roce.queue_counters(asternos)
    assert isinstance(why, str)
    assert why.startswith("OutputError: pfcstat: no `Port Rx` table") and "not found" in why
    asternos.fake.overrides["wredstat -j"] = "bash: wredstat: command not found\n"
    del asternos.fake.overrides["pfcstat"]
    counters = roce.queue_counters(asternos)  # no wredstat: no ECN marks, the rest read
    assert isinstance(counters, dict) and counters["Ethernet0"]["ecn_marked"] == {}


def test_frr_has_no_such_getter_and_keeps_its_qdiscs() -> None:
    """Linux + FRR as before: no getter, its RED qdiscs through ``cli``."""
    driver = frr_driver()
    with pytest.raises(NotImplementedError):
        driver.dpctl.get_queue_counters()
    red = {"kind": "red", "parent": "1:3", "dev": "swp1", "drops": 2, "marked": 5}
    driver.fake.overrides[roce.QDISC_STATS] = json.dumps([red])
    assert roce.queue_counters(driver) == {"swp1:3": {"drops": 2, "marked": 5}}
