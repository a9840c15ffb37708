"""The pipeline on one page: each stage a function that takes and returns typed data.

    intent = load_intent(path)                            # FabricIntent (validated)
    fabric = fabric_facts(intent)                         # Fabric: switches, servers, cables
    devices = structured_configs(fabric, names)           # DeviceConfig per switch, built once
    rendered = device_configs(fabric, devices)            # files per switch, checked
    outcomes = push(fabric, access, state, ...)           # deploy: compare, commit, post-check
    checks = check_fabric(fabric, access, state)          # verify: getters against the facts

Each stage is also usable alone (a test renders without deploying; a user checks an intent
without rendering). ``access`` (how the switches and servers are reached) and ``state`` (the
fabric's operator state folder) are decided by the caller, never looked up here.
"""

from __future__ import annotations

from controller.deploy import deploy as push
from controller.generator import build_fabric as fabric_facts
from controller.intent import load_intent
from controller.render.engine import render_configs as device_configs
from controller.render.engine import structured_configs
from controller.verify import verify as check_fabric

__all__ = [
    "check_fabric",
    "device_configs",
    "fabric_facts",
    "load_intent",
    "push",
    "structured_configs",
]
