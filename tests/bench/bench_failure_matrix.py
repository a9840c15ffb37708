"""The failure/drain matrix: one command, measured in the embedded lab.

For each dual-leaf mode, with and without cross-plane protection, with continuous probe
flows between servers on different leaves, it runs: drain + undrain of a leaf (switch side
only, then with the servers moving off it first), a server link down/up, a leaf down/up, a
spine down/up, an FRR crash on a leaf (bgpd killed, watchfrr restarts it), a planned FRR
restart of a leaf (drained first, undrained after; switch side only, then with
--hosts-first) and its AUX (pair) link down/up, and writes a table
(mode, protection, event, flow: lost packets, duplicates, reordered, longest gap ms) to
docs/failure-matrix.md (and the rows as .json; each JSON row also carries the event's steps
and, per sub-flow, its loss, its longest gap and when that gap ended, and (since
2026-12-05) when its reordered packets arrived, in seconds from the event's start, so that
a loss or a reordering can be placed in the event). What the switches logged in each
variant (the lab's syslog: FRR, lldpd and the leaves' ARP-to-host agents) is kept next to OUT
as OUT-stem.<mode>-<on|off>.syslog; each row's ``event_started_guest`` is its event's start on
that log's clock (the guest's).

Run (root, after .ci/setup):  python tests/bench/bench_failure_matrix.py
  [--quick] [--event WORD]... [--skip WORD]... [--mode dual-arp|evpn-mh]... [--protection off|on]...
  [--out FILE] [--fresh]
--event and --skip match whole words of an event's name ("drain" is not "drained"; "FRR
restart" is not "watchfrr restarts"). The rows of the earlier OUT .json that a run does not
measure again are kept (--fresh: start the table over).
Takes hours on a 2-core machine (four labs in a QEMU TCG guest, one after another; under the
probes' load one drain + undrain takes about 13 min; --skip drain: 20-25 min per variant).
Probes at 100 packets/s per flow: each event starts once every flow is flowing (on the loaded
guest a sender can start tens of seconds after it was asked to) and the flows end 20 s after
the event returns (sized for 1,800 s); each row says whether its flow covered the event. An FRR
crash returns once the leaf's BGP sessions are up again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.drain import DrainReport, drain, undrain  # noqa: E402
from controller.facts import Fabric  # noqa: E402
from controller.generator import build_fabric  # noqa: E402
from controller.intent import intent_from_data  # noqa: E402
from controller.lab import (  # noqa: E402
    LabSession,
    down,
    run_probe,
    stop_probe,
    wait_probes_flowing,
)
from controller.lab.fabric import lab_dir  # noqa: E402
from tests.bench.labbench import (  # noqa: E402
    Reach,
    deployed_lab,
    exit_on_sigterm,
    seconds_to_healthy,
)

PREFIX = "dpm-"
RATE = 100.0  # packets/s per flow, over all its sub-flows
SUBFLOWS = 4
PROBE_S = 1800  # upper bound of an event; the probes end TAIL_S after it returns
TAIL_S = 20
BASELINE_S = 3  # flowing before the event starts
FLOWING_TIMEOUT_S = 300
LEAF, SPINE, SERVER_PORT = "p1-g1-leaf1", "p1-spine1", ("srv0001", "nic1p1")
TIMELINE: list[tuple[float, str]] = []
"""The running event's steps (host wall clock, name): with each sub-flow's gap_end in the
rows, it places a loss in the event (which drain step, the link's down or its up)."""


def why_not(report: DrainReport) -> str:
    """What made a drain or undrain fail, first (the matrix keeps 600 characters of it)."""
    failed_steps = [step for step in report.steps if not step.get("ok", True)]
    return json.dumps(
        {
            "action": report.action,
            "checks_failed": report.checks_failed,
            "failed_steps": failed_steps,
            "refusals": report.refusals,
        },
        default=str,
    )


def mark(_device: str, step: str) -> None:
    TIMELINE.append((time.time(), step))


def flows(fabric: Fabric) -> dict[str, tuple[str, str, str, str]]:
    """name -> (src, dst, dst ip, src ip). The affected leaf serves rail 1 of plane 1; each
    flow leaves from the NIC of its source address and is split into SUBFLOWS sub-flows,
    which the servers' bonds hash over both planes."""
    a, b = fabric.servers[0], fabric.servers[1]
    return {
        "into affected leaf (srv0002 r2 -> srv0001 r1)": (
            b.name,
            a.name,
            a.nics[0].ip,
            b.nics[1].ip,
        ),
        "from affected leaf (srv0001 r1 -> srv0002 r2)": (
            a.name,
            b.name,
            b.nics[1].ip,
            a.nics[0].ip,
        ),
        "other leaves only (srv0001 r2 -> srv0002 r2)": (
            a.name,
            b.name,
            b.nics[1].ip,
            a.nics[1].ip,
        ),
    }


def _node_ns(name: str) -> str:
    return f"{PREFIX}{name}"


def _links(fabric: Fabric, device: str) -> list[str]:
    ports = []
    for lk in fabric.links_by_device[device]:
        ports.append(lk.a_port if lk.a_device == device else lk.z_port)
    return ports


def events(fabric: Fabric, access: Reach, s: LabSession) -> dict[str, Callable[[], None]]:
    def set_links(device: str, state: str) -> None:
        mark(device, f"links {state}")
        batch = "\n".join(
            f"ip -n {_node_ns(device)} link set {p} {state}" for p in _links(fabric, device)
        )
        s.root_run(batch)

    def down_up(device: str, hold: float) -> Callable[[], None]:
        def run() -> None:
            set_links(device, "down")
            time.sleep(hold)
            set_links(device, "up")

        return run

    def server_link() -> None:
        srv, port = SERVER_PORT
        mark(srv, "link down")
        s.root_run(f"ip -n {_node_ns(srv)} link set {port} down")
        time.sleep(10)
        mark(srv, "link up")
        s.root_run(f"ip -n {_node_ns(srv)} link set {port} up")

    def drain_undrain(hosts_first: bool) -> Callable[[], None]:
        def run() -> None:
            drained = drain(
                fabric, LEAF, access.access, access.state, hosts_first=hosts_first, progress=mark
            )
            assert drained.ok, why_not(drained)
            mark(LEAF, "undrain")
            back = undrain(
                fabric, LEAF, access.access, access.state, hosts_first=hosts_first, progress=mark
            )
            assert back.ok, why_not(back)

        return run

    aux_ports = [
        lk.a_port if lk.a_device == LEAF else lk.z_port
        for lk in fabric.links_by_device[LEAF]
        if lk.kind == "aux"
    ]

    def aux_link() -> None:
        aux = aux_ports[0]
        mark(LEAF, "aux down")
        s.root_run(f"ip -n {_node_ns(LEAF)} link set {aux} down")
        time.sleep(10)
        mark(LEAF, "aux up")
        s.root_run(f"ip -n {_node_ns(LEAF)} link set {aux} up")

    def restart_frr() -> None:
        ns = _node_ns(LEAF)
        s.root_run(
            f"unshare -u sh -c 'hostname {LEAF}; /usr/lib/frr/frrinit.sh restart {ns}' "
            ">/dev/null 2>&1"
        )

    def frr_crash() -> None:
        """bgpd dies (SIGKILL: no withdrawal, no NOTIFICATION) and FRR's own supervisor,
        watchfrr, starts it again while zebra keeps running, as on a switch (FRR 8.4's
        watchfrr did so within 4 s of a kill -9 on the host, 2026-12-02). Until 2026-12-02
        the event restarted all of FRR on top, racing watchfrr's own restart of bgpd."""
        pid_file = f"/run/frr/{_node_ns(LEAF)}/bgpd.pid"
        sessions = s.bgp_established(LEAF)
        before = s.root_run(f"cat {pid_file}")[1].strip()
        if not before.isdigit():
            raise AssertionError(f"no bgpd pid in {pid_file}: {before!r}")
        mark(LEAF, "bgpd killed")
        s.root_run(f"kill -9 {before}")
        deadline = time.monotonic() + 120
        while True:
            now = s.root_run(f"p=$(cat {pid_file}) && kill -0 $p && echo $p")[1].strip()
            if now and now != before:
                mark(LEAF, "bgpd running again (watchfrr)")
                break
            if time.monotonic() > deadline:
                raise AssertionError("watchfrr did not start bgpd again within 120 s")
            time.sleep(0.5)
        # the flows go on until the leaf has relearnt its routes: what that costs shows too
        s.wait_bgp_established(LEAF, len(sessions), timeout=300, interval=1.0)
        mark(LEAF, f"its {len(sessions)} BGP sessions up again")

    def frr_planned(hosts_first: bool) -> Callable[[], None]:
        """What the README asks for a planned FRR restart: drain, restart, undrain (bgpd
        withdraws its routes as it stops, FRRouting/frr#12041, so no restart is hitless
        on its own); with ``hosts_first`` the servers move off the leaf first and back
        last, as the README's lossless drain does."""

        def run() -> None:
            drained = drain(
                fabric, LEAF, access.access, access.state, hosts_first=hosts_first, progress=mark
            )
            assert drained.ok, why_not(drained)
            mark(LEAF, "FRR restart")
            restart_frr()
            assert seconds_to_healthy(fabric, access) is not None, "no healthy fabric after it"
            mark(LEAF, "undrain")
            back = undrain(
                fabric, LEAF, access.access, access.state, hosts_first=hosts_first, progress=mark
            )
            assert back.ok, why_not(back)

        return run

    chosen = {
        f"drain + undrain {LEAF}": drain_undrain(False),
        f"drain + undrain {LEAF} --hosts-first": drain_undrain(True),
        f"server link {SERVER_PORT[0]}:{SERVER_PORT[1]} down 10 s": server_link,
        f"leaf {LEAF} down 10 s (all links)": down_up(LEAF, 10),
        f"spine {SPINE} down 10 s (all links)": down_up(SPINE, 10),
        f"FRR crash on {LEAF} (bgpd killed, watchfrr restarts it)": frr_crash,
        f"FRR planned restart on {LEAF} (drained first)": frr_planned(False),
        f"FRR planned restart on {LEAF} (drained first, --hosts-first)": frr_planned(True),
    }
    if aux_ports:  # EVPN-MH, or dual-ARP with cross-plane protection
        chosen[f"AUX link of {LEAF} down 10 s"] = aux_link
    return chosen


def measure(
    fabric: Fabric,
    state_dir: Path,
    action: Callable[[], None],
    first_port: int,
) -> dict[str, Any]:
    """Probe every flow while ``action`` runs. A probe that fails is reported as such (its
    error in the row), never dropped; so is an action that fails (a drain refused, say): the
    matrix goes on with the next event. The probes are sized for PROBE_S and end TAIL_S after
    the action returns (their rows count what was sent until then)."""
    results: dict[str, Any] = {}
    event_error = None
    seconds = PROBE_S

    def probe(index: int, name: str, src: str, dst: str, ip: str, src_ip: str) -> None:
        count = int(seconds * RATE)
        try:
            with LabSession.open(state_dir) as session:
                results[name] = run_probe(
                    session,
                    src,
                    dst,
                    ip,
                    count=count,
                    rate_pps=RATE,
                    port=first_port + index,
                    src_ip=src_ip,
                    subflows=SUBFLOWS,
                )
        except Exception as exc:  # recorded in the matrix
            results[name] = {"sent": count, "error": f"{type(exc).__name__}: {exc}"}

    threads = [
        threading.Thread(target=probe, args=(i, n, *f))
        for i, (n, f) in enumerate(flows(fabric).items())
    ]
    ports = [first_port + index for index in range(len(threads))]
    with LabSession.open(state_dir) as session:  # the guest's clock, against the host's
        before = time.time()
        guest_now = float(session.root_run("date +%s.%N")[1] or "nan")
        guest_offset = guest_now - (before + time.time()) / 2
    for t in threads:
        t.start()
    TIMELINE.clear()
    started, started_at = time.monotonic(), time.time()
    try:
        # The event starts only once every flow is flowing, BASELINE_S later: on the loaded
        # guest a sender can start tens of seconds after it was asked to (2026-12-02: every
        # flow of a matrix run started after its event was over, and reported 0 lost).
        with LabSession.open(state_dir) as session:
            wait_probes_flowing(session, ports, timeout=FLOWING_TIMEOUT_S)
        time.sleep(BASELINE_S)
        TIMELINE.clear()
        started, started_at = time.monotonic(), time.time()
        action()
    except Exception as exc:  # recorded in the matrix
        event_error = f"{type(exc).__name__}: {exc}"[:600]
    finally:
        took = time.monotonic() - started
        time.sleep(TAIL_S)  # what the event's last step still moves shows in the flows
        with LabSession.open(state_dir) as session:
            for port in ports:
                stop_probe(session, port)
        for t in threads:
            t.join(timeout=seconds + 120)

    def since_start(epoch: float | None) -> float | None:
        return round(epoch - guest_offset - started_at, 2) if epoch else None

    windows = {
        name: [since_start(probe.get("first_arrival")), since_start(probe.get("last_arrival"))]
        for name, probe in results.items()
    }

    def loss_times(probe: dict[str, Any]) -> list[list[list[float]]]:
        """Each sub-flow's lost runs as [from, to] s since the event's start: the sender is
        paced, so packet seq left first_arrival + (seq - first_seq) / RATE."""
        start = since_start(probe.get("first_arrival"))
        if start is None:
            return []
        first = probe.get("first_seq", 0)
        return [
            [
                [round(start + (a - first) / RATE, 2), round(start + (b - first) / RATE, 2)]
                for a, b in f.get("lost_runs", [])
            ]
            for f in probe.get("per_subflow", [])
        ]

    covered = {
        # the flow's first packet before the event, its sender still sending at its end
        name: bool(w[0] is not None and w[0] <= 0 and w[0] + results[name]["sent"] / RATE >= took)
        for name, w in windows.items()
    }
    return {
        "event_seconds": round(took, 1),
        # the event's start on the guest's clock: the kept syslog's time (FRR, the agents)
        "started_guest": round(started_at + guest_offset, 3),
        "flows": results,
        "event_error": event_error,
        # seconds from the event's start: the first and the last packet of each flow
        "windows": windows,
        "covered": covered,
        "loss_at": {name: loss_times(probe) for name, probe in results.items()},
        # seconds from the event's start: when each sub-flow's reordered packets arrived
        "reordered_at": {
            name: [
                [when for at in f.get("reordered_at", []) if (when := since_start(at)) is not None]
                for f in probe.get("per_subflow", [])
            ]
            for name, probe in results.items()
        },
        # seconds from the event's start: its steps, and when each sub-flow's longest gap ended
        "timeline": [[round(at - started_at, 2), step] for at, step in TIMELINE],
        "gap_ends": {
            name: [since_start(f.get("gap_end")) for f in probe.get("per_subflow", [])]
            for name, probe in results.items()
        },
    }


def names(event: str, word: str) -> bool:
    """Whether ``word`` (one or more words) occurs in ``event`` as whole words, any case."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", event, re.IGNORECASE) is not None


def selected(event: str, quick: bool, words: list[str], skip: list[str] | None = None) -> bool:
    if any(names(event, w) for w in skip or []):
        return False
    if words:
        return any(names(event, w) for w in words)
    return not quick or event.startswith("drain")


def run_variant(
    mode: str,
    protection: bool,
    quick: bool,
    words: list[str] | None = None,
    skip: list[str] | None = None,
    syslog_to: Path | None = None,
) -> list[dict[str, Any]]:
    data = yaml.safe_load((ROOT / "inventory" / f"lab-{mode}.yaml").read_text())
    data["cross_plane_protection"] = protection
    data["name"] = f"{data['name']}{'-prot' if protection else ''}"
    fabric = build_fabric(intent_from_data(data))
    state_dir = lab_dir(fabric.intent.name)
    rows = []
    try:
        lab: dict[str, Any] = {}
        access = deployed_lab(fabric, state_dir, PREFIX, lab)
        servers_lacp = sorted(set(lab.get("servers", {}).values()))
        assert seconds_to_healthy(fabric, access) is not None, "fabric did not verify after deploy"
        with LabSession.open(state_dir) as s:
            for number, (event, action) in enumerate(events(fabric, access, s).items()):
                if not selected(event, quick, words or [], skip):
                    continue
                # each event its own ports: a late receiver of the last one cannot collide
                result = measure(fabric, state_dir, action, 5400 + 10 * number)
                healthy = seconds_to_healthy(fabric, access) is not None
                measured = time.strftime("%Y-%m-%d", time.gmtime())
                for flow, probe in result["flows"].items():
                    rows.append(
                        {
                            "mode": mode,
                            "protection": protection,
                            "event": event,
                            "flow": flow,
                            "sent": probe["sent"],
                            "lost": probe.get("lost"),
                            "subflows_hit": probe.get("subflows_hit"),
                            "duplicates": probe.get("duplicates"),
                            "reordered": probe.get("reordered"),
                            "max_gap_ms": probe.get("max_gap_ms"),
                            "network_gap_ms": probe.get("network_gap_ms"),
                            "sender_paused_ms": probe.get("sender_paused_ms"),
                            "extra_delay_ms": probe.get("extra_delay_ms"),
                            "healthy_after": healthy,
                            "error": probe.get("error"),
                            "event_error": result["event_error"],
                            "timeline": result["timeline"],
                            "subflow_lost": [f["lost"] for f in probe.get("per_subflow", [])],
                            "subflow_gap_ms": [
                                f["max_gap_ms"] for f in probe.get("per_subflow", [])
                            ],
                            "subflow_sender_paused_ms": [
                                f.get("sender_paused_ms") for f in probe.get("per_subflow", [])
                            ],
                            "subflow_gap_end_s": result["gap_ends"].get(flow, []),
                            "event_seconds": result["event_seconds"],
                            "event_started_guest": result["started_guest"],
                            "flow_window_s": result["windows"].get(flow),
                            "covered": result["covered"].get(flow, False),
                            "subflow_loss_at_s": result["loss_at"].get(flow, []),
                            "subflow_reordered_at_s": result["reordered_at"].get(flow, []),
                            "measured": measured,
                            "kernel": lab.get("kernel", ""),
                            "servers": "; ".join(servers_lacp),
                        }
                    )
                    print(json.dumps(rows[-1]), flush=True)
    finally:
        if syslog_to is not None:
            keep_syslog(state_dir, syslog_to)
        down(state_dir, prefix=PREFIX)
    return rows


def keep_syslog(state_dir: Path, target: Path) -> None:
    """What the switches logged during the variant (FRR, lldpd), for the causes of its rows."""
    try:
        with LabSession.open(state_dir) as s:
            found = s.syslog(lines=100_000)
    except Exception as exc:  # a lab that never came up has no log: say so, go on
        target.write_text(f"no syslog: {type(exc).__name__}: {exc}\n")
        return
    target.write_text(
        "".join(f"{m['time']:.3f} {m['node']} {m['severity']} {m['message']}\n" for m in found)
    )


def dates(rows: list[dict[str, Any]]) -> str:
    """Each variant's measuring days: a run keeps the rows it does not measure again, so a
    variant's rows can come from several days (each row's own day is in the .json)."""
    seen: dict[str, set[str]] = {}
    for r in rows:
        protection = "on" if r["protection"] else "off"
        variant = f"{r['mode']} protection {protection}, kernel {_kernel(r)}"
        seen.setdefault(variant, set()).add(r.get("measured", "?"))
    return "; ".join(f"{v} {', '.join(sorted(d))}" for v, d in seen.items())


def write_report(rows: list[dict[str, Any]], out: Path) -> None:
    machine = (
        f"{platform.node()} — {os.cpu_count()} cores, Linux {platform.release()}; lab in a "
        "QEMU TCG guest (Debian's kernel: column 'lab kernel'), FRR 8.4"
    )
    lines = [
        "# Failure and drain matrix",
        "",
        f"Measured on {machine} (dates per variant: {dates(rows)}), by "
        "`python tests/bench/bench_failure_matrix.py`. Each probe flow: UDP, "
        f"{RATE:.0f} packets/s, sequence-numbered, leaving from the NIC of its source address "
        f"and split over {SUBFLOWS} source ports (sub-flows) that the servers' bonds hash over "
        "both planes. 'lost' counts packets that never arrived, 'hit' the sub-flows that lost "
        "any, 'dup' the packets received twice, 'reord' the packets that arrived after a later "
        "one of their sub-flow, 'gap' the longest silence of one sub-flow "
        f"(normal spacing: {1000 * SUBFLOWS / RATE:.0f} ms). Since 2026-12-04 evening each "
        "packet carries its sender's clock: 'sender paused' is the longest the sending probe "
        "itself fell behind its schedule between two packets of one sub-flow (the emulated "
        "guest not running it: a gap that long with nothing lost is the sender's, not the "
        "network's), 'extra delay' the most a packet took beyond the flow's fastest (held on "
        "the way: a queue, a neighbour being resolved); '-' in rows measured before. Since "
        "2026-12-02 each event starts "
        f"only once every flow is flowing (then {BASELINE_S} s), the flows end {TAIL_S} s "
        "after it (so 'sent' varies), and 'flows cover event' says the flow's first packet "
        "came before the event and its sender still sent at the event's end; rows before "
        "that date were measured with flows started 5 s before the event and not checked, "
        "and on the loaded lab guest such a flow could start after its event was over. "
        "'lab kernel' is the guest's Linux (rows without it: Debian 12's 6.1). Since "
        "2026-12-04 the EVPN-MH servers' bonds run LACP's independent control where the "
        "kernel has it (`coupled_control 0`, see README; Debian's 6.1.192 and 6.12 do); "
        "each row's `servers` in the .json says what they ran, rows without it coupled.",
        "",
        "| mode | protection | event | flow | sent | lost | hit | dup | reord | longest gap ms "
        "| sender paused ms | extra delay ms | healthy after | flows cover event | lab kernel |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("event_error"):
            result = f"| event failed: {r['event_error'][:120]} | | | | | | "
        elif r.get("error"):
            result = f"| probe failed: {r['error'][:120]} | | | | | | "
        else:
            result = (
                f"| {r['lost']} | {r['subflows_hit']}/{SUBFLOWS} | {r['duplicates']} "
                f"| {_or_dash(r.get('reordered'))} | {r['max_gap_ms']:.0f} "
                f"| {_ms_or_dash(r.get('sender_paused_ms'))} "
                f"| {_ms_or_dash(r.get('extra_delay_ms'))} "
            )
        lines.append(
            f"| {r['mode']} | {'on' if r['protection'] else 'off'} | {r['event']} | {r['flow']} "
            f"| {r['sent']} {result}| {'yes' if r['healthy_after'] else 'NO'} "
            f"| {_covered(r)} | {_kernel(r)} |"
        )
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")


def _ms_or_dash(value: float | None) -> str:
    """Milliseconds, rounded; '-' for rows measured before the probe stamped its packets
    (2026-12-04 evening)."""
    return "-" if value is None else f"{value:.0f}"


def _covered(row: dict[str, Any]) -> str:
    """Did the flow start before the event and send until after it? Rows measured before
    this was checked (2026-12-02) show '-'."""
    if "covered" not in row:
        return "-"
    return "yes" if row["covered"] else "NO"


def _kernel(row: dict[str, Any]) -> str:
    """The lab's kernel as major.minor (6.12): rows before it was recorded were all on 6.1
    (each row's full version is in the .json)."""
    version = str(row.get("kernel") or "6.1")
    return ".".join(version.split("-")[0].split("+")[0].split(".")[:2])


def _or_dash(value: Any) -> str:
    """Rows measured before the reordering column existed show '-'."""
    return "-" if value is None else str(value)


VARIANTS = [(m, p) for m in ("dual-arp", "evpn-mh") for p in (False, True)]


def merged(earlier: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The earlier rows, each (variant, lab kernel, event) measured again replaced by its new
    rows: a run on another kernel adds its rows beside the earlier ones. A variant whose FRR
    events are measured again drops its rows of the old undrained "FRR restart" event, which
    the crash and the planned (drained) restart replace, and a new crash replaces the old
    crash event's rows."""

    def variant(r: dict[str, Any]) -> tuple[str, bool, str]:
        return (r["mode"], r["protection"], _kernel(r))

    again = {(*variant(r), r["event"]) for r in new}
    frr_again = {variant(r) for r in new if r["event"].startswith("FRR")}
    crash_again = {variant(r) for r in new if r["event"].startswith("FRR crash")}
    return [
        r
        for r in earlier
        if (*variant(r), r["event"]) not in again
        and not (r["event"].startswith("FRR restart") and variant(r) in frr_again)
        # the crash event before 2026-12-02 also restarted all of FRR (another name)
        and not (r["event"].startswith("FRR crash") and variant(r) in crash_again)
    ] + new


FLOW_ORDER = ("into", "from", "other")
EVENT_ORDER = (
    "drain",
    "drain --hosts-first",
    "server",
    "leaf",
    "spine",
    "FRR restart",  # rows measured before the crash / planned split (a planned restart, undrained)
    "FRR crash",
    "FRR planned",
    "AUX",
)


def event_rank(event: str) -> int:
    if event.endswith("--hosts-first"):
        return EVENT_ORDER.index("drain --hosts-first")
    words = event.split()
    kind = " ".join(words[:2]) if words[0] == "FRR" else words[0]
    return EVENT_ORDER.index(kind)


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """By variant, then lab kernel (6.1 first), then event (in the order they run), then
    flow."""
    return sorted(
        rows,
        key=lambda r: (
            VARIANTS.index((r["mode"], r["protection"])),
            tuple(int(part) for part in _kernel(r).split(".") if part.isdigit()),
            event_rank(r["event"]),
            FLOW_ORDER.index(r["flow"].split()[0]),
        ),
    )


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="drain + undrain only")
    parser.add_argument(
        "--event", action="append", help="only events whose name contains WORD (repeatable)"
    )
    parser.add_argument(
        "--skip", action="append", help="not the events whose name contains WORD (repeatable)"
    )
    parser.add_argument("--mode", choices=("dual-arp", "evpn-mh"), action="append")
    parser.add_argument("--protection", choices=("off", "on"), action="append")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "failure-matrix.md")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="drop the rows of the earlier OUT .json that this run does not measure again",
    )
    args = parser.parse_args()
    # only where not given: mkdtemp as setdefault's argument left an empty directory behind
    for variable, prefix in (("DPCTL_LAB_DIR", "labs"), ("DPCTL_STATE_DIR", "state")):
        if not os.environ.get(variable):
            os.environ[variable] = tempfile.mkdtemp(prefix=f"dpctl-matrix-{prefix}-")
    os.environ["DPCTL_LAB_PREFIX"] = PREFIX
    run = [
        (mode, protection == "on")
        for mode in args.mode or ("dual-arp", "evpn-mh")
        for protection in args.protection or ("off", "on")
    ]
    earlier_file = args.out.with_suffix(".json")
    rows = json.loads(earlier_file.read_text()) if earlier_file.exists() and not args.fresh else []
    for mode, protection in run:
        logs = args.out.with_name(f"{args.out.stem}.{mode}-{'on' if protection else 'off'}.syslog")
        rows = merged(rows, run_variant(mode, protection, args.quick, args.event, args.skip, logs))
        write_report(ordered(rows), args.out)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
