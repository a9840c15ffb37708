"""action=verify of dpctl_gpu_nic: checks that change nothing.

Bond members up with carrier (and aggregated for LACP), the NIC configured as intended (its
plan is empty), the keep-alive running, the gateway's neighbour entry REACHABLE and every
same-rail peer answering ping (at most PING_PARALLEL pings at once).
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_plan import plan_nic
from ansible_collections.dpctl.fabric.plugins.module_utils.gpu_nic_state import read_state

Run = Any  # callable(argv, stdin=None) -> (rc, out, err)
PING_PARALLEL = 64


def _neigh_state(run: Run, bond: str, gateway: str) -> str:
    rc, out, _ = run(["ip", "-j", "neigh", "show", "dev", bond, "to", gateway])
    if rc != 0:
        return "?"
    entries = json.loads(out or "[]")
    return ",".join(entries[0].get("state", [])) if entries else "none"


def verify_nics(
    run: Run, p: dict[str, Any], sleep: Any = time.sleep, clock: Any = time.monotonic
) -> tuple[list[dict[str, Any]], float]:
    """Every check, repeated until all pass or ``settle_s`` has passed (the NICs' ARP
    keep-alives make the leaves learn them and advertise their /32s, LACP aggregates: right
    after a configure, peers answer only once the planes have converged). Returns the last
    checks and the seconds waited; a check still failing at the bound has failed."""
    start = clock()
    deadline = start + float(p.get("settle_s", 60))
    neighbour_timeout = float(p.get("neighbour_timeout", 12))
    while True:
        checks = verify_once(run, p, neighbour_timeout)
        if all(c["ok"] for c in checks) or clock() >= deadline:
            return checks, round(clock() - start, 1)
        neighbour_timeout = 2.0
        sleep(3.0)


def _check(nic: dict[str, Any], check: str, ok: bool, detail: str = "") -> dict[str, Any]:
    return {"bond": nic["bond"], "check": check, "ok": ok, "detail": detail}


def verify_once(run: Run, p: dict[str, Any], neighbour_timeout: float) -> list[dict[str, Any]]:
    state = read_state(run, p["nics"])
    checks: list[dict[str, Any]] = []
    for nic in p["nics"]:
        checks += _link_checks(state, nic, p)
    states = _neighbour_states(run, p["nics"], neighbour_timeout)
    for nic in p["nics"]:
        seen = states.get(nic["bond"], "?")
        checks.append(
            _check(nic, f"gateway {nic['gateway']} neighbour REACHABLE", seen == "REACHABLE", seen)
        )
    return checks + _peer_checks(p)


def _link_checks(
    state: dict[str, Any], nic: dict[str, Any], p: dict[str, Any]
) -> list[dict[str, Any]]:
    """The NIC as intended; each port with carrier, up in the bond (and aggregated)."""
    links = state["links"]
    bond = nic["bond"]
    plan = plan_nic(state, nic, p) if all(x in links for x in nic["ports"]) else None
    drift = "ports missing" if plan is None else "; ".join(plan["why"])
    checks = [_check(nic, "configured as intended", plan is not None and not plan["why"], drift)]
    aggregator = (
        links.get(bond, {}).get("linkinfo", {}).get("info_data", {}).get("ad_info", {})
    ).get("aggregator")
    for port in nic["ports"]:
        link = links.get(port, {})
        flags = link.get("flags", [])
        slave = link.get("linkinfo", {}).get("info_slave_data", {})
        carrier = "NO-CARRIER" not in flags and "LOWER_UP" in flags
        member = link.get("master") == bond and slave.get("mii_status") == "UP"
        checks.append(_check(nic, f"{port} carrier", carrier, ",".join(flags)))
        checks.append(
            _check(nic, f"{port} bond member up", member, json.dumps(slave, sort_keys=True))
        )
        if p["bond_options"].get("mode") == "802.3ad" and aggregator is not None:
            agg = slave.get("ad_aggregator_id")
            detail = f"{agg} vs {aggregator}"
            checks.append(_check(nic, f"{port} LACP aggregated", agg == aggregator, detail))
    return checks


def _neighbour_states(run: Run, nics: list[dict[str, Any]], timeout: float) -> dict[str, str]:
    """Each NIC's gateway neighbour state, waiting up to ``timeout`` for REACHABLE."""
    deadline = time.monotonic() + timeout
    pending = list(nics)
    states: dict[str, str] = {}
    while pending:
        for nic in pending:
            states[nic["bond"]] = _neigh_state(run, nic["bond"], nic["gateway"])
        pending = [n for n in pending if states[n["bond"]] != "REACHABLE"]
        if not pending or time.monotonic() > deadline:
            break
        for nic in pending:  # traffic makes the kernel confirm a STALE/DELAY entry
            run(["ping", "-q", "-c", "1", "-W", "1", "-I", nic["ip"], nic["gateway"]])
        time.sleep(0.5)
    return states


def _peer_checks(p: dict[str, Any]) -> list[dict[str, Any]]:
    """Every same-rail peer answering ping from this server's NIC on that rail."""
    checks: list[dict[str, Any]] = []
    by_src = {nic["ip"]: nic for nic in p["nics"]}
    peers = list(p.get("peers", []))
    for start in range(0, len(peers), PING_PARALLEL):
        batch = peers[start : start + PING_PARALLEL]
        procs = [
            subprocess.Popen(
                ["ping", "-q", "-c", "3", "-i", "0.2", "-W", "2", "-I", peer["src"], peer["ip"]],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for peer in batch
        ]
        for peer, proc in zip(batch, procs):  # noqa: B905 (servers may run Python < 3.10)
            out, _ = proc.communicate(timeout=30)
            summary = next((x for x in out.splitlines() if "packets transmitted" in x), out)
            nic = by_src.get(peer["src"], {"bond": "?"})
            ok = proc.returncode == 0
            name = f"peer {peer['server']} rail {peer['rail']} {peer['ip']} ping"
            checks.append(_check(nic, name, ok, summary))
    return checks
