"""Record the answers NAPALM's standard getters need from a real FRR 8.4 and iproute2, here.

    sudo PYTHONPATH=$PWD python -m tests.drivers.record_frr --napalm

The rendered configuration of ``p1-g1-leaf1`` of ``inventory/lab-dual-arp.yaml`` (frr.conf,
ip.batch, sysctl.conf) runs in a network namespace with both of its spines (``p1-spine1`` on
swp3, ``p1-spine2`` on swp4: two BGP unnumbered sessions up) and two servers (namespaces with
one port each, on swp1 and swp2, 10.100.0.2 and 10.100.0.3). This machine's kernel has no
VLAN filtering and no 802.1Q devices, so the leaf's bridge br0 is a plain one and the VLAN's
gateway address (vlan1001's, 10.100.0.1/29) sits on br0 itself (``on_this_kernel``). The
servers ping their gateway (ARP, IPv6 neighbours, the bridge's FDB); the ARP-to-host agent's
/32 is put into table 100 by hand (imported, advertised to both spines). The pair link aux1
has no far end (down); the kernel counts what a switch sent before a veth's far end was up as
transmit drops. lldpd runs on the switches.

NAPALM's own test of ``get_route_to`` asks for 1.0.4.0/24 learnt by BGP, which no dpctl
fabric carries; so that one test has an answer, the spines originate 1.0.4.0/24 (a blackhole
static, redistributed) and spine1 also 1.0.4.128/25, and the leaf's and spines' PL-FABRIC
take ``1.0.4.0/24 le 25`` (EXTRA_* below: the only lines added to the rendered configs). The
leaf learns 1.0.4.0/24 from both spines (two next hops: ECMP) and 1.0.4.128/25 from spine1.

Answers go to mocked/frr/napalm/<node>/<slug>.txt|json. Namespaces, FRR instances and lldpd
are named ``d40n-*`` and removed at the end, also after a failure. Not recordable on this
machine's kernel (no VRF, no prio/red qdiscs, no bonding): a VRF's neighbours (NAPALM's
``get_arp_table(vrf="TEST")`` test case) and the RoCE qdiscs; see mocked/frr/README.md.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from controller.drivers import environment
from controller.generator import build_fabric
from controller.intent import load_intent
from controller.platforms.frr.agent import AGENT_STAMP
from controller.platforms.frr.driver import BUNDLE_FILES, PART, STATE
from controller.render.engine import render_fabric
from tests.conftest import INVENTORY
from tests.drivers.conftest import MOCKED, slug
from tests.frr_harness import start_frr, stop_frr

PREFIX = "d40n-"
SWITCHES = {"leaf": "p1-g1-leaf1", "spine1": "p1-spine1", "spine2": "p1-spine2"}
SERVERS = {"srv1": ("swp1", "10.100.0.2"), "srv2": ("swp2", "10.100.0.3")}
HOST_ROUTE = "10.100.0.2/32"
NAPALM_PREFIXES = "ip prefix-list PL-FABRIC seq 100 permit 1.0.4.0/24 le 25\n"
EXTRA_LEAF = NAPALM_PREFIXES
EXTRA_SPINE = (
    NAPALM_PREFIXES
    + "ip route 1.0.4.0/24 blackhole\n"
    + "router bgp 65000\n address-family ipv4 unicast\n  redistribute static\n"
    + " exit-address-family\nexit\n"
)
EXTRA_SPINE1 = EXTRA_SPINE + "ip route 1.0.4.128/25 blackhole\n"
EXTRA_SPINE2 = EXTRA_SPINE + (
    "router bgp 65000\n neighbor 192.0.2.1 remote-as 65099\n"
    " neighbor 192.0.2.1 password s3cr3t-bgp\nexit\n"
)
"""A secret in a real running config, for get_config(sanitized=True): a neighbour's TCP MD5
password (192.0.2.1, TEST-NET-1: never reachable, no session). (A key chain's key-string
would need ripd or eigrpd running: bgpd does not take key chains in FRR 8.4.)"""
VTYSH = (
    "show bgp vrf all summary json",
    "show bgp vrf all neighbors json",
    "show ip route json",
    "show evpn es detail json",
    "show running-config",
    "show version",
    "show ip route 1.0.4.0/24 json",
    "show ip route 1.0.4.0/24 longer-prefixes json",
    "show ip route 1.0.4.1 json",
    "show ip route 10.100.0.2/32 json",
    "show ipv6 route json",
    "show bgp ipv4 unicast 1.0.4.0/24 longer-prefixes json",
    "show bgp ipv4 unicast json",
)
SHELL = (
    "hostname",
    "cut -d' ' -f1 /proc/uptime",
    "ip -j link show",
    "ip -j addr show",
    "ip -j -s link show",
    "ip -j -s -4 neigh show",
    "ip -j -s -6 neigh show",
    "ip -j -d link show",
    "bridge -j vlan show",
    "bridge -j -s fdb show",
    "tc -j qdisc show",
    "sysctl -n net.ipv4.fib_multipath_hash_policy",
    environment.MEMINFO,
    environment.CPU,
    environment.HWMON,
)


def sh(*args: str, stdin: str | None = None) -> str:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, check=True).stdout


def ns_of(node: str) -> str:
    return f"{PREFIX}{node}"


def write(node: str, command: str, text: str) -> None:
    folder = MOCKED / "frr" / "napalm" / node
    folder.mkdir(parents=True, exist_ok=True)
    ext = "json" if text.lstrip().startswith(("{", "[")) else "txt"
    (folder / f"{slug(command)}.{ext}").write_text(text)


def in_ns(ns: str, command: str) -> str:
    """``command`` run by a shell inside namespace ``ns`` (what the driver's exec runs)."""
    return sh("ip", "netns", "exec", ns, "sh", "-c", command)


def stored_files(files: dict[str, str]) -> str:
    """The answer to the first part of the driver's snapshot (the stored files, as the
    driver's own loop prints them), run over a folder holding the applied files."""
    names = " ".join(shlex.quote(n) for n in (*BUNDLE_FILES, AGENT_STAMP))
    marker = "#### dpctl-file: "
    with tempfile.TemporaryDirectory(prefix=PREFIX) as folder:
        for name, text in files.items():
            (Path(folder) / name).write_text(text)
        loop = f"for f in {names}; do [ -f $f ] && printf '{marker}%s\\n' $f && cat $f; done"
        return sh("sh", "-c", f"cd {folder} && {loop}; true")


def bridge_vlans(batch: str) -> str:
    """``bridge -j vlan show`` of a bridge.batch, composed in iproute2 6.1's JSON form
    (bridge/vlan.c ``print_vlan_info``: per link ``ifname`` and ``vlans``, each ``vlan`` with
    ``flags`` "PVID" / "Egress Untagged" when set): this kernel has no VLAN filtering."""
    ports: dict[str, list[dict[str, object]]] = {}
    for line in batch.splitlines():
        words = line.split()
        if words[:2] != ["vlan", "add"]:
            continue
        flags = [f for w, f in (("pvid", "PVID"), ("untagged", "Egress Untagged")) if w in words]
        item: dict[str, object] = {"vlan": int(words[words.index("vid") + 1])}
        item.update({"flags": flags} if flags else {})
        ports.setdefault(words[words.index("dev") + 1], []).append(item)
    bridges = [name for name in ports if not name.startswith("swp")]
    order = [*(n for n in ports if n not in bridges), *bridges]  # ports first, as by ifindex
    return json.dumps([{"ifname": n, "vlans": ports[n]} for n in order], separators=(",", ":"))


def record(role: str, name: str, applied: dict[str, str]) -> None:
    ns = ns_of(role)
    for command in VTYSH:
        write(name, f"vtysh -c {shlex.quote(command)}", sh("vtysh", "-N", ns, "-c", command))
    for command in SHELL:
        write(name, command, in_ns(ns, command) if command != "hostname" else name + "\n")
    if applied.get("bridge.batch", "").strip():
        write(name, "bridge -j vlan show", bridge_vlans(applied["bridge.batch"]) + "\n")
    sock = f"/run/{ns}.lldpd.socket"
    lldp = sh("ip", "netns", "exec", ns, "lldpcli", "-u", sock, "-f", "json", "show", "neighbors")
    write(name, "lldpcli -f json show neighbors", lldp)
    running = sh("vtysh", "-N", ns, "-c", "show running-config")
    snapshot = (
        f"if cd {STATE}/current 2>/dev/null; then for f in "
        + " ".join(shlex.quote(n) for n in (*BUNDLE_FILES, AGENT_STAMP))
        + "; do [ -f $f ] && printf '#### dpctl-file: %s\\n' $f && cat $f; done; fi"
    )
    write(name, snapshot, stored_files(applied))
    write(name, f"cat {STATE}/applied-running.conf 2>/dev/null; true", running)
    write(name, "cat /etc/frr/frr.conf", (Path("/etc/frr") / ns / "frr.conf").read_text())
    assert PART  # the snapshot's parts are recorded one by one, as the mocked host splits them


def cable(a: str, port_a: str, b: str, port_b: str) -> None:
    sh("ip", "-n", ns_of(a), "link", "add", port_a, "type", "veth", "peer", port_b)
    sh("ip", "-n", ns_of(a), "link", "set", port_b, "netns", ns_of(b))


def lldpd(ns: str, hostname: str) -> None:
    sock = f"/run/{ns}.lldpd.socket"
    sh("ip", "netns", "exec", ns, "lldpd", "-u", sock, "-p", f"/run/{ns}.lldpd.pid")
    time.sleep(1)
    for command in (
        f"configure system hostname {hostname}",
        "configure lldp portidsubtype ifname",
        "configure lldp tx-interval 1",
    ):
        sh("ip", "netns", "exec", ns, "lldpcli", "-u", sock, *command.split())


def on_this_kernel(files: dict[str, str]) -> dict[str, str]:
    """The leaf's files as this machine's kernel can run them: it has no VLAN filtering and
    no 802.1Q devices, so br0 is a plain bridge and the VLAN's gateway address (vlan1001's)
    sits on br0 itself; the VLANs of bridge.batch are not applied (their ``bridge -j vlan
    show`` answer is composed: mocked/frr/README.md)."""
    batch = []
    for line in files["ip.batch"].splitlines():
        if "type vlan id" in line:
            continue
        line = line.replace(" vlan_filtering 1 vlan_default_pvid 0", "")
        batch.append(line.replace("dev vlan1001", "dev br0"))
    renamed = {name: text.replace("vlan1001", "br0") for name, text in files.items()}
    return {**renamed, "ip.batch": "\n".join(batch) + "\n", "bridge.batch": files["bridge.batch"]}


def build(rendered: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The namespaces, cabled and configured; the files each switch was given."""
    extras = {"leaf": EXTRA_LEAF, "spine1": EXTRA_SPINE1, "spine2": EXTRA_SPINE2}
    for role in SWITCHES:
        sh("ip", "netns", "add", ns_of(role))
    for server in SERVERS:
        sh("ip", "netns", "add", ns_of(server))
    cable("leaf", "swp3", "spine1", "swp1")
    cable("leaf", "swp4", "spine2", "swp1")
    for server, (port, _address) in SERVERS.items():
        cable("leaf", port, server, "eth0")
    sh("ip", "-n", ns_of("leaf"), "link", "add", "aux1", "type", "veth", "peer", "aux1-far")
    for spine in ("spine1", "spine2"):
        sh("ip", "-n", ns_of(spine), "link", "add", "swp2", "type", "veth", "peer", "swp2-far")
    applied: dict[str, dict[str, str]] = {}
    for role, name in SWITCHES.items():
        ns, files = ns_of(role), dict(rendered[name])
        files = on_this_kernel(files) if "vlan1001" in files["ip.batch"] else files
        files["frr.conf"] = files["frr.conf"].replace("\nend\n", "\n" + extras[role] + "end\n")
        sh("ip", "-n", ns, "-force", "-batch", "-", stdin=files["ip.batch"])
        sysctl = files["sysctl.conf"]
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-p", "/dev/stdin", stdin=sysctl)
        start_frr(ns, files["frr.conf"])
        lldpd(ns, name)
        applied[name] = {k: v for k, v in files.items() if k != "qos.tc"}
    for server, (_port, address) in SERVERS.items():
        batch = f"link set lo up\nlink set eth0 up\naddress add {address}/29 dev eth0\n"
        batch += "route add default via 10.100.0.1\n"
        sh("ip", "-n", ns_of(server), "-batch", "-", stdin=batch)
    sh("ip", "-n", ns_of("leaf"), "route", "add", HOST_ROUTE, "dev", "br0", "table", "100")
    return applied


def established(ns: str, peers: tuple[str, ...]) -> bool:
    data = json.loads(sh("vtysh", "-N", ns, "-c", "show bgp vrf all summary json") or "{}")
    found = data.get("default", {}).get("ipv4Unicast", {}).get("peers", {})
    return all(found.get(p, {}).get("state") == "Established" for p in peers)


def traffic() -> None:
    for server in SERVERS:
        sh("ip", "netns", "exec", ns_of(server), "ping", "-c", "3", "-i", "0.2", "10.100.0.1")
        sh("ip", "netns", "exec", ns_of(server), "ping", "-6", "-c", "2", "ff02::1%eth0")


def teardown() -> None:
    for role in SWITCHES:
        pid = Path(f"/run/{ns_of(role)}.lldpd.pid")
        if pid.exists():
            subprocess.run(["kill", pid.read_text().strip()], check=False)
            pid.unlink()
        stop_frr(ns_of(role))
    for server in SERVERS:
        subprocess.run(["ip", "netns", "del", ns_of(server)], check=False)


def main() -> None:
    rendered = render_fabric(build_fabric(load_intent(INVENTORY / "lab-dual-arp.yaml")))
    try:
        applied = build(rendered)
        deadline = time.monotonic() + 120
        while not (
            established(ns_of("leaf"), ("swp3", "swp4"))
            and established(ns_of("spine1"), ("swp1",))
            and established(ns_of("spine2"), ("swp1",))
        ):
            if time.monotonic() > deadline:
                raise SystemExit("BGP leaf - spines not established in 120 s")
            time.sleep(2)
        traffic()
        time.sleep(8)  # routes exchanged, LLDP frames sent (tx-interval 1)
        for role, name in SWITCHES.items():
            record(role, name, applied[name])
    finally:
        teardown()
