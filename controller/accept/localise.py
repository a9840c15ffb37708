"""Localisation: failing probes narrowed down to the element all their failures share.

Pure. Each probe names the elements on its path (a server port's cable, a leaf, a leaf's
fabric links, a fabric cable); an element on a passing probe's path is cleared. The failing
probes are explained greedily, as a set cover: first by the elements whose own check failed
(a port down, a cable miswired, a sender that could not send: known bad, so whatever fails
through them is theirs), the one on the most unexplained failures first; then by the element
not cleared that lies on the most unexplained failures; each named with the probes it
explains as the evidence, until every failure is explained. One fault gives one element; two
independent faults give two.
When several elements explain exactly the same failures and none failed its own check, the
traffic alone cannot tell them apart: all of them are named, as one suspect group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Probed:
    """One probe: its name, whether it passed, the elements on its path, and those a pass
    clears (``sure``: the elements it certainly crossed; all of ``path`` when not given)."""

    name: str
    ok: bool
    path: tuple[str, ...]
    sure: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Suspect:
    """Elements (one, or several the traffic cannot tell apart) that explain ``probes``."""

    elements: tuple[str, ...]
    probes: tuple[str, ...]
    own_evidence: tuple[str, ...]
    """What the elements' own checks said (a port down, a cable miswired)."""

    @property
    def exact(self) -> bool:
        return len(self.elements) == 1


def localise(probes: Iterable[Probed], evidence: Mapping[str, str] | None = None) -> list[Suspect]:
    """The suspects that explain every failing probe (see the module's docstring).
    ``evidence`` maps an element to what its own check found wrong."""
    evidence = evidence or {}
    probes = list(probes)
    cleared = {e for p in probes if p.ok for e in (p.path if p.sure is None else p.sure)}
    open_failures = {p.name: set(p.path) - cleared for p in probes if not p.ok}
    suspects: list[Suspect] = []
    while open_failures:
        hits: dict[str, set[str]] = {}
        for name, elements in open_failures.items():
            for element in elements:
                hits.setdefault(element, set()).add(name)
        if not hits:  # every element of these failures lies on a passing path too
            suspects.append(Suspect((), tuple(sorted(open_failures)), ()))
            break
        best = max(hits, key=lambda e: (e in evidence, len(hits[e]), _rank(e), e))
        explained = hits[best]
        twins = sorted(e for e, names in hits.items() if names == explained)
        marked = [e for e in twins if e in evidence]
        named = tuple(marked) if marked else tuple(twins)
        suspects.append(
            Suspect(named, tuple(sorted(explained)), tuple(evidence[e] for e in marked))
        )
        for name in explained:
            del open_failures[name]
    return suspects


def _rank(element: str) -> int:
    """Between elements on the same failures, the smaller one first: a cable or port before a
    switch (a switch that is at fault shows on more than one cable's probes)."""
    return 0 if element.startswith("switch ") else 1
