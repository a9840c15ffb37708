"""The machine a lab runs on, chosen by what this machine can do.

In this order (issue 39):

``native``
    this kernel has bonding, 802.1Q and VRF: the namespaces live on this host;
``kvm``
    a QEMU guest with hardware virtualisation (only with real vmx/svm: a PVM ``/dev/kvm``
    cannot boot a stock kernel, lab-facts);
``uml``
    User-Mode Linux, a Linux kernel run as a host process: no emulation, one CPU;
``tcg``
    a QEMU guest under emulation: the last resort, and the slowest.

``DPCTL_LAB_SUBSTRATE`` forces one. The runtime drives the chosen one through
:class:`Substrate`; nothing outside ``controller.lab`` needs to know which runs: the lab
state records it, with the guest's jump address.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from controller.lab import kernel, scripts
from controller.lab.errors import GuestStartClash, LabError, LabSetupError
from controller.lab.executor import Executor, LocalExecutor
from controller.lab.guest import QemuSubstrate, pid_alive
from controller.lab.state import LabState, Removed
from controller.lab.topology import mgmt_bridge
from controller.lab.uml import UmlSubstrate

SubstrateName = Literal["native", "kvm", "uml", "tcg"]
NAMES: tuple[SubstrateName, ...] = ("native", "kvm", "uml", "tcg")
GUESTS: tuple[SubstrateName, ...] = ("kvm", "uml", "tcg")
LABELS: dict[str, str] = {
    "native": "native",
    "kvm": "qemu-kvm",
    "uml": "user-mode-linux",
    "tcg": "qemu-tcg",
}
ENV_VAR = "DPCTL_LAB_SUBSTRATE"


class Substrate(Protocol):
    """What the runtime needs of the machine a lab runs on."""

    name: str

    def prepare(self) -> str:
        """Check what it needs (:class:`LabSetupError` naming what to run); the version of
        the kernel the lab will run on."""
        ...

    def start(self, state: LabState, memory_mb: int) -> None:
        """Launch the machine; record its PID and its sshd's address and port in ``state``."""
        ...

    def wait_ready(self, state: LabState, timeout: float) -> Executor:
        """Until its sshd takes the lab's key; an executor for the lab's root namespace."""
        ...

    def executor(self, state: LabState) -> Executor:
        """A new connection to the machine of a running lab."""
        ...

    def is_ours(self, pid: int, state_dir: Path) -> bool:
        """``pid`` is this substrate's machine for ``state_dir`` (guards against PID reuse)."""
        ...

    def stop(self, state_dir: Path, state: LabState | None, prefix: str) -> Removed:
        """Remove the machine of ``state_dir`` and all it left on this host: idempotent, and
        also after a crash, without a state file."""
        ...


@dataclass(frozen=True)
class Choice:
    """The substrate a lab runs on, and why."""

    name: SubstrateName
    reason: str

    @property
    def label(self) -> str:
        return LABELS[self.name]

    def describe(self) -> str:
        """e.g. ``user-mode-linux: host kernel 6.18 lacks bonding, ...; /dev/kvm ...``."""
        return f"{self.label}: {self.reason}"


def label(name: str) -> str:
    """How a substrate is called to users (``uml``: "user-mode-linux")."""
    return LABELS.get(name, name)


def get(name: str) -> Substrate:
    """The implementation of substrate ``name`` (a state's empty name: an older lab)."""
    impls: dict[str, Substrate] = {
        "native": NativeSubstrate(),
        "kvm": QemuSubstrate("kvm"),
        "uml": UmlSubstrate(),
        "tcg": QemuSubstrate("tcg"),
    }
    if name not in impls:
        raise LabError(f"unknown lab substrate {name!r} (native, kvm, uml or tcg)")
    return impls[name]


def of_state(state: LabState) -> Substrate:
    """The substrate a lab's state says it runs on (before the choice: QEMU or native)."""
    return get(state.substrate or ("native" if state.mode == "native" else "tcg"))


def cleaners() -> tuple[Substrate, ...]:
    """One of each kind, for ``down`` to find whatever a crashed lab left (QEMU's stop finds
    a KVM guest as well as a TCG one)."""
    return (QemuSubstrate("tcg"), UmlSubstrate(), NativeSubstrate())


def choose(prefix: str, forced: str | None = None, guest_only: bool = False) -> Choice:
    """The first substrate this machine can run, or the one ``forced`` (else the variable
    names); :class:`LabSetupError` when the forced one cannot run here, or none can."""
    wanted = forced if forced is not None else os.environ.get(ENV_VAR, "").strip()
    if wanted:
        return _forced(wanted, prefix)
    reasons: list[str] = []
    for name in GUESTS if guest_only else NAMES:
        why_not = unavailable(name, prefix)
        if not why_not:
            return Choice(name, "; ".join(reasons) or _capable_reason())
        reasons.append(why_not)
    raise LabSetupError("no substrate can run the lab here: " + "; ".join(reasons))


def _forced(wanted: str, prefix: str) -> Choice:
    if wanted not in NAMES:
        raise LabSetupError(f"{ENV_VAR}={wanted!r} is not a lab substrate: native, kvm, uml or tcg")
    name: SubstrateName = wanted
    why_not = unavailable(name, prefix)
    if why_not:
        raise LabSetupError(f"{ENV_VAR}={name} cannot run here: {why_not}")
    return Choice(name, f"forced by {ENV_VAR}={name}")


def _capable_reason() -> str:
    return f"host kernel {platform.release()} has bonding, 8021q, vrf"


def unavailable(name: SubstrateName, prefix: str) -> str:
    """Why substrate ``name`` cannot run on this machine; empty when it can."""
    if name == "native":
        features = kernel.host_kernel_features(prefix)
        missing = [f for f, ok in features.items() if not ok]
        return f"host kernel {platform.release()} lacks {', '.join(missing)}" if missing else ""
    if name == "kvm" and not kernel.kvm_usable():
        if not os.path.exists("/dev/kvm"):
            return "no /dev/kvm"
        return "/dev/kvm has no vmx/svm (no hardware virtualisation)"
    try:
        get(name).prepare()
    except LabSetupError as exc:
        return f"{LABELS[name]}: {exc}"
    return ""


def memory_mb(nodes: int) -> int:
    """Guest memory for a lab of ``nodes`` namespaces (FRR ~24 MiB a switch, lab-facts)."""
    return max(1024, 768 + 64 * nodes)


def boot(sub: Substrate, state: LabState, memory: int, timeout: float) -> Executor:
    """Start the machine and wait for it. A guest whose sshd never answered while it ran
    (once in CI, 2026-12-01: 180 s, nothing on the console; the same lab then booted in
    118 s) is stopped and booted once more; a second hang is an error naming both. A start
    that lost its port to another process is retried."""
    hung: list[str] = []
    for _attempt in range(3):
        sub.start(state, memory)
        state.save()
        try:
            return sub.wait_ready(state, timeout)
        except GuestStartClash:
            continue
        except LabError as exc:
            alive = state.guest_pid is not None and pid_alive(state.guest_pid)
            if alive and not hung:
                hung.append(str(exc))
                sub.stop(state.path, state, state.prefix)
                continue
            if hung:
                raise LabError(f"{exc} (the boot before it hung too: {hung[0]})") from None
            raise
    raise LabError(f"could not start the lab's {LABELS.get(sub.name, sub.name)} guest")


class NativeSubstrate:
    """The lab's namespaces on this host (its kernel has what the lab needs)."""

    name = "native"

    def prepare(self) -> str:
        return platform.release()

    def start(self, state: LabState, memory_mb: int) -> None:
        state.guest_pid = state.guest_port = None

    def wait_ready(self, state: LabState, timeout: float) -> Executor:
        return LocalExecutor()

    def executor(self, state: LabState) -> Executor:
        return LocalExecutor()

    def is_ours(self, pid: int, state_dir: Path) -> bool:
        return False

    def stop(self, state_dir: Path, state: LabState | None, prefix: str) -> Removed:
        """Only namespaces named with the lab's prefix on this host, their processes, its
        management bridge and run folder."""
        prefix = state.prefix if state else prefix
        try:
            out = subprocess.run(
                ["ip", "netns", "list"], capture_output=True, text=True, check=False
            ).stdout
        except OSError:
            return Removed()
        names = [line.split()[0] for line in out.splitlines() if line.strip()]
        ours = [n for n in names if n.startswith(prefix)]
        bridge_exists = Path(f"/sys/class/net/{mgmt_bridge(prefix)}").exists()
        if not ours and not bridge_exists and not Path(scripts.run_dir(prefix)).exists():
            return Removed()
        LocalExecutor().run_script(scripts.teardown_script(prefix, ours), timeout=120.0)
        return Removed(namespaces_removed=ours)
