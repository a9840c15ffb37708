"""Typed errors. Every error names where the problem is (a field, a device) and why."""

from __future__ import annotations


class DpctlError(Exception):
    """Base of every error the library raises on purpose; the CLI turns it into a message."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}" if where else reason)

    def to_dict(self) -> dict[str, str]:
        return {"type": type(self).__name__, "where": self.where, "reason": self.reason}


class IntentError(DpctlError):
    """The fabric intent file is unreadable or invalid; `where` is the field path."""


class CatalogError(DpctlError):
    """A switch model is unknown or cannot play the role asked of it."""


class SizingError(DpctlError):
    """The rail rules cannot build the requested fabric."""


class AddressingError(DpctlError):
    """An address pool is too small or overlaps another one."""


class OutputError(DpctlError):
    """Generated files could not be written."""


class RenderError(DpctlError):
    """A device's configuration cannot be rendered (a template failed, a check refused it)."""


class UnsupportedFeature(DpctlError):
    """The intent asks for something the platform or model cannot do."""
