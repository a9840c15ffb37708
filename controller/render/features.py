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
        "pbr": "SONiC's YANG models (sonic-acl.yang, sonic-types.yang packet_action) type "
        "ACL_RULE PACKET_ACTION as a bare enumeration with no leaf for a redirect target, so "
        "the REDIRECT:<port> form orchagent reads cannot be validated or applied through "
        "config apply-patch",
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


# SONiC release -> (feature, why it cannot be used there). The vendored models are master's
# (controller/sonic_yang/models/README.md); the release branches' models were read at
# 202511 fde92d26 and 202605 10ae4708 of sonic-buildimage.
_NO_SAG = (
    "has no YANG model for SAG nor the VLAN_INTERFACE leaf static_anycast_gateway "
    "(sonic-static-anycast-gateway.yang exists on master only, sonic-buildimage #27543), "
    "and every leaf's rail VLANs use the static anycast gateway"
)
_NO_EVPN_MH = (
    "has no YANG model for EVPN_ETHERNET_SEGMENT or EVPN_MH_GLOBAL nor the PORTCHANNEL leaf "
    "system_mac (sonic-evpn.yang exists on master only, sonic-buildimage #27543)"
)
SONIC_RELEASE_GAPS: dict[str, list[tuple[str, str]]] = {
    "master": [],
    "202605": [("evpn-mh", _NO_EVPN_MH), ("leaves", _NO_SAG)],
    "202511": [("evpn-mh", _NO_EVPN_MH), ("leaves", _NO_SAG)],
}


def check_sonic_release(platform: str, release: str, dual_leaf_mode: str) -> None:
    """Refuse what the targeted SONiC release's YANG models cannot express (GCU would)."""
    if platform != "sonic":
        return
    for feature, reason in SONIC_RELEASE_GAPS[release]:
        if feature in ("leaves", dual_leaf_mode):
            field = "dual_leaf_mode" if feature == dual_leaf_mode else "sonic_release"
            raise UnsupportedFeature(
                field,
                f"{dual_leaf_mode} leaves cannot be rendered for SONiC {release}: the release "
                f"{reason}; target sonic_release 'master' or another platform",
            )
