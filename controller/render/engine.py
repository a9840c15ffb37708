"""Render DeviceConfig objects to text with the platform's Jinja2 templates.

Which files a platform has, where its templates are and what checks its output must pass
come from its record in the platform registry (``controller.platforms``). Templates only
format; any missing value is an error (StrictUndefined), never an empty line in a switch
config.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError

from controller import platforms
from controller.errors import RenderError
from controller.facts import Fabric, Maintenance
from controller.platforms import Platform
from controller.render.device import DeviceConfig, build_device
from controller.render.features import check_load_balancing
from controller.resources import templates_dir

__all__ = [
    "RenderError",
    "RenderedFabric",
    "as_files",
    "render_configs",
    "render_device",
    "render_fabric",
    "select_devices",
    "structured_configs",
]


@cache
def environment(*roots: Path) -> Environment:
    """One Jinja2 environment per template search path (a platform's folder, then the shared
    templates, whose FRR partials the SONiC-family platforms include)."""
    return Environment(
        loader=FileSystemLoader([str(r) for r in roots]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _platform_environment(platform: Platform) -> Environment:
    shared = templates_dir()
    roots = (
        (platform.template_dir,)
        if platform.template_dir == shared
        else (
            platform.template_dir,
            shared,
        )
    )
    return environment(*roots)


def render_device(device: DeviceConfig) -> dict[str, str]:
    """The device's files, rendered by its platform's templates (file name -> text)."""
    platform = platforms.get(device.platform)
    env = _platform_environment(platform)
    extra = platform.context_builder(device)
    files = {}
    for name, template in platform.files.items():
        try:
            files[name] = env.get_template(template).render(d=device, **extra)
        except TemplateError as exc:
            raise RenderError(device.hostname, f"template {template}: {exc}") from None
    return files


def select_devices(fabric: Fabric, plane: int | None, device: str | None) -> list[str]:
    if device is not None and device not in fabric.switch_by_name:
        raise RenderError("--device", f"no switch named {device!r} in fabric {fabric.intent.name}")
    return [
        s.name
        for s in fabric.switches
        if (plane is None or s.plane == plane) and (device is None or s.name == device)
    ]


def check_fabric_features(fabric: Fabric) -> None:
    """Refuse, before anything renders, what the platform or the models cannot do."""
    intent = fabric.intent
    check_load_balancing(
        intent.platform, {s.model for s in fabric.switches}, intent.load_balancing.mode
    )
    platforms.get(intent.platform).check_intent(intent)


@dataclass
class RenderedFabric:
    """Every selected device's files, and what the platform's checks counted per device."""

    files: dict[str, dict[str, str]]
    reports: dict[str, dict[str, Mapping[str, int]]] = field(default_factory=dict)
    """device -> check name -> counts (e.g. AsterNOS lines documented / unverified)."""


def structured_configs(
    fabric: Fabric, names: list[str], maintenance: Mapping[str, Maintenance] | None = None
) -> dict[str, DeviceConfig]:
    """Each named switch's structured configuration, built once (with its drain state)."""
    maintenance = maintenance or {}
    return {name: build_device(fabric, name, maintenance.get(name, "none")) for name in names}


def render_configs(
    fabric: Fabric, devices: Mapping[str, DeviceConfig], validate: bool = True
) -> RenderedFabric:
    """The devices' files, each passed through the platform's checks; raises before any
    output. ``validate=False`` skips the optional checks (SONiC's YANG models)."""
    check_fabric_features(fabric)
    platform = platforms.get(fabric.intent.platform)
    checks = [c for c in platform.checks if validate or not c.optional]
    result = RenderedFabric(files={})
    for name, device in devices.items():
        files = render_device(device)
        for check in checks:
            counts = check(name, files)
            if counts is not None:
                result.reports.setdefault(name, {})[check.name] = counts
        result.files[name] = files
    return result


def render_checked(
    fabric: Fabric,
    plane: int | None = None,
    device: str | None = None,
    maintenance: Mapping[str, Maintenance] | None = None,
    validate: bool = True,
) -> RenderedFabric:
    """Render the selected switches (a plane, one device, or all) and check them."""
    names = select_devices(fabric, plane, device)
    check_fabric_features(fabric)  # refuse before building anything
    return render_configs(fabric, _BuiltInTurn(fabric, names, maintenance or {}), validate)


class _BuiltInTurn(Mapping[str, DeviceConfig]):
    """The named switches' structured configurations, each built when rendering reaches it
    and let go after: all 384 DeviceConfig trees of the 16,384-GPU example alive at once made
    the cyclic GC scan them again and again (a fifth of the render's time)."""

    def __init__(
        self, fabric: Fabric, names: list[str], maintenance: Mapping[str, Maintenance]
    ) -> None:
        self.fabric, self.names, self.maintenance = fabric, names, maintenance
        self.known = set(names)

    def __getitem__(self, name: str) -> DeviceConfig:
        if name not in self.known:
            raise KeyError(name)
        return build_device(self.fabric, name, self.maintenance.get(name, "none"))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def render_fabric(
    fabric: Fabric,
    plane: int | None = None,
    device: str | None = None,
    maintenance: Mapping[str, Maintenance] | None = None,
    validate: bool = True,
) -> dict[str, dict[str, str]]:
    """device name -> file name -> text, for the selected switches (see render_checked)."""
    return render_checked(fabric, plane, device, maintenance, validate).files


def as_files(rendered: Mapping[str, Mapping[str, str]]) -> dict[str, bytes]:
    """Flatten to relative paths DEVICE/FILE for the all-or-nothing writer."""
    return {
        f"{device}/{name}": text.encode()
        for device, files in rendered.items()
        for name, text in files.items()
    }
