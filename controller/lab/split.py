"""A lab split over two User-Mode Linux instances: one per plane (issue 39).

A UML kernel has one CPU. The seed's fabric (48 switches, 2,048 BGP sessions) kept one such
CPU saturated until its sessions churned on their hold timers (docs/lab-seed.md); its work
splits along the planes, which share only the AUX cables and the servers' cables. So:

- instance 0 holds plane 1's switches and every server; instance 1 holds plane 2's switches;
- the two are joined by one host veth pair, each end one instance's ``vec1`` in UML's raw
  transport (nothing of this machine's forwards between them: a Linux bridge would drop
  LACP's group address, and the host strips 802.1Q tags before a packet socket sees them);
- a cable whose ends are in different instances is a VXLAN tunnel over that link, one VNI per
  cable, glued by ``tc`` (ingress ``matchall``, ``mirred egress redirect``, both ways) to a
  veth whose other end is the node's port, named as the plan names it. Measured on this
  machine (docs/lab-seed.md, 2026-12-07): LACP, LLDP and 9,216-byte frames cross it, and
  netem on the node's end works as on any lab cable;
- the management network is one more VNI, a port of each instance's management bridge, so
  every node is reached through instance 0's sshd as before.

A tunnel does not carry the carrier: a port set down in one instance would leave its far end
up in the other. Each instance runs ``carrier_relay.py``, which watches its glue ends and has
the other instance set the far glue end down and up with them, so the far port loses and
regains its carrier as at the end of a real cable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.lab.errors import LabError
from controller.lab.topology import LabCable, LabNode, LabTopology, mgmt_bridge, namespace

MAX_GUESTS = 2
LINK_IF = "vec1"
"""The guests' interface on the host veth pair between them."""
LINK_MTU = 9300
"""The pair's MTU: a 9,216-byte frame plus VXLAN's 50 bytes of headers fits."""
TUNNEL_MTU = 9250
GLUE_MTU = 9300
CARRIER_RELAY = Path(__file__).with_name("carrier_relay.py")
RELAY_PORT = 4790
MGMT_VNI = 1
FIRST_CABLE_VNI = 100
VXLAN_PORT = 4789


def link_address(guest: int) -> str:
    """Instance ``guest``'s address on the link between the instances (inside them only;
    198.18.0.0/15 is the benchmarking range, RFC 2544: never routed on the internet)."""
    return f"198.18.0.{guest + 1}"


def guest_of(node: LabNode, guests: int) -> int:
    """The instance a node runs in: plane 2's switches in instance 1 when split."""
    if guests == 1:
        return 0
    return 1 if node.kind == "switch" and node.plane == 2 else 0


def check_guests(guests: int) -> None:
    if not 1 <= guests <= MAX_GUESTS:
        raise LabError(f"a lab runs in 1 or {MAX_GUESTS} instances, not {guests}")


@dataclass(frozen=True)
class Crossing:
    """A cable between two instances: its tunnel's VNI and root-side device names."""

    cable: LabCable
    vni: int

    def tunnel(self, prefix: str) -> str:
        return f"{prefix}x{self.vni}"

    def glue(self, prefix: str) -> str:
        return f"{prefix}g{self.vni}"


def placement(topo: LabTopology, guests: int) -> dict[str, int]:
    """Node -> instance."""
    return {n.name: guest_of(n, guests) for n in topo.nodes}


def crossings(topo: LabTopology, guests: int) -> list[Crossing]:
    """The cables whose ends are in different instances, in plan order, numbered."""
    where = placement(topo, guests)
    crossing = [c for c in topo.cables if where[c.a_node] != where[c.z_node]]
    return [Crossing(c, FIRST_CABLE_VNI + i) for i, c in enumerate(crossing)]


def link_script(prefix: str, guest: int, topo: LabTopology, run: str) -> str:
    """Instance ``guest``'s end of the split: the link's address, the management tunnel on
    the management bridge, and each crossing cable's tunnel glued to a veth whose other end
    is the node's port in its namespace. Runs after the build's ``ip -batch`` made the
    bridge and the namespaces (the node's ends of crossing cables are made here)."""
    where = placement(topo, 2)
    me, peer = link_address(guest), link_address(1 - guest)
    ip = [
        f"link set {LINK_IF} mtu {LINK_MTU} up",
        f"addr add {me}/30 dev {LINK_IF}",
        _vxlan(f"{prefix}xm", MGMT_VNI, me, peer),
        f"link set {prefix}xm master {mgmt_bridge(prefix)}",
        f"link set {prefix}xm up",
    ]
    tc: list[str] = []
    ends: list[str] = []  # the relay's map: VNI, namespace, port
    for x in crossings(topo, 2):
        c = x.cable
        node, port = (c.a_node, c.a_port) if where[c.a_node] == guest else (c.z_node, c.z_port)
        tunnel, glue = x.tunnel(prefix), x.glue(prefix)
        ends.append(f"{x.vni} {namespace(prefix, node)} {port}")
        ip += [
            _vxlan(tunnel, x.vni, me, peer),
            f"link set {tunnel} mtu {TUNNEL_MTU} up",
            f"link add {port} netns {namespace(prefix, node)} type veth peer name {glue}",
            f"link set {glue} mtu {GLUE_MTU} up",
        ]
        for src, dst in ((glue, tunnel), (tunnel, glue)):
            tc += [
                f"qdisc add dev {src} ingress",
                f"filter add dev {src} parent ffff: matchall action mirred egress redirect "
                f"dev {dst}",
            ]
    path, tc_path, relay = f"{run}/split.ip", f"{run}/split.tc", f"{run}/carrier_relay.py"
    return (
        f"cat > {path} <<'DPL_EOF'\n" + "\n".join(ip) + "\nDPL_EOF\n"
        f"cat > {tc_path} <<'DPL_EOF'\n" + "\n".join(tc) + "\nDPL_EOF\n"
        f"cat > {run}/split.map <<'DPL_EOF'\n" + "\n".join(ends) + "\nDPL_EOF\n"
        f"cat > {relay} <<'DPL_EOF'\n{CARRIER_RELAY.read_text()}DPL_EOF\n"
        f"modprobe vxlan\n(ulimit -n 65536; ip -batch {path})\n"
        + (f"tc -batch {tc_path}\n" if tc else "")
        + f"setsid -f python3 {relay} {prefix} {me} {peer} {RELAY_PORT} {run}/split.map "
        f"</dev/null >{run}/log/carrier-relay.log 2>&1\n"
    )


def _vxlan(name: str, vni: int, local: str, remote: str) -> str:
    return (
        f"link add {name} type vxlan id {vni} local {local} remote {remote} "
        f"dstport {VXLAN_PORT} dev {LINK_IF} nolearning"
    )
