#!/bin/bash
# lesctl as scripts use it: output, JSON and exit codes.
set -u
cd "$(dirname "$0")/../.."
L=tools/lesctl/lesctl
fail=0
check() { if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; fail=1; fi; }

k2=$(printf '%072x' 7)
k1=$(printf '%072x' 9)
blob=$($L blob create endpoint k2 $k2 k1 $k1)
check "an endpoint blob is 84 bytes of hex after 0x" '[ ${#blob} -eq 170 ] && [ "${blob:0:10}" = 0x4c45534b ]'
check "the blob carries K2 then K1" '[ "${blob:26:72}" = "$k2" ] && [ "${blob:98:72}" = "$k1" ]'
check "the Python codec parses lesctl blobs identically" \
	'[ "$(/usr/bin/python3 -c "import sys; sys.path.insert(0, \"tools\"); from lescodec import blob; b = blob.parse_blob(bytes.fromhex(\"${blob#0x}\")); print(b.role.label, len(b.k2salt))" 2>&1)" = "endpoint 36" ]'
check "blob show names the role" '$L blob show $blob | grep -q "role endpoint keylen 32"'
check "-j blob show is JSON" '$L -j blob show $blob | /usr/bin/python3 -c "import json,sys; assert json.load(sys.stdin)[\"role\"] == \"endpoint\""'
check "random keys differ" '[ "$($L blob create pep-view)" != "$($L blob create pep-view)" ]'
check "pep-origin blobs carry the pep-id" '$L blob show $($L blob create pep-origin-in keylen 16 pep-id 7) | grep -q "pep-id 7"'
$L blob show 0x4c45534b02 >/dev/null 2>&1; rc=$?
check "a malformed blob exits 1" '[ $rc -eq 1 ]'
$L blob create nonsense >/dev/null 2>&1; rc=$?
check "an unknown role is a usage error (2)" '[ $rc -eq 2 ]'
$L blob create endpoint k2 abcd >/dev/null 2>&1; rc=$?
check "a short key is a usage error (2)" '[ $rc -eq 2 ]'
$L blob create pep-view pep-id 3 >/dev/null 2>&1; rc=$?
check "a pep-id on a pep-view blob is refused" '[ $rc -eq 2 ]'
# The generic netlink commands: usage errors before any netlink, and a
# clear error where les.ko is not loaded (this host cannot load modules).
for args in "pep set hook maybe" "pep set" "pep set max-flows -1" "pep set encap-port 70000" \
	"pep set frobs 1" "pep set backlog lots" "pep" "flows bogus" "stats extra"; do
	$L $args >/dev/null 2>&1; rc=$?
	check "lesctl $args is a usage error (2)" '[ $rc -eq 2 ]'
done
if [ ! -d /sys/module/les ]; then
	msg=$($L stats 2>&1); rc=$?
	check "without les.ko, lesctl stats exits 1 and says why" \
		'[ $rc -eq 1 ] && echo "$msg" | grep -q "les.ko is not loaded"'
fi
exit $fail
