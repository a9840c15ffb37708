"""`dpctl lab impair`: faults injected into a running embedded lab, to rehearse and to test
`dpctl accept` against.

In the manner of containerlab's ``tools netem`` (containerlab.dev/cmd/tools/netem/set: netem
delay, jitter, loss on one end of a link), a CABLE is one end as in ``cabling.csv``,
``device:port``; the faults act on that end's interface inside the lab's guest:

- ``down``: the interface down (a dead port: the far end loses carrier);
- ``loss PCT`` / ``delay MS``: a netem qdisc (sch_netem) on the end's egress, and on the far
  end's too unless ``one_way`` (then only what leaves this end is lost: one direction);
- ``mtu N``: the interface's MTU;
- ``swap A B``: the cables in ports A and B exchanged (see :func:`swap_script`);
- ``clear``: everything put back as planned.

netem replaces the port's root qdisc (a switch port's RoCE prio/RED qdiscs); clearing puts the
port's own lines of the switch's rendered ``qos.tc`` back when the port had them. What is
impaired is kept in ``impair.json`` beside the lab's state, so ``dpctl lab status`` lists it
and ``clear`` knows what to undo.

In a lab split over two instances (controller/lab/split.py) each end is acted on in the
instance its device runs in; a port set down there takes the far end's carrier with it
through the split's carrier relay. A swap moves interfaces between namespaces, which only
works inside one machine: a swap whose moved ends are in two instances is refused.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from controller.facts import Fabric
from controller.lab.errors import LabError
from controller.lab.scripts import lldpd_restart_script, run_dir
from controller.lab.session import LabSession

IMPAIR_FILE = "impair.json"
KINDS = ("down", "loss", "delay", "mtu")


class ImpairError(LabError):
    """A bad CABLE or option (nothing was changed)."""


End = tuple[str, str]


@dataclass
class Impairment:
    cable: str
    kind: str
    value: float = 0.0
    one_way: bool = False
    saved: dict[str, Any] = field(default_factory=dict)
    """What to put back: the MTU before, whether each netem'd end had a root prio qdisc."""

    def describe(self) -> str:
        if self.kind == "down":
            return f"{self.cable} down"
        if self.kind == "mtu":
            return f"{self.cable} MTU {self.value:g}"
        unit = "%" if self.kind == "loss" else " ms"
        way = " one way (egress of this end)" if self.one_way else " both ways"
        return f"{self.cable} {self.kind} {self.value:g}{unit}{way}"


@dataclass
class ImpairState:
    impairments: list[Impairment] = field(default_factory=list)
    swaps: list[tuple[str, str]] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    """Swaps whose new cabling LLDP did not show within LLDP_SETTLE_S (not saved)."""

    def describe(self) -> list[str]:
        lines = [i.describe() for i in self.impairments]
        return lines + [f"cables in {a} and {b} swapped" for a, b in self.swaps]


def load(state_dir: Path) -> ImpairState:
    path = state_dir / IMPAIR_FILE
    if not path.exists():
        return ImpairState()
    data = json.loads(path.read_text())
    return ImpairState(
        [Impairment(**i) for i in data.get("impairments", [])],
        [(a, b) for a, b in data.get("swaps", [])],
    )


def save(state_dir: Path, state: ImpairState) -> None:
    path = state_dir / IMPAIR_FILE
    if not state.impairments and not state.swaps:
        path.unlink(missing_ok=True)
        return
    body = {"impairments": [asdict(i) for i in state.impairments], "swaps": state.swaps}
    path.write_text(json.dumps(body, indent=2) + "\n")


def parse_end(fabric: Fabric, text: str) -> End:
    """``device:port`` of a planned cable, else ImpairError naming it."""
    device, _, port = text.partition(":")
    for link in fabric.links_by_device.get(device, []):
        if (link.a_device, link.a_port) == (device, port) or (link.z_device, link.z_port) == (
            device,
            port,
        ):
            return device, port
    raise ImpairError(
        f"CABLE {text!r}: not a cable end of {fabric.intent.name}'s plan (device:port)"
    )


def wiring(fabric: Fabric, swaps: list[tuple[str, str]]) -> dict[End, End]:
    """Each end's far end now: the plan with the recorded swaps applied, in order."""
    peer: dict[End, End] = {}
    for lk in fabric.links:
        a, z = (lk.a_device, lk.a_port), (lk.z_device, lk.z_port)
        peer[a], peer[z] = z, a
    for first, second in swaps:
        x, y = _split(first), _split(second)
        px, py = peer[x], peer[y]
        peer[px], peer[y] = y, px
        peer[py], peer[x] = x, py
    return peer


def _split(text: str) -> End:
    device, _, port = text.partition(":")
    return device, port


def _ns(session: LabSession, device: str) -> str:
    return shlex.quote(session.state.nodes[device].namespace)


def netem_script(session: LabSession, end: End, kind: str, value: float) -> str:
    ns, dev = _ns(session, end[0]), shlex.quote(end[1])
    spec = f"loss {value:g}%" if kind == "loss" else f"delay {value:g}ms"
    return f"tc -n {ns} qdisc replace dev {dev} root netem {spec}"


def _guest(session: LabSession, end: End) -> int:
    return session.guest_of(end[0])


def root_kind(session: LabSession, end: End) -> str:
    ns, dev = _ns(session, end[0]), shlex.quote(end[1])
    _rc, out, _err = session.root_run(
        f"tc -n {ns} -j qdisc show dev {dev} root", guest=_guest(session, end)
    )
    try:
        return str(json.loads(out or "[]")[0].get("kind", ""))
    except (ValueError, IndexError):
        return ""


def link_info(session: LabSession, end: End) -> dict[str, Any]:
    ns, dev = _ns(session, end[0]), shlex.quote(end[1])
    rc, out, err = session.root_run(
        f"ip -n {ns} -j -d link show dev {dev}", guest=_guest(session, end)
    )
    if rc != 0:
        raise LabError(f"{end[0]}:{end[1]}: no such interface in the lab ({err.strip()})")
    info: dict[str, Any] = json.loads(out)[0]
    return info


def swap_script(session: LabSession, m1: End, m2: End, temp: str) -> str:
    """Exchange two interfaces' places: the netdev at ``m1`` becomes ``m2`` (its namespace
    and name) and the other way round, each keeping the MTU and bond of the place it takes.
    A veth pair cannot be re-paired, so this moves the cable's far ends instead: exchanging
    the cables in ports X and Y is the same re-cabling as exchanging those in their far
    ends, and the caller picks the ends that carry the least configuration (a server's bond
    member, or a switch port known to FRR by name only)."""
    info = {m: link_info(session, m) for m in (m1, m2)}
    lines = []
    for i, m in enumerate((m1, m2)):
        ns, dev = _ns(session, m[0]), shlex.quote(m[1])
        lines += [f"ip -n {ns} link set {dev} down"]
        if info[m].get("master"):
            lines.append(f"ip -n {ns} link set {dev} nomaster")
        lines.append(f"ip -n {ns} link set {dev} name {temp}{i}")
    if m1[0] != m2[0]:
        lines.append(f"ip -n {_ns(session, m1[0])} link set {temp}0 netns {_ns(session, m2[0])}")
        lines.append(f"ip -n {_ns(session, m2[0])} link set {temp}1 netns {_ns(session, m1[0])}")
    for i, (_src, dst) in enumerate(((m1, m2), (m2, m1))):
        ns, dev = _ns(session, dst[0]), shlex.quote(dst[1])
        lines.append(f"ip -n {ns} link set {temp}{i} name {dev} mtu {int(info[dst]['mtu'])}")
        if info[dst].get("master"):
            lines.append(f"ip -n {ns} link set {dev} master {shlex.quote(info[dst]['master'])}")
        lines.append(f"ip -n {ns} link set {dev} up")
    return "\n".join(["set -e", *lines]) + "\n"


def lldp_refresh(session: LabSession, devices: set[str]) -> None:
    """Make each device's lldpd send at once (``lldpcli update``): a re-cabled port's
    neighbours learn the new cabling now instead of at lldpd's next interval, and a renamed
    interface is taken up again (without it, a lab read LLDP's old cabling a minute later)."""
    run = run_dir(session.state.prefix)
    for guest, mine in _by_guest(session, devices).items():
        lines = [f"lldpcli -u {run}/{d}.lldpd.sock update >/dev/null 2>&1 || true" for d in mine]
        session.root_run("\n".join(lines) + "\n", guest=guest)


def _by_guest(session: LabSession, devices: set[str]) -> dict[int, list[str]]:
    """The devices of each instance the lab runs in, sorted."""
    grouped: dict[int, list[str]] = {}
    for device in sorted(devices):
        grouped.setdefault(session.guest_of(device), []).append(device)
    return grouped


def restart_lldpd(session: LabSession, fabric: Fabric, devices: set[str]) -> None:
    """Restart the lldpd of each of ``devices`` (the nodes whose ports a swap moved): an
    lldpd sometimes never took up a port moved into its namespace (a swap not seen in LLDP
    after 180 s, 2026-12-06), where a new one reads its ports afresh and sends at once."""
    from controller.lab.fabric import lab_topology

    nodes = {node.name: node for node in lab_topology(fabric).nodes}
    run = run_dir(session.state.prefix)
    for guest, mine in _by_guest(session, devices).items():
        script = "\n".join(
            lldpd_restart_script(run, nodes[d], session.state.nodes[d].namespace)
            for d in mine
            if nodes[d].ports
        )
        _run(session, script + "\n", f"restarting lldpd on {', '.join(mine)}", guest)


LLDP_SETTLE_S = 180.0
"""A swap took 60-100 s to show in LLDP in the UML guest; once, on a loaded machine, more than
90 s (a port moved into a namespace not yet taken up by its lldpd)."""


def wait_lldp(session: LabSession, expect: dict[End, End], timeout: float = LLDP_SETTLE_S) -> bool:
    """Until each switch end in ``expect`` has the expected LLDP neighbour (asking lldpd to
    send every 10 s); False when ``timeout`` passed first."""
    run = run_dir(session.state.prefix)
    ends = {e: p for e, p in expect.items() if session.state.nodes[e[0]].kind == "switch"}
    deadline = time.monotonic() + timeout
    while True:
        out = ""
        for guest, mine in _by_guest(session, {d for d, _p in ends}).items():
            script = "\n".join(
                f"echo END {d}:{p}; lldpcli -u {run}/{d}.lldpd.sock -f keyvalue show neighbors "
                f"ports {shlex.quote(p)} 2>/dev/null"
                for d, p in ends
                if d in mine
            )
            out += session.root_run(script + "\n", guest=guest)[1]
        if all(_neighbour(out, e) == ends[e] for e in ends):
            return True
        if time.monotonic() > deadline:
            return False
        lldp_refresh(session, {e[0] for e in ends} | {p[0] for p in ends.values()})
        time.sleep(10.0)


def _neighbour(out: str, end: End) -> End | None:
    """The (device, port) lldpcli's keyvalue output names for ``end``."""
    block = out.partition(f"END {end[0]}:{end[1]}\n")[2].partition("END ")[0]
    name = re.search(rf"^lldp\.{re.escape(end[1])}\.chassis\.name=(.*)$", block, re.M)
    port = re.search(rf"^lldp\.{re.escape(end[1])}\.port\.ifname=(.*)$", block, re.M)
    return (name.group(1), port.group(1)) if name and port else None


def qos_lines(fabric: Fabric, end: End) -> list[str]:
    """The port's own lines of its switch's rendered qos.tc (what deploy applied)."""
    from controller.render.engine import render_device, structured_configs

    if end[0] not in fabric.switch_by_name:
        return []
    files = render_device(structured_configs(fabric, [end[0]])[end[0]])
    text = files.get("qos.tc", "")
    pattern = re.compile(rf"\bdev {re.escape(end[1])}\b")
    return [
        line
        for line in text.splitlines()
        if line and not line.startswith("#") and pattern.search(line)
    ]


def restore_qos(session: LabSession, fabric: Fabric, places: list[End]) -> None:
    """Put each switch port's own qos.tc lines back at ``places`` (the ports a swap gave
    another netdev): a netdev moved to another namespace arrives with no qdiscs, so after a
    swap and its undo the spines' RoCE ECN was gone (verify's roce-ecn failed on the lab the
    next tests took over, 2026-12-07)."""
    for place in places:
        restore = qos_lines(fabric, place)
        if not restore:
            continue
        ns, dev = _ns(session, place[0]), shlex.quote(place[1])
        body = "\n".join(restore)
        lines = [
            f"tc -n {ns} qdisc del dev {dev} root 2>/dev/null || true",
            f"tc -n {ns} -force -batch - <<'DPCTL_QOS'\n{body}\nDPCTL_QOS",
        ]
        script = "\n".join(lines) + "\n"
        _run(session, script, "restoring the ports' qdiscs", _guest(session, place))


def _run(session: LabSession, script: str, what: str, guest: int = 0) -> None:
    rc, _out, err = session.root_run(script, guest=guest)
    if rc != 0:
        raise LabError(f"impair {what} failed (rc {rc}): {err.strip()[-300:]}")


def impair(
    fabric: Fabric,
    state_dir: Path,
    cables: list[str],
    kind: str,
    value: float = 0.0,
    one_way: bool = False,
) -> ImpairState:
    """Impair each CABLE end (down, loss, delay, mtu) and record it."""
    if kind not in KINDS:
        raise ImpairError(f"unknown impairment {kind!r}: one of {', '.join(KINDS)}")
    if kind == "loss" and not 0 < value <= 100:
        raise ImpairError(f"--loss must be 0 < PCT <= 100, not {value:g}")
    if kind == "delay" and not 0 < value <= 60_000:
        raise ImpairError(f"--delay must be 0 < MS <= 60000, not {value:g}")
    if kind == "mtu" and not 68 <= value <= 65535:
        raise ImpairError(f"--mtu must be 68..65535, not {value:g}")
    ends = [parse_end(fabric, c) for c in cables]
    record = load(state_dir)
    peer = wiring(fabric, record.swaps)
    with LabSession.open(state_dir) as session:
        for end in ends:
            name = f"{end[0]}:{end[1]}"
            item = Impairment(name, kind, value, one_way)
            ns, dev = _ns(session, end[0]), shlex.quote(end[1])
            here = _guest(session, end)
            if kind == "down":
                _run(session, f"ip -n {ns} link set {dev} down", name, here)
            elif kind == "mtu":
                item.saved["mtu"] = int(link_info(session, end)["mtu"])
                _run(session, f"ip -n {ns} link set {dev} mtu {int(value)}", name, here)
            else:
                targets = [end] if one_way else [end, peer[end]]
                for t in targets:
                    item.saved[f"{t[0]}:{t[1]}"] = root_kind(session, t)
                    _run(session, netem_script(session, t, kind, value), name, _guest(session, t))
            record.impairments.append(item)
            save(state_dir, record)
    return record


def _swap_guest(session: LabSession, m1: End, m2: End, what: str) -> int:
    """The one instance both moved ends are in; refused when they are in two (an interface
    cannot move between machines)."""
    guests = {_guest(session, m1), _guest(session, m2)}
    if len(guests) > 1:
        raise ImpairError(
            f"{what}: {m1[0]}:{m1[1]} and {m2[0]}:{m2[1]} run in the lab's two instances, and "
            "an interface cannot move between them (controller/lab/split.py)"
        )
    return guests.pop()


def _movable(fabric: Fabric, x: End, y: End, peer: dict[End, End]) -> tuple[End, End]:
    """Which two ends to move for a swap of the cables in x and y (see swap_script)."""
    servers = fabric.server_by_name
    if x[0] in servers and y[0] in servers:
        return x, y
    px, py = peer[x], peer[y]
    if px[0] in servers and py[0] in servers:
        return px, py
    # switch ends: two devices' ports move between namespaces, which lldpd and FRR see as
    # a port going and another coming; a rename in place lldpd took a minute to notice
    return (x, y) if x[0] != y[0] or px[0] == py[0] else (px, py)


def swap(fabric: Fabric, state_dir: Path, first: str, second: str) -> ImpairState:
    """Exchange the cables in ports ``first`` and ``second`` (two cables of one kind)."""
    x, y = parse_end(fabric, first), parse_end(fabric, second)
    record = load(state_dir)
    peer = wiring(fabric, record.swaps)
    if x == y or peer[x] == y:
        raise ImpairError(f"--swap {first} {second}: two ends of two different cables")
    if (x[0] in fabric.server_by_name) != (y[0] in fabric.server_by_name):
        raise ImpairError(f"--swap {first} {second}: both server ends or both switch ends")
    m1, m2 = _movable(fabric, x, y, peer)
    with LabSession.open(state_dir) as session:
        what = f"--swap {first} {second}"
        guest = _swap_guest(session, m1, m2, what)
        temp = f"{session.state.prefix}sw"
        _run(session, swap_script(session, m1, m2, temp), what, guest)
        restore_qos(session, fabric, [m1, m2])
        restart_lldpd(session, fabric, {m1[0], m2[0]})
        lldp_refresh(session, {x[0], y[0], peer[x][0], peer[y][0]})
        settled = wait_lldp(session, {x: peer[y], y: peer[x], peer[x]: y, peer[y]: x})
    record.swaps.append((f"{x[0]}:{x[1]}", f"{y[0]}:{y[1]}"))
    if not settled:
        record.unsettled.append(
            f"LLDP did not show the swap of {first} and {second} within {LLDP_SETTLE_S:.0f} s: "
            "a run now may read the old or half the new cabling"
        )
    save(state_dir, record)
    return record


def _undo(session: LabSession, fabric: Fabric, item: Impairment) -> None:
    end = _split(item.cable)
    ns, dev = _ns(session, end[0]), shlex.quote(end[1])
    here = _guest(session, end)
    if item.kind == "down":
        _run(session, f"ip -n {ns} link set {dev} up", f"clear {item.cable}", here)
        lldp_refresh(session, {end[0]})
    elif item.kind == "mtu":
        mtu = int(item.saved["mtu"])
        _run(session, f"ip -n {ns} link set {dev} mtu {mtu}", item.cable, here)
        return
    for target, kind in item.saved.items():
        if item.kind not in ("loss", "delay"):
            break
        t = _split(target)
        tns, tdev = _ns(session, t[0]), shlex.quote(t[1])
        lines = [f"tc -n {tns} qdisc del dev {tdev} root 2>/dev/null || true"]
        restore = qos_lines(fabric, t) if kind == "prio" else []
        if restore:
            body = "\n".join(restore)
            lines.append(f"tc -n {tns} -force -batch - <<'DPCTL_QOS'\n{body}\nDPCTL_QOS")
        _run(session, "\n".join(lines) + "\n", f"clear {target}", _guest(session, t))


def clear(fabric: Fabric, state_dir: Path) -> list[str]:
    """Undo every recorded impairment and swap (the newest first); returns what was undone."""
    record = load(state_dir)
    undone = record.describe()
    with LabSession.open(state_dir) as session:
        while record.impairments:
            _undo(session, fabric, record.impairments[-1])
            record.impairments.pop()
            save(state_dir, record)
    while record.swaps:
        first, second = record.swaps[-1]
        record.swaps.pop()
        peer = wiring(fabric, [*record.swaps, (first, second)])
        m1, m2 = _movable(fabric, _split(first), _split(second), peer)
        with LabSession.open(state_dir) as session:
            temp = f"{session.state.prefix}sw"
            what = f"undo swap {first} {second}"
            guest = _swap_guest(session, m1, m2, what)
            _run(session, swap_script(session, m1, m2, temp), what, guest)
            restore_qos(session, fabric, [m1, m2])
            restart_lldpd(session, fabric, {m1[0], m2[0]})
            lldp_refresh(session, {m1[0], m2[0], peer[m1][0], peer[m2][0]})
            x, y = _split(first), _split(second)
            after = wiring(fabric, record.swaps)
            wait_lldp(session, {x: after[x], y: after[y], after[x]: x, after[y]: y})
        save(state_dir, record)
    return undone
