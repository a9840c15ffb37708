"""The vendor's community-SONiC platform files (vendored in ``upstream/``, see SOURCE.txt).

platform.json lists each parent port (``EthernetN``) with its SerDes lanes, front-panel
index and, per breakout mode, the aliases of the sub-ports; hwsku.json gives each port's
default mode. The SONiC renderer takes PORT lanes, alias and index from here, and a test
holds the catalog (switches.yaml) to the same data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

# catalog model -> platform folder / variant folder / HWSKU folder
PLATFORM_DIRS: dict[str, tuple[str, str, str]] = {
    "CX864E-N": ("x86_64-asterfusion_cx864e_n-r0", "CX864E-N_TL10E02", "CX864E-N"),
    "CX732Q-N": ("x86_64-asterfusion_cx732q_n-r0", "CX732Q-N_TL07E03", "CX732Q-N"),
}


@dataclass(frozen=True)
class UpstreamPort:
    name: str
    lanes: tuple[int, ...]
    index: int
    breakout_modes: dict[str, tuple[str, ...]]  # mode -> sub-port aliases
    default_mode: str


def _read(*parts: str) -> dict[str, dict[str, dict[str, object]]]:
    path = resources.files("controller.catalog").joinpath("upstream", *parts)
    data: dict[str, dict[str, dict[str, object]]] = json.loads(path.read_text())
    return data


def read_platform(platform: str, variant: str, hwsku: str) -> dict[str, UpstreamPort]:
    ports = _read(platform, variant, "platform.json")["interfaces"]
    defaults = _read(platform, variant, hwsku, "hwsku.json")["interfaces"]
    result = {}
    for name, entry in ports.items():
        modes = entry["breakout_modes"]
        assert isinstance(modes, dict)
        result[name] = UpstreamPort(
            name=name,
            lanes=tuple(int(lane) for lane in str(entry["lanes"]).split(",")),
            index=int(str(entry["index"]).split(",")[0]),
            breakout_modes={mode: tuple(aliases) for mode, aliases in modes.items()},
            default_mode=str(defaults[name]["default_brkout_mode"]),
        )
    return result


@cache
def upstream_ports(model: str) -> dict[str, UpstreamPort] | None:
    """Parent port name -> its upstream data; None for a model without platform files."""
    dirs = PLATFORM_DIRS.get(model)
    return read_platform(*dirs) if dirs else None
