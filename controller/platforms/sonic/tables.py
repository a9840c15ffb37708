"""The CONFIG_DB tables dpctl writes for community SONiC, and a fast structural checker.

The real check is ``controller.platforms.sonic.yang`` (SONiC's YANG models with libyang), run
on every render; this one stays as a cheap guard for tests that build documents by hand.

Each known table carries a short note of where its schema comes from (sonic-buildimage's
``src/sonic-yang-models`` YANG models and the HLDs in ``sonic-net/SONiC/doc``). The checker
is not a YANG validator: it catches the mistakes a renderer makes (a table name typo, a
key of the wrong shape, a PORT entry without lanes, a QoS map or profile referenced but not
defined, a VLAN member of a port that does not exist), fast enough to run in every test.
"""

from __future__ import annotations

import re
from typing import Any

KNOWN_TABLES: dict[str, str] = {
    "DEVICE_METADATA": "sonic-device_metadata.yang (localhost: hostname, hwsku, bgp_asn, "
    "docker_routing_config_mode, type)",
    "DEVICE_NEIGHBOR": "sonic-device_neighbor.yang (port -> peer name/port, from the cabling plan)",
    "PORT": "sonic-port.yang (lanes, speed in Mb/s, mtu, alias, admin_status, fec)",
    "BREAKOUT_CFG": "sonic-breakout_cfg.yang; Dynamic Port Breakout HLD (brkout_mode per port)",
    "INTERFACE": "sonic-interface.yang (ipv6_use_link_local_only for BGP unnumbered)",
    "LOOPBACK_INTERFACE": "sonic-loopback-interface.yang",
    "MGMT_INTERFACE": "sonic-mgmt_interface.yang (eth0|prefix: gwaddr)",
    "MGMT_PORT": "sonic-mgmt_port.yang",
    "VLAN": "sonic-vlan.yang",
    "VLAN_MEMBER": "sonic-vlan.yang (tagging_mode)",
    "VLAN_INTERFACE": "sonic-vlan.yang (proxy_arp; static_anycast_gateway from the SAG HLD)",
    "SAG": "sonic-static-anycast-gateway.yang (SAG|GLOBAL gateway_mac)",
    "PORTCHANNEL": "sonic-portchannel.yang (system_mac: EVPN Multihoming HLD)",
    "PORTCHANNEL_MEMBER": "sonic-portchannel.yang",
    "VXLAN_TUNNEL": "sonic-vxlan.yang (src_ip)",
    "VXLAN_TUNNEL_MAP": "sonic-vxlan.yang (vlan <-> vni)",
    "VXLAN_EVPN_NVO": "sonic-vxlan.yang (source_vtep)",
    "EVPN_ETHERNET_SEGMENT": "sonic-evpn.yang (esi AUTO with type TYPE_3_MAC_BASED, ifname, "
    "df_pref)",
    "EVPN_MH_GLOBAL": "sonic-evpn.yang (default: startup_delay)",
    "DSCP_TO_TC_MAP": "sonic-dscp-tc-map.yang",
    "TC_TO_QUEUE_MAP": "sonic-tc-queue-map.yang",
    "TC_TO_PRIORITY_GROUP_MAP": "sonic-tc-priority-group-map.yang",
    "MAP_PFC_PRIORITY_TO_QUEUE": "sonic-pfc-priority-queue-map.yang",
    "PORT_QOS_MAP": "sonic-port-qos-map.yang (pfc_enable, map names)",
    "WRED_PROFILE": "sonic-wred-profile.yang (ecn, green thresholds, drop probability)",
    "QUEUE": "sonic-queue.yang (port|queue: scheduler, wred_profile)",
    "SCHEDULER": "sonic-scheduler.yang (STRICT / DWRR)",
    "BUFFER_PROFILE": "sonic-buffer-profile.yang (pool, size, xon, xoff, dynamic_th)",
    "BUFFER_PG": "sonic-buffer-pg.yang (port|3-4: profile)",
    "CABLE_LENGTH": "sonic-cable-length.yang (AZURE: port -> <n>m)",
}

_ETH = r"Ethernet\d+"
_PO = r"PortChannel\d{1,4}"
_VLAN = r"Vlan\d{1,4}"
_NAME = r"[A-Za-z0-9_.-]+"
_V4P = r"\d{1,3}(\.\d{1,3}){3}/\d{1,2}"

KEY_SHAPES: dict[str, re.Pattern[str]] = {
    table: re.compile(f"^(?:{shape})$")
    for table, shape in {
        "DEVICE_METADATA": "localhost",
        "DEVICE_NEIGHBOR": _ETH,
        "PORT": _ETH,
        "BREAKOUT_CFG": _ETH,
        "INTERFACE": _ETH + f"(\\|{_V4P})?",
        "LOOPBACK_INTERFACE": r"Loopback\d+" + f"(\\|{_V4P})?",
        "MGMT_INTERFACE": r"eth\d+\|" + _V4P,
        "MGMT_PORT": r"eth\d+",
        "VLAN": _VLAN,
        "VLAN_MEMBER": f"{_VLAN}\\|({_ETH}|{_PO})",
        "VLAN_INTERFACE": _VLAN + f"(\\|{_V4P})?",
        "SAG": "GLOBAL",
        "PORTCHANNEL": _PO,
        "PORTCHANNEL_MEMBER": f"{_PO}\\|{_ETH}",
        "VXLAN_TUNNEL": _NAME,
        "VXLAN_TUNNEL_MAP": f"{_NAME}\\|{_NAME}",
        "VXLAN_EVPN_NVO": _NAME,
        "EVPN_ETHERNET_SEGMENT": _PO,
        "EVPN_MH_GLOBAL": "default",
        "DSCP_TO_TC_MAP": _NAME,
        "TC_TO_QUEUE_MAP": _NAME,
        "TC_TO_PRIORITY_GROUP_MAP": _NAME,
        "MAP_PFC_PRIORITY_TO_QUEUE": _NAME,
        "PORT_QOS_MAP": _ETH,
        "WRED_PROFILE": _NAME,
        "QUEUE": _ETH + r"\|\d(-\d)?",
        "SCHEDULER": _NAME,
        "BUFFER_PROFILE": _NAME,
        "BUFFER_PG": _ETH + r"\|\d(-\d)?",
        "CABLE_LENGTH": _NAME,
    }.items()
}

PORT_REQUIRED = ("lanes", "speed", "mtu", "alias", "admin_status")
LIST_FIELDS: set[tuple[str, str]] = set()

# table -> field -> table the value must name a key of
REFERENCES: dict[str, dict[str, str]] = {
    "PORT_QOS_MAP": {
        "dscp_to_tc_map": "DSCP_TO_TC_MAP",
        "tc_to_queue_map": "TC_TO_QUEUE_MAP",
        "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
        "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
    },
    "QUEUE": {"scheduler": "SCHEDULER", "wred_profile": "WRED_PROFILE"},
    "BUFFER_PG": {"profile": "BUFFER_PROFILE"},
}


def _check_port(key: str, entry: dict[str, Any]) -> list[str]:
    errors = [f"PORT|{key}: missing {f}" for f in PORT_REQUIRED if f not in entry]
    lanes = str(entry.get("lanes", ""))
    if lanes and not re.fullmatch(r"\d+(,\d+)*", lanes):
        errors.append(f"PORT|{key}: lanes {lanes!r} is not a comma-separated list of numbers")
    speed = str(entry.get("speed", ""))
    if speed and not (speed.isdigit() and int(speed) >= 1000):
        errors.append(f"PORT|{key}: speed {speed!r} is not in Mb/s")
    mtu = str(entry.get("mtu", ""))
    if mtu and not (mtu.isdigit() and 1280 <= int(mtu) <= 9216):
        errors.append(f"PORT|{key}: mtu {mtu!r} out of range")
    if entry.get("admin_status", "up") not in ("up", "down"):
        errors.append(f"PORT|{key}: admin_status must be up or down")
    return errors


def check_config_db(doc: dict[str, Any]) -> list[str]:
    """Problems in a CONFIG_DB document; [] when it looks loadable."""
    errors: list[str] = []
    for table, entries in doc.items():
        if table not in KNOWN_TABLES:
            errors.append(f"unknown table {table}")
            continue
        if not isinstance(entries, dict):
            errors.append(f"{table}: not an object")
            continue
        shape = KEY_SHAPES[table]
        for key, entry in entries.items():
            if not shape.match(key):
                errors.append(f"{table}|{key}: key does not match {shape.pattern}")
            if not isinstance(entry, dict):
                errors.append(f"{table}|{key}: entry is not an object")
                continue
            for field, value in entry.items():
                if (table, field) in LIST_FIELDS:
                    ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
                else:
                    ok = isinstance(value, str)
                if not ok:
                    errors.append(f"{table}|{key}: field {field} has a non-string value")
            if table == "PORT":
                errors += _check_port(key, entry)
    errors += _check_references(doc)
    return errors


def _check_references(doc: dict[str, Any]) -> list[str]:
    errors = []
    ports = set(doc.get("PORT", {}))
    lags = set(doc.get("PORTCHANNEL", {}))
    for table, fields in REFERENCES.items():
        for key, entry in doc.get(table, {}).items():
            for field, target in fields.items():
                if field in entry and entry[field] not in doc.get(target, {}):
                    errors.append(f"{table}|{key}: {field} {entry[field]!r} not in {target}")
    port_keyed = ("INTERFACE", "PORT_QOS_MAP", "QUEUE", "BUFFER_PG", "BREAKOUT_CFG")
    for table in port_keyed:
        for key in doc.get(table, {}):
            if key.split("|")[0] not in ports:
                errors.append(f"{table}|{key}: port not in PORT")
    for key in doc.get("VLAN_MEMBER", {}):
        vlan, member = key.split("|", 1)
        if vlan not in doc.get("VLAN", {}):
            errors.append(f"VLAN_MEMBER|{key}: {vlan} not in VLAN")
        if member not in ports and member not in lags:
            errors.append(f"VLAN_MEMBER|{key}: {member} not in PORT or PORTCHANNEL")
    for key in doc.get("PORTCHANNEL_MEMBER", {}):
        lag, member = key.split("|", 1)
        if lag not in lags or member not in ports:
            errors.append(f"PORTCHANNEL_MEMBER|{key}: unknown channel or port")
    for key in doc.get("EVPN_ETHERNET_SEGMENT", {}):
        if key not in lags:
            errors.append(f"EVPN_ETHERNET_SEGMENT|{key}: not in PORTCHANNEL")
    return errors
