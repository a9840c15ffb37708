"""The ARP-to-host agent an FRR switch runs: its source, and the stamp that says which one runs.

The driver copies the agent with a commit whose ``arp-to-host.json`` names a kernel table,
and stores ``AGENT_STAMP`` (the SHA-256 of the agent's code) with the applied files, so a
dpctl whose agent differs shows it in compare_config and a deploy after an upgrade restarts
the switch's agent with the new code even when no rendered file changed.
"""

from __future__ import annotations

import hashlib
import json

from controller.agents import pack
from controller.platforms.frr.changes import links_rebuilt

AGENT = "arp_to_host.pyz"
"""The ARP-to-host agent as a switch gets it: one zipapp (controller/agents/pack.py)."""
AGENT_UPLOAD = f"{AGENT}.new"
"""Where a commit writes the agent before renaming it to AGENT (agent_commands)."""
AGENT_RUN = "arp_to_host.py"
"""The agent's pid file and log are {STATE}/arp_to_host.py.pid and .log, and a process whose
command line holds this name is the agent: the names of the single-file agent before the
zipapp (its file, {STATE}/arp_to_host.py, goes when an agent is stopped), so a dpctl upgrade
stops the agent an older dpctl started."""
AGENT_STAMP = "arp-to-host.agent"
"""Stored with the applied files, written by the driver (never taken from a bundle)."""


def agent_source() -> bytes:
    """The ARP-to-host agent this dpctl copies to a Linux + FRR leaf: the zipapp of
    controller/agents/arp_to_host/, the same bytes for the same code (agents/pack.py)."""
    return pack.agent_archive()


def agent_unchanged(old: dict[str, str], new: dict[str, str]) -> bool:
    """Whether a commit of ``new`` over ``old`` leaves the ARP-to-host agent nothing new to
    read: the same code, the same config, and the same links (its raw sockets and sysfs
    paths are bound to the bonds' members). Then the agent keeps running: each drain and
    undrain step restarted it, and an undrain's last step brings the host ports up first
    and restarts the agent after frr-reload, seconds later in the lab, about when a
    server's port returns (its updelay, then LACP): the port's gate then waited for the new
    agent, and the join lost 0.5 s on two sub-flows (failure matrix, 2026-12-04 evening)."""
    return (
        agent_stamp(new) is not None
        and old.get(AGENT_STAMP) == agent_stamp(new)
        and old.get("arp-to-host.json") == new.get("arp-to-host.json")
        and not links_rebuilt(old, new)
    )


def agent_stamp(files: dict[str, str]) -> str | None:
    """The AGENT_STAMP a commit of ``files`` stores: None when they start no agent (no
    arp-to-host.json, or one without a table)."""
    config = files.get("arp-to-host.json")
    if not config or json.loads(config).get("table") is None:
        return None
    digest = hashlib.sha256(agent_source()).hexdigest()
    return f"{AGENT} sha256 {digest}\n"


def agent_commands(
    state: str, files: dict[str, str], keep_agent: bool
) -> tuple[dict[str, str | bytes], list[str]]:
    """What a commit of ``files`` uploads (paths under the driver's ``state`` folder) and the
    shell lines that start, keep or stop the agent. With ``keep_agent`` (nothing the agent
    reads changed: ``agent_unchanged``) a running agent is left running, and one that is not
    running is started."""
    pid = f"{state}/{AGENT_RUN}.pid"
    # the recorded pid is the agent's only while its command line says so (pid reuse)
    running = (
        f'p=$(cat {pid} 2>/dev/null) && [ -n "$p" ] && grep -qs {AGENT_RUN} /proc/"$p"/cmdline'
    )
    stop = f'if {running}; then kill "$p"; fi; rm -f {pid} {state}/{AGENT_RUN}'
    stamp = agent_stamp(files)
    if stamp is None:
        return {}, [stop, f"rm -f {state}/current/{AGENT_STAMP}"]
    # the agent's file, beside its path, and the stamp of what runs from now on
    upload: dict[str, str | bytes] = {
        AGENT_UPLOAD: agent_source(),
        f"current/{AGENT_STAMP}": stamp,
    }
    # rename(2) swaps the whole file at once: tar writes the archive in place, and an agent
    # still importing from it (zipimport reads the file by path, lazily) read half a zip and
    # died with EOFError when a commit that kept it ran (CI, 2026-12-07). A kept agent's
    # code is the same bytes, so its offsets into the archive stay true.
    install = f"mv -f {state}/{AGENT_UPLOAD} {state}/{AGENT}"
    # setsid: the agent must outlive this SSH session (its own session, no terminal).
    start = (
        f"setsid sh -c 'echo $$ > {pid}; exec python3 {state}/{AGENT} "
        f"{state}/current/arp-to-host.json' >{state}/{AGENT_RUN}.log 2>&1 </dev/null &"
    )
    if keep_agent:
        return upload, [install, f"if ! {{ {running}; }}; then {start} fi"]
    return upload, [stop, install, start]
