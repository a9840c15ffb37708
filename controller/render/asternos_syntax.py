"""A syntax checker for the AsterNOS klish sessions dpctl renders.

A table of allowed command patterns per CLI mode, each with where it comes from:
- "aidc": shown in Asterfusion's AIDC documents (docs.asternos.com/aidc: Interface
  Configuration Guide, CX864E-N AI back-end best practices, EVPN MC-LAG best practices)
  or recorded in shared/platform-facts.md from them (klish, configure terminal, write,
  interface ethernet 0/N, link-aggregation N, vlan N);
- "frr": FRR command syntax (FRR user guide: BGP, EVPN multihoming, zebra), which AsterNOS's
  routing stack takes as is (platform-facts: "FRR-like syntax", evpn mh commands mirror FRR);
- "assumed": a keyword form the public text does not show verbatim; the renderer uses it
  and this table is the one place to correct it after checking a real unit or vAsterNOS.

Mode changes: a rule may enter a mode (``interface ...``, ``router bgp``, ``route-map``,
``address-family``); ``exit`` / ``exit-address-family`` return to the enclosing mode, ``end``
returns to exec. Named groups get range checks (vlan 1-4094, mtu, DF preference ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = r"[A-Za-z0-9_.:-]+"
NUM = r"\d+"
IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
IPV4P = IPV4 + r"/\d{1,2}"
MAC = r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}"
ETH = r"ethernet 0/\d{1,3}"
BREAKOUT = r"[1248]x\d+G(?:\[[0-9G,]+\])?"


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    enters: str | None
    source: str


def _rules(*rows: tuple[str, str | None, str]) -> tuple[Rule, ...]:
    return tuple(Rule(re.compile(f"^{p}$"), enters, source) for p, enters, source in rows)


_IF_COMMON = (
    (r"description .{1,240}", None, "aidc"),
    (r"mtu (?P<mtu>\d+)", None, "aidc"),
    (r"(no )?shutdown", None, "aidc"),
)

RULES: dict[str, tuple[Rule, ...]] = {
    "exec": _rules(
        (r"configure terminal", "config", "aidc"),
        (r"write", None, "aidc"),
        (r"terminal raw-output", None, "aidc"),
        (r"show .+", None, "aidc"),
    ),
    "config": _rules(
        (f"hostname {NAME}", None, "aidc"),
        (f"interface {ETH}", "if-ethernet", "aidc"),
        (r"interface link-aggregation (?P<lag>\d+)", "if-lag", "aidc"),
        (r"interface vlan (?P<vlan>\d+)", "if-vlan", "aidc"),
        (r"interface loopback \d+", "if-loopback", "assumed"),
        (r"interface vxlan \d+", "if-vxlan", "assumed"),
        (r"vlan (?P<vlan>\d+)", "vlan", "aidc"),
        (f"qos roce (lossless|lossy) profile {NAME}", "roce", "assumed"),
        (r"load-balance ars flowlet", None, "assumed"),
        (r"load-balance packet-spray (random|round-robin)", None, "assumed"),
        (r"router bgp (?P<asn>\d+)", "router-bgp", "frr"),
        (f"route-map {NAME} (permit|deny) {NUM}", "route-map", "frr"),
        (
            f"ip prefix-list {NAME} seq {NUM} (permit|deny) {IPV4P}"
            r"( ge (?P<ge>\d+))?( le (?P<le>\d+))?",
            None,
            "frr",
        ),
        (f"bgp as-path access-list {NAME} seq {NUM} (permit|deny) \\S+", None, "frr"),
        (f"bgp community-list standard {NAME} seq {NUM} (permit|deny) \\S+", None, "frr"),
        (r"ip import-table (?P<table>\d+)", None, "frr"),
        (r"evpn mh startup-delay (?P<delay>\d+)", None, "frr"),
    ),
    "if-ethernet": _rules(
        *_IF_COMMON,
        (f"breakout {BREAKOUT}", None, "assumed"),
        (r"ipv6 use-link-local-only", None, "assumed"),
        (r"switchport access vlan (?P<vlan>\d+)", None, "assumed"),
        (r"link-aggregation-group (?P<lag>\d+) mode (active|on)", None, "assumed"),
        (r"evpn mh uplink", None, "frr"),
        (r"ars enable", None, "assumed"),
        (f"pbr redirect interface {ETH}", None, "assumed"),
    ),
    "if-lag": _rules(
        *_IF_COMMON,
        (r"switchport access vlan (?P<vlan>\d+)", None, "assumed"),
        (r"evpn mh es-id (?P<es_id>\d+)", None, "frr"),
        (f"evpn mh es-sys-mac {MAC}", None, "frr"),
        (r"evpn mh es-df-pref (?P<df_pref>\d+)", None, "frr"),
    ),
    "if-vlan": _rules(
        (r"description .{1,240}", None, "aidc"),
        (f"ip address {IPV4P}", None, "aidc"),
        (f"mac-address {MAC}", None, "assumed"),
        (r"arp proxy mode (default|anycast_gw|evpn)", None, "assumed"),
        (r"arp to-host table (?P<table>\d+)", None, "assumed"),
    ),
    "if-loopback": _rules((f"ip address {IPV4}/32", None, "assumed")),
    "if-vxlan": _rules((f"source {IPV4}", None, "assumed")),
    "vlan": _rules((r"vni (?P<vni>\d+)", None, "assumed")),
    "roce": _rules(
        (r"cable-length \d+m", None, "assumed"),
        (r"incast-level (low|medium|high)", None, "assumed"),
        (f"traffic-model {NAME}", None, "assumed"),
        (f"bind interface {ETH}", None, "assumed"),
    ),
    "router-bgp": _rules(
        (f"bgp router-id {IPV4}", None, "frr"),
        (r"bgp bestpath as-path multipath-relax", None, "frr"),
        (r"bgp graceful-shutdown", None, "frr"),
        (r"bgp log-neighbor-changes", None, "frr"),
        (r"no bgp (ebgp-requires-policy|default ipv4-unicast)", None, "frr"),
        (r"timers bgp \d+ \d+", None, "frr"),
        (f"neighbor {NAME} peer-group", None, "frr"),
        (f"neighbor {NAME} advertisement-interval \\d+", None, "frr"),
        (f"neighbor {NAME} timers( connect)? \\d+( \\d+)?", None, "frr"),
        (f"neighbor {NAME} capability extended-nexthop", None, "frr"),
        (f"neighbor {NAME} graceful-shutdown", None, "frr"),
        (f"neighbor {NAME} remote-as (external|internal|\\d+)", None, "frr"),
        (f"neighbor {NAME} bfd", None, "frr"),
        (f"neighbor {NAME} interface (v6only )?peer-group {NAME}", None, "frr"),
        (r"address-family (ipv4 unicast|ipv6 unicast|l2vpn evpn)", "bgp-af", "frr"),
    ),
    "bgp-af": _rules(
        (f"redistribute connected( route-map {NAME})?", None, "frr"),
        (f"redistribute table (?P<table>\\d+)( route-map {NAME})?", None, "frr"),
        (f"neighbor {NAME} activate", None, "frr"),
        (f"neighbor {NAME} route-map {NAME} (in|out)", None, "frr"),
        (r"maximum-paths (?P<paths>\d+)", None, "frr"),
        (r"advertise-all-vni", None, "frr"),
        (r"vni (?P<vni>\d+)", "bgp-vni", "frr"),
    ),
    "bgp-vni": _rules(
        (r"route-target (import|export|both) \d+:\d+", None, "frr"),
    ),
    "route-map": _rules(
        (f"match ip address prefix-list {NAME}", None, "frr"),
        (f"match as-path {NAME}", None, "frr"),
        (f"match community {NAME}", None, "frr"),
        (r"set local-preference \d+", None, "frr"),
        (r"set as-path prepend \d+( \d+)*", None, "frr"),
        (r"set community \S+( \S+)* additive", None, "frr"),
        (r"set extcommunity bandwidth num-multipaths", None, "frr"),
    ),
}

RANGES: dict[str, tuple[int, int]] = {
    "vlan": (1, 4094),
    "mtu": (1280, 9216),
    "lag": (1, 4096),
    "asn": (1, 4_294_967_295),
    "es_id": (1, 16_777_215),
    "df_pref": (1, 65535),
    "vni": (1, 16_777_215),
    "table": (1, 252),
    "delay": (0, 3600),
    "paths": (1, 256),
    "ge": (0, 32),
    "le": (0, 32),
}

_EXITS = {"exit", "exit-address-family", "exit-vni", "quit"}


def check_cli(text: str) -> list[str]:
    """Errors in a klish session, as 'line N: ...'; [] when every line fits its mode."""
    errors: list[str] = []
    stack: list[str] = ["exec"]
    configured = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("!"):
            continue
        mode = stack[-1]
        if line == "end":
            if mode == "exec":
                errors.append(f"line {number}: 'end' in exec mode")
            stack = ["exec"]
            continue
        if line in _EXITS:
            if mode == "exec":
                errors.append(f"line {number}: '{line}' in exec mode")
            elif line == "exit-address-family" and mode != "bgp-af":
                errors.append(f"line {number}: 'exit-address-family' outside address-family")
            else:
                stack.pop()
            continue
        rule, match = _match(mode, line)
        if rule is None or match is None:
            errors.append(f"line {number}: not a {mode} command: {line!r}")
            continue
        errors += _ranges(number, match)
        if mode == "exec" and rule.enters == "config":
            configured = True
        if rule.enters:
            stack.append(rule.enters)
    if stack != ["exec"]:
        errors.append(f"end of session in {stack[-1]} mode (missing exit/end)")
    if not configured:
        errors.append("no 'configure terminal' in the session")
    return errors


def _match(mode: str, line: str) -> tuple[Rule | None, re.Match[str] | None]:
    for rule in RULES[mode]:
        match = rule.pattern.match(line)
        if match:
            return rule, match
    return None, None


def _ranges(number: int, match: re.Match[str]) -> list[str]:
    errors = []
    for group, value in match.groupdict().items():
        if value is None or group not in RANGES:
            continue
        low, high = RANGES[group]
        if not low <= int(value) <= high:
            errors.append(f"line {number}: {group} {value} outside {low}-{high}")
    return errors


def assumed_commands() -> list[tuple[str, str]]:
    """(mode, pattern) of every command whose keyword form is assumed, for reports."""
    return [
        (mode, rule.pattern.pattern)
        for mode, rules in RULES.items()
        for rule in rules
        if rule.source == "assumed"
    ]
