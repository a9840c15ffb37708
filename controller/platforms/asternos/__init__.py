"""Asterfusion AsterNOS (CX864E-N / CX732Q-N): one klish session (``asternos.cli``), every
command form traced to a vendor document or marked unverified
(:mod:`controller.platforms.asternos.provenance`), driven over netmiko by
:mod:`controller.platforms.asternos.driver`."""

from __future__ import annotations

from controller.platforms.spec import Platform, RenderCheck
from controller.resources import templates_dir

FILES = {"asternos.cli": "asternos/asternos.cli.j2"}

PLATFORM = Platform(
    name="asternos",
    description="Asterfusion AsterNOS (klish CLI)",
    files=FILES,
    template_dir=templates_dir(),
    context="controller.platforms.asternos.render:context",
    driver="controller.platforms.asternos.driver:AsterNOSDriver",
    main_file="asternos.cli",
    load_balancing={"ecmp": None, "wcmp": None, "pbr": None, "ars": None, "spray": None},
    checks=(RenderCheck("asternos-syntax", "controller.platforms.asternos.syntax:check_file"),),
)
