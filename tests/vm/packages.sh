#!/bin/bash
# packages.sh - runs inside a VM (tests/vm/vm-run.sh): the Debian packages of
# build/deb/ installed and removed as an operator would, on the VM's kernel.
#
#   apt install ./les-dkms_*.deb ./lesctl_*.deb   DKMS builds les.ko for this
#       kernel, modprobe loads it (with esp4, esp6, xfrm_user: the softdep),
#       lesctl talks to it and an LES SA installs with a blob it made;
#   apt install ./strongswan-les_*.deb            Debian's charon loads it;
#   apt remove les-dkms lesctl, apt purge strongswan-les
#       no module, no DKMS tree, no file of theirs is left.
#
# The guest's /etc, /usr, /var and /lib are tmpfs overlays: nothing reaches
# the host.  Prints TAP; exit 0 only if every check passed.
set -u
cd "$(dirname "$0")/../.."
kver=$(uname -r)
out=${VM_OUTDIR:-/tmp/les-out}/packages-$kver
mkdir -p "$out"
n=0
failed=0
ok() {	# ok STATUS "description" [log]
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - packages $kver: $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - packages $kver: $2"
		[ -n "${3:-}" ] && [ -f "$3" ] && tail -n 25 "$3" | sed 's/^/#   /'
	fi
}
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o Dpkg::Use-Pty=0)
# apt takes a local package by its absolute path.
debs=("$PWD"/build/deb/les-dkms_*_all.deb "$PWD"/build/deb/lesctl_*_amd64.deb)
plugin_deb=("$PWD"/build/deb/strongswan-les_*_amd64.deb)
version=$(dpkg-deb -f "${debs[0]}" Version 2>/dev/null)
if [ -z "$version" ] || [ ! -f "${debs[1]}" ] || [ ! -f "${plugin_deb[0]}" ]; then
	ok 1 "the packages are in build/deb/ (make deb)"
	exit 1
fi

# man-db's trigger re-indexes every manual page, which under emulation over
# the guest's 9p root takes longer than the rest (a Debian setting:
# man-db/auto-update false).
rm -f /var/lib/man-db/auto-update

# 1. Install: DKMS builds les.ko for this kernel (and for the newest one
# installed, as its postinst does).
t0=$SECONDS
apt-get install "${apt_opts[@]}" "${debs[@]}" >"$out/install.log" 2>&1
ok $? "apt install les-dkms lesctl $version (DKMS build: $((SECONDS - t0)) s)" "$out/install.log"
dkms status les >"$out/dkms-status.txt" 2>&1
grep -q "^les/$version, $kver, x86_64: installed" "$out/dkms-status.txt"
ok $? "dkms status: les/$version installed for $kver" "$out/dkms-status.txt"
ko=$(modinfo -n les 2>/dev/null)
[ "$(modinfo -F version les 2>/dev/null)" = "$version" ] &&
	case $ko in /lib/modules/$kver/updates/dkms/les.ko*) true ;; *) false ;; esac
ok $? "modinfo les: version $version, from DKMS's updates/dkms ($ko)"

# 2. Load and use it, as the README's "Keying an LES SA by hand" does.
modprobe les >"$out/modprobe.log" 2>&1 && grep -q "^les " /proc/modules &&
	grep -q "^esp4 " /proc/modules && grep -q "^xfrm_user " /proc/modules
ok $? "modprobe les loads it, after esp4 and xfrm_user (softdep)" "$out/modprobe.log"
[ "$(command -v lesctl)" = /usr/sbin/lesctl ] && lesctl -V | grep -q "^lesctl $version,"
ok $? "lesctl -V: $(lesctl -V 2>&1)"
lesctl -j stats >"$out/stats.json" 2>&1 &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit("LesOutPackets" not in d)' \
		"$out/stats.json"
ok $? "lesctl -j stats: the module's counters as JSON" "$out/stats.json"
blob=$(lesctl blob create endpoint dir i2r)
ip xfrm state add src 192.0.2.1 dst 198.51.100.1 proto esp spi 0x1000 reqid 1 \
	mode tunnel aead 'rfc4106(gcm(aes))' "$blob" 128 replay-window 4096 flag esn \
	>"$out/xfrm.log" 2>&1 && [ "$(cat /sys/module/les/refcnt)" -gt 0 ]
ok $? "ip xfrm state add with lesctl's blob: an LES SA, held by les.ko" "$out/xfrm.log"
ip xfrm state flush

# 3. The plugin, with Debian's charon.
t0=$SECONDS
apt-get install "${apt_opts[@]}" "${plugin_deb[0]}" >"$out/install-plugin.log" 2>&1
ok $? "apt install strongswan-les $version ($((SECONDS - t0)) s)" "$out/install-plugin.log"
/usr/lib/ipsec/charon >"$out/charon.log" 2>&1 &
charon=$!
for _ in $(seq 60); do
	swanctl --stats >"$out/swanctl-stats.txt" 2>&1 && break
	sleep 1
done
grep -qw "les" <(grep -A3 "^loaded plugins" "$out/swanctl-stats.txt")
ok $? "Debian's charon loads the plugin (swanctl --stats lists les)" "$out/swanctl-stats.txt"
kill "$charon"
wait "$charon" 2>/dev/null

# 4. Remove: nothing of theirs is left.
files=$(dpkg -L les-dkms lesctl strongswan-les 2>/dev/null | sort -u)
rmmod les
apt-get remove "${apt_opts[@]}" les-dkms lesctl >"$out/remove.log" 2>&1
ok $? "apt remove les-dkms lesctl" "$out/remove.log"
apt-get purge "${apt_opts[@]}" strongswan-les >>"$out/remove.log" 2>&1
ok $? "apt purge strongswan-les" "$out/remove.log"
# What stays is a directory another package owns too (/usr/sbin, ...).
left=$(for f in $files; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done)
left+=$(find /lib/modules -name 'les.ko*' 2>/dev/null)
left+=$(ls -d /var/lib/dkms/les /usr/src/les-* 2>/dev/null)
echo "$left" >"$out/left.txt"
[ -z "$left" ]
ok $? "nothing left: no les.ko under /lib/modules, no DKMS tree, no file of the packages" \
	"$out/left.txt"
! modprobe -n les 2>/dev/null
ok $? "modprobe finds no les module any more"

echo "# packages $kver: $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
