"""fabric.json: the machine-readable facts the later stages (render, lab, deploy) read."""

from __future__ import annotations

import json

from controller.facts import Fabric


def render(fabric: Fabric) -> bytes:
    return (json.dumps(fabric.to_dict(), indent=1, sort_keys=True) + "\n").encode()
