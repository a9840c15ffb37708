"""The ARP-to-host agent believes an ES bond member's LACP states only once they postdate its
last carrier loss (controller/agents/arp_to_host/freshness.py): Linux keeps the states a
member had when its carrier went, so a link back within a second or two read "serving" at
both ends before LACP had run again (CI, 2026-12-07: the /32 back 0.8 s after the link,
the server still holding its port out for 10 s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.agents.arp_to_host import freshness, gate, segments

SEGMENTS = {"bond3": {"member": "swp5", "hosts": ["10.100.0.2"]}}
SERVING = 0x3F  # activity, timeout, aggregation, sync, collecting, distributing
RENEGOTIATING = (0xC7, 0x02)  # this end expired and defaulted, the server's state unknown


@pytest.fixture(autouse=True)
def fresh_lacp_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "FRESHNESS", freshness.Freshness())


def link(carrier: bool, actor: int = SERVING, partner: int = SERVING, failures: int = 6) -> Any:
    """One member as ``ip -d -j link show`` prints it."""
    slave = {
        "ad_actor_oper_port_state": actor,
        "ad_partner_oper_port_state": partner,
        "link_failure_count": failures,
    }
    flags = ["BROADCAST", "UP", "LOWER_UP"] if carrier else ["NO-CARRIER", "BROADCAST", "UP"]
    return {
        "ifname": "swp5",
        "flags": flags,
        "master": "bond3",
        "linkinfo": {"info_slave_data": slave},
    }


def serving(*looks: Any) -> list[bool]:
    return [segments.serving_bonds([look], SEGMENTS) == {"bond3"} for look in looks]


def test_a_link_back_with_the_states_it_lost_is_not_serving_until_lacp_ran_again() -> None:
    assert serving(
        link(True),  # the agent starts on a running fabric: believed
        link(False),  # the server's port goes: the states still say serving (63/63)
        link(True, failures=7),  # back 1.7 s later, the same states: old ones
        link(True, *RENEGOTIATING, failures=7),  # LACP runs: fresh from here
        link(True, 0x0F, 0x07, failures=7),  # the server takes the port back
        link(True, failures=7),
    ) == [True, False, False, False, False, True]


def test_a_carrier_loss_between_two_looks_is_seen_in_the_failure_count() -> None:
    assert serving(
        link(True),
        link(True, failures=7),  # the link went and came back between the two looks
        link(True, *RENEGOTIATING, failures=7),
        link(True, failures=7),
    ) == [True, False, False, True]


def test_states_that_never_change_are_believed_after_lacps_short_timeout() -> None:
    """If LACP renegotiated wholly between two looks, the agent never saw it say otherwise:
    from STALE_S after the carrier returned the states are believed anyway."""
    record = freshness.Freshness(stale_s=3.0)
    assert record.believe("swp5", True, 6, True, seen_at=0.0)
    assert not record.believe("swp5", False, 7, True, seen_at=1.0)
    assert not record.believe("swp5", True, 7, True, seen_at=2.0)  # back: from here
    assert not record.believe("swp5", True, 7, True, seen_at=4.9)
    assert record.believe("swp5", True, 7, True, seen_at=5.0)
    assert record.believe("swp5", True, 7, True, seen_at=5.1)


def sysfs(root: Path, min_links: int, carrier: int, actor: int, partner: int, failures: int) -> str:
    (root / "bond3" / "bonding").mkdir(parents=True, exist_ok=True)
    (root / "bond3" / "bonding" / "min_links").write_text(f"{min_links}\n")
    slave = root / "swp5" / "bonding_slave"
    slave.mkdir(parents=True, exist_ok=True)
    (root / "swp5" / "carrier").write_text(f"{carrier}\n")
    (slave / "ad_actor_oper_port_state").write_text(f"{actor}\n")
    (slave / "ad_partner_oper_port_state").write_text(f"{partner}\n")
    (slave / "link_failure_count").write_text(f"{failures}\n")
    return str(root)


def test_the_gate_stays_shut_on_the_states_a_member_had_before_its_carrier_went(
    tmp_path: Path,
) -> None:
    """GateWatch reads sysfs: a gated bond whose member's carrier is back with the old
    states stays gated until LACP has run again and the server is in sync."""
    watch = gate.GateWatch(SEGMENTS, str(tmp_path))
    sysfs(tmp_path, 2, 1, SERVING, SERVING, 6)
    assert segments.lacp_serving_now("swp5", str(tmp_path))  # first look: believed
    sysfs(tmp_path, 2, 0, SERVING, SERVING, 7)  # carrier gone, the states as they were
    assert watch.check() == ([], ["swp5"])
    sysfs(tmp_path, 2, 1, SERVING, SERVING, 7)  # carrier back, the states still old
    assert watch.check() == ([], ["swp5"])
    assert segments.serving_now(SEGMENTS, str(tmp_path)) == set()
    sysfs(tmp_path, 2, 1, *RENEGOTIATING, 7)
    assert watch.check() == ([], ["swp5"])
    sysfs(tmp_path, 2, 1, SERVING, 0x0D, 7)  # this end distributes, the server in sync
    assert watch.check() == (["bond3"], [])


def test_a_look_read_before_a_fresher_one_is_not_believed_when_judged_after_it() -> None:
    """A pass reads ``ip -d -j link show`` once and judges it twice, around a look at sysfs
    (and GateWatch looks from its own thread): the older snapshot, carrier back with the old
    states, was believed once the sysfs look had seen LACP renegotiate (CI, 2026-12-07: the
    /32 back 1.0 s after the link, the server's port still held out)."""
    record = freshness.Freshness()
    assert record.believe("swp5", True, 6, True, seen_at=0.0)
    assert not record.believe("swp5", False, 7, True, seen_at=1.0)  # the loss
    assert not record.believe("swp5", True, 7, True, seen_at=2.0)  # the pass's snapshot
    assert not record.believe("swp5", True, 7, False, seen_at=2.5)  # sysfs: renegotiating
    assert not record.believe("swp5", True, 7, True, seen_at=2.0)  # the snapshot again
    assert not record.believe("swp5", True, 6, True, seen_at=0.5)  # from before the loss
    assert record.believe("swp5", True, 7, True, seen_at=3.0)  # LACP ran: serving


def test_an_older_look_with_a_lower_failure_count_is_not_a_new_carrier_loss() -> None:
    """Failure counts only grow: an older look's lower count must not make a member that
    serves suspect again (its gate would wait up to STALE_S for nothing)."""
    record = freshness.Freshness()
    assert record.believe("swp5", True, 7, True, seen_at=5.0)
    assert record.believe("swp5", True, 6, True, seen_at=5.0)
    assert record.believe("swp5", True, 7, True, seen_at=6.0)


def test_a_pass_does_not_advertise_on_its_own_snapshot_once_sysfs_saw_lacp_renegotiate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The whole pass (``reconcile``) in the order CI hit: its snapshot shows the member's
    carrier back with the old states; its sysfs looks show LACP renegotiating. Neither the
    /32 nor an open gate may come of it."""
    from controller.agents.arp_to_host import kernel, reconcile

    root = str(tmp_path)

    def bond(min_links: int) -> dict[str, Any]:
        return {"ifname": "bond3", "linkinfo": {"info_data": {"min_links": min_links}}}

    snapshots = [
        [link(True), bond(1)],
        [link(False, failures=7), bond(1)],
        [link(True, failures=7), bond(2)],
    ]
    neighbour = {"dst": "10.100.0.2", "dev": "vlan1001", "lladdr": "f6:39:47:bf:45:01"}
    neighbour["state"] = ["REACHABLE"]  # type: ignore[assignment]
    batches: list[list[str]] = []

    def ip_json(*args: str) -> list[dict[str, Any]]:
        if args[:2] == ("-d", "link"):
            return snapshots.pop(0)
        return [neighbour] if args[:2] == ("-4", "neigh") else []

    monkeypatch.setattr(kernel, "_ip_json", ip_json)
    monkeypatch.setattr(kernel, "_ip_batch", batches.append)
    monkeypatch.setattr(reconcile, "serving_now", lambda segs: segments.serving_now(segs, root))
    config = {"table": 100, "interfaces": ["vlan1001"], "prefixes": ["10.100.0.0/29"]}
    config["segments"] = SEGMENTS  # type: ignore[assignment]
    sysfs(tmp_path, 1, 1, SERVING, SERVING, 6)
    reconcile.reconcile(config, None)  # serving before the loss: the /32 is advertised
    assert "route replace 10.100.0.2/32 dev vlan1001 table 100 proto static" in batches[-1]
    sysfs(tmp_path, 1, 0, SERVING, SERVING, 7)
    batches.clear()
    reconcile.reconcile(config, None)  # the loss: gated, nothing advertised
    assert batches == [["link set dev bond3 type bond min_links 2"]]
    sysfs(tmp_path, 2, 1, *RENEGOTIATING, 7)
    batches.clear()
    reconcile.reconcile(config, None)  # snapshot: back with the old states; sysfs: fresh
    assert batches == []
