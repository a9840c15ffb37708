"""NAPALM driver for Asterfusion AsterNOS (CX864E-N / CX732Q-N): klish CLI over netmiko.

The session is netmiko's ``asterfusion_asternos`` (netmiko >= 4.6): it enters ``sonic-cli``
(klish) and sends ``terminal raw-output`` against paging; ``send_config_set`` enters
``configure terminal``; ``save_config`` sends ``write`` and answers ``y``.

A dpctl configuration for AsterNOS is one klish session text (``asternos.cli``). Replace commit:

1. Rollback point: ``show running-config`` (klish) is captured and kept by the driver (and
   written to ``optional_args["checkpoint_dir"]`` on the controller when given). Chosen over a
   GCU ``config checkpoint`` from ``system bash`` because the klish running-config covers
   everything AsterNOS manages, routing included, while a GCU checkpoint covers CONFIG_DB only
   and where AsterNOS keeps its FRR configuration is not publicly documented. Restoring it
   uses the same klish path a deploy uses.
2. klish has no configure-replace: the driver sends ``no <line>`` (inside its parent context)
   for every running line the candidate lacks, except under ``interface ethernet``,
   ``interface mgmt``, ``hostname`` headers (physical objects: only their children are
   negated), then the candidate's lines, all in one ``send_config_set`` that stops at the
   first line AsterNOS rejects.
3. On rejection the saved running-config is restored the same way and nothing is saved;
   on success ``write`` (confirm ``y``).

Merge commit skips the negations. ``revert_in`` is not supported (NotImplementedError).

A command that gives no prompt back within ``read_timeout`` cannot be ended on the switch:
AsterNOS's documents name no klish command or option that bounds one (research/asternos-cli.md
section 1.1; the SONiC and FRR drivers run theirs under coreutils ``timeout``,
:mod:`controller.drivers.switch_side`), and netmiko's read timeout only stops the reading.
So the driver says the command may still be running there, closes the session (its
hang-up may end what klish runs for it: UNVERIFIED, AsterNOS documents no such thing), types
nothing more into it (no restore behind a busy CLI) and refuses a rollback from it: the
operator checks the switch, then runs ``dpctl rollback`` from a new session.
Getters: FRR JSON through klish (``show ip bgp summary json``, ``show ip route json``,
``show evpn es detail json``); facts, interfaces and LLDP from the SONiC shell underneath
(``system bash``: ``show version``, ``show interfaces status``/``description``,
``ip -j link show``, ``docker exec lldp lldpctl -f json``), parsed as on community SONiC.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, cast

from napalm.base import models
from napalm.base.exceptions import (
    CommandErrorException,
    CommitError,
    ConnectionException,
    MergeConfigException,
    ReplaceConfigException,
)
from netmiko import ConnectHandler
from netmiko.exceptions import ConfigInvalidException, ReadTimeout

from controller.drivers import common, sanitize, standard, switch_side
from controller.drivers.bundle import unpack
from controller.drivers.contract import ActionRefused
from controller.drivers.sonic_family import SonicFamilyDriver
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState

MAIN_FILE = "asternos.cli"
KEEP = ("interface ethernet", "interface mgmt", "hostname")
ERROR_PATTERN = r"^\s*%|Error:|Invalid input|Unknown command|Incomplete command|Ambiguous command"
BASH_PROMPT = r"\$\s*$"
KLISH_PROMPT = r"#\s*$"
NO_FULL = (
    "a klish running-config with defaults is not in AsterNOS's public documents "
    "(research/asternos-cli.md), and FRR underneath has no `show running-config all`"
)

NOT_DOCUMENTED = (
    "AsterNOS: the public AsterNOS documents name no klish command for {action} "
    "(docs/research: /work/shared/research/asternos-cli.md section 1.1 lists what was found; "
    "community SONiC's commands under `system bash` are not documented for AsterNOS); "
    "refused rather than guessed, nothing was changed"
)


class CliSession(Protocol):
    """The subset of a netmiko connection the driver uses."""

    def send_command(self, command_string: str, **kwargs: Any) -> Any: ...

    def send_config_set(self, config_commands: Sequence[str], **kwargs: Any) -> str: ...

    def save_config(self) -> str: ...

    def is_alive(self) -> bool: ...

    def disconnect(self) -> None: ...


SessionFactory = Callable[..., CliSession]

GAVE_UP = (
    "{host}: no prompt within {seconds:g} s after {what}: it MAY STILL BE RUNNING ON THE "
    "SWITCH. AsterNOS documents no way to bound a klish command on the switch, so dpctl "
    "closed the session (its hang-up may end the command: unverified on AsterNOS) and sends "
    "nothing more, no rollback either. Check the switch: `show running-config` against the "
    "backup dpctl saved, until it stops changing; then, if needed, "
    "`dpctl rollback -f FILE --device {host}`"
)
CLOSED = (
    "{host}: nothing more is sent from this session, no rollback either: {what} gave no "
    "prompt back and may still be running on the switch, and a command now would run behind "
    "or alongside it. Check the switch (`show running-config` against the backup dpctl "
    "saved), then `dpctl rollback -f FILE --device {host}` from a new session"
)


def _netmiko_session(**params: Any) -> CliSession:
    try:
        session = cast(CliSession, ConnectHandler(**params))
    except Exception as exc:  # never echo credentials: only the host and the error class
        raise ConnectionException(
            f"cannot connect to {params.get('host')}:{params.get('port')}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return session


def session_lines(text: str) -> list[str]:
    """The candidate's lines as they are sent: session commands, comments, blanks dropped."""
    lines = []
    previous = ""
    for raw in text.splitlines():
        line = raw.strip()
        answer = line == "y" and previous == "write"  # write's confirmation (save_config gives it)
        previous = line or previous
        if not line or line.startswith("!") or answer:
            continue
        if line in ("configure terminal", "end", "write"):
            continue
        lines.append(line)
    return lines


# Commands that enter a klish configuration mode even with nothing under them (the blocks the
# AsterNOS templates close with `exit`): a saved `vlan 1001` line must be followed by `exit`.
MODE_COMMANDS = ("interface ", "router ", "address-family ", "route-map ", "vlan ", "qos roce ")


def saved_session_lines(text: str) -> list[str]:
    """A saved ``show running-config`` as configuration-mode lines. The running-config shows
    modes by indentation and ``!``, which a session does not have: each block's lines follow
    its header and an ``exit`` closes it; the banner (``Building configuration...``) goes."""
    lines: list[str] = []

    def walk(nodes: list[common.Node]) -> None:
        for node in nodes:
            lines.append(node.line)
            if node.children or node.line.startswith(MODE_COMMANDS):
                walk(node.children)
                lines.append("exit")

    walk(common.config_tree(text))
    return lines


class AsterNOSDriver(SonicFamilyDriver):
    """NAPALM driver for AsterNOS (see the module docstring for the exact commands).

    optional_args beyond the family's (``SonicFamilyDriver``): ``ssh_config_file``,
    ``checkpoint_dir`` (controller-side copies of rollback points), ``error_pattern`` (regex
    of a rejected line), ``read_timeout`` (seconds, 300).
    """

    platform = "asternos"
    vendor = "Asterfusion"

    def _read_options(self, args: dict[str, Any]) -> None:
        self.ssh_config_file: str | None = args.get("ssh_config_file")
        self.checkpoint_dir: str | None = args.get("checkpoint_dir")
        self.error_pattern = str(args.get("error_pattern", ERROR_PATTERN))
        timeout = args.get("read_timeout", self.timeout)
        self.read_timeout = switch_side.seconds(self.hostname, "read_timeout", timeout)
        self.gave_up: str | None = None  # the command a read timeout left on the switch
        self._candidate: str | None = None
        self._replace = True
        self._rollback_text: str | None = None
        self.checkpoint_name: str | None = None

    # ------------------------------------------------------------------ session

    def _connect(self) -> CliSession:
        known = str(Path(self.known_hosts).expanduser()) if self.known_hosts else None
        factory: SessionFactory = self._factory or _netmiko_session
        return factory(
            device_type="asterfusion_asternos",
            host=self.hostname,
            username=self.username,
            password=self._password,
            port=self.port,
            timeout=self.timeout,
            ssh_strict=True,
            system_host_keys=known is None,
            alt_host_keys=known is not None,
            alt_key_file=known or "",
            use_keys=self.key_file is not None,
            key_file=self.key_file,
            allow_agent=self.allow_agent,
            ssh_config_file=self.ssh_config_file,
        )

    def open(self) -> None:
        self.gave_up = None  # a new session: the caller checked the switch (GAVE_UP)
        super().open()

    def _disconnect(self, session: CliSession) -> None:
        session.disconnect()

    def _session_alive(self, session: CliSession) -> bool:
        return session.is_alive()

    def _cli(self) -> CliSession:
        if self.gave_up is not None:
            raise CommandErrorException(CLOSED.format(host=self.hostname, what=self.gave_up))
        session: CliSession = self._require_session()
        return session

    @contextmanager
    def _waiting(self, what: str) -> Iterator[None]:
        """A read timeout in the block: the session closed, the command named (class doc)."""
        try:
            yield
        except ReadTimeout as exc:
            self.gave_up = what
            self.close()
            raise TimeoutError(
                GAVE_UP.format(host=self.hostname, seconds=self.read_timeout, what=what)
            ) from exc

    def _shell_outputs(self, commands: Sequence[str]) -> list[str]:
        return self._bash(commands)

    def _show(self, command: str) -> str:
        with self._waiting(f"`{command}`"):
            output = str(self._cli().send_command(command, read_timeout=self.read_timeout))
        if re.search(self.error_pattern, output, flags=re.M):
            raise CommandErrorException(f"{self.hostname}: `{command}` failed: {output.strip()}")
        return output

    def _bash(self, commands: Sequence[str]) -> list[str]:
        """Run commands in the SONiC shell under klish (``system bash``), then go back (not
        after a read timeout: the command still holds the shell, the session is closed)."""
        outputs: list[str] = []
        with self._waiting("`system bash`"):
            self._cli().send_command("system bash", expect_string=BASH_PROMPT)
        try:
            for command in commands:
                with self._waiting(f"`{command}` in `system bash`"):
                    output = self._cli().send_command(
                        command, expect_string=BASH_PROMPT, read_timeout=self.read_timeout
                    )
                outputs.append(str(output))
        finally:
            if self.gave_up is None:
                self._cli().send_command("exit", expect_string=KLISH_PROMPT)
        return outputs

    # ---------------------------------------------------------------- candidate

    def _load(self, filename: str | None, config: str | None, replace: bool) -> None:
        if filename is not None:
            config = Path(filename).read_text()
        error = ReplaceConfigException if replace else MergeConfigException
        if config is None:
            raise error("give filename or config")
        files = unpack(config, MAIN_FILE)
        if set(files) != {MAIN_FILE}:
            raise error(f"an AsterNOS bundle holds only {MAIN_FILE}, got {sorted(files)}")
        self._candidate = files[MAIN_FILE]
        self._replace = replace

    def load_replace_candidate(
        self, filename: str | None = None, config: str | None = None
    ) -> None:
        self._load(filename, config, replace=True)

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self._load(filename, config, replace=False)

    def discard_config(self) -> None:
        self._candidate = None

    def _running(self) -> str:
        return self._show("show running-config")

    def compare_config(self) -> str:
        if self._candidate is None:
            return ""
        running = common.normalize_config(self._running())
        if self._replace:
            wanted = common.normalize_config(self._candidate)
        else:
            wanted = common.merge_config(running, self._candidate)
        return common.unified_diff(running, wanted, MAIN_FILE)

    def _commands(self, running: str, target: str, replace: bool, saved: bool = False) -> list[str]:
        """Negations of what ``running`` has beyond ``target`` (replace), then ``target``'s
        lines: a rendered session as written, a saved running-config (``saved``) re-blocked."""
        removals = common.negations(running, target, keep=KEEP) if replace else []
        return [*removals, *(saved_session_lines(target) if saved else session_lines(target))]

    def _push(self, commands: list[str]) -> None:
        try:
            with self._waiting(f"a configuration session of {len(commands)} lines"):
                self._cli().send_config_set(
                    commands, error_pattern=self.error_pattern, read_timeout=self.read_timeout
                )
        except ConfigInvalidException as exc:
            raise CommandErrorException(str(exc)) from exc

    # ------------------------------------------------------------------ commit

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if revert_in is not None:
            raise NotImplementedError(
                "AsterNOS: klish has no commit-confirmed / timed rollback, and dpctl's rollback "
                "point is the running-config this session holds, which no device-side timer "
                "can replay; commit without revert_in and call rollback() if checks fail"
            )
        if self._candidate is None:
            raise CommitError("no candidate loaded")
        error = ReplaceConfigException if self._replace else MergeConfigException
        try:
            running = self._running()
        except CommandErrorException as exc:
            raise error(f"{self.hostname}: could not save a rollback point: {exc}") from exc
        self._rollback_text = running
        self.checkpoint_name = f"dpctl-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
        if self.checkpoint_dir:
            path = Path(self.checkpoint_dir) / f"{self.hostname}.{self.checkpoint_name}.cli"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(running)
        try:
            self._push(self._commands(running, self._candidate, self._replace))
        except CommandErrorException as exc:
            restored = self._restore(running)
            raise error(
                f"{self.hostname}: commit rejected ({exc}); {restored}; nothing saved"
            ) from exc
        self._candidate = None
        self._save()

    def _save(self) -> None:
        """``write``, answered ``y`` (netmiko's save_config)."""
        with self._waiting("`write`"):
            self._cli().save_config()

    def _restore(self, saved: str) -> str:
        try:
            self._push(self._commands(self._running(), saved, replace=True, saved=True))
        except CommandErrorException as exc:
            return f"RESTORE OF THE SAVED RUNNING-CONFIG FAILED ({exc})"
        return "restored the saved running-config"

    def rollback(self) -> None:
        if self._rollback_text is None:
            raise CommandErrorException("nothing to roll back: no commit in this session")
        self._push(self._commands(self._running(), self._rollback_text, replace=True, saved=True))
        self._save()

    def _restart_routing(self) -> None:
        raise ActionRefused(self.hostname, NOT_DOCUMENTED.format(action="a routing restart"))

    def _reboot(self) -> None:
        raise ActionRefused(self.hostname, NOT_DOCUMENTED.format(action="a reboot"))

    def _install_image(self, url: str) -> None:
        raise ActionRefused(self.hostname, NOT_DOCUMENTED.format(action="an image install"))

    def _refresh_bgp_routes(self) -> None:
        """FRR's route refresh through the SONiC shell's bgp container. UNVERIFIED on AsterNOS:
        its documents name no klish command for it (research/asternos-cli.md); the container
        name ``bgp`` is community SONiC's, assumed here as for ``lldp`` above."""
        (output,) = self._bash([f"sudo -n docker exec bgp vtysh -c '{common.REFRESH_ROUTES}'"])
        if re.search(self.error_pattern, output, flags=re.M):
            raise CommandErrorException(f"{self.hostname}: route refresh failed: {output.strip()}")

    def _restore_config(self, saved: str) -> None:
        """Make the device run a ``show running-config`` text again (a deploy's backup), from
        any session: the same negations + lines a replace commit sends, then ``write``."""
        files = unpack(saved, MAIN_FILE)
        if set(files) != {MAIN_FILE}:
            raise ReplaceConfigException(
                f"{self.hostname}: a saved AsterNOS config holds only {MAIN_FILE}"
            )
        self._push(self._commands(self._running(), files[MAIN_FILE], replace=True, saved=True))
        self._save()

    # ----------------------------------------------------------------- getters

    def get_config(
        self,
        retrieve: str = "all",
        full: bool = False,
        sanitized: bool = False,
        format: str = "text",
    ) -> models.ConfigDict:
        """klish's ``show running-config`` (a deploy's backup) and ``show startup-config``;
        the candidate session text. ``sanitized``: FRR's secrets and NAPALM's Cisco-style ones
        (``snmp-server community``, ``username ... password`` ...) removed
        (:mod:`controller.drivers.sanitize`)."""
        standard.check_config_args("asternos", retrieve, full, format, NO_FULL)
        result: models.ConfigDict = {"running": "", "startup": "", "candidate": ""}
        if standard.wanted(retrieve, "running"):
            result["running"] = self._running()
        if standard.wanted(retrieve, "startup"):
            result["startup"] = self._show("show startup-config")
        if standard.wanted(retrieve, "candidate") and self._candidate is not None:
            result["candidate"] = self._candidate
        if sanitized:
            result = {k: sanitize.klish_text(v) for k, v in result.items()}
        return result

    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str | dict[str, Any]]:
        """klish ``show`` commands (the session stays in klish's exec mode: other commands,
        ``configure`` or ``system bash``, are refused); the answer is what klish printed."""
        standard.check_cli_encoding(encoding)
        refused = [c for c in commands if not c.strip().startswith("show ")]
        if refused:
            raise CommandErrorException(
                f"{self.hostname}: AsterNOS cli runs klish `show` commands only, not {refused}"
            )
        outputs = {}
        for command in commands:
            with self._waiting(f"`{command}`"):
                output = self._cli().send_command(command, read_timeout=self.read_timeout)
            outputs[command] = standard.cli_output(command, str(output), encoding)
        return outputs

    def _vtysh_outputs(self, commands: Sequence[str]) -> list[str]:
        """FRR's vtysh in the bgp container, through the SONiC shell (``system bash``): the
        klish forms of these JSON commands are not in AsterNOS's public documents."""
        return self._bash([f"sudo -n docker exec bgp vtysh -c {shlex.quote(c)}" for c in commands])

    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
        return common.bgp_neighbors(common.load_json(self._show("show ip bgp summary json")))

    def _get_host_routes(self) -> list[HostRoute]:
        return common.host_routes(common.load_json(self._show("show ip route json")))

    def _get_evpn_es(self) -> list[EthernetSegmentState]:
        return common.evpn_es(common.load_json(self._show("show evpn es detail json")))

    def _get_maintenance(self) -> MaintenanceState:
        return common.maintenance_state(self._running())
