"""From what was read and probed to findings (pure): the cabling punch list, the fabric
cables' link-local probes with the direction that fails, the server flows, localisation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.accept.cabling import Action, Cable, cable, end_name, punch_list
from controller.accept.localise import Probed, Suspect, localise
from controller.accept.probes import PlannedProbe, cable_name
from controller.accept.result import Finding, failed, passed, skipped
from controller.facts import Fabric, Link


def planned_cables(fabric: Fabric, read: set[str], plane: int | None) -> dict[Cable, Link]:
    """The plan's cables that the read switches can see (at least one end on one of them)."""
    out = {}
    for lk in fabric.links:
        if plane is not None and lk.plane != plane:
            continue
        if lk.a_device in read or lk.z_device in read:
            out[cable((lk.a_device, lk.a_port), (lk.z_device, lk.z_port))] = lk
    return out


def lldp_observations(
    fabric: Fabric,
    lldp: Mapping[str, Mapping[str, list[dict[str, Any]]]],
    planned_ends: set[tuple[str, str]],
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """(local end, remote end) of every LLDP neighbour on a planned port or from a device of
    the fabric (a management network's neighbours on other ports are not the plan's)."""
    known = set(fabric.switch_by_name) | set(fabric.server_by_name)
    seen = []
    for device, ports in lldp.items():
        for port, neighbours in ports.items():
            for n in neighbours[:1]:
                remote = (str(n.get("hostname", "")), str(n.get("port", "")))
                if (device, port) in planned_ends or remote[0] in known:
                    seen.append(((device, port), remote))
    return seen


def cabling_findings(
    plan: Mapping[Cable, Link],
    observed: set[Cable],
    down: set[str],
) -> tuple[list[Finding], list[Action]]:
    """One row per planned cable (pass when LLDP sees it) and one per punch-list action.
    ``down``: switch ports (device:port) whose link is down (a cable not seen there may be in
    place with a dead far end)."""
    actions = punch_list(plan.keys(), observed)
    rows = [
        passed(
            "cabling",
            cable_name(lk),
            "LLDP sees the planned neighbour",
            device=lk.z_device,
            port=lk.z_port,
        )
        for c, lk in plan.items()
        if c in observed
    ]
    for act in actions:
        rows.append(_action_row(act, plan, down))
    return rows, actions


def _action_row(act: Action, plan: Mapping[Cable, Link], down: set[str]) -> Finding:
    wanted = [plan[c] for c in act.wanted if c in plan]
    element = (
        " + ".join(cable_name(lk) for lk in wanted)
        or f"{end_name(act.first)} - {end_name(act.second)}"
    )
    device, port = act.first
    evidence = act.to_dict()
    if act.kind == "add":
        dead = [e for e in (end_name(act.first), end_name(act.second)) if e in down]
        what = "planned cable not seen by LLDP"
        fix = act.text
        if dead:
            what = f"no link on {', '.join(dead)}: cable missing, unplugged, or its far end dead"
            fix = (
                f"check the cable {end_name(act.first)} - {end_name(act.second)}: plug it in or "
                "replace it; if it is in place, the far end's port (a server NIC, a transceiver) "
                "is down"
            )
        return failed("cabling", element, what, fix, evidence=evidence, device=device, port=port)
    what = {
        "swap": "two cables swapped",
        "move": "cable end in the wrong port",
        "remove": "cable not in the plan",
    }[act.kind]
    return failed("cabling", element, what, act.text, evidence=evidence, device=device, port=port)


def fabric_probe_findings(
    links: list[Link],
    pings: Mapping[str, Mapping[str, Any]],
    deltas: Mapping[str, Mapping[str, int]],
) -> list[Finding]:
    """Per fabric cable: its leaf's link-local probe; a failing one says which direction lost
    everything, from the packets each end received during the test (``deltas``: device:port ->
    received packets grew by)."""
    rows = []
    for lk in links:
        name, a, z = cable_name(lk), f"{lk.a_device}:{lk.a_port}", f"{lk.z_device}:{lk.z_port}"
        ping = pings.get(lk.a_device, {}).get(lk.a_port)
        where = {"device": lk.a_device, "port": lk.a_port}
        if ping is None:
            rows.append(
                failed(
                    "traffic",
                    name,
                    f"no IPv6 link-local neighbour on {a} (nothing heard from {z})",
                    f"check the cable {name}: the far end sends nothing this end receives",
                    **where,
                )
            )
        elif "skip" in ping:
            rows.append(skipped("traffic", name, str(ping["skip"]), **where))
        elif ping["received"] == ping["sent"]:
            rows.append(
                passed(
                    "traffic", name, f"link-local probe {ping['received']}/{ping['sent']}", **where
                )
            )
        else:
            rows.append(_direction(name, a, z, ping, deltas, where))
    return rows


def _direction(
    name: str,
    a: str,
    z: str,
    ping: Mapping[str, int],
    deltas: Mapping[str, Mapping[str, int]],
    where: dict[str, str],
) -> Finding:
    got_a, got_z = deltas.get(a, {}).get("rx", -1), deltas.get(z, {}).get("rx", -1)
    lost = f"link-local probe {ping['received']}/{ping['sent']} answered"
    evidence = {"ping": dict(ping), "received_during_test": {a: got_a, z: got_z}}
    dead = (a, z) if got_z == 0 and got_a > 0 else (z, a) if got_a == 0 and got_z > 0 else None
    if dead is None:
        what, fix = f"{lost} (loss in both directions)", f"check the cable {name} and both ports"
    else:
        tx, rx = dead
        what = f"{lost}: {tx} -> {rx} drops everything (one direction: {rx} received nothing)"
        fix = (
            f"check the transmit side of {tx} and the receive side of {rx} (optic, fibre "
            f"pair, cable): replace the cable {name}"
        )
    return failed("traffic", name, what, fix, evidence=evidence, **where)


def flow_ok(result: Mapping[str, Any]) -> bool:
    return (
        int(result.get("received") or 0) > 0
        and int(result.get("lost") or 0) == 0
        and int(result.get("send_errors") or 0) == 0
    )


def server_probe_findings(
    probes: list[PlannedProbe], results: list[dict[str, Any]]
) -> list[Finding]:
    rows = []
    for probe, result in zip(probes, results, strict=True):
        f = probe.flow
        where = {"device": f.src, "port": f.pin or ""}
        evidence = {
            k: result.get(k) for k in ("sent", "received", "lost", "duplicates", "send_errors")
        }
        if flow_ok(result):
            rows.append(
                passed(
                    "traffic",
                    f.name,
                    f"{probe.kind}: {result.get('received')}/{result.get('sent')} arrived"
                    f" ({f.size} bytes)",
                    **where,
                )
            )
            continue
        what = f"{probe.kind}: {result.get('lost')} of {result.get('sent')} lost"
        if result.get("send_errors"):
            what += (
                f"; {result['send_errors']} frames of {f.size} bytes could not leave "
                f"{f.src}:{f.pin} (its MTU is below that, or it is down)"
            )
        rows.append(
            failed(
                "traffic",
                f.name,
                what,
                "see the localisation row that names its element",
                evidence={**evidence, "path": list(probe.path)},
                **where,
            )
        )
    return rows


def server_port_findings(
    probes: list[PlannedProbe], results: list[dict[str, Any]], planned_mtu: int
) -> list[Finding]:
    """Each server port a flow was pinned to, as its sender's kernel read it when the flow
    started (the probe agent's ``ports``): up, at the planned MTU. A port the agent did not
    report (an older agent) gets no row; the flows still judge it."""
    rows: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for probe, result in zip(probes, results, strict=True):
        src, pin = probe.flow.src, probe.flow.pin
        facts = (result.get("ports") or {}).get(pin) if pin else None
        if pin is None or not facts or (src, pin) in seen:
            continue
        seen.add((src, pin))
        rows.append(_server_port_row(src, pin, facts, planned_mtu))
    return rows


def _server_port_row(server: str, port: str, facts: Mapping[str, Any], planned_mtu: int) -> Finding:
    element, where = f"{server}:{port}", {"device": server, "port": port}
    oper, mtu, speed = str(facts.get("oper")), int(facts.get("mtu", -1)), facts.get("speed", -1)
    evidence = {"operstate": oper, "mtu": mtu, "speed_mbps": speed}
    if oper != "up":
        return failed(
            "links",
            element,
            f"server port link down (operstate {oper})",
            f"bring {element} up: its cable, NIC and `ip link set {port} up` on {server}",
            evidence=evidence,
            **where,
        )
    if mtu != planned_mtu:
        return failed(
            "links",
            element,
            f"server port MTU {mtu}, planned {planned_mtu}",
            f"set the MTU of {element} to the planned {planned_mtu} (dpctl hosts)",
            evidence=evidence,
            **where,
        )
    rate = f", {int(speed) // 1000} Gbit/s" if isinstance(speed, int) and speed > 0 else ""
    return passed("links", element, f"server port up, MTU {mtu}{rate}", **where)


def server_lldp_findings(
    fabric: Fabric,
    plane: int | None,
    servers_lldp: Mapping[str, Mapping[str, list[dict[str, Any]]]],
) -> list[Finding]:
    """Each planned server cable as its server's own lldpd sees it (servers whose lldpd
    answered): the planned leaf port passes; another device or port fails, naming what the
    server sees; nothing seen is a skip (the leaf's side judges whether the cable is there:
    a server's lldpd may only listen, or have just started)."""
    rows: list[Finding] = []
    for lk in fabric.links:
        if lk.kind != "host" or (plane is not None and lk.plane != plane):
            continue
        if lk.a_device not in servers_lldp:
            continue
        here, planned = (lk.a_device, lk.a_port), (lk.z_device, lk.z_port)
        name, where = cable_name(lk), {"device": lk.a_device, "port": lk.a_port}
        seen = [
            (str(n.get("hostname", "")), str(n.get("port", "")))
            for n in servers_lldp[lk.a_device].get(lk.a_port, [])
        ]
        if not seen:
            rows.append(
                skipped(
                    "cabling",
                    name,
                    f"{end_name(here)}'s lldpd lists no neighbour (the leaf's side judges it)",
                    **where,
                )
            )
        elif seen[0] == planned:
            rows.append(passed("cabling", name, "the server's LLDP sees the planned port", **where))
        else:
            rows.append(
                failed(
                    "cabling",
                    name,
                    f"{end_name(here)}'s LLDP sees {end_name(seen[0])}, planned "
                    f"{end_name(planned)}",
                    f"cable {end_name(here)} to {end_name(planned)} (see the punch list)",
                    evidence={"server_sees": end_name(seen[0])},
                    **where,
                )
            )
    return rows


def localisation_findings(
    probes: list[PlannedProbe], results: list[dict[str, Any]], evidence: Mapping[str, str]
) -> list[Finding]:
    """The elements the failing server flows share, named with the evidence: the elements'
    own checks, and a sender that could not put full-size frames on its pinned port."""
    pairs = list(zip(probes, results, strict=True))
    probed = [Probed(p.name, flow_ok(r), p.path, p.sure) for p, r in pairs]
    senders = {p.path[0]: p for p, r in pairs if r.get("send_errors")}
    known = dict(evidence)
    for element, p in senders.items():
        known.setdefault(
            element, f"{p.flow.src}:{p.flow.pin} could not send {p.flow.size}-byte frames"
        )
    return [_suspect_row(s, senders, evidence) for s in localise(probed, known)]


def _down(evidence: str) -> bool:
    return any(w in evidence for w in ("link down", "no link", "admin down"))


def _suspect_row(
    suspect: Suspect, senders: Mapping[str, PlannedProbe], evidence: Mapping[str, str]
) -> Finding:
    names = " or ".join(suspect.elements)
    own = "; ".join(suspect.own_evidence)
    flows = {"probes": list(suspect.probes)}
    if not suspect.elements:
        return failed(
            "localisation",
            "no single element",
            f"{len(suspect.probes)} failing flow(s) cross only elements other flows crossed "
            "fine: look at their far side (the receiving server's ports) and the rows above",
            "check the receiving servers' ports of these flows",
            evidence=flows,
        )
    what = f"{len(suspect.probes)} failing flow(s) all pass through {names}" + (
        f" ({own})" if own else ""
    )
    mtu = [e for e in suspect.elements if e in senders and not _down(evidence.get(e, ""))]
    if mtu:
        flow = senders[mtu[0]].flow
        what += "; the port is up but full-size frames could not leave it: its MTU is too small"
        fix = f"set the MTU of {flow.src}:{flow.pin} to the planned {flow.size} (dpctl hosts)"
    elif suspect.exact:
        fix = f"check {names}: cable, transceivers, both ports"
    else:
        fix = f"one of {names}: the traffic cannot tell them apart; check each"
    return failed("localisation", names, what, fix, evidence=flows)
