#!/bin/bash
# make check: everything that proves Layered ESP, on a fresh Debian bookworm
# machine.  Installs what it needs, builds (W=1, sparse, checkpatch), runs the
# host tests, then boots each test kernel in a VM and runs the kernel tests
# there.  One TAP-like line per test; the last line is "N passed, N failed,
# N skipped".
# Exit status: 0 only if nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/tests/out
mkdir -p "$out"
log=$out/check.log
: > "$log"

passed=0
failed=0
skipped=0
n=0

report() {	# report OK|FAIL "description" [detail file]
	n=$((n + 1))
	if [ "$1" = OK ]; then
		passed=$((passed + 1))
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && [ -f "$3" ] && tail -n 30 "$3" | sed 's/^/#   /'
	fi
}

step() {	# step "description" command...: one test from one command
	local desc=$1 f t0=$SECONDS
	shift
	f=$(mktemp)
	if "$@" >"$f" 2>&1; then
		report OK "$desc"
	else
		report FAIL "$desc" "$f"
	fi
	cat "$f" >>"$log"
	rm -f "$f"
	echo "# took $((SECONDS - t0)) s" | tee -a "$log"
}

# Counts a TAP stream from the VM or pytest into ours.
absorb() {	# absorb prefix < tap
	local line
	while IFS= read -r line; do
		echo "$line" >>"$log"
		case "$line" in
		"ok "*"# SKIP"*)
			n=$((n + 1)); skipped=$((skipped + 1))
			echo "ok $n - $1${line#ok * - }" ;;
		"ok "*)
			n=$((n + 1)); passed=$((passed + 1))
			echo "ok $n - $1${line#ok * - }" ;;
		"not ok "*)
			n=$((n + 1)); failed=$((failed + 1))
			echo "not ok $n - $1${line#not ok * - }" ;;
		"#   "*)
			echo "$line" ;;
		"# step "*": "*" s"|"# accel "*": "*" s")
			echo "# $1${line#\# }" ;;
		esac
	done
}

step "host set-up (packages, kernels, virtme-ng)" tools/setup-host.sh
kvers=$(make -s --no-print-directory -f Makefile print-test-kvers 2>/dev/null)
step "test kernels are installed (6.1 and 6.12): $(echo $kvers)" \
	bash -c "[ \$(echo '$kvers' | wc -w) -ge 2 ]"
# The debug kernel is built once per configuration (17 minutes on 2 cores),
# then cached (tools/debug-kernel.sh): by default make check builds it if it
# is missing; LES_DEBUG_KERNEL=auto uses it only if built, =off leaves it out.
# A build runs in the background at the lowest priority while the host
# tests and Debian's kernels run (their VM waits on netem's 600 ms as often
# as it computes), and its own VM run comes last.
dkver=
dkbuild=
case ${LES_DEBUG_KERNEL:-build} in
build)
	if ! dkver=$(tools/debug-kernel.sh --rel 2>/dev/null); then
		dklog=$out/debug-kernel.txt
		nice -n 19 ionice -c 3 tools/debug-kernel.sh >"$dklog" 2>&1 &
		dkbuild=$!
		dkstart=$(date +%s)
		echo "# debug kernel: building in the background ($dklog)" | tee -a "$log"
	fi ;;
off) ;;
*)
	dkver=$(tools/debug-kernel.sh --rel 2>/dev/null) ;;
esac
if [ -z "$dkver$dkbuild" ]; then
	n=$((n + 1)); skipped=$((skipped + 1))
	echo "ok $n - VM tests on the debug kernel # SKIP not built (LES_DEBUG_KERNEL=${LES_DEBUG_KERNEL:-build}; make debug-kernel)"
fi
step "les.ko builds warning-free with W=1 and sparse-clean for every test kernel" make modules C=1
step "checkpatch.pl --strict finds no errors in kernel/" tools/checkpatch.sh
step "lesctl builds" make -C tools/lesctl
step "lesctl: blob round trip, errors and exit codes" tests/host/lesctl.sh
step "strongSwan plugin: builds for Debian's 5.9.8, Debian's charon loads it, other versions refused" strongswan-plugin/tests/host.sh
step "make deb: les-dkms, lesctl and strongswan-les build; lintian finds no error" make deb
step "fuzzing the pure protocol code (libFuzzer, ASan, UBSan, 30 s) finds nothing" tests/fuzz/run.sh

# Host tests: the reference codec and the pure C code it is checked against.
pytest_out=$out/pytest.txt
/usr/bin/python3 -m pytest -q -rA tests/host >"$pytest_out" 2>&1
# Not a pipeline into absorb: its counts must reach this shell.
absorb "host: " < <(grep -E "^(PASSED|FAILED|ERROR) " "$pytest_out" |
	sed -E 's/^PASSED (.*)/ok 0 - \1/; s/^(FAILED|ERROR) (.*)/not ok 0 - \2/')
if ! grep -qE "^PASSED " "$pytest_out"; then
	report FAIL "host tests ran" "$pytest_out"
fi

# Every VM test on Debian's own kernels, then on the debug kernel (it sees
# memory and locking bugs; KASAN and lockdep under emulation run the suite
# a few times slower: it gets more time).  What the debug kernel and the
# second Debian kernel leave out for time, each says in a SKIP line;
# FULL=1 (or LES_ONLY= LES_ACCEL_ONLY= LES_CONFIGS= LES_PARTS=, set and empty) runs
# everything on every kernel (docs/testing.md).
if [ -n "${FULL:-}" ]; then
	: "${LES_ONLY=}" "${LES_ACCEL_ONLY=}" "${LES_CONFIGS=}" "${LES_PARTS=}"
	# and the long form of the engine's scenarios (accel idle flows, hop outage)
	export LES_FULL=1
fi
# One mode configuration of each kind: transport and tunnel, both families
# and across them, ESN, NAT-T, the jumbo MTU (tunnel v4-in-v4).
each_kind='^(transport v4|tunnel v4-in-v4|tunnel v4-in-v6 esn|transport v6 esn|tunnel v6-in-v4 esn udp-encap)$'
# The other nine, which combine what those five take: Debian 6.1's.
other_kinds='^(?!(transport v4|tunnel v4-in-v4|tunnel v4-in-v6 esn|transport v6 esn|tunnel v6-in-v4 esn udp-encap)$)'
# The engine's tests, split between the two Debian kernels: each runs on
# one of them (FULL=1: on both).  The engine's code is the same on both;
# what differs is the kernel around it (xfrm's core, the endpoints' TCP),
# which every test meets.  Debian 6.12 runs the tests of a kernel path of
# their own (80 to 140 s each on the debug kernel, about 30 on Debian's):
# the drain (keys deleted), the replay guard (lost resend, late on lan,
# forged far seq, readers gone; replays of what it absorbed, absorbed replays), SACK marks taken back (sack reneging), a SYN on a flow
# that holds data (syn mid transfer), a payload-zone mutant entering the
# hub (lan mutants), the timer's resends of copies the receiver took
# (resends as sent), the window and lanes (two tunnels,
# paused reader, udp flood, lost window update's probe with no peer
# buffer), flows kept busy (flush) and through a hop outage, the tick's
# timed flows (idle flows), the flow dump (round trips); Debian 6.1 the
# others, which
# take those paths again in other settings (transport mode, NAT-T, IPv6,
# upload, a hop or a sender that reorders, the timer's resend) or only the engine's
# start (accel off, small buffer, short replay window), and rekeys (keyed by
# charon: step ike runs on 6.1 too).
each_path='^(accel on late|round trips|key gone|keys deleted|many flows|idle flows|hop outage|resends as sent|lost resend|late on lan|lost window update, no peer buffer|two tunnels|paused reader, busy tunnel|reader gone, busy tunnel|readers gone, busy tunnel|mutants|lan mutants|udp flood|forged far seq|absorbed replays|flush|namespace deleted|sack reneging|syn mid transfer)$'
other_paths='^(accel off|stalled host|in order|small buffer|ack key deleted|hop misbehaves|sender overtaken|short replay window|lost tail resend|upload|lost window update|peer buffer lowered|nat-t|transport|fragmenting hop|outer ip options|ipv6|gso|rekeys|rst out of window)$'
vm_tests() {	# vm_tests KVER: the kernel tests in a VM booted with KVER
	local k=$1 vmlog status timeout configs only accel_only parts t0 usual took pct
	vmlog=$out/vm-$k.txt
	t0=$SECONDS
	# How long the run took on this project's machine kind on
	# 2026-11-28 (docs/testing.md): it is stopped at twice that, times
	# how much slower the runs before it were on this host.
	usual=1550
	configs=${LES_CONFIGS-$other_kinds}
	only=${LES_ONLY:-}
	accel_only=${LES_ACCEL_ONLY-$other_paths}
	parts=${LES_PARTS:-}
	# The first Debian kernel (6.1, the one make demo boots) runs every
	# step, nine of the 14 mode configurations (which combine every
	# kind) and its half of the engine's tests.  The second takes every
	# kernel path once: one mode configuration of each kind, the other
	# five (the kernels differ in xfrm's core, which each kind takes;
	# the jumbo MTU is tunnel v4-in-v4's), the other half of the
	# engine's tests, no step testbed (it
	# proves the testbed's tooling; the kernel paths of its fetches, the
	# other steps take) and no step nonces (its checks are of values,
	# its SA paths the modes' own).
	if [ "$k" != "${kvers%% *}" ]; then
		only=${LES_ONLY-'^(errors|roles|modes|pep-origin|bad-input|pep|hardening|mutation|accel|in-use|async)$'}
		accel_only=${LES_ACCEL_ONLY-$each_path}
		configs=${LES_CONFIGS-$each_kind}
		usual=1070
	fi
	if [ "$k" = "$dkver" ]; then
		# KASAN, kmemleak and lockdep under emulation: 4 to 6 times
		# slower than Debian's kernels, and it runs last, once its build
		# beside Debian's runs is done (46 minutes on 2026-11-28): its
		# run is what make check's time has left (the larger subset of
		# that day took 39 minutes).  It runs the data path, the
		# opener, unload under traffic, the engine's newest paths and
		# async crypto once each, and the fault injection only it has
		# (docs/testing.md lists what it leaves to Debian's kernels).
		usual=1450
		only=${LES_ONLY-'^(errors|modes|pep|hardening|accel|in-use|async)$'}
		configs=${LES_CONFIGS-'^(tunnel v4-in-v4)$'}
		parts=${LES_PARTS-'^(pep (tunnel v4-in-v4|tcp state|unload)|hardening init faults)$'}
		accel_only=${LES_ACCEL_ONLY-'^(flush|namespace deleted|alloc faults|syn mid transfer|gso|stalled host)$'}
		# On a host slow enough that the subset might not end within
		# make check's budget (its usual time, scaled, plus a quarter),
		# its core: the load's fault injection and the opener; a SKIP
		# line says so.
		if [ -z "${LES_ONLY+x}${LES_PARTS+x}${LES_ACCEL_ONLY+x}${LES_CONFIGS+x}" ] &&
			[ $((usual * slow * 5 / 400)) -gt $((budget - SECONDS)) ]; then
			n=$((n + 1)); skipped=$((skipped + 1))
			echo "ok $n - $k: the debug kernel's subset but its core # SKIP the host ran at $slow % of its usual time: $(((budget - SECONDS) / 60)) of make check's $((budget / 60)) min left" |
				tee -a "$log"
			only='^(errors|pep|hardening)$'
			parts='^(pep tunnel v4-in-v4|hardening init faults)$'
			usual=750
		fi
	fi
	[ -n "${FULL:-}" ] && usual=$((usual * 3))
	timeout=$((2 * usual * slow / 100))
	LES_ONLY=$only LES_ACCEL_ONLY=$accel_only LES_CONFIGS=$configs LES_PARTS=$parts VM_TIMEOUT=$timeout tests/vm/vm-run.sh "$k" "$out/vm" -- tests/vm/guest.sh 2>&1 |
		tee "$vmlog" >/dev/null
	status=${PIPESTATUS[0]}
	took=$((SECONDS - t0))
	pct=$((took * 100 / usual))
	[ "$pct" -gt "$slow" ] && slow=$pct
	echo "# $k: VM tests took $took s, $pct % of their usual $usual s (stopped at $timeout s)" |
		tee -a "$log"
	absorb "$k: " <"$vmlog"
	if [ "$status" -eq 97 ]; then
		report FAIL "$k: no kernel warning, oops or leak report during the tests" "$vmlog"
	elif [ "$status" -ne 0 ]; then
		report FAIL "$k: the VM test run completed (exit $status)" "$vmlog"
	else
		report OK "$k: the VM test run completed with a clean kernel log"
	fi
}

slow=100	# percent: the slowest run so far against its usual time, at least 100
# CI gives make check 90 minutes: 85 of them, a few left for its own end.
budget=${LES_CHECK_BUDGET:-5100}
for k in $kvers; do
	vm_tests "$k"
done

# The dissector over what the VM runs captured (their mode tests' packets
# and mutation campaigns, with the keys they wrote beside them).
step "Wireshark dissector: the VM tests' captures and mutation campaigns, against lescodec" \
	env LES_VM_CAPTURES="$out/vm" /usr/bin/python3 -m pytest -q -rs tests/host/test_wireshark.py -k "vm_captures or vm_mutants"

# The packages as an operator installs them (apt, DKMS, modprobe, charon,
# apt remove): DKMS's build and depmod under emulation, for the running and
# the newest kernel, took 29 minutes in Debian 6.1's VM on 2026-11-28, so
# FULL=1 only; make check builds them and runs lintian above.
if [ -n "${FULL:-}" ]; then
	for k in $kvers; do
		pkglog=$out/vm-packages-$k.txt
		VM_TIMEOUT=$((3600 * slow / 100)) tests/vm/vm-run.sh "$k" "$out/vm" -- tests/vm/packages.sh 2>&1 |
			tee "$pkglog" >/dev/null
		status=${PIPESTATUS[0]}
		absorb "$k: " <"$pkglog"
		case $status in 0|1) ;; *) report FAIL "$k: the package test run completed with a clean kernel log (exit $status)" "$pkglog" ;; esac
	done
else
	n=$((n + 1)); skipped=$((skipped + 1))
	echo "ok $n - packages installed, used and removed in a VM (tests/vm/packages.sh) # SKIP FULL=1 only: up to 30 minutes per kernel"
fi

# The debug kernel's build, if one ran, has had Debian's runs to finish
# in: then les.ko for it, and its VM run.
if [ -n "$dkbuild" ]; then
	if wait "$dkbuild" && dkver=$(tools/debug-kernel.sh --rel 2>/dev/null); then
		report OK "debug kernel (linux-source-6.1: KASAN, kmemleak, lockdep, fault injection) built"
		step "les.ko builds warning-free with W=1 and sparse-clean for the debug kernel" \
			make modules C=1 BUILD_KVERS="$dkver"
	else
		dkver=
		report FAIL "debug kernel (linux-source-6.1: KASAN, kmemleak, lockdep, fault injection) built" "$dklog"
	fi
	echo "# debug kernel: built $(( $(date +%s) - dkstart ))s after it started" | tee -a "$log"
fi

if [ -n "$dkver" ]; then
	vm_tests "$dkver"
fi

echo "# make check took $((SECONDS / 60)) min $((SECONDS % 60)) s" | tee -a "$log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
