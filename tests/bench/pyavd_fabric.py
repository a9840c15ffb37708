"""The pyavd half of bench_render_vs_pyavd.py: build an AVD L3LS-EVPN fabric shaped like
dpctl's 16,384-GPU example in code and time pyavd's public API on it, on one core.

Runs in a throwaway venv holding pyavd (never in dpctl's environment: pyavd is not a dpctl
dependency); bench_render_vs_pyavd.py starts it as a subprocess and reads the JSON it prints
on its last line. Standalone: imports nothing from dpctl.

The fabric (defaults: the 16,384-GPU example's shape): two planes, each ``--spines`` spines
and ``--groups`` x ``--rails`` leaves; every leaf has one uplink to every spine of its plane
(eBGP underlay, AVD's default for ``l3ls-evpn``, with ``underlay_rfc5549`` like dpctl's BGP
unnumbered), AVD's default EVPN overlay to the spines, a VXLAN VTEP, one VRF with the rail
SVI (anycast gateway) in VLAN 1001, and ``--servers`` dual-attached servers per leaf pair:
one LACP port-channel per server NIC on the two leaves of the pair (plane 1 and plane 2 leaf
of the same group and rail) with an EVPN multihoming ethernet segment (``short_esi: auto``),
as dpctl's ``evpn-mh`` leaves have. Leaves need no MLAG (``mlag: false``).

What is timed per device, in pyavd's own order (docs: avd.arista.com, pyavd "Usage"):
``validate_inputs`` (each device's inputs), ``get_avd_facts`` (once, for all devices),
``get_device_structured_config`` and ``get_device_config`` (EOS CLI text). Each device's
``connected_endpoints`` holds only the servers of its own leaf pair (the favourable way for
pyavd: handing every device the whole fabric's server list made it ~10x slower on this
machine). Before the clock starts, the modules pyavd's functions import on first use are
imported and a 4-device fabric goes through all four steps once, so pyavd's one-time costs
(schema store, classes) stay out of its figure (again the favourable way for pyavd).

Usage: python pyavd_fabric.py [--groups 16] [--rails 8] [--spines 64] [--servers 128]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import resource
import sys
import time
from typing import Any

PLANES = 2


def leaf_name(plane: int, group: int, rail: int) -> str:
    return f"p{plane}-g{group}-leaf{rail}"


def spine_names(plane: int, spines: int) -> list[str]:
    return [f"p{plane}-spine{s}" for s in range(1, spines + 1)]


def fabric_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The design inputs every device shares (AVD's group_vars for the whole fabric)."""
    uplinks = [f"Ethernet{i}" for i in range(1, args.spines + 1)]
    node_groups = []
    leaf_id = 0
    for plane in range(1, PLANES + 1):
        in_plane = 0
        for group in range(1, args.groups + 1):
            for rail in range(1, args.rails + 1):
                leaf_id += 1
                in_plane += 1
                node = {
                    "name": leaf_name(plane, group, rail),
                    "id": leaf_id,
                    "bgp_as": str(65100 + leaf_id - 1),
                    "mgmt_ip": f"172.16.{1 + leaf_id // 250}.{leaf_id % 250 + 1}/20",
                    "uplink_switch_interfaces": [f"Ethernet{in_plane}"] * args.spines,
                }
                node_groups.append(
                    {
                        "group": leaf_name(plane, group, rail),
                        "uplink_switches": spine_names(plane, args.spines),
                        "nodes": [node],
                    }
                )
    spines = [
        {"name": name, "id": i, "mgmt_ip": f"172.16.0.{i}/20"}
        for i, name in enumerate(
            [n for p in range(1, PLANES + 1) for n in spine_names(p, args.spines)], start=1
        )
    ]
    return {
        "fabric_name": "AI-BACKEND",
        "underlay_rfc5549": True,
        "p2p_uplinks_mtu": 9214,
        "spine": {
            "defaults": {"loopback_ipv4_pool": "10.0.0.0/22", "bgp_as": "65000"},
            "nodes": spines,
        },
        "l3leaf": {
            "defaults": {
                "loopback_ipv4_pool": "10.0.0.0/22",
                "loopback_ipv4_offset": 2 * args.spines,
                "vtep_loopback_ipv4_pool": "10.0.4.0/22",
                "uplink_interfaces": uplinks,
                "mlag": False,
                "virtual_router_mac_address": "02:dc:00:00:00:01",
            },
            "node_groups": node_groups,
        },
        "tenants": [
            {
                "name": "AI",
                "mac_vrf_vni_base": 10000,
                "vrfs": [
                    {
                        "name": "RAILS",
                        "vrf_vni": 10,
                        "svis": [
                            {
                                "id": 1001,
                                "name": "RAIL",
                                "enabled": True,
                                "mtu": 9214,
                                "ip_address_virtual": "10.128.0.1/24",
                            }
                        ],
                    }
                ],
            }
        ],
    }


def pair_servers(args: argparse.Namespace, group: int, rail: int) -> list[dict[str, Any]]:
    """The servers of one leaf pair: one port-channel per server NIC, an EVPN-MH segment."""
    pair = [leaf_name(1, group, rail), leaf_name(2, group, rail)]
    servers = []
    for n in range(1, args.servers + 1):
        port = f"Ethernet{args.spines + n}"
        servers.append(
            {
                "name": f"srv{(group - 1) * args.servers + n:04d}",
                "adapters": [
                    {
                        "endpoint_ports": [f"nic{rail}p1", f"nic{rail}p2"],
                        "switch_ports": [port, port],
                        "switches": pair,
                        "mode": "access",
                        "vlans": "1001",
                        "mtu": 9214,
                        "port_channel": {"mode": "active", "endpoint_port_channel": f"bond{rail}"},
                        "ethernet_segment": {"short_esi": "auto"},
                    }
                ],
            }
        )
    return servers


def device_inputs(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """hostname -> its inputs: the shared design plus (leaves) its pair's servers."""
    shared = fabric_inputs(args)
    inputs: dict[str, dict[str, Any]] = {}
    for plane in range(1, PLANES + 1):
        for name in spine_names(plane, args.spines):
            inputs[name] = {**shared, "type": "spine"}
    for group in range(1, args.groups + 1):
        for rail in range(1, args.rails + 1):
            servers = pair_servers(args, group, rail)
            for plane in range(1, PLANES + 1):
                inputs[leaf_name(plane, group, rail)] = {
                    **shared,
                    "type": "l3leaf",
                    "servers": servers,
                }
    return inputs


class Clock:
    """Wall (perf_counter) and CPU (process_time) seconds per stage, summed."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._start = (0.0, 0.0)

    def start(self) -> None:
        self._start = (time.perf_counter(), time.process_time())

    def stop(self, stage: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.wall[stage] = self.wall.get(stage, 0.0) + wall - self._start[0]
        self.cpu[stage] = self.cpu.get(stage, 0.0) + cpu - self._start[1]
        self._start = (wall, cpu)


LAZY_IMPORTS = (
    "pyavd_utils.validation",
    "pyavd._schema.store",
    "pyavd.api.validation",
    "pyavd._eos_designs.eos_designs_facts.get_facts",
    "pyavd._eos_designs.structured_config",
    "pyavd.api.schemas",
    "pyavd.constants",
    "pyavd.templater",
)
"""The modules pyavd's public functions import on their first call: imported before the
clock starts, as dpctl's modules are (import time is not rendering time on either side)."""


def _pipeline(pyavd: Any, inputs: dict[str, dict[str, Any]], clock: Clock) -> tuple[int, str]:
    """pyavd's four public steps on every device; (config lines in all, one leaf's config)."""
    clock.start()
    validated = {}
    for host, data in inputs.items():
        result = pyavd.validate_inputs(data)
        if result.validated_data is None or result.validation_result.violations:
            errors = result.validation_result.violations[:3]
            raise SystemExit(f"{host}: pyavd rejected the inputs: {errors}")
        validated[host] = result.validated_data
    clock.stop("validate_inputs")
    facts = pyavd.get_avd_facts(validated)
    clock.stop("get_avd_facts")
    lines = 0
    sample = ""
    for host, data in validated.items():
        clock.start()
        structured = pyavd.get_device_structured_config(host, data, facts)
        clock.stop("get_device_structured_config")
        config = pyavd.get_device_config(structured)
        clock.stop("get_device_config")
        lines += config.count("\n")
        if not sample and data["type"] == "l3leaf":
            sample = config
    return lines, sample


def run(args: argparse.Namespace) -> dict[str, Any]:
    import pyavd  # imported before the clock starts

    for module in LAZY_IMPORTS:
        importlib.import_module(module)
    if args.warm_up:  # pyavd's one-time costs (schema store, classes) out of the figure
        tiny = argparse.Namespace(groups=1, rails=1, spines=1, servers=1, warm_up=False)
        _pipeline(pyavd, device_inputs(tiny), Clock())
    inputs = device_inputs(args)
    clock = Clock()
    lines, sample = _pipeline(pyavd, inputs, clock)
    devices = len(inputs)
    return {
        "pyavd": pyavd.__version__,
        "python": sys.version.split()[0],
        "devices": devices,
        "wall": clock.wall,
        "cpu": clock.cpu,
        "lines_per_device": lines / devices,
        "leaf_lines": sample.count("\n"),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sample": sample if args.sample else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--rails", type=int, default=8)
    parser.add_argument("--spines", type=int, default=64, help="spines per plane")
    parser.add_argument("--servers", type=int, default=128, help="servers per leaf pair")
    parser.add_argument("--sample", action="store_true", help="include one leaf's config")
    parser.add_argument(
        "--no-warm-up", dest="warm_up", action="store_false", help="count one-time costs too"
    )
    args = parser.parse_args()
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    gc.collect()
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
