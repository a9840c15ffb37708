"""Record the mocked FRR device's answers from a real FRR (Debian's 8.4) and lldpd, here.

    sudo PYTHONPATH=$PWD python -m tests.drivers.record_frr

Two nodes of the dual-ARP lab fabric run their rendered frr.conf in network namespaces (FRR's
pathspace, as tests/frr_harness.py does): p1-g1-leaf1 and p1-spine1, cabled as the plan says
(leaf swp3 - spine swp1), so the leaf has one BGP session up (to p1-spine1) and one down (to
p1-spine2, not built); a NIC /32 in the leaf's import table 100 (what the ARP-to-host agent
writes) is imported and advertised, so the spine learns it through the leaf. lldpd runs on
both. Each command the FRR driver sends is answered into mocked/frr/<node>/<slug>.txt|json.

Two more nodes load the rendered config of p1-g1-leaf1 isolated and p1-spine1 in graceful
shutdown, for the maintenance getter (``show running-config`` only).

``--napalm`` records the answers of NAPALM's standard getters instead, from a leaf with
both spines and two servers (tests/drivers/record_frr_napalm.py), into mocked/frr/napalm/;
``--sonic`` the Linux and FRR answers of the mocked SONiC device (and AsterNOS's SONiC
shell) in SONiC's names (tests/drivers/record_sonic_names.py).

Not recorded here (this machine's kernel has no bonding and no prio/red qdiscs): ``show evpn
es detail json`` with a local segment and ``tc -j qdisc show`` with RED; see mocked/frr/README.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from controller.generator import build_fabric
from controller.intent import load_intent
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY
from tests.drivers.conftest import MOCKED, slug
from tests.frr_harness import _start, stop_frr

NODES = {"leaf": "p1-g1-leaf1", "spine": "p1-spine1"}
VTYSH = (
    "show bgp vrf all summary json",
    "show bgp vrf all neighbors json",
    "show ip route json",
    "show evpn es detail json",
    "show running-config",
    "show version",
)
HOST_ROUTE = "10.100.0.2/32"


def sh(*args: str, stdin: str | None = None) -> str:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, check=True).stdout


def ns_of(node: str) -> str:
    return f"drvrec-{node}"


def lldpd(namespace: str, hostname: str) -> None:
    sock = f"/run/{namespace}.lldpd.socket"
    sh("ip", "netns", "exec", namespace, "lldpd", "-u", sock, "-p", f"/run/{namespace}.pid")
    time.sleep(1)
    for command in (
        f"configure system hostname {hostname}",
        "configure lldp portidsubtype ifname",
        "configure lldp tx-interval 1",
    ):
        sh("ip", "netns", "exec", namespace, "lldpcli", "-u", sock, *command.split())


def write(node: str, command: str, text: str) -> None:
    folder = MOCKED / "frr" / node
    folder.mkdir(parents=True, exist_ok=True)
    ext = "json" if text.lstrip().startswith(("{", "[")) else "txt"
    (folder / f"{slug(command)}.{ext}").write_text(text)


def record(role: str, name: str) -> None:
    ns = ns_of(role)
    for command in VTYSH:
        write(name, f"vtysh -c '{command}'", sh("vtysh", "-N", ns, "-c", command))
    sock = f"/run/{ns}.lldpd.socket"
    lldp = sh("ip", "netns", "exec", ns, "lldpcli", "-u", sock, "-f", "json", "show", "neighbors")
    write(name, "lldpcli -f json show neighbors", lldp)
    write(name, "ip -j link show", sh("ip", "-n", ns, "-j", "link", "show"))
    write(name, "hostname", name + "\n")
    policy = sh("ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.fib_multipath_hash_policy")
    write(name, "sysctl -n net.ipv4.fib_multipath_hash_policy", policy)
    write(name, "cut -d' ' -f1 /proc/uptime", Path("/proc/uptime").read_text().split()[0] + "\n")


def established(ns: str, peer: str) -> bool:
    data = json.loads(sh("vtysh", "-N", ns, "-c", "show bgp vrf all summary json") or "{}")
    peers = data.get("default", {}).get("ipv4Unicast", {}).get("peers", {})
    return bool(peers.get(peer, {}).get("state") == "Established")


def main() -> None:
    fabric = build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml"))
    rendered = render_fabric(fabric)
    drained = render_fabric(
        fabric, maintenance={"p1-g1-leaf1": "isolated", "p1-spine1": "graceful-shutdown"}
    )
    extra = {"leaf-isolated": "p1-g1-leaf1", "spine-gshut": "p1-spine1"}
    try:
        for role in [*NODES, *extra]:
            _start(ns_of(role), [])
        leaf, spine = ns_of("leaf"), ns_of("spine")
        sh("ip", "-n", leaf, "link", "add", "swp3", "type", "veth", "peer", "swp1", "netns", spine)
        sh("ip", "-n", spine, "link", "add", "swp2", "type", "veth", "peer", "x2")
        for port, peer in (("swp4", "x4"), ("swp1", "x1"), ("swp2", "x2")):
            sh("ip", "-n", leaf, "link", "add", port, "type", "veth", "peer", peer)
        for role, name in NODES.items():
            ns = ns_of(role)
            loopback = fabric.switch_by_name[name].loopback
            batch = f"link set lo up\naddress add {loopback}/32 dev lo\n"
            links = json.loads(sh("ip", "-n", ns, "-j", "link", "show"))
            batch += "".join(
                f"link set dev {link['ifname']} mtu 9216 up\n"
                for link in links
                if link["ifname"] != "lo"
            )
            sh("ip", "-n", ns, "-batch", "-", stdin=batch)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1")
            sh("vtysh", "-N", ns, "-f", "/dev/stdin", stdin=rendered[name]["frr.conf"])
            lldpd(ns, name)
        for role, name in extra.items():
            sh("vtysh", "-N", ns_of(role), "-f", "/dev/stdin", stdin=drained[name]["frr.conf"])
        sh("ip", "-n", leaf, "route", "add", HOST_ROUTE, "dev", "swp1", "table", "100")
        deadline = time.monotonic() + 120
        while not established(leaf, "swp3") or not established(spine, "swp1"):
            if time.monotonic() > deadline:
                raise SystemExit("BGP leaf swp3 - spine swp1 not established in 120 s")
            time.sleep(2)
        time.sleep(8)  # routes exchanged, LLDP frames sent (tx-interval 1)
        for role, name in NODES.items():
            record(role, name)
        for role, name in extra.items():
            command = "vtysh -c 'show running-config'"
            text = sh("vtysh", "-N", ns_of(role), "-c", "show running-config")
            write(f"{name}-{role.split('-')[1]}", command, text)
    finally:
        for role in [*NODES, *extra]:
            pid = Path(f"/run/{ns_of(role)}.pid")
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], check=False)
                pid.unlink()
            stop_frr(ns_of(role))


if __name__ == "__main__":
    import sys

    if "--napalm" in sys.argv[1:]:  # NAPALM's standard getters: tests/drivers/record_frr_napalm.py
        from tests.drivers import record_frr_napalm

        record_frr_napalm.main()
    elif "--sonic" in sys.argv[1:]:  # the same, in SONiC's names: record_sonic_names.py
        from tests.drivers import record_sonic_names

        record_sonic_names.main()
    else:
        main()
