"""Write the expected_result.json of NAPALM's test cases from the driver's answer, the way
NAPALM's contributors make theirs: run a getter on the recordings, then READ THE DIFF against
the recorded outputs before committing it (an expected result is a golden file: it pins what
the driver answered once a person checked it against the device's own output).

    python -m tests.drivers.napalm_conformance.expected frr [test_get_vlans ...]

Without test names it writes every (test, case) of CASES[platform]; existing files are
overwritten.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.drivers.napalm_conformance.doubles import patched

HERE = Path(__file__).parent

CALLS: dict[str, Callable[[Any], Any]] = {
    "test_is_alive": lambda d: d.is_alive(),
    "test_get_facts": lambda d: d.get_facts(),
    "test_get_interfaces": lambda d: d.get_interfaces(),
    "test_get_lldp_neighbors": lambda d: d.get_lldp_neighbors(),
    "test_get_lldp_neighbors_detail": lambda d: d.get_lldp_neighbors_detail(),
    "test_get_interfaces_counters": lambda d: d.get_interfaces_counters(),
    "test_get_bgp_neighbors": lambda d: d.get_bgp_neighbors(),
    "test_get_bgp_neighbors_detail": lambda d: d.get_bgp_neighbors_detail(),
    "test_get_arp_table": lambda d: d.get_arp_table(),
    "test_get_arp_table_with_vrf": lambda d: d.get_arp_table(vrf="TEST"),
    "test_get_ipv6_neighbors_table": lambda d: d.get_ipv6_neighbors_table(),
    "test_get_interfaces_ip": lambda d: d.get_interfaces_ip(),
    "test_get_mac_address_table": lambda d: d.get_mac_address_table(),
    "test_get_route_to": lambda d: d.get_route_to(destination="1.0.4.0/24", protocol="bgp"),
    "test_get_route_to_longer": lambda d: d.get_route_to(
        destination="1.0.4.0/24", protocol="bgp", longer=True
    ),
    "test_get_network_instances": lambda d: d.get_network_instances(),
    "test_get_vlans": lambda d: d.get_vlans(),
    "test_get_environment": lambda d: d.get_environment(),
    "test_get_ntp_servers": lambda d: d.get_ntp_servers(),
    "test_get_snmp_information": lambda d: d.get_snmp_information(),
    "test_get_config": lambda d: d.get_config(),
    "test_get_config_filtered": lambda d: d.get_config(retrieve="candidate"),
    "test_get_config_sanitized": lambda d: d.get_config(sanitized=True),
    "test_get_config_sanitized_filtered": lambda d: {
        "running": d.get_config(retrieve="running", sanitized=True)["running"],
        "startup": d.get_config(retrieve="startup", sanitized=True)["startup"],
        "candidate": "",
    },
}
"""What each of NAPALM's tests (napalm.base.test.getters) asks, with its arguments."""

STANDARD = [t for t in CALLS if t not in ("test_get_ntp_servers", "test_get_snmp_information")]
CASES: dict[str, dict[str, list[str]]] = {
    "frr": {
        **{test: ["p1-g1-leaf1"] for test in STANDARD},
        "test_get_arp_table_with_vrf": ["vrf_TEST"],
        "test_get_config_sanitized": ["p1-g1-leaf1", "p1-spine2"],
    },
    "sonic": {
        **{test: ["p1-g1-leaf1"] for test in CALLS},
        "test_get_arp_table_with_vrf": ["vrf_TEST"],
        "test_get_config_sanitized": ["p1-g1-leaf1", "snmp_secrets"],
    },
    "asternos": {
        **{test: ["p1-g1-leaf1"] for test in CALLS},
        "test_get_arp_table_with_vrf": ["vrf_TEST"],
    },
}


def write(platform: str, test: str, case: str) -> None:
    device = patched(platform, case, test)
    result = json.loads(json.dumps(CALLS[test](device)))
    folder = HERE / platform / "mocked_data" / test / case
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    (folder / "expected_result.json").write_text(text)


def main(argv: list[str]) -> None:
    platform, tests = argv[0], argv[1:]
    for test, cases in CASES[platform].items():
        if tests and test not in tests:
            continue
        for case in cases:
            write(platform, test, case)
            print(f"wrote {platform}/mocked_data/{test}/{case}/expected_result.json")


if __name__ == "__main__":
    main(sys.argv[1:])
