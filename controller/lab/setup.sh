#!/usr/bin/env bash
# Install what the dpctl lab runtime needs (idempotent; Debian 12, run as root).
#  - apt packages: FRR, QEMU, busybox-static, sshd, lldpd, iproute2, procps
#  - a stock Debian kernel for the QEMU guest, unpacked into a cache dir (never
#    installed into /boot): apt-get download + dpkg -x + depmod -b.
# Environment: DPCTL_KERNEL_CACHE (default /var/cache/dpctl/kernel); DPCTL_LAB_KERNEL, the
# Debian package of the guest's kernel (default linux-image-amd64, 6.1 on Debian 12; e.g.
# linux-image-6.12-amd64 from bookworm-security for a 6.12 guest). `dpctl lab` reads the
# same variable to pick the kernel this script unpacked.
set -euo pipefail

CACHE="${DPCTL_KERNEL_CACHE:-/var/cache/dpctl/kernel}"
META="${DPCTL_LAB_KERNEL:-linux-image-amd64}"
if [[ ! $META =~ ^linux-image-[a-z0-9][a-z0-9.+-]*$ ]]; then
    echo "DPCTL_LAB_KERNEL=$META: not a Debian kernel package name (linux-image-...)" >&2
    exit 2
fi
# the default keeps the cache entry name caches made before the choice existed use
if [[ $META == linux-image-amd64 ]]; then LINK=current; else LINK="current-$META"; fi
PKGS=(frr frr-pythontools qemu-system-x86 busybox-static openssh-server lldpd
      iproute2 procps kmod cpio zstd)

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # Do not let package installation start services on this machine (the lab
    # starts its own daemons inside namespaces / the guest).
    policy=/usr/sbin/policy-rc.d
    created_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        created_policy=1
    fi
    apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
    ((created_policy)) && rm -f "$policy"
    ((${rc:-0} == 0)) || exit "${rc}"
fi

# --- guest kernel -----------------------------------------------------------
if [[ -e "$CACHE/$LINK/.ready" ]]; then
    echo "dpctl lab: kernel ready in $(readlink -f "$CACHE/$LINK")"
    exit 0
fi
cand=$(apt-cache policy "$META" | awk '/Candidate:/{print $2}')
if [[ -z $cand || $cand == "(none)" ]]; then apt-get update -q; fi
# a meta package depends on the versioned image; a versioned image is itself the package
pkg=$(apt-cache depends "$META" 2>/dev/null |
      awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [[ -z $pkg ]] && apt-cache show "$META" 2>/dev/null | grep -q '^Package: '; then
    pkg=$META
fi
[[ -n $pkg ]] || { echo "cannot resolve $META to a kernel image package" >&2; exit 1; }
dest="$CACHE/$pkg"
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q "$pkg")
rm -rf "$dest/root"
dpkg -x "$tmp"/*.deb "$dest/root"
kver=$(ls "$dest/root/lib/modules" | head -n1)
depmod -b "$dest/root" "$kver"
echo "$kver" >"$dest/kver"
touch "$dest/.ready"
ln -sfn "$dest" "$CACHE/$LINK"
echo "dpctl lab: kernel $kver ready in $dest"
