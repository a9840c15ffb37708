"""Live progress on a terminal (never in CI or with --json): a bar per switch fed by Nornir's
processor events, and a one-line "which step now" for drain, undrain and lab up."""

from __future__ import annotations

import threading
import time
from types import TracebackType

from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as RichProgress
from rich.progress import Task as RichTask
from rich.text import Text

from controller.cli.common import err
from controller.cli.output import live_enabled


class Running:
    """The switches being worked on now and since when (Nornir's worker threads add and
    remove them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: dict[str, float] = {}

    def start(self, name: str) -> None:
        with self._lock:
            self._since[name] = time.monotonic()

    def stop(self, name: str) -> None:
        with self._lock:
            self._since.pop(name, None)

    def summary(self, now: float | None = None) -> str:
        """ "N running, slowest NAME S s": the switch that has taken longest so far is named
        while the others go on (a frozen one stays named until its timeout)."""
        with self._lock:
            since = dict(self._since)
        if not since:
            return ""
        name = min(since, key=lambda n: (since[n], n))
        age = (now if now is not None else time.monotonic()) - since[name]
        return f"{len(since)} running, slowest {name} {age:.0f} s"


class RunningColumn(ProgressColumn):
    """Rendered at each refresh of the bar, so the slowest switch's age counts up live."""

    def __init__(self, running: Running) -> None:
        super().__init__()
        self.running = running

    def render(self, task: RichTask) -> Text:
        return Text(self.running.summary(), style="dim")


class SwitchProgress:
    """A Nornir processor: one bar step per switch whose task completes; the switch's name
    and its subtask (``commit``) while it runs, how many run and which one is slowest. Use as
    a context manager around the run."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.enabled = enabled and live_enabled(err, False)
        self.label = label
        self.running = Running()
        self._bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            RunningColumn(self.running),
            console=err,
            disable=not self.enabled,
        )
        self._task = self._bar.add_task(label, total=total)

    def __enter__(self) -> SwitchProgress:
        self._bar.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bar.__exit__(None, None, None)

    # -- Nornir's Processor protocol ---------------------------------------------------------
    def task_started(self, task: Task) -> None:
        return None

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        return None

    def task_instance_started(self, task: Task, host: Host) -> None:
        self.running.start(host.name)

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.running.stop(host.name)
        self._bar.advance(self._task)

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        self._bar.update(self._task, description=f"{self.label} {host.name}: {task.name}")

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        return None


class StepStatus:
    """A live 'which step now' line for drain/undrain/lab up; silent in CI and --json."""

    def __init__(self, action: str, enabled: bool) -> None:
        self.action = action
        self.enabled = enabled and live_enabled(err, False)
        self._status = err.status(f"{action}...") if self.enabled else None

    def __enter__(self) -> StepStatus:
        if self._status:
            self._status.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._status:
            self._status.__exit__(None, None, None)

    def __call__(self, leaf: str, step: str) -> None:
        if self._status:
            self._status.update(f"{self.action} {leaf}: {step}...")
