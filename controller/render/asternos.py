"""AsterNOS (klish CLI): the few platform names the templates need, computed once per device.

Interface CLI names ("ethernet 0/N") come from the catalog through DeviceConfig; only the
breakout parents (front ports) are named here, with the same catalog format string.
"""

from __future__ import annotations

from typing import Any

from controller.catalog import get_model
from controller.render.device import DeviceConfig

ARP_PROXY_MODE = {"dual-arp": "anycast_gw", "evpn-mh": "evpn"}
"""AsterNOS ARP proxy modes (ARP Configuration guide): anycast_gw answers for the anycast
gateway; evpn also answers from ARP entries synced over BGP-EVPN."""

ROCE_TRAFFIC_MODEL = "throughput"
"""Easy RoCE traffic model: GPU back-end collectives are bandwidth-bound. The intent has no
knob for it yet; the keyword value is an assumption (the guide's list is cut in public text)."""


def context(device: DeviceConfig) -> dict[str, Any]:
    model = get_model(device.model)
    cli_format = model.names.get("asternos", model.names["kernel"])
    lanes = model.lanes_per_port
    cli_of = {i.name: i.cli for i in device.interfaces}
    lb = device.load_balancing
    pins = lb.pbr if lb is not None else ()
    return {
        "breakouts": [
            (cli_format.format(port=port, lane=(port - 1) * lanes, sub=1), mode)
            for port, mode in device.breakouts.items()
        ],
        "lag_of": {es.member: es.bond_index for es in device.segments},
        "arp_proxy_mode": ARP_PROXY_MODE.get(device.dual_leaf_mode, "default"),
        "roce_traffic_model": ROCE_TRAFFIC_MODEL,
        "roce_ports": [i.cli for i in device.interfaces],
        "pbr_pins": [(cli_of[down], cli_of[up]) for down, up in pins],
    }
