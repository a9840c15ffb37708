"""ARP-to-host-route for a Linux + FRR leaf (stdlib only: it is copied to the switch).

FRR has no "redistribute neighbor". This keeps one /32 route per resolved neighbour of the
rail SVIs in a kernel table; zebra imports the table (`ip import-table N`) and BGP
redistributes it (`redistribute table N`). Event driven (`ip monitor neigh link`) with a full
resync every few seconds; a neighbour that fails or is removed loses its route.

The agent is this package, shipped to a switch as one zipapp (``controller.agents.pack``:
deterministic, so its SHA-256 says which agent code runs) and run as ``python3
arp_to_host.pyz CONFIG.json`` (keys: table, interfaces, prefixes, bridge,
withdraw_on_carrier_loss, withdraw_unserved, evpn_svis, segments; a segment: member, hosts,
esi, es_id). Standard library only, relative imports only: on the switch there is no
controller package. Its parts:

- ``main``: the loop (``ip monitor`` events, paced passes, the threads below);
  ``pacing``: when to pass and to ask zebra; ``reconcile``: one pass.
- ``kernel``: neighbours and routes through ``ip``; ``carrier``: carrier loss (dual-ARP).
- ``segments``: whether each EVPN-MH segment's bond serves its server, and its gate;
  ``gate``: the thread that opens a gate; ``taps``: raw sockets on the members.
- ``zebra``, ``synced``, ``arpwatch``: the pair's synced entries (EVPN-MH).
- ``heal``: the thread that heals segment EVIs bgpd lost; ``vtysh``, ``journal``: vtysh runs
  and the agent's log.
"""
