"""Every rendered frr.conf of the lab fabrics loads into a real running FRR, no line rejected."""

from __future__ import annotations

import pytest
import yaml

from controller.generator import build_fabric
from controller.intent import intent_from_data
from controller.render.bgp import HANDS_OFF
from controller.render.device import Maintenance, build_device
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY
from tests.frr_harness import frr_available, frr_instances

pytestmark = [
    pytest.mark.frr,
    pytest.mark.skipif(
        not frr_available(), reason="needs root and Debian's frr (frrinit.sh, vtysh)"
    ),
]


VARIANTS = {
    "plain": {},
    "protection-wcmp-drained": {"cross_plane_protection": True, "load_balancing": {"mode": "wcmp"}},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("mode", ["dual-arp", "evpn-mh"])
def test_rendered_frr_conf_loads_into_running_frr(mode: str, variant: str) -> None:
    data = yaml.safe_load((INVENTORY / f"lab-{mode}.yaml").read_text())
    fabric = build_fabric(intent_from_data({**data, **VARIANTS[variant]}))
    # The variant also renders one leaf and one spine in maintenance (drain policy on).
    maintenance: dict[str, Maintenance] = (
        {"p1-g1-leaf1": "isolated", "p1-g1-leaf2": "handed-off", "p1-spine1": "graceful-shutdown"}
        if VARIANTS[variant]
        else {}
    )
    rendered = render_fabric(fabric, maintenance=maintenance)
    ports = {
        name: [i.name for i in build_device(fabric, name).interfaces]
        + ([build_device(fabric, name).aux.name] if build_device(fabric, name).aux else [])  # type: ignore[union-attr]
        for name in rendered
    }
    with frr_instances(ports) as instances:
        for name, files in rendered.items():
            code, answer = instances[name].load(files["frr.conf"])
            # bgpd's notice that graceful restart is negotiated when a session (re)opens
            answer = answer.replace(GR_NOTICE, "").strip()
            assert code == 0 and answer == "", f"{name} rejected lines:\n{answer}"
            running = instances[name].show("show running-config")
            device = build_device(fabric, name)
            for neighbor in device.bgp.neighbors:
                line = f"neighbor {neighbor.interface} interface peer-group {neighbor.peer_group}"
                assert line in running, f"{name}: {line!r} missing after load"
            assert f"router bgp {device.bgp.asn}" in running
            imports = "ip import-table 100" in running
            assert imports == (device.role == "leaf" and maintenance.get(name) not in HANDS_OFF)
            if device.segments:
                assert f"evpn mh es-sys-mac {device.segments[0].es_sys_mac}" in running


GR_NOTICE = "Graceful restart configuration changed, reset all peers to take effect"


def test_harness_catches_a_rejected_line() -> None:
    with frr_instances({"probe": ["swp1"]}) as instances:
        code, answer = instances["probe"].load("router bgp 65000\n bogus command\nexit\n")
    assert code != 0 and "Unknown command" in answer
