"""What each community SONiC release's YANG models can express, and the refusal of the rest.

The vendored models are master's (``yang/models/README.md``); the release branches' models
were read at 202511 fde92d26 and 202605 10ae4708 of sonic-buildimage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.errors import UnsupportedFeature

if TYPE_CHECKING:
    from controller.intent import FabricIntent

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
"""SONiC release -> (feature, why it cannot be used there)."""


def check_sonic_release(release: str, dual_leaf_mode: str) -> None:
    """Refuse what the targeted SONiC release's YANG models cannot express (GCU would)."""
    for feature, reason in SONIC_RELEASE_GAPS[release]:
        if feature in ("leaves", dual_leaf_mode):
            field = "dual_leaf_mode" if feature == dual_leaf_mode else "sonic_release"
            raise UnsupportedFeature(
                field,
                f"{dual_leaf_mode} leaves cannot be rendered for SONiC {release}: the release "
                f"{reason}; target sonic_release 'master' or another platform",
            )


def check_release(intent: FabricIntent) -> None:
    """The platform's intent check (see ``Platform.intent_check``)."""
    check_sonic_release(intent.sonic_release, intent.dual_leaf_mode)
