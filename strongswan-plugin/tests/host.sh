#!/bin/bash
# Host test of the strongSwan plugin (no VM, no les.ko): it builds warning-
# free, Debian's own /usr/lib/ipsec/charon loads it (in a network and mount
# namespace of its own, with its own strongswan.conf, /run and plugin
# directory; nothing is installed on the host), it takes the kernel-ipsec
# slot in front of kernel-netlink, swanctl accepts les128/les256 proposals,
# and a build claiming another strongSwan version is refused with a log line
# naming both versions while charon still starts.  Prints TAP; exit 0 only
# if every check passed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/les-sw-host.XXXXXX)
ns=les-swhost-$$
n=0
failed=0
charon_pid=

ok() {	# ok CONDITION-STATUS "description" [detail file]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && [ -f "$3" ] && tail -n 20 "$3" | sed 's/^/#   /'
	fi
}

cleanup() {
	[ -n "$charon_pid" ] && kill "$charon_pid" 2>/dev/null && wait "$charon_pid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "/etc/netns/$ns" "$tmp"
}
trap cleanup EXIT

# start_charon PLUGIN.so DIR: charon in $ns with PLUGIN.so among Debian's
# plugins; its /run is DIR/run, its log DIR/run/charon.log.
start_charon() {
	local so=$1 dir=$2
	mkdir -p "$dir/run" "$dir/plugins"
	cp -a /usr/lib/ipsec/plugins/. "$dir/plugins/"
	cp "$so" "$dir/plugins/libstrongswan-les.so"
	cat > "/etc/netns/$ns/strongswan.conf" <<-CONF
	charon {
		load_modular = yes
		plugins {
			include /etc/strongswan.d/charon/*.conf
			les {
				load = 10
			}
		}
		filelog {
			les {
				path = /run/charon.log
				flush_line = yes
				default = 1
				knl = 2
				lib = 2
			}
		}
	}
	CONF
	ip netns exec "$ns" sh -c "mount --bind '$dir/run' /run &&
		mount --bind '$dir/plugins' /usr/lib/ipsec/plugins &&
		exec /usr/lib/ipsec/charon" >"$dir/stderr" 2>&1 &
	charon_pid=$!
	for _ in $(seq 300); do
		grep -qs "loaded plugins" "$dir/run/charon.log" &&
			[ -S "$dir/run/charon.vici" ] && return 0
		kill -0 "$charon_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

stop_charon() {
	kill "$charon_pid" 2>/dev/null
	wait "$charon_pid" 2>/dev/null
	charon_pid=
}

swanctl_ns() {	# swanctl_ns DIR ARGS...: swanctl against the charon of DIR
	local dir=$1
	shift
	swanctl "$@" --uri "unix://$dir/run/charon.vici"
}

mkdir -p "/etc/netns/$ns"
ip netns add "$ns"
ip -n "$ns" link set lo up

# 1. Builds clean.
make -C "$here" clean >/dev/null
make -C "$here" WERROR=1 >"$tmp/build.log" 2>&1
ok $? "the plugin builds with -Wall -Wextra -Werror against Debian's 5.9.8 source" "$tmp/build.log"
so=$here/libstrongswan-les.so

# 2. Debian's charon loads it.
d=$tmp/load
start_charon "$so" "$d"
ok $? "Debian's charon starts with the plugin" "$d/stderr"
log=$d/run/charon.log
grep -E "loaded plugins: .* les( |$)" "$log" >/dev/null
ok $? "charon's log lists les among the loaded plugins" "$log"
grep -q "LES wraps kernel-netlink's IPsec interface" "$log"
ok $? "the plugin's kernel interface wraps kernel-netlink's" "$log"
swanctl_ns "$d" --stats >"$tmp/stats" 2>&1 && grep -qE "loaded plugins: .* les( |$)" "$tmp/stats"
ok $? "swanctl --stats (vici) lists les too" "$tmp/stats"

# 3. The private transforms are proposal keywords.
mkdir -p "$tmp/swanctl"
cat > "$tmp/swanctl/swanctl.conf" <<CONF
connections {
	les {
		remote_addrs = 192.0.2.2
		local {
			auth = psk
		}
		remote {
			auth = psk
		}
		children {
			les {
				esp_proposals = les256,les128,aes256gcm16
			}
		}
	}
}
CONF
swanctl_ns "$d" --load-conns --file "$tmp/swanctl/swanctl.conf" >"$tmp/conns" 2>&1 &&
	swanctl_ns "$d" --list-conns >>"$tmp/conns" 2>&1 && grep -q "loaded connection 'les'" "$tmp/conns"
ok $? "swanctl loads a CHILD_SA with esp_proposals = les256,les128,aes256gcm16" "$tmp/conns"
cat > "$tmp/swanctl/bad.conf" <<CONF
connections {
	bad {
		remote_addrs = 192.0.2.2
		children {
			bad {
				esp_proposals = les512
			}
		}
	}
}
CONF
! swanctl_ns "$d" --load-conns --file "$tmp/swanctl/bad.conf" >"$tmp/conns-bad" 2>&1
ok $? "and refuses an unknown keyword (les512): the check above can fail" "$tmp/conns-bad"
stop_charon
grep -q "charon.*stopp\|daemon.*stop\|SIGTERM received, shutting down" "$log"
ok $? "charon stops cleanly with the plugin" "$log"

# 4. A plugin built for another strongSwan version refuses to load.
make -C "$here" B="$tmp/refuse" LES_BUILT_FOR=5.9.7 >"$tmp/build-refuse.log" 2>&1
ok $? "a variant claiming strongSwan 5.9.7 builds" "$tmp/build-refuse.log"
d=$tmp/refuse-run
start_charon "$tmp/refuse/libstrongswan-les.so" "$d"
ok $? "charon still starts with it" "$d/stderr"
log=$d/run/charon.log
grep -q "les plugin built for strongSwan 5.9.7 (Debian source 5.9.8-5+deb12u5), running on 5.9.8 (5.9.8-" "$log"
ok $? "the log says which version it was built for and which it runs on" "$log"
grep -E "loaded plugins: " "$log" | grep -vqE " les( |$)" &&
	grep -qE "loaded plugins: .*kernel-netlink" "$log"
ok $? "les is not loaded; kernel-netlink serves alone" "$log"
stop_charon

# 5. The notify and the PEP agreement, the fourth message's content and
# the PEP's policy, outside charon, under ASan and UBSan.
for t in notify keymsg; do
	make -C "$here" B="$tmp/unit" WERROR=1 "$tmp/unit/${t}_test" >"$tmp/unit-$t.log" 2>&1
	ok $? "${t}_test builds (ASan, UBSan)" "$tmp/unit-$t.log"
	"$tmp/unit/${t}_test" >"$tmp/unit-$t.out" 2>"$tmp/unit-$t.err"
	status=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) ok 0 "$t: ${line#ok - }" ;;
		"not ok - "*) ok 1 "$t: ${line#not ok - }" "$tmp/unit-$t.err" ;;
		esac
	done <"$tmp/unit-$t.out"
	ok $status "${t}_test exits 0, no sanitizer report" "$tmp/unit-$t.err"
done

# 6. The PEPs' blobs the plugin derives (charon's HMAC-SHA256) are the
# bytes lesctl derives (OpenSSL's HKDF), for each key length and direction.
lesctl=$here/../tools/lesctl/lesctl
make -C "$here" B="$tmp/unit" WERROR=1 "$tmp/unit/blob_test" >"$tmp/unit-blob.log" 2>&1
ok $? "the blob derivation's test builds (ASan, UBSan)" "$tmp/unit-blob.log"
make -s -C "$here/../tools/lesctl" >>"$tmp/unit-blob.log" 2>&1
for keylen in 16 24 32; do
	for dir in i2r r2i; do
		blob=$("$lesctl" blob create endpoint keylen $keylen dir $dir)
		"$lesctl" blob derive "$blob" pep-id 1 pep-id 4294967295 >"$tmp/want" 2>&1 &&
			"$tmp/unit/blob_test" "$blob" 1 4294967295 >"$tmp/got" 2>&1 &&
			[ "$(wc -l <"$tmp/got")" = 5 ] && cmp -s "$tmp/want" "$tmp/got"
		ok $? "keylen $keylen $dir: the plugin's pep-view and pep-origin blobs are lesctl blob derive's" "$tmp/got"
	done
done

echo "# strongswan-plugin host: $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
