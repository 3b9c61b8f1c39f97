#!/bin/bash
# make bench: LES against ESP in one VM run per test kernel.  Ratios, not
# absolute numbers, are the result (software emulation, see docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/setup-host.sh
make -s modules lesctl >/dev/null
for k in ${KVERS:-$(make -s --no-print-directory print-test-kvers)}; do
	mkdir -p tests/out/bench
	tests/vm/vm-run.sh "$k" "$PWD/tests/out/bench" -- \
		/usr/bin/python3 tests/vm/bench_guest.py "build/$k/les.ko" "$PWD/tests/out/bench/$k"
done
