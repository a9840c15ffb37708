"""NAPALM's standard getters from what SONiC's own tools print (SONiC and AsterNOS, which runs
SONiC underneath). Pure functions over the outputs; each shape is the one the tool's source
prints (sonic-utilities, branch 202405):

- ``portstat -a -j -r``: scripts/portstat (``-r`` raw counters, not relative to a user's
  ``sonic-clear counters``), utilities_common/portstat.py ``cnstat_print`` with
  ``header_all`` through utilities_common/netstat.py ``table_as_json``: port -> column ->
  string, numbers with thousands commas (``format_number_with_comma``), "N/A" where
  COUNTERS_DB lacks the counter.
- ``show mac``: scripts/fdbshow, a tabulate table ``No. Vlan MacAddress Port Type`` then
  ``Total number of entries N`` (tests/fdbshow_test.py ``show_mac_output``).
- ``sonic-cfggen -d --var-json TABLE``: a CONFIG_DB table as JSON (VLAN / VLAN_MEMBER,
  NTP_SERVER as config/main.py ``add_ntp_server`` writes it, SNMP ``LOCATION`` / ``CONTACT``
  and SNMP_COMMUNITY as config/main.py's ``snmp`` commands write them).
"""

from __future__ import annotations

import re
from typing import Any

from napalm.base import models
from napalm.base.helpers import mac as napalm_mac

PORTSTAT = "portstat -a -j -r"
SHOW_MAC = "show mac"
_MAC = re.compile(r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$")


def parse_table(text: str) -> list[dict[str, str]]:
    """A SONiC CLI table (header, dashed rule, rows; columns located by the rule's dashes)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if index and re.fullmatch(r"[-\s]+", line) and "-" in line:
            spans = [m.span() for m in re.finditer(r"-+", line)]
            header = lines[index - 1]
            break
    else:
        return []

    def cut(row: str) -> list[str]:
        cells = []
        for i, (start, end) in enumerate(spans):
            stop = spans[i + 1][0] if i + 1 < len(spans) else len(row)
            cells.append(row[start : max(end, stop)].strip())
        return cells

    names = cut(header)
    return [dict(zip(names, cut(row), strict=True)) for row in lines[index + 1 :] if row.strip()]


def _number(value: Any) -> int:
    text = str(value).replace(",", "").strip()
    return int(text) if text.isdigit() else -1


def interfaces_counters(data: dict[str, Any]) -> dict[str, models.InterfaceCounterDict]:
    """NAPALM ``get_interfaces_counters`` from ``portstat -a -j -r``: the ASIC's counters
    (SAI ``IF_IN_ERRORS`` / ``IF_IN_DISCARDS`` / ``IF_OUT_ERRORS`` / ``IF_OUT_DISCARDS``, what
    ``show interfaces counters`` shows), not the kernel's: SONiC's EthernetN netdevs count
    only what reaches the CPU. portstat's JSON has no octets and no unicast / multicast /
    broadcast split (its RX_OK/TX_OK are their sum): those are -1, as "N/A" counters are."""
    result: dict[str, models.InterfaceCounterDict] = {}
    for port, columns in data.items():
        if not isinstance(columns, dict):
            continue
        result[str(port)] = {
            "tx_errors": _number(columns.get("TX_ERR")),
            "rx_errors": _number(columns.get("RX_ERR")),
            "tx_discards": _number(columns.get("TX_DRP")),
            "rx_discards": _number(columns.get("RX_DRP")),
            "tx_octets": -1,
            "rx_octets": -1,
            "tx_unicast_packets": -1,
            "rx_unicast_packets": -1,
            "tx_multicast_packets": -1,
            "rx_multicast_packets": -1,
            "tx_broadcast_packets": -1,
            "rx_broadcast_packets": -1,
        }
    return result


def mac_address_table(text: str) -> list[models.MACAdressTable]:
    """NAPALM ``get_mac_address_table`` from ``show mac`` (the ASIC's FDB, ASIC_DB through
    fdbshow). fdbshow keeps no moves: -1 / -1.0."""
    result: list[models.MACAdressTable] = []
    for row in parse_table(text):
        mac, vlan = row.get("MacAddress", ""), row.get("Vlan", "")
        if not _MAC.match(mac) or not vlan.isdigit():
            continue
        result.append(
            {
                "mac": napalm_mac(mac),
                "interface": row.get("Port", ""),
                "vlan": int(vlan),
                "static": row.get("Type", "").lower() == "static",
                "active": True,
                "moves": -1,
                "last_move": -1.0,
            }
        )
    return result


def vlans(vlan: dict[str, Any], members: dict[str, Any]) -> dict[int, models.VlanDict]:
    """NAPALM ``get_vlans`` from CONFIG_DB's VLAN (``Vlan1001: {vlanid: "1001"}``) and
    VLAN_MEMBER (``Vlan1001|Ethernet0: {tagging_mode}``); the name is the VLAN's key."""
    result: dict[int, models.VlanDict] = {}
    for name, fields in vlan.items():
        vid = str(fields.get("vlanid", "") if isinstance(fields, dict) else "")
        vid = vid or str(name).removeprefix("Vlan")
        if vid.isdigit():
            result[int(vid)] = {"name": str(name), "interfaces": []}
    by_name = {entry["name"]: vid for vid, entry in result.items()}
    for key in members:
        name, _, port = str(key).partition("|")
        if name in by_name and port:
            result[by_name[name]]["interfaces"].append(port)
    return dict(sorted(result.items()))


def ntp_servers(table: dict[str, Any]) -> dict[str, models.NTPServerDict]:
    """NAPALM ``get_ntp_servers`` from CONFIG_DB's NTP_SERVER: the key is the server; the
    fields newer images set (``association_type``, ``iburst``, ``version``) where present."""
    result: dict[str, models.NTPServerDict] = {}
    for server, fields in table.items():
        fields = fields if isinstance(fields, dict) else {}
        entry: models.NTPServerDict = {"address": str(fields.get("resolve_as", server))}
        if fields.get("association_type"):
            entry["association_type"] = str(fields["association_type"]).upper()
        if "iburst" in fields:
            entry["iburst"] = str(fields["iburst"]).lower() == "on"
        if str(fields.get("version", "")).isdigit():
            entry["version"] = int(fields["version"])
        result[str(server)] = entry
    return result


def snmp_information(snmp: dict[str, Any], communities: dict[str, Any]) -> models.SNMPDict:
    """NAPALM ``get_snmp_information`` from CONFIG_DB: SNMP ``LOCATION`` (``Location``),
    ``CONTACT`` (``{name: email}``: "name email"), SNMP_COMMUNITY (``{community: {TYPE}}``;
    SONiC has no per-community ACL: "N/A"). No chassis id is configured on SONiC: ""."""
    contact = snmp.get("CONTACT") or {}
    name, email = next(iter(contact.items()), ("", ""))
    return {
        "chassis_id": "",
        "contact": f"{name} {email}".strip(),
        "location": str((snmp.get("LOCATION") or {}).get("Location", "")),
        "community": {
            str(community): {"acl": "N/A", "mode": str(fields.get("TYPE", "")).lower()}
            for community, fields in communities.items()
            if isinstance(fields, dict)
        },
    }
