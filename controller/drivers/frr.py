"""NAPALM driver for a Linux + FRR switch (the embedded lab's switches, or any Linux box).

The configuration is the bundle of rendered files (frr.conf, ip.batch, bridge.batch,
sysctl.conf, qos.tc, arp-to-host.json). A replace is a true replace:
- FRR with frr-reload.py, which computes and applies the difference to the running daemons
  (lines no longer in the file are removed), and whose --test gives compare_config;
- the Linux side by tearing down the links the previous ip.batch created and applying the
  new files with ip/bridge/tc -batch and sysctl -p.
State lives next to FRR's own configuration, in /etc/frr/dpctl/ (per node in the lab, where
/etc/frr is a private mount): current/ (applied files), rollback/<ts>/ (saved before each
commit), candidate/ (uploaded for a comparison), applied-running.conf (FRR's running config
right after the last commit that frr-reload confirmed whole), and current/arp-to-host.agent
(the SHA-256 of the ARP-to-host agent the last commit started: a deploy compares it too).

Speed (issue 14): every SSH exec and every process started costs on a switch's small CPU (and
~10x more in the lab's emulated guest; frr-reload.py is ~3 s there, vtysh ~0.8 s whether it
runs one command or five). So a step is one exec (files travel as one tar on stdin), reads go
through one vtysh invocation, and frr-reload runs only where its answer is needed: when the
running config is still exactly the one recorded after the last confirmed commit, the change
is the difference between the applied frr.conf and the candidate (no frr-reload --test); any
other running config (drift, a first deploy) is compared by frr-reload --test as before.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import shlex
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import paramiko
from napalm.base import models
from napalm.base.exceptions import (
    CommandErrorException,
    ConnectionException,
    MergeConfigException,
    ReplaceConfigException,
)

from controller.agents import pack
from controller.drivers import bundle, common
from controller.drivers.contract import DpctlDriver
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState, QosState

STATE = "/etc/frr/dpctl"
FRR_RELOAD = "/usr/lib/frr/frr-reload.py"
MAIN_FILE = "frr.conf"
LINUX_FILES = ("ip.batch", "bridge.batch", "sysctl.conf", "qos.tc")
AGENT = "arp_to_host.pyz"
"""The ARP-to-host agent as a switch gets it: one zipapp (controller/agents/pack.py)."""
AGENT_RUN = "arp_to_host.py"
"""The agent's pid file and log are {STATE}/arp_to_host.py.pid and .log, and a process whose
command line holds this name is the agent: the names of the single-file agent before the
zipapp (its file, {STATE}/arp_to_host.py, goes when an agent is stopped), so a dpctl upgrade
stops the agent an older dpctl started."""
BUNDLE_FILES = (MAIN_FILE, *LINUX_FILES, "arp-to-host.json")
AGENT_STAMP = "arp-to-host.agent"
"""Stored with the applied files, written by the driver (never taken from a bundle): the
SHA-256 of the ARP-to-host agent the last commit started. A dpctl whose agent differs shows
it in compare_config, so a deploy after an upgrade restarts the switch's agent with the new
code even when no rendered file changed."""
APPLIED_RUNNING = "applied-running.conf"
SNAPSHOT_REUSE_S = 30.0
CONNECT_TIMEOUT_S = 30
IGNORED_RELOAD_LINES = ("frr version", "frr defaults", "hostname ", "no hostname ")
PART = "#### dpctl-part"
SHOW_RUNNING = "show running-config"
BGP_SUMMARY = "show bgp vrf all summary json"
BGP_NEIGHBORS = "show bgp vrf all neighbors json"
HOST_ROUTES = "show ip route json"
EVPN_ES = "show evpn es detail json"
LINKS = "ip -j link show"
LLDP = "lldpcli -f json show neighbors"
QDISCS = "tc -j qdisc show"
HASH_POLICY = "sysctl -n net.ipv4.fib_multipath_hash_policy"
VERIFY_READS = (
    *(f"vtysh -c {shlex.quote(c)}" for c in (BGP_SUMMARY, BGP_NEIGHBORS, HOST_ROUTES, EVPN_ES)),
    f"vtysh -c {shlex.quote(SHOW_RUNNING)}",
    LINKS,
    LLDP,
    QDISCS,
    HASH_POLICY,
)


class _JumpPool:
    """One SSH connection per bastion for every driver of the process (the lab's guest): each
    device's session is a channel over it instead of its own handshake with the bastion."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[tuple[Any, ...], tuple[paramiko.SSHClient, int]] = {}

    def acquire(self, key: tuple[Any, ...], connect: Any) -> paramiko.SSHClient:
        with self._lock:
            client, users = self._clients.get(key, (None, 0))
            transport = client.get_transport() if client is not None else None
            if client is None or transport is None or not transport.is_active():
                client, users = connect(), 0
            self._clients[key] = (client, users + 1)
            return client

    def release(self, key: tuple[Any, ...], client: paramiko.SSHClient) -> None:
        """One user of ``client`` is done (a client replaced since is closed by its own)."""
        with self._lock:
            current, users = self._clients.get(key, (None, 0))
            if current is not client:
                client.close()
                return
            if users <= 1:
                del self._clients[key]
                client.close()
            else:
                self._clients[key] = (client, users - 1)


JUMPS = _JumpPool()


class FrrDriver(DpctlDriver):
    """optional_args: port, key_file, known_hosts, jump_host, jump_port, jump_username,
    jump_key_file, jump_known_hosts (ProxyJump through a bastion, as the lab's guest)."""

    platform = "frr"

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str | None = None,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        self.hostname = hostname
        self.username = username
        self.password = password
        self.timeout = timeout
        self.optional_args = optional_args or {}
        self._client: paramiko.SSHClient | None = None
        self._jump: tuple[tuple[Any, ...], paramiko.SSHClient] | None = None
        self._candidate: dict[str, str] | None = None
        self._merge = False
        self._cache: dict[str, str] = {}  # command -> output, inside batched_reads()
        self._compared: tuple[float, _Snapshot] | None = None  # compare_config's read

    # -- connection -------------------------------------------------------------------
    def _ssh_client(self, known_hosts: str | None) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if known_hosts:
            client.load_host_keys(known_hosts)
        else:
            client.load_system_host_keys()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        return client

    def open(self) -> None:
        args = self.optional_args
        sock = None
        connect = min(self.timeout, CONNECT_TIMEOUT_S)  # an unreachable switch fails fast
        try:
            if args.get("jump_host"):
                key = (
                    args["jump_host"],
                    int(args.get("jump_port", 22)),
                    args.get("jump_username", self.username),
                    args.get("jump_key_file"),
                    args.get("jump_known_hosts"),
                )

                def jump_client() -> paramiko.SSHClient:
                    client = self._ssh_client(key[4])
                    client.connect(
                        key[0],
                        port=key[1],
                        username=key[2],
                        key_filename=key[3],
                        allow_agent=True,
                        look_for_keys=False,
                        timeout=connect,
                    )
                    return client

                jump = JUMPS.acquire(key, jump_client)
                self._jump = (key, jump)
                transport = jump.get_transport()
                assert transport is not None
                sock = transport.open_channel(
                    "direct-tcpip",
                    (self.hostname, int(args.get("port", 22))),
                    ("127.0.0.1", 0),
                    timeout=connect,
                )
            self._client = self._ssh_client(args.get("known_hosts"))
            self._client.connect(
                self.hostname,
                port=int(args.get("port", 22)),
                username=self.username,
                password=self.password,
                key_filename=args.get("key_file"),
                sock=sock,
                allow_agent=True,
                look_for_keys=False,
                timeout=connect,
                banner_timeout=connect,
                auth_timeout=connect,
            )
        except (OSError, paramiko.SSHException, AssertionError) as exc:
            self.close()
            raise ConnectionException(f"cannot connect to {self.hostname}: {exc}") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None
        if self._jump is not None:
            JUMPS.release(*self._jump)
        self._jump = None

    def is_alive(self) -> dict[str, bool]:
        transport = self._client.get_transport() if self._client else None
        return {"is_alive": bool(transport and transport.is_active())}

    def _run(self, command: str, stdin: str | bytes | None = None) -> tuple[int, str, str]:
        if self._client is None:
            raise ConnectionException(f"{self.hostname}: not connected")
        chan_in, chan_out, chan_err = self._client.exec_command(command, timeout=self.timeout)
        if stdin is not None:
            chan_in.write(stdin)
        chan_in.channel.shutdown_write()
        out = chan_out.read().decode()
        err = chan_err.read().decode()
        return chan_out.channel.recv_exit_status(), out, err

    def _check(self, command: str, stdin: str | bytes | None = None) -> str:
        if stdin is None and command in self._cache:
            return self._cache[command]
        rc, out, err = self._run(command, stdin)
        if rc != 0:
            raise CommandErrorException(
                f"{self.hostname}: {command[:60]!r} failed ({rc}): {err.strip()[-400:]}"
            )
        return out

    def _with_files(self, files: Mapping[str, str | bytes], script: str) -> tuple[int, str, str]:
        """Write ``files`` (paths relative to the state folder) then run ``script``: one exec,
        the files as one tar archive on stdin."""
        command = f"mkdir -p {STATE} && tar -x -f - -C {STATE} && {{ {script}\n}}"
        return self._run(command, _tar(files))

    def _vtysh(self, command: str) -> str:
        return self._check(f"vtysh -c {shlex.quote(command)}")

    def _vtysh_json(self, command: str) -> Any:
        return json.loads(self._vtysh(command) or "{}")

    def _reads(self, commands: list[str] | tuple[str, ...]) -> dict[str, str]:
        """Outputs of read-only commands over one exec: the ``vtysh -c X`` ones through one
        vtysh (JSON ones first, split by decoding; at most one text one, last), the others
        separated by a marker line. A reply that does not split cleanly (a command failed) is
        read again one command at a time."""
        vtysh = [c for c in commands if c.startswith("vtysh -c ")]
        shell = [c for c in commands if c not in vtysh]
        args = [shlex.split(c)[2] for c in vtysh]
        texts = [a for a in args if not a.endswith(" json")]
        args = [a for a in args if a.endswith(" json")] + texts
        parts = []
        if args:
            parts.append("vtysh " + " ".join(f"-c {shlex.quote(a)}" for a in args))
        parts += shell
        separator = f"; printf '\\n{PART}\\n'; "
        rc, out, _err = self._run(separator.join(parts))
        chunks = out.split(f"\n{PART}\n")
        outputs: dict[str, str] | None = None
        if rc == 0 and len(chunks) == len(parts) and len(texts) <= 1:
            outputs = dict(zip(shell, chunks[1:] if args else chunks, strict=True))
            split = _split_vtysh(chunks[0], len(args) - len(texts), len(texts)) if args else []
            if split is None:
                outputs = None
            else:
                for arg, text in zip(args, split, strict=True):
                    outputs[f"vtysh -c {shlex.quote(arg)}"] = text
        if outputs is None:
            outputs = {c: self._check(c) for c in commands}
        return outputs

    @contextmanager
    def batched_reads(self) -> Iterator[None]:
        """Everything verify's getters read, in one exec; the getters answer from it."""
        self._cache = self._reads(VERIFY_READS)
        try:
            yield
        finally:
            self._cache = {}

    # -- candidate ----------------------------------------------------------------------
    def _load(self, filename: str | None, config: str | None) -> dict[str, str]:
        if filename is not None:
            with open(filename) as handle:
                config = handle.read()
        if config is None:
            raise ValueError("give filename or config")
        files = bundle.unpack(config, MAIN_FILE)
        unknown = sorted(set(files) - set(BUNDLE_FILES))
        if unknown:  # a name becomes a path on the switch: only the driver's own files
            raise ValueError(
                f"unknown file(s) {unknown} in the bundle; known: {list(BUNDLE_FILES)}"
            )
        return files

    def load_replace_candidate(
        self, filename: str | None = None, config: str | None = None
    ) -> None:
        try:
            self._candidate, self._merge = self._load(filename, config), False
        except (OSError, ValueError) as exc:
            raise ReplaceConfigException(str(exc)) from None

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        try:
            self._candidate, self._merge = self._load(filename, config), True
        except (OSError, ValueError) as exc:
            raise MergeConfigException(str(exc)) from None

    def discard_config(self) -> None:
        self._candidate = None
        self._compared = None

    def _recent_snapshot(self) -> _Snapshot:
        """compare_config's read when it is seconds old (deploy: compare, back up, commit in a
        row, under the fabric's lock), else a new one."""
        if self._compared is not None and time.monotonic() - self._compared[0] < SNAPSHOT_REUSE_S:
            return self._compared[1]
        return self._snapshot()

    def _snapshot(self, folder: str = "current") -> _Snapshot:
        """The stored files of ``folder``, FRR's running config and the one recorded after the
        last confirmed commit: one exec."""
        names = " ".join(shlex.quote(n) for n in (*BUNDLE_FILES, AGENT_STAMP))
        out = self._check(
            f"if cd {STATE}/{folder} 2>/dev/null; then for f in {names}; do "
            f"[ -f $f ] && printf '{bundle.MARKER}%s\\n' $f && cat $f; done; fi; "
            f"printf '\\n{PART}\\n'; vtysh -c {shlex.quote(SHOW_RUNNING)}; "
            f"printf '\\n{PART}\\n'; cat {STATE}/{APPLIED_RUNNING} 2>/dev/null; true"
        )
        stored, running, applied = [*out.split(f"\n{PART}\n"), "", ""][:3]
        files = bundle.unpack(stored, MAIN_FILE) if stored.startswith(bundle.MARKER) else {}
        return _Snapshot(files, _strip_running_header(running), _strip_running_header(applied))

    def _stored(self, folder: str) -> dict[str, str]:
        return self._snapshot(folder).files

    def _frr_diff(self, text: str) -> tuple[list[str], list[str]]:
        """(lines to delete, lines to add) for FRR, from frr-reload.py --test."""
        path = f"{STATE}/candidate/{MAIN_FILE}"
        rc, out, err = self._with_files(
            {f"candidate/{MAIN_FILE}": text}, f"{FRR_RELOAD} --test --stdout {path}"
        )
        if rc != 0:
            raise CommandErrorException(
                f"{self.hostname}: frr-reload --test failed: {err.strip()[-400:]}"
            )
        return _parse_reload_test(out)

    def _check_syntax(self, text: str) -> None:
        """vtysh's own parser over the candidate (``vtysh -C``, dry run: nothing applied), so a
        line FRR cannot parse is refused here, before anything is pushed."""
        path = f"{STATE}/candidate/{MAIN_FILE}"
        rc, out, err = self._with_files({f"candidate/{MAIN_FILE}": text}, f"vtysh -C -f {path}")
        if rc != 0:
            raise CommandErrorException(
                f"{self.hostname}: FRR's parser rejects the candidate: "
                f"{(err or out).strip()[-400:]}"
            )

    def compare_config(self) -> str:
        if self._candidate is None:
            return ""
        snap = self._snapshot()
        self._compared = (time.monotonic(), snap)
        current = snap.files
        parts: list[str] = []
        if MAIN_FILE in self._candidate:
            candidate = self._candidate[MAIN_FILE]
            if not self._merge and snap.unchanged_since_commit():
                # FRR runs exactly what the applied frr.conf gave: the change is the files'.
                if candidate != current[MAIN_FILE]:
                    self._check_syntax(candidate)
                parts.append(common.unified_diff(current[MAIN_FILE], candidate, MAIN_FILE))
            else:
                delete, add = self._frr_diff(candidate)
                if not (delete or add or self._merge) and current.get(MAIN_FILE) == candidate:
                    self._record_running(snap.running)  # proven: next compares take the fast path
                if self._merge:
                    delete = []
                if delete or add:
                    parts.append(f"--- running/{MAIN_FILE}\n+++ candidate/{MAIN_FILE}\n")
                    parts.append("".join(f"-{line}\n" for line in delete))
                    parts.append("".join(f"+{line}\n" for line in add))
        for name in sorted(set(self._candidate) - {MAIN_FILE}):
            parts += _file_diff(name, current.get(name, ""), self._candidate[name])
        # the agent's code changed since the last commit (or the agent starts or stops)
        effective = {**current, **self._candidate} if self._merge else self._candidate
        parts += _file_diff(AGENT_STAMP, current.get(AGENT_STAMP, ""), agent_stamp(effective) or "")
        return "".join(parts)

    def _record_running(self, running: str) -> None:
        """Record ``running`` as the config the applied frr.conf gives (frr-reload said so)."""
        self._check(
            f"cat > {STATE}/{APPLIED_RUNNING}.new && "
            f"mv {STATE}/{APPLIED_RUNNING}.new {STATE}/{APPLIED_RUNNING}",
            running,
        )

    # -- commit / rollback --------------------------------------------------------------
    def _save_rollback_point(self, snap: _Snapshot) -> str:
        """Save the applied files and FRR's running config; forget the applied-running record
        (it is written again only when this commit is confirmed whole)."""
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 10**6:06d}"
        folder = f"rollback/{stamp}"
        self._check(
            f"rm -f {STATE}/{APPLIED_RUNNING}; mkdir -p {STATE}/{folder} && "
            f"(cp -a {STATE}/current/. {STATE}/{folder}/ 2>/dev/null || true) && "
            f"cat > {STATE}/{folder}/{MAIN_FILE}",
            snap.running,
        )
        return f"{STATE}/{folder}"

    def _apply_linux(self, old: dict[str, str], new: dict[str, str]) -> list[str]:
        """Tear down what the old ip.batch created, then apply the new Linux files (one exec)."""
        if all(old.get(n) == new.get(n) for n in LINUX_FILES):
            return []
        if not _links_rebuilt(old, new):
            # Only host ports change admin state (drain/undrain): touch nothing else.
            delta = _port_state_delta(old.get("ip.batch", ""), new.get("ip.batch", "")) or []
            files = {"current/ip.batch": new["ip.batch"], "ports.batch": "\n".join(delta) + "\n"}
            rc, out, err = self._with_files(files, f"ip -force -batch {STATE}/ports.batch")
            return [] if rc == 0 else [f"ip.batch: {(err or out).strip()[-300:]}"]
        created = _created_links(old.get("ip.batch", ""))
        script = [f"ip link del {shlex.quote(name)} 2>/dev/null" for name in reversed(created)]
        for dev in _tc_devices(old.get("qos.tc", "") + new.get("qos.tc", "")):
            script.append(f"tc qdisc del dev {shlex.quote(dev)} root 2>/dev/null")
        steps = (
            ("ip.batch", "ip -force -batch"),
            ("bridge.batch", "bridge -force -batch"),
            ("sysctl.conf", "sysctl -q -p"),
            ("qos.tc", "tc -force -batch"),
        )
        log = f"{STATE}/step.log"
        for name, tool in steps:
            if name in new:
                script.append(
                    f"if ! {tool} {STATE}/current/{name} >{log} 2>&1; then "
                    f"printf '\\n{PART} %s\\n' {name}; tail -c 300 {log}; fi"
                )
        files = {f"current/{name}": new[name] for name, _tool in steps if name in new}
        rc, out, err = self._with_files(files, "\n".join([*script, "true"]))
        if rc != 0:  # the script ends in `true`: the upload itself failed, nothing ran
            return [f"uploading the Linux files: {(err or out).strip()[-300:]}"]
        return [
            f"{chunk.partition(chr(10))[0].strip()}: {chunk.partition(chr(10))[2].strip()}"
            for chunk in out.split(f"\n{PART} ")[1:]
        ]

    def _apply_frr(self, text: str) -> list[str]:
        """frr-reload the new frr.conf, then frr-reload --test it: a line left to add is one
        the daemons did not take (one exec)."""
        path = "/etc/frr/frr.conf"
        rc, out, err = self._with_files(
            {f"candidate/{MAIN_FILE}": text},
            f"cat {STATE}/candidate/{MAIN_FILE} > {path} && "
            f"{FRR_RELOAD} --reload --stdout {path} >{STATE}/reload.log 2>&1; "
            f"echo \"reload-rc=$?\"; tail -c 400 {STATE}/reload.log; printf '\\n{PART}\\n'; "
            f"{FRR_RELOAD} --test --stdout {path}",
        )
        reload_part, _sep, test_part = out.partition(f"\n{PART}\n")
        problems = []
        if not reload_part.startswith("reload-rc=0"):
            problems.append(f"frr-reload failed: {reload_part.strip()[-400:]}")
        if rc != 0 or not _sep:
            problems.append(f"frr-reload --test failed: {(err or test_part).strip()[-400:]}")
            return problems
        _delete, add = _parse_reload_test(test_part)
        if add:  # lines the daemons did not take
            problems.append("FRR rejected: " + "; ".join(add[:10]))
        return problems

    def _finish(
        self, files: dict[str, str], record_running: bool, keep_agent: bool = False
    ) -> None:
        """Store the applied files, (re)start the ARP-to-host agent, record FRR's running
        config as the one this commit confirmed: one exec. With ``keep_agent`` (nothing the
        agent reads changed: ``agent_unchanged``) a running agent is left running, and one
        that is not running is started."""
        pid = f"{STATE}/{AGENT_RUN}.pid"
        # the recorded pid is the agent's only while its command line says so (pid reuse)
        running = (
            f'p=$(cat {pid} 2>/dev/null) && [ -n "$p" ] && grep -qs {AGENT_RUN} /proc/"$p"/cmdline'
        )
        stop = f'if {running}; then kill "$p"; fi; rm -f {pid} {STATE}/{AGENT_RUN}'
        upload: dict[str, str | bytes] = {
            f"current/{name}": text for name, text in files.items() if name != AGENT_STAMP
        }
        stamp = agent_stamp(files)
        if stamp is None:
            script = [stop, f"rm -f {STATE}/current/{AGENT_STAMP}"]
        else:
            upload[AGENT] = agent_source()
            upload[f"current/{AGENT_STAMP}"] = stamp  # what runs from now on
            # setsid: the agent must outlive this SSH session (its own session, no terminal).
            start = (
                f"setsid sh -c 'echo $$ > {pid}; exec python3 {STATE}/{AGENT} "
                f"{STATE}/current/arp-to-host.json' >{STATE}/{AGENT_RUN}.log 2>&1 </dev/null &"
            )
            script = [f"if ! {{ {running}; }}; then {start} fi"] if keep_agent else [stop, start]
        if record_running:
            script.append(
                f"vtysh -c {shlex.quote(SHOW_RUNNING)} > {STATE}/{APPLIED_RUNNING}.new && "
                f"mv {STATE}/{APPLIED_RUNNING}.new {STATE}/{APPLIED_RUNNING}"
            )
        rc, _out, err = self._with_files(upload, "\n".join([*script, "true"]))
        if rc != 0:
            raise ReplaceConfigException(f"{self.hostname}: storing the applied files: {err}")

    def _apply(self, files: dict[str, str], old: dict[str, str], merged: bool = False) -> None:
        problems = self._apply_linux(old, files)
        if MAIN_FILE in files:
            problems += self._apply_frr(files[MAIN_FILE])
        if problems:
            raise ReplaceConfigException(f"{self.hostname}: " + " | ".join(problems))
        self._finish(
            files,
            record_running=MAIN_FILE in files and not merged,
            keep_agent=agent_unchanged(old, files),
        )

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if revert_in is not None:
            raise NotImplementedError("revert_in: a Linux + FRR switch has no commit-confirm")
        if self._candidate is None:
            raise ReplaceConfigException("no candidate loaded")
        snap = self._recent_snapshot()
        self._compared = None
        self._save_rollback_point(snap)
        current = snap.files
        files = {**current, **self._candidate} if self._merge else dict(self._candidate)
        if self._merge and MAIN_FILE in self._candidate:
            rc, out, err = self._run("vtysh -f /dev/stdin", self._candidate[MAIN_FILE])
            if rc != 0:
                raise MergeConfigException(f"{self.hostname}: {(out + err).strip()[-400:]}")
            files.pop(MAIN_FILE)
        self._apply(files, current, merged=self._merge)
        self._candidate = None

    def refresh_bgp_routes(self) -> None:
        self._vtysh(common.REFRESH_ROUTES)

    def rollback_points(self) -> list[str]:
        out = self._check(f"ls -1 {STATE}/rollback 2>/dev/null || true")
        return sorted(line for line in out.split() if line)

    def _replace_with(self, saved: dict[str, str]) -> None:
        self._compared = None
        current = self._stored("current")
        self._check(f"rm -rf {STATE}/current {STATE}/{APPLIED_RUNNING} && mkdir -p {STATE}/current")
        self._apply(saved, current)

    def rollback(self) -> None:
        points = self.rollback_points()
        if not points:
            raise ReplaceConfigException(f"{self.hostname}: no rollback point saved")
        self._replace_with(self._stored(f"rollback/{points[-1]}"))
        self._check(f"rm -rf {STATE}/rollback/{points[-1]}")

    def restore_config(self, saved: str) -> None:
        """Run the files of a ``get_config()["running"]`` bundle again (a deploy's backup)."""
        try:
            files = bundle.unpack(saved, MAIN_FILE)
        except ValueError as exc:
            raise ReplaceConfigException(f"{self.hostname}: bad saved config: {exc}") from None
        self._replace_with(files)

    # -- getters ------------------------------------------------------------------------
    def get_config(
        self, retrieve: str = "all", full: bool = False, sanitized: bool = False
    ) -> dict[str, str]:
        snap = self._recent_snapshot()
        running = bundle.pack({**snap.files, MAIN_FILE: snap.running})
        return {"running": running, "candidate": bundle.pack(self._candidate or {}), "startup": ""}

    def get_facts(self) -> models.FactsDict:
        hostname = self._check("hostname").strip()
        uptime = float(self._check("cut -d' ' -f1 /proc/uptime").strip())
        version = self._vtysh("show version").splitlines()
        links = json.loads(self._check("ip -j link show") or "[]")
        return {
            "hostname": hostname,
            "fqdn": hostname,
            "vendor": "Linux",
            "model": "Linux + FRR",
            "os_version": version[0].strip() if version else "",
            "serial_number": "",
            "uptime": uptime,
            "interface_list": sorted(str(link["ifname"]) for link in links),
        }

    def get_interfaces(self) -> dict[str, models.InterfaceDict]:
        result: dict[str, dict[str, Any]] = {}
        for link in json.loads(self._check(LINKS) or "[]"):
            flags = link.get("flags", [])
            result[str(link["ifname"])] = {
                "is_up": link.get("operstate") in ("UP", "UNKNOWN") and "UP" in flags,
                "is_enabled": "UP" in flags,
                "description": str(link.get("ifalias", "")),
                "last_flapped": -1.0,
                "speed": -1.0,
                "mtu": int(link.get("mtu", 0)),
                "mac_address": str(link.get("address", "")),
            }
        return result

    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
        if not self._cache:  # both in one vtysh
            asks = [f"vtysh -c {shlex.quote(c)}" for c in (BGP_SUMMARY, BGP_NEIGHBORS)]
            reads = self._reads(asks)
            summary, neighbors = (json.loads(reads[c] or "{}") for c in asks)
            return common.bgp_neighbors(summary, neighbors)
        return common.bgp_neighbors(self._vtysh_json(BGP_SUMMARY), self._vtysh_json(BGP_NEIGHBORS))

    def _lldp(self) -> Any:
        return common.load_json(self._check(LLDP) or "{}")

    def get_host_routes(self) -> list[HostRoute]:
        return common.host_routes(self._vtysh_json(HOST_ROUTES))

    def get_evpn_es(self) -> list[EthernetSegmentState]:
        return common.evpn_es(self._vtysh_json(EVPN_ES))

    def get_qos_state(self) -> QosState:
        """ECN per port from the kernel's qdiscs: a queue is a band of the port's prio qdisc,
        marking ECN when a RED qdisc with ``ecn`` sits on it (``tc -j``: ``parent`` "1:<band>",
        ``options.ecn`` true; iproute2 tc/tc_red.c). PFC does not exist in the Linux
        datapath (None). ECMP hash: ``net.ipv4.fib_multipath_hash_policy`` (0 = L3, 1 = L4;
        kernel ip-sysctl.rst)."""
        qdiscs = json.loads(self._check(QDISCS) or "[]")
        ecn: dict[str, list[int]] = {}
        for qdisc in qdiscs:
            options = qdisc.get("options", {})
            marks = options.get("ecn") is True or "ecn" in options.get("flags", [])
            parent = str(qdisc.get("parent", ""))
            band = parent.partition(":")[2]
            if qdisc.get("kind") == "red" and marks and band.isdigit():
                ports = ecn.setdefault(str(qdisc["dev"]), [])
                ports.append(int(band))
                ports.sort()
        policy = self._check(HASH_POLICY).strip()
        hashes = {"0": "l3", "1": "l4", "2": "l3-inner", "3": "custom"}
        return QosState(pfc=None, ecn=ecn, ecmp_hash=hashes.get(policy, f"policy {policy}"))

    def get_maintenance(self) -> MaintenanceState:
        return common.maintenance_state(self._vtysh(SHOW_RUNNING))


def _file_diff(name: str, old: str, new: str) -> list[str]:
    """A stored file against the candidate's, as unified diff lines (none when equal)."""
    return list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"running/{name}",
            f"candidate/{name}",
        )
    )


def agent_source() -> bytes:
    """The ARP-to-host agent this dpctl copies to a Linux + FRR leaf: the zipapp of
    controller/agents/arp_to_host/, the same bytes for the same code (agents/pack.py)."""
    return pack.agent_archive()


def _links_rebuilt(old: dict[str, str], new: dict[str, str]) -> bool:
    """Whether applying ``new`` over ``old`` deletes and re-creates the links the old
    ip.batch made: any change to the Linux files but ports' admin state (a drain step)."""
    if all(old.get(n) == new.get(n) for n in LINUX_FILES):
        return False
    delta = _port_state_delta(old.get("ip.batch", ""), new.get("ip.batch", ""))
    return delta is None or any(old.get(n) != new.get(n) for n in LINUX_FILES[1:])


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
        and not _links_rebuilt(old, new)
    )


def agent_stamp(files: dict[str, str]) -> str | None:
    """The AGENT_STAMP a commit of ``files`` stores: None when they start no agent (no
    arp-to-host.json, or one without a table)."""
    config = files.get("arp-to-host.json")
    if not config or json.loads(config).get("table") is None:
        return None
    digest = hashlib.sha256(agent_source()).hexdigest()
    return f"{AGENT} sha256 {digest}\n"


class _Snapshot:
    """A switch's applied files, FRR's running config, and the running config recorded right
    after the last commit frr-reload confirmed whole (headers stripped; "" when none)."""

    def __init__(self, files: dict[str, str], running: str, applied: str) -> None:
        self.files = files
        self.running = running
        self.applied = applied

    def unchanged_since_commit(self) -> bool:
        return MAIN_FILE in self.files and bool(self.applied) and self.running == self.applied


def _tar(files: Mapping[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        now = time.time()
        for path, text in files.items():
            data = text if isinstance(text, bytes) else text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o640, now
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _split_vtysh(output: str, json_count: int, text_count: int) -> list[str] | None:
    """One vtysh run's output of ``json_count`` JSON commands then ``text_count`` (0 or 1)
    text command: each JSON value re-serialised, then the rest. None when it does not split
    so (vtysh stops at a failing command)."""
    decoder = json.JSONDecoder()
    texts: list[str] = []
    position = 0
    for _ in range(json_count):
        while position < len(output) and output[position].isspace():
            position += 1
        try:
            value, position = decoder.raw_decode(output, position)
        except json.JSONDecodeError:
            return None
        texts.append(json.dumps(value))
    rest = output[position:].lstrip("\n")
    if text_count == 0:
        return texts if not rest.strip() else None
    return [*texts, rest] if text_count == 1 and rest else None


def _strip_running_header(text: str) -> str:
    lines = text.splitlines(keepends=True)
    skip = ("Building configuration", "Current configuration", "frr version", "frr defaults")
    return "".join(line for line in lines if not line.startswith(skip) and line.strip() != "")


def _parse_reload_test(output: str) -> tuple[list[str], list[str]]:
    delete: list[str] = []
    add: list[str] = []
    target: list[str] | None = None
    for raw in output.splitlines():
        line = raw.rstrip()
        if line == "Lines To Delete":
            target = delete
        elif line == "Lines To Add":
            target = add
        elif (
            target is not None
            and line
            and not set(line) <= {"="}
            and not line.startswith(IGNORED_RELOAD_LINES)
        ):
            target.append(line)
    return delete, add


def _created_links(ip_batch: str) -> list[str]:
    """Links an ip.batch creates (`link add [link X] name N ...`), in creation order."""
    names = []
    for line in ip_batch.splitlines():
        words = line.split()
        if words[:2] == ["link", "add"] and "name" in words:
            names.append(words[words.index("name") + 1])
    return names


def _port_state_delta(old: str, new: str) -> list[str] | None:
    """The new lines, when two ip.batch files differ only in ports' admin state (up/down)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if not old_lines or len(old_lines) != len(new_lines):
        return None
    created = set(_created_links(old))
    changed = []
    for before, after in zip(old_lines, new_lines, strict=True):
        if before == after:
            continue
        a, b = before.split(), after.split()
        if (
            a[:3] != ["link", "set", "dev"]
            or a[:-1] != b[:-1]
            or {a[-1], b[-1]} != {"up", "down"}
            or a[3] in created
        ):
            return None
        changed.append(after)
    return changed


def _tc_devices(qos: str) -> list[str]:
    devices: list[str] = []
    for line in qos.splitlines():
        words = line.split()
        if words[:2] == ["qdisc", "add"] and "root" in words and words[3] not in devices:
            devices.append(words[3])
    return devices
