"""Secrets out of a configuration (NAPALM's ``get_config(sanitized=True)``).

NAPALM's meaning: the configuration as it is, each secret replaced by ``<removed>`` (the
placeholder NAPALM's own drivers write, ``napalm.base.constants.CISCO_SANITIZE_FILTERS``).
The text filters are applied with NAPALM's own ``napalm.base.helpers.sanitize_config``.

What is removed, per syntax:

- FRR (every platform's routing configuration): the vtysh ``password`` / ``enable password``
  lines, ``neighbor X password`` (bgpd, ldpd), ``ip ospf authentication-key``, ``ip ospf
  message-digest-key N md5``, ``ipv6 ospf6 authentication ... key``, ``isis password``,
  ``area-password``, ``domain-password``, ``ip rip authentication string``, key chains'
  ``key-string``. (FRR 8.4's command forms: bgpd/bgp_vty.c, ospfd/ospf_vty.c, isisd,
  ripd, lib/keychain.c.)
- AsterNOS's klish running-config (Cisco-like): FRR's list plus NAPALM's Cisco filters
  (``snmp-server community``, ``snmp-server host ... <community>``, ``username ... password``,
  ``tacacs-server key``, ``radius-server key`` ...).
- SONiC's CONFIG_DB (JSON): the keys of ``SNMP_COMMUNITY`` (the community strings are the
  keys), and every field whose name holds ``password``, ``passkey`` or ``secret`` or ends in
  ``_cak`` (``TACPLUS|global`` / ``TACPLUS_SERVER`` / ``RADIUS`` ``passkey``: sonic-utilities
  config/aaa.py; ``SNMP_USER_AUTH_PASSWORD`` / ``SNMP_USER_ENCRYPTION_PASSWORD``:
  config/main.py ``add_user``; MACsec profiles' ``primary_cak`` / ``fallback_cak``).

A sanitized text is for reading only: ``DpctlOps.restore_config`` refuses one
(:func:`is_sanitized`), so a deploy's backup (``get_config()``, never sanitized) is the only
thing a rollback restores.
"""

from __future__ import annotations

import json
import re
from typing import Any

from napalm.base.constants import CISCO_SANITIZE_FILTERS
from napalm.base.helpers import sanitize_config

REMOVED = "<removed>"

FRR_FILTERS: dict[str, str] = {
    r"^((?:enable )?password)( \d)? \S.*$": rf"\1 {REMOVED}",
    r"^(\s+neighbor \S+ password) .+$": rf"\1 {REMOVED}",
    r"^(\s+ip ospf authentication-key) .+$": rf"\1 {REMOVED}",
    r"^(\s+ip ospf message-digest-key \d+ md5) .+$": rf"\1 {REMOVED}",
    r"^(\s+ipv6 ospf6 authentication key-id \d+ hash-algo \S+ key) .+$": rf"\1 {REMOVED}",
    r"^(\s+isis password (?:clear|md5)) \S+(.*)$": rf"\1 {REMOVED}\2",
    r"^(\s+(?:area|domain)-password (?:clear|md5)) \S+(.*)$": rf"\1 {REMOVED}\2",
    r"^(\s+ip rip authentication string) .+$": rf"\1 {REMOVED}",
    r"^(\s+key-string) .+$": rf"\1 {REMOVED}",
}
"""FRR's secrets (regex -> replacement, applied per line as NAPALM's drivers do)."""

KLISH_FILTERS: dict[str, str] = {
    **CISCO_SANITIZE_FILTERS,
    **FRR_FILTERS,
    r"^(\s*(?:tacacs|radius)-server (?:.+ )?key) .+$": rf"\1 {REMOVED}",
}
"""AsterNOS's klish running-config: NAPALM's Cisco filters and FRR's."""

_SECRET_FIELD = re.compile(r"password|passkey|secret|_cak$", re.IGNORECASE)
_MARK = re.compile(r"(?:^|[\s\"])" + re.escape(REMOVED) + r"(?:[\s\":]|$)", re.MULTILINE)


def frr_text(text: str) -> str:
    """FRR configuration text with its secrets removed."""
    return str(sanitize_config(text, FRR_FILTERS))


def klish_text(text: str) -> str:
    """An AsterNOS klish configuration with its secrets removed."""
    return str(sanitize_config(text, KLISH_FILTERS))


def _fields(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    return {
        name: REMOVED if _SECRET_FIELD.search(str(name)) and value else value
        for name, value in entry.items()
    }


def config_db(data: dict[str, Any]) -> dict[str, Any]:
    """A CONFIG_DB (as ``show runningconfiguration all`` gives it) with its secrets removed."""
    result: dict[str, Any] = {}
    for table, entries in data.items():
        if not isinstance(entries, dict):
            result[table] = entries
        elif table == "SNMP_COMMUNITY":
            result[table] = {
                REMOVED if index == 0 else f"{REMOVED}:{index + 1}": _fields(fields)
                for index, fields in enumerate(entries.values())
            }
        else:
            result[table] = {key: _fields(fields) for key, fields in entries.items()}
    return result


def config_db_text(text: str) -> str:
    """CONFIG_DB JSON text with its secrets removed (same layout: 4 spaces, sorted keys)."""
    return json.dumps(config_db(json.loads(text)), indent=4, sort_keys=True) + "\n"


def is_sanitized(text: str) -> bool:
    """Whether ``text`` holds the placeholder a sanitized configuration has."""
    return bool(_MARK.search(text))
