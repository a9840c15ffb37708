"""RoCE: the lossless queues' counters before and after the test, and RDMA bandwidth per
port pair where the tooling exists.

- Linux + FRR: the lossless classes' RED qdiscs (``tc -s -j qdisc show``: ``drops``, and
  ``marked`` for ECN, per qdisc; iproute2 tc/q_red.c prints them), through the driver's
  shell ``cli``. PFC does not exist in the Linux datapath.
- SONiC and AsterNOS: per planned port and lossless priority (the intent's RoCE lossless
  queues, 3 and 4; priority n is queue n, as dpctl renders TC_TO_QUEUE_MAP and
  MAP_PFC_PRIORITY_TO_QUEUE), the PFC frames received and sent, the queue's drops and, where
  the image has them, its ECN marks: the driver's ``dpctl.get_queue_counters`` (sonic-utilities'
  ``pfcstat``, ``queuestat -j``, ``wredstat -j``: controller/drivers/sonic_queues.py). On
  AsterNOS it runs the same tools under ``system bash``, unverified there (no AsterNOS
  document names them); where they are not there, the read fails and the row is a skip with
  the device's answer. Drops that grew fail, naming port, queue and how many; PFC frames that
  grew are shown in the pass (PFC pauses are what a lossless class does under congestion);
  a counter that is "N/A", missing or went back (cleared during the test) makes the switch's
  row a skip naming it, never a pass.
- Bandwidth: perftest's ``ib_write_bw`` between the two NICs of a pair, against a share of line
  rate, needs RDMA NICs and the tool on the servers; the traffic runner has no such step yet
  (the lab's veths have no RDMA at all), so it is a skip with the reason.
"""

from __future__ import annotations

import json
from typing import Any

from controller.accept import lossless
from controller.accept.result import Finding, failed, passed, skipped
from controller.access import FabricAccess
from controller.facts import Fabric
from controller.render.device import DeviceConfig

QDISC_STATS = "tc -s -j qdisc show"


def queue_counters(driver: Any) -> dict[str, Any] | str:
    """The switch's lossless-queue counters, or why they cannot be read (a string): the
    driver's ``dpctl.get_queue_counters`` (SONiC, AsterNOS), else (Linux + FRR, whose driver
    has none) its RED qdiscs through ``cli``."""
    try:
        try:
            return dict(driver.dpctl.get_queue_counters())
        except NotImplementedError:
            pass
        text = str(driver.cli([QDISC_STATS])[QDISC_STATS])
        return red_stats(json.loads(text or "[]"))
    except Exception as exc:  # no tool, no shell, output not as expected: skipped, named
        return f"{type(exc).__name__}: {exc}"


def red_stats(qdiscs: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """``port:band`` -> {"drops", "marked"} of every RED qdisc (a lossless class's queue)."""
    out: dict[str, dict[str, int]] = {}
    for q in qdiscs:
        band = str(q.get("parent", "")).partition(":")[2]
        if q.get("kind") == "red" and band:
            marked = q.get("marked", q.get("xstats", {}).get("marked", 0))
            out[f"{q['dev']}:{band}"] = {
                "drops": int(q.get("drops", 0)),
                "marked": int(marked or 0),
            }
    return out


def findings(
    fabric: Fabric,
    devices: dict[str, DeviceConfig],
    before: dict[str, Any],
    after: dict[str, Any],
    access: FabricAccess,
) -> list[Finding]:
    rows = [_bandwidth(access)]
    for name, device in devices.items():
        if device.roce is None or not device.roce.enabled:
            continue
        b, a = before.get(name), after.get(name)
        if not isinstance(b, dict) or not isinstance(a, dict):
            why = f"not readable: {b or a}"
            rows.append(skipped("roce", f"{name} lossless queues", why, device=name))
        elif fabric.intent.platform == "frr":
            rows += _queue_rows(name, b, a)
        else:
            ports = [port.name for port in device.interfaces]
            rows += lossless.rows(name, ports, device.roce.lossless_queues, b, a)
    return rows


def _queue_rows(name: str, before: dict[str, Any], after: dict[str, Any]) -> list[Finding]:
    grew = {
        q: after[q]["drops"] - before[q]["drops"]
        for q in after
        if q in before and after[q]["drops"] > before[q]["drops"]
    }
    marks = sum(max(0, after[q]["marked"] - before[q]["marked"]) for q in after if q in before)
    if grew:
        text = ", ".join(f"{q} +{n}" for q, n in sorted(grew.items()))
        return [
            failed(
                "roce",
                f"{name} lossless queues",
                f"drops on lossless queues grew: {text}",
                "a lossless class dropped: check the RoCE (ECN/PFC) settings and congestion "
                "on those ports",
                evidence={"drops": grew},
                device=name,
            )
        ]
    return [
        passed(
            "roce",
            f"{name} lossless queues",
            f"{len(after)} lossless queues, no drops ({marks} ECN marks)",
            device=name,
        )
    ]


def _bandwidth(access: FabricAccess) -> Finding:
    why = "RDMA bandwidth per port pair (perftest ib_write_bw against line rate): " + (
        "the lab's servers have veths, no RDMA NICs or tooling"
        if access.source != "credentials"
        else "the servers' traffic runner has no ib_write_bw step yet"
    )
    return skipped("roce", "RDMA bandwidth", why)
