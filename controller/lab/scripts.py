"""Shell scripts that build, inspect and remove a lab (one script per step).

The same scripts run inside the lab's guest (over SSH, ``sh -s``) or on a capable host.
Every exec costs ~65 ms under TCG and 15-30 ms in the UML guest, so links are made with
``ip -batch`` and per-node work runs in parallel background jobs.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from controller.lab.errors import LabError
from controller.lab.split import guest_of, link_script
from controller.lab.topology import (
    LabCable,
    LabNode,
    LabTopology,
    mgmt_addresses,
    mgmt_bridge,
    mgmt_host_ifname,
    namespace,
)

SYSLOG_SINK = Path(__file__).with_name("syslog_sink.py")
NEIGH_THRESH = {1: 4096, 2: 16384, 3: 32768}
NODE_SSHD_CONFIG = """\
AuthorizedKeysFile {run}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
AllowTcpForwarding yes
MaxSessions 64
MaxStartups 64:30:128
Subsystem sftp internal-sftp
"""
# FRR's init script always adds zebra and staticd; each extra daemon costs ~1 s of
# guest CPU per switch at start under TCG.
DEFAULT_FRR_DAEMONS = ("bgpd", "bfdd")
FRR_BIN = "/usr/lib/frr"
# frrcommon.sh's DAEMONS, in its order (zebra first): the order the lab starts them in.
FRR_ORDER = (
    *("zebra", "bgpd", "ripd", "ripngd", "ospfd", "ospf6d", "isisd", "babeld", "pimd", "pim6d"),
    *("ldpd", "nhrpd", "eigrpd", "sharpd", "pbrd", "staticd", "bfdd", "fabricd", "vrrpd", "pathd"),
)
FRR_PROFILE = "traditional"  # frrcommon.sh's default profile (`-F`)
# zebra -r keeps its routes in the kernel when it stops and -K 120 keeps the routes it finds
# at start for 120 s (FRR user guide, "Zebra": --retain, --graceful_restart). Measured
# (tests/bench/bench_frr_restart.py, README "FRR restart on a leaf, measured"): with BGP
# graceful restart on, a flow out through a leaf whose bgpd crashed and whose FRR then
# restarted lost nothing; without -K, 23.6 s.
# A planned restart gains nothing from either: bgpd withdraws its routes as it stops.
ZEBRA_OPTIONS = "-A 127.0.0.1 -s 90000000 -r -K 120"
# A TCG guest on a busy 2-core host can stall a daemon for longer than watchfrr's 90 s
# default; watchfrr then kills it. (A daemon that dies is started again by watchfrr's
# default restart: a bgpd killed with -9 ran again within 4 s, host FRR 8.4, 2026-12-02.)
WATCHFRR_OPTIONS = "--netns -t 600 -T 60"
# bfdd at real-time priority (frrcommon.sh runs "<daemon>_wrap" before the binary).
# In the TCG guest a deploy's frr-reload and the probe flows starved it past its
# 900 ms detection time: 12 BFD session-down events over the 8 switches (a failed
# session counts at both its ends) in 5 min of deploys under probe flows, each taking
# a healthy switch's BGP sessions and routes with it (4.5 s of loss on a flow through
# a leaf nobody touched); 0 under the same load with this (one run each).
# A real switch's BFD does not compete with the control plane like this.
BFDD_WRAP = "/usr/bin/chrt --fifo 50"


def frr_daemon_options(daemons: tuple[str, ...]) -> dict[str, str]:
    """Every daemon a switch runs (zebra, staticd and ``daemons``) -> its options, in
    frrcommon.sh's order."""
    for d in daemons:
        if not re.fullmatch(r"[a-z0-9]{2,10}d", d) or d in ("zebra", "staticd", "watchfrr"):
            raise LabError(f"not an optional FRR daemon: {d!r}")
    wanted = {"zebra", "staticd", *daemons}
    ordered = [d for d in FRR_ORDER if d in wanted] + sorted(wanted - set(FRR_ORDER))
    return {d: ZEBRA_OPTIONS if d == "zebra" else "-A 127.0.0.1" for d in ordered}


def frr_daemons_file(daemons: tuple[str, ...]) -> str:
    """The pathspace ``daemons`` file: only ``daemons`` enabled, watchfrr joins the netns.
    watchfrr's restarts (``watchfrr.sh``) start daemons from it; the lab's own first start
    (:func:`frr_start_command`) uses the same options."""
    options = frr_daemon_options(daemons)
    lines = [f"{d}=yes" for d in daemons]
    lines += ["vtysh_enable=yes", f'frr_profile="{FRR_PROFILE}"']
    lines += [f'{d}_options="{opts}"' for d, opts in options.items()]
    lines.append(f'watchfrr_options="{WATCHFRR_OPTIONS}"')
    if "bfdd" in daemons:
        lines.append(f'bfdd_wrap="{BFDD_WRAP}"')
    return "\n".join(lines) + "\n"


def frr_start_command(ns: str, daemons: tuple[str, ...]) -> str:
    """Start a switch's FRR at factory state as ``frrinit.sh start NS`` would, without its
    shell machinery: each daemon in the namespace (``-d`` returns once it is up), then
    watchfrr, which finds them all up and watches them (restarting one that dies through
    ``watchfrr.sh``, as after frrinit). frrinit.sh's per-daemon ``vtysh -b`` has nothing to
    load from an empty frr.conf. In the UML guest this halves the guest CPU of an FRR start
    (4.0 s to 2.0 s per switch, process accounting, 2026-12-06): frrinit.sh and watchfrr.sh
    source the LSB init functions and run about 30 small commands per switch."""
    options = frr_daemon_options(daemons)
    starts = []
    for d, opts in options.items():
        wrap = f"{BFDD_WRAP} " if d == "bfdd" else ""
        starts.append(f"{wrap}{FRR_BIN}/{d} -N {ns} -d -F {FRR_PROFILE} {opts}")
    watchfrr = (
        f"{FRR_BIN}/watchfrr -N {ns} -d -F {FRR_PROFILE} {WATCHFRR_OPTIONS} {' '.join(options)}"
    )
    return f"nsenter --net=/run/netns/{ns} sh -c {q(' && '.join(starts))}; exec {watchfrr}"


VTYSH_CONF = "service integrated-vtysh-config\n"


def q(value: str) -> str:
    return shlex.quote(value)


def run_dir(prefix: str) -> str:
    """Per-lab runtime directory (tmpfs in the guest)."""
    return f"/run/{prefix}lab"


@dataclass(frozen=True)
class BuildPlan:
    """Everything the build script needs besides the topology."""

    topo: LabTopology
    prefix: str
    state_path: str  # the lab state dir as seen by the script's machine
    lldpd: bool = True
    frr_daemons: tuple[str, ...] = DEFAULT_FRR_DAEMONS
    syslog: bool = False  # run syslog_sink.py at /dev/log (the guest has no syslog daemon)
    guest: int = 0
    """The instance this script builds (a lab split over ``guests`` UML instances)."""
    guests: int = 1

    @property
    def nodes(self) -> tuple[LabNode, ...]:
        """The nodes this instance runs."""
        return tuple(n for n in self.topo.nodes if guest_of(n, self.guests) == self.guest)

    @property
    def cables(self) -> tuple[LabCable, ...]:
        """The cables with both ends in this instance (plain veth pairs)."""
        where = {n.name for n in self.nodes}
        return tuple(c for c in self.topo.cables if c.a_node in where and c.z_node in where)


def heredoc(path: str, body: str, mode: str = "644") -> str:
    """A ``cat > path`` heredoc followed by chmod (body must not contain the marker)."""
    return f"cat > {q(path)} <<'DPL_EOF'\n{body}DPL_EOF\nchmod {mode} {q(path)}\n"


def build_script(plan: BuildPlan) -> str:
    """Namespaces, cables, mgmt network, then FRR/sshd/lldpd per node in parallel."""
    parts = [
        "set -eu\n",
        _mark("start"),
        _root_prep(plan),
        _mark("prep"),
        _root_batch(plan),
        _split_links(plan),
        _mark("links"),
        *(_node_prep(plan, n) for n in plan.nodes),
        "wait\n",
        _mark("nodes"),
        *(_node_start(plan, n) for n in plan.nodes),
        "wait\n",
        _mark("daemons"),
    ]
    return "".join(parts)


def _split_links(plan: BuildPlan) -> str:
    """A split lab's tunnels to the other instance (none in a lab of one)."""
    if plan.guests == 1:
        return ""
    return link_script(plan.prefix, plan.guest, plan.topo, run_dir(plan.prefix))


def _mark(phase: str) -> str:
    """Print a phase timestamp (``@phase <epoch>``) that the runtime turns into timings."""
    return f"echo @{phase} $(date +%s.%N)\n"


def parse_marks(output: str) -> dict[str, float]:
    """Seconds spent per phase from the ``@phase`` lines of :func:`build_script`."""
    marks = [line.split() for line in output.splitlines() if line.startswith("@")]
    times = [(m[0][1:], float(m[1])) for m in marks if len(m) == 2]
    return {f"{b[0]}_s": round(b[1] - a[1], 2) for a, b in itertools.pairwise(times)}


def syslog_path(prefix: str) -> str:
    """The guest's syslog file (see ``syslog_sink.py``)."""
    return f"{run_dir(prefix)}/log/syslog.log"


def _syslog_start(prefix: str) -> str:
    """Write syslog_sink.py into the run dir and start it detached (``setsid -f``: the build's
    ``wait`` must not wait for it), before any daemon that logs starts."""
    sink = f"{run_dir(prefix)}/syslog_sink.py"
    return heredoc(sink, SYSLOG_SINK.read_text(), "755") + (
        f"setsid -f python3 {sink} /dev/log {syslog_path(prefix)} "
        f"</dev/null >{run_dir(prefix)}/log/syslog-sink.err 2>&1\n"
    )


def _root_prep(plan: BuildPlan) -> str:
    run = run_dir(plan.prefix)
    lines = [f"mkdir -p {run}/keys {run}/log /run/frr /run/netns /run/sshd /run/lldpd"]
    lines += [
        f"echo {v} > /proc/sys/net/{af}/neigh/default/gc_thresh{t}"
        for t, v in NEIGH_THRESH.items()
        for af in ("ipv4", "ipv6")
    ]
    lines.append(f"cp {q(plan.state_path)}/guest/authorized_keys {run}/authorized_keys")
    lines.append(f"chmod 600 {run}/authorized_keys")
    for n in plan.nodes:
        key = f"{run}/keys/{n.name}"
        lines.append(f"cp {q(plan.state_path)}/nodes/{n.name}.key {key} && chmod 600 {key}")
    lines.append("[ -e /run/lldpd.socket ] || touch /run/lldpd.socket")
    lines.append(f"echo 'configure lldp portidsubtype ifname' > {run}/lldpd.conf")
    return (
        "\n".join(lines)
        + "\n"
        + (_syslog_start(plan.prefix) if plan.syslog else "")
        + heredoc(f"{run}/sshd_config", NODE_SSHD_CONFIG.format(run=run))
    )


def _root_batch(plan: BuildPlan) -> str:
    """Namespaces, mgmt bridge + veths and cable veths in one ``ip -batch``."""
    topo, prefix = plan.topo, plan.prefix
    bridge_ip, _, plen = mgmt_addresses(topo)
    br = mgmt_bridge(prefix)
    cmds = [f"netns add {namespace(prefix, n.name)}" for n in plan.nodes]
    cmds.append(f"link add {br} type bridge")
    if plan.guest == 0:  # the nodes' gateway and the jump host's way in: one per lab
        cmds.append(f"addr add {bridge_ip}/{plen} dev {br}")
    cmds.append(f"link set {br} up")
    mine = set(plan.nodes)
    for i, n in enumerate(topo.nodes):
        if n not in mine:
            continue
        host_if = mgmt_host_ifname(prefix, i)
        cmds += [
            f"link add mgmt0 netns {namespace(prefix, n.name)} type veth peer name {host_if}",
            f"link set {host_if} master {br}",
            f"link set {host_if} up",
        ]
    for c in plan.cables:
        cmds.append(
            f"link add {c.a_port} netns {namespace(prefix, c.a_node)} type veth "
            f"peer name {c.z_port} netns {namespace(prefix, c.z_node)}"
        )
    path = f"{run_dir(prefix)}/root.ip"
    # ip keeps each namespace it names open: the seed-scale lab's batch (2,100 cables between
    # 52 namespaces) ran out of the default 1,024 descriptors (lab-facts: ~900 opens)
    return heredoc(path, "\n".join(cmds) + "\n") + f"(ulimit -n 65536; ip -batch {path})\n"


def _cabled_ports(topo: LabTopology) -> set[tuple[str, str]]:
    ends = {(c.a_node, c.a_port) for c in topo.cables}
    return ends | {(c.z_node, c.z_port) for c in topo.cables}


def _node_prep(plan: BuildPlan, node: LabNode) -> str:
    """Per-node ip batch (links up, mgmt address, uncabled ports as dummies) + FRR dirs."""
    topo, prefix = plan.topo, plan.prefix
    run, ns = run_dir(prefix), namespace(prefix, node.name)
    _, addrs, plen = mgmt_addresses(topo)
    cabled = _cabled_ports(topo)
    cmds = ["link set lo up", f"addr add {addrs[node.name]}/{plen} dev mgmt0", "link set mgmt0 up"]
    for port in node.ports:
        if (node.name, port) in cabled:
            cmds.append(f"link set {port} up")
        else:
            cmds.append(f"link add {port} type dummy")  # an unplugged port: exists, down
    sysctls = ["echo 2 > /proc/sys/net/ipv4/conf/all/arp_announce"]
    if node.kind == "switch":
        sysctls += [
            "echo 1 > /proc/sys/net/ipv4/ip_forward",
            "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding",
        ]
    batch = f"{run}/{node.name}.ip"
    out = heredoc(batch, "\n".join(cmds) + "\n")
    inner = "; ".join([*sysctls, f"ip -batch {batch}"])
    out += f"ip netns exec {ns} sh -c {q(inner)} &\n"  # nodes in parallel
    if node.kind == "switch":
        out += _frr_dirs(ns, plan.frr_daemons)
    return out


def _frr_dirs(ns: str, daemons: tuple[str, ...]) -> str:
    etc, var = f"/etc/frr/{ns}", f"/run/frr/{ns}"
    return (
        f"rm -rf {etc}\nmkdir -p {etc} {var}\n"
        + heredoc(f"{etc}/daemons", frr_daemons_file(daemons), "640")
        + heredoc(f"{etc}/vtysh.conf", VTYSH_CONF, "640")
        + f": > {etc}/frr.conf\nchmod 640 {etc}/frr.conf\n"
        f"chown -R frr:frr {etc} {var}\n"
    )


def _node_start(plan: BuildPlan, node: LabNode) -> str:
    """Background jobs: FRR (switch), then lldpd+sshd in the node's namespace.

    FRR and sshd start under ``unshare -u`` with the node's hostname (peers and
    prompts see it); sshd gets private bind mounts so a plain ``vtysh`` reaches
    this node's FRR and ``lldpcli`` this node's lldpd.
    """
    run, ns, name = run_dir(plan.prefix), namespace(plan.prefix, node.name), node.name
    _, addrs, _ = mgmt_addresses(plan.topo)
    log = f"{run}/log/{name}"
    out = ""
    if node.kind == "switch":
        frr = f"hostname {name}; {frr_start_command(ns, plan.frr_daemons)}"
        out += f"unshare -u sh -c {q(frr)} > {log}-frr.log 2>&1 &\n"
    steps = [f"hostname {name}"]
    if node.kind == "switch":
        steps += [f"mount --bind /etc/frr/{ns} /etc/frr", f"mount --bind /run/frr/{ns} /run/frr"]
    if plan.lldpd and node.ports:
        steps += lldpd_steps(run, node)
    # -r: a connection is served by a fork of the listener, not a new exec of sshd (~0.2 s of
    # guest CPU each in the UML guest, where a page fault costs ~0.1-0.3 ms; deploy and verify
    # open one per switch, lab up one per node)
    steps.append(
        f"exec /usr/sbin/sshd -r -f {run}/sshd_config -h {run}/keys/{name} "
        f"-o ListenAddress={addrs[name]} -o PidFile={run}/{name}.sshd.pid "
        f"-E {log}-sshd.log"
    )
    inner = "; ".join(steps)
    out += f"ip netns exec {ns} unshare -u sh -c {q(inner)} > {log}-start.log 2>&1 &\n"
    return out


def lldpd_steps(run: str, node: LabNode) -> list[str]:
    """lldpd on the node's ports (port ID = ifname, like a switch), socket bound for lldpcli."""
    sock = f"{run}/{node.name}.lldpd.sock"
    med = " -M 4" if node.kind == "switch" else ""
    return [
        f"lldpd -u {sock} -O {run}/lldpd.conf -I {','.join(node.ports)}{med} "
        f"-S {q('dpctl lab ' + node.role)}",
        f"i=0; while [ ! -S {sock} ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done",
        f"mount --bind {sock} /run/lldpd.socket",
    ]


def lldpd_restart_script(run: str, node: LabNode, ns: str) -> str:
    """Restart a node's lldpd where it ran: in the namespaces of the node's sshd (its
    network, hostname and mount namespaces), its socket bound again on /run/lldpd.socket there
    (a new lldpd makes a new socket file: the old bind would leave the driver's ``lldpcli``
    talking to nothing). The old lldpd (its monitor and its child) is ended by PID, found
    among the namespace's processes by name. Why restart at all: an lldpd sometimes never
    took up a port that a re-cabling moved into its namespace (issue 41's swaps)."""
    sock = f"{run}/{node.name}.lldpd.sock"
    comm = '"$(cat /proc/$p/comm 2>/dev/null)"'
    mine = f"for p in $(ip netns pids {ns}); do [ {comm} = lldpd ] && echo $p; done"
    start = "; ".join(["umount /run/lldpd.socket 2>/dev/null", *lldpd_steps(run, node)])
    return "\n".join(
        [
            f"old=$({mine})",
            '[ -z "$old" ] || kill $old',
            f'i=0; while [ -n "$({mine})" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done',
            f"rm -f {sock}",
            f"nsenter -t $(cat {run}/{node.name}.sshd.pid) -n -u -m sh -c {q(start)}",
        ]
    )


def status_script(nodes: list[tuple[str, str, bool]], prefix: str) -> str:
    """Print ``name ns sshd frr`` (1/0) per node; ``nodes`` is (name, ns, is_switch)."""
    run = run_dir(prefix)
    # the shell's own read, not cat: each exec costs 15-65 ms in a guest, 12+ a poll
    lines = ['alive() { p=; [ -f "$1" ] && read -r p < "$1" && kill -0 "$p" 2>/dev/null; }']
    for name, ns, is_switch in nodes:
        frr = (
            f"alive /run/frr/{ns}/watchfrr.pid && alive /run/frr/{ns}/bgpd.pid && f=1"
            if is_switch
            else "f=-"
        )
        lines.append(
            f"n=0; s=0; f=0; [ -e /run/netns/{ns} ] && n=1; "
            f"alive {run}/{name}.sshd.pid && s=1; {frr}; echo {name} $n $s $f"
        )
    return "\n".join(lines) + "\n"


def parse_status(out: str) -> dict[str, bool]:
    """Node -> running, from :func:`status_script`'s output: its namespace exists, its sshd
    runs and, on a switch, its watchfrr and bgpd run."""
    running = {}
    for line in out.splitlines():
        name, ns, sshd, frr = (line.split() + ["0"] * 4)[:4]
        running[name] = ns == "1" and sshd == "1" and frr in ("1", "-")
    return running


def teardown_script(prefix: str, namespaces: list[str]) -> str:
    """Remove a lab built on this machine: kill processes inside our namespaces only."""
    run = run_dir(prefix)
    nss = " ".join(q(n) for n in namespaces)
    return f"""set -u
for ns in {nss}; do
  [ -e /run/netns/$ns ] || continue
  pids=$(ip netns pids $ns)
  [ -n "$pids" ] && kill $pids 2>/dev/null
done
for i in $(seq 50); do
  left=""
  for ns in {nss}; do [ -e /run/netns/$ns ] && left="$left$(ip netns pids $ns)"; done
  [ -z "$left" ] && break
  sleep 0.1
done
for ns in {nss}; do
  [ -e /run/netns/$ns ] || continue
  pids=$(ip netns pids $ns)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  ip netns del $ns
  rm -rf /etc/frr/$ns /run/frr/$ns
done
ip link del {mgmt_bridge(prefix)} 2>/dev/null
rm -rf {run}
exit 0
"""
