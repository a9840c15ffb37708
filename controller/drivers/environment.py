"""NAPALM's ``get_environment`` from Linux's own files (every platform) and SONiC's platform
tools (SONiC, AsterNOS). Pure parsers: text in, NAPALM models out.

Linux: memory from /proc/meminfo, CPU use per core from two reads of /proc/stat one second
apart (the kernel's counters since boot: the difference is the last second's use), sensors
from hwmon (``/sys/class/hwmon/hwmon*/temp*_input`` in millidegrees, ``*_max`` / ``*_crit``
thresholds, ``fan*_input`` in RPM: kernel Documentation/hwmon/sysfs-interface.rst). hwmon
has no power-supply status: ``power`` is {} there.

SONiC (sonic-utilities 202405): ``show platform fan`` (scripts/fanshow: ``Drawer LED FAN
Speed Direction Presence Status Timestamp``), ``show platform temperature``
(scripts/tempershow: ``Sensor Temperature High TH Low TH Crit High TH Crit Low TH Warning
Timestamp``, or "Thermal Not detected"), ``show platform psustatus --json`` (scripts/psushow
``-j``: index, name, presence, status, ..., power in W).
"""

from __future__ import annotations

import json
import re
from typing import Any

from napalm.base import models

from controller.drivers.sonic_reads import parse_table

MEMINFO = "cat /proc/meminfo"
CPU = "grep '^cpu[0-9]' /proc/stat; sleep 1; grep '^cpu[0-9]' /proc/stat"
HWMON = (
    "cd /sys/class/hwmon 2>/dev/null && "
    "grep -H . */temp*_input */temp*_max */temp*_crit */fan*_input 2>/dev/null; true"
)
SONIC_FANS = "show platform fan"
SONIC_TEMPERATURES = "show platform temperature"
SONIC_PSUS = "show platform psustatus --json"


def memory(meminfo: str) -> models.MemoryDict:
    """Bytes: ``available_ram`` the RAM installed (MemTotal, as NAPALM's documentation has
    it), ``used_ram`` what is not available to new work (MemTotal - MemAvailable)."""
    kib = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        number = rest.split()[0] if rest.split() else ""
        if number.isdigit():
            kib[name.strip()] = int(number)
    total = kib.get("MemTotal", 0)
    available = kib.get("MemAvailable", kib.get("MemFree", 0))
    return {"available_ram": total * 1024, "used_ram": (total - available) * 1024}


def _cpu_samples(text: str) -> list[dict[int, tuple[int, int]]]:
    """Each read of /proc/stat's per-CPU lines: cpu id -> (busy, total) jiffies."""
    samples: list[dict[int, tuple[int, int]]] = []
    for line in text.splitlines():
        match = re.match(r"cpu(\d+)\s+(.*)", line)
        if not match:
            continue
        cpu, values = int(match.group(1)), [int(v) for v in match.group(2).split()]
        if not samples or cpu in samples[-1]:
            samples.append({})
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        samples[-1][cpu] = (sum(values[:8]) - idle, sum(values[:8]))
    return samples


def cpu(stat: str) -> dict[int, models.CPUDict]:
    """Per core, the share of the sampled second it was busy, in percent."""
    samples = _cpu_samples(stat)
    if len(samples) < 2:
        return {}
    first, last = samples[0], samples[-1]
    result: dict[int, models.CPUDict] = {}
    for core, (busy, total) in sorted(last.items()):
        busy0, total0 = first.get(core, (busy, total))
        span = total - total0
        result[core] = {"%usage": round(100.0 * (busy - busy0) / span, 2) if span > 0 else 0.0}
    return result


def hwmon(text: str) -> tuple[dict[str, models.TemperatureDict], dict[str, models.FanDict]]:
    """Temperatures and fans from ``grep -H . <hwmon files>`` (``hwmonN/temp1_input:45000``)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        path, _, raw = line.rpartition(":")
        if re.fullmatch(r"-?\d+", raw.strip()):
            values[path.strip()] = float(raw)
    temperatures: dict[str, models.TemperatureDict] = {}
    fans: dict[str, models.FanDict] = {}
    for path, value in sorted(values.items()):
        sensor = path.rsplit("_", 1)[0]
        if path.endswith("_input") and "/temp" in path:
            celsius = value / 1000.0
            high = values.get(f"{sensor}_max", float("inf")) / 1000.0
            crit = values.get(f"{sensor}_crit", float("inf")) / 1000.0
            temperatures[sensor] = {
                "temperature": celsius,
                "is_alert": celsius >= min(high, crit),
                "is_critical": celsius >= crit,
            }
        elif path.endswith("_input") and "/fan" in path:
            fans[sensor] = {"status": value > 0}
    return temperatures, fans


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def sonic_fans(text: str) -> dict[str, models.FanDict]:
    """``show platform fan``: a fan is fine when its Status is "OK"."""
    return {
        row["FAN"]: {"status": row.get("Status", "") == "OK"}
        for row in parse_table(text)
        if row.get("FAN")
    }


def sonic_temperatures(text: str) -> dict[str, models.TemperatureDict]:
    """``show platform temperature``: alert when the sensor's Warning is True or it is at
    its high threshold, critical at its critical-high one ("N/A" thresholds never trip)."""
    result: dict[str, models.TemperatureDict] = {}
    for row in parse_table(text):
        value = _float(row.get("Temperature", ""))
        if not row.get("Sensor") or value is None:
            continue
        high = _float(row.get("High TH", "")) or float("inf")
        crit = _float(row.get("Crit High TH", "")) or float("inf")
        result[row["Sensor"]] = {
            "temperature": value,
            "is_alert": row.get("Warning", "") == "True" or value >= high,
            "is_critical": value >= crit,
        }
    return result


def sonic_power(text: str) -> dict[str, models.PowerDict]:
    """``show platform psustatus --json``: fine when status is "OK"; output the PSU's power
    (W), -1.0 when psushow has none; psushow gives no capacity: -1.0."""
    try:
        psus: Any = json.loads(text) if text.strip().startswith("[") else []
    except json.JSONDecodeError:
        psus = []
    result: dict[str, models.PowerDict] = {}
    for psu in psus if isinstance(psus, list) else []:
        power = _float(str(psu.get("power", "")))
        result[str(psu.get("name", psu.get("index", "")))] = {
            "status": psu.get("status") == "OK",
            "output": power if power is not None else -1.0,
            "capacity": -1.0,
        }
    return result


def environment(
    meminfo: str,
    stat: str,
    temperatures: dict[str, models.TemperatureDict],
    fans: dict[str, models.FanDict],
    power: dict[str, models.PowerDict],
) -> models.EnvironmentDict:
    return {
        "fans": fans,
        "temperature": temperatures,
        "power": power,
        "cpu": cpu(stat),
        "memory": memory(meminfo),
    }
