"""Sizing by the rail rules: how many groups, leaves, spines and links a cluster needs.

A group is G rails x 2 planes of leaves and holds as many servers as a leaf has downlinks.
With fewer servers than a group holds, one leaf serves several rails: rails per leaf is the
largest divisor of G with rails x servers <= downlinks. Spines per plane are
leaves x uplinks / spine ports, raised to the smallest count that divides a leaf's uplinks
evenly (so every leaf has the same number of links to every spine). A plane fits in two
tiers while its leaves do not outnumber a spine's ports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from controller.catalog import SwitchModel, get_model
from controller.errors import SizingError

PLANES = 2


@dataclass(frozen=True, slots=True)
class Sizing:
    leaf_model: str
    spine_model: str
    gpus: int
    servers: int
    gpus_per_server: int
    groups: int
    servers_per_group: int
    rails_per_leaf: int
    leaves_per_group: int
    leaves_per_plane: int
    spines_per_plane: int
    leaves: int
    spines: int
    links_per_leaf_spine_pair: int
    downlinks_per_leaf: int
    uplinks_per_leaf: int
    downlink_speed: str
    uplink_speed: str
    spine_ports: int
    spare_ports_per_spine: int

    def to_dict(self) -> dict[str, int | str]:
        return asdict(self)


MAX_GPUS_PER_SERVER = 64  # the intent's bound (FabricIntent.gpus_per_server)


def check_gpus_per_server(gpus_per_server: int, where: str = "gpus_per_server") -> None:
    if not 1 <= gpus_per_server <= MAX_GPUS_PER_SERVER:
        raise SizingError(
            where, f"must be between 1 and {MAX_GPUS_PER_SERVER}, got {gpus_per_server}"
        )


def rails_per_leaf(gpus_per_server: int, servers_in_group: int, downlinks: int) -> int:
    """Largest divisor r of G with r x servers <= downlinks (1 when a group is full)."""
    best = 1
    for r in range(1, gpus_per_server + 1):
        if gpus_per_server % r == 0 and r * servers_in_group <= downlinks:
            best = r
    return best


def max_servers(leaf: SwitchModel, spine: SwitchModel, gpus_per_server: int) -> int:
    """Largest server count a two-tier plane of these models can hold (full groups)."""
    downlinks = leaf.port_count("leaf", "downlink")
    spine_ports = spine.port_count("spine", "fabric")
    return (spine_ports // gpus_per_server) * downlinks if gpus_per_server <= spine_ports else 0


def _spines_per_plane(leaves_per_plane: int, uplinks: int, spine_ports: int) -> int | None:
    needed = -(-leaves_per_plane * uplinks // spine_ports)  # ceiling division
    for count in range(max(needed, 1), uplinks + 1):
        if uplinks % count == 0 and leaves_per_plane * (uplinks // count) <= spine_ports:
            return count
    return None


def _fabric_speed(leaf: SwitchModel, spine: SwitchModel) -> str:
    """The leaf-spine link speed: the leaf's uplinks and the spine's ports must agree."""
    uplink_speed = leaf.port_speed_for("leaf", "uplink")
    spine_speed = spine.port_speed_for("spine", "fabric")
    if uplink_speed != spine_speed:
        raise SizingError(
            "switches",
            f"leaf {leaf.name} uplinks run at {uplink_speed} but spine {spine.name} "
            f"ports run at {spine_speed}",
        )
    return uplink_speed


def size_fabric(
    leaf_model: str,
    spine_model: str,
    servers: int,
    gpus_per_server: int,
    where: str = "servers",
) -> Sizing:
    """Size a dual-plane fabric; raises SizingError naming the field when it cannot be built."""
    leaf = get_model(leaf_model, "switches.leaf")
    spine = get_model(spine_model, "switches.spine")
    check_gpus_per_server(gpus_per_server)
    if servers < 1:
        raise SizingError(where, f"must be at least 1 server, got {servers}")
    downlinks = leaf.port_count("leaf", "downlink")
    uplinks = leaf.port_count("leaf", "uplink")
    spine_ports = spine.port_count("spine", "fabric")
    uplink_speed = _fabric_speed(leaf, spine)
    groups = -(-servers // downlinks)
    per_group = min(servers, downlinks)
    rpl = rails_per_leaf(gpus_per_server, per_group, downlinks)
    leaves_per_group = gpus_per_server // rpl
    leaves_per_plane = groups * leaves_per_group
    spines_pp = _spines_per_plane(leaves_per_plane, uplinks, spine_ports)
    if spines_pp is None:
        limit = max_servers(leaf, spine, gpus_per_server)
        raise SizingError(
            where,
            f"{servers} servers x {gpus_per_server} GPUs need {leaves_per_plane} leaves per plane, "
            f"but a {spine_model} spine has only {spine_ports} ports at {uplink_speed}: two tiers "
            f"of {leaf_model}/{spine_model} hold at most {limit} servers "
            f"({limit * gpus_per_server} GPUs) with {gpus_per_server} GPUs per server",
        )
    links = uplinks // spines_pp
    return Sizing(
        leaf_model=leaf_model,
        spine_model=spine_model,
        gpus=servers * gpus_per_server,
        servers=servers,
        gpus_per_server=gpus_per_server,
        groups=groups,
        servers_per_group=downlinks,
        rails_per_leaf=rpl,
        leaves_per_group=leaves_per_group,
        leaves_per_plane=leaves_per_plane,
        spines_per_plane=spines_pp,
        leaves=leaves_per_plane * PLANES,
        spines=spines_pp * PLANES,
        links_per_leaf_spine_pair=links,
        downlinks_per_leaf=downlinks,
        uplinks_per_leaf=uplinks,
        downlink_speed=leaf.port_speed_for("leaf", "downlink"),
        uplink_speed=uplink_speed,
        spine_ports=spine_ports,
        spare_ports_per_spine=spine_ports - leaves_per_plane * links,
    )


def servers_from_gpus(gpus: int, gpus_per_server: int, where: str = "gpus") -> int:
    if gpus < 1:
        raise SizingError(where, f"must be at least 1 GPU, got {gpus}")
    check_gpus_per_server(gpus_per_server)
    if gpus % gpus_per_server:
        raise SizingError(
            where,
            f"{gpus} GPUs do not fill whole servers of {gpus_per_server} GPUs "
            f"({gpus // gpus_per_server} servers would leave {gpus % gpus_per_server} over)",
        )
    return gpus // gpus_per_server


def sizing_table(model: str, gpus_per_server: int = 8) -> list[Sizing]:
    """The model's sizing table like the seed's: full groups, doubling up to the largest fabric.

    Rows start at the smallest full-leaf fabric (one leaf per plane serving as many rails as
    fit) and double the server count until the spine radix is used up.
    """
    check_gpus_per_server(gpus_per_server)
    leaf = get_model(model)
    downlinks = leaf.port_count("leaf", "downlink")
    limit = max_servers(leaf, leaf, gpus_per_server)
    rows: list[Sizing] = []
    servers = downlinks // 2 if gpus_per_server % 2 == 0 else downlinks
    while servers <= limit:
        rows.append(size_fabric(model, model, servers, gpus_per_server))
        servers *= 2
    return rows
