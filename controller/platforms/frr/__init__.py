"""Linux + FRR switches (the embedded lab's switches, or any Linux box running FRR).

Rendered: FRR's ``frr.conf`` and the Linux side (``ip``/``bridge``/``tc`` batches, sysctls) plus
the ARP-to-host agent's settings. Driven over SSH by :mod:`controller.platforms.frr.driver`.
"""

from __future__ import annotations

from controller.platforms.spec import Platform
from controller.resources import templates_dir

FILES = {
    "frr.conf": "frr/frr.conf.j2",
    "ip.batch": "frr/ip.batch.j2",
    "bridge.batch": "frr/bridge.batch.j2",
    "sysctl.conf": "frr/sysctl.conf.j2",
    "arp-to-host.json": "frr/arp-to-host.json.j2",
    "qos.tc": "frr/qos.tc.j2",
}
"""The files of an FRR switch's configuration (the driver's bundle holds exactly these)."""

PLATFORM = Platform(
    name="frr",
    description="Linux + FRR (the embedded lab's switches)",
    files=FILES,
    template_dir=templates_dir(),
    context="controller.platforms.frr.render:context",
    driver="controller.platforms.frr.driver:FrrDriver",
    main_file="frr.conf",
    load_balancing={
        "ecmp": None,
        "wcmp": None,
        "pbr": "static PBR to a fixed uplink needs the spine's link-local next hop, which "
        "FRR's pbr-map cannot take from a BGP unnumbered session",
        "ars": "the Linux kernel has no flowlet adaptive routing",
        "spray": "the Linux kernel has no per-packet multipath spraying",
    },
    ecn_queues="controller.platforms.frr.render:ecn_queues",
)
