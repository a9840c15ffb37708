"""Host kernel capability probe and the QEMU guest's kernel + initramfs (cached)."""

from __future__ import annotations

import io
import lzma
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from controller.lab.errors import LabSetupError

DEFAULT_KERNEL_CACHE = Path(os.environ.get("DPCTL_KERNEL_CACHE", "/var/cache/dpctl/kernel"))
DEFAULT_GUEST_KERNEL = "linux-image-amd64"
"""The Debian package (usually a meta package) the guest's kernel comes from unless
DPCTL_LAB_KERNEL names another: the distribution's default kernel (6.1 on Debian 12)."""
_KERNEL_PACKAGE = re.compile(r"linux-image-[a-z0-9][a-z0-9.+-]*")
BUSYBOX = Path("/bin/busybox")
_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Modules the initramfs loads (dependencies resolved from modules.dep).
_INITRAMFS_MODULES = ("9pnet_virtio", "9p", "overlay", "virtio_pci", "virtio_net")
# One test netlink operation per feature the lab needs, run in a throwaway namespace.
_FEATURE_PROBES: dict[str, tuple[str, ...]] = {
    "bonding": ("link", "add", "pb0", "type", "bond", "mode", "802.3ad"),
    "8021q": ("link", "add", "link", "pv0", "name", "pv0.10", "type", "vlan", "id", "10"),
    "vrf": ("link", "add", "pvrf", "type", "vrf", "table", "10"),
    "vxlan": ("link", "add", "pvx", "type", "vxlan", "id", "10", "dstport", "4789"),
    "bridge_vlan_filtering": ("link", "add", "pbr", "type", "bridge", "vlan_filtering", "1"),
    "dummy": ("link", "add", "pdum", "type", "dummy"),
}


def host_kernel_features(prefix: str) -> dict[str, bool]:
    """Try each feature in a temporary namespace ``<prefix>probe-<rand>``; always deletes it."""
    ns = f"{prefix}probe-{uuid.uuid4().hex[:6]}"
    _ip("netns", "add", ns)
    try:
        _ip("-n", ns, "link", "add", "pv0", "type", "veth", "peer", "name", "pv1")
        return {name: _ip_ok("-n", ns, *args) for name, args in _FEATURE_PROBES.items()}
    finally:
        _ip_ok("netns", "del", ns)


def host_is_capable(prefix: str) -> bool:
    """True when the running kernel can host the lab natively (no QEMU guest needed)."""
    return all(host_kernel_features(prefix).values())


def kvm_usable() -> bool:
    """KVM only with real hardware virtualisation flags (PVM's /dev/kvm cannot boot stock)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(
        line.startswith("flags") and (" vmx" in line or " svm" in line)
        for line in flags.splitlines()
    )


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LabSetupError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


def _ip_ok(*args: str) -> bool:
    return subprocess.run(["ip", *args], capture_output=True, check=False).returncode == 0


@dataclass(frozen=True)
class GuestKernel:
    """Paths of a prepared guest kernel."""

    version: str
    root: Path  # the dpkg -x tree (holds lib/modules/<version>)
    vmlinux: Path
    initramfs: Path


def guest_kernel_package() -> str:
    """The Debian package of the guest's kernel: DPCTL_LAB_KERNEL or the default."""
    package = os.environ.get("DPCTL_LAB_KERNEL", "") or DEFAULT_GUEST_KERNEL
    if not _KERNEL_PACKAGE.fullmatch(package):
        raise LabSetupError(
            f"DPCTL_LAB_KERNEL={package!r}: not a Debian kernel package name "
            "(linux-image-..., e.g. linux-image-6.12-amd64)"
        )
    return package


def kernel_link(package: str) -> str:
    """The cache entry setup.sh links to the unpacked kernel of ``package`` (the default
    keeps the name ``current`` that caches made before the choice existed use)."""
    return "current" if package == DEFAULT_GUEST_KERNEL else f"current-{package}"


def guest_kernel(cache: Path = DEFAULT_KERNEL_CACHE) -> GuestKernel:
    """Return the cached guest kernel, building vmlinux/initramfs on first use."""
    package = guest_kernel_package()
    current = cache / kernel_link(package)
    if not (current / ".ready").exists():
        how = "" if package == DEFAULT_GUEST_KERNEL else f"DPCTL_LAB_KERNEL={package} "
        raise LabSetupError(
            f"no guest kernel from {package} in {cache}: run {how}controller/lab/setup.sh"
        )
    base = current.resolve()
    version = (base / "kver").read_text().strip()
    root = base / "root"
    vmlinux = base / "vmlinux"
    if not vmlinux.exists():
        _extract_vmlinux(root / "boot" / f"vmlinuz-{version}", vmlinux)
    initramfs = base / "initramfs.cpio"
    if not initramfs.exists() or initramfs.stat().st_mtime < Path(__file__).stat().st_mtime:
        _build_initramfs(root, version, initramfs)
    return GuestKernel(version=version, root=root, vmlinux=vmlinux, initramfs=initramfs)


def _unxz(payload: bytes) -> bytes:
    try:
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
    except lzma.LZMAError:
        return b""


def _unzstd(payload: bytes) -> bytes:
    """zstd has no module in Python 3.11's standard library: its CLI (setup.sh installs it).
    A bzImage holds more after the frame, which zstd reports as an error after writing the
    frame's content, so only the output counts."""
    if shutil.which("zstd") is None:
        raise LabSetupError(
            "zstd not found (this kernel is zstd-compressed): run controller/lab/setup.sh"
        )
    done = subprocess.run(["zstd", "-dcq"], input=payload, capture_output=True, check=False)
    return done.stdout


def _extract_vmlinux(bzimage: Path, out: Path) -> None:
    """Unpack the compressed payload of a bzImage (xz: Debian's 6.1; zstd: its 6.12): the
    ELF vmlinux boots through PVH, faster."""
    data = bzimage.read_bytes()
    for magic, unpack in ((_XZ_MAGIC, _unxz), (_ZSTD_MAGIC, _unzstd)):
        pos = data.find(magic)
        while pos >= 0:
            elf = unpack(data[pos:])
            if elf.startswith(b"\x7fELF"):
                tmp = out.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(elf)
                tmp.replace(out)
                return
            pos = data.find(magic, pos + 1)
    raise LabSetupError(f"no xz- or zstd-compressed ELF found in {bzimage}")


def _module_order(modroot: Path, wanted: tuple[str, ...]) -> list[str]:
    """Relative .ko paths for ``wanted`` and their dependencies, dependencies first."""
    deps: dict[str, list[str]] = {}
    for line in (modroot / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
    by_name = {Path(m).name.split(".ko")[0].replace("-", "_"): m for m in deps}
    order: list[str] = []

    def visit(mod: str) -> None:
        if mod in order:
            return
        for dep in deps.get(mod, []):
            visit(dep)
        order.append(mod)

    for name in wanted:
        if name in by_name:  # absent means built in
            visit(by_name[name])
    return order


def _build_initramfs(root: Path, version: str, out: Path) -> None:
    if not BUSYBOX.exists():
        raise LabSetupError("busybox-static missing: run controller/lab/setup.sh")
    modroot = root / "lib" / "modules" / version
    order = _module_order(modroot, _INITRAMFS_MODULES)
    cpio = _Cpio()
    for d in ("bin", "dev", "proc", "sys", "lower", "rw", "newroot", "modules"):
        cpio.add_dir(d)
    cpio.add_file("bin/busybox", BUSYBOX.read_bytes(), 0o755)
    cpio.add_symlink("bin/sh", "busybox")
    names = []
    for rel in order:
        raw = (modroot / rel).read_bytes()
        if rel.endswith(".xz"):
            raw = lzma.decompress(raw)
        name = Path(rel).name.split(".ko")[0] + ".ko"
        cpio.add_file(f"modules/{name}", raw, 0o644)
        names.append(name)
    cpio.add_file("init", _stage1_script(names).encode(), 0o755)
    cpio.add_file("stage2", _stage2_script(modroot).encode(), 0o755)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(cpio.finish())
    tmp.replace(out)


def _stage1_script(modules: list[str]) -> str:
    """Initramfs /init: host / over 9p (read-only) + tmpfs overlay, then stage 2."""
    insmods = "\n".join(f"insmod /modules/{m}" for m in modules)
    return f"""#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t devtmpfs dev /dev
{insmods}
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 root /lower \\
  || {{ echo "dpl: 9p mount failed"; poweroff -f; }}
mount -t tmpfs -o mode=755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot \\
  || {{ echo "dpl: overlay mount failed"; poweroff -f; }}
cp /stage2 /newroot/dpl-init2
umount /proc
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh /dpl-init2
"""


def _stage2_script(modroot: Path) -> str:
    """PID 1 in the guest: fresh /run,/tmp,/root, modules, eth0, then the lab's sshd.

    ``dplstate`` (kernel command line) is the host path of the lab state dir; it is
    bind-mounted at /run/dpl/state before /tmp is hidden by a tmpfs.
    """
    return f"""#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/dpl/state /run/sshd /run/netns /run/lock /dev/pts /dev/shm
mount --bind "$dplstate" /run/dpl/state
mount -t tmpfs tmpfs /tmp
mount -t tmpfs -o mode=700 tmpfs /root
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mkdir -p /lib/modules/$(uname -r)
mount --bind {modroot} /lib/modules/$(uname -r)
hostname dpl-guest
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
for t in 1 2 3; do
  for f in ipv4 ipv6; do
    echo $((1024 << (t * 2))) > /proc/sys/net/$f/neigh/default/gc_thresh$t
  done
done
/usr/sbin/sshd -f /run/dpl/state/guest/sshd_config -o ListenAddress=10.0.2.15 \\
  -E /run/dpl/guest-sshd.log
echo "dpl: guest ready"
while :; do sleep 3600; done
"""


class _Cpio:
    """Minimal writer of the newc cpio format the kernel unpacks as initramfs."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        self._ino = 1

    def _entry(self, name: str, mode: int, data: bytes) -> None:
        hdr = "070701" + "".join(
            f"{v:08x}"
            for v in (self._ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0)
        )
        self._ino += 1
        self._buf.write(hdr.encode() + name.encode() + b"\0")
        self._pad()
        self._buf.write(data)
        self._pad()

    def _pad(self) -> None:
        self._buf.write(b"\0" * (-self._buf.tell() % 4))

    def add_dir(self, name: str) -> None:
        self._entry(name, 0o040755, b"")

    def add_file(self, name: str, data: bytes, perm: int) -> None:
        self._entry(name, 0o100000 | perm, data)

    def add_symlink(self, name: str, target: str) -> None:
        self._entry(name, 0o120777, target.encode())

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0, b"")
        return self._buf.getvalue()


def require_tools(*tools: str) -> None:
    """Raise :class:`LabSetupError` naming the first missing executable."""
    for tool in tools:
        if shutil.which(tool) is None and not Path(tool).exists():
            raise LabSetupError(f"{tool} not found: run controller/lab/setup.sh")
