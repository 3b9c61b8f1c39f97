#!/bin/bash
# The main job, in one VM: (1) who reads what of an LES tunnel, then (2) the
# satellite testbed: transfer times over GEO with clear TCP, ESP, LES, LES
# with PEPs observing and LES through accelerating PEPs, as tables and a
# chart (docs/testbed.md, docs/accel.md).
#   make demo           geo and geo-lossy, 1 MB and 10 MB: about ten minutes
#   make demo FULL=1    every profile and workload, medians of three
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-host.sh
kver=${KVER:-$(make -s --no-print-directory print-test-kvers | awk '{print $1}')}
# The testbed's budget: it starts no fetch that would end past it, and says
# what it left for another run; the VM's limit is the budget, the boot and
# the zone demo (about 5 minutes under emulation) and a margin.
set=demo budget=${LES_DEMO_BUDGET:-1500}
if [ -n "${FULL:-}" ] && [ "${FULL:-0}" != 0 ]; then
	set=full budget=${LES_DEMO_BUDGET:-20000}
fi
timeout=$((budget + 900))
make -s module KVER="$kver" >/dev/null
make -s -C tools/lesctl >/dev/null
# Mode les-ike's plugin (the testbed leaves the mode out, saying why, if
# it cannot be built).
make -s -C strongswan-plugin >/dev/null 2>&1 ||
	echo "make demo: the strongSwan plugin did not build: mode les-ike left out"
out=$PWD/tests/out/demo
mkdir -p "$out"
rm -f "$out/results.jsonl"
rc=0
VM_TIMEOUT=$timeout tests/vm/vm-run.sh "$kver" "$out" -- \
	tools/demo-guest.sh "build/$kver/les.ko" "$out" "$set" "$budget" || rc=$?
if [ -s "$out/results.jsonl" ]; then
	echo
	echo "== 2. Transfer times over the satellite testbed"
	/usr/bin/python3 tools/testbed.py report "$out/results.jsonl" --png "$out/testbed.png"
	echo "results: $out/results.jsonl"
fi
exit "$rc"
