"""Client side of a running lab: commands on nodes over SSH (through the guest jump)."""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import paramiko

from controller.lab.errors import LabCommandError, LabError, LabTimeoutError
from controller.lab.executor import Executor, NodeSock, exec_over_ssh
from controller.lab.scripts import syslog_path
from controller.lab.state import LabState, load_state


def open_executor(state: LabState, guest: int = 0) -> Executor:
    """An executor for the lab's root namespace (guest over SSH, or the host); ``guest``:
    which instance of a split lab."""
    from controller.lab.substrate import of_state
    from controller.lab.uml import UmlSubstrate

    if guest == 0:
        return of_state(state).executor(state)
    if not 0 < guest < state.guests:
        raise LabError(f"this lab has no instance {guest}")
    return UmlSubstrate().executor_of(state, guest)


class LabSession:
    """SSH access to every node of a running lab.

    Node connections are cached; use as a context manager or call :meth:`close`.
    """

    def __init__(self, state: LabState, executor: Executor | None = None) -> None:
        self.state = state
        self._executor = executor
        self._clients: dict[str, paramiko.SSHClient] = {}
        self._more: dict[int, Executor] = {}

    @classmethod
    def open(cls, state_dir: Path | str) -> LabSession:
        return cls(load_state(Path(state_dir)))

    def __enter__(self) -> LabSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            self._executor = open_executor(self.state)
        return self._executor

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._executor is not None:
            self._executor.close()
            self._executor = None
        for extra in self._more.values():
            extra.close()
        self._more.clear()

    def guest_of(self, node: str) -> int:
        """The instance ``node`` runs in (0 unless the lab is split)."""
        try:
            return self.state.nodes[node].guest
        except KeyError:
            raise LabError(f"unknown lab node {node!r}") from None

    def executor_of(self, guest: int) -> Executor:
        """The root namespace of instance ``guest`` (0: :attr:`executor`)."""
        if guest == 0:
            return self.executor
        if guest not in self._more:
            self._more[guest] = open_executor(self.state, guest)
        return self._more[guest]

    # -- raw access --------------------------------------------------------------
    def mgmt_ip(self, node: str) -> str:
        try:
            return self.state.nodes[node].mgmt_ip
        except KeyError:
            raise LabError(f"unknown lab node {node!r}") from None

    def node_sock(self, node: str, port: int = 22, timeout: float = 5.0) -> NodeSock:
        """A stream to ``<node mgmt ip>:port`` (a paramiko channel through the guest).

        Hand it as ``sock=`` to paramiko / netmiko / NAPALM (ProxyJump equivalent).
        """
        return self.executor.open_tcp(self.mgmt_ip(node), port, timeout)

    def ssh_params(self, node: str) -> dict[str, Any]:
        """Keyword arguments for ``paramiko.SSHClient.connect`` (and netmiko's ``sock``)."""
        return {
            "hostname": self.mgmt_ip(node),
            "port": 22,
            "username": "root",
            "key_filename": str(self.state.key_path),
            "sock": self.node_sock(node),
            "allow_agent": False,
            "look_for_keys": False,
        }

    def client(self, node: str, timeout: float = 10.0) -> paramiko.SSHClient:
        """A logged-in SSH client for ``node`` (host key checked against known_hosts)."""
        cached = self._clients.get(node)
        transport = cached.get_transport() if cached else None
        if cached is not None and transport is not None and transport.is_active():
            return cached
        client = paramiko.SSHClient()
        client.load_host_keys(str(self.state.known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                **self.ssh_params(node),
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
            )
        except (OSError, paramiko.SSHException) as exc:
            client.close()
            raise LabCommandError(f"ssh to {node} failed: {exc}") from exc
        self._clients[node] = client
        return client

    # -- commands ------------------------------------------------------------------
    def run(
        self, node: str, cmd: str, timeout: float = 60.0, stdin: bytes | None = None
    ) -> tuple[int, str, str]:
        """Run ``cmd`` on ``node`` over SSH; returns (rc, stdout, stderr)."""
        return exec_over_ssh(self.client(node), cmd, stdin, timeout)

    def check(self, node: str, cmd: str, timeout: float = 60.0) -> str:
        """Like :meth:`run` but raise :class:`LabCommandError` on a non-zero exit."""
        rc, out, err = self.run(node, cmd, timeout)
        if rc != 0:
            raise LabCommandError(
                f"{node}: {cmd[:80]!r} exited {rc}: {err.strip()[:500]}", rc, out, err
            )
        return out

    def vtysh(self, node: str, *commands: str, timeout: float = 60.0) -> str:
        """``vtysh -c ... -c ...`` on a switch node (its own FRR)."""
        args = " ".join(f"-c {shlex.quote(c)}" for c in commands)
        return self.check(node, f"vtysh {args}", timeout)

    def root_run(self, script: str, timeout: float = 300.0, guest: int = 0) -> tuple[int, str, str]:
        """Run a script in the lab's root namespace (the guest, or the host); ``guest``:
        which instance of a split lab (:meth:`guest_of` a node)."""
        return self.executor_of(guest).run_script(script, timeout)

    # -- readiness -----------------------------------------------------------------
    def wait_ssh(self, nodes: list[str] | None = None, timeout: float = 60.0) -> float:
        """Poll until each node's sshd sends its banner; returns seconds waited."""
        start = time.monotonic()
        pending = list(nodes if nodes is not None else self.state.nodes)
        while pending:
            pending = [n for n in pending if not self._banner(n)]
            if pending and time.monotonic() - start > timeout:
                raise LabTimeoutError(f"sshd not answering on {', '.join(pending)}")
            if pending:
                time.sleep(0.2)
        return time.monotonic() - start

    def _banner(self, node: str) -> bool:
        try:
            sock = self.node_sock(node, timeout=3.0)
        except (OSError, paramiko.SSHException, LabError):
            return False
        try:
            sock.settimeout(3.0)
            return sock.recv(64).startswith(b"SSH-")
        except (TimeoutError, OSError):
            return False
        finally:
            sock.close()

    def bgp_established(self, node: str) -> set[str]:
        """Peers of ``node`` in state Established, over all address families."""
        rc, out, _ = self.run(node, "vtysh -c 'show bgp summary json'", timeout=30.0)
        if rc != 0 or not out.strip():
            return set()
        try:
            data = json.loads(out)
        except ValueError:
            return set()
        up: set[str] = set()
        for af in data.values() if isinstance(data, dict) else []:
            peers = af.get("peers", {}) if isinstance(af, dict) else {}
            up |= {
                p
                for p, v in peers.items()
                if isinstance(v, dict) and v.get("state") == "Established"
            }
        return up

    def wait_bgp_established(
        self, node: str, expected_count: int, timeout: float = 60.0, interval: float = 0.5
    ) -> set[str]:
        """Poll ``show bgp summary json`` until ``expected_count`` peers are Established."""
        deadline = time.monotonic() + timeout
        up: set[str] = set()
        while time.monotonic() < deadline:
            up = self.bgp_established(node)
            if len(up) >= expected_count:
                return up
            time.sleep(interval)
        raise LabTimeoutError(
            f"{node}: {len(up)}/{expected_count} BGP sessions established "
            f"after {timeout:.0f}s ({', '.join(sorted(up)) or 'none'})"
        )

    # -- logs ----------------------------------------------------------------------
    def syslog(self, node: str | None = None, lines: int = 200) -> list[dict[str, Any]]:
        """The guest's syslog (``syslog_sink.py``): the last ``lines`` messages, of one node
        or of all, oldest first, each ``{"time": guest epoch, "node": name ("-": the guest),
        "severity", "message"}``.
        A native lab logs to the host's own syslog: refused there."""
        if self.state.mode != "guest":
            raise LabError("a native lab's daemons log to the host's syslog, not to the lab")
        if node is not None and node not in self.state.nodes:
            raise LabError(f"no node {node!r} in this lab")
        if not 1 <= lines <= 100_000:
            raise LabError(f"lines must be 1..100000, not {lines}")
        path = syslog_path(self.state.prefix)
        tag = f"{self.state.prefix}{node}" if node else ""
        pick = f"awk -v n={shlex.quote(tag)} '$2 == n' {path}" if node else f"cat {path}"
        # each instance of a split lab keeps its own nodes' messages
        guests = [self.guest_of(node)] if node else list(range(self.state.guests))
        text = ""
        for guest in guests:
            script = f"[ -f {path} ] || exit 3; {pick} | tail -n {lines}"
            rc, out, err = self.root_run(script, guest=guest)
            if rc == 3:
                raise LabError(
                    f"no syslog in this lab ({path} is missing: built before it had one)"
                )
            if rc != 0:
                raise LabCommandError(f"reading the lab's syslog failed: {err.strip()}", rc)
            text += out
        found: list[dict[str, Any]] = []
        for line in text.splitlines():
            stamp, _sp, rest = line.partition(" ")
            ns, _sp, message = rest.partition(" ")
            try:
                when = float(stamp)
            except ValueError:
                continue
            node_name = ns.removeprefix(self.state.prefix)
            found.append({"time": when, "node": node_name, **parse_syslog_message(message)})
        found.sort(key=lambda entry: entry["time"])  # stable: one instance's order kept
        return found[-lines:]


SEVERITIES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
_SYSLOG = re.compile(r"<(\d{1,3})>(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d )?(.*)", re.S)


def parse_syslog_message(raw: str) -> dict[str, str]:
    """``<PRI>Mmm dd hh:mm:ss tag[pid]: text`` (RFC 3164, what libc's syslog sends) ->
    severity and the message from its tag on; anything else is kept whole."""
    m = _SYSLOG.fullmatch(raw)
    if not m:
        return {"severity": "", "message": raw}
    return {"severity": SEVERITIES[int(m.group(1)) % 8], "message": m.group(2)}
