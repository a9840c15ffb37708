"""The lab substrate: how it is chosen, forced, named, and how a UML guest is found and
removed (real processes and a real tap where the machine allows; no lab is built here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.lab import kernel, substrate, uml
from controller.lab.errors import GuestBootError, LabSetupError
from controller.lab.guest import pid_alive
from controller.lab.state import LabState
from tests.conftest import INVENTORY, run_json

PREFIX = "dps-"


def _root_with_tun() -> None:
    if os.geteuid() != 0 or not Path("/dev/net/tun").exists():
        pytest.skip("needs root and /dev/net/tun")


def test_the_variable_must_name_a_substrate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(substrate.ENV_VAR, "docker")
    with pytest.raises(LabSetupError) as err:
        substrate.choose(PREFIX)
    assert str(err.value) == (
        "DPCTL_LAB_SUBSTRATE='docker' is not a lab substrate: native, kvm, uml or tcg"
    )


def test_a_forced_substrate_this_machine_cannot_run_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if kernel.kvm_usable():
        pytest.skip("this machine has KVM")
    monkeypatch.setenv(substrate.ENV_VAR, "kvm")
    with pytest.raises(LabSetupError, match=r"DPCTL_LAB_SUBSTRATE=kvm cannot run here: "):
        substrate.choose(PREFIX)


def test_a_forced_substrate_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(substrate, "unavailable", lambda name, prefix: "")
    monkeypatch.setenv(substrate.ENV_VAR, "tcg")
    choice = substrate.choose(PREFIX)
    assert choice == substrate.Choice("tcg", "forced by DPCTL_LAB_SUBSTRATE=tcg")
    assert choice.describe() == "qemu-tcg: forced by DPCTL_LAB_SUBSTRATE=tcg"


@pytest.mark.parametrize(
    ("missing", "chosen", "reason"),
    [
        ({}, "native", "host kernel"),
        ({"native": "no vrf"}, "kvm", "no vrf"),
        ({"native": "no vrf", "kvm": "no vmx"}, "uml", "no vrf; no vmx"),
        ({"native": "a", "kvm": "b", "uml": "c"}, "tcg", "a; b; c"),
    ],
)
def test_the_first_substrate_the_machine_can_run_is_chosen_and_why(
    monkeypatch: pytest.MonkeyPatch, missing: dict[str, str], chosen: str, reason: str
) -> None:
    """The order is fixed (native, kvm, uml, tcg); the reason names what each one before the
    chosen one lacked. (What each substrate lacks is asked of the machine below.)"""
    monkeypatch.delenv(substrate.ENV_VAR, raising=False)
    monkeypatch.setattr(substrate, "unavailable", lambda name, prefix: missing.get(name, ""))
    choice = substrate.choose(PREFIX)
    assert choice.name == chosen and choice.reason.startswith(reason)


def test_no_substrate_at_all_names_every_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(substrate.ENV_VAR, raising=False)
    monkeypatch.setattr(substrate, "unavailable", lambda name, prefix: f"no {name}")
    with pytest.raises(LabSetupError, match="no substrate can run the lab here: no native; no "):
        substrate.choose(PREFIX)


def test_this_machine_reports_what_its_kernel_lacks() -> None:
    """On a kernel without bonding/VLAN/VRF (this machine's), native is refused naming them."""
    if os.geteuid() != 0:
        pytest.skip("the probe makes a namespace: root")
    why_not = substrate.unavailable("native", PREFIX)
    features = kernel.host_kernel_features(PREFIX)
    missing = [name for name, ok in features.items() if not ok]
    assert why_not == (
        f"host kernel {os.uname().release} lacks {', '.join(missing)}" * bool(missing)
    )


def test_the_tap_carries_the_prefix_and_differs_per_lab(tmp_path: Path) -> None:
    one = uml.tap_name("dpl-", tmp_path / "a")
    two = uml.tap_name("dpl-", tmp_path / "b")
    assert one.startswith("dpl-u") and two.startswith("dpl-u") and one != two
    assert one == uml.tap_name("dpl-", tmp_path / "a")  # found again without a state file
    assert len(uml.tap_name("abcdefgh", tmp_path)) <= 15  # the longest prefix fits IFNAMSIZ


def test_the_uml_command_line(tmp_path: Path) -> None:
    state = LabState("x", "dpl-", "guest", str(tmp_path), "172.30.0.0/24", "172.30.0.1")
    (tmp_path / "guest").mkdir()
    cmd = uml.uml_command(state, "dpl-u12ab30", "169.254.3.2", 1536)
    assert cmd[:7] == ["unshare", "--pid", "--kill-child", "sh", "-c", *cmd[5:6], "linux.uml"]
    assert cmd[5] == 'linux.uml "$@"; exit $?'  # not exec: the shell stays the namespace's init
    # this machine's root, read-only; an init of the lab's own from the state folder
    assert {"root=/dev/root", "rootfstype=hostfs", "rootflags=/", "ro"} <= set(cmd)
    assert f"init={tmp_path}/guest/uml-init" in cmd and f"dplstate={tmp_path}" in cmd
    assert "mem=1536M" in cmd and "vec0:transport=tap,ifname=dpl-u12ab30,gro=1" in cmd
    assert f"uml_dir={tmp_path}/guest/uml" in cmd
    assert next(a for a in cmd if a.startswith("umid=")).startswith("umid=dpl-lab0-")
    assert os.access(tmp_path / "guest" / "uml-init", os.X_OK)


def test_pick_link_avoids_addresses_in_use(tmp_path: Path) -> None:
    """A /30 of 169.254.0.0/16 per lab; one that an interface of this machine already uses
    is skipped (a real tap holds the first pick here)."""
    _root_with_tun()
    host, guest = uml.pick_link(tmp_path)
    assert host.startswith("169.254.") and guest.startswith("169.254.")
    tap = f"{PREFIX}pick0"
    uml.create_tap(tap, host)
    try:
        again_host, _ = uml.pick_link(tmp_path)
        assert again_host != host
    finally:
        assert uml.delete_tap(tap)
    assert not Path(f"/sys/class/net/{tap}").exists()


@pytest.fixture
def fake_uml(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A real process that looks like this lab's UML kernel (argv[0] linux.uml, the state
    folder on its command line), and a real tap named as the lab's."""
    _root_with_tun()
    if shutil.which("bash") is None:
        pytest.skip("bash missing")
    sdir = tmp_path / "state"
    (sdir / "guest").mkdir(parents=True)
    code = "import time; time.sleep(60)"
    proc = subprocess.Popen(
        ["bash", "-c", f'exec -a linux.uml {sys.executable} -c "{code}" dplstate={sdir}'],
        start_new_session=True,
    )
    uml.create_tap(uml.tap_name(PREFIX, sdir), "169.254.253.1")
    deadline = time.monotonic() + 10
    while not uml.is_our_uml(proc.pid, sdir) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield sdir, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        uml.delete_tap(uml.tap_name(PREFIX, sdir))


def test_down_finds_the_uml_and_its_tap_without_a_state_file(
    fake_uml: tuple[Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    sdir, proc = fake_uml
    assert uml.is_our_uml(proc.pid, sdir)
    assert not uml.is_our_uml(proc.pid, tmp_path / "another-lab")
    assert not uml.is_our_uml(os.getpid(), sdir)
    removed = uml.UmlSubstrate().stop(sdir, None, PREFIX)
    assert not pid_alive(proc.pid)  # killed and reaped (stop reaps the children it may have)
    # a bare linux.uml (no unshare launcher) is killed; the launchers are what is reported
    assert removed.guest_stopped == [] and removed.taps_removed == [uml.tap_name(PREFIX, sdir)]
    again = uml.UmlSubstrate().stop(sdir, None, PREFIX)
    assert again.guest_stopped == [] and again.taps_removed == []


def test_down_leaves_another_labs_uml_alone(
    fake_uml: tuple[Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    sdir, proc = fake_uml
    other = tmp_path / "other"
    removed = uml.UmlSubstrate().stop(other, None, PREFIX)
    assert removed.taps_removed == [] and proc.poll() is None
    assert Path(f"/sys/class/net/{uml.tap_name(PREFIX, sdir)}").exists()


@pytest.mark.parametrize("value", ["docker", "TCG", "uml,tcg"])
def test_lab_up_with_a_bad_variable_fails_and_makes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str
) -> None:
    """`dpctl lab up` refuses the variable before it creates anything: exit 2, the variable
    and the accepted names in the message, no state folder."""
    monkeypatch.setenv(substrate.ENV_VAR, value)
    monkeypatch.setenv("DPCTL_LAB_DIR", str(tmp_path / "labs"))
    monkeypatch.setenv("DPCTL_LAB_PREFIX", PREFIX)
    code, out = run_json("lab", "up", "-f", str(INVENTORY / "lab-dual-arp.yaml"))
    assert code == 2 and out["ok"] is False
    reason = out["error"]["reason"]
    assert f"DPCTL_LAB_SUBSTRATE={value.strip()!r} is not a lab substrate" in reason
    assert "native, kvm, uml or tcg" in reason
    assert not (tmp_path / "labs").exists()


def test_a_guest_whose_init_fails_ends_at_once_naming_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A UML guest whose init fails panics; its process must end (the namespace's init is a
    shell, not the kernel, whose abort would be ignored) so lab up reports it at once with
    the console's last lines, instead of waiting out the boot timeout; nothing is left."""
    _root_with_tun()
    try:
        uml.check_prerequisites()
    except LabSetupError as exc:
        pytest.skip(str(exc))
    broken = uml.STAGE2.replace('modprobe ipv6 || fail "ipv6"', 'fail "stage 2 stopped here"')
    assert broken != uml.STAGE2
    monkeypatch.setattr(uml, "STAGE2", broken)
    sdir = tmp_path / "state"
    (sdir / "guest").mkdir(parents=True)
    (sdir / "id_ed25519").write_bytes(b"")
    state = LabState("x", PREFIX, "guest", str(sdir), "172.30.0.0/24", "172.30.0.1")
    sub = uml.UmlSubstrate()
    started = time.monotonic()
    try:
        sub.start(state, 512)
        with pytest.raises(GuestBootError, match=r"(?s)exited during boot.*stage 2 stopped here"):
            sub.wait_ready(state, timeout=120)
        assert time.monotonic() - started < 60
    finally:
        removed = sub.stop(sdir, state, PREFIX)
    assert removed.taps_removed == [uml.tap_name(PREFIX, sdir)]
    assert not any(uml.is_our_uml(p, sdir) for p in uml.all_pids())
