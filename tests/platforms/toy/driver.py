"""The toy platform's driver: a "switch" that is a folder on this machine (``hostname`` is
the folder). A replace commit writes the candidate there; the getters describe a switch with
no ports yet, in NAPALM's and dpctl's result types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from napalm.base import models

from controller.drivers.contract import DpctlDriver
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState, QosState

RUNNING = "running.conf"


class ToyDriver(DpctlDriver):
    platform = "toy"

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        self.folder = Path((optional_args or {}).get("root", "/nonexistent")) / hostname
        self.candidate: str | None = None
        self.opened = False

    def open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.opened = True

    def close(self) -> None:
        self.opened = False

    def _running(self) -> str:
        path = self.folder / RUNNING
        return path.read_text() if path.exists() else ""

    def load_replace_candidate(
        self, filename: str | None = None, config: str | None = None
    ) -> None:
        self.candidate = Path(filename).read_text() if filename else config

    def compare_config(self) -> str:
        return "" if self.candidate in (None, self._running()) else f"+{self.candidate}"

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        (self.folder / RUNNING).write_text(self.candidate or "")
        self.candidate = None

    def discard_config(self) -> None:
        self.candidate = None

    def get_config(
        self,
        retrieve: str = "all",
        full: bool = False,
        sanitized: bool = False,
        format: str = "text",
    ) -> models.ConfigDict:
        return {"running": self._running(), "startup": "", "candidate": self.candidate or ""}

    def get_facts(self) -> models.FactsDict:
        name = self.folder.name
        return {
            "hostname": name,
            "fqdn": name,
            "vendor": "toy",
            "model": "toy",
            "os_version": "0",
            "serial_number": "",
            "uptime": 0.0,
            "interface_list": [],
        }

    def get_interfaces(self) -> dict[str, models.InterfaceDict]:
        return {}

    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
        return {}

    def _lldp(self) -> Any:
        return {}

    def _get_host_routes(self) -> list[HostRoute]:
        return []

    def _get_evpn_es(self) -> list[EthernetSegmentState]:
        return []

    def _get_maintenance(self) -> MaintenanceState:
        return {"graceful_shutdown": False, "isolated": False}

    def _get_qos_state(self) -> QosState:
        return {"pfc": None, "ecn": {}, "ecmp_hash": None}

    def _restore_config(self, saved: str) -> None:
        (self.folder / RUNNING).write_text(saved)

    def _refresh_bgp_routes(self) -> None:
        return None
