"""The platform registry: every platform dpctl renders for and drives, by name.

Built-in platforms are the folders of this package (``frr``, ``sonic``, ``asternos``); another
package adds one through the entry point group ``dpctl.platforms`` (name -> a module holding
``PLATFORM``), and a test or a script with :func:`register`. Nothing else in dpctl lists
platforms: the intent's ``platform`` field, rendering, deploy and verify all ask here.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points

from controller.errors import DpctlError
from controller.platforms.spec import Platform, RenderCheck

__all__ = ["BUILTIN", "Platform", "PlatformError", "RenderCheck", "get", "names", "register"]

BUILTIN = ("asternos", "sonic", "frr")
ENTRY_POINT_GROUP = "dpctl.platforms"

_registered: dict[str, Platform] = {}


class PlatformError(DpctlError):
    """A platform is unknown or its folder does not define one."""


@cache
def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> tuple[str, ...]:
    """Every platform name: the built-in ones, then those of entry points and register()."""
    extra = sorted((set(_entry_points()) | set(_registered)) - set(BUILTIN))
    return (*BUILTIN, *extra)


def register(platform: Platform) -> None:
    """Add (or replace) a platform by its name, for this process."""
    _registered[platform.name] = platform
    _load.cache_clear()


def unregister(name: str) -> None:
    _registered.pop(name, None)
    _load.cache_clear()


def get(name: str) -> Platform:
    """The platform called ``name``; PlatformError naming the known ones if there is none."""
    return _load(name)


@cache
def _load(name: str) -> Platform:
    if name in _registered:
        return _registered[name]
    if name in BUILTIN:
        module_name = f"{__name__}.{name}"
    elif name in _entry_points():
        module_name = _entry_points()[name].partition(":")[0]
    else:
        raise PlatformError("platform", f"unknown platform {name!r} (known: {', '.join(names())})")
    platform = getattr(importlib.import_module(module_name), "PLATFORM", None)
    if not isinstance(platform, Platform) or platform.name != name:
        raise PlatformError("platform", f"{module_name} does not define PLATFORM for {name!r}")
    return platform
