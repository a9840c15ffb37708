"""Which platform (and model) can render which load-balancing mode, and why not.

Rendering refuses an unsupported combination with a message naming the platform and the
feature: a silent omission would leave a fabric hashing flows while the intent says spray.
"""

from __future__ import annotations

from controller.errors import DpctlError

# platform -> mode -> None (supported) or the reason it is not
LOAD_BALANCING_SUPPORT: dict[str, dict[str, str | None]] = {
    "asternos": {"ecmp": None, "wcmp": None, "pbr": None, "ars": None, "spray": None},
    "sonic": {
        "ecmp": None,
        "wcmp": None,
        "pbr": None,
        "ars": "community SONiC's CONFIG_DB has no flowlet/ARS tables for these ASICs",
        "spray": "community SONiC's CONFIG_DB has no per-packet spraying setting",
    },
    "frr": {
        "ecmp": None,
        "wcmp": None,
        "pbr": "static PBR to a fixed uplink needs the spine's link-local next hop, which "
        "FRR's pbr-map cannot take from a BGP unnumbered session",
        "ars": "the Linux kernel has no flowlet adaptive routing",
        "spray": "the Linux kernel has no per-packet multipath spraying",
    },
}

# Hardware limits per model (seed footnote: only the CX864E-N does ALB flowlets and spraying).
MODEL_LIMITS: dict[str, dict[str, str]] = {
    "CX732Q-N": {
        "ars": "the CX732Q-N (Teralynx 7) has no ALB flowlet support; the CX864E-N has",
        "spray": "the CX732Q-N (Teralynx 7) has no packet spraying; the CX864E-N has",
    },
}


class UnsupportedFeature(DpctlError):
    """The intent asks for something the platform or model cannot do."""


def check_load_balancing(platform: str, models: set[str], mode: str) -> None:
    reason = LOAD_BALANCING_SUPPORT[platform].get(mode)
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
