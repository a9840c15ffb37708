"""The agent's End-of-RIB reading against real bgpd output: two FRR instances, one BGP
unnumbered EVPN session with graceful restart (as rendered), ``show bgp neighbors json``."""

from __future__ import annotations

import json
import time

import pytest

from controller.agents.arp_to_host import zebra
from tests.frr_harness import frr_available, frr_instances, sh

pytestmark = [
    pytest.mark.frr,
    pytest.mark.skipif(
        not frr_available(), reason="needs root and Debian's frr (frrinit.sh, vtysh)"
    ),
]


def _config(asn: int, router_id: str) -> str:
    return f"""frr defaults datacenter
router bgp {asn}
 bgp router-id {router_id}
 bgp graceful-restart
 no bgp ebgp-requires-policy
 neighbor swp1 interface remote-as external
 address-family l2vpn evpn
  neighbor swp1 activate
 exit-address-family
"""


def test_end_of_rib_of_a_real_evpn_session_is_read() -> None:
    with frr_instances({"a": ["swp1"], "b": ["swp9"]}) as nodes:
        a, b = nodes["a"], nodes["b"]
        # one cable, a's swp1 to b's swp1, made inside the two namespaces
        sh(f"ip -n {a.namespace} link del swp1")
        sh(f"ip -n {b.namespace} link del swp9")
        sh(f"ip -n {a.namespace} link add swp1 type veth peer name swp1 netns {b.namespace}")
        for node in (a, b):
            sh(f"ip -n {node.namespace} link set swp1 up")
        assert a.load(_config(65001, "10.0.0.1"))[0] == 0
        assert b.load(_config(65002, "10.0.0.2"))[0] == 0
        deadline = time.monotonic() + 90
        while True:
            summary = json.loads(a.show("show bgp l2vpn evpn summary json"))
            neighbors = json.loads(a.show(zebra.EOR_ASK))
            established = zebra._established_evpn_peers(summary)
            if established and zebra.evpn_tables_received(neighbors, sorted(established)):
                break
            assert time.monotonic() < deadline, (summary, neighbors.get("swp1"))
            time.sleep(1)
        assert sorted(established) == ["swp1"]
        assert zebra.evpn_up_for(summary) >= 0
        # and a peer it does not know is not taken as settled
        assert not zebra.evpn_tables_received(neighbors, ["swp1", "swp2"])
