#!/bin/bash
# Install everything the build, the VM tests and the demo need on a Debian
# bookworm host.  Idempotent: a second run only checks.
set -euo pipefail

stamp=/var/lib/les-setup.stamp
want_version=12

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_version" ] && [ -z "${LES_FORCE_SETUP:-}" ]; then
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# The 6.12 kernel comes from bookworm-backports (and, lately, bookworm-security).
if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "deb http://deb.debian.org/debian bookworm-backports main" |
		$SUDO tee /etc/apt/sources.list.d/les-backports.list >/dev/null
fi

pkgs=(build-essential bc flex bison kmod libelf-dev sparse clang libclang-rt-14-dev
	libmnl-dev libssl-dev pkg-config
	qemu-system-x86 busybox-static
	iproute2 iperf3 tcpdump nftables ethtool procps iputils-ping
	nginx-light curl python3-matplotlib
	python3 python3-pip python3-venv python3-cryptography python3-pytest
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	dkms debhelper dh-dkms fakeroot lintian
	tshark libwireshark-dev libglib2.0-dev libgcrypt20-dev
	strongswan-charon strongswan-swanctl strongswan-pki charon-systemd
	libstrongswan-standard-plugins dpkg-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# A first run installs about 1 GB (two kernels, QEMU, the kernel source):
# minutes on a good mirror, 20 or more on a slow one.  Said, not hidden.
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]} (and what they depend on)"
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null

# virtme-ng boots the test kernels; it is not packaged for bookworm.
if ! command -v vng >/dev/null; then
	/usr/bin/python3 -m pip install -q --break-system-packages virtme-ng
fi

# Bookworm's iproute2 (6.1) cannot say "dir in|out" for an SA; the tests use
# backports' unmodified ip binary for that one check, without installing it.
bpo_ip=/opt/les/iproute2-bpo
if [ ! -x "$bpo_ip/bin/ip" ]; then
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -t bookworm-backports iproute2 >/dev/null 2>&1) &&
		$SUDO mkdir -p "$bpo_ip" &&
		dpkg-deb -x "$tmp"/iproute2_*.deb "$tmp/x" &&
		$SUDO cp -a "$tmp/x/bin" "$tmp/x/usr/lib" "$bpo_ip/" 2>/dev/null ||
		echo "setup: backports iproute2 not available; SA direction tests will be skipped" >&2
	rm -rf "$tmp"
fi

echo "$want_version" | $SUDO tee "$stamp" >/dev/null
echo "setup: done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
