"""The lossless queues of a SONiC or AsterNOS switch, judged from two reads of its counters
(``driver.dpctl.get_queue_counters()`` before and after the test: port -> PFC frames per
priority, drops and ECN marks per queue; controller/drivers/sonic_queues.py).

Per planned port and lossless queue (priority n is queue n, as dpctl renders the maps):

- drops that grew: a failure per port, naming the queues and how many, with what to do;
- PFC frames that grew: shown in the pass (a lossless class pauses its senders under
  congestion: that is PFC working, not a fault);
- a counter "N/A" (-1), missing from the output, or lower after than before (cleared during
  the test): the switch's row is a skip naming each, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.accept.result import Finding, failed, skipped
from controller.drivers.common import natural_key

JUDGED = {"drops": "drops", "pfc_rx": "PFC frames received", "pfc_tx": "PFC frames sent"}
"""The counters judged on every lossless queue, and how a row names them."""
SHOWN = 4
"""How many unreadable counters a skip row names (the evidence has them all)."""
FIX = (
    "a lossless queue dropped: PFC did not hold its senders back. Check PFC on these "
    "priorities at both ends of the cable (PORT_QOS_MAP pfc_enable here, the NIC's PFC and "
    "DSCP trust on a server), the buffer headroom for the cable length (CABLE_LENGTH, "
    "BUFFER_PG) and that the RoCE traffic's DSCP maps to the lossless class; "
    "`show pfc counters` and `show queue counters PORT` on the switch show them live"
)


@dataclass
class Growth:
    """What grew between the two reads, per (port, queue), and what could not be read."""

    grew: dict[str, dict[tuple[str, int], int]] = field(
        default_factory=lambda: {k: {} for k in JUDGED}
    )
    marks: int | None = None
    """ECN marks on the lossless queues (None: the switch's image does not count them)."""
    unreadable: list[str] = field(default_factory=list)
    judged: int = 0
    """Lossless queues whose every judged counter could be read."""


def delta(before: dict[int, int], after: dict[int, int], key: int) -> int | str:
    """How much a counter grew, or why that cannot be said."""
    if key not in before or key not in after:
        return "not in the output"
    old, new = before[key], after[key]
    if old < 0 or new < 0:
        return "N/A"
    if new < old:
        return f"went back from {old} to {new} (cleared during the test?)"
    return new - old


def growth(
    ports: list[str], queues: tuple[int, ...], before: dict[str, Any], after: dict[str, Any]
) -> Growth:
    """The lossless queues' growth on ``ports`` between the reads ``before`` and ``after``."""
    found = Growth()
    for port in ports:
        old, new = before.get(port), after.get(port)
        if not isinstance(old, dict) or not isinstance(new, dict):
            found.unreadable.append(f"{port}: not in the counters")
            continue
        for q in queues:
            readable = True
            for name, label in JUDGED.items():
                grown = delta(old.get(name) or {}, new.get(name) or {}, q)
                if isinstance(grown, str):
                    found.unreadable.append(f"{port} queue {q} {label}: {grown}")
                    readable = False
                elif grown:
                    found.grew[name][(port, q)] = grown
            found.judged += int(readable)
            marks = delta(old.get("ecn_marked") or {}, new.get("ecn_marked") or {}, q)
            if isinstance(marks, int):
                found.marks = (found.marks or 0) + marks
    return found


def _keyed(counts: dict[tuple[str, int], int]) -> dict[str, int]:
    return {f"{port}:{q}": n for (port, q), n in counts.items()}


def _pfc_text(found: Growth, port: str | None = None) -> str:
    rx, tx = (
        sum(n for (p, _), n in found.grew[k].items() if port in (None, p))
        for k in ("pfc_rx", "pfc_tx")
    )
    return f"PFC frames +{rx} received, +{tx} sent"


def rows(
    name: str,
    ports: list[str],
    queues: tuple[int, ...],
    before: dict[str, Any],
    after: dict[str, Any],
) -> list[Finding]:
    """One failure per port whose lossless queues dropped, then one row for the switch: a
    skip naming what could not be read, else a pass with the PFC frames and ECN marks."""
    element = f"{name} lossless queues"
    if not queues or not ports:
        return [skipped("roce", element, "no lossless queues planned here", device=name)]
    found = growth(ports, queues, before, after)
    out: list[Finding] = []
    dropped = sorted({p for p, _ in found.grew["drops"]}, key=natural_key)
    for port in dropped:
        counts = {q: n for (p, q), n in sorted(found.grew["drops"].items()) if p == port}
        text = ", ".join(f"queue {q} +{n}" for q, n in counts.items())
        out.append(
            failed(
                "roce",
                f"{name}:{port} lossless queues",
                f"drops on lossless queues grew: {text} ({_pfc_text(found, port)} meanwhile)",
                FIX,
                evidence={"drops": {str(q): n for q, n in counts.items()}},
                device=name,
                port=port,
            )
        )
    if found.unreadable:
        listed = "; ".join(found.unreadable[:SHOWN])
        more = len(found.unreadable) - SHOWN
        why = f"not judged: {listed}" + (f" (and {more} more)" if more > 0 else "")
        if not dropped:
            why += f"; the {found.judged} lossless queues read had no drops"
        out.append(skipped("roce", element, why, device=name))
        return out
    if dropped:
        return out
    marks = "ECN marks not counted" if found.marks is None else f"{found.marks} ECN marks"
    what = (
        f"{len(ports)} ports x queues {','.join(map(str, queues))}: no drops; "
        f"{_pfc_text(found)} (expected under congestion); {marks}"
    )
    evidence = {k: _keyed(found.grew[k]) for k in ("pfc_rx", "pfc_tx")}
    return [Finding("roce", element, "pass", what, evidence=evidence, device=name)]
