"""Address pools: cut the intent's pools into loopbacks, rail subnets and management addresses."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from itertools import combinations

from controller.errors import AddressingError
from controller.intent import Addressing


def check_pools_disjoint(addressing: Addressing) -> None:
    pools = {
        "addressing.loopbacks": addressing.loopbacks,
        "addressing.rail_subnets": addressing.rail_subnets,
        "addressing.management": addressing.management,
    }
    for (name_a, net_a), (name_b, net_b) in combinations(pools.items(), 2):
        if net_a.overlaps(net_b):
            raise AddressingError(name_b, f"{net_b} overlaps {name_a} ({net_a})")


def rail_prefixlen(servers_per_group: int, requested: int | None) -> int:
    """Smallest subnet holding a gateway and every server of a full group (or the requested)."""
    needed = servers_per_group + 1  # servers + anycast gateway
    fit = 30
    while fit > 0 and (2 ** (32 - fit)) - 2 < needed:
        fit -= 1
    if requested is None:
        return fit
    if requested > fit:
        raise AddressingError(
            "addressing.rail_prefixlen",
            f"/{requested} holds {2 ** (32 - requested) - 2} hosts but a rail subnet needs "
            f"{needed} (a gateway and {servers_per_group} servers): use /{fit} or shorter",
        )
    return requested


def loopbacks(pool: IPv4Network, count: int) -> list[str]:
    """Host addresses for loopbacks, skipping the pool's network address."""
    available = pool.num_addresses - 1
    if count > available:
        raise AddressingError(
            "addressing.loopbacks",
            f"{pool} holds {available} loopback addresses but the fabric needs {count} "
            f"(one per switch)",
        )
    base = int(pool.network_address) + 1
    return [str(IPv4Address(base + i)) for i in range(count)]


def management(pool: IPv4Network, count: int) -> tuple[str, list[str]]:
    """(gateway, addresses): the first host is the management gateway, then one per device."""
    usable = max(pool.num_addresses - 2, 0)
    if count + 1 > usable:
        raise AddressingError(
            "addressing.management",
            f"{pool} holds {usable} host addresses but the fabric needs {count + 1} "
            f"(a gateway and one per switch and server)",
        )
    base = int(pool.network_address) + 1
    return str(IPv4Address(base)), [str(IPv4Address(base + 1 + i)) for i in range(count)]


def rail_subnets(pool: IPv4Network, prefixlen: int, count: int) -> list[IPv4Network]:
    if prefixlen < pool.prefixlen:
        raise AddressingError(
            "addressing.rail_subnets",
            f"{pool} is smaller than one /{prefixlen} rail subnet",
        )
    available = 2 ** (prefixlen - pool.prefixlen)
    if count > available:
        raise AddressingError(
            "addressing.rail_subnets",
            f"{pool} holds {available} rail subnets of /{prefixlen} but the fabric needs "
            f"{count} (one per group and rail)",
        )
    size = 2 ** (32 - prefixlen)
    base = int(pool.network_address)
    return [IPv4Network((base + i * size, prefixlen)) for i in range(count)]
