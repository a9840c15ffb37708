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

SPRAY_HASH = {"random": "random", "round-robin": "round_robin"}
"""Intent spray algorithm -> the keyword of AsterNOS's ``hash algorithm ecmp {random|round_robin}``
(load-balance command reference: round_robin with an underscore)."""


MH_MAC_HOLDTIME = 0
"""Seconds an EVPN-MH leaf holds a MAC its ES peer no longer advertises: AsterNOS's EVPN
multihoming command reference gives ``evpn mh mac-holdtime <0-86400>``, "default 18 minutes",
and recommends 0 (docs/platforms/asternos.md, "EVPN-MH MAC hold time")."""


def context(device: DeviceConfig) -> dict[str, Any]:
    model = get_model(device.model)
    cli_format = model.names.get("asternos", model.names["kernel"])
    lanes = model.lanes_per_port
    ports = (*device.interfaces, *((device.aux,) if device.aux else ()))
    cli_of = {i.name: i.cli for i in ports}
    lb = device.load_balancing
    pins = lb.pbr if lb is not None else ()
    return {
        "breakouts": [
            (cli_format.format(port=port, lane=(port - 1) * lanes, sub=1), mode)
            for port, mode in device.breakouts.items()
        ],
        "lag_of": {es.member: es.bond_index for es in device.segments},
        "arp_proxy_mode": ARP_PROXY_MODE.get(device.dual_leaf_mode, "default"),
        "spray_hash": SPRAY_HASH[lb.spray_algorithm] if lb is not None else "",
        "neighbor_names": cli_of,
        "roce_ports": [i.cli for i in device.interfaces],
        "pbr_pins": [(cli_of[down], cli_of[up]) for down, up in pins],
        "mh_mac_holdtime": MH_MAC_HOLDTIME if device.segments else None,
    }
