#!/bin/bash
# Inside the demo's VM (tools/demo.sh): the zone demo, then the testbed.
# Usage: demo-guest.sh LES_KO OUTDIR SET BUDGET
set -u
ko=$1 out=$2 set=$3 budget=$4
/usr/bin/python3 tests/vm/demo_guest.py "$ko" "$out"
zones=$?
echo
echo "== 2. The satellite testbed (set $set): client - remote PEP - GEO hop - hub PEP - server"
/usr/bin/python3 tools/testbed.py run --ko "$ko" --out "$out" --set "$set" --budget "$budget"
testbed=$?
[ "$zones" = 0 ] && [ "$testbed" = 0 ]
