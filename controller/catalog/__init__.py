"""Switch catalog: models as data (``switches.yaml``), read into typed objects."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

import yaml

from controller.errors import CatalogError

PortUse = Literal["downlink", "uplink", "fabric"]
Role = Literal["leaf", "spine"]

_BREAKOUT = re.compile(r"^(?P<count>\d+)x(?P<speed>\d+)G(\[[^\]]*\])?$")


def speed_gbps(speed: str) -> int:
    """'400G' -> 400."""
    if not speed.endswith("G") or not speed[:-1].isdigit():
        raise CatalogError("speed", f"{speed!r} is not a speed like '400G'")
    return int(speed[:-1])


def parse_breakout(mode: str) -> tuple[int, int]:
    """'4x200G[100G]' -> (4 sub-ports, 200 Gb/s each)."""
    match = _BREAKOUT.match(mode)
    if not match:
        raise CatalogError("breakout", f"{mode!r} is not a breakout mode like '4x200G[100G]'")
    return int(match["count"]), int(match["speed"])


@dataclass(frozen=True, slots=True)
class PortBlock:
    """A run of front-panel ports that a role uses the same way."""

    first: int
    last: int
    breakout: str
    use: PortUse

    @property
    def subports(self) -> int:
        return parse_breakout(self.breakout)[0]

    @property
    def speed(self) -> str:
        return f"{parse_breakout(self.breakout)[1]}G"

    @property
    def count(self) -> int:
        return (self.last - self.first + 1) * self.subports


@dataclass(frozen=True, slots=True)
class LogicalPort:
    """One interface as the switch names it: a whole port or a breakout sub-port."""

    name: str
    cli: str
    port: int
    sub: int
    breakout: str
    speed: str
    use: PortUse | Literal["aux"]


@dataclass(frozen=True, slots=True)
class AuxPort:
    name: str
    cli: str
    speed: str


@dataclass(frozen=True)
class SwitchModel:
    name: str
    vendor: str
    asic: str
    ports: int
    port_speed: str
    lanes_per_port: int
    breakout_modes: tuple[str, ...]
    platforms: tuple[str, ...]
    names: dict[str, str]
    aux: AuxPort
    roles: dict[str, tuple[PortBlock, ...]]
    lab_only: bool = False
    """A virtual model of the embedded lab: its switches are reachable only through the lab."""

    def blocks(self, role: Role) -> tuple[PortBlock, ...]:
        if role not in self.roles:
            raise CatalogError(f"switches.{role}", f"model {self.name} cannot be a {role}")
        return self.roles[role]

    def port_count(self, role: Role, use: PortUse) -> int:
        return sum(b.count for b in self.blocks(role) if b.use == use)

    def port_speed_for(self, role: Role, use: PortUse) -> str:
        speeds = {b.speed for b in self.blocks(role) if b.use == use}
        if len(speeds) != 1:
            raise CatalogError(
                f"catalog.{self.name}.{role}", f"expected one {use} speed, found {sorted(speeds)}"
            )
        return speeds.pop()

    def logical_ports(self, role: Role, use: PortUse) -> list[LogicalPort]:
        """Every interface of that use, in cabling order (front-panel port, then sub-port)."""
        result: list[LogicalPort] = []
        kernel_fmt = self.names["kernel"]
        cli_fmt = self.names.get("asternos", kernel_fmt)
        for block in self.blocks(role):
            if block.use != use:
                continue
            lanes_per_sub = max(self.lanes_per_port // block.subports, 1)
            for port in range(block.first, block.last + 1):
                for sub in range(block.subports):
                    lane = (port - 1) * self.lanes_per_port + sub * lanes_per_sub
                    fields = {"port": port, "lane": lane, "sub": sub + 1}
                    result.append(
                        LogicalPort(
                            name=kernel_fmt.format(**fields),
                            cli=cli_fmt.format(**fields),
                            port=port,
                            sub=sub + 1,
                            breakout=block.breakout,
                            speed=block.speed,
                            use=use,
                        )
                    )
        return result

    def breakouts(self, role: Role) -> dict[int, str]:
        """Front-panel port -> breakout mode, for every port the role uses."""
        return {
            port: block.breakout
            for block in self.blocks(role)
            for port in range(block.first, block.last + 1)
        }


def _model_from_data(name: str, data: dict[str, object]) -> SwitchModel:
    roles_data = data["roles"]
    assert isinstance(roles_data, dict)
    roles = {
        role: tuple(PortBlock(**block) for block in blocks) for role, blocks in roles_data.items()
    }
    aux = data["aux"]
    assert isinstance(aux, dict)
    model = SwitchModel(
        name=name,
        vendor=str(data["vendor"]),
        asic=str(data["asic"]),
        ports=int(str(data["ports"])),
        port_speed=str(data["port_speed"]),
        lanes_per_port=int(str(data["lanes_per_port"])),
        breakout_modes=tuple(data["breakout_modes"]),  # type: ignore[arg-type]
        platforms=tuple(data["platforms"]),  # type: ignore[arg-type]
        names=dict(data["names"]),  # type: ignore[call-overload]
        aux=AuxPort(**aux),
        roles=roles,
        lab_only=bool(data.get("lab_only", False)),
    )
    _check_model(model)
    return model


def _check_model(model: SwitchModel) -> None:
    """Catch catalog typos at load time rather than in a generated cable plan."""
    for role, blocks in model.roles.items():
        used: set[int] = set()
        for block in blocks:
            if block.breakout not in model.breakout_modes:
                raise CatalogError(
                    f"catalog.{model.name}.{role}",
                    f"breakout {block.breakout} is not one of {list(model.breakout_modes)}",
                )
            span = set(range(block.first, block.last + 1))
            if block.first < 1 or block.last > model.ports or span & used:
                raise CatalogError(
                    f"catalog.{model.name}.{role}",
                    f"ports {block.first}-{block.last} overlap or exceed {model.ports} ports",
                )
            used |= span


@cache
def load_catalog() -> dict[str, SwitchModel]:
    text = resources.files("controller.catalog").joinpath("switches.yaml").read_text()
    raw = yaml.safe_load(text)
    return {name: _model_from_data(name, data) for name, data in raw.items()}


def get_model(name: str, where: str = "model") -> SwitchModel:
    catalog = load_catalog()
    if name not in catalog:
        raise CatalogError(
            where, f"unknown switch model {name!r}; known models: {', '.join(sorted(catalog))}"
        )
    return catalog[name]
