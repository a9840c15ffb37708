"""NAPALM driver for community SONiC: CONFIG_DB via the Generic Config Updater, FRR in split mode.

A dpctl configuration for SONiC is a bundle (controller/drivers/bundle.py) of ``config_db.json``
(the tables dpctl manages) and ``frr.conf`` (sections ``! >>> zebra.conf`` / ``! >>> bgpd.conf``,
one per split-mode daemon file). Commands, in the order a replace commit sends them:

1. ``sudo -n config checkpoint dpctl-<ts>`` (GCU: CONFIG_DB to /etc/sonic/checkpoints) and, per
   daemon, ``vtysh -c 'show running-config <daemon>'`` saved to
   ``/tmp/dpctl/dpctl-<ts>.<daemon>.conf`` and copied into the FRR container: the rollback
   point, taken before anything changes.
2. ``sudo -n config replace /tmp/dpctl/candidate.config_db.json`` (falls back to ``config load -y``
   when GCU is absent: a merge, so entries dpctl stopped rendering are *not* removed).
3. per daemon: ``docker exec bgp /usr/lib/frr/frr-reload.py --reload --daemon <d> <file>`` when
   frr-reload.py exists in the container (split mode needs ``--daemon``), else ``vtysh -f <file>``
   (a merge).
4. ``sudo -n config save -y`` and ``vtysh -c 'write memory'`` (split mode: one file per daemon).

Any failure in 2-3 rolls back to the checkpoint and raises, and nothing is saved.

Every command above that changes the switch runs under coreutils ``timeout`` on the switch,
ended T = the command timeout less 10 s (:mod:`controller.drivers.switch_side`); a paramiko
read timeout alone leaves it running (sshd signals nothing to a dropped channel's command).
FRR's tools get it inside the bgp container (``docker exec bgp timeout -k 5 T ...``): ending
``docker exec``'s client does not end its process there (moby/moby#14391, #35703); the
container is Debian (sonic-buildimage ``dockers/docker-base-bookworm/Dockerfile.j2``), the
host's ``timeout`` is used by sonic-utilities' ``scripts/fast-reboot``. Not bounded: reads,
``systemctl restart bgp`` (systemd carries the restart out whatever befalls systemctl),
``sonic-installer install`` (it prints its progress, so no idle timeout fires while it works,
and an image cut off half-installed is worse than one installed late), the reboot.

The candidate CONFIG_DB is partial; the full target handed to ``config replace`` is the running
CONFIG_DB with every table the candidate names replaced by the candidate's table. In
``DEVICE_METADATA`` and ``PORT`` entries, fields the candidate does not set (mac, platform, ...)
keep their running values. Tables the candidate does not name are left alone.
"""

from __future__ import annotations

import copy
import json
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from napalm.base import models
from napalm.base.exceptions import (
    CommandErrorException,
    CommitError,
    MergeConfigException,
    ReplaceConfigException,
)

from controller.drivers import common, sanitize, standard, switch_side
from controller.drivers.bundle import BundleError, pack, unpack
from controller.drivers.sonic_family import SonicFamilyDriver
from controller.drivers.types import EthernetSegmentState, HostRoute, MaintenanceState
from controller.platforms.sonic.shell import ParamikoShell, Shell, ShellFactory

CONFIG_DB = "config_db.json"
FRR_CONF = "frr.conf"
DAEMONS = ("zebra.conf", "bgpd.conf")
FIELD_MERGE_TABLES = frozenset({"DEVICE_METADATA", "PORT"})
FRR_RELOAD = "/usr/lib/frr/frr-reload.py"
REMOTE_DIR = "/tmp/dpctl"
REVERT_UNIT = "dpctl-revert"
NO_FULL = (
    "CONFIG_DB (`show runningconfiguration all`) is already the whole configuration, and FRR "
    "has no running-config with defaults (no `show running-config all`)"
)


def _sanitized(files: dict[str, str]) -> dict[str, str]:
    """A bundle's files with their secrets removed (CONFIG_DB as JSON, FRR as text)."""
    return {
        name: sanitize.config_db_text(text) if name == CONFIG_DB else sanitize.frr_text(text)
        for name, text in files.items()
    }


def target_config_db(running: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The whole CONFIG_DB ``config replace`` gets: running, with the candidate's tables."""
    target = copy.deepcopy(running)
    for table, entries in candidate.items():
        if table not in FIELD_MERGE_TABLES:
            target[table] = copy.deepcopy(entries)
            continue
        merged: dict[str, Any] = {}
        for key, fields in entries.items():
            merged[key] = {**running.get(table, {}).get(key, {}), **fields}
        target[table] = merged
    return target


def dump_config_db(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=4, sort_keys=True) + "\n"


class SonicDriver(SonicFamilyDriver):
    """NAPALM driver for community SONiC (see the module docstring for the exact commands).

    optional_args beyond the family's (``SonicFamilyDriver``): ``frr_container`` ("bgp"; ""
    runs FRR tools on the host), ``command_timeout`` (seconds; by default the driver's
    ``timeout``, which dpctl sets from ``--command-timeout``).
    """

    platform = "sonic"
    vendor = "SONiC"

    def _read_options(self, args: dict[str, Any]) -> None:
        self.frr_container = str(args.get("frr_container", "bgp"))
        timeout = args.get("command_timeout", self.timeout)
        self.command_timeout = switch_side.seconds(self.hostname, "command_timeout", timeout)
        self._candidate: dict[str, str] | None = None
        self._replace = True
        self._checkpoint: str | None = None
        self._frr_reload: bool | None = None
        self._armed = False  # this session started the revert timer of a commit

    # ------------------------------------------------------------------ session

    def _connect(self) -> Shell:
        factory: ShellFactory = self._factory or ParamikoShell
        return factory(
            hostname=self.hostname,
            username=self.username,
            password=self._password,
            port=self.port,
            timeout=float(self.timeout),
            known_hosts=self.known_hosts,
            key_file=self.key_file,
            allow_agent=self.allow_agent,
        )

    def _disconnect(self, session: Shell) -> None:
        session.close()

    def _session_alive(self, session: Shell) -> bool:
        return session.is_alive()

    def _shell(self) -> Shell:
        shell: Shell = self._require_session()
        return shell

    def _shell_outputs(self, commands: Sequence[str]) -> list[str]:
        return [self._run(command) for command in commands]

    def _exec(self, command: str) -> tuple[str, int]:
        """Output and exit status; a command ended on the switch by its bound (:meth:`_bounded`)
        raises TimeoutError."""
        began = time.monotonic()
        output, status = self._shell().run(command, self.command_timeout)
        if self._bounded("") in command:
            what = command.split(self._bounded(""), 1)[1]
            seconds = time.monotonic() - began
            switch_side.raise_if_ended(self.hostname, what, status, seconds, self.command_timeout)
        return output, status

    def _run(self, command: str, check: bool = True) -> str:
        output, status = self._exec(command)
        if check and status != 0:
            raise CommandErrorException(f"{self.hostname}: `{command}` exited {status}: {output}")
        return output

    def _bounded(self, argv: str) -> str:
        """``argv``, a command that changes the switch, bounded there (module docstring)."""
        return switch_side.bounded(argv, switch_side.bound_s(self.command_timeout))

    def _sudo(self, argv: str) -> str:
        return f"sudo -n {self._bounded(argv)}"

    def _frr(self, argv: str, bounded: bool = False) -> str:
        """A command line run where FRR lives (the bgp container on SONiC); ``bounded``:
        under the switch-side bound, inside the container."""
        argv = self._bounded(argv) if bounded else argv
        if self.frr_container:
            return f"sudo -n docker exec {shlex.quote(self.frr_container)} {argv}"
        return f"sudo -n {argv}"

    def _vtysh(self, command: str) -> str:
        return self._run(self._frr(f"vtysh -c {shlex.quote(command)}"))

    def _vtysh_json(self, command: str) -> Any:
        return common.load_json(self._vtysh(command))

    def _put_frr_file(self, name: str, text: str) -> str:
        """Write a file where FRR's tools can read it; returns that path."""
        path = f"{REMOTE_DIR}/{name}"
        self._run(f"mkdir -p {REMOTE_DIR}")
        self._shell().put(path, text)
        if self.frr_container:
            inside = path.replace("/dpctl/", "/dpctl-")
            self._run(f"sudo -n docker cp {path} {shlex.quote(self.frr_container)}:{inside}")
            return inside
        return path

    # ---------------------------------------------------------------- candidate

    def _load(self, filename: str | None, config: str | None, replace: bool) -> None:
        if filename is not None:
            config = Path(filename).read_text()
        if config is None:
            raise (ReplaceConfigException if replace else MergeConfigException)(
                "give filename or config"
            )
        files = unpack(config, CONFIG_DB if config.lstrip().startswith("{") else FRR_CONF)
        unknown = set(files) - {CONFIG_DB, FRR_CONF}
        if unknown:
            raise (ReplaceConfigException if replace else MergeConfigException)(
                f"unexpected files in a SONiC bundle: {sorted(unknown)}"
            )
        if CONFIG_DB in files:
            try:
                json.loads(files[CONFIG_DB])
            except json.JSONDecodeError as exc:
                raise (ReplaceConfigException if replace else MergeConfigException)(
                    f"candidate {CONFIG_DB} is not JSON: {exc}"
                ) from exc
        self._candidate = files
        self._replace = replace

    def load_replace_candidate(
        self, filename: str | None = None, config: str | None = None
    ) -> None:
        self._load(filename, config, replace=True)

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self._load(filename, config, replace=False)

    def discard_config(self) -> None:
        self._candidate = None

    def _running_config_db(self) -> dict[str, Any]:
        data = common.load_json(self._run("sudo -n show runningconfiguration all"))
        if not isinstance(data, dict):
            raise common.OutputError("running CONFIG_DB is not an object")
        return data

    def _running_frr(self, daemon: str) -> str:
        return self._vtysh(f"show running-config {daemon.removesuffix('.conf')}")

    def _target_db(self, running: dict[str, Any]) -> dict[str, Any]:
        assert self._candidate is not None
        candidate = json.loads(self._candidate[CONFIG_DB])
        if self._replace:
            return target_config_db(running, candidate)
        merged = copy.deepcopy(running)
        for table, entries in candidate.items():
            for key, fields in entries.items():
                merged.setdefault(table, {}).setdefault(key, {}).update(fields)
        return merged

    def _candidate_frr(self) -> dict[str, str]:
        assert self._candidate is not None
        text = self._candidate.get(FRR_CONF)
        if text is None:
            return {}
        return common.split_daemons(text, default="bgpd.conf")

    def compare_config(self) -> str:
        if self._candidate is None:
            return ""
        parts: list[str] = []
        if CONFIG_DB in self._candidate:
            running = self._running_config_db()
            parts.append(
                common.unified_diff(
                    dump_config_db(running), dump_config_db(self._target_db(running)), CONFIG_DB
                )
            )
        for daemon, text in self._candidate_frr().items():
            running_text = common.normalize_config(
                self._running_frr(daemon), drop=common.FRR_GLOBAL_LINES
            )
            wanted = common.normalize_config(text, drop=common.FRR_GLOBAL_LINES)
            if not self._replace:
                wanted = common.merge_config(running_text, wanted)
            parts.append(common.unified_diff(running_text, wanted, daemon))
        return "".join(parts)

    # ------------------------------------------------------------------ commit

    def _has_frr_reload(self) -> bool:
        if self._frr_reload is None:
            _, status = self._shell().run(self._frr(f"test -x {FRR_RELOAD}"), self.command_timeout)
            self._frr_reload = status == 0
        return self._frr_reload

    def _save_rollback_point(self, name: str) -> None:
        self._run(self._sudo(f"config checkpoint {name}"))
        for daemon in DAEMONS:
            self._put_frr_file(f"{name}.{daemon}", self._running_frr(daemon))
        self._checkpoint = name

    def _apply_frr(self, daemon: str, text: str, replace: bool) -> None:
        path = self._put_frr_file(f"candidate.{daemon}", text)
        name = daemon.removesuffix(".conf")
        if replace and self._has_frr_reload():
            reload = f"{FRR_RELOAD} --reload --stdout --daemon {name} {path}"
            self._run(self._frr(reload, bounded=True))
        else:
            self._run(self._frr(f"vtysh -f {path}", bounded=True))

    def _restore_commands(self, checkpoint: str) -> list[str]:
        commands = [self._sudo(f"config rollback {checkpoint}")]
        prefix = "/tmp/dpctl-" if self.frr_container else f"{REMOTE_DIR}/"
        for daemon in DAEMONS:
            path = f"{prefix}{checkpoint}.{daemon}"
            name = daemon.removesuffix(".conf")
            if self._has_frr_reload():
                reload = f"{FRR_RELOAD} --reload --stdout --daemon {name} {path}"
                commands.append(self._frr(reload, bounded=True))
            else:
                commands.append(self._frr(f"vtysh -f {path}", bounded=True))
        return commands

    def _save(self) -> None:
        self._run(self._sudo("config save -y"))
        self._run(self._frr("vtysh -c 'write memory'", bounded=True))

    def _replace_config_db(self, path: str, target: dict[str, Any]) -> None:
        self._run(f"mkdir -p {REMOTE_DIR}")
        self._shell().put(path, dump_config_db(target))
        output, status = self._exec(self._sudo(f"config replace {path}"))
        if status != 0 and "No such command" in output:
            # GCU missing (older images): `config load` merges on top of CONFIG_DB.
            self._run(self._sudo(f"config load -y {path}"))
        elif status != 0:
            raise CommandErrorException(f"`config replace` exited {status}: {output}")

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if self._candidate is None:
            raise CommitError("no candidate loaded")
        if self.has_pending_commit():
            raise CommitError("a commit is pending confirmation: confirm_commit() or rollback()")
        error = ReplaceConfigException if self._replace else MergeConfigException
        checkpoint = f"dpctl-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
        try:
            self._save_rollback_point(checkpoint)
        except (CommandErrorException, TimeoutError) as exc:
            raise error(
                f"{self.hostname}: could not save a rollback point, nothing applied: {exc}"
            ) from exc
        try:
            if CONFIG_DB in self._candidate:
                target = self._target_db(self._running_config_db())
                self._replace_config_db(f"{REMOTE_DIR}/candidate.{CONFIG_DB}", target)
            for daemon, text in self._candidate_frr().items():
                self._apply_frr(daemon, text, self._replace)
        except (CommandErrorException, TimeoutError) as exc:
            restored = self._try_restore(checkpoint)
            raise error(
                f"{self.hostname}: commit rejected ({exc}); {restored}; nothing saved"
            ) from exc
        self._candidate = None
        if revert_in is not None:
            script = " && ".join(self._restore_commands(checkpoint))
            self._run(
                f"sudo -n systemd-run --unit={REVERT_UNIT} --on-active={int(revert_in)} "
                f"/bin/sh -c {shlex.quote(script.replace('sudo -n ', ''))}"
            )
            self._armed = True
            return
        self._save()

    def _try_restore(self, checkpoint: str) -> str:
        try:
            for command in self._restore_commands(checkpoint):
                self._run(command)
        except (CommandErrorException, TimeoutError) as exc:
            return f"ROLLBACK TO {checkpoint} FAILED ({exc})"
        return f"rolled back to {checkpoint}"

    def has_pending_commit(self) -> bool:
        """Whether the revert timer of a commit runs on the device: asked of the device, so
        a new session (or controller) sees a commit another one left unconfirmed."""
        output, _status = self._shell().run(
            f"systemctl is-active {REVERT_UNIT}.timer", self.command_timeout
        )
        return output.strip() == "active"

    def confirm_commit(self) -> None:
        if not self.has_pending_commit():
            raise CommitError("no commit is pending confirmation")
        self._run(f"sudo -n systemctl stop {REVERT_UNIT}.timer")
        self._save()

    def _cancel_revert(self, armed_here: bool = False) -> None:
        """Stop a pending commit's revert timer: the one this session armed (``rollback``),
        else whatever the device has running (``restore_config``, from any session)."""
        if self._armed if armed_here else self.has_pending_commit():
            self._run(f"sudo -n systemctl stop {REVERT_UNIT}.timer")
        self._armed = False

    def rollback(self) -> None:
        if self._checkpoint is None:
            raise CommandErrorException("nothing to roll back: no commit in this session")
        self._cancel_revert(armed_here=True)
        for command in self._restore_commands(self._checkpoint):
            self._run(command)
        self._save()

    def _restart_routing(self) -> None:
        """SONiC's routing stack is the bgp container's service (SONiC Command Reference:
        ``sudo systemctl restart bgp``)."""
        self._run("sudo -n systemctl restart bgp")

    def _reboot(self) -> None:
        """``sudo reboot`` (SONiC Command Reference, "reboot"), started in the background so
        the command returns before the session drops."""
        self._run("sudo -n sh -c 'sleep 2; reboot' >/dev/null 2>&1 </dev/null &")

    def _install_image(self, url: str) -> None:
        """``sonic-installer install -y URL``: the image becomes the next boot's (SONiC
        Command Reference, "SONiC Installer"); the caller reboots."""
        self._run(f"sudo -n sonic-installer install -y {shlex.quote(url)}")

    def _refresh_bgp_routes(self) -> None:
        """FRR's route refresh, in the bgp container."""
        self._vtysh(common.REFRESH_ROUTES)

    def _restore_config(self, saved: str) -> None:
        """Make the device run a ``get_config()["running"]`` bundle again (a deploy's backup),
        from any session: the saved CONFIG_DB, whole, through ``config replace``; each saved
        FRR daemon file through frr-reload.py (or ``vtysh -f``); then save. The rollback point
        of a commit in this session is not needed."""
        try:
            files = unpack(saved, CONFIG_DB)
            target = json.loads(files[CONFIG_DB]) if CONFIG_DB in files else None
        except (BundleError, json.JSONDecodeError) as exc:
            raise ReplaceConfigException(f"{self.hostname}: bad saved config: {exc}") from exc
        self._cancel_revert()
        if target is not None:
            self._replace_config_db(f"{REMOTE_DIR}/restore.{CONFIG_DB}", target)
        daemons = common.split_daemons(files.get(FRR_CONF, ""), default="bgpd.conf")
        for daemon, text in daemons.items():
            self._apply_frr(daemon, text, replace=True)
        self._save()

    # ----------------------------------------------------------------- getters

    def get_config(
        self,
        retrieve: str = "all",
        full: bool = False,
        sanitized: bool = False,
        format: str = "text",
    ) -> models.ConfigDict:
        """Bundles of ``config_db.json`` and ``frr.conf`` (one section per split-mode daemon):
        ``running`` the running CONFIG_DB and FRR daemons (a deploy's backup),
        ``startup`` /etc/sonic/config_db.json and the daemons' saved files, ``candidate``
        the loaded bundle. ``sanitized``: CONFIG_DB's and FRR's secrets removed
        (:mod:`controller.drivers.sanitize`)."""
        standard.check_config_args("sonic", retrieve, full, format, NO_FULL)
        result: models.ConfigDict = {"running": "", "startup": "", "candidate": ""}
        clean = _sanitized if sanitized else (lambda files: files)
        if standard.wanted(retrieve, "running"):
            frr = "".join(f"! >>> {d}\n{self._running_frr(d)}" for d in DAEMONS)
            db = dump_config_db(self._running_config_db())
            result["running"] = pack(clean({CONFIG_DB: db, FRR_CONF: frr}))
        if standard.wanted(retrieve, "startup"):
            saved = common.load_json(self._run("cat /etc/sonic/config_db.json"))
            frr = "".join(
                f"! >>> {d}\n{self._run(f'sudo -n cat /etc/sonic/frr/{d}', check=False)}"
                for d in DAEMONS
            )
            result["startup"] = pack(clean({CONFIG_DB: dump_config_db(saved), FRR_CONF: frr}))
        if standard.wanted(retrieve, "candidate") and self._candidate is not None:
            result["candidate"] = pack(clean(self._candidate))
        return result

    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str | dict[str, Any]]:
        """Each command in SONiC's shell (its ``show`` CLI, vtysh through ``docker exec``...);
        the answer is what it printed, a failing command's included."""
        standard.check_cli_encoding(encoding)
        return {
            command: standard.cli_output(
                command, self._shell().run(command, self.command_timeout)[0], encoding
            )
            for command in commands
        }

    def _vtysh_outputs(self, commands: Sequence[str]) -> list[str]:
        return [self._vtysh(command) for command in commands]

    def get_bgp_neighbors(self) -> dict[str, models.BGPStateNeighborsPerVRFDict]:
        return common.bgp_neighbors(
            self._vtysh_json("show bgp vrf all summary json"),
            self._vtysh_json("show bgp vrf all neighbors json"),
        )

    def _get_host_routes(self) -> list[HostRoute]:
        return common.host_routes(self._vtysh_json("show ip route json"))

    def _get_evpn_es(self) -> list[EthernetSegmentState]:
        return common.evpn_es(self._vtysh_json("show evpn es detail json"))

    def _get_maintenance(self) -> MaintenanceState:
        return common.maintenance_state(self._vtysh("show running-config"))
