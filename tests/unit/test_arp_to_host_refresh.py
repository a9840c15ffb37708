"""A leaf keeps REACHABLE the EVPN neighbours it verified itself while its ES bond serves the
server (controller/agents/arp_to_host/refresh.py): zebra advertises only REACHABLE local
neighbours as active, and a drained leaf's unused entry went STALE, so its pair handed its
own entry back to a kernel whose probes the server never answers (223 packets lost in the
rolling-apply bench, 2026-12-07)."""

from __future__ import annotations

from typing import Any

from controller.agents.arp_to_host import freshness, segments
from controller.agents.arp_to_host import kernel as agent_kernel
from controller.agents.arp_to_host import reconcile as agent_reconcile
from controller.agents.arp_to_host.refresh import Refresh

MAC = "86:5c:7c:60:a1:20"
PROBE = f"neigh replace 10.100.0.2 lladdr {MAC} dev vlan1001 proto static nud probe"


def entry(*states: str, dst: str = "10.100.0.2", **extra: Any) -> dict[str, Any]:
    return {"dst": dst, "dev": "vlan1001", "lladdr": MAC, "state": list(states), **extra}


def test_an_entry_this_leaf_verified_is_probed_as_soon_as_it_goes_stale() -> None:
    refresh = Refresh({"vlan1001"})
    served = {"10.100.0.2"}
    assert refresh.lines([entry("REACHABLE")], served) == []
    assert refresh.lines([entry("STALE")], served) == [PROBE]
    assert refresh.lines([entry("PROBE")], served) == []  # the kernel asks the server
    assert refresh.lines([entry("REACHABLE")], served) == []  # answered, here
    assert refresh.lines([entry("STALE")], served) == [PROBE]  # and again next time
    assert refresh.lines([entry("REACHABLE")], served) == []
    assert refresh.lines([entry("DELAY")], served) == [PROBE]  # traffic found it STALE


def test_no_probe_where_this_leaf_cannot_verify_the_server() -> None:
    """Its answers go to the pair: an entry never verified here (zebra's STALE re-install,
    the agent's own NOARP), a server its bond does not serve, another SVI, a probe that
    failed (the leaf stops following it)."""
    refresh = Refresh({"vlan1001"})
    assert refresh.lines([entry("STALE", protocol="zebra")], {"10.100.0.2"}) == []
    noarp = entry("NOARP", extern_learn=None)
    assert refresh.lines([noarp], {"10.100.0.2"}) == []
    assert refresh.lines([entry("STALE")], {"10.100.0.2"}) == []  # never REACHABLE here
    refresh.lines([entry("REACHABLE")], {"10.100.0.2"})
    assert refresh.lines([entry("STALE")], set()) == []  # the bond does not serve it
    refresh.lines([entry("FAILED")], {"10.100.0.2"})
    assert refresh.lines([entry("STALE")], {"10.100.0.2"}) == []  # no longer followed
    other = Refresh({"vlan1002"})
    other.lines([entry("REACHABLE")], {"10.100.0.2"})
    assert other.lines([entry("STALE")], {"10.100.0.2"}) == []


def test_a_pass_probes_a_served_servers_stale_entry_it_had_verified(monkeypatch: Any) -> None:
    """The pass (``reconcile``) writes the probe with its other lines, only for the bond that
    serves (sysfs says so) and keeps the /32."""
    links = [
        {
            "ifname": "swp5",
            "flags": ["UP", "LOWER_UP"],
            "master": "bond3",
            "linkinfo": {
                "info_slave_data": {
                    "ad_actor_oper_port_state": 0x3F,
                    "ad_partner_oper_port_state": 0x3F,
                    "link_failure_count": 0,
                }
            },
        },
        {"ifname": "bond3", "linkinfo": {"info_data": {"min_links": 1}}},
    ]
    neighbours = [[entry("REACHABLE")], [entry("STALE")]]
    routes = [{"dst": "10.100.0.2", "dev": "vlan1001"}]
    batches: list[list[str]] = []

    def ip_json(*args: str) -> list[dict[str, Any]]:
        if args[:2] == ("-d", "link"):
            return links
        if args[:2] == ("-4", "neigh"):
            return neighbours[0]
        return routes

    monkeypatch.setattr(agent_kernel, "_ip_json", ip_json)
    monkeypatch.setattr(agent_kernel, "_ip_batch", batches.append)
    monkeypatch.setattr(agent_reconcile, "serving_now", lambda segs: set())
    monkeypatch.setattr(segments, "FRESHNESS", freshness.Freshness())
    config = {
        "table": 100,
        "interfaces": ["vlan1001"],
        "prefixes": ["10.100.0.0/29"],
        "segments": {"bond3": {"member": "swp5", "hosts": ["10.100.0.2"]}},
    }
    refresh = Refresh({"vlan1001"})
    agent_reconcile.reconcile(config, None, refresh=refresh)
    assert batches == []
    neighbours.pop(0)
    agent_reconcile.reconcile(config, None, refresh=refresh)
    assert batches == [[PROBE]]
