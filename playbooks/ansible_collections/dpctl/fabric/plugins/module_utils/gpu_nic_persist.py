"""A GPU server's persistent network configuration (dpctl_gpu_nic): render, read, write.

Bonds, ports, MTU, addresses, source-based rules and tables are systemd-networkd files
(systemd.netdev(5), systemd.network(5): https://www.freedesktop.org/software/systemd/man/
latest/systemd.netdev.html and .../systemd.network.html); netplan on Ubuntu renders to the
same files. networkd cannot add a tc filter (ARP out of both ports, dual-ARP) nor run the ARP
keep-alive: those, and the RoCE host settings, are in EXTRAS, applied at boot by the
dpctl-gpu-nic.service oneshot after networkd. The hold (updelay 10 s) is networkd's
UpDelaySec=. Where networkd does not run (the lab's servers are namespaces), apply_persistent
reads these same files and programs the kernel with `ip -batch`/`tc -batch`.

The oneshot's applier is the module itself (APPLIER) with the module_utils it imports next to
it, under their import path (APPLIER_DIR/ansible_collections/...): Python puts a script's
folder first on sys.path, so the copy runs as `python3 APPLIER --apply-persistent /` without
Ansible on the server.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

NETWORK_DIR = "etc/systemd/network"
EXTRAS = "etc/dpctl/gpu-nic.json"
UNIT = "etc/systemd/system/dpctl-gpu-nic.service"
APPLIER_DIR = "usr/local/lib/dpctl"
APPLIER = f"{APPLIER_DIR}/dpctl_gpu_nic.py"
UTILS_PACKAGE = "ansible_collections.dpctl.fabric.plugins.module_utils"
APPLIER_UTILS = (
    "gpu_nic_apply",
    "gpu_nic_netlink",
    "gpu_nic_persist",
    "gpu_nic_plan",
    "gpu_nic_roce",
    "gpu_nic_script",
    "gpu_nic_state",
    "gpu_nic_verify",
)
"""The module_utils dpctl_gpu_nic imports (a unit test holds this to its imports)."""
APPLIER_TREE = f"{APPLIER_DIR}/ansible_collections"
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


def applier_utils() -> dict[str, str]:
    """Path relative to the module's folder -> source, for the module_utils it imports, read
    through their importers: from AnsiballZ's payload on a server (which holds them byte for
    byte), from the collection's files on the controller. ``ansible_collections`` gets an
    empty ``__init__.py``: a regular package first on sys.path, so no other
    ``ansible_collections`` on the server can take its place."""
    files = {"ansible_collections/__init__.py": ""}
    for name in APPLIER_UTILS:
        module = importlib.import_module(f"{UTILS_PACKAGE}.{name}")
        source = module.__loader__.get_source(module.__name__)
        files[f"{UTILS_PACKAGE.replace('.', '/')}/{name}.py"] = source
    return files


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
    """Relative path under the config root -> content (pure but for the applier's
    module_utils, read from their importers)."""
    files: dict[str, str] = {}
    bond_items = [
        (NETDEV_BOND[k], f"{v}ms" if k in MS_KEYS else v)
        for k, v in p["bond_options"].items()
        if k in NETDEV_BOND
    ]
    for nic in p["nics"]:
        files.update(_nic_files(nic, p, bond_items))
    extras = {
        "format": 1,
        "nics": [{"bond": nic["bond"], "ports": list(nic["ports"])} for nic in p["nics"]],
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
        files.update({f"{APPLIER_DIR}/{rel}": src for rel, src in applier_utils().items()})
    files[UNIT] = (
        HEADER + "[Unit]\nDescription=dpctl GPU NICs: ARP out of both ports, ARP keep-alive, RoCE\n"
        "After=systemd-networkd.service network-online.target\nWants=network-online.target\n\n"
        "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/usr/bin/python3 /{APPLIER} --apply-persistent /\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )
    return files


def _nic_files(
    nic: dict[str, Any], p: dict[str, Any], bond_items: list[tuple[str, Any]]
) -> dict[str, str]:
    """One NIC's .netdev (its bond), its ports' .network and its bond's .network."""
    bond, mtu, table = nic["bond"], p["mtu"], int(nic["table"])
    files = {
        f"{NETWORK_DIR}/{FILE_PREFIX}{bond}.netdev": _ini(
            [
                ("NetDev", [("Name", bond), ("Kind", "bond"), ("MTUBytes", mtu)]),
                ("Bond", bond_items),
            ]
        )
    }
    for port in nic["ports"]:
        files[f"{NETWORK_DIR}/{FILE_PREFIX}{port}.network"] = _ini(
            [
                ("Match", [("Name", port)]),
                ("Link", [("MTUBytes", mtu)]),
                ("Network", [("Bond", bond)]),
            ]
        )
    address = [("Address", f"{nic['ip']}/{nic['prefixlen']}"), ("ConfigureWithoutCarrier", "yes")]
    route = [("Destination", p["rail_pool"]), ("Gateway", nic["gateway"]), ("Table", table)]
    rule = [("From", f"{nic['ip']}/32"), ("Table", table), ("Priority", table)]
    files[f"{NETWORK_DIR}/{FILE_PREFIX}{bond}.network"] = _ini(
        [
            ("Match", [("Name", bond)]),
            ("Link", [("MTUBytes", mtu)]),
            ("Network", address),
            ("Route", route),
            ("RoutingPolicyRule", rule),
        ]
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
    found: dict[str, Any] = {"bonds": {}, "members": {}, "options": None, "mtu": None}
    found["pool"] = None
    for path, text in sorted(files.items()):
        if not path.startswith(f"{NETWORK_DIR}/{FILE_PREFIX}"):
            continue
        if path.endswith(".netdev"):
            _read_netdev(parse_ini(text), path, found)
        else:
            _read_network(parse_ini(text), path, found)
    order = {n["bond"]: n["ports"] for n in extras["nics"]}
    nics = []
    for bond in sorted(found["bonds"]):
        info = found["bonds"][bond]
        ports = found["members"].get(bond, [])
        if sorted(ports) != sorted(order.get(bond, [])) or "ip" not in info:
            raise ValueError(f"{bond}: ports or address missing from the persistent config")
        nics.append({"bond": bond, "ports": order[bond], **info})
    return {
        "nics": nics,
        "bond_options": found["options"] or {},
        "mtu": found["mtu"],
        "rail_pool": found["pool"],
        "arp_on_both_ports": extras["arp_on_both_ports"],
        "arp_keepalive_s": extras["arp_keepalive_s"],
        "roce": extras.get("roce") or {},
    }


def _read_netdev(
    sections: list[tuple[str, dict[str, str]]], path: str, found: dict[str, Any]
) -> None:
    """A bond's .netdev: its options (the same on every bond) and MTU."""
    netdev = _one(sections, "NetDev", path)
    keys = {v: k for k, v in NETDEV_BOND.items()}
    opts = {
        keys[k]: (_ms(v) if keys[k] in MS_KEYS else v)
        for k, v in _one(sections, "Bond", path).items()
    }
    if found["options"] is not None and opts != found["options"]:
        raise ValueError(f"{path}: bond options differ from the other bonds")
    found["options"], found["mtu"] = opts, int(netdev["MTUBytes"])
    found["bonds"].setdefault(netdev["Name"], {})


def _read_network(
    sections: list[tuple[str, dict[str, str]]], path: str, found: dict[str, Any]
) -> None:
    """A port's .network (its bond) or a bond's (address, route, rule)."""
    name = _one(sections, "Match", path)["Name"]
    network = _one(sections, "Network", path)
    if "Bond" in network:
        found["members"].setdefault(network["Bond"], []).append(name)
        return
    ip, plen = network["Address"].split("/")
    route = _one(sections, "Route", path)
    rule = _one(sections, "RoutingPolicyRule", path)
    if rule["From"] != f"{ip}/32" or rule["Table"] != route["Table"]:
        raise ValueError(f"{path}: the rule must select the route's table from {ip}/32")
    found["pool"] = route["Destination"]
    found["bonds"].setdefault(name, {}).update(
        ip=ip, prefixlen=int(plen), gateway=route["Gateway"], table=int(route["Table"])
    )


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def read_persistent(root: str) -> dict[str, str]:
    """Our files under ``root``: networkd's, the extras, the unit, the applier and the
    module_utils next to it."""
    files: dict[str, str] = {}
    folder = os.path.join(root, NETWORK_DIR)
    if os.path.isdir(folder):
        for name in os.listdir(folder):
            if name.startswith(FILE_PREFIX):
                files[f"{NETWORK_DIR}/{name}"] = _read(os.path.join(folder, name))
    for rel in (EXTRAS, UNIT, APPLIER):
        path = os.path.join(root, rel)
        if os.path.exists(path):
            files[rel] = _read(path)
    for top, _dirs, names in os.walk(os.path.join(root, APPLIER_TREE)):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(top, name)
                files[os.path.relpath(path, root)] = _read(path)
    return files


def _applier_part(rel: str) -> bool:
    return rel == APPLIER or rel.startswith(f"{APPLIER_TREE}/")


def persist(root: str, want: dict[str, str], check: bool) -> list[str]:
    """Write the files that differ, remove our stale ones; returns what changed."""
    have = read_persistent(root)
    changed = sorted(rel for rel, text in want.items() if have.get(rel) != text)
    # the applier stays when not given (a run of the module alone, without the role)
    keep = APPLIER not in want
    stale = sorted(rel for rel in have if rel not in want and not (keep and _applier_part(rel)))
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
