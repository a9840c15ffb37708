"""The toy platform's own template variables: its name for an uplink."""

from __future__ import annotations

from typing import Any

from controller.render.device import DeviceConfig


def context(device: DeviceConfig) -> dict[str, Any]:
    return {"uplinks": sorted(n.interface for n in device.bgp.neighbors)}
