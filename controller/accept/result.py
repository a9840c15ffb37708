"""What `dpctl accept` finds: one row per cable, port, probe or element, and the whole report.

A :class:`Finding` says where (``element``: a port ``device:port``, a cable ``a - z``, a
switch, a probe), what was found, what to do, and the evidence. Rows are pass, fail or skip
(with the reason: a platform without the counters, a lab without RDMA tooling).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Stage = Literal["cabling", "links", "traffic", "localisation", "roce"]
STAGES: tuple[Stage, ...] = ("cabling", "links", "traffic", "localisation", "roce")
Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class Finding:
    stage: Stage
    element: str
    status: Status
    what: str
    fix: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    device: str = ""
    """The switch or server the element is on (the picture colours it)."""
    port: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "element": self.element,
            "status": self.status,
            "what": self.what,
            "fix": self.fix,
            "device": self.device,
            "port": self.port,
            "evidence": self.evidence,
        }


def passed(stage: Stage, element: str, what: str, **where: str) -> Finding:
    return Finding(stage, element, "pass", what, **where)  # type: ignore[arg-type]


def failed(stage: Stage, element: str, what: str, fix: str, **kw: Any) -> Finding:
    return Finding(stage, element, "fail", what, fix, **kw)


def skipped(stage: Stage, element: str, why: str, **where: str) -> Finding:
    return Finding(stage, element, "skip", why, **where)  # type: ignore[arg-type]


@dataclass(frozen=True)
class AcceptReport:
    fabric: str
    target: dict[str, Any]
    findings: list[Finding]
    punch_list: list[dict[str, Any]]
    probes: dict[str, int]
    """How many probes of each kind ran (fabric links, server ports, cross-rail)."""
    seconds: float
    plane: int | None = None
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase (reads, fabric-link probes, server flows, reads again)."""

    @property
    def ok(self) -> bool:
        return not any(f.failed for f in self.findings)

    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.failed]

    def ordered(self) -> list[Finding]:
        """Failures first, then skips, then passes; within each, by stage and element."""
        rank = {"fail": 0, "skip": 1, "pass": 2}
        return sorted(
            self.findings, key=lambda f: (rank[f.status], STAGES.index(f.stage), f.element)
        )

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "skip": 0}
        for f in self.findings:
            out[f.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "fabric": self.fabric,
            "ok": self.ok,
            "plane": self.plane,
            "target": self.target,
            "seconds": round(self.seconds, 1),
            "phases": self.phases,
            "counts": self.counts(),
            "probes": self.probes,
            "punch_list": self.punch_list,
            "findings": [f.to_dict() for f in self.ordered()],
        }
