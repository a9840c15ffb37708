"""Traffic probe: a fixed-rate, sequence-numbered UDP flow between two lab namespaces."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from controller.lab.errors import LabCommandError, LabError
from controller.lab.scripts import run_dir
from controller.lab.session import LabSession

AGENT = Path(__file__).with_name("probe_agent.py")


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
    target an address of the lab. Both ends stop by themselves (count and time bound).
    ``src_ip`` binds the sender to one of its addresses (on a multi-rail server: the NIC,
    hence the rail, the flow leaves from); ``subflows`` spreads it over that many source
    ports, so the servers' bonds hash some sub-flows into each plane.
    Returns ``{"sent","received","lost","max_gap_ms","duplicates","subflows","subflows_hit"}``.
    """
    if count <= 0 or rate_pps <= 0 or count / rate_pps > 600:
        raise LabError("probe must be bounded: 0 < count, count/rate <= 600 s")
    if not 1 <= subflows <= 64:
        raise LabError(f"probe sub-flows must be 1..64, not {subflows}")
    nodes = session.state.nodes
    if src not in nodes or dst not in nodes:
        raise LabError(f"probe endpoints must be lab nodes: {src}, {dst}")
    bound = timeout if timeout is not None else count / rate_pps + 10.0
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
    return f"""set -u
rm -f {ready} {result}
ip netns exec {q(dst_ns)} python3 {agent} recv --bind {q(dst_ip)} --port {port} \\
  --count {count} --timeout {bound} --ready {ready} \\
  --subflows {subflows} > {result} &
rp=$!
i=0
while [ ! -e {ready} ] && [ $i -lt 1200 ] && kill -0 $rp 2>/dev/null; do
  sleep 0.05; i=$((i+1))
done
[ -e {ready} ] || {{
  echo "probe receiver did not start within 60 s" >&2; kill $rp 2>/dev/null; exit 2
}}
ip netns exec {q(src_ns)} python3 {agent} send --dst {q(dst_ip)} --port {port} \\
  --count {count} --rate {rate} --subflows {subflows}{source}
wait $rp
cat {result}
rm -f {ready} {result}
"""
