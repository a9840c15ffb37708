"""The Linux + FRR driver's few-exec paths (issue 14): batched reads split back exactly, a
compare skips frr-reload only while FRR still runs the config recorded after a confirmed
commit, and every failure falls back or is reported, never guessed.

The SSH channel is the only part replaced (recordings from a real FRR 8.4, or a scripted
reply); the lab runs the same paths against real FRR, sshd and kernels.
"""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import tarfile
from typing import Any

import pytest

from controller.drivers import bundle
from controller.platforms.frr.agent import (
    AGENT,
    AGENT_STAMP,
    agent_stamp,
)
from controller.platforms.frr.changes import strip_running_header
from controller.platforms.frr.driver import (
    APPLIED_RUNNING,
    APPLY_SCRIPT,
    APPLY_SOURCE,
    FRR_RELOAD,
    PART,
    RELOADED_RUNNING,
    VERIFY_READS,
)
from controller.platforms.frr.ssh import split_vtysh, tar
from controller.verify import read_state
from tests.drivers.conftest import frr_driver, recorded

LEAF = "frr/p1-g1-leaf1"
COMPARE = f"{APPLY_SCRIPT} --cache /etc/frr/dpctl/marked --test "
"""How the driver asks the switch what a candidate changes (frr-reload's differ)."""


def _recorded(command: str) -> str:
    text = recorded(LEAF, command)
    assert text is not None, command
    return text


def test_one_vtysh_run_splits_back_into_each_commands_output() -> None:
    asks = [
        "show bgp vrf all summary json",
        "show bgp vrf all neighbors json",
        "show ip route json",
        "show evpn es detail json",
    ]
    outputs = [_recorded(f"vtysh -c '{a}'") for a in asks]
    running = _recorded("vtysh -c 'show running-config'")
    split = split_vtysh("".join(outputs) + running, json_count=4, text_count=1)
    assert split is not None
    assert [json.loads(s) for s in split[:4]] == [json.loads(o) for o in outputs]
    assert split[4] == running


def test_a_vtysh_run_that_stopped_at_a_failing_command_does_not_split() -> None:
    summary = _recorded("vtysh -c 'show bgp vrf all summary json'")
    stopped = summary + "% Unknown command: show evpn es detail json\n"
    assert split_vtysh(stopped, json_count=2, text_count=0) is None
    assert split_vtysh(summary, json_count=2, text_count=0) is None
    assert split_vtysh(summary, json_count=1, text_count=1) is None  # the text is missing


def test_verify_reads_a_switch_in_one_exec_with_the_same_answers() -> None:
    batched = frr_driver()
    state = read_state(batched, "leaf", evpn=True)
    assert len(batched.fake.commands) == 1
    assert batched.fake.commands[0].count("vtysh ") == 1  # one vtysh for every FRR read

    single = frr_driver()
    assert state["bgp"] == single.get_bgp_neighbors()["global"]["peers"]
    assert state["routes"] == single.dpctl.get_host_routes()
    assert state["es"] == single.dpctl.get_evpn_es()
    assert state["maintenance"] == single.dpctl.get_maintenance()
    assert state["qos"] == single.dpctl.get_qos_state()
    assert state["interfaces"] == single.get_interfaces()
    assert state["lldp"] == single.get_lldp_neighbors()


def test_batched_reads_fall_back_to_one_command_each_when_the_batch_fails() -> None:
    driver = frr_driver()
    answer = driver.fake.run

    def failing_batch(command: str, stdin: Any = None) -> tuple[int, str, str]:
        if PART in command:
            return 1, "% Unknown command: show evpn es detail json\n", ""
        return answer(command, stdin)

    driver._run = failing_batch
    state = read_state(driver, "leaf", evpn=True)
    assert state["routes"] == frr_driver().dpctl.get_host_routes()
    assert set(driver.fake.commands) == set(VERIFY_READS)  # each read again, alone


def test_outside_a_batch_nothing_is_served_from_an_old_read() -> None:
    driver = frr_driver()
    with driver.dpctl.batched_reads():
        pass
    driver.fake.overrides["vtysh -c 'show ip route json'"] = "{}"
    assert driver.dpctl.get_host_routes() == []


APPLIED = "frr defaults traditional\nrouter bgp 65100\n bgp router-id 10.255.0.3\nexit\n"
RUNNING = (
    "Building configuration...\n\nfrr version 8.4.4\nrouter bgp 65100\n"
    " bgp router-id 10.255.0.3\nexit\n"
)


class ScriptedSwitch:
    """Replies to the driver's state read and frr-reload; records every command."""

    def __init__(self, running: str, applied_record: str | None) -> None:
        self.running = running
        self.record = applied_record
        self.commands: list[str] = []
        self.files = {"frr.conf": APPLIED, "ip.batch": "link set dev swp1 up\n"}

    def run(self, command: str, stdin: Any = None) -> tuple[int, str, str]:
        self.commands.append(command)
        if command.startswith("if cd /etc/frr/dpctl/current"):
            stored = bundle.pack(self.files)
            record = "" if self.record is None else self.record
            return 0, f"{stored}\n{PART}\n{self.running}\n{PART}\n{record}", ""
        if FRR_RELOAD in command:
            return 0, "\nLines To Delete\n===============\n\nLines To Add\n============\n", ""
        if APPLY_SCRIPT in command and " --test " in command:
            return 0, json.dumps({"errors": [], "left_to_add": [], "left_to_delete": []}), ""
        if APPLIED_RUNNING in command:
            self.record = stdin
            return 0, "", ""
        if "vtysh -C -f" in command:
            with tarfile.open(fileobj=io.BytesIO(stdin)) as tar:
                member = tar.extractfile("candidate/frr.conf")
                assert member is not None
                text = member.read().decode()
            bad = [line for line in text.splitlines() if "not-a-command" in line]
            return (2, "", f"line 2: % Unknown command: {bad[0]}\n") if bad else (0, "", "")
        raise AssertionError(f"unexpected command {command!r}")


def _scripted(switch: ScriptedSwitch) -> Any:
    driver = frr_driver()
    driver._run = switch.run
    return driver


def test_compare_skips_frr_reload_while_frr_runs_the_recorded_config() -> None:
    switch = ScriptedSwitch(RUNNING, applied_record=RUNNING)
    driver = _scripted(switch)
    candidate = APPLIED.replace("10.255.0.3", "10.255.0.9")
    driver.load_replace_candidate(config=bundle.pack({**switch.files, "frr.conf": candidate}))
    diff = driver.compare_config()
    assert "- bgp router-id 10.255.0.3" in diff and "+ bgp router-id 10.255.0.9" in diff
    assert not any(FRR_RELOAD in c for c in switch.commands)
    assert len(switch.commands) == 2  # the read, and vtysh's dry-run parse of the candidate


def test_a_line_frr_cannot_parse_is_refused_by_the_fast_compare() -> None:
    from napalm.base.exceptions import CommandErrorException

    switch = ScriptedSwitch(RUNNING, applied_record=RUNNING)
    driver = _scripted(switch)
    candidate = APPLIED.replace("exit\n", " this-is-not-a-command\nexit\n")
    driver.load_replace_candidate(config=bundle.pack({**switch.files, "frr.conf": candidate}))
    with pytest.raises(CommandErrorException, match=r"parser rejects.*this-is-not-a-command"):
        driver.compare_config()


def test_an_unchanged_candidate_costs_one_exec() -> None:
    switch = ScriptedSwitch(RUNNING, applied_record=RUNNING)
    driver = _scripted(switch)
    driver.load_replace_candidate(config=bundle.pack(switch.files))
    assert driver.compare_config() == ""
    assert len(switch.commands) == 1


def test_drift_in_the_running_config_is_compared_by_frr_reload() -> None:
    drifted = RUNNING + "ip prefix-list DRIFT seq 5 permit 10.9.9.0/24\n"
    switch = ScriptedSwitch(drifted, applied_record=RUNNING)
    driver = _scripted(switch)
    driver.load_replace_candidate(config=bundle.pack(switch.files))
    driver.compare_config()
    assert any(COMPARE in c for c in switch.commands)


def test_without_a_record_frr_reload_decides_and_a_clean_answer_is_recorded() -> None:
    switch = ScriptedSwitch(RUNNING, applied_record=None)
    driver = _scripted(switch)
    driver.load_replace_candidate(config=bundle.pack(switch.files))
    assert driver.compare_config() == ""
    assert any(COMPARE in c for c in switch.commands)
    assert switch.record is not None and "router bgp 65100" in switch.record
    switch.commands.clear()
    driver.load_replace_candidate(config=bundle.pack(switch.files))
    assert driver.compare_config() == ""
    assert not any(FRR_RELOAD in c for c in switch.commands)  # the next one is fast


def test_a_changed_candidate_is_not_recorded_as_running() -> None:
    switch = ScriptedSwitch(RUNNING, applied_record=None)
    driver = _scripted(switch)
    candidate = APPLIED + "ip prefix-list NEW seq 5 permit 10.1.0.0/16\n"
    driver.load_replace_candidate(config=bundle.pack({**switch.files, "frr.conf": candidate}))
    driver.compare_config()
    assert switch.record is None


def test_linux_apply_reports_each_failing_file_by_name() -> None:
    driver = frr_driver()
    sent: list[tuple[str, bytes]] = []

    def run(command: str, stdin: Any = None) -> tuple[int, str, str]:
        sent.append((command, stdin))
        out = f"\n{PART} bridge.batch\nError: Device does not exist.\nCommand failed -:1\n"
        return 0, out, ""

    driver._run = run
    old = {"ip.batch": "link add name br0 type bridge\n"}
    new = {"ip.batch": "link add name br1 type bridge\n", "bridge.batch": "vlan add dev x vid 5\n"}
    errors = driver._apply_linux(old, new)
    assert errors == ["bridge.batch: Error: Device does not exist.\nCommand failed -:1"]
    ((command, archive),) = sent
    assert "ip link del br0" in command  # the old links go first, in the same exec
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        names = sorted(tar.getnames())
    assert names == ["current/bridge.batch", "current/ip.batch"]


def test_files_travel_as_one_tar_with_exact_contents() -> None:
    files = {"current/frr.conf": "a\nb\n", "rollback/x/ip.batch": "", "arp_to_host.py": "é\n"}
    with tarfile.open(fileobj=io.BytesIO(tar(files))) as archive:
        got = {m.name: archive.extractfile(m).read().decode() for m in archive.getmembers()}  # type: ignore[union-attr]
    assert got == files


@pytest.mark.parametrize("case", ["no record", "no applied frr.conf"])
def test_no_record_means_no_fast_path(case: str) -> None:
    switch = ScriptedSwitch(RUNNING, applied_record=None if case == "no record" else RUNNING)
    if case == "no applied frr.conf":
        del switch.files["frr.conf"]
    driver = _scripted(switch)
    driver.load_replace_candidate(config=bundle.pack({**switch.files, "frr.conf": APPLIED}))
    driver.compare_config()
    assert any(COMPARE in c for c in switch.commands)


def test_every_script_the_driver_sends_is_valid_shell() -> None:
    """bash -n on each command of a commit, a compare, a rollback and the reads (a script
    error would otherwise show first on a switch)."""

    driver = frr_driver()
    sent: list[str] = []
    switch = ScriptedSwitch(RUNNING, applied_record=None)

    def run(command: str, stdin: Any = None) -> tuple[int, str, str]:
        sent.append(command)
        if command.startswith("ls -1"):
            return 0, "20261201T000000-000001\n", ""
        if APPLY_SCRIPT in command:
            done = {"applied": True, "errors": [], "left_to_add": [], "left_to_delete": []}
            return 0, json.dumps(done), ""
        if FRR_RELOAD in command and "--reload" in command:
            return 0, "reload-rc=0\n" + f"\n{PART}\n" + switch.run(FRR_RELOAD)[1], ""
        if command.startswith(("if cd", "tar", "mkdir", "rm", "cat")) or FRR_RELOAD in command:
            return switch.run(command, stdin) if command.startswith("if cd") else (0, "", "")
        return 0, "", ""

    driver._run = run
    leaf = {
        "frr.conf": APPLIED,
        "ip.batch": "link add name br0 type bridge\nlink set dev swp1 up\n",
        "bridge.batch": "vlan add dev swp1 vid 5\n",
        "sysctl.conf": "net.ipv4.ip_forward = 1\n",
        "qos.tc": "qdisc add dev swp1 root handle 1: prio\n",
        "arp-to-host.json": json.dumps({"table": 100}),
    }
    driver.load_replace_candidate(config=bundle.pack(leaf))
    driver.compare_config()
    driver.commit_config()
    driver.rollback()
    with driver.dpctl.batched_reads():
        driver.get_bgp_neighbors()
    assert len(sent) > 8
    for command in sent:
        scripts = [command]
        if " bash -c " in command:  # _with_files: the script, quoted, under timeout
            scripts.append(shlex.split(command)[-1])
        for script in scripts:
            check = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
            assert check.returncode == 0, f"{script!r}: {check.stderr}"


def _committing(
    answers: dict[str, tuple[int, str, str]], on_switch: bool = True
) -> tuple[Any, list[tuple[str, Any]]]:
    """A driver whose commit gets ``answers`` (first match of a key in the command), and the
    commands it sent with their stdin; ``on_switch``: apply_on_switch.py opted in."""
    switch = ScriptedSwitch(RUNNING, applied_record=RUNNING)
    driver = _scripted(switch)
    driver.optional_args["apply_on_switch"] = on_switch
    sent: list[tuple[str, Any]] = []

    def run(command: str, stdin: Any = None) -> tuple[int, str, str]:
        sent.append((command, stdin))
        for key, answer in answers.items():
            if key in command:
                return answer
        return switch.run(command, stdin) if command.startswith("if cd") else (0, "", "")

    driver._run = run
    candidate = APPLIED.replace("10.255.0.3", "10.255.0.9")
    driver.load_replace_candidate(config=bundle.pack({**switch.files, "frr.conf": candidate}))
    return driver, sent


def _sent_with(sent: list[tuple[str, Any]], text: str) -> list[tuple[str, Any]]:
    return [(command, stdin) for command, stdin in sent if text in command]


def test_a_commit_applies_frr_once_and_records_what_that_apply_read() -> None:
    """apply_on_switch.py travels with the candidate; its reading after the apply becomes the
    record (no vtysh run of its own in the step that stores the files)."""
    answer = {"applied": True, "errors": [], "left_to_add": [], "vtysh_runs": 6}
    driver, sent = _committing({APPLY_SCRIPT: (0, json.dumps(answer) + "\n", "")})
    driver.commit_config()
    ((_command, archive),) = _sent_with(sent, APPLY_SCRIPT)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        script = tar.extractfile(APPLY_SCRIPT)
        assert script is not None and script.read() == APPLY_SOURCE
    assert not _sent_with(sent, FRR_RELOAD)
    (finish,) = [c for c, _ in sent if APPLIED_RUNNING in c and "arp_to_host" in c]
    assert f"mv /etc/frr/dpctl/{RELOADED_RUNNING} " in finish and "vtysh" not in finish


def test_lines_frr_did_not_take_fail_the_commit_by_name() -> None:
    from napalm.base.exceptions import ReplaceConfigException

    answer = {
        "applied": False,
        "errors": ["could not remove: router bgp 65100 -- no bgp graceful-restart"],
        "left_to_add": ["router bgp 65100\n neighbor swp9 interface peer-group NOPE"],
    }
    driver, _sent = _committing({APPLY_SCRIPT: (1, json.dumps(answer) + "\n", "")})
    with pytest.raises(ReplaceConfigException) as failed:
        driver.commit_config()
    message = str(failed.value)
    assert "could not remove: router bgp 65100 -- no bgp graceful-restart" in message
    assert "FRR rejected: router bgp 65100;  neighbor swp9 interface peer-group NOPE" in message


def test_where_frr_reload_cannot_be_loaded_the_commit_runs_frr_reload_itself() -> None:
    clean = "\nLines To Delete\n===============\n\nLines To Add\n============\n"
    driver, sent = _committing(
        {
            APPLY_SCRIPT: (3, '{"applied": false, "errors": ["unusable"]}\n', ""),
            f"{FRR_RELOAD} --reload": (0, f"reload-rc=0\n\n{PART}\n{clean}", ""),
        }
    )
    driver.commit_config()
    assert len(_sent_with(sent, f"{FRR_RELOAD} --reload")) == 1
    (finish,) = [c for c, _ in sent if APPLIED_RUNNING in c and "arp_to_host" in c]
    assert "vtysh -c 'show running-config' > " in shlex.split(finish)[-1]  # as before


def test_by_default_a_commit_applies_with_frr_reload_and_records_a_new_reading() -> None:
    clean = "\nLines To Delete\n===============\n\nLines To Add\n============\n"
    driver, sent = _committing(
        {f"{FRR_RELOAD} --reload": (0, f"reload-rc=0\n\n{PART}\n{clean}", "")}, on_switch=False
    )
    driver.commit_config()
    assert not [c for c, _ in sent if f"python3 /etc/frr/dpctl/{APPLY_SCRIPT} /etc" in c]
    assert len(_sent_with(sent, f"{FRR_RELOAD} --reload")) == 1
    (finish,) = [c for c, _ in sent if APPLIED_RUNNING in c and "arp_to_host" in c]
    assert "vtysh -c 'show running-config' > " in shlex.split(finish)[-1]


def test_an_apply_that_answers_nothing_readable_fails_the_commit() -> None:
    from napalm.base.exceptions import ReplaceConfigException

    driver, _sent = _committing({APPLY_SCRIPT: (127, "", "python3: not found")})
    with pytest.raises(ReplaceConfigException, match=r"applying frr.conf failed \(127\).*python3"):
        driver.commit_config()


class _FakeClient:
    def __init__(self) -> None:
        self.closed = False

    def get_transport(self) -> Any:
        client = self

        class Transport:
            def is_active(self) -> bool:
                return not client.closed

        return Transport()

    def close(self) -> None:
        self.closed = True


def test_drivers_of_one_process_share_one_connection_to_the_bastion() -> None:
    from controller.platforms.frr.ssh import JumpPool

    pool = JumpPool()
    made: list[_FakeClient] = []

    def connect() -> _FakeClient:
        made.append(_FakeClient())
        return made[-1]

    key = ("127.0.0.1", 2222, "root", "/k", "/kh")
    first, second = pool.acquire(key, connect), pool.acquire(key, connect)
    assert first is second and len(made) == 1
    pool.release(key, first)
    assert not made[0].closed  # still used by the other driver
    pool.release(key, second)
    assert made[0].closed
    again = pool.acquire(key, connect)  # a released one is replaced
    assert again is not first and len(made) == 2
    made[1].closed = True  # the bastion dropped it
    fresh = pool.acquire(key, connect)
    assert fresh is made[2]
    pool.release(key, again)  # the dead one's user leaves: the fresh one stays open
    assert not fresh.closed
    pool.release(key, fresh)
    assert fresh.closed


def test_a_failed_upload_of_the_linux_files_is_an_error_not_a_success() -> None:
    driver = frr_driver()
    driver._run = lambda command, stdin=None: (2, "", "tar: /etc/frr/dpctl: Cannot open\n")
    errors = driver._apply_linux({}, {"ip.batch": "link add name br0 type bridge\n"})
    assert errors == ["uploading the Linux files: tar: /etc/frr/dpctl: Cannot open"]


def test_a_bundle_file_the_driver_does_not_know_is_refused() -> None:
    from napalm.base.exceptions import ReplaceConfigException

    driver = frr_driver()
    with pytest.raises(ReplaceConfigException, match=r"unknown file\(s\) \['../../etc/x'\]"):
        driver.load_replace_candidate(config=bundle.pack({"frr.conf": "", "../../etc/x": "y"}))


AGENT_CONFIG = json.dumps({"table": 100, "interfaces": ["rail1"], "bridge": "br0"}) + "\n"


def test_a_leaf_running_another_agent_shows_it_in_the_compare() -> None:
    """A deploy after a dpctl upgrade: every rendered file as applied, but the leaf's agent
    is another one (or, deployed before the stamp, unknown): the compare names it, so the
    commit restarts the agent with this dpctl's code; once stored, nothing is left."""
    switch = ScriptedSwitch(RUNNING, applied_record=RUNNING)
    switch.files["arp-to-host.json"] = AGENT_CONFIG
    driver = _scripted(switch)
    stamp = agent_stamp(switch.files)
    assert stamp is not None and stamp.startswith(f"{AGENT} sha256 ")
    for stored in (None, f"{AGENT} sha256 {'0' * 64}\n"):
        if stored is not None:
            switch.files[AGENT_STAMP] = stored
        driver.load_replace_candidate(config=bundle.pack(_without_stamp(switch.files)))
        diff = driver.compare_config()
        assert f"+++ candidate/{AGENT_STAMP}" in diff and f"+{stamp}" in diff, diff
        assert "frr.conf" not in diff and "arp-to-host.json" not in diff, diff
    switch.files[AGENT_STAMP] = stamp
    driver.load_replace_candidate(config=bundle.pack(_without_stamp(switch.files)))
    assert driver.compare_config() == ""


def test_a_leaf_whose_agent_is_no_longer_configured_drops_its_stamp() -> None:
    switch = ScriptedSwitch(RUNNING, applied_record=RUNNING)
    switch.files[AGENT_STAMP] = f"{AGENT} sha256 {'0' * 64}\n"
    driver = _scripted(switch)
    driver.load_replace_candidate(config=bundle.pack(_without_stamp(switch.files)))
    assert f"-{AGENT} sha256 {'0' * 64}" in driver.compare_config()


def test_a_stamp_is_never_taken_from_a_bundle() -> None:
    from napalm.base.exceptions import ReplaceConfigException

    stamp = {"frr.conf": APPLIED, AGENT_STAMP: f"{AGENT} sha256 {'0' * 64}\n"}
    with pytest.raises(ReplaceConfigException, match="unknown file"):
        frr_driver().load_replace_candidate(config=bundle.pack(stamp))


def _without_stamp(files: dict[str, str]) -> dict[str, str]:
    return {n: t for n, t in files.items() if n != AGENT_STAMP}


def _comparing(answer: tuple[int, str, str]) -> tuple[Any, list[tuple[str, Any]]]:
    """A driver comparing a candidate against a switch with no record (frr-reload's differ
    decides), the switch's differ answering ``answer``; and what was sent."""
    switch = ScriptedSwitch(RUNNING, applied_record=None)
    driver = _scripted(switch)
    sent: list[tuple[str, Any]] = []

    def run(command: str, stdin: Any = None) -> tuple[int, str, str]:
        sent.append((command, stdin))
        if COMPARE in command:
            return answer
        return switch.run(command, stdin)

    driver._run = run
    candidate = APPLIED + "ip prefix-list NEW seq 5 permit 10.1.0.0/16\n"
    driver.load_replace_candidate(config=bundle.pack({**switch.files, "frr.conf": candidate}))
    return driver, sent


def test_the_switch_compares_against_the_snapshot_it_was_sent() -> None:
    answer = {
        "errors": [],
        "left_to_add": ["ip prefix-list NEW seq 5 permit 10.1.0.0/16", "hostname other"],
        "left_to_delete": ["router bgp 65100\n no bgp graceful-restart"],
    }
    driver, sent = _comparing((0, json.dumps(answer) + "\n", ""))
    diff = driver.compare_config()
    assert "+ip prefix-list NEW seq 5 permit 10.1.0.0/16\n" in diff
    assert "-router bgp 65100\n- no bgp graceful-restart\n" in diff
    assert "hostname" not in diff  # never compared (a test's FRR instance has the host's)
    ((_command, archive),) = [(c, s) for c, s in sent if COMPARE in c]
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        stored = tar.extractfile("candidate/running.conf")
        assert stored is not None
        assert stored.read().decode() == strip_running_header(RUNNING)  # the snapshot's


@pytest.mark.parametrize(
    "reply",
    [(0, '{"errors": []}\n', ""), (0, "", ""), (1, '{"errors": ["vtysh cannot read x"]}', "")],
    ids=["no lists", "no answer", "an error"],
)
def test_a_compare_without_a_whole_answer_fails_never_reads_as_no_change(
    reply: tuple[int, str, str],
) -> None:
    from napalm.base.exceptions import CommandErrorException

    driver, _sent = _comparing(reply)
    with pytest.raises(CommandErrorException, match=r"comparing frr\.conf failed"):
        driver.compare_config()


def test_where_frr_reload_cannot_be_loaded_the_compare_runs_frr_reload_test() -> None:
    driver, sent = _comparing((3, '{"applied": false, "errors": ["unusable"]}\n', ""))
    driver._run_inner = driver._run

    def run(command: str, stdin: Any = None) -> tuple[int, str, str]:
        if command.startswith(f"{FRR_RELOAD} --test"):
            sent.append((command, stdin))
            return (
                0,
                "\nLines To Add\n============\nip prefix-list NEW seq 5 permit 1.0.0.0/8\n",
                "",
            )
        return driver._run_inner(command, stdin)

    driver._run = run
    assert "+ip prefix-list NEW seq 5 permit 1.0.0.0/8" in driver.compare_config()
    assert [c for c, _ in sent if c.startswith(FRR_RELOAD)] == [
        f"{FRR_RELOAD} --test --stdout /etc/frr/dpctl/candidate/frr.conf"
    ]
