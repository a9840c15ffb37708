"""The User-Mode Linux guest: a Linux kernel run as an ordinary process of this machine.

Debian's ``user-mode-linux`` package (``linux.uml``, kernel 6.1) has the modules the lab needs
(bonding, 8021q, vrf, bridge, vxlan, veth, dummy) and no emulation: 3-5x faster per operation
than the QEMU TCG guest (lab-facts, last section). One CPU per instance.

What it may touch on this machine, and how that is kept so:

- It boots this machine's root file system over hostfs, mounted **read-only**, with a tmpfs
  overlay on top (stage 1 of the init below), so whatever the lab writes (``/etc/frr``,
  ``/run``, ``/var/log``, ``/root``, ...) lands in the guest's RAM. The lab's state folder is
  mounted read-only too: the guest writes nothing on this machine.
- It runs in a PID namespace of its own (``unshare --pid --kill-child``): if the UML kernel
  dies, the host kernel kills every process of it. Without one, a killed UML left its guest's
  processes running as host processes (a guest ``sleep`` holding the tap, seen 2026-12-06):
  UML runs guest processes as ptraced host processes, which the end of the tracer releases.
- Its network is one tap device named with the lab's prefix, a /30 of 169.254.0.0/16 (link
  local, never routed) between this machine and the guest's sshd, the lab's jump host.
- Its mconsole socket and pid file (``umid``) live in the state folder (``uml_dir``).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from controller.lab.errors import LabError, LabSetupError
from controller.lab.executor import Executor, GuestExecutor
from controller.lab.guest import (
    all_pids,
    connect_guest,
    launch,
    pid_alive,
    reap,
    wait_guest_ssh,
    write_guest_known_hosts,
)
from controller.lab.kernel import require_tools
from controller.lab.split import LINK_IF, LINK_MTU, MAX_GUESTS
from controller.lab.state import GuestInstance, LabState, Removed

UML = "linux.uml"
UML_MODULES = Path("/usr/lib/uml/modules")
LINK_LOCAL = ipaddress.IPv4Network("169.254.0.0/16")
# Cloud metadata services answer on this address: never route it to a lab.
METADATA = ipaddress.IPv4Address("169.254.169.254")
GUEST_IF = "vec0"


def uml_kernel_version() -> str:
    """The version of the installed UML kernel's modules (one directory per version)."""
    try:
        versions = sorted(p.name for p in UML_MODULES.iterdir() if p.is_dir())
    except OSError:
        versions = []
    if not versions:
        raise LabSetupError(f"no UML kernel modules in {UML_MODULES}: run controller/lab/setup.sh")
    return versions[-1]


def check_prerequisites() -> str:
    """Raise :class:`LabSetupError` naming what is missing; the UML kernel's version."""
    require_tools(UML, "unshare", "ip")
    if not Path("/dev/net/tun").exists():
        raise LabSetupError("/dev/net/tun missing: the UML guest's network needs a tap device")
    return uml_kernel_version()


def _digest(state_dir: Path) -> str:
    return hashlib.sha256(str(state_dir).encode()).hexdigest()


def tap_name(prefix: str, state_dir: Path, index: int = 0) -> str:
    """The host tap of instance ``index`` of the lab in ``state_dir``: the prefix, then a
    digest of the folder (two labs with one prefix get two taps), at most 15 characters."""
    return f"{prefix}u{_digest(state_dir)[:5]}{index}"


def umid(prefix: str, state_dir: Path, index: int = 0) -> str:
    """UML's machine id (names its mconsole socket and pid file under ``uml_dir``)."""
    return f"{prefix}lab{index}-{_digest(state_dir)[:8]}"


def uml_dir(state_dir: Path) -> Path:
    return state_dir / "guest" / "uml"


def _taken_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 address and route of this machine, as networks."""
    taken: list[ipaddress.IPv4Network] = []
    for args in (["-4", "-j", "addr"], ["-4", "-j", "route", "show", "table", "all"]):
        out = subprocess.run(["ip", *args], capture_output=True, text=True, check=False).stdout
        try:
            data = json.loads(out or "[]")
        except ValueError:
            continue
        for entry in data:
            for info in entry.get("addr_info", []) or [entry]:
                dst = info.get("local") or info.get("dst")
                if dst and dst not in ("default", "127.0.0.0/8"):
                    with contextlib.suppress(ValueError):
                        taken.append(ipaddress.IPv4Network(dst, strict=False))
    return taken


def pick_link(state_dir: Path, index: int = 0) -> tuple[str, str]:
    """(host address, guest address) of a free /30 in 169.254.0.0/16, found from a digest of
    the state folder: no address or route of this machine falls in it."""
    taken = [n for n in _taken_networks() if n.overlaps(LINK_LOCAL) and n != LINK_LOCAL]
    slots = LINK_LOCAL.num_addresses // 4
    base = int(LINK_LOCAL.network_address)
    start = int(_digest(state_dir)[:8], 16) + index
    for step in range(slots):
        net = ipaddress.IPv4Network((base + 4 * ((start + step) % slots), 30))
        if METADATA in net or net.network_address.packed[2] in (0, 255):
            continue
        if not any(net.overlaps(t) for t in taken):
            host, guest = list(net.hosts())
            return str(host), str(guest)
    raise LabError("no free /30 left in 169.254.0.0/16 for the UML guest's tap")


def create_tap(tap: str, host_ip: str) -> None:
    delete_tap(tap)  # a leftover of a crashed run of this lab
    for args in (
        ["tuntap", "add", "dev", tap, "mode", "tap"],
        ["addr", "add", f"{host_ip}/30", "dev", tap],
        ["link", "set", tap, "up"],
    ):
        done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            delete_tap(tap)
            raise LabSetupError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def delete_tap(tap: str, timeout: float = 15.0) -> bool:
    """Remove the tap if it exists; True when it did.

    A UML guest just killed may still hold the tap for a moment on a loaded machine (its
    host processes are still exiting), and ``ip link del`` then fails: try again until the
    device is gone, and say so if it never goes (a tap left behind breaks the next lab)."""
    path = Path(f"/sys/class/net/{tap}")
    if not path.exists():
        return False
    deadline = time.monotonic() + timeout
    while True:
        done = subprocess.run(["ip", "link", "del", tap], capture_output=True, text=True)
        if not path.exists():
            return True
        if time.monotonic() > deadline:
            raise LabError(f"could not remove the lab's tap {tap}: {done.stderr.strip()}")
        time.sleep(0.2)


STAGE1 = """#!/bin/sh
# PID 1 of the dpctl lab's UML guest, on this machine's root file system (hostfs, read-only).
# Puts a tmpfs overlay over it and moves into that, so nothing the lab writes reaches the host.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
fail() {{ echo "dpl: $*"; exit 1; }}
mount -t proc proc /proc || fail "proc"
mount -t tmpfs -o mode=755 tmpfs /run || fail "tmpfs on /run"
insmod {modules}/$(uname -r)/kernel/fs/overlayfs/overlay.ko || fail "overlay module"
mkdir -p /run/dpl-root/upper /run/dpl-root/work /run/dpl-root/new
mount -t overlay overlay \\
  -o lowerdir=/,upperdir=/run/dpl-root/upper,workdir=/run/dpl-root/work /run/dpl-root/new \\
  || fail "overlay mount"
cd /run/dpl-root/new || fail "cd"
mkdir -p .dpl-host
pivot_root . .dpl-host || fail "pivot_root"
exec chroot . /bin/sh "$dplstate/guest/uml-stage2"
"""

STAGE2 = """#!/bin/sh
# Stage 2 (PID 1 on the overlay): a fresh /run, /tmp, /root, /dev; the state folder read-only;
# the UML modules; the tap's address; the lab's sshd.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
fail() {{ echo "dpl: $*"; exit 1; }}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/dpl/state /run/dpl/writes /run/sshd /run/netns /run/lock
# what the lab writes, read-only: the overlay's upper layer (tests compare it with the host)
mount --bind /.dpl-host/run/dpl-root/upper /run/dpl/writes || fail "writes"
mount -o remount,bind,ro /run/dpl/writes
umount -l /.dpl-host || fail "detach the host's root"
mount -t hostfs -o ro,"$dplstate" none /run/dpl/state || fail "state folder"
mount -t tmpfs tmpfs /tmp
mount -t tmpfs -o mode=700 tmpfs /root
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mkdir -p /lib/modules/$(uname -r)
mount --bind {modules}/$(uname -r) /lib/modules/$(uname -r) || fail "modules"
modprobe ipv6 || fail "ipv6"
hostname dpl-guest
ip link set lo up
ip link set {iface} up
ip addr add "$dplguest"/30 dev {iface} || fail "address"
for t in 1 2 3; do
  for f in ipv4 ipv6; do
    echo $((1024 << (t * 2))) > /proc/sys/net/$f/neigh/default/gc_thresh$t
  done
done
/usr/sbin/sshd -r -f /run/dpl/state/guest/sshd_config -o ListenAddress="$dplguest" \\
  -E /run/dpl/guest-sshd.log || fail "sshd"
echo "dpl: guest ready"
while :; do sleep 3600; done
"""


def write_init(state_dir: Path) -> Path:
    """Write both init stages into the state folder (read by the guest over hostfs)."""
    gdir = state_dir / "guest"
    for name, text in (("uml-init", STAGE1), ("uml-stage2", STAGE2)):
        path = gdir / name
        path.write_text(text.format(modules=UML_MODULES, iface=GUEST_IF))
        path.chmod(0o755)
    return gdir / "uml-init"


# The PID namespace's init: a shell that runs the UML kernel and ends with it. Were the kernel
# the init, its abort() on a panic (a failed guest init) would be ignored (a namespace's init
# gets no signal it has no handler for) and the process would hang instead of ending.
LAUNCH = ("sh", "-c", f'{UML} "$@"; exit $?')


def uml_command(
    state: LabState,
    tap: str,
    guest_ip: str,
    memory_mb: int,
    index: int = 0,
    link_end: str | None = None,
) -> list[str]:
    """``unshare --pid --kill-child sh -c 'linux.uml "$@"; ...' linux.uml ...``: the guest
    and every process of it live in a PID namespace that ends with the UML kernel.
    ``dplstate=`` marks it as this lab's (unknown kernel words reach init as environment
    variables).

    ``gro=1``: the tap carries offloaded (GSO) frames from this machine, which UML's vector
    driver drops unless GRO is on ("Incoming GSO frames and GRO disabled on the interface"
    in the console; the kernel's UML howto, "gro"). Without it every large write to the
    guest (a deploy's config archive) crawled through TCP retransmits: a 2 MiB upload took
    104 s against 0.5 s with it, and the multi-group lab's deploy of 12 switches 24 min
    before its SSH channels timed out (2026-12-06, docs/lab-seed.md).

    ``link_end``: instance ``index`` of a split lab gets the host veth end joining it to the
    other as ``vec1`` in the raw transport (controller/lab/split.py)."""
    sdir = state.path
    udir = uml_dir(sdir)
    udir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return [
        "unshare",
        "--pid",
        "--kill-child",
        *LAUNCH,
        UML,
        f"mem={memory_mb}M",
        "root=/dev/root",
        "rootfstype=hostfs",
        "rootflags=/",
        "ro",
        f"init={write_init(sdir)}",
        "con0=null,fd:1",
        "con=null",
        "ssl=null",
        f"umid={umid(state.prefix, sdir, index)}",
        f"uml_dir={udir}",
        f"{GUEST_IF}:transport=tap,ifname={tap},gro=1",
        *([f"{LINK_IF}:transport=raw,ifname={link_end},mtu={LINK_MTU}"] if link_end else []),
        f"dplstate={sdir}",
        f"dplguest={guest_ip}",
    ]


def is_our_uml(pid: int, state_dir: Path) -> bool:
    """The process is this lab's UML: its ``unshare``, the namespace's shell, or a
    ``linux.uml`` process (the kernel, and each guest process's host process)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    launched = os.path.basename(argv[0]) in (UML.encode(), b"unshare", b"sh")
    return launched and UML.encode() in argv and f"dplstate={state_dir}".encode() in argv


def our_uml_pids(state_dir: Path, state: LabState | None) -> list[int]:
    pids = set(all_pids())
    if state and state.guest_pid:
        pids.add(state.guest_pid)
    return sorted(p for p in pids if is_our_uml(p, state_dir))


def _launcher(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"unshare")
    except OSError:
        return False


def kill_all(pids: list[int], timeout: float = 10.0) -> list[int]:
    """SIGKILL the UML processes, then their launchers (the guest keeps nothing on disk to
    flush; each ``unshare`` reaps its UML kernel as it ends, so no zombie is left); the
    launchers that ended (a UML guest's PID, as the state records it)."""
    launchers = [p for p in pids if _launcher(p)]
    for group in ([p for p in pids if p not in launchers], launchers):
        for pid in group:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in group:
                reap(pid)
            if not any(pid_alive(p) for p in group):
                break
            time.sleep(0.05)
    return [p for p in launchers if not pid_alive(p)]


def link_pair(prefix: str, state_dir: Path) -> tuple[str, str]:
    """The host veth pair between the two instances of a split lab (named like the taps)."""
    base = f"{prefix}w{_digest(state_dir)[:5]}"
    return base + "a", base + "b"


def create_link_pair(ends: tuple[str, str]) -> None:
    """The pair, up, at the split's MTU; the host has no address on it and forwards nothing
    (each end is a UML instance's raw packet socket)."""
    delete_link_pair(ends)
    a, b = ends
    for args in (
        ["link", "add", a, "mtu", str(LINK_MTU), "type", "veth", "peer", "name", b],
        ["link", "set", b, "mtu", str(LINK_MTU)],
        ["link", "set", a, "up"],
        ["link", "set", b, "up"],
    ):
        done = subprocess.run(["ip", *args], capture_output=True, text=True)
        if done.returncode != 0:
            delete_link_pair(ends)
            raise LabError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def delete_link_pair(ends: tuple[str, str]) -> bool:
    """Remove the pair if it exists (deleting one end removes both); True when it did."""
    for end in ends:
        if Path(f"/sys/class/net/{end}").exists():
            subprocess.run(["ip", "link", "del", end], capture_output=True, check=False)
            return True
    return False


class UmlSubstrate:
    """The lab in a User-Mode Linux guest, or split over two (one per plane): ``index``
    names each instance's tap, umid and console log."""

    name = "uml"

    def prepare(self) -> str:
        return check_prerequisites()

    def start(self, state: LabState, memory_mb: int) -> None:
        self._launch(state, 0, memory_mb)
        write_guest_known_hosts(state)

    def start_split(self, state: LabState, memory_mb: list[int]) -> None:
        """Every instance of a split lab and the veth pair between them; instance 0 is the
        jump host, as a single guest is."""
        ends = link_pair(state.prefix, state.path)
        create_link_pair(ends)
        state.more_guests = []
        for index, memory in enumerate(memory_mb):
            self._launch(state, index, memory, ends[index])
        write_guest_known_hosts(state)

    @staticmethod
    def _launch(state: LabState, index: int, memory_mb: int, link_end: str | None = None) -> None:
        """Instance ``index``: its tap, its UML process; recorded in ``state`` (instance 0 as
        the lab's guest and jump host, the others in ``more_guests``)."""
        tap = tap_name(state.prefix, state.path, index)
        host_ip, guest_ip = pick_link(state.path, index)
        create_tap(tap, host_ip)
        cmd = uml_command(state, tap, guest_ip, memory_mb, index, link_end)
        log = state.path / "guest" / ("console.log" if index == 0 else f"console{index}.log")
        pid = launch(cmd, log)
        if index == 0:
            state.guest_host, state.guest_port, state.guest_pid = guest_ip, 22, pid
            (state.path / "guest" / "uml.pid").write_text(f"{pid}\n")
        else:
            state.more_guests.append(GuestInstance(pid, guest_ip))

    def wait_split(self, state: LabState, timeout: float) -> list[Executor]:
        """Until every instance's sshd takes the lab's key; an executor for each."""
        executors = [self.wait_ready(state, timeout)]
        for g in state.more_guests:
            client = wait_guest_ssh(
                g.pid, g.host, g.port, state.key_path, state.known_hosts, timeout
            )
            executors.append(GuestExecutor(client))
        return executors

    def executor_of(self, state: LabState, index: int) -> Executor:
        """A new connection to instance ``index`` of a running lab."""
        if index == 0:
            return self.executor(state)
        g = state.more_guests[index - 1]
        return GuestExecutor(connect_guest(g.host, g.port, state.key_path, state.known_hosts))

    def wait_ready(self, state: LabState, timeout: float) -> Executor:
        assert state.guest_pid is not None and state.guest_port is not None
        client = wait_guest_ssh(
            state.guest_pid,
            state.guest_host,
            state.guest_port,
            state.key_path,
            state.known_hosts,
            timeout,
        )
        return GuestExecutor(client)

    def executor(self, state: LabState) -> Executor:
        if state.guest_port is None:
            raise LabError("lab state has no guest address")
        client = connect_guest(
            state.guest_host, state.guest_port, state.key_path, state.known_hosts
        )
        return GuestExecutor(client)

    def is_ours(self, pid: int, state_dir: Path) -> bool:
        return is_our_uml(pid, state_dir)

    def stop(self, state_dir: Path, state: LabState | None, prefix: str) -> Removed:
        """The UML processes of ``state_dir`` (recorded PID or command line), then its tap
        (named from the prefix and the folder, so found without a state file too)."""
        pids = our_uml_pids(state_dir, state)
        with contextlib.suppress(OSError, ValueError):
            recorded = int((state_dir / "guest" / "uml.pid").read_text().strip())
            if is_our_uml(recorded, state_dir) and recorded not in pids:
                pids.append(recorded)
        stopped = kill_all(pids)
        prefix = state.prefix if state else prefix
        taps = [tap_name(prefix, state_dir, i) for i in range(MAX_GUESTS)]
        removed = [tap for tap in taps if delete_tap(tap)]
        pair = link_pair(prefix, state_dir)
        removed += [pair[0]] if delete_link_pair(pair) else []
        return Removed(guest_stopped=stopped, taps_removed=removed)
