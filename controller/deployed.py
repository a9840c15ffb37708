"""Which intent each switch runs: ``deployed.json`` in the fabric's state folder.

A deploy records it for each switch it leaves running the intent (committed and post-checked,
or found already running it); a commit-confirm only once confirmed (``maintain --action
apply``'s confirm step), because until then the switch may revert by itself. A rollback
records the intent kept beside the backup it restored (``controller.backups``); one to a
backup without it, or one that failed, forgets the switch: what it runs is no longer known.
Written under the fabric's lock, after the step it records, atomically.

Why: a drain or undrain step is a deploy of one switch at its new drain state. Rendered from
the intent file, it also carried whatever the operator had changed in that file since the
switch was deployed, at once and with no commit-confirm: a rolling ``apply`` changed each
switch at its drain (graceful-shutdown and the change in one commit, while the switch still
carried traffic) and its commit-confirm step then found nothing to commit. Rendered from the
intent the switch runs (:func:`fabric_running`), a drain step changes only the drain state. A
switch with no record (deployed before dpctl recorded this, or from another state folder) is
rendered from the intent given, as before.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from controller.facts import Fabric
from controller.generator import build_fabric
from controller.intent import FabricIntent
from controller.opstate import StateError, StateFolder

FILENAME = "deployed.json"
FORMAT = 1


def path_of(state: StateFolder) -> Path:
    return state.path / FILENAME


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _text(intent: FabricIntent) -> str:
    return intent.model_dump_json()


def _read(state: StateFolder) -> dict[str, Any]:
    path = path_of(state)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {"format": FORMAT, "intents": {}, "switches": {}}
    except (OSError, ValueError) as exc:
        raise _corrupt(path, f"cannot be read ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _corrupt(path, f"is not a format-{FORMAT} record")
    intents, switches = data.get("intents"), data.get("switches")
    if not isinstance(intents, dict) or not isinstance(switches, dict):
        raise _corrupt(path, "lacks its 'intents' or 'switches' table")
    missing = sorted(n for n, d in switches.items() if d not in intents)
    if missing:
        raise _corrupt(path, f"names an intent it does not hold for {', '.join(missing[:5])}")
    return data


def _corrupt(path: Path, detail: str) -> StateError:
    return StateError(
        str(path),
        f"{detail}; it only tells drains which intent each switch runs: remove it and run "
        "`dpctl deploy` (a switch that already runs the intent is not changed) to record it again",
    )


def _write(state: StateFolder, data: dict[str, Any]) -> None:
    state.require_lock()
    used = set(data["switches"].values())
    data["intents"] = {d: t for d, t in data["intents"].items() if d in used}
    path = path_of(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def check_readable(state: StateFolder) -> None:
    """Raise the StateError of a corrupt record now, before a deploy changes any switch (it
    records after its commits)."""
    _read(state)


def record(state: StateFolder, intent: FabricIntent, names: Iterable[str]) -> None:
    """``names`` run ``intent`` from now on (call under the lock, after they committed)."""
    record_text(state, _text(intent), names)


def record_text(state: StateFolder, text: str, names: Iterable[str]) -> None:
    """:func:`record` of an intent as its JSON (a rollback's, kept beside its backup)."""
    chosen = sorted(names)
    if not chosen:
        return
    data = _read(state)
    digest = _digest(text)
    data["intents"][digest] = text
    for name in chosen:
        data["switches"][name] = digest
    _write(state, data)


def forget(state: StateFolder, names: Iterable[str]) -> None:
    """What ``names`` run is no longer known (a rollback to a backup with no intent beside
    it, a failed one, or a deploy whose automatic rollback failed)."""
    data = _read(state)
    dropped = [n for n in names if data["switches"].pop(n, None) is not None]
    if dropped:
        _write(state, data)


def running_text(state: StateFolder, name: str) -> str | None:
    """The intent ``name`` runs as its JSON (kept beside a backup); None without a record."""
    data = _read(state)
    digest = data["switches"].get(name)
    return None if digest is None else str(data["intents"][digest])


def intent_running(state: StateFolder, name: str) -> FabricIntent | None:
    """The intent ``name`` runs, as last recorded; None without a record."""
    text = running_text(state, name)
    if text is None:
        return None
    try:
        return FabricIntent.model_validate_json(text)
    except ValidationError as exc:  # a dpctl whose intent model changed since
        raise _corrupt(path_of(state), f"holds an intent this dpctl cannot read ({exc})") from None


def fabric_running(state: StateFolder, fabric: Fabric, name: str) -> Fabric:
    """The fabric to render ``name`` from: that of the intent it runs, ``fabric`` itself when
    that is the intent given (or nothing is recorded)."""
    intent = intent_running(state, name)
    if intent is None or intent == fabric.intent:
        return fabric
    built = _built(_text(intent))
    if name not in built.switch_by_name:  # a record always names a switch of its own intent
        raise _corrupt(path_of(state), f"records {name} with an intent that has no {name}")
    return built


@lru_cache(maxsize=4)
def _built(text: str) -> Fabric:
    return build_fabric(FabricIntent.model_validate_json(text))
