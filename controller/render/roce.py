"""RoCE one-click: one intent knob (cable length, incast level) -> the numbers every platform needs.

Traffic classes 3 and 4 carry RoCE and mark ECN in both modes (DCQCN's congestion signal);
lossless mode adds PFC and its headroom on them, lossy mode has none (the senders' congestion
control alone, as in NVIDIA's lossy RoCE). CNPs ride on a strict-priority queue (6); queue 7
is strict for network control. DSCP 24-31 -> TC3 and 32-39 -> TC4 follow
the upstream SONiC qos template for the CX864E-N (sonic-buildimage device/asterfusion).

PFC headroom per port and priority is what arrives after the switch sends PAUSE: the cable
round trip at line rate plus two maximum frames in flight and the peer's response time. ECN
thresholds shrink as the incast level grows, so senders slow down before the buffer fills.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.intent import Roce

ROCE_QUEUES = (3, 4)
STRICT_QUEUES = (6, 7)
CNP_DSCP = 48
PROPAGATION_NS_PER_M = 5
PFC_RESPONSE_BITS = 3840 * 8  # IEEE 802.1Qbb allowance for the peer's reaction, in bits

DSCP_TO_TC: dict[int, int] = {
    **{d: 0 for d in range(64)},
    **{d: 3 for d in range(24, 32)},
    **{d: 4 for d in range(32, 40)},
    **{d: 6 for d in range(48, 56)},
    **{d: 7 for d in range(56, 64)},
}

# incast level -> (ECN min threshold bytes, max threshold bytes, mark probability %)
ECN_BY_INCAST = {
    "low": (1_572_864, 3_145_728, 5),
    "medium": (1_048_576, 2_097_152, 10),
    "high": (524_288, 1_572_864, 20),
}


@dataclass(frozen=True, slots=True)
class RoceSettings:
    enabled: bool
    mode: str
    cable_length_m: int
    incast: str
    ecn_queues: tuple[int, ...]
    lossless_queues: tuple[int, ...]
    strict_queues: tuple[int, ...]
    dscp_to_tc: dict[int, int]
    cnp_dscp: int
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_probability: int
    headroom_bytes: dict[str, int]

    @property
    def profile_name(self) -> str:
        """AsterNOS Easy RoCE names its profiles like roce_lossless_5m_medium."""
        return f"roce_{self.mode}_{self.cable_length_m}m_{self.incast}"

    @property
    def pfc_enable(self) -> str:
        return ",".join(str(q) for q in self.lossless_queues)

    def dscp_ranges(self, tc: int) -> list[tuple[int, int]]:
        """Contiguous DSCP ranges mapped to one traffic class (for CLI-style output)."""
        values = sorted(d for d, t in self.dscp_to_tc.items() if t == tc)
        ranges: list[tuple[int, int]] = []
        for d in values:
            if ranges and ranges[-1][1] == d - 1:
                ranges[-1] = (ranges[-1][0], d)
            else:
                ranges.append((d, d))
        return ranges


def pfc_headroom_bytes(cable_length_m: int, speed_gbps: int, mtu: int) -> int:
    round_trip_ns = 2 * cable_length_m * PROPAGATION_NS_PER_M
    in_flight_bits = round_trip_ns * speed_gbps  # ns x Gb/s = bits
    total_bits = in_flight_bits + PFC_RESPONSE_BITS * speed_gbps // 100 + 2 * mtu * 8
    return -(-total_bits // 8)


def roce_settings(roce: Roce, port_speeds: set[str], mtu: int) -> RoceSettings:
    ecn_min, ecn_max, probability = ECN_BY_INCAST[roce.incast]
    return RoceSettings(
        enabled=roce.enabled,
        mode=roce.mode,
        cable_length_m=roce.cable_length_m,
        incast=roce.incast,
        ecn_queues=ROCE_QUEUES,
        lossless_queues=ROCE_QUEUES if roce.mode == "lossless" else (),
        strict_queues=STRICT_QUEUES,
        dscp_to_tc=DSCP_TO_TC,
        cnp_dscp=CNP_DSCP,
        ecn_min_bytes=ecn_min,
        ecn_max_bytes=ecn_max,
        ecn_probability=probability,
        headroom_bytes={
            speed: pfc_headroom_bytes(roce.cable_length_m, int(speed[:-1]), mtu)
            for speed in sorted(port_speeds)
        },
    )
