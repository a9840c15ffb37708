"""The cabling punch list: the observed cables (LLDP) against the plan, as moves that fix it.

Pure: ``punch_list(plan, observed)`` takes the planned cables and the cables LLDP saw, both as
pairs of ends (``device:port``), and returns the actions that turn what is cabled into what is
planned, in the order a technician can do them: each swap of two cables found as one action
(not four wrong ports), each cable whose one end sits in the wrong port as one move of that
end, each missing cable as one to lay, each cable the plan does not have as one to remove.
Applying the actions to the observed cabling (:func:`apply`) gives the plan exactly: the
property tests check it over random permutations and removals of a plan's cables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

End = tuple[str, str]
"""One end of a cable: (device, port)."""
Cable = frozenset[End]

ActionKind = Literal["swap", "move", "add", "remove"]


def end_name(end: End) -> str:
    return f"{end[0]}:{end[1]}"


def cable(a: End, z: End) -> Cable:
    return frozenset((a, z))


def ends(c: Cable) -> tuple[End, End]:
    a, z = sorted(c)
    return a, z


@dataclass(frozen=True, slots=True)
class Action:
    """One step of the punch list.

    swap: the cables in ports ``first`` and ``second`` are exchanged (``found``: the cables
    as cabled, ``wanted``: as planned). move: the end of a cable in ``first`` goes into the
    empty port ``second``. add: a cable ``first``-``second`` is laid. remove: the cable
    ``first``-``second`` is taken out.
    """

    kind: ActionKind
    first: End
    second: End
    found: tuple[Cable, ...] = ()
    wanted: tuple[Cable, ...] = ()

    @property
    def text(self) -> str:
        a, b = end_name(self.first), end_name(self.second)
        if self.kind == "swap":
            got = " and ".join(_pair(c) for c in self.found)
            return f"swap the cables in {a} and {b} (cabled {got})"
        if self.kind == "move":
            got = _pair(self.found[0]) if self.found else f"{a}"
            return f"move the cable end from {a} to {b} (cabled {got}, planned {_wanted(self)})"
        if self.kind == "add":
            return f"cable {a} to {b} (planned, not seen)"
        return f"remove the cable {a} - {b} (not in the plan)"

    def to_dict(self) -> dict[str, object]:
        return {
            "action": self.kind,
            "first": end_name(self.first),
            "second": end_name(self.second),
            "found": [_pair(c) for c in self.found],
            "wanted": [_pair(c) for c in self.wanted],
            "text": self.text,
        }


def _pair(c: Cable) -> str:
    a, z = ends(c)
    return f"{end_name(a)} - {end_name(z)}"


def _wanted(action: Action) -> str:
    return ", ".join(_pair(c) for c in action.wanted) or "-"


def observed_cables(neighbours: Iterable[tuple[End, End]]) -> set[Cable]:
    """Cables from LLDP observations (local end, remote end), merged from both sides.

    Two ports that name each other are one cable. A port that names a port which names no
    one (a server without LLDP, a switch not read) is one cable too. Where two claims
    disagree (x names y, y names z), a stale neighbour entry is the usual cause (LLDP keeps
    one for its TTL after a re-cabling): a claim on a port already in a mutual pair is
    dropped, else the port's own word about itself wins."""
    claims: dict[End, End] = {}
    for local, remote in neighbours:
        if local != remote:
            claims[local] = remote
    settled: dict[End, Cable] = {}
    for x, y in sorted(claims.items()):
        if claims.get(y) == x:
            settled[x] = settled[y] = cable(x, y)
    for x, y in sorted(claims.items()):
        if x in settled or y in settled:
            continue
        if claims.get(y, x) == x:  # y silent: x's word stands
            settled[x] = settled[y] = cable(x, y)
    for x, y in sorted(claims.items()):
        if x not in settled and y not in settled:
            settled[x] = settled[y] = cable(x, y)  # y named a settled port: x's word
    return set(settled.values())


def _peer(c: Cable, end: End) -> End:
    a, z = ends(c)
    return z if a == end else a


def _find_swaps(wrong: set[Cable], missing: set[Cable], plan_peer: dict[End, End]) -> list[Action]:
    """Two cabled-wrong cables {a,d},{c,b} whose planned cables {a,b},{c,d} are both missing:
    one swap. The swap is said at the two ends that share a device when they do (one person at
    one switch fixes it), else at the first ends in name order."""
    actions: list[Action] = []
    for w1 in sorted(wrong, key=ends):
        if w1 not in wrong:
            continue
        for a in ends(w1):
            d = _peer(w1, a)
            b = plan_peer.get(a)
            c = plan_peer.get(d)
            if b is None or c is None or cable(a, b) not in missing:
                continue
            w2 = cable(c, b)
            if w2 == w1 or w2 not in wrong or cable(c, d) not in missing:
                continue
            wrong -= {w1, w2}
            missing -= {cable(a, b), cable(c, d)}
            # exchanging the ends in d and b, or in a and c, gives the same cabling
            if a[0] == c[0]:
                first, second = a, c
            elif d[0] == b[0]:
                first, second = d, b
            else:
                first, second = min((a, c), (d, b))
            actions.append(
                Action(
                    "swap",
                    first,
                    second,
                    found=tuple(sorted((w1, w2), key=ends)),
                    wanted=tuple(sorted((cable(a, b), cable(c, d)), key=ends)),
                )
            )
            break
    return actions


def _find_moves(
    wrong: set[Cable], missing: set[Cable], plan_peer: dict[End, End], used: set[End]
) -> list[Action]:
    """A cabled-wrong cable {x,y} where x's planned peer b is an empty port: move y to b.
    Repeated until nothing moves (a move empties y, which another move may fill)."""
    actions: list[Action] = []
    progress = True
    while progress:
        progress = False
        for w in sorted(wrong, key=ends):
            for x in ends(w):
                y, b = _peer(w, x), plan_peer.get(x)
                if b is None or b in used or cable(x, b) not in missing:
                    continue
                wrong.discard(w)
                missing.discard(cable(x, b))
                used.discard(y)
                used.add(b)
                actions.append(Action("move", y, b, found=(w,), wanted=(cable(x, b),)))
                progress = True
                break
    return actions


def punch_list(plan: Iterable[Cable], observed: Iterable[Cable]) -> list[Action]:
    """The actions that turn ``observed`` into ``plan`` (both sets of cables, each port in at
    most one cable): swaps, then moves; a cycle of three or more wrong cables is broken by
    taking one out (then moves again); last the cables to lay."""
    planned, seen = set(plan), set(observed)
    plan_peer: dict[End, End] = {}
    for c in planned:
        a, z = ends(c)
        plan_peer[a], plan_peer[z] = z, a
    wrong, missing = seen - planned, planned - seen
    used = {e for c in seen for e in c}
    actions = _find_swaps(wrong, missing, plan_peer)
    actions += _find_moves(wrong, missing, plan_peer, used)
    while wrong:  # a cycle of three or more, or a cable the plan has no place for
        w = min(wrong, key=ends)
        wrong.discard(w)
        used -= set(w)
        actions.append(Action("remove", *ends(w), found=(w,)))
        actions += _find_moves(wrong, missing, plan_peer, used)
    for m in sorted(missing, key=ends):
        actions.append(Action("add", *ends(m), wanted=(m,)))
    return actions


def apply(observed: Iterable[Cable], actions: Iterable[Action]) -> set[Cable]:
    """The cabling after doing ``actions`` in order (raises ValueError on an impossible step:
    a move into an occupied port, a swap of an empty port, removing an absent cable)."""
    cables = set(observed)

    def at(end: End) -> Cable | None:
        return next((c for c in cables if end in c), None)

    for act in actions:
        if act.kind == "add":
            if at(act.first) or at(act.second):
                raise ValueError(f"add into an occupied port: {act.text}")
            cables.add(cable(act.first, act.second))
        elif act.kind == "remove":
            cables.remove(cable(act.first, act.second))
        elif act.kind == "move":
            c = at(act.first)
            if c is None or at(act.second) is not None:
                raise ValueError(f"impossible move: {act.text}")
            cables.remove(c)
            cables.add(cable(_peer(c, act.first), act.second))
        else:
            c1, c2 = at(act.first), at(act.second)
            if c1 is None or c2 is None or c1 == c2:
                raise ValueError(f"impossible swap: {act.text}")
            cables -= {c1, c2}
            cables.add(cable(_peer(c1, act.first), act.second))
            cables.add(cable(_peer(c2, act.second), act.first))
    return cables
