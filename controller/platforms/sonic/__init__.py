"""Community SONiC: CONFIG_DB (``config_db.json``, validated against SONiC's YANG models) and
FRR in split mode, applied through the Generic Config Updater by
:mod:`controller.platforms.sonic.driver`."""

from __future__ import annotations

from controller.platforms.spec import Platform, RenderCheck
from controller.resources import templates_dir

FILES = {"config_db.json": "sonic/config_db.json.j2", "frr.conf": "sonic/frr.conf.j2"}

PLATFORM = Platform(
    name="sonic",
    description="community SONiC (CONFIG_DB + FRR split mode)",
    files=FILES,
    template_dir=templates_dir(),
    context="controller.platforms.sonic.render:context",
    driver="controller.platforms.sonic.driver:SonicDriver",
    main_file="config_db.json",
    load_balancing={
        "ecmp": None,
        "wcmp": None,
        "pbr": "SONiC's YANG models (sonic-acl.yang, sonic-types.yang packet_action) type "
        "ACL_RULE PACKET_ACTION as a bare enumeration with no leaf for a redirect target, so "
        "the REDIRECT:<port> form orchagent reads cannot be validated or applied through "
        "config apply-patch",
        "ars": "community SONiC's CONFIG_DB has no flowlet/ARS tables for these ASICs",
        "spray": "community SONiC's CONFIG_DB has no per-packet spraying setting",
    },
    checks=(
        RenderCheck("sonic-yang", "controller.platforms.sonic.yang:check_rendered", optional=True),
    ),
    intent_check="controller.platforms.sonic.release:check_release",
)
