"""Render DeviceConfig objects to text with the platform's Jinja2 templates.

Templates live in the top-level ``templates/<platform>/`` folders (package data in a wheel,
see controller.resources) and only format; any missing value is an error (StrictUndefined),
never an empty line in a switch config.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError

from controller.errors import DpctlError
from controller.facts import Fabric
from controller.render.device import DeviceConfig, Maintenance, build_device
from controller.render.features import check_load_balancing, check_sonic_release
from controller.resources import data_dir
from controller.sonic_yang import check_rendered as check_sonic_yang

TEMPLATES = Path(os.environ.get("DPCTL_TEMPLATES", data_dir("templates")))

# platform -> output file name -> master template
PLATFORM_FILES: dict[str, dict[str, str]] = {
    "frr": {
        "frr.conf": "frr/frr.conf.j2",
        "ip.batch": "frr/ip.batch.j2",
        "bridge.batch": "frr/bridge.batch.j2",
        "sysctl.conf": "frr/sysctl.conf.j2",
        "arp-to-host.json": "frr/arp-to-host.json.j2",
        "qos.tc": "frr/qos.tc.j2",
    },
    "sonic": {
        "config_db.json": "sonic/config_db.json.j2",
        "frr.conf": "sonic/frr.conf.j2",
    },
    "asternos": {
        "asternos.cli": "asternos/asternos.cli.j2",
    },
}


# platform -> check of one device's rendered files, raising a DpctlError that names the
# device; run by render_fabric unless validate=False.
POST_RENDER_CHECKS: dict[str, Callable[[str, dict[str, str]], None]] = {
    "sonic": check_sonic_yang,
}


class RenderError(DpctlError):
    """A template failed to render for a device."""


@cache
def environment(root: Path = TEMPLATES) -> Environment:
    return Environment(
        loader=FileSystemLoader(str(root)),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def platform_context(device: DeviceConfig) -> dict[str, Any]:
    """Extra template variables computed by ``controller.render.<platform>.context(device)``.

    Platform-specific structure (a SONiC config_db dict, AsterNOS interface names, the
    Linux side of an FRR switch) is built in Python there; templates still only format.
    """
    module = importlib.import_module(f"controller.render.{device.platform}")
    builder: Callable[[DeviceConfig], dict[str, Any]] = module.context
    return builder(device)


def render_device(device: DeviceConfig) -> dict[str, str]:
    env = environment()
    extra = platform_context(device)
    files = {}
    for name, template in PLATFORM_FILES[device.platform].items():
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


def render_fabric(
    fabric: Fabric,
    plane: int | None = None,
    device: str | None = None,
    maintenance: dict[str, Maintenance] | None = None,
    validate: bool = True,
) -> dict[str, dict[str, str]]:
    """device name -> file name -> text, for the selected switches. Raises before any output.

    With ``validate`` (the default) each device's files also pass the platform's model check
    (SONiC: its YANG models); the first invalid device raises, naming what is wrong.
    """
    check_load_balancing(
        fabric.intent.platform,
        {s.model for s in fabric.switches},
        fabric.intent.load_balancing.mode,
    )
    check_sonic_release(
        fabric.intent.platform, fabric.intent.sonic_release, fabric.intent.dual_leaf_mode
    )
    maintenance = maintenance or {}
    check = POST_RENDER_CHECKS.get(fabric.intent.platform) if validate else None
    rendered = {}
    for name in select_devices(fabric, plane, device):
        files = render_device(build_device(fabric, name, maintenance.get(name, "none")))
        if check is not None:
            check(name, files)
        rendered[name] = files
    return rendered


def as_files(rendered: dict[str, dict[str, str]]) -> dict[str, bytes]:
    """Flatten to relative paths DEVICE/FILE for the all-or-nothing writer."""
    return {
        f"{device}/{name}": text.encode()
        for device, files in rendered.items()
        for name, text in files.items()
    }
