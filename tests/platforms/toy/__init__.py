"""A toy platform in one folder: what a new platform needs to render with dpctl.

It renders a short text per switch from the shared structured data (interfaces, BGP
neighbours, rails), with its templates in its own folder. It runs on the lab's virtual
model without the catalog listing it (``models``), and does only ECMP."""

from __future__ import annotations

from pathlib import Path

from controller.platforms import Platform

PLATFORM = Platform(
    name="toy",
    description="a toy platform of the registry test",
    files={"toy.conf": "toy.conf.j2"},
    template_dir=Path(__file__).parent / "templates",
    context="tests.platforms.toy.render:context",
    driver="tests.platforms.toy.driver:ToyDriver",
    main_file="toy.conf",
    load_balancing={
        "ecmp": None,
        "wcmp": "toys hash evenly",
        "pbr": "toys have no policy",
        "ars": "toys have no flowlets",
        "spray": "toys do not spray",
    },
    models=("VLAB-4",),
)
