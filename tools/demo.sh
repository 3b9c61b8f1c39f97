#!/bin/bash
# The main job: a demo, in a VM, of what Layered ESP shows each party.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-host.sh
kver=${KVER:-$(make -s --no-print-directory print-test-kvers | awk '{print $1}')}
make -s module KVER="$kver" >/dev/null
make -s -C tools/lesctl >/dev/null
mkdir -p tests/out/demo
exec tests/vm/vm-run.sh "$kver" "$PWD/tests/out/demo" -- \
	/usr/bin/python3 tests/vm/demo_guest.py "build/$kver/les.ko" "$PWD/tests/out/demo"
