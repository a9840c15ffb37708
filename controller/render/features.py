"""Which load-balancing mode a platform and a switch model can render, and why not.

Rendering refuses an unsupported combination with a message naming the platform (or model)
and the feature: a silent omission would leave a fabric hashing flows while the intent says
spray. What each platform can do is in its own record (``controller.platforms.<name>``);
hardware limits of a model are here.
"""

from __future__ import annotations

from controller import platforms
from controller.errors import UnsupportedFeature

__all__ = ["MODEL_LIMITS", "UnsupportedFeature", "check_load_balancing"]

MODEL_LIMITS: dict[str, dict[str, str]] = {
    "CX732Q-N": {
        "ars": "the CX732Q-N (Teralynx 7) has no ALB flowlet support; the CX864E-N has",
        "spray": "the CX732Q-N (Teralynx 7) has no packet spraying; the CX864E-N has",
    },
}
"""Hardware limits per model (seed footnote: only the CX864E-N does ALB flowlets and spraying)."""


def check_load_balancing(platform: str, models: set[str], mode: str) -> None:
    reason = platforms.get(platform).unsupported(mode)
    if reason:
        raise UnsupportedFeature(
            "load_balancing.mode", f"{mode!r} is not supported on platform {platform}: {reason}"
        )
    for model in sorted(models):
        limit = MODEL_LIMITS.get(model, {}).get(mode)
        if limit:
            raise UnsupportedFeature(
                "load_balancing.mode", f"{mode!r} is not supported on model {model}: {limit}"
            )
