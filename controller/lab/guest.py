"""The QEMU guest (KVM or TCG) that hosts the lab when the host kernel lacks bonding/VLAN/VRF.

Also what every guest substrate shares: the guest sshd's files, waiting for it, connecting.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import paramiko

from controller.lab.errors import GuestBootError, GuestStartClash, LabError
from controller.lab.executor import Executor, GuestExecutor
from controller.lab.kernel import GuestKernel, guest_kernel, require_tools
from controller.lab.keys import known_hosts_line, write_keypair, write_private
from controller.lab.state import GUEST_HOST, LabState, Removed

QEMU = "qemu-system-x86_64"
GUEST_ADDR = "10.0.2.15"
"""The QEMU guest's address on its user-mode network (kernel.py's stage 2 sets it)."""
# No ListenAddress: each substrate's guest init passes its own address to sshd.
GUEST_SSHD_CONFIG = """\
HostKey /run/dpl/state/guest/host_key
AuthorizedKeysFile /run/dpl/state/guest/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
AllowTcpForwarding yes
MaxSessions 256
MaxStartups 256:30:512
PidFile /run/dpl/guest-sshd.pid
Subsystem sftp internal-sftp
"""


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1 (QEMU binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare_guest_files(state_dir: Path, client_pubkey: str) -> str:
    """Write the guest sshd config, host key and authorized_keys; return the host pubkey."""
    gdir = state_dir / "guest"
    gdir.mkdir(mode=0o700, exist_ok=True)
    host_pub = write_keypair(gdir / "host_key")
    write_private(gdir / "authorized_keys", client_pubkey + "\n")
    write_private(gdir / "sshd_config", GUEST_SSHD_CONFIG, 0o644)
    return host_pub


def qemu_command(
    kernel: GuestKernel,
    state_dir: Path,
    port: int,
    memory_mb: int,
    cpus: int,
    prefix: str,
    accel: str = "tcg",
) -> list[str]:
    """The QEMU command line: host / over 9p read-only, user net restricted, 127.0.0.1 only.
    The process is named after the lab's prefix, so it is recognisable as the lab's own."""
    accel = "kvm" if accel == "kvm" else "tcg,thread=multi"
    append = f"console=ttyS0 panic=-1 quiet mitigations=off tsc=reliable dplstate={state_dir}"
    return [
        QEMU,
        "-accel",
        accel,
        "-machine",
        "pc",
        "-cpu",
        "max",
        "-m",
        str(memory_mb),
        "-smp",
        str(cpus),
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-name",
        f"{prefix}guest,process={prefix}guest-{port}",
        "-kernel",
        str(kernel.vmlinux),
        "-initrd",
        str(kernel.initramfs),
        "-append",
        append,
        "-virtfs",
        "local,path=/,mount_tag=root,readonly=on,security_model=none,multidevs=remap",
        "-netdev",
        f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
        "-device",
        "virtio-net-pci,netdev=n0",
        "-serial",
        f"file:{state_dir / 'guest' / 'console.log'}",
    ]


def start_guest(
    kernel: GuestKernel,
    state_dir: Path,
    port: int,
    prefix: str,
    memory_mb: int = 2048,
    cpus: int = 2,
    accel: str = "tcg",
) -> int:
    """Launch QEMU detached (own session) and return its PID."""
    require_tools(QEMU)
    cmd = qemu_command(kernel, state_dir, port, memory_mb, cpus, prefix, accel)
    pid = launch(cmd, state_dir / "guest" / "qemu.log")
    (state_dir / "guest" / "qemu.pid").write_text(f"{pid}\n")
    return pid


def launch(cmd: list[str], log_path: Path) -> int:
    """Start ``cmd`` detached (own session, stdin closed, output to ``log_path``); its PID."""
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        log.close()
    return proc.pid


def wait_guest_ssh(
    pid: int, host: str, port: int, key_path: Path, known_hosts: Path, timeout: float
) -> paramiko.SSHClient:
    """Poll until the guest's sshd accepts our key; fail early if the guest's process died."""
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            raise GuestBootError(
                f"the lab guest (pid {pid}) exited during boot{_console_tail(key_path)}"
            )
        if not _banner(host, port):
            time.sleep(0.2)
            continue
        try:
            return connect_guest(host, port, key_path, known_hosts, timeout=5.0)
        except (OSError, paramiko.SSHException, EOFError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    raise GuestBootError(
        f"guest sshd not answering on {host}:{port} after {timeout:.0f}s ({last})"
        f"{_console_tail(key_path)}"
    )


def _console_tail(key_path: Path, lines: int = 15) -> str:
    """Last lines of QEMU's log and the guest console (removed after a failed up), without a
    kernel panic's stack dump, which would hide the init's own ``dpl: ...`` reason."""
    out = ""
    for name in ("qemu.log", "console.log"):
        try:
            text = (key_path.parent / "guest" / name).read_text(errors="replace")
        except OSError:
            continue
        kept = [line for line in text.splitlines() if not _STACK_LINE.match(line)]
        if kept:
            out += f"\n--- {name} (tail) ---\n" + "\n".join(kept[-lines:])
    return out


_STACK_LINE = re.compile(r"\s*(\[<[0-9a-f]+>\]|Call Trace:|Stack:$|([0-9a-f]{8} ){3}[0-9a-f]{8}$)")


def _banner(host: str, port: int) -> bool:
    """True once the guest's sshd sends its banner (slirp accepts then drops before)."""
    try:
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.settimeout(3.0)
            return sock.recv(8).startswith(b"SSH-")
    except OSError:
        return False


def connect_guest(
    host: str, port: int, key_path: Path, known_hosts: Path, timeout: float = 10.0
) -> paramiko.SSHClient:
    """An SSH client logged in to the guest (host key checked against ``known_hosts``)."""
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(
            host,
            port=port,
            username="root",
            key_filename=str(key_path),
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            allow_agent=False,
            look_for_keys=False,
        )
    except BaseException:
        client.close()
        raise
    transport = client.get_transport()
    if transport is not None:
        transport.set_keepalive(15)
    return client


def write_guest_known_hosts(state: LabState) -> None:
    """The guests' own host key (one key, each instance's address); the nodes' follow after
    the build."""
    state.known_hosts.write_text("".join(guest_known_hosts_lines(state)))


def guest_known_hosts_lines(state: LabState) -> list[str]:
    """The known_hosts entries of the lab's guest (every instance of a split lab: one host
    key, each instance's address); none natively."""
    if state.jump is None:
        return []
    pub = write_keypair(state.path / "guest" / "host_key")
    lines = [known_hosts_line(*state.jump, pub)]
    lines += [known_hosts_line(g.host, g.port, pub) for g in state.more_guests]
    return lines


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def is_our_qemu(pid: int, state_dir: Path) -> bool:
    """Guard against PID reuse: the process must be QEMU started for this state dir."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return (
        bool(argv)
        and argv[0].endswith(QEMU.encode())
        and f"dplstate={state_dir}".encode() in b" ".join(argv).split()
    )


def stop_guest(pid: int, state_dir: Path, timeout: float = 10.0) -> bool:
    """SIGTERM then SIGKILL our QEMU; the lab lives in guest RAM, so this removes it all."""
    if not is_our_qemu(pid, state_dir):
        return False
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        reap(pid)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            reap(pid)
            if not pid_alive(pid):
                return True
            time.sleep(0.1)
    return not pid_alive(pid)


def reap(pid: int) -> None:
    """Collect the exit status if QEMU is our child (same process that ran up())."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def our_qemu_pids(sdir: Path, state: LabState | None) -> list[int]:
    """QEMU processes started for this state dir (recorded PID, pid file, or cmdline)."""
    pids: set[int] = set()
    if state and state.guest_pid:
        pids.add(state.guest_pid)
    with contextlib.suppress(OSError, ValueError):
        pids.add(int((sdir / "guest" / "qemu.pid").read_text().strip()))
    pids.update(all_pids())
    return sorted(p for p in pids if is_our_qemu(p, sdir))


def all_pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def _port_clash(sdir: Path) -> bool:
    try:
        return b"Could not set up host forwarding" in (sdir / "guest" / "qemu.log").read_bytes()
    except OSError:
        return False


class QemuSubstrate:
    """A QEMU guest: the stock Debian kernel (setup.sh), this machine's / over 9p read-only
    with a tmpfs overlay, sshd forwarded to 127.0.0.1:PORT. ``kvm`` only with real vmx/svm;
    ``tcg`` emulates (the last resort: each exec ~65 ms, lab-facts)."""

    def __init__(self, accel: str) -> None:
        self.name = accel
        self._kernel: GuestKernel | None = None

    def prepare(self) -> str:
        require_tools(QEMU)
        self._kernel = guest_kernel()
        return self._kernel.version

    def start(self, state: LabState, memory_mb: int) -> None:
        kern = self._kernel or guest_kernel()
        port = free_port()
        state.guest_host, state.guest_port = GUEST_HOST, port
        write_guest_known_hosts(state)
        cpus = 2
        state.guest_pid = start_guest(
            kern, state.path, port, state.prefix, memory_mb, cpus, self.name
        )

    def wait_ready(self, state: LabState, timeout: float) -> Executor:
        assert state.guest_pid is not None and state.guest_port is not None
        try:
            client = wait_guest_ssh(
                state.guest_pid,
                state.guest_host,
                state.guest_port,
                state.key_path,
                state.known_hosts,
                timeout,
            )
        except LabError as exc:
            if not pid_alive(state.guest_pid) and _port_clash(state.path):
                raise GuestStartClash(f"port {state.guest_port} taken: {exc}") from None
            raise
        return GuestExecutor(client)

    def executor(self, state: LabState) -> Executor:
        if state.guest_port is None:
            raise LabError("lab state has no guest port")
        client = connect_guest(
            state.guest_host, state.guest_port, state.key_path, state.known_hosts
        )
        return GuestExecutor(client)

    def is_ours(self, pid: int, state_dir: Path) -> bool:
        return is_our_qemu(pid, state_dir)

    def stop(self, state_dir: Path, state: LabState | None, prefix: str) -> Removed:
        pids = our_qemu_pids(state_dir, state)
        return Removed(guest_stopped=[p for p in pids if stop_guest(p, state_dir)])
