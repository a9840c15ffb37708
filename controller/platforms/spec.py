"""What a platform is to dpctl: one record naming everything that differs between platforms.

A platform is one folder, ``controller/platforms/<name>/``, whose ``__init__.py`` holds a
:class:`Platform` named ``PLATFORM`` (netlab's rule: a device is a folder loaded by name).
The record is plain data plus ``"module:attribute"`` references that are imported only when
used, so choosing or listing platforms never imports a driver, NAPALM or a YANG library
(``dpctl --help`` stays fast, and rendering never imports a driver).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.drivers.contract import DpctlDriver
    from controller.intent import FabricIntent
    from controller.render.device import DeviceConfig

RenderContext = Callable[["DeviceConfig"], dict[str, Any]]
FileCheck = Callable[[str, Mapping[str, str]], "Mapping[str, int] | None"]
IntentCheck = Callable[["FabricIntent"], None]
EcnQueues = Callable[["DeviceConfig"], list[int]]


def resolve(reference: str) -> Any:
    """``"package.module:attribute"`` -> the attribute (imported now)."""
    module, sep, attribute = reference.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"not a 'module:attribute' reference: {reference!r}")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class RenderCheck:
    """A check of one device's rendered files: raises a DpctlError naming the device, or
    returns counts to report (AsterNOS: lines documented/unverified). ``optional`` checks
    are the ones ``dpctl render --no-validate`` skips (a model validation that needs a
    library); the others (a syntax table) always run."""

    name: str
    function: str
    """``module:function`` taking (device name, files) (see :data:`FileCheck`)."""
    optional: bool = False

    def __call__(self, device: str, files: Mapping[str, str]) -> Mapping[str, int] | None:
        check: FileCheck = resolve(self.function)
        return check(device, files)


@dataclass(frozen=True)
class Platform:
    """Everything dpctl needs to know about one platform, in one place."""

    name: str
    description: str
    files: Mapping[str, str]
    """Rendered file name -> its master template (relative to ``template_dir``), in the order
    the device's bundle lists them. The driver's bundle holds exactly these files."""
    template_dir: Path
    """The Jinja2 templates (the in-tree platforms keep theirs in the repository's top-level
    ``templates/<name>/``, a folder the project's layout fixes; another platform may keep
    them in its own folder)."""
    context: str
    """``module:function`` building the template variables of one device beyond the shared
    structured data (:data:`RenderContext`)."""
    driver: str
    """``module:Class`` of its NAPALM driver (a ``controller.drivers.contract.DpctlDriver``)."""
    load_balancing: Mapping[str, str | None]
    """Every load-balancing mode -> None (rendered) or why the platform cannot render it."""
    main_file: str
    """The file a plain (unbundled) configuration text is taken as."""
    checks: tuple[RenderCheck, ...] = ()
    intent_check: str | None = None
    """``module:function`` refusing intents the platform cannot express (:data:`IntentCheck`)."""
    ecn_queues: str | None = None
    """``module:function``: the queues that mark ECN on this datapath; default: the lossless
    traffic classes (queue = traffic class, as on SONiC and AsterNOS)."""
    models: tuple[str, ...] = ()
    """Switch models it runs on beyond those whose catalog entry lists it."""

    @cached_property
    def context_builder(self) -> RenderContext:
        builder: RenderContext = resolve(self.context)
        return builder

    @cached_property
    def driver_class(self) -> type[DpctlDriver]:
        driver: type[DpctlDriver] = resolve(self.driver)
        return driver

    def check_intent(self, intent: FabricIntent) -> None:
        if self.intent_check is not None:
            check: IntentCheck = resolve(self.intent_check)
            check(intent)

    def expected_ecn_queues(self, device: DeviceConfig) -> list[int]:
        if self.ecn_queues is not None:
            queues: EcnQueues = resolve(self.ecn_queues)
            return queues(device)
        assert device.roce is not None
        return sorted(device.roce.ecn_queues)

    def unsupported(self, mode: str) -> str | None:
        """Why this platform cannot render load-balancing ``mode`` (None: it can)."""
        if mode not in self.load_balancing:
            return f"the platform does not list {mode!r} among its load-balancing modes"
        return self.load_balancing[mode]
