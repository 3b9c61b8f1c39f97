#!/bin/bash
# Runs inside the VM: every in-kernel test for this kernel.
set -u
cd "$(dirname "$0")/../.."
kver=$(uname -r)
ko=build/$kver/les.ko
out=${VM_OUTDIR:-/tmp/les-out}/$kver
mkdir -p "$out"
if [ ! -f "$ko" ]; then
	echo "not ok 1 - les.ko for $kver was built"
	exit 1
fi
exec /usr/bin/python3 tests/vm/les_tests.py --ko "$ko" --out "$out" ${LES_ONLY:+--only "$LES_ONLY"}
