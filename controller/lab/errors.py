"""Typed exceptions of the lab runtime."""

from __future__ import annotations


class LabError(Exception):
    """Base class of every error raised by ``controller.lab``."""


class LabTopologyError(LabError):
    """The topology handed to the runtime is inconsistent."""


class LabSetupError(LabError):
    """A prerequisite (package, kernel, tool) is missing; run ``setup.sh``."""


class GuestBootError(LabError):
    """The lab's guest did not boot or its sshd never answered."""


class GuestStartClash(GuestBootError):
    """The guest could not take its address or port (taken meanwhile): starting again may work."""


class LabCommandError(LabError):
    """A command or build step inside the lab failed."""

    def __init__(self, message: str, rc: int = -1, stdout: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr


class LabTimeoutError(LabError):
    """Something polled for did not happen in time."""


class LabStateError(LabError):
    """The lab state directory is missing, unreadable or describes no lab."""
