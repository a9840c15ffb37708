"""Live progress on a terminal (never in CI or with --json): a bar per switch fed by Nornir's
processor events, and a one-line "which step now" for drain, undrain and lab up."""

from __future__ import annotations

from types import TracebackType

from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from controller.cli.common import err
from controller.cli.output import live_enabled


class SwitchProgress:
    """A Nornir processor: one bar step per switch whose task completes; the switch's name
    and its subtask (``commit``) while it runs. Use as a context manager around the run."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.enabled = enabled and live_enabled(err, False)
        self.label = label
        self._bar = RichProgress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
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
        return None

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
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
