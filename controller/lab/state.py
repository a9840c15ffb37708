"""The lab's JSON state file (``<state_dir>/lab.json``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.lab.errors import LabStateError

STATE_FILE = "lab.json"
Mode = Literal["guest", "native"]
"""Where the lab's namespaces live: inside a guest machine, or on this host itself."""
GUEST_HOST = "127.0.0.1"
"""Where a QEMU guest's sshd is forwarded to (a UML guest has its own address on a tap)."""


@dataclass(frozen=True)
class NodeState:
    """Where a node lives and how to reach it."""

    kind: str
    role: str
    plane: int | None
    namespace: str
    mgmt_ip: str
    guest: int = 0
    """The instance it runs in (a lab split over two UML instances: controller/lab/split.py)."""


@dataclass(frozen=True)
class GuestInstance:
    """One more instance of a split lab: its UML process and its sshd."""

    pid: int
    host: str
    port: int = 22


@dataclass
class LabState:
    """Serialisable description of a running lab."""

    name: str
    prefix: str
    mode: Mode
    state_dir: str
    mgmt_subnet: str
    mgmt_bridge_ip: str
    nodes: dict[str, NodeState] = field(default_factory=dict)
    guest_pid: int | None = None
    guest_port: int | None = None
    timings: dict[str, float] = field(default_factory=dict)
    kernel: str = ""
    """The kernel the lab's namespaces run on (the guest's, or this machine's natively)."""
    substrate: str = ""
    """native, kvm, uml or tcg (``controller.lab.substrate``); empty in a state written
    before the choice existed: tcg for a guest, native otherwise."""
    substrate_reason: str = ""
    """Why that substrate ran (what this machine could not do, or the variable forcing it)."""
    guest_host: str = GUEST_HOST
    """The address of the guest's sshd, the lab's jump host (with ``guest_port``)."""
    more_guests: list[GuestInstance] = field(default_factory=list)
    """Instances 1.. of a split lab (instance 0 is ``guest_pid``, the jump host)."""

    @property
    def guests(self) -> int:
        return 1 + len(self.more_guests)

    @property
    def path(self) -> Path:
        return Path(self.state_dir)

    @property
    def key_path(self) -> Path:
        return self.path / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.path / "known_hosts"

    @property
    def jump(self) -> tuple[str, int] | None:
        """The guest's sshd every node is reached through, or None natively."""
        if self.guest_port is None:
            return None
        return self.guest_host, self.guest_port

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def save(self) -> None:
        tmp = self.path / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.path / STATE_FILE)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabState:
        try:
            nodes = {k: NodeState(**v) for k, v in data.pop("nodes").items()}
            more = [GuestInstance(**g) for g in data.pop("more_guests", [])]
            return cls(nodes=nodes, more_guests=more, **data)
        except (KeyError, TypeError) as exc:
            raise LabStateError(f"malformed lab state: {exc}") from exc


@dataclass
class Removed:
    """What taking a lab down removed from this host (``down``'s report)."""

    guest_stopped: list[int] = field(default_factory=list)
    namespaces_removed: list[str] = field(default_factory=list)
    taps_removed: list[str] = field(default_factory=list)
    """Its taps, and a split lab's host veth pair (named by its first end)."""

    def add(self, other: Removed) -> None:
        self.guest_stopped += other.guest_stopped
        self.namespaces_removed += other.namespaces_removed
        self.taps_removed += other.taps_removed


def load_state(state_dir: Path) -> LabState:
    """Read ``lab.json``; raise :class:`LabStateError` when absent or broken."""
    path = state_dir / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LabStateError(f"no lab state in {state_dir}") from None
    except (OSError, ValueError) as exc:
        raise LabStateError(f"unreadable lab state {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise LabStateError(f"malformed lab state {path}")
    return LabState.from_json(data)
