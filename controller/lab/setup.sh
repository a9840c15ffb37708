#!/usr/bin/env bash
# Install what the dpctl lab runtime needs (idempotent; Debian 12, run as root).
#  - apt packages: FRR, QEMU, busybox-static, sshd, lldpd, iproute2, procps
#  - a stock Debian kernel for the QEMU guest, unpacked into a cache dir (never
#    installed into /boot): apt-get download + dpkg -x + depmod -b.
# Environment: DPCTL_KERNEL_CACHE (default /var/cache/dpctl/kernel).
set -euo pipefail

CACHE="${DPCTL_KERNEL_CACHE:-/var/cache/dpctl/kernel}"
PKGS=(frr frr-pythontools qemu-system-x86 busybox-static openssh-server lldpd
      iproute2 procps kmod cpio)

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
if [[ -e "$CACHE/current/.ready" ]]; then
    echo "dpctl lab: kernel ready in $(readlink -f "$CACHE/current")"
    exit 0
fi
cand=$(apt-cache policy linux-image-amd64 | awk '/Candidate:/{print $2}')
if [[ -z $cand || $cand == "(none)" ]]; then apt-get update -q; fi
pkg=$(apt-cache depends linux-image-amd64 |
      awk '/Depends: linux-image-[0-9]/{print $2; exit}')
[[ -n $pkg ]] || { echo "cannot resolve linux-image-amd64" >&2; exit 1; }
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
ln -sfn "$dest" "$CACHE/current"
echo "dpctl lab: kernel $kver ready in $dest"
