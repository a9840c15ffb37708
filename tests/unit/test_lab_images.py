"""labs/images: the node images of a containerlab deployment, checked without Docker (no
Docker daemon runs here, so nothing is built): each Dockerfile's base is Debian 12, every
package it installs is in Debian 12's package lists (``apt-cache show``), the files it
copies exist, its start script passes ``sh -n`` and shellcheck, its sshd drop-in is valid
for Debian 12's sshd and lets no password in, and its FRR edits hit Debian's FRR files."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from controller.platforms.frr.driver import FRR_RELOAD
from tests.conftest import ROOT

IMAGES = ROOT / "labs" / "images"
NAMES = ["frr-switch", "gpu-server"]
NEEDED = {
    "frr-switch": {"frr", "frr-pythontools", "lldpd", "openssh-server", "iproute2", "python3"},
    "gpu-server": {"openssh-server", "python3", "iproute2", "lldpd"},
}


def instructions(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    lines = [
        line
        for line in (IMAGES / name / "Dockerfile").read_text().splitlines()
        if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def packages(name: str) -> set[str]:
    names: set[str] = set()
    for word, args in instructions(name):
        if word != "RUN":
            continue
        for command in re.split(r"&&|;", args):
            argv = shlex.split(command)
            if argv[:2] == ["apt-get", "install"]:
                names |= {a for a in argv[2:] if not a.startswith("-")}
    return names


def bookworm_lists() -> bool:
    os_release = Path("/etc/os-release")
    lists = Path("/var/lib/apt/lists")
    return (
        shutil.which("apt-cache") is not None
        and os_release.exists()
        and "VERSION_CODENAME=bookworm" in os_release.read_text()
        and any(lists.glob("*bookworm*_Packages*"))
    )


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_shape(name: str) -> None:
    steps = instructions(name)
    assert steps[0] == ("FROM", "debian:bookworm-slim"), "Debian 12"
    assert packages(name) >= NEEDED[name]
    for word, args in steps:
        if word == "COPY":
            source = args.split()[0]
            assert (IMAGES / name / source).is_file(), f"{name}: COPY {source}: no such file"
    entry = dict(steps)["ENTRYPOINT"]
    assert entry == '["/usr/bin/tini", "--", "/usr/local/sbin/dpctl-start"]'
    role = "switch" if name == "frr-switch" else "server"
    assert dict(steps)["CMD"] == f'["{role}"]'
    # no host key is baked into an image: each deployment brings its own
    assert any("rm -f /etc/ssh/ssh_host_*" in args for word, args in steps if word == "RUN")


@pytest.mark.skipif(not bookworm_lists(), reason="no Debian 12 package lists here (apt-get update)")
@pytest.mark.parametrize("name", NAMES)
def test_every_package_is_in_debian_12(name: str) -> None:
    wanted = sorted(packages(name))
    shown = subprocess.run(
        ["apt-cache", "show", *wanted], capture_output=True, text=True, check=False
    )
    found = set(re.findall(r"(?m)^Package: (\S+)$", shown.stdout))
    assert [p for p in wanted if p not in found] == []


def test_the_start_script_is_one_file_for_both_images() -> None:
    first, second = (IMAGES / n / "dpctl-start" for n in NAMES)
    assert first.read_bytes() == second.read_bytes()
    for n in NAMES:
        for extra in ("sshd_config", "lldpd.conf"):
            assert (IMAGES / n / extra).read_bytes() == (IMAGES / NAMES[0] / extra).read_bytes()


def test_start_script_parses() -> None:
    script = IMAGES / "frr-switch" / "dpctl-start"
    assert script.read_text().startswith("#!/bin/sh\n")
    result = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_start_script_passes_shellcheck() -> None:
    script = IMAGES / "frr-switch" / "dpctl-start"
    result = subprocess.run(
        ["shellcheck", "-s", "sh", str(script)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


def test_sshd_dropin_lets_no_password_in() -> None:
    options = {
        line.split()[0].lower(): line.split()[1].lower()
        for line in (IMAGES / "frr-switch" / "sshd_config").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert options["passwordauthentication"] == "no"
    assert options["kbdinteractiveauthentication"] == "no"
    assert options["permitrootlogin"] == "prohibit-password"
    assert options["hostkey"] == "/etc/ssh/ssh_host_ed25519_key"


@pytest.mark.skipif(
    shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists(),
    reason="openssh-server is not installed",
)
def test_sshd_accepts_the_dropin(tmp_path: Path) -> None:
    """Debian 12's sshd reads the drop-in as the image's sshd_config includes it."""
    key = tmp_path / "ssh_host_ed25519_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    dropin = (
        (IMAGES / "frr-switch" / "sshd_config")
        .read_text()
        .replace("/etc/ssh/ssh_host_ed25519_key", str(key))
    )
    config = tmp_path / "sshd_config"
    config.write_text(dropin)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's own privilege-separation dir
    result = subprocess.run(
        ["/usr/sbin/sshd", "-T", "-f", str(config)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    effective = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert effective["passwordauthentication"] == "no"
    assert effective["permitrootlogin"] == "without-password"


@pytest.mark.skipif(not Path("/etc/frr/daemons").exists(), reason="Debian's frr is not installed")
def test_frr_edits_hit_debians_files() -> None:
    """The Dockerfile's sed turns bgpd and bfdd on in Debian's /etc/frr/daemons, and
    frr-pythontools puts frr-reload.py where the FRR driver runs it."""
    run = next(a for w, a in instructions("frr-switch") if w == "RUN" and "/etc/frr/daemons" in a)
    sed = re.search(r"sed -i ((?:-e '[^']+' )+)/etc/frr/daemons", run)
    assert sed is not None
    expressions = re.findall(r"-e '([^']+)'", sed.group(1))
    daemons = Path("/etc/frr/daemons").read_text()
    for expression in expressions:
        _, old, new, _ = expression.split("/")
        pattern = re.compile(old.replace("^", "(?m)^", 1))
        assert pattern.search(daemons) or new in daemons, f"{old} not in Debian's daemons file"
        daemons = pattern.sub(new, daemons)
    assert re.search(r"(?m)^bgpd=yes$", daemons) and re.search(r"(?m)^bfdd=yes$", daemons)
    listing = subprocess.run(
        ["dpkg", "-L", "frr-pythontools"], capture_output=True, text=True, check=False
    ).stdout
    if listing:
        assert FRR_RELOAD in listing.splitlines()
