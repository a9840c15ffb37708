"""The lab's choice of guest kernel (DPCTL_LAB_KERNEL), unpacking a zstd-compressed kernel,
and the netlink messages of the servers' independent LACP control (the NIC module's
module_utils `gpu_nic_netlink.py` in the dpctl.fabric collection).

This machine's kernel has no bonding, so the module's request itself runs in the lab
(`tests/lab/test_fabric_lab.py`, which checks each server's report against the guest's
kernel); here its message building and parsing, against byte layouts from
include/uapi/linux/netlink.h, rtnetlink.h and if_link.h.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from controller.lab import kernel
from controller.lab.errors import LabSetupError
from controller.lab.fabric import gpu_nic_module, lacp_control_summary
from controller.resources import collection_python

NIC = gpu_nic_module()
NETLINK = collection_python("plugins.module_utils.gpu_nic_netlink")


def test_default_guest_kernel_keeps_the_cache_entry_it_always_had(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DPCTL_LAB_KERNEL", raising=False)
    assert kernel.guest_kernel_package() == "linux-image-amd64"
    assert kernel.kernel_link("linux-image-amd64") == "current"
    monkeypatch.setenv("DPCTL_LAB_KERNEL", "linux-image-6.12-amd64")
    assert kernel.guest_kernel_package() == "linux-image-6.12-amd64"
    assert kernel.kernel_link("linux-image-6.12-amd64") == "current-linux-image-6.12-amd64"


@pytest.mark.parametrize(
    "bad", ["6.12", "linux-image-../../etc", "linux-image-6.12 -amd64", "linux-headers-amd64"]
)
def test_a_kernel_that_is_no_package_name_is_refused_naming_the_variable(
    bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name reaches a path and apt: anything else is refused before either."""
    monkeypatch.setenv("DPCTL_LAB_KERNEL", bad)
    with pytest.raises(LabSetupError, match=r"DPCTL_LAB_KERNEL=.*not a Debian kernel package"):
        kernel.guest_kernel_package()


def test_a_chosen_kernel_not_unpacked_yet_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPCTL_LAB_KERNEL", "linux-image-6.12-amd64")
    with pytest.raises(LabSetupError) as info:
        kernel.guest_kernel(tmp_path)
    assert "run DPCTL_LAB_KERNEL=linux-image-6.12-amd64 controller/lab/setup.sh" in str(info.value)


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd CLI missing (.ci/setup installs)")
def test_a_zstd_compressed_kernel_is_unpacked(tmp_path: Path) -> None:
    """Debian's 6.12 packs its vmlinux with zstd (6.1: xz): a bzImage is a boot stub, the
    compressed ELF, then more; only the ELF is kept."""
    elf = b"\x7fELF" + bytes(range(256)) * 64
    packed = subprocess.run(["zstd", "-q", "-c"], input=elf, capture_output=True, check=True)
    bzimage = tmp_path / "vmlinuz"
    bzimage.write_bytes(b"MZ" + bytes(500) + packed.stdout + b"trailer" * 10)
    kernel._extract_vmlinux(bzimage, tmp_path / "vmlinux")
    assert (tmp_path / "vmlinux").read_bytes() == elf
    (tmp_path / "junk").write_bytes(b"MZ" + bytes(500))
    with pytest.raises(LabSetupError, match="no xz- or zstd-compressed ELF"):
        kernel._extract_vmlinux(tmp_path / "junk", tmp_path / "out")


def _getlink_reply(info_data: bytes) -> bytes:
    """An RTM_NEWLINK answer to RTM_GETLINK: nlmsghdr, ifinfomsg, IFLA_IFNAME, then
    IFLA_LINKINFO with the bond's IFLA_INFO_DATA."""
    linkinfo = NETLINK.nl_attr(
        NETLINK.IFLA_LINKINFO | NETLINK.NLA_F_NESTED,
        NETLINK.nl_attr(NETLINK.IFLA_INFO_KIND, b"bond\0")
        + NETLINK.nl_attr(NETLINK.IFLA_INFO_DATA | NETLINK.NLA_F_NESTED, info_data),
    )
    body = struct.pack("BxHiII", 0, 1, 7, 0, 0) + NETLINK.nl_attr(3, b"gpu1\0") + linkinfo
    return struct.pack("IHHII", 16 + len(body), 16, 0, 1, 0) + body


def test_the_read_back_finds_coupled_control_among_the_bonds_options() -> None:
    min_links = NETLINK.nl_attr(18, struct.pack("I", 1))
    cc = NETLINK.IFLA_BOND_COUPLED_CONTROL
    for value in (0, 1):
        data = min_links + NETLINK.nl_attr(cc, bytes([value]))
        assert NETLINK.coupled_control(_getlink_reply(data)) == value
    # a kernel without the option reports no such attribute
    assert NETLINK.coupled_control(_getlink_reply(min_links)) is None


def test_attributes_are_padded_to_four_bytes_and_read_back() -> None:
    packed = NETLINK.nl_attr(1, b"bond\0") + NETLINK.nl_attr(32, b"\0")
    assert len(packed) == 12 + 8
    assert NETLINK.nl_attrs(packed) == {1: b"bond\0", 32: b"\0"}
    assert NETLINK.nl_attrs(b"\x02\x00") == {}  # truncated: nothing, no exception


def test_a_netlink_error_reply_gives_its_errno() -> None:
    def error(code: int) -> bytes:
        header = struct.pack("IHHII", 36, NETLINK.NLMSG_ERROR, 0, 1, 0)
        return header + struct.pack("i", code) + bytes(16)

    assert NETLINK.nl_ack_error(error(0)) == 0
    assert NETLINK.nl_ack_error(error(-16)) == 16  # EBUSY: the bond is up


def test_a_servers_setup_report_names_its_lacp_control() -> None:
    assert lacp_control_summary("") == "provisioned"
    assert (
        lacp_control_summary("gpu1 independent\ngpu2 independent\n")
        == "provisioned; LACP control: independent"
    )
    coupled = "gpu1 coupled (kernel has no coupled_control)\n"
    assert lacp_control_summary(coupled + "some other line\n") == (
        "provisioned; LACP control: coupled (kernel has no coupled_control)"
    )
