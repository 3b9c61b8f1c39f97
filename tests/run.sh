#!/bin/bash
# make check: everything that proves Layered ESP, on a fresh Debian bookworm
# machine.  Installs what it needs, builds (W=1, sparse, checkpatch), runs the
# host tests, then boots each test kernel in a VM and runs the kernel tests
# there.  One TAP-like line per test; the last line is "N passed, N failed".
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
	local desc=$1 f
	shift
	f=$(mktemp)
	if "$@" >"$f" 2>&1; then
		report OK "$desc"
	else
		report FAIL "$desc" "$f"
	fi
	cat "$f" >>"$log"
	rm -f "$f"
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
		esac
	done
}

step "host set-up (packages, kernels, virtme-ng)" tools/setup-host.sh
kvers=$(make -s --no-print-directory -f Makefile print-test-kvers 2>/dev/null)
step "test kernels are installed (6.1 and 6.12): $(echo $kvers)" \
	bash -c "[ \$(echo '$kvers' | wc -w) -ge 2 ]"
# The debug kernel is built once per configuration (16 minutes on 2 cores),
# then cached (tools/debug-kernel.sh): by default make check builds it if it
# is missing; LES_DEBUG_KERNEL=auto uses it only if built, =off leaves it out.
dkver=
case ${LES_DEBUG_KERNEL:-build} in
build)
	SECONDS=0
	step "debug kernel (linux-source-6.1: KASAN, kmemleak, lockdep, fault injection) built or cached" \
		tools/debug-kernel.sh
	echo "# debug kernel: ${SECONDS}s" | tee -a "$log"
	dkver=$(tools/debug-kernel.sh --rel 2>/dev/null) ;;
off) ;;
*)
	dkver=$(tools/debug-kernel.sh --rel 2>/dev/null) ;;
esac
if [ -z "$dkver" ]; then
	n=$((n + 1)); skipped=$((skipped + 1))
	echo "ok $n - VM tests on the debug kernel # SKIP not built (LES_DEBUG_KERNEL=${LES_DEBUG_KERNEL:-build}; make debug-kernel)"
fi
step "les.ko builds warning-free with W=1 and sparse-clean for every test kernel" make modules C=1
step "checkpatch.pl --strict finds no errors in kernel/" tools/checkpatch.sh
step "lesctl builds" make -C tools/lesctl
step "lesctl: blob round trip, errors and exit codes" tests/host/lesctl.sh
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

# Every VM test on the debug kernel first (it sees memory and locking bugs),
# then on Debian's own kernels.  KASAN and lockdep under emulation run the
# suite a few times slower: the debug run gets more time.
for k in $dkver $kvers; do
	vmlog=$out/vm-$k.txt
	SECONDS=0
	timeout=1500
	configs=${LES_CONFIGS:-}
	only=${LES_ONLY:-}
	accel_only=${LES_ACCEL_ONLY:-}
	if [ "$k" = "$dkver" ]; then
		timeout=3600
		# The testbed step proves the testbed's tooling on the first
		# Debian kernel (10 minutes here); the kernel paths it takes, the
		# debug kernel's accel, pep and modes steps take too.
		only=${LES_ONLY-'^(errors|roles|modes|nonces|pep-origin|bad-input|pep|hardening|mutation|accel|in-use|async)$'}
		# Of the engine's tests (80 to 95 s each here), those whose
		# kernel paths no other one takes: small buffer (fail-open), hop
		# misbehaves, upload, transport mode, NAT-T and IPv6 take the
		# engine's paths of the others (the opener's for UDP and IPv6 run
		# in steps pep and modes); accel off and ack key deleted drain as
		# keys deleted does.  They run on both Debian kernels.  So does
		# lost window update, which stalls here about 1 run in 3 (a known
		# fault, docs/accel.md 8); the probe's paths run in its
		# peer-buffer 0 variant.
		accel_only=${LES_ACCEL_ONLY-'^(accel on late|key gone|keys deleted|many flows|lost window update, no peer buffer|mutants)$'}
		# The 14 mode configurations run on both Debian kernels; the
		# debug kernel (8 minutes for all 14) takes one of each kind:
		# transport and tunnel, both families and across them, ESN, NAT-T,
		# the jumbo MTU (tunnel v4-in-v4).
		configs=${LES_CONFIGS-'^(transport v4|tunnel v4-in-v4|tunnel v4-in-v6 esn|transport v6 esn|tunnel v6-in-v4 esn udp-encap)$'}
	elif [ "$k" != "${kvers%% *}" ]; then
		# The testbed step proves the testbed's tooling, on the kernel
		# make demo boots (the first); the kernel paths of its fetches,
		# every other step takes on every kernel.
		only=${LES_ONLY-'^(errors|roles|modes|nonces|pep-origin|bad-input|pep|hardening|mutation|accel|in-use|async)$'}
	fi
	LES_ONLY=$only LES_ACCEL_ONLY=$accel_only LES_CONFIGS=$configs VM_TIMEOUT=$timeout tests/vm/vm-run.sh "$k" "$out/vm" -- tests/vm/guest.sh 2>&1 |
		tee "$vmlog" >/dev/null
	status=${PIPESTATUS[0]}
	echo "# $k: VM tests took ${SECONDS}s" | tee -a "$log"
	absorb "$k: " <"$vmlog"
	if [ "$status" -eq 97 ]; then
		report FAIL "$k: no kernel warning, oops or leak report during the tests" "$vmlog"
	elif [ "$status" -ne 0 ]; then
		report FAIL "$k: the VM test run completed (exit $status)" "$vmlog"
	else
		report OK "$k: the VM test run completed with a clean kernel log"
	fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
