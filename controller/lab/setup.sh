#!/usr/bin/env bash
# Install what the dpctl lab runtime needs (idempotent; Debian 12, run as root).
#  - apt packages: FRR, sshd, lldpd, iproute2, procps, and the default substrate's own:
#    User-Mode Linux (`user-mode-linux`: the lab's kernel run as a process of this machine)
#  - for a QEMU guest (DPCTL_LAB_SUBSTRATE=tcg or kvm, or when this machine cannot run UML):
#    QEMU, busybox-static, and a stock Debian kernel unpacked into a cache dir (never
#    installed into /boot): apt-get download + dpkg -x + depmod -b.
# Environment: DPCTL_LAB_SUBSTRATE (native, kvm, uml, tcg: what `dpctl lab` will force);
# DPCTL_KERNEL_CACHE (default /var/cache/dpctl/kernel); DPCTL_LAB_KERNEL, the Debian package
# of the QEMU guest's kernel (default linux-image-amd64, 6.1 on Debian 12; e.g.
# linux-image-6.12-amd64 from bookworm-security for a 6.12 guest). `dpctl lab` reads the
# same variables.
set -euo pipefail

CACHE="${DPCTL_KERNEL_CACHE:-/var/cache/dpctl/kernel}"
META="${DPCTL_LAB_KERNEL:-linux-image-amd64}"
SUBSTRATE="${DPCTL_LAB_SUBSTRATE:-}"
if [[ ! $META =~ ^linux-image-[a-z0-9][a-z0-9.+-]*$ ]]; then
    echo "DPCTL_LAB_KERNEL=$META: not a Debian kernel package name (linux-image-...)" >&2
    exit 2
fi
case "$SUBSTRATE" in
    "" | native | uml) qemu=0 ;;
    kvm | tcg) qemu=1 ;;
    *) echo "DPCTL_LAB_SUBSTRATE=$SUBSTRATE: not a lab substrate (native, kvm, uml or tcg)" >&2
       exit 2 ;;
esac
# UML's network is a tap device: without /dev/net/tun the lab falls back to QEMU TCG
[[ -e /dev/net/tun ]] || qemu=1
# the default keeps the cache entry name caches made before the choice existed use
if [[ $META == linux-image-amd64 ]]; then LINK=current; else LINK="current-$META"; fi
PKGS=(frr frr-pythontools openssh-server lldpd iproute2 procps kmod util-linux
      user-mode-linux)
((qemu)) && PKGS+=(qemu-system-x86 busybox-static cpio zstd)

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

# --- the QEMU guest's kernel ---------------------------------------------------
((qemu)) || exit 0
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
