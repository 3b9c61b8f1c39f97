#!/bin/bash
# lesctl as scripts use it: v3 blobs (docs/protocol.md sections 1, 2.1, 6),
# output, JSON and exit codes, and lesctl's derivations against two Python
# references: a textbook HKDF written here, and tools/lescodec.
set -u
cd "$(dirname "$0")/../.."
L=tools/lesctl/lesctl
PY=/usr/bin/python3
fail=0
n_ok=0
n_fail=0
check() {
	if eval "$2"; then
		echo "ok - $1"; n_ok=$((n_ok + 1))
	else
		echo "not ok - $1"; fail=1; n_fail=$((n_fail + 1))
	fi
}
# rc CMD...: the exit code of lesctl CMD, output thrown away.
rc() { $L "$@" >/dev/null 2>&1; echo $?; }
# Bytes of a 0x hex blob; its 12-byte header as hex.
nbytes() { local h=${1#0x}; echo $((${#h} / 2)); }
hdr() { echo "${1:2:24}"; }
# Hex of N bytes, each the byte B.
fill() { local i s=; for ((i = 0; i < $1; i++)); do s+=$2; done; echo "$s"; }

# ---- blob create: lengths, header fields, layout ------------------------
for kl in 16 24 32; do
	case $kl in 16) ep=84 other=32 ;; 24) ep=100 other=40 ;; 32) ep=116 other=48 ;; esac
	b=$($L blob create endpoint keylen $kl)
	check "keylen $kl: an endpoint blob is $ep bytes" '[ "$(nbytes $b)" = $ep ] && [ "${b:0:2}" = 0x ]'
	check "keylen $kl: endpoint header LESK 3 1 $kl, flags 0, pep_id 0" \
		'[ "$(hdr $b)" = "4c45534b0301$(printf %02x $kl)0000000000" ]'
	b=$($L blob create pep-view keylen $kl)
	check "keylen $kl: a pep-view blob is $other bytes" '[ "$(nbytes $b)" = $other ]'
	check "keylen $kl: pep-view header" '[ "$(hdr $b)" = "4c45534b0302$(printf %02x $kl)0000000000" ]'
	b=$($L blob create pep-origin-in keylen $kl pep-id 7)
	check "keylen $kl: a pep-origin-in blob is $other bytes, pep_id 7" \
		'[ "$(nbytes $b)" = $other ] && [ "$(hdr $b)" = "4c45534b0303$(printf %02x $kl)0000000007" ]'
	b=$($L blob create pep-origin-out keylen $kl pep-id 0xfffffffe)
	check "keylen $kl: a pep-origin-out blob is $other bytes, pep_id 0xfffffffe" \
		'[ "$(nbytes $b)" = $other ] && [ "$(hdr $b)" = "4c45534b0304$(printf %02x $kl)00fffffffe" ]'
done
check "keylen defaults to 32" '[ "$(nbytes $($L blob create endpoint))" = 116 ]'

k2=$(fill 32 07)00000007
k1=$(fill 32 09)00000009
kp=$(fill 32 0b)
blob=$($L blob create endpoint k2 $k2 k1 $k1 kp $kp)
check "an endpoint blob carries K2, K1, KP in that order" \
	'[ "$blob" = "0x4c45534b0301200000000000$k2$k1$kp" ]'
blob_r=$($L blob create endpoint dir r2i k2 $k2 k1 $k1 kp $kp)
check "dir r2i sets flag bit 0 and nothing else changes" \
	'[ "$blob_r" = "0x4c45534b0301200100000000$k2$k1$kp" ]'
check "dir i2r is the default" '[ "$($L blob create endpoint dir i2r k2 $k2 k1 $k1 kp $kp)" = "$blob" ]'
check "a pep-view blob carries K2" '[ "$($L blob create pep-view k2 $k2 dir r2i)" = "0x4c45534b0302200100000000$k2" ]'
ko16=$(fill 20 5a)
check "a pep-origin blob carries KO, keylen 16" \
	'[ "$($L blob create pep-origin-out keylen 16 ko $ko16 pep-id 258)" = "0x4c45534b0304100000000102$ko16" ]'
check "arguments in any order (keylen after the root)" \
	'[ "$($L blob create pep-view k2 $(fill 28 11) keylen 24)" = "0x4c45534b0302180000000000$(fill 28 11)" ]'
check "0X and upper-case hex are read" '[ "$($L blob create pep-view k2 0X${k2^^})" = "0x4c45534b0302200000000000$k2" ]'
check "random keys differ" '[ "$($L blob create pep-view)" != "$($L blob create pep-view)" ]'
r=$($L blob create endpoint)
check "a random endpoint blob has K1 != K2 and a KP" \
	'[ "${r:26:64}" != "${r:98:64}" ] && [ "${r:170:64}" != "$(fill 32 00)" ]'
check "a given k1 with random k2, kp" '[ "$($L blob create endpoint k1 $k1 | cut -c99-170)" = "$k1" ]'
k2s=${k1:0:64}00000001
k1s=${k1:0:64}00000002
out=$($L blob create endpoint k2 $k2s k1 $k1s 2>&1); r=$?
check "an endpoint whose K1 key equals its K2 key (other salts) is refused: exit 1, les_blob_strerror's message" \
	'[ $r -eq 1 ] && [ "$out" = "lesctl: LES key blob has the same key for both zones" ]'
check "equal salts with different keys are fine" '[ "$(rc blob create endpoint k2 ${k2:0:64}00000001 k1 ${k1:0:64}00000001)" = 0 ]'
j=$($L -j blob create pep-origin-in keylen 24 dir r2i pep-id 9)
check "-j blob create is JSON with role, keylen, dir, pep_id, length and the blob" \
	'echo "$j" | $PY -c "import json,sys; d = json.load(sys.stdin); assert (d[\"role\"], d[\"keylen\"], d[\"dir\"], d[\"pep_id\"], d[\"length\"]) == (\"pep-origin-in\", 24, \"r2i\", 9, 40), d; assert d[\"blob\"].startswith(\"0x4c45534b03031801\")"'

# ---- blob show ----------------------------------------------------------
check "blob show: role, keylen, dir, pep-id, length, material" \
	'[ "$($L blob show $blob)" = "LES blob v3 role endpoint keylen 32 dir i2r pep-id 0 length 116 material k2 k1 kp" ]'
check "blob show: dir r2i" '$L blob show $blob_r | grep -q " dir r2i "'
check "blob show: a pep-view blob carries k2" '$L blob show $($L blob create pep-view keylen 16) | grep -q "keylen 16 dir i2r pep-id 0 length 32 material k2$"'
check "blob show: a pep-origin blob carries its pep-id and ko" \
	'$L blob show $($L blob create pep-origin-in keylen 16 pep-id 7) | grep -q "role pep-origin-in keylen 16 dir i2r pep-id 7 length 32 material ko$"'
check "blob show never prints key bytes" '! $L blob show $blob | grep -q "$kp" && ! $L -j blob show $blob | grep -q "${k2:60}"'
check "-j blob show is JSON" \
	'$L -j blob show $blob_r | $PY -c "import json,sys; d = json.load(sys.stdin); assert d == {\"version\": 3, \"role\": \"endpoint\", \"keylen\": 32, \"dir\": \"r2i\", \"pep_id\": 0, \"length\": 116, \"material\": [\"k2\", \"k1\", \"kp\"]}, d"'

# ---- refusals of malformed blobs: exit 1, les_blob_strerror's reason -----
v1=0x4c45534b0101200000000000$k2$k1
while read -r what hex why; do
	out=$($L blob show "$hex" 2>&1); r=$?
	check "blob show refuses $what: exit 1 ($why)" '[ $r -eq 1 ] && echo "$out" | grep -q "$why"'
done <<EOF
a-short-blob 0x4c45534b03 shorter
a-bad-magic 0x4c45534c0202200000000000$k2 magic
a-version-1-blob $v1 version
a-version-2-blob 0x4c45534b0201200000000000$k2$k1$kp version
role-5 0x4c45534b0305200000000000$k2 role
keylen-20 0x4c45534b0302140000000000$k2 length.must
flags-0x02 0x4c45534b0302200200000000$k2 flags
a-pep-id-on-pep-view 0x4c45534b0302200000000001$k2 pep_id
pep-id-0-on-pep-origin-in 0x4c45534b0303200000000000$k2 pep_id
a-blob-one-byte-long 0x4c45534b0302200000000000${k2}00 length
an-endpoint-without-kp 0x4c45534b0301200000000000$k2$k1 length
same-K1-and-K2-keys 0x4c45534b0301200000000000$k2s$k1s$kp same.key
not-hex 0x4c45534b03zz not.hex
odd-hex 0x4c45534b030 not.hex
EOF
check "blob derive and zone-key refuse a malformed blob too (exit 1)" \
	'[ "$(rc blob derive $v1 pep-id 1)" = 1 ] && [ "$(rc blob zone-key $v1 spi 1)" = 1 ]'

# ---- blob derive ---------------------------------------------------------
view=$($L blob derive $blob)
check "blob derive with no pep-id prints the pep-view blob only" \
	'[ "$view" = "pep-view 0x4c45534b0302200000000000$k2" ]'
d=$($L blob derive $blob_r pep-id 7 pep-id 0x10000)
mapfile -t lines <<<"$d"
check "blob derive: pep-view, then in and out per pep-id, in order" \
	'[ ${#lines[@]} = 5 ] && [ "${lines[0]}" = "pep-view 0x4c45534b0302200100000000$k2" ] &&
	 [ "${lines[1]:0:37}" = "pep-origin-in pep-id 7 0x4c45534b0303" ] &&
	 [ "${lines[2]:0:38}" = "pep-origin-out pep-id 7 0x4c45534b0304" ] &&
	 [ "${lines[3]:0:41}" = "pep-origin-in pep-id 65536 0x4c45534b0303" ] &&
	 [ "${lines[4]:0:42}" = "pep-origin-out pep-id 65536 0x4c45534b0304" ]'
in7=${lines[1]##* }; out7=${lines[2]##* }; in64k=${lines[3]##* }
check "derived pep-origin blobs: keylen, dir and pep_id of the header" \
	'[ "$(hdr $in7)" = 4c45534b0303200100000007 ] && [ "$(hdr $in64k)" = 4c45534b0303200100010000 ]'
check "derived pep-origin-in and -out of one PEP share the KO root" '[ "${in7:26}" = "${out7:26}" ] && [ $(nbytes $in7) = 48 ]'
check "derived KO roots differ per PEP" '[ "${in7:26}" != "${in64k:26}" ]'
check "derived KO roots differ per direction" \
	'[ "$($L blob derive $blob pep-id 7 | sed -n "2s/.* 0x.\{24\}//p")" != "${in7:26}" ]'
check "derived KO roots come from KP, not K2" \
	'[ "$($L blob derive $($L blob create endpoint k2 $k2 k1 $k1) pep-id 7 | sed -n 2p)" != "$($L blob derive $blob pep-id 7 | sed -n 2p)" ]'
check "blob derive is deterministic" '[ "$($L blob derive $blob_r pep-id 7 pep-id 0x10000)" = "$d" ]'
check "derived blobs pass blob show" '$L blob show $in7 >/dev/null && $L blob show $out7 >/dev/null && $L blob show ${lines[0]##* } >/dev/null'
b16=$($L blob create endpoint keylen 16 k2 $(fill 20 21) k1 $(fill 20 22) kp $(fill 32 23))
check "keylen 16: derived blobs are 32 bytes with keylen 16" \
	'$L blob derive $b16 pep-id 1 | while read -r a b c d; do h=${d:-$b}; [ $(nbytes $h) = 32 ] && [ "${h:14:2}" = 10 ] || exit 1; done'
check "-j blob derive is a JSON array of blobs" \
	'$L -j blob derive $blob_r pep-id 7 pep-id 0x10000 | $PY -c "import json,sys; a = json.load(sys.stdin); assert [(x[\"role\"], x[\"pep_id\"], x[\"dir\"], x[\"keylen\"]) for x in a] == [(\"pep-view\", 0, \"r2i\", 32), (\"pep-origin-in\", 7, \"r2i\", 32), (\"pep-origin-out\", 7, \"r2i\", 32), (\"pep-origin-in\", 65536, \"r2i\", 32), (\"pep-origin-out\", 65536, \"r2i\", 32)], a; assert a[1][\"blob\"] == \"$in7\""'
for role in pep-view pep-origin-in pep-origin-out; do
	if [ $role = pep-view ]; then x=$($L blob create $role); else x=$($L blob create $role pep-id 3); fi
	out=$($L blob derive $x pep-id 1 2>&1); r=$?
	check "blob derive refuses a $role blob: exit 1, a $role blob cannot derive anything" \
		'[ $r -eq 1 ] && echo "$out" | grep -q "a $role blob cannot derive anything"'
done

# ---- blob zone-key -------------------------------------------------------
z=$($L blob zone-key $blob spi 0x1000)
check "zone-key of an endpoint: header and payload, keylen + 4 bytes each" \
	'[ "$(echo "$z" | cut -d" " -f1 | tr "\n" " ")" = "header payload " ] && [ $(echo "$z" | awk "{print length(\$2)}" | sort -u) = 74 ]'
check "zone-key: the SPI reads as decimal too" '[ "$($L blob zone-key $blob spi 4096)" = "$z" ]'
check "zone-key: another SPI, other keys" '[ "$($L blob zone-key $blob spi 0x1001 | sed -n 1p)" != "$(echo "$z" | sed -n 1p)" ]'
check "zone-key: the other direction, other keys" '[ "$($L blob zone-key $blob_r spi 0x1000 | sed -n 1p)" != "$(echo "$z" | sed -n 1p)" ]'
check "zone-key: the pep-view blob of an endpoint gives its header key, and only it" \
	'[ "$($L blob zone-key ${view##* } spi 0x1000)" = "$(echo "$z" | sed -n 1p)" ]'
check "zone-key of a pep-origin blob: a header key from KO, 20 bytes at keylen 16" \
	'[ "$($L blob zone-key $($L blob create pep-origin-out keylen 16 pep-id 1) spi 5 | awk "{print \$1, length(\$2)}")" = "header 42" ]'
check "zone-key: pep-origin-in and -out of one PEP agree on one SPI" \
	'[ "$($L blob zone-key $in7 spi 0x2000)" = "$($L blob zone-key $out7 spi 0x2000)" ]'
check "-j zone-key is JSON with the same keys" \
	'[ "$($L -j blob zone-key $blob spi 0x1000 | $PY -c "import json,sys; d = json.load(sys.stdin); assert (d[\"role\"], d[\"spi\"], d[\"dir\"]) == (\"endpoint\", 4096, \"i2r\"); print(\"header\", d[\"header\"]); print(\"payload\", d[\"payload\"])")" = "$z" ]'
check "-j zone-key of a pep-view blob has no payload key" \
	'$L -j blob zone-key ${view##* } spi 1 | $PY -c "import json,sys; d = json.load(sys.stdin); assert \"payload\" not in d and len(d[\"header\"]) == 74, d"'

# ---- the derivations against a textbook HKDF (RFC 5869), not lescodec ----
ref=$($PY - "$blob_r" "$in7" "$in64k" "$z" "$blob" <<'EOF' 2>&1
import hashlib, hmac, sys

def hkdf(salt, ikm, info, n):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    okm, t, i = b"", b"", 1
    while len(okm) < n:
        t = hmac.new(prk, t + info + bytes((i,)), hashlib.sha256).digest()
        okm, i = okm + t, i + 1
    return okm[:n]

# RFC 5869 A.1, so that this reference is one.
assert hkdf(bytes(range(13)), b"\x0b" * 22, bytes(range(0xf0, 0xfa)), 42).hex() == \
    "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
blob_r, in7, in64k, z, blob = sys.argv[1:]
ep = bytes.fromhex(blob_r[2:])
kl, kp = ep[6], ep[12 + 72:]
assert in7[2 + 24:] == hkdf(b"LES v3 pep-origin", kp, (7).to_bytes(4, "big") + b"\x01", kl + 4).hex()
assert in64k[2 + 24:] == hkdf(b"LES v3 pep-origin", kp, (65536).to_bytes(4, "big") + b"\x01", kl + 4).hex()
ep = bytes.fromhex(blob[2:])
k2, k1 = ep[12:48], ep[48:84]
want = "header 0x%s\npayload 0x%s" % (
    hkdf(b"LES v3 zone", k2, b"H" + (0x1000).to_bytes(4, "big") + b"\x00", 36).hex(),
    hkdf(b"LES v3 zone", k1, b"P" + (0x1000).to_bytes(4, "big") + b"\x00", 36).hex())
assert z == want, (z, want)
print("same")
EOF
)
check "derive's KO roots and zone-key's keys are HKDF-SHA256 with the spec's labels and info" '[ "$ref" = same ] || { echo "$ref" >&2; false; }'

# ---- cross-checks against the Python reference codec (tools/lescodec) ----
codec=$($PY - "$blob_r" "$d" "$b16" <<'EOF' 2>&1
import subprocess, sys, traceback
sys.path.insert(0, "tools")
from lescodec import blob as lb

blob_r, d, b16 = sys.argv[1:]


def lesctl(*a):
    return subprocess.run(["tools/lesctl/lesctl", *a], check=True,
                          capture_output=True, text=True).stdout


def label(r):
    return getattr(r, "label", r)


def section(f):
    """Run one cross-check; print its name, or why it failed."""
    try:
        f()
        print(f.__name__.replace("_", "-"))
    except Exception:
        print("failed:", f.__name__, traceback.format_exc().strip().splitlines()[-1])
    return f


@section
def parse():
    """parse_blob reads every lesctl blob as blob show shows it."""
    for args in (["endpoint"], ["endpoint", "keylen", "16", "dir", "r2i"],
                 ["pep-view", "keylen", "24"], ["pep-origin-in", "pep-id", "7"],
                 ["pep-origin-out", "keylen", "16", "dir", "r2i", "pep-id", "4294967295"]):
        h = lesctl("blob", "create", *args).strip()
        b = lb.parse_blob(bytes.fromhex(h[2:]))
        shown = lesctl("blob", "show", h).split()
        got = ["role", label(b.role), "keylen", str(b.keylen),
               "dir", "r2i" if b.r2i else "i2r", "pep-id", str(b.pep_id)]
        assert shown[3:11] == got, (shown, got)
        mat = [n for n in ("k2", "k1", "kp", "ko") if getattr(b, n) is not None]
        assert shown[14:] == mat, (shown, mat)
        assert b.k2 is None or h[26:26 + 2 * len(b.k2)] == b.k2.hex()


@section
def derive():
    """derive_blobs and pep_origin_root give what blob derive prints."""
    for ep_hex, out in ((blob_r, d),
                        (b16, lesctl("blob", "derive", b16, "pep-id", "1", "pep-id", "99"))):
        ep = bytes.fromhex(ep_hex[2:])
        lines = [ln.split() for ln in out.strip().splitlines()]
        ids = [int(ln[2]) for ln in lines if ln[0] == "pep-origin-in"]
        got = lb.derive_blobs(ep, ids)
        assert got["pep-view"].hex() == lines[0][1][2:], (got, lines[0])
        b = lb.parse_blob(ep)
        for ln in lines[1:]:
            pid, blob = int(ln[2]), bytes.fromhex(ln[3][2:])
            ko = blob[12:]
            assert lb.parse_blob(blob).ko == ko
            assert got["pep-origin"][pid] == ko, (pid, got["pep-origin"][pid].hex(), ko.hex())
            assert lb.pep_origin_root(b.kp, pid, b.r2i, b.keylen) == ko


@section
def zone_key():
    """zone_key gives what blob zone-key prints, every role, both zones."""
    for h in (blob_r, b16, lesctl("blob", "create", "pep-view", "keylen", "24").strip(),
              lesctl("blob", "create", "pep-origin-in", "dir", "r2i", "pep-id", "5").strip()):
        b = lb.parse_blob(bytes.fromhex(h[2:]))
        for spi in (1, 0x1000, 0xfffffffe):
            out = dict(ln.split() for ln in
                       lesctl("blob", "zone-key", h, "spi", str(spi)).splitlines())
            root = b.ko if b.ko is not None else b.k2
            want = {"header": "0x" + lb.zone_key(root, b"H", spi, b.r2i).hex()}
            if b.k1 is not None:
                want["payload"] = "0x" + lb.zone_key(b.k1, b"P", spi, b.r2i).hex()
            assert out == want, (label(b.role), spi, out, want)
EOF
)
check "lescodec's parse_blob reads lesctl's blobs as blob show does" 'echo "$codec" | grep -qx parse'
check "lescodec's derive_blobs and pep_origin_root give lesctl blob derive's blobs" 'echo "$codec" | grep -qx derive'
check "lescodec's zone_key gives lesctl blob zone-key's keys (every role, both zones)" 'echo "$codec" | grep -qx zone-key'
echo "$codec" | grep -v -x -e parse -e derive -e zone-key | sed "s/^/# lescodec: /"

# ---- usage errors: exit 2, before anything else -------------------------
ep=$blob
while read -r line; do
	args=${line//EP/$ep}
	args=${args//K2/$k2}
	args=${args//KP/$kp}
	# shellcheck disable=SC2086
	check "lesctl $line is a usage error (2)" '[ "$(rc $args)" = 2 ]'
done <<'EOF'
blob
blob bogus
blob create
blob create nonsense
blob create endpoint frob 1
blob create endpoint keylen
blob create endpoint keylen 20
blob create endpoint keylen 0x
blob create endpoint keylen 16 keylen 16
blob create endpoint dir sideways
blob create endpoint dir r2i dir r2i
blob create endpoint k2 abcd
blob create endpoint k2 K2 k2 K2
blob create endpoint k2 zz
blob create endpoint keylen 16 k2 K2
blob create endpoint kp abcd
blob create endpoint kp KPKP
blob create endpoint kp K2
blob create pep-view k1 K2
blob create pep-view kp KP
blob create pep-view ko K2
blob create pep-origin-in k2 K2 pep-id 1
blob create pep-origin-out kp KP pep-id 1
blob create endpoint ko K2
blob create pep-view pep-id 3
blob create endpoint pep-id 3
blob create pep-origin-in
blob create pep-origin-out
blob create pep-origin-in pep-id 0
blob create pep-origin-in pep-id 4294967296
blob create pep-origin-in pep-id -1
blob create pep-origin-in pep-id seven
blob create pep-origin-in pep-id 1 pep-id 2
blob show
blob show EP EP
blob derive
blob derive EP pep-id
blob derive EP pep-id 0
blob derive EP pep-id 4294967296
blob derive EP peer 1
blob derive EP pep-id 7 pep-id 7
blob derive 0x00 pep-id 0
blob zone-key
blob zone-key EP
blob zone-key EP spi
blob zone-key EP spi 0x100000000
blob zone-key EP spi -1
blob zone-key EP spi x
blob zone-key EP spi 1 spi 2
blob zone-key EP key 1
-x blob show EP
EOF
# The reason, on standard error, for a few of them.
while IFS='|' read -r args why; do
	args=${args//K2/$k2}
	# shellcheck disable=SC2086
	check "usage error message: $why" '$L $args 2>&1 >/dev/null | grep -q "^lesctl: $why"'
done <<'EOF'
blob create pep-view k1 K2|a pep-view blob carries no k1
blob create pep-origin-out ko K2|a pep-origin-out blob needs a pep-id
blob create endpoint pep-id 1|only pep-origin blobs carry a pep-id
blob create endpoint keylen 16 k2 K2|k2 must be 20 bytes
blob create pep-origin-in pep-id 0|pep-id must be 1 to 4294967295
blob zone-key 0x00|zone-key needs the SA's spi
EOF
check "pep-id 4294967295 is the largest" '[ "$(rc blob create pep-origin-in pep-id 4294967295)" = 0 ] && [ "$(rc blob derive $ep pep-id 0xffffffff)" = 0 ]'
check "lesctl blob help and -h print the usage, exit 0" \
	'$L blob help | grep -q "blob derive HEX" && $L -h | grep -q "blob zone-key HEX spi SPI"'

# ---- the generic netlink commands ---------------------------------------
# Usage errors before any netlink, and a clear error where les.ko is not
# loaded (this host cannot load modules).
for args in "pep set hook maybe" "pep set" "pep set max-flows -1" "pep set encap-port 70000" \
	"pep set frobs 1" "pep set backlog lots" "pep" "flows bogus" "stats extra" \
	"pep set accel maybe" "pep set hop-dev no-such-dev0" "pep set hop-rate fast" \
	"pep set flow-buffer -5" "pep set peer-buffer"; do
	# shellcheck disable=SC2086
	check "lesctl $args is a usage error (2)" '[ "$(rc $args)" = 2 ]'
done
if [ ! -d /sys/module/les ]; then
	msg=$($L stats 2>&1); r=$?
	check "without les.ko, lesctl stats exits 1 and says why" \
		'[ $r -eq 1 ] && echo "$msg" | grep -q "les.ko is not loaded"'
fi
echo "# lesctl.sh: $n_ok ok, $n_fail not ok"
exit $fail
