"""Record the Linux and FRR answers of the mocked SONiC device (AsterNOS's SONiC shell answers
with them too) for NAPALM's standard getters, from a real FRR 8.4 and iproute2 6.1 here, in
SONiC's names.

    sudo PYTHONPATH=$PWD python -m tests.drivers.record_frr --sonic

SONiC and AsterNOS run Linux and FRR underneath: ``ip -j ...`` and vtysh answer there in
the forms they answer on any Linux + FRR. The mocked SONiC device (mocked/sonic/) is a leaf
with front ports Ethernet0, Ethernet4, Ethernet128, Ethernet136 (one MAC for all, as SONiC
gives them), a management port eth0, the host VLAN's gateway Vlan1001 (10.128.0.1/26) and
one spine session on Ethernet128; its FRR configuration is the device's own recorded
running config (zebra + bgpd sections). Here: a namespace with those links, names and MACs;
a spine namespace on Ethernet128 (AS 65000, loopback 10.0.0.1, originating 1.0.4.0/24 and
1.0.4.128/25 for NAPALM's route test); a server on Ethernet0 (10.128.0.2) that pings its
gateway; the ARP-to-host /32 in table 100. This kernel has no VLAN filtering, no 802.1Q
devices and no VRFs: Vlan1001 is a plain bridge over Ethernet0 and Ethernet4 (on SONiC it
is the 802.1Q device of the kernel's ``Bridge``), and eth0 is in no VRF (SONiC's mgmt VRF
is composed in the NAPALM VRF test case only). Ethernet4 and Ethernet136 have no far end
(down), as in the device's ``ip -j link show``.

Only files that do not exist yet are written (mocked/sonic/ holds older recordings other
tests assert on), once, to mocked/sonic/: vtysh's through SONiC's ``sudo -n docker exec bgp
vtysh -c``. The mocked AsterNOS device's ``system bash`` answers from there too
(tests/drivers/conftest.py ``ASTERNOS_SHELL``). Namespaces ``d40n-s*``, removed at the end.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

from controller.drivers import environment
from tests.drivers.conftest import MOCKED, slug
from tests.drivers.record_frr_napalm import established, lldpd, sh
from tests.frr_harness import start_frr, stop_frr

LEAF, SPINE, SERVER = "d40n-sleaf", "d40n-sspine", "d40n-ssrv1"
SYSTEM_MAC, MGMT_MAC = "60:eb:5a:01:12:41", "60:eb:5a:01:12:40"
SPINE_CONFIG = """hostname p1-spine1
interface swp1
 no ipv6 nd suppress-ra
 ipv6 nd ra-interval 5
exit
ip route 1.0.4.0/24 blackhole
ip route 1.0.4.128/25 blackhole
router bgp 65000
 bgp router-id 10.0.0.1
 no bgp ebgp-requires-policy
 neighbor swp1 interface remote-as external
 address-family ipv4 unicast
  redistribute connected
  redistribute static
 exit-address-family
exit
"""
LINUX = (
    "ip -j addr show",
    "ip -j -s -4 neigh show",
    "ip -j -s -6 neigh show",
    "ip -j -d link show",
    environment.MEMINFO,
    environment.CPU,
)
VTYSH = (
    "show ip route 1.0.4.0/24 json",
    "show ip route 1.0.4.0/24 longer-prefixes json",
    "show bgp ipv4 unicast 1.0.4.0/24 longer-prefixes json",
)


def leaf_config() -> str:
    """The SONiC device's own FRR running config (its recorded zebra and bgpd sections)."""
    parts = []
    for daemon in ("zebra", "bgpd"):
        name = f"sudo_n_docker_exec_bgp_vtysh_c_show_running_config_{daemon}.txt"
        text = (MOCKED / "sonic" / name).read_text()
        parts.append(text.split("!\n", 1)[1].replace("end\n", ""))
    return "".join(parts)


def build() -> None:
    for ns in (LEAF, SPINE, SERVER):
        sh("ip", "netns", "add", ns)
    batch = [
        "link set lo up",
        "address add 10.0.0.5/32 dev lo",
        "link add Ethernet128 type veth peer swp1 netns " + SPINE,
        "link add Ethernet0 type veth peer eth0 netns " + SERVER,
        "link add Ethernet4 type veth peer Ethernet4-far",
        "link add Ethernet136 type veth peer Ethernet136-far",
        "link add eth0 type veth peer eth0-far",
        f"link set eth0 address {MGMT_MAC} up",
        "link add Vlan1001 type bridge",
        f"link set Vlan1001 address {SYSTEM_MAC} mtu 9100 up",
        "address add 10.128.0.1/26 dev Vlan1001",
    ]
    for port in ("Ethernet0", "Ethernet4", "Ethernet128", "Ethernet136"):
        batch.append(f"link set {port} address {SYSTEM_MAC} mtu 9216 up")
    batch += ["link set Ethernet0 master Vlan1001", "link set Ethernet4 master Vlan1001"]
    sh("ip", "-n", LEAF, "-batch", "-", stdin="\n".join(batch) + "\n")
    spine = "link set lo up\naddress add 10.0.0.1/32 dev lo\nlink set swp1 mtu 9216 up\n"
    sh("ip", "-n", SPINE, "-batch", "-", stdin=spine)
    server = "link set lo up\nlink set eth0 up\naddress add 10.128.0.2/26 dev eth0\n"
    sh("ip", "-n", SERVER, "-batch", "-", stdin=server)
    start_frr(LEAF, leaf_config())
    start_frr(SPINE, SPINE_CONFIG)
    lldpd(LEAF, "p1-g1-leaf1")
    lldpd(SPINE, "p1-spine1")
    sh("ip", "-n", LEAF, "route", "add", "10.128.0.2/32", "dev", "Vlan1001", "table", "100")


def write(command: str, text: str) -> None:
    folder = MOCKED / "sonic"
    folder.mkdir(parents=True, exist_ok=True)
    ext = "json" if text.lstrip().startswith(("{", "[")) else "txt"
    path = folder / f"{slug(command)}.{ext}"
    if not path.exists():  # never overwrite what other tests assert on
        path.write_text(text)


def record() -> None:
    for command in LINUX:
        write(command, sh("ip", "netns", "exec", LEAF, "sh", "-c", command))
    for command in VTYSH:
        wrapped = f"sudo -n docker exec bgp vtysh -c {shlex.quote(command)}"
        write(wrapped, sh("vtysh", "-N", LEAF, "-c", command))


def teardown() -> None:
    for ns in (LEAF, SPINE):
        pid = Path(f"/run/{ns}.lldpd.pid")
        if pid.exists():
            subprocess.run(["kill", pid.read_text().strip()], check=False)
            pid.unlink()
        stop_frr(ns)
    subprocess.run(["ip", "netns", "del", SERVER], check=False)


def main() -> None:
    try:
        build()
        deadline = time.monotonic() + 120
        while not established(LEAF, ("Ethernet128",)):
            if time.monotonic() > deadline:
                raise SystemExit("BGP Ethernet128 not established in 120 s")
            time.sleep(2)
        sh("ip", "netns", "exec", SERVER, "ping", "-c", "3", "-i", "0.2", "10.128.0.1")
        sh("ip", "netns", "exec", SERVER, "ping", "-6", "-c", "2", "ff02::1%eth0")
        time.sleep(5)
        record()
    finally:
        teardown()
