"""Operator state of a fabric: one folder per fabric, owned by :class:`StateFolder`.

Where: ``<root>/<fabric name>/`` with ``<root>`` chosen, first match wins, by

1. ``dpctl --state-dir DIR``,
2. the environment variable ``DPCTL_STATE_DIR``,
3. ``.dpctl`` next to the intent file (``<intent dir>/.dpctl``),

so every operator who runs dpctl on the same intent file, from any directory, shares the same
state. The command line resolves it once (:meth:`StateFolder.for_intent`) and passes the
folder down; library functions take it as an argument, never from a global.

What: ``lock`` (one operation that changes switches at a time: deploy, drain, undrain,
rollback, maintain), ``maintenance.json`` (each leaf's drain state, and a drain/undrain step
in progress), ``rollout.json`` (a rolling maintenance: its waves and how far it got),
``deployed.json`` (which intent each switch runs: ``controller.deployed``),
``backups/<device>/`` (running configs saved before each commit), ``ansible/``
(artifacts of each `dpctl hosts` run).

Maintenance state changes only under the lock: a step is first recorded as pending (its
target state), the switch is deployed, and only then the target becomes the committed state;
a step that failed and was rolled back clears the pending mark; a step whose outcome is
unknown (rollback failed, process killed) stays pending, and every command treats it: an
ordinary deploy refuses to touch the leaf, verify reports it, drain/undrain finish it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, get_args

from controller.errors import DpctlError
from controller.facts import Fabric, Maintenance

STATE_ENV = "DPCTL_STATE_DIR"
STATE_DIRNAME = ".dpctl"
FORMAT = 1
STATES: tuple[str, ...] = get_args(Maintenance)


class StateError(DpctlError):
    """The fabric's operator state is unreadable or inconsistent; the reason says how to fix it."""


class OperationLocked(DpctlError):
    """Another dpctl operation on this fabric holds its lock; nothing was changed."""


class StepPending(DpctlError):
    """A drain/undrain step did not finish; the leaf's live config is unknown."""


# -- where ------------------------------------------------------------------------------------
def resolve_root(intent_path: Path | None, override: Path | None = None) -> Path:
    """The state root: ``--state-dir``, else ``$DPCTL_STATE_DIR``, else ``<intent dir>/.dpctl``."""
    if override is not None:
        return override.expanduser().resolve()
    env = os.environ.get(STATE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    if intent_path is not None:
        return intent_path.expanduser().resolve().parent / STATE_DIRNAME
    return Path(STATE_DIRNAME).resolve()


def _mkdir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(
            str(path),
            f"cannot create the state folder ({exc.strerror}); choose another with "
            f"--state-dir or {STATE_ENV}",
        ) from None
    return path


_held: dict[str, int] = {}
"""Lock files this process holds (the lock is not re-entrant: see StateFolder.lock)."""


@dataclass(frozen=True)
class StateFolder:
    """The operator state folder of one fabric: ``<root>/<fabric name>/``."""

    fabric: str
    root: Path

    @classmethod
    def for_intent(
        cls, fabric: str, intent_path: Path | None, override: Path | None = None
    ) -> StateFolder:
        """The folder of the fabric whose intent is at ``intent_path`` (see the module)."""
        return cls(fabric, resolve_root(intent_path, override))

    @property
    def path(self) -> Path:
        return self.root / self.fabric

    @property
    def lock_path(self) -> Path:
        return self.path / "lock"

    @property
    def maintenance_path(self) -> Path:
        return self.path / "maintenance.json"

    @property
    def rollout_path(self) -> Path:
        """A rolling maintenance's progress (``controller.maintain.state``)."""
        return self.path / "rollout.json"

    def backup_dir(self, device: str) -> Path:
        return self.path / "backups" / device

    @property
    def ansible_dir(self) -> Path:
        return self.path / "ansible"

    # -- the lock -----------------------------------------------------------------------------
    def holds_lock(self) -> bool:
        return _held.get(str(self.lock_path), 0) > 0

    def require_lock(self) -> None:
        if not self.holds_lock():  # a programming error, not an operator's
            raise StateError(self.fabric, "operator state changed without the fabric's lock")

    @contextmanager
    def lock(self, operation: str) -> Iterator[None]:
        """Exclusive, non-blocking, per fabric, across processes (flock), and not re-entrant:
        a caller that holds it (a drain around its deploy steps) says so to the callee
        (:meth:`require_lock`). Refused at once when held elsewhere, nothing changed."""
        path = self.lock_path
        key = str(path)
        if _held.get(key, 0) > 0:
            raise OperationLocked(
                key,
                f"another operation on fabric {self.fabric} is running (in this process); "
                "nothing was changed",
            )
        _mkdir(path.parent)
        handle = path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise OperationLocked(
                key,
                f"another operation on fabric {self.fabric} is running ({holder}); "
                "nothing was changed",
            ) from None
        _record_holder(handle, operation)
        _held[key] = 1
        try:
            yield
        finally:
            _held.pop(key, None)
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    # -- maintenance state --------------------------------------------------------------------
    def leaf_states(self, fabric: Fabric) -> dict[str, LeafState]:
        """Every switch of ``fabric`` with a drain state or an open step (a corrupt file is a
        StateError naming how to repair it)."""
        return self.read_maintenance(set(fabric.switch_by_name))

    def read_maintenance(self, devices: set[str]) -> dict[str, LeafState]:
        """Every switch with a drain state or a step in progress (others are in service)."""
        return read_maintenance_file(self.maintenance_path, devices)

    def _write(self, book: Mapping[str, LeafState]) -> None:
        self.require_lock()
        path = self.maintenance_path
        _mkdir(path.parent)
        leaves = {n: s.to_dict() for n, s in sorted(book.items()) if s.state != "none" or s.pending}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "leaves": leaves}, indent=2) + "\n")
        os.replace(tmp, path)

    def begin_step(
        self, devices: set[str], device: str, target: Maintenance
    ) -> dict[str, Maintenance]:
        """Record ``target`` as in progress on ``device`` (under the lock); returns the drain
        states to render with: the committed ones, ``device`` at ``target``."""
        book = self.read_maintenance(devices)
        current = book.get(device, LeafState())
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        book[device] = LeafState(current.state, target, stamp)
        self._write(book)
        states = committed(book)
        if target == "none":
            states.pop(device, None)
        else:
            states[device] = target
        return states

    def end_step(self, devices: set[str], device: str, committed_ok: bool) -> None:
        """The step on ``device`` committed (its target becomes the state) or was rolled back
        (the state stays, the pending mark goes)."""
        book = self.read_maintenance(devices)
        current = book.get(device, LeafState())
        target = current.pending if current.pending is not None else current.state
        book[device] = LeafState(target if committed_ok else current.state)
        self._write(book)


def _holder(handle: IO[str]) -> str:
    """Who holds the lock, from what it wrote into the lock file."""
    handle.seek(0)
    holder = handle.read().strip()
    try:
        who = json.loads(holder)
        return f"{who.get('operation')} by pid {who.get('pid')} since {who.get('started')}"
    except (ValueError, AttributeError):
        return f"pid {holder or 'unknown'}"


def _record_holder(handle: IO[str], operation: str) -> None:
    handle.seek(0)
    handle.truncate()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    handle.write(json.dumps({"operation": operation, "pid": os.getpid(), "started": started}))
    handle.flush()


# -- maintenance state ------------------------------------------------------------------------
@dataclass(frozen=True)
class LeafState:
    """A switch's committed drain state and the step in progress on it, if any."""

    state: Maintenance = "none"
    pending: Maintenance | None = None
    since: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "pending": self.pending, "since": self.since}


REPAIR = (
    "to repair: run `dpctl verify` to see each switch's live drain state (its maintenance "
    "check), then edit the file to match, in the form "
    '{"format": 1, "leaves": {"<switch>": {"state": "isolated", "pending": null}}} '
    f"(states: {', '.join(STATES)}), or delete it if no switch is drained"
)


def _corrupt(path: Path, detail: str) -> StateError:
    return StateError(str(path), f"corrupt maintenance state: {detail}; {REPAIR}")


def _state(path: Path, device: str, key: str, value: Any, optional: bool) -> Any:
    if value is None and optional:
        return None
    if value not in STATES:
        raise _corrupt(path, f"{device}: {key} {value!r} is not one of {', '.join(STATES)}")
    return value


def parse_maintenance(text: str, path: Path, devices: set[str]) -> dict[str, LeafState]:
    """The file's content, validated (pure); ``devices`` are the fabric's switch names."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _corrupt(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _corrupt(path, f"a JSON object is expected, found {type(data).__name__}")
    if "format" not in data:  # the first layout: {"<switch>": "<state>"}
        data = {"format": FORMAT, "leaves": {k: {"state": v} for k, v in data.items()}}
    if data.get("format") != FORMAT or not isinstance(data.get("leaves"), dict):
        raise _corrupt(path, f'"format": {FORMAT} and a "leaves" object are expected')
    book: dict[str, LeafState] = {}
    for device, entry in data["leaves"].items():
        if device not in devices:
            raise _corrupt(path, f"{device!r} is not a switch of this fabric")
        if not isinstance(entry, dict):
            raise _corrupt(path, f"{device}: an object with state and pending is expected")
        state = _state(path, device, "state", entry.get("state"), optional=False)
        pending = _state(path, device, "pending", entry.get("pending"), optional=True)
        book[device] = LeafState(state, pending, str(entry.get("since") or ""))
    return book


def read_maintenance_file(path: Path, devices: set[str]) -> dict[str, LeafState]:
    """The maintenance file at ``path``, validated (absent: every switch in service)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StateError(str(path), f"cannot read the maintenance state ({exc.strerror})") from None
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise _corrupt(path, "not UTF-8 text") from None
    return parse_maintenance(text, path, devices)


def committed(book: Mapping[str, LeafState]) -> dict[str, Maintenance]:
    """The committed drain states (what a deploy renders), switches in service left out."""
    return {name: s.state for name, s in book.items() if s.state != "none"}


def pending(book: Mapping[str, LeafState]) -> dict[str, LeafState]:
    return {name: s for name, s in book.items() if s.pending is not None}


def refuse_pending(book: Mapping[str, LeafState], devices: list[str]) -> None:
    """An ordinary deploy must not guess a switch's drain state: refuse while a step is open."""
    for name in devices:
        s = book.get(name)
        if s is not None and s.pending is not None:
            raise StepPending(
                name,
                f"a maintenance step to {s.pending!r} did not finish (started {s.since}; "
                f"last committed state {s.state!r}): its live config is unknown. Finish it "
                f"with `dpctl drain {name}` or `dpctl undrain {name}`, then deploy",
            )
