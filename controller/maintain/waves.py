"""Waves of a rolling maintenance, computed from the fabric (pure: no I/O, no simulator).

Rules (docs/maintain.md):

- one plane at a time: a wave holds switches of one plane and one role. Leaves of two planes
  in one wave would leave a server behind a plane-1 leaf and one behind a plane-2 leaf with
  no plane in common, so their traffic would have to cross the 10G AUX links;
- never both leaves that serve the same rail of the same servers (a NIC's two leaves), and
  so never both leaves of a pair;
- at most one spine per plane at a time, unless a capacity budget (``--max-capacity-loss``)
  lets a spine wave grow (it is then split until it fits, see ``fit_budget``);
- ``apply`` starts with a canary wave of one switch, then waves double (1, 2, 4, ...);
  every wave is capped by ``max_wave``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from controller.errors import DpctlError
from controller.facts import Fabric, Switch, SwitchRole

Action = Literal["restart-routing", "reboot", "apply", "upgrade"]
ACTIONS: tuple[Action, ...] = ("restart-routing", "reboot", "apply", "upgrade")
DEFAULT_MAX_WAVE = 4
"""Switches per wave unless ``--max-wave`` says otherwise: small enough that a failed gate
stops the rollout with few switches touched, large enough that 256 leaves take 64 waves."""


class WaveError(DpctlError):
    """The waves cannot be made as asked (an option out of range, nothing selected, a
    switch over the capacity budget alone); nothing was changed."""


IMAGE_SCHEMES = ("http", "https", "ftp", "scp")


def check_image(url: str) -> None:
    """An upgrade's image: a URL (``sonic-installer install`` fetches it) or an absolute
    path on the switch, one word of printable characters; refused before any switch is
    drained, not found wrong on the first switch after its drain."""
    from urllib.parse import urlsplit

    if not url.isprintable() or any(c.isspace() for c in url):
        raise WaveError("--image", f"{url!r} holds spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme in IMAGE_SCHEMES and parts.netloc and parts.path not in ("", "/"):
        return
    if not parts.scheme and url.startswith("/") and not url.endswith("/"):
        return
    raise WaveError(
        "--image",
        f"{url!r} is not an image URL ({', '.join(IMAGE_SCHEMES)}://HOST/FILE) "
        "or an absolute path to the image file",
    )


@dataclass(frozen=True)
class Wave:
    """Switches maintained together: one plane, one role."""

    plane: int
    role: SwitchRole
    switches: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"plane": self.plane, "role": self.role, "switches": list(self.switches)}


def selected(fabric: Fabric, plane: int | None, role: SwitchRole | None) -> list[Switch]:
    """The switches ``--plane``/``--role`` select, in the fabric's order."""
    if plane is not None and plane not in (1, 2):
        raise WaveError("--plane", f"must be 1 or 2, not {plane}")
    if role is not None and role not in ("leaf", "spine"):
        raise WaveError("--role", f"must be leaf or spine, not {role!r}")
    found = fabric.switches_in(plane, role)
    if not found:
        raise WaveError("--plane/--role", f"no switch of {fabric.intent.name} is selected")
    return found


def conflicts(fabric: Fabric) -> dict[str, set[str]]:
    """Per leaf, the leaves it must never share a wave with: its pair, and every other leaf
    that serves a rail of the same servers (a NIC's two leaves)."""
    found: dict[str, set[str]] = {s.name: set() for s in fabric.switches if s.role == "leaf"}
    for switch in fabric.switches:
        if switch.pair:
            found[switch.name].add(switch.pair)
    for server in fabric.servers:
        for nic in server.nics:
            a, b = nic.leaves
            if a != b:
                found[a].add(b)
                found[b].add(a)
    return found


def wave_sizes(action: Action, max_wave: int) -> Iterable[int]:
    """The size of each next wave: a canary and doubling for ``apply``, else ``max_wave``."""
    size = 1 if action == "apply" else max_wave
    while True:
        yield min(size, max_wave)
        size *= 2


def _batches(
    names: Sequence[str], sizes: Iterable[int], avoid: dict[str, set[str]]
) -> list[tuple[str, ...]]:
    """Greedy first fit: each wave takes the next switches in order that conflict with
    none already in it, up to the wave's size."""
    left = list(names)
    out: list[tuple[str, ...]] = []
    sizes = iter(sizes)
    while left:  # a size is taken only for a wave that will have switches
        size = next(sizes)
        wave: list[str] = []
        for name in list(left):
            if len(wave) == size:
                break
            if not avoid.get(name, set()) & set(wave):
                wave.append(name)
                left.remove(name)
        out.append(tuple(wave))
    return out


def plan_waves(
    fabric: Fabric,
    action: Action,
    plane: int | None = None,
    role: SwitchRole | None = None,
    max_wave: int = DEFAULT_MAX_WAVE,
    spines_per_wave: int = 1,
) -> list[Wave]:
    """Every selected switch in exactly one wave: per plane (1 then 2), its leaves then its
    spines. The canary/doubling sequence of ``apply`` runs over the whole rollout."""
    if action not in ACTIONS:
        raise WaveError("--action", f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
    if max_wave < 1:
        raise WaveError("--max-wave", f"must be at least 1, not {max_wave}")
    chosen = selected(fabric, plane, role)
    avoid = conflicts(fabric)
    sizes = iter(wave_sizes(action, max_wave))
    waves: list[Wave] = []
    for p in (1, 2):
        for r in ("leaf", "spine"):
            names = [s.name for s in chosen if s.plane == p and s.role == r]
            cap = max_wave if r == "leaf" else min(spines_per_wave, max_wave)
            capped = (min(next(sizes), cap) for _ in iter(int, 1))
            for batch in _batches(names, capped, avoid):
                waves.append(Wave(p, r, batch))
    return waves


Predict = Callable[[Wave], float]
"""A wave's predicted capacity loss, 0..1 (``controller.maintain.impact``)."""


def fit_budget(waves: list[Wave], predict: Predict, budget: float) -> list[Wave]:
    """Split every wave whose predicted loss is over ``budget`` (0..1) in halves until each
    fits; a single switch over the budget is refused with its predicted loss."""
    out: list[Wave] = []
    todo = list(reversed(waves))
    while todo:
        wave = todo.pop()
        loss = predict(wave)
        if loss <= budget + 1e-9:
            out.append(wave)
            continue
        if len(wave.switches) == 1:
            raise WaveError(
                wave.switches[0],
                f"out of service alone it costs {loss:.0%} of the workload's capacity, over "
                f"--max-capacity-loss {budget:.0%}: refused, nothing was changed",
            )
        half = (len(wave.switches) + 1) // 2
        todo.append(Wave(wave.plane, wave.role, wave.switches[half:]))
        todo.append(Wave(wave.plane, wave.role, wave.switches[:half]))
    return out
