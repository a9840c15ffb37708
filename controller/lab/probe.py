"""Traffic probe: a fixed-rate, sequence-numbered UDP flow between two lab namespaces."""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from typing import Any

from controller.agents import PROBE_AGENT as AGENT
from controller.lab.errors import LabCommandError, LabError, LabTimeoutError
from controller.lab.scripts import run_dir
from controller.lab.session import LabSession

# The agents run at ordinary priority: real-time (chrt --fifo 40) was tried on 2026-12-01 and
# taken back (README, "False BFD downs in the lab"): one run each, no benefit shown.
RECEIVER_SLACK_S = 60.0  # a receiver's last-resort deadline past the flow's own length
PROBE_MAX_S = 1800.0
"""Longest flow run_probe sends: a drain + undrain under probe load took 13 min in the TCG
guest (2026-12-02), longer than the 600 s bound before (the flows ended before the undrain)."""


def run_probe(
    session: LabSession,
    src: str,
    dst: str,
    dst_ip: str,
    count: int = 500,
    rate_pps: float = 100.0,
    port: int = 5201,
    timeout: float | None = None,
    src_ip: str | None = None,
    subflows: int = 1,
) -> dict[str, Any]:
    """Send ``count`` packets from node ``src`` to ``dst_ip`` received in node ``dst``.

    The receiver binds ``dst_ip`` inside ``dst``'s namespace, so the flow can only
    target an address of the lab. The sender stops after ``count`` packets (or at once on
    :func:`stop_probe`); the receiver at the sender's end marker, or 2 s after the sender has
    exited, or at the last-resort bound (``timeout``, else the flow's length + 60 s).
    ``src_ip`` binds the sender to one of its addresses (on a multi-rail server: the NIC,
    hence the rail, the flow leaves from); ``subflows`` spreads it over that many source
    ports, so the servers' bonds hash some sub-flows into each plane.
    Returns ``{"sent","received","lost","max_gap_ms","duplicates","subflows","subflows_hit"}``.
    """
    if count <= 0 or rate_pps <= 0 or count / rate_pps > PROBE_MAX_S:
        raise LabError(f"probe must be bounded: 0 < count, count/rate <= {PROBE_MAX_S:.0f} s")
    if not 1 <= subflows <= 64:
        raise LabError(f"probe sub-flows must be 1..64, not {subflows}")
    nodes = session.state.nodes
    if src not in nodes or dst not in nodes:
        raise LabError(f"probe endpoints must be lab nodes: {src}, {dst}")
    bound = timeout if timeout is not None else count / rate_pps + RECEIVER_SLACK_S
    run = run_dir(session.state.prefix)
    agent = f"{run}/probe_agent.py"
    session.executor.put_file(agent, AGENT.read_bytes(), 0o755)
    script = _probe_script(
        nodes[src].namespace,
        nodes[dst].namespace,
        dst_ip,
        port,
        count,
        rate_pps,
        bound,
        agent,
        run,
        subflows,
        src_ip,
    )
    rc, out, err = session.root_run(script, timeout=bound + 30.0)
    lines = out.strip().splitlines()
    if rc != 0 or not lines:
        raise LabCommandError(f"probe failed (rc {rc}): {err.strip()[-500:]}", rc, out, err)
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except ValueError as exc:
        raise LabCommandError(f"probe printed no result: {out[-300:]}") from exc
    return result


def _probe_script(
    src_ns: str,
    dst_ns: str,
    dst_ip: str,
    port: int,
    count: int,
    rate: float,
    bound: float,
    agent: str,
    run: str,
    subflows: int,
    src_ip: str | None,
) -> str:
    q = shlex.quote
    source = f" --src {q(src_ip)}" if src_ip else ""
    ready, result = f"{run}/probe.{port}.ready", f"{run}/probe.{port}.json"
    done = f"{run}/probe.{port}.done"
    stop, flowing = stop_file(run, port), flowing_file(run, port)
    return f"""set -u
rm -f {ready} {result} {stop} {done} {flowing}
ip netns exec {q(dst_ns)} python3 {agent} recv --bind {q(dst_ip)} --port {port} \\
  --count {count} --timeout {bound} --ready {ready} \\
  --subflows {subflows} --rate {rate} --done {done} --flowing {flowing} > {result} &
rp=$!
i=0
while [ ! -e {ready} ] && [ $i -lt 1200 ] && kill -0 $rp 2>/dev/null; do
  sleep 0.05; i=$((i+1))
done
[ -e {ready} ] || {{
  echo "probe receiver did not start within 60 s" >&2; kill $rp 2>/dev/null; exit 2
}}
ip netns exec {q(src_ns)} python3 {agent} send --dst {q(dst_ip)} --port {port} \\
  --count {count} --rate {rate} --subflows {subflows}{source} --stop {stop}
touch {done}
wait $rp
cat {result}
rm -f {ready} {result} {stop} {done} {flowing}
"""


def stop_file(run: str, port: int) -> str:
    return f"{run}/probe.{port}.stop"


def flowing_file(run: str, port: int) -> str:
    return f"{run}/probe.{port}.flowing"


def wait_probes_flowing(session: LabSession, ports: list[int], timeout: float = 300.0) -> float:
    """Wait until the first packet of each ``run_probe`` flow to ``ports`` has arrived (a
    loaded lab guest can start a sender tens of seconds after it was asked to); returns the
    seconds waited. Raises LabTimeoutError naming the ports still silent."""
    run = run_dir(session.state.prefix)
    files = " ".join(flowing_file(run, p) for p in ports)
    started = time.monotonic()
    while True:
        _rc, out, _err = session.root_run(f"for f in {files}; do [ -e $f ] || echo $f; done")
        silent = [p for p in ports if flowing_file(run, p) in out.split()]
        if not silent:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise LabTimeoutError(
                f"probe flows to ports {', '.join(map(str, silent))} not flowing after "
                f"{timeout:.0f} s"
            )
        time.sleep(1.0)


def stop_probe(session: LabSession, port: int) -> None:
    """End the running ``run_probe`` flow to ``port`` early: its sender stops at once and
    its result counts what was sent until then (for a probe sized for a worst case, such as
    one spanning a drain and an undrain, that ends well before it)."""
    session.root_run(f"touch {stop_file(run_dir(session.state.prefix), port)}")


FLOWS_MAX_S = 1800.0
"""The longest run of flows: one wave of a rolling maintenance in the lab (drains, the
action, undrains and gates of its switches) under a loaded guest."""


@dataclass(frozen=True, slots=True)
class FlowSpec:
    """One probe flow: from node ``src`` (bound to ``src_ip``) to ``dst_ip`` inside ``dst``.
    ``sniff`` names the sender's bond members whose egress is counted per sub-flow."""

    src: str
    dst: str
    src_ip: str
    dst_ip: str
    port: int
    sniff: tuple[str, ...] = ()
    pin: str | None = None
    """Send raw frames on this one interface (a bond member) to ``gateway_mac``."""
    gateway_mac: str = ""
    size: int = 0


def _check_flows(
    session: LabSession, flows: list[FlowSpec], count: int, rate_pps: float, subflows: int
) -> None:
    """Bounded flows between lab nodes, on distinct ports (LabError otherwise)."""
    if count <= 0 or rate_pps <= 0 or count / rate_pps > FLOWS_MAX_S:
        raise LabError(f"probe must be bounded: 0 < count, count/rate <= {FLOWS_MAX_S:.0f} s")
    if not 1 <= subflows <= 64:
        raise LabError(f"probe sub-flows must be 1..64, not {subflows}")
    if len({f.port for f in flows}) != len(flows):
        raise LabError("probe flows need distinct destination ports")
    nodes = session.state.nodes
    for f in flows:
        if f.src not in nodes or f.dst not in nodes:
            raise LabError(f"probe endpoints must be lab nodes: {f.src}, {f.dst}")


def run_flows(
    session: LabSession,
    flows: list[FlowSpec],
    count: int,
    rate_pps: float,
    subflows: int,
    stoppable: bool = False,
) -> list[dict[str, Any]]:
    """Run ``flows`` at the same time (one script in the lab's root namespace): every
    receiver first, then every sender. Returns each flow's receiver result (with
    ``per_subflow``) plus ``egress`` (sub-flow -> sniffed interface -> packets).
    ``stoppable``: each sender also stops early at :func:`stop_probe` of its port (flows
    sized for the worst case, such as one wave of a rolling maintenance)."""
    _check_flows(session, flows, count, rate_pps, subflows)
    nodes = session.state.nodes
    # The receivers end when told that every sender has exited (their own deadline is the
    # last resort): the senders start only once every receiver listens, which on a loaded
    # TCG guest can take many seconds.
    bound = count / rate_pps + RECEIVER_SLACK_S
    run = run_dir(session.state.prefix)
    agent = f"{run}/probe_agent.py"
    session.executor.put_file(agent, AGENT.read_bytes(), 0o755)
    q = shlex.quote
    lines = ["set -u", "receivers=", "senders="]
    for f in flows:
        ready, result = f"{run}/flow.{f.port}.ready", f"{run}/flow.{f.port}.json"
        lines += [
            f"rm -f {ready} {result} {result}.tx {run}/flow.{f.port}.done",
            f"ip netns exec {q(nodes[f.dst].namespace)} python3 {agent} recv"
            f" --bind {q(f.dst_ip)} --port {f.port} --count {count} --timeout {bound}"
            f" --ready {ready}"
            f" --subflows {subflows} --rate {rate_pps} --done {run}/flow.{f.port}.done"
            f' > {result} & receivers="$receivers $!"',
        ]
    for f in flows:
        lines.append(
            f"i=0; while [ ! -e {run}/flow.{f.port}.ready ] && [ $i -lt 1200 ]; do"
            " sleep 0.05; i=$((i+1)); done"
        )
    for index, f in enumerate(flows):
        sniff = _sender_options(f)
        if stoppable:
            lines.append(f"rm -f {stop_file(run, f.port)}")
            sniff += f" --stop {stop_file(run, f.port)}"
        lines.append(
            f"ip netns exec {q(nodes[f.src].namespace)} python3 {agent} send"
            f" --dst {q(f.dst_ip)} --port {f.port} --count {count} --rate {rate_pps}"
            f" --subflows {subflows}"
            f" --src {q(f.src_ip)} --sport-base {40000 + 100 * index}{sniff}"
            f' > {run}/flow.{f.port}.json.tx & senders="$senders $!"'
        )
    lines.append("for p in $senders; do wait $p; done")
    lines += [f"touch {run}/flow.{f.port}.done" for f in flows]
    lines.append("for p in $receivers; do wait $p; done")
    for f in flows:
        result = f"{run}/flow.{f.port}.json"
        lines += [
            f"echo FLOW {f.port}; cat {result}; echo; cat {result}.tx; echo",
            f"rm -f {run}/flow.{f.port}.ready {result} {result}.tx {run}/flow.{f.port}.done",
        ]
    rc, out, err = session.root_run("\n".join(lines) + "\n", timeout=bound + 60.0)
    if rc != 0:
        raise LabCommandError(f"probe flows failed (rc {rc}): {err.strip()[-500:]}", rc, out, err)
    return [_flow_result(out, f.port) for f in flows]


def _sender_options(f: FlowSpec) -> str:
    """Count egress per bond member, or send pinned to one (raw frames to the gateway)."""
    q = shlex.quote
    if f.pin:
        return f" --pin {q(f.pin)} --gw-mac {q(f.gateway_mac)} --size {f.size}"
    return f" --sniff {q(','.join(f.sniff))}" if f.sniff else ""


def _flow_result(out: str, port: int) -> dict[str, Any]:
    parts = out.split(f"FLOW {port}\n", 1)
    lines = [line for line in (parts[1] if len(parts) == 2 else "").splitlines() if line]
    try:
        result: dict[str, Any] = json.loads(lines[0])
        egress = json.loads(lines[1]) if len(lines) > 1 and lines[1].startswith("{") else {}
    except (IndexError, ValueError) as exc:
        raise LabCommandError(f"probe flow {port} printed no result: {out[-300:]}") from exc
    result["egress"] = egress.get("egress", {})
    result["sniff_down"] = egress.get("sniff_down", [])
    result["send_errors"] = int(egress.get("send_errors", 0))
    result["ports"] = egress.get("ports", {})
    return result
