#!/bin/bash
# Fuzz the pure protocol code for a bounded time (default 30 s) with
# libFuzzer + ASan + UBSan.  Exit 0 if no crash.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-30}
out=build/fuzz
mkdir -p "$out/corpus"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I kernel -o "$out/fuzz_wire" tests/fuzz/fuzz_wire.c kernel/les_wire.c
# Seed: the known-answer vectors' blobs and headers.
/usr/bin/python3 - "$out/corpus" <<'PY'
import json, sys, os
v = json.load(open("tests/host/vectors.json"))
def walk(o, n=[0]):
    if isinstance(o, dict):
        for x in o.values(): walk(x)
    elif isinstance(o, list):
        for x in o: walk(x)
    elif isinstance(o, str) and len(o) % 2 == 0 and len(o) >= 8:
        try:
            b = bytes.fromhex(o)
        except ValueError:
            return
        n[0] += 1
        open(os.path.join(sys.argv[1], f"seed{n[0]}"), "wb").write(b)
walk(v)
PY
"$out/fuzz_wire" -max_total_time="$secs" -max_len=700 "$out/corpus" 2>&1 | tail -n 5
