#!/usr/bin/python3
"""Ansible module: a GPU server's NICs for a dual-plane rail-optimized fabric.

action=configure brings every GPU NIC to the state `controller/labfabric.py:
server_setup_script()` builds: a bond of the NIC's plane-1 and plane-2 ports (LACP for
EVPN-MH; balance-xor for dual-ARP plus a tc clsact egress filter that mirrors
every ARP frame to port 1 and redirects it to port 2), MTU, the address, a source-based
table per NIC (rule from the NIC's address, rail pool via its gateway) and a slow ARP
keep-alive to the gateway; then RoCE host settings where the NIC's tooling exists.

State is read with iproute2 JSON (`ip -j`); only the commands that are needed run (one
`ip -batch` and one `tc -batch` per NIC), so a converged server reports changed=false.
Check mode reports the commands it would run and runs none.

Persistent (default): configure first writes the server's persistent network configuration
under ``config_root`` (``/`` on a server; its own folder per lab server): systemd-networkd
.netdev/.network files for bonds, ports, MTU, address, route table and rule, plus
/etc/dpctl/gpu-nic.json and the dpctl-gpu-nic.service oneshot for what networkd cannot
express (the ARP mirror filter, the keep-alive, RoCE settings); then applies what those files
say (networkctl reload/reconfigure where networkd runs). ``--apply-persistent ROOT`` runs
the same applier alone, as at boot.

action=verify changes nothing: bond members up with carrier (and aggregated for LACP), the
NIC configured as intended, the keep-alive running, the gateway's neighbour entry REACHABLE
and every same-rail peer answering ping (at most PING_PARALLEL pings at once).

The inventory lists each server once with its own NICs (rail, ip, prefixlen, gateway); what
every server shares is given once per rail in ``rails`` (bond, ports, table); verify also
takes ``rail_members`` (per rail, server -> address) and derives each NIC's peers from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from typing import Any

DOCUMENTATION = r"""
module: dpctl_gpu_nic
short_description: Bond, address, source routing, dual-ARP and RoCE settings of GPU NICs
options:
  action: {type: str, choices: [configure, verify], default: configure}
  nics: {type: list, elements: dict, required: true}
  rails: {type: dict, default: {}}
  rail_members: {type: dict, default: {}}
  bond_options: {type: dict, required: true}
  arp_on_both_ports: {type: bool, default: false}
  rail_pool: {type: str, required: true}
  mtu: {type: int, default: 9000}
  arp_keepalive_s: {type: int, default: 2}
  roce: {type: dict, default: {}}
  neighbour_timeout: {type: float, default: 12}
  settle_s: {type: float, default: 60}
  config_root: {type: str, default: /}
  persistent: {type: bool, default: true}
  applier: {type: str, default: ""}
"""

Run = Any  # callable(argv, stdin=None) -> (rc, out, err)

BOND_KEYS = {
    # option name in `ip link add ... type bond` -> key in `ip -j -d link` info_data
    "mode": "mode",
    "lacp_rate": "ad_lacp_rate",
    "xmit_hash_policy": "xmit_hash_policy",
    "miimon": "miimon",
    "updelay": "updelay",
}


PING_PARALLEL = 64


# -- inventory facts ------------------------------------------------------------------------
def expand_nics(nics: list[dict[str, Any]], rails: dict[str, Any]) -> list[dict[str, Any]]:
    """Each NIC's own facts completed with its rail's shared ones (bond, ports, table)."""
    full = []
    for nic in nics:
        rail = rails.get(str(nic["rail"]))
        if rail is None and not {"bond", "ports", "table"} <= set(nic):
            raise ValueError(f"rail {nic['rail']} is not in the inventory's rails")
        full.append({**(rail or {}), **nic})
    return full


def peers_of(nics: list[dict[str, Any]], members: dict[str, Any]) -> list[dict[str, Any]]:
    """The same-rail NICs of the other servers, each reached from this server's NIC."""
    return [
        {"server": server, "rail": nic["rail"], "ip": ip, "src": nic["ip"]}
        for nic in nics
        for server, ip in sorted(members.get(str(nic["rail"]), {}).items())
        if ip != nic["ip"]
    ]


# -- LACP independent control (netlink) ---------------------------------------------------
# With coupled control (Linux's default) a bond's port distributes as soon as its partner says
# it is in sync, before it knows the partner collects: what it sends then is lost. IEEE
# 802.1AX independent control collects first and distributes once the partner collects
# (Linux 6.9, "bonding: Add independent control state machine", commit 240fd405528b; Debian
# 12's 6.1.192 has it too). It is the bond option ``coupled_control 0``: settable only while
# the bond is down, only over netlink (no sysfs file), and iproute2 names it only from 6.10,
# so this module sends the request itself. A kernel without the option ignores the
# attribute and reports none: the read-back tells.
RTM_NEWLINK = 16
RTM_GETLINK = 18
NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLA_F_NESTED = 0x8000
IFLA_LINKINFO = 18
IFLA_INFO_KIND = 1
IFLA_INFO_DATA = 2
IFLA_BOND_COUPLED_CONTROL = 32
"""include/uapi/linux/if_link.h, since Linux 6.9 (and in Debian's 6.1.192)."""
INDEPENDENT = "independent"
COUPLED = "coupled (kernel has no coupled_control)"
"""What ``--lacp-independent`` prints after each bond's name (the lab reads it)."""


def nl_attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("HH", length, kind) + payload + b"\0" * (-length % 4)


def nl_attrs(data: bytes) -> dict[int, bytes]:
    """The attributes in ``data`` by type (nested flag cleared)."""
    found: dict[int, bytes] = {}
    pos = 0
    while pos + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, pos)
        if length < 4:
            break
        found[kind & ~NLA_F_NESTED] = data[pos + 4 : pos + length]
        pos += (length + 3) & ~3
    return found


def nl_request(msg_type: int, flags: int, ifindex: int, payload: bytes = b"") -> bytes:
    """Send one rtnetlink link message and return the first reply."""
    body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, ifindex, 0, 0) + payload
    header = struct.pack("IHHII", 16 + len(body), msg_type, flags, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        sock.bind((0, 0))
        sock.send(header + body)
        return sock.recv(65536)


def nl_ack_error(reply: bytes) -> int:
    """The errno of an NLMSG_ERROR reply (0: acknowledged)."""
    _length, msg_type = struct.unpack_from("IH", reply)
    if msg_type != NLMSG_ERROR:
        return 0
    return -int(struct.unpack_from("i", reply, 16)[0])


def coupled_control(reply: bytes) -> int | None:
    """The bond's coupled_control in an RTM_NEWLINK reply to RTM_GETLINK, None when the
    kernel does not report it (it has no such option)."""
    link = nl_attrs(reply[16 + 16 :])
    info = nl_attrs(link.get(IFLA_LINKINFO, b""))
    value = nl_attrs(info.get(IFLA_INFO_DATA, b"")).get(IFLA_BOND_COUPLED_CONTROL)
    return value[0] if value else None


def read_coupled_control(bond: str) -> int | None:
    """``bond``'s coupled_control as its kernel reports it (None: no such option)."""
    return coupled_control(nl_request(RTM_GETLINK, NLM_F_REQUEST, socket.if_nametoindex(bond)))


def set_coupled_control(bond: str, value: int = 0) -> int | None:
    """Set coupled_control on ``bond`` (which must be down); return what the kernel now
    reports (None: it has no such option)."""
    index = socket.if_nametoindex(bond)
    option = nl_attr(IFLA_BOND_COUPLED_CONTROL, bytes([value]))
    data = nl_attr(IFLA_INFO_DATA | NLA_F_NESTED, option)
    info = nl_attr(IFLA_LINKINFO | NLA_F_NESTED, nl_attr(IFLA_INFO_KIND, b"bond\0") + data)
    error = nl_ack_error(nl_request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, index, info))
    if error:
        raise OSError(error, f"{bond}: coupled_control {value} refused")
    return read_coupled_control(bond)


def lacp_independent_main(bonds: list[str]) -> int:
    """`dpctl_gpu_nic.py --lacp-independent BOND...` (each bond down): one line per bond,
    ``BOND independent`` or ``BOND coupled (kernel has no coupled_control)``; 1 on an error.
    The lab's server images run this between creating their bonds and bringing them up."""
    for bond in bonds:
        try:
            independent = set_coupled_control(bond) == 0
        except OSError as exc:
            print(f"{bond}: {exc}", file=sys.stderr)
            return 1
        print(f"{bond} {INDEPENDENT if independent else COUPLED}")
    return 0


# -- reading state -----------------------------------------------------------------------
def run_cmd(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _json(run: Run, argv: list[str]) -> list[dict[str, Any]]:
    rc, out, err = run(argv)
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {err.strip()}")
    data = json.loads(out or "[]")
    return data if isinstance(data, list) else []


def read_state(
    run: Run, nics: list[dict[str, Any]], control: Any = read_coupled_control
) -> dict[str, Any]:
    """Everything the planner looks at, in a few `ip -j` calls (and, for each LACP bond, its
    coupled_control over netlink: ``control(bond)``)."""
    links = {link["ifname"]: link for link in _json(run, ["ip", "-j", "-d", "link", "show"])}
    addrs = {a["ifname"]: a.get("addr_info", []) for a in _json(run, ["ip", "-j", "addr", "show"])}
    rules = _json(run, ["ip", "-j", "-4", "rule", "show"])
    routes = _json(run, ["ip", "-j", "-4", "route", "show", "table", "all"])
    qdiscs = _json(run, ["tc", "-j", "qdisc", "show"])
    filters: dict[str, str] = {}
    for nic in nics:
        if nic["bond"] in links:
            _, out, _ = run(["tc", "filter", "show", "dev", nic["bond"], "egress"])
            filters[nic["bond"]] = out
    coupled = {
        nic["bond"]: control(nic["bond"])
        for nic in nics
        if _info_data(links.get(nic["bond"], {})).get("mode") == "802.3ad"
    }
    return {
        "links": links,
        "addrs": addrs,
        "rules": rules,
        "routes": routes,
        "clsact": sorted(q["dev"] for q in qdiscs if q.get("kind") == "clsact"),
        "filters": filters,
        "pings": keepalive_processes(),
        "coupled": coupled,
    }


def _info_data(link: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = link.get("linkinfo", {}).get("info_data", {})
    return data


def keepalive_processes() -> list[list[str]]:
    """Command lines of the processes in this network namespace (PID namespace is shared)."""
    try:
        own_ns = os.readlink("/proc/self/ns/net")
    except OSError:
        own_ns = ""
    found: list[list[str]] = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode() for a in fh.read().split(b"\0") if a]
            if not argv or os.path.basename(argv[0]) != "ping":
                continue
            if own_ns and os.readlink(f"/proc/{pid}/ns/net") != own_ns:
                continue
        except OSError:
            continue
        found.append(argv)
    return found


# -- planning (pure) ----------------------------------------------------------------------
def keepalive_argv(nic: dict[str, Any], interval: int) -> list[str]:
    return ["ping", "-q", "-i", str(interval), "-I", nic["ip"], nic["gateway"]]


def _bond_mismatch(link: dict[str, Any], options: dict[str, Any]) -> list[str]:
    info = link.get("linkinfo", {})
    if info.get("info_kind") != "bond":
        return [f"kind {info.get('info_kind')!r}"]
    data = info.get("info_data", {})
    wrong = []
    for opt, value in options.items():
        key = BOND_KEYS.get(opt, opt)
        if str(data.get(key)) != str(value):
            wrong.append(f"{opt} {data.get(key)!r} (want {value!r})")
    return wrong


def parse_tc_filters(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """`tc filter show dev X egress` -> [(protocol, [(Mirror|Redirect, device), ...])]."""
    filters: list[tuple[str, list[tuple[str, str]]]] = []
    for line in text.splitlines():
        head = re.match(r"filter protocol (\S+) pref \d+ u32 .*fh [0-9a-f]+::[0-9a-f]+", line)
        if head:
            filters.append((head.group(1), []))
            continue
        action = re.search(r"mirred \(Egress (Mirror|Redirect) to device (\S+)\)", line)
        if action and filters:
            filters[-1][1].append((action.group(1), action.group(2)))
    return filters


def arp_filter_cmd(bond: str, port_a: str, port_b: str) -> str:
    return (
        f"filter add dev {bond} egress protocol arp u32 match u32 0 0 "
        f"action mirred egress mirror dev {port_a} "
        f"action mirred egress redirect dev {port_b}"
    )


def plan_nic(state: dict[str, Any], nic: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """The `ip`/`tc` batch lines and the keep-alive that bring one NIC to its intended state."""
    bond, ports, ip, gw = nic["bond"], list(nic["ports"]), nic["ip"], nic["gateway"]
    table = int(nic["table"])
    links: dict[str, Any] = state["links"]
    ip_cmds: list[str] = []
    tc_cmds: list[str] = []
    reasons: list[str] = []
    fresh = False
    options = p["bond_options"]
    opt_text = " ".join(f"{k} {v}" for k, v in options.items())
    link = links.get(bond)
    if link is not None:
        wrong = _bond_mismatch(link, options)
        if wrong:
            reasons.append(f"{bond}: recreate ({', '.join(wrong)})")
            ip_cmds.append(f"link del {bond}")
            link, fresh = None, True
    independent_after = None
    if link is None:
        fresh = True
        reasons.append(f"{bond}: create bond ({opt_text})")
        ip_cmds.append(f"link add {bond} type bond {opt_text}")
        if options.get("mode") == "802.3ad":
            # set while the new bond is down, before its ports, address and routes
            independent_after = len(ip_cmds)
    for port in ports:
        if port not in links:
            raise RuntimeError(f"{bond}: port {port} does not exist on this server")
        master = links[port].get("master")
        if master == bond and not fresh:
            continue
        if master and master != bond:
            ip_cmds.append(f"link set {port} nomaster")
        reasons.append(f"{port}: enslave to {bond}")
        ip_cmds += [f"link set {port} down", f"link set {port} master {bond}"]
    if not fresh:
        for name, other in sorted(links.items()):
            if other.get("master") == bond and name not in ports:
                reasons.append(f"{name}: not a port of {bond}, released")
                ip_cmds.append(f"link set {name} nomaster")
    up = link is not None and "UP" in link.get("flags", [])
    if fresh or not up or int(link.get("mtu", 0)) != int(p["mtu"]):
        reasons.append(f"{bond}: mtu {p['mtu']} up")
        ip_cmds.append(f"link set {bond} mtu {p['mtu']} up")
    inet = [] if fresh else [a for a in state["addrs"].get(bond, []) if a.get("family") == "inet"]
    have = {(a.get("local"), int(a.get("prefixlen", 0))) for a in inet}
    for local, plen in sorted(have - {(ip, int(nic["prefixlen"]))}):
        reasons.append(f"{bond}: remove stray address {local}/{plen}")
        ip_cmds.append(f"address del {local}/{plen} dev {bond}")
    if (ip, int(nic["prefixlen"])) not in have:
        reasons.append(f"{bond}: address {ip}/{nic['prefixlen']}")
        ip_cmds.append(f"address add {ip}/{nic['prefixlen']} dev {bond}")
    at_prio = [r for r in state["rules"] if int(r.get("priority", -1)) == table]
    good = [
        r
        for r in at_prio
        if r.get("src") == ip
        and int(r.get("srclen", 32)) == 32
        and str(r.get("table")) == str(table)
        and set(r) <= {"priority", "src", "srclen", "table", "flags", "protocol"}
    ]
    if len(at_prio) != 1 or len(good) != 1:
        for _ in at_prio:
            ip_cmds.append(f"rule del priority {table}")
        reasons.append(f"rule from {ip} table {table}")
        ip_cmds.append(f"rule add from {ip} table {table} priority {table}")
    routes = [r for r in state["routes"] if str(r.get("table")) == str(table)]
    pool = p["rail_pool"]
    if fresh or not any(
        r.get("dst") == pool and r.get("gateway") == gw and r.get("dev") == bond for r in routes
    ):
        reasons.append(f"route {pool} via {gw} dev {bond} table {table}")
        ip_cmds.append(f"route replace {pool} via {gw} dev {bond} table {table}")
    has_clsact = bond in state["clsact"] and not fresh
    if p["arp_on_both_ports"]:
        want = [("arp", [("Mirror", ports[0]), ("Redirect", ports[1])])]
        current = [] if fresh else parse_tc_filters(state["filters"].get(bond, ""))
        if not has_clsact:
            reasons.append(f"{bond}: clsact qdisc")
            tc_cmds.append(f"qdisc add dev {bond} clsact")
        if current != want:
            if current:
                tc_cmds.append(f"filter del dev {bond} egress")
            reasons.append(f"{bond}: ARP out of both ports ({ports[0]} mirror, {ports[1]})")
            tc_cmds.append(arp_filter_cmd(bond, ports[0], ports[1]))
    elif has_clsact:
        reasons.append(f"{bond}: remove clsact (ARP mirroring is for dual-ARP only)")
        tc_cmds.append(f"qdisc del dev {bond} clsact")
    ping = keepalive_argv(nic, int(p["arp_keepalive_s"]))
    start_ping = ping not in state["pings"]
    if start_ping:
        reasons.append(f"keep-alive {' '.join(ping)}")
    return {
        "ip": ip_cmds,
        "tc": tc_cmds,
        "ping": ping if start_ping else None,
        "why": reasons,
        "independent_after": independent_after,
    }


COUPLED_RUNNING = "coupled (a running bond changes at the next boot: the bond must be down)"


def lacp_control_text(value: int | None) -> str:
    """What a LACP bond's coupled_control means for the operator."""
    if value == 0:
        return INDEPENDENT
    return COUPLED if value is None else COUPLED_RUNNING


# -- RoCE host settings ---------------------------------------------------------------------
def _pfc_mask(prios: list[int]) -> str:
    return ",".join("1" if i in prios else "0" for i in range(8))


def roce_port(run: Run, port: str, roce: dict[str, Any], check: bool) -> dict[str, Any]:
    """Trust DSCP and PFC on the lossless priorities with the first tool that supports the port.

    mlnx_qos's default DSCP->priority map (DSCP >> 3) already puts DSCP 24-31 on 3 and
    32-39 on 4, as the switches do; `dcb` sets the DSCP app entries explicitly.
    """
    prios = [int(x) for x in roce.get("pfc_priorities", [])]
    tried: list[str] = []
    if shutil.which("mlnx_qos"):
        rc, out, err = run(["mlnx_qos", "-i", port])
        if rc == 0:
            trust_ok = re.search(r"Priority trust state:\s*dscp", out) is not None
            enabled = re.search(r"enabled\s+((?:\d\s+){7}\d)", out)
            pfc_ok = enabled is not None and enabled.group(1).split() == _pfc_mask(prios).split(",")
            if trust_ok and pfc_ok:
                return {"port": port, "tool": "mlnx_qos", "changed": False}
            cmd = ["mlnx_qos", "-i", port, "--trust", "dscp", "--pfc", _pfc_mask(prios)]
            if not check:
                rc, _, err = run(cmd)
                if rc != 0:
                    raise RuntimeError(f"{' '.join(cmd)}: {err.strip()}")
            return {"port": port, "tool": "mlnx_qos", "changed": True, "commands": [cmd]}
        tried.append(f"mlnx_qos: {err.strip() or 'no output'}")
    if shutil.which("dcb"):
        rc, out, err = run(["dcb", "-j", "pfc", "show", "dev", port])
        if rc == 0:
            data = json.loads(out or "{}")
            have = sorted(int(k) for k, v in data.get("prio_pfc", {}).items() if v)
            cmds: list[list[str]] = []
            if have != sorted(prios):
                flags = [f"{i}:{'on' if i in prios else 'off'}" for i in range(8)]
                cmds.append(["dcb", "pfc", "set", "dev", port, "prio-pfc", *flags])
            mapping = [f"{d}:{t}" for d, t in roce.get("dscp_to_prio", {}).items()]
            rc, out, _ = run(["dcb", "-j", "app", "show", "dev", port, "dscp-prio"])
            current = json.loads(out or "{}").get("dscp_prio", []) if rc == 0 else []
            have_map = {f"{e[0]}:{e[1]}" for e in current if isinstance(e, list) and len(e) == 2}
            if mapping and set(mapping) != have_map:
                cmds.append(["dcb", "app", "replace", "dev", port, "dscp-prio", *mapping])
            if not check:
                for cmd in cmds:
                    rc, _, err = run(cmd)
                    if rc != 0:
                        raise RuntimeError(f"{' '.join(cmd)}: {err.strip()}")
            return {"port": port, "tool": "dcb", "changed": bool(cmds), "commands": cmds}
        tried.append(f"dcb: {err.strip() or 'not supported'}")
    if shutil.which("lldptool"):
        rc, out, err = run(["lldptool", "-t", "-i", port, "-V", "PFC", "-c", "enabled"])
        if rc == 0:
            want = ",".join(str(x) for x in prios) or "none"
            if f"enabled={want}" in out.replace(" ", ""):
                return {"port": port, "tool": "lldptool", "changed": False}
            cmd = ["lldptool", "-T", "-i", port, "-V", "PFC", f"enabled={want}"]
            if not check:
                rc, _, err = run(cmd)
                if rc != 0:
                    raise RuntimeError(f"{' '.join(cmd)}: {err.strip()}")
            return {"port": port, "tool": "lldptool", "changed": True, "commands": [cmd]}
        tried.append(f"lldptool: {err.strip() or 'not supported'}")
    detail = "; ".join(tried) if tried else "none of mlnx_qos, dcb, lldptool is installed"
    return {
        "port": port,
        "tool": None,
        "changed": False,
        "skipped": f"RoCE host settings skipped on {port}: "
        f"no NIC QoS tooling supports it ({detail})",
    }


# -- verification ---------------------------------------------------------------------------
def _neigh_state(run: Run, bond: str, gateway: str) -> str:
    rc, out, _ = run(["ip", "-j", "neigh", "show", "dev", bond, "to", gateway])
    if rc != 0:
        return "?"
    entries = json.loads(out or "[]")
    return ",".join(entries[0].get("state", [])) if entries else "none"


def verify_nics(
    run: Run, p: dict[str, Any], sleep: Any = time.sleep, clock: Any = time.monotonic
) -> tuple[list[dict[str, Any]], float]:
    """Every check, repeated until all pass or ``settle_s`` has passed (the NICs' ARP
    keep-alives make the leaves learn them and advertise their /32s, LACP aggregates: right
    after a configure, peers answer only once the planes have converged). Returns the last
    checks and the seconds waited; a check still failing at the bound has failed."""
    start = clock()
    deadline = start + float(p.get("settle_s", 60))
    neighbour_timeout = float(p.get("neighbour_timeout", 12))
    while True:
        checks = verify_once(run, p, neighbour_timeout)
        if all(c["ok"] for c in checks) or clock() >= deadline:
            return checks, round(clock() - start, 1)
        neighbour_timeout = 2.0
        sleep(3.0)


def verify_once(run: Run, p: dict[str, Any], neighbour_timeout: float) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    state = read_state(run, p["nics"])
    links = state["links"]

    def add(nic: dict[str, Any], check: str, ok: bool, detail: str = "") -> None:
        checks.append({"bond": nic["bond"], "check": check, "ok": ok, "detail": detail})

    for nic in p["nics"]:
        bond = nic["bond"]
        plan = plan_nic(state, nic, p) if all(x in links for x in nic["ports"]) else None
        drift = "ports missing" if plan is None else "; ".join(plan["why"])
        add(nic, "configured as intended", plan is not None and not plan["why"], drift)
        aggregator = (
            links.get(bond, {}).get("linkinfo", {}).get("info_data", {}).get("ad_info", {})
        ).get("aggregator")
        for port in nic["ports"]:
            link = links.get(port, {})
            flags = link.get("flags", [])
            slave = link.get("linkinfo", {}).get("info_slave_data", {})
            carrier = "NO-CARRIER" not in flags and "LOWER_UP" in flags
            member = link.get("master") == bond and slave.get("mii_status") == "UP"
            add(nic, f"{port} carrier", carrier, ",".join(flags))
            add(nic, f"{port} bond member up", member, json.dumps(slave, sort_keys=True))
            if p["bond_options"].get("mode") == "802.3ad" and aggregator is not None:
                agg = slave.get("ad_aggregator_id")
                add(nic, f"{port} LACP aggregated", agg == aggregator, f"{agg} vs {aggregator}")
    deadline = time.monotonic() + neighbour_timeout
    pending = list(p["nics"])
    states: dict[str, str] = {}
    while pending:
        for nic in pending:
            states[nic["bond"]] = _neigh_state(run, nic["bond"], nic["gateway"])
        pending = [n for n in pending if states[n["bond"]] != "REACHABLE"]
        if not pending or time.monotonic() > deadline:
            break
        for nic in pending:  # traffic makes the kernel confirm a STALE/DELAY entry
            run(["ping", "-q", "-c", "1", "-W", "1", "-I", nic["ip"], nic["gateway"]])
        time.sleep(0.5)
    for nic in p["nics"]:
        state_ = states.get(nic["bond"], "?")
        add(nic, f"gateway {nic['gateway']} neighbour REACHABLE", state_ == "REACHABLE", state_)
    by_src = {nic["ip"]: nic for nic in p["nics"]}
    peers = list(p.get("peers", []))
    for start in range(0, len(peers), PING_PARALLEL):
        batch = peers[start : start + PING_PARALLEL]
        procs = [
            subprocess.Popen(
                ["ping", "-q", "-c", "3", "-i", "0.2", "-W", "2", "-I", peer["src"], peer["ip"]],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for peer in batch
        ]
        for peer, proc in zip(batch, procs):  # noqa: B905 (servers may run Python < 3.10)
            out, _ = proc.communicate(timeout=30)
            summary = next((x for x in out.splitlines() if "packets transmitted" in x), out)
            nic = by_src.get(peer["src"], {"bond": "?"})
            ok = proc.returncode == 0
            add(nic, f"peer {peer['server']} rail {peer['rail']} {peer['ip']} ping", ok, summary)
    return checks


# -- persistent configuration (systemd-networkd) ---------------------------------------------
# Bonds, ports, MTU, addresses, source-based rules and tables are systemd-networkd files
# (systemd.netdev(5), systemd.network(5): https://www.freedesktop.org/software/systemd/man/
# latest/systemd.netdev.html and .../systemd.network.html); netplan on Ubuntu renders to the
# same files. networkd cannot add a tc filter (ARP out of both ports, dual-ARP) nor run the ARP
# keep-alive: those, and the RoCE host settings, are in EXTRAS, applied at boot by the
# dpctl-gpu-nic.service oneshot after networkd. The hold (updelay 10 s) is networkd's
# UpDelaySec=. Where networkd does not run (the lab's servers are namespaces), apply_persistent
# reads these same files and programs the kernel with `ip -batch`/`tc -batch`.
NETWORK_DIR = "etc/systemd/network"
EXTRAS = "etc/dpctl/gpu-nic.json"
UNIT = "etc/systemd/system/dpctl-gpu-nic.service"
APPLIER = "usr/local/lib/dpctl/dpctl_gpu_nic.py"
FILE_PREFIX = "60-dpctl-"
NETDEV_BOND = {
    "mode": "Mode",
    "lacp_rate": "LACPTransmitRate",
    "xmit_hash_policy": "TransmitHashPolicy",
    "miimon": "MIIMonitorSec",
    "updelay": "UpDelaySec",
}
MS_KEYS = ("miimon", "updelay")
HEADER = "# Written by dpctl hosts configure; edits are replaced on the next run.\n"


def _ini(sections: list[tuple[str, list[tuple[str, Any]]]]) -> str:
    blocks = [f"[{name}]\n" + "".join(f"{k}={v}\n" for k, v in items) for name, items in sections]
    return HEADER + "\n".join(blocks)


def parse_ini(text: str) -> list[tuple[str, dict[str, str]]]:
    """networkd's unit-file syntax, sections in order (repeatable, e.g. several [Route])."""
    sections: list[tuple[str, dict[str, str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1], {}))
        elif "=" in line and sections:
            key, value = line.split("=", 1)
            sections[-1][1][key.strip()] = value.strip()
        else:
            raise ValueError(f"not a networkd line: {raw!r}")
    return sections


def render_persistent(p: dict[str, Any]) -> dict[str, str]:
    """Relative path under the config root -> content (pure)."""
    files: dict[str, str] = {}
    options = p["bond_options"]
    bond_items = [
        (NETDEV_BOND[k], f"{v}ms" if k in MS_KEYS else v)
        for k, v in options.items()
        if k in NETDEV_BOND
    ]
    extras_nics = []
    for nic in p["nics"]:
        bond, mtu = nic["bond"], p["mtu"]
        files[f"{NETWORK_DIR}/{FILE_PREFIX}{bond}.netdev"] = _ini(
            [
                ("NetDev", [("Name", bond), ("Kind", "bond"), ("MTUBytes", mtu)]),
                ("Bond", bond_items),
            ]
        )
        for port in nic["ports"]:
            files[f"{NETWORK_DIR}/{FILE_PREFIX}{port}.network"] = _ini(
                [
                    ("Match", [("Name", port)]),
                    ("Link", [("MTUBytes", mtu)]),
                    ("Network", [("Bond", bond)]),
                ]
            )
        table = int(nic["table"])
        files[f"{NETWORK_DIR}/{FILE_PREFIX}{bond}.network"] = _ini(
            [
                ("Match", [("Name", bond)]),
                ("Link", [("MTUBytes", mtu)]),
                (
                    "Network",
                    [
                        ("Address", f"{nic['ip']}/{nic['prefixlen']}"),
                        ("ConfigureWithoutCarrier", "yes"),
                    ],
                ),
                (
                    "Route",
                    [
                        ("Destination", p["rail_pool"]),
                        ("Gateway", nic["gateway"]),
                        ("Table", table),
                    ],
                ),
                (
                    "RoutingPolicyRule",
                    [("From", f"{nic['ip']}/32"), ("Table", table), ("Priority", table)],
                ),
            ]
        )
        extras_nics.append({"bond": bond, "ports": list(nic["ports"])})
    extras = {
        "format": 1,
        "nics": extras_nics,
        "arp_on_both_ports": bool(p["arp_on_both_ports"]),
        "arp_keepalive_s": int(p["arp_keepalive_s"]),
        "roce": p.get("roce") or {},
    }
    files[EXTRAS] = json.dumps(extras, indent=2, sort_keys=True) + "\n"
    if p.get("applier"):
        # this module's own source, as the boot unit's ExecStart: given by the role (read on
        # the controller), written here; two generic file/copy tasks cost ~80 s per run in
        # the lab's emulated guest, this costs nothing more than the files next to it
        files[APPLIER] = p["applier"]
    files[UNIT] = (
        HEADER + "[Unit]\nDescription=dpctl GPU NICs: ARP out of both ports, ARP keep-alive, RoCE\n"
        "After=systemd-networkd.service network-online.target\nWants=network-online.target\n\n"
        "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/usr/bin/python3 /{APPLIER} --apply-persistent /\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )
    return files


def _one(sections: list[tuple[str, dict[str, str]]], name: str, path: str) -> dict[str, str]:
    found = [body for sec, body in sections if sec == name]
    if len(found) != 1:
        raise ValueError(f"{path}: expected one [{name}] section, found {len(found)}")
    return found[0]


def _ms(value: str) -> int:
    return int(value[:-2]) if value.endswith("ms") else int(float(value.rstrip("s")) * 1000)


def params_from_persistent(files: dict[str, str]) -> dict[str, Any]:
    """The module's parameters back from the persistent files (pure): what the applier
    programs is exactly what networkd would, plus the extras."""
    extras = json.loads(files[EXTRAS])
    bonds: dict[str, dict[str, Any]] = {}
    members: dict[str, list[str]] = {}
    options: dict[str, Any] | None = None
    mtu = None
    pool = None
    for path, text in sorted(files.items()):
        if not path.startswith(f"{NETWORK_DIR}/{FILE_PREFIX}"):
            continue
        sections = parse_ini(text)
        if path.endswith(".netdev"):
            netdev = _one(sections, "NetDev", path)
            keys = {v: k for k, v in NETDEV_BOND.items()}
            opts = {
                keys[k]: (_ms(v) if keys[k] in MS_KEYS else v)
                for k, v in _one(sections, "Bond", path).items()
            }
            if options is not None and opts != options:
                raise ValueError(f"{path}: bond options differ from the other bonds")
            options, mtu = opts, int(netdev["MTUBytes"])
            bonds.setdefault(netdev["Name"], {})
            continue
        name = _one(sections, "Match", path)["Name"]
        network = _one(sections, "Network", path)
        if "Bond" in network:
            members.setdefault(network["Bond"], []).append(name)
            continue
        ip, plen = network["Address"].split("/")
        route = _one(sections, "Route", path)
        rule = _one(sections, "RoutingPolicyRule", path)
        if rule["From"] != f"{ip}/32" or rule["Table"] != route["Table"]:
            raise ValueError(f"{path}: the rule must select the route's table from {ip}/32")
        pool = route["Destination"]
        bonds.setdefault(name, {}).update(
            ip=ip, prefixlen=int(plen), gateway=route["Gateway"], table=int(route["Table"])
        )
    order = {n["bond"]: n["ports"] for n in extras["nics"]}
    nics = []
    for bond in sorted(bonds):
        info = bonds[bond]
        ports = members.get(bond, [])
        if sorted(ports) != sorted(order.get(bond, [])) or "ip" not in info:
            raise ValueError(f"{bond}: ports or address missing from the persistent config")
        nics.append({"bond": bond, "ports": order[bond], **info})
    return {
        "nics": nics,
        "bond_options": options or {},
        "mtu": mtu,
        "rail_pool": pool,
        "arp_on_both_ports": extras["arp_on_both_ports"],
        "arp_keepalive_s": extras["arp_keepalive_s"],
        "roce": extras.get("roce") or {},
    }


def read_persistent(root: str) -> dict[str, str]:
    files: dict[str, str] = {}
    folder = os.path.join(root, NETWORK_DIR)
    if os.path.isdir(folder):
        for name in os.listdir(folder):
            if name.startswith(FILE_PREFIX):
                with open(os.path.join(folder, name)) as fh:
                    files[f"{NETWORK_DIR}/{name}"] = fh.read()
    for rel in (EXTRAS, UNIT, APPLIER):
        path = os.path.join(root, rel)
        if os.path.exists(path):
            with open(path) as fh:
                files[rel] = fh.read()
    return files


def persist(root: str, want: dict[str, str], check: bool) -> list[str]:
    """Write the files that differ, remove our stale ones; returns what changed."""
    have = read_persistent(root)
    changed = sorted(rel for rel, text in want.items() if have.get(rel) != text)
    # the applier stays when not given (a run of the module alone, without the role)
    stale = sorted(rel for rel in have if rel not in want and rel != APPLIER)
    if not check:
        for rel in changed:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = path + ".dpctl-tmp"
            with open(tmp, "w") as fh:
                fh.write(want[rel])
            if rel == APPLIER:
                os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        for rel in stale:
            os.unlink(os.path.join(root, rel))
    return [f"persistent {rel}" for rel in changed] + [f"remove stale {rel}" for rel in stale]


def networkd_runs(root: str) -> bool:
    """systemd-networkd manages this server's links (then it applies the files itself)."""
    return (
        os.path.realpath(root) == "/"
        and os.path.isdir("/run/systemd/netif")
        and shutil.which("networkctl") is not None
    )


def apply_persistent(
    run: Run, root: str, control: Any = read_coupled_control, set_control: Any = None
) -> dict[str, Any]:
    """What a boot does: the persistent files, and nothing else, programmed into the kernel
    (networkd reads its own files when it runs; the extras are applied here in both cases).

    networkd has no setting for LACP independent control and creates the bonds before this
    runs, so a LACP bond that exists with coupled control is taken down, set and brought up
    here (at boot, before any workload); configure then restores what going down removed
    (routes through the bond)."""
    files = read_persistent(root)
    if EXTRAS not in files:
        raise RuntimeError(f"no persistent GPU NIC configuration under {root}")
    p = params_from_persistent(files)
    if networkd_runs(root):
        networkd_reload(run, [n["bond"] for n in p["nics"]])
    coupled = read_state(run, p["nics"], control)["coupled"]
    for bond in sorted(b for b, value in coupled.items() if value == 1):
        bounce_independent(run, bond, set_control or set_coupled_control)
    return configure(run, p, check=False, control=control, set_control=set_control)


def bounce_independent(run: Run, bond: str, set_control: Any) -> None:
    """Down, coupled_control 0, up: what changing the control of an existing bond takes."""
    _link_set(run, bond, "down")
    set_control(bond)
    _link_set(run, bond, "up")


def _link_set(run: Run, link: str, state: str) -> None:
    rc, _, err = run(["ip", "link", "set", link, state])
    if rc != 0:
        raise RuntimeError(f"ip link set {link} {state}: {err.strip()}")


# -- applying ---------------------------------------------------------------------------
def apply_plan(run: Run, bond: str, plan: dict[str, Any], set_control: Any = None) -> None:
    cut = plan.get("independent_after")
    batches = [plan["ip"]] if cut is None else [plan["ip"][:cut], plan["ip"][cut:]]
    for number, batch in enumerate(batches):
        if number == 1:  # the bond was just created, still down
            (set_control or set_coupled_control)(bond)
        if not batch:
            continue
        rc, _, err = run(["ip", "-batch", "-"], "\n".join(batch) + "\n")
        if rc != 0:
            raise RuntimeError(f"ip -batch failed: {err.strip()}")
    if plan["tc"]:
        rc, _, err = run(["tc", "-batch", "-"], "\n".join(plan["tc"]) + "\n")
        if rc != 0:
            raise RuntimeError(f"tc -batch failed: {err.strip()}")
    if plan["ping"]:
        subprocess.Popen(
            ["setsid", "-f", *plan["ping"]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        ).wait()


APPLY_SETTLE_S = 10.0
"""How long configure waits for what it applied to read back (a started keep-alive shows as
`ping` only once setsid's child has exec'd: 0.2 s was not always enough on a loaded server)."""


def wait_applied(
    run: Run,
    p: dict[str, Any],
    sleep: Any = time.sleep,
    clock: Any = time.monotonic,
    control: Any = read_coupled_control,
) -> dict[str, list[str]]:
    """What is still not as intended after applying, once it reads back or after
    APPLY_SETTLE_S (then the leftovers, an error); nothing is applied again meanwhile."""
    deadline = clock() + APPLY_SETTLE_S
    while True:
        sleep(0.2)
        state = read_state(run, p["nics"], control)
        left = {n["bond"]: plan_nic(state, n, p)["why"] for n in p["nics"]}
        left = {b: w for b, w in left.items() if w}
        if not left or clock() >= deadline:
            return left


def networkd_reload(run: Run, bonds: list[str]) -> None:
    for argv in (["networkctl", "reload"], ["networkctl", "reconfigure", *bonds]):
        rc, _, err = run(argv)
        if rc != 0:
            raise RuntimeError(f"{' '.join(argv)}: {err.strip()}")


def configure(
    run: Run,
    p: dict[str, Any],
    check: bool,
    root: str | None = None,
    control: Any = read_coupled_control,
    set_control: Any = None,
) -> dict[str, Any]:
    """With ``root``, the persistent files are written first and what is applied is read
    back from them (so the runtime state is exactly what the next boot will build).

    A LACP bond this creates gets independent control while it is still down; a running
    one keeps what it has (changing it takes the bond down) and is reported, to change at
    the next boot (``apply_persistent``)."""
    persisted: list[str] = []
    if root is not None:
        persisted = persist(root, render_persistent(p), check)
        if not check:
            if persisted and networkd_runs(root):
                networkd_reload(run, [n["bond"] for n in p["nics"]])
            p = {**p, **params_from_persistent(read_persistent(root))}
    state = read_state(run, p["nics"], control)
    plans = {nic["bond"]: plan_nic(state, nic, p) for nic in p["nics"]}
    changed = any(pl["why"] for pl in plans.values())
    lacp = {
        bond: f"{INDEPENDENT} (on creation)"
        if pl["independent_after"] is not None
        else lacp_control_text(state["coupled"].get(bond))
        for bond, pl in plans.items()
        if pl["independent_after"] is not None or bond in state["coupled"]
    }
    if not check:
        for bond, plan in plans.items():
            apply_plan(run, bond, plan, set_control)
        if changed:
            left = wait_applied(run, p, control=control)
            if left:
                raise RuntimeError(f"did not converge: {json.dumps(left, sort_keys=True)}")
            lacp = {bond: lacp_control_text(control(bond)) for bond in lacp}
    roce = p.get("roce") or {}
    roce_results = []
    skipped: list[str] = []
    if roce.get("enabled"):
        for nic in p["nics"]:
            for port in nic["ports"]:
                res = roce_port(run, port, roce, check)
                roce_results.append(res)
                if res.get("skipped"):
                    skipped.append(res["skipped"])
    changed = changed or bool(persisted) or any(r["changed"] for r in roce_results)
    return {
        "changed": changed,
        "persistent": persisted,
        "nics": {b: {"commands": pl["ip"] + pl["tc"], "why": pl["why"]} for b, pl in plans.items()},
        "keepalives_started": [" ".join(pl["ping"]) for pl in plans.values() if pl["ping"]],
        "roce": roce_results,
        "roce_skipped": skipped,
        "lacp_control": lacp,
    }


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "choices": ["configure", "verify"], "default": "configure"},
            "nics": {"type": "list", "elements": "dict", "required": True},
            "bond_options": {"type": "dict", "required": True},
            "arp_on_both_ports": {"type": "bool", "default": False},
            "rail_pool": {"type": "str", "required": True},
            "mtu": {"type": "int", "default": 9000},
            "arp_keepalive_s": {"type": "int", "default": 2},
            "roce": {"type": "dict", "default": {}},
            "rails": {"type": "dict", "default": {}},
            "rail_members": {"type": "dict", "default": {}},
            "neighbour_timeout": {"type": "float", "default": 12.0},
            "settle_s": {"type": "float", "default": 60.0},
            "config_root": {"type": "str", "default": "/"},
            "persistent": {"type": "bool", "default": True},
            # its own source (~35 kB): kept out of the run's logged events
            "applier": {"type": "str", "default": "", "no_log": True},
        },
        supports_check_mode=True,
    )
    p = dict(module.params)
    try:
        p["nics"] = expand_nics(p["nics"], p["rails"])
        if p["action"] == "verify":
            p["peers"] = peers_of(p["nics"], p["rail_members"])
            checks, waited = verify_nics(run_cmd, p)
            failed = [c for c in checks if not c["ok"]]
            msg = (
                f"{len(checks) - len(failed)}/{len(checks)} checks passed ({waited} s)"
                if not failed
                else f"failed after waiting {waited} s for convergence: "
                + "; ".join(f"{c['bond']} {c['check']} ({c['detail']})" for c in failed)
            )
            module.exit_json(
                changed=False, failed=bool(failed), checks=checks, msg=msg, waited_s=waited
            )
        root = p["config_root"] if p["persistent"] else None
        result = configure(run_cmd, p, module.check_mode, root)
        msg = "; ".join(result["roce_skipped"]) or "configured"
        module.exit_json(msg=msg, **result)
    except (RuntimeError, ValueError, OSError) as exc:
        module.fail_json(msg=str(exc))


def boot_main(argv: list[str]) -> int:
    """`dpctl_gpu_nic.py --apply-persistent ROOT`: the boot-time applier (the unit's
    ExecStart on a server; run by hand, or by the lab, where networkd does not run)."""
    try:
        result = apply_persistent(run_cmd, argv[0] if argv else "/")
    except (RuntimeError, ValueError, OSError, KeyError) as exc:
        print(f"dpctl-gpu-nic: {exc}", file=sys.stderr)
        return 1
    keys = ("changed", "nics", "lacp_control")
    print(json.dumps({key: result[key] for key in keys}, sort_keys=True))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--apply-persistent":
        sys.exit(boot_main(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "--lacp-independent":
        sys.exit(lacp_independent_main(sys.argv[2:]))
    main()
