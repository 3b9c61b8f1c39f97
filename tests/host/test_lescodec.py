"""Host unit tests of the reference codec (tools/lescodec) against
docs/protocol.md, wire format version 3.
Run: cd /work/main && python3 -m pytest -q tests/host/test_lescodec.py"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import pathlib
import random
import struct
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lescodec import blob as B
from lescodec import packet as P
from lescodec import pcap as PC
from lescodec import zone as Z
from lescodec.errors import AuthError, FormatError, LesError, PolicyError

HERE = pathlib.Path(__file__).resolve().parent
TOOLS = HERE.parents[1] / "tools"

V4S, V4D = "192.0.2.1", "198.51.100.2"
V6S, V6D = "2001:db8::1", "2001:db8:1::2"
R = 0x0123456789ABCDEF


def ks(n: int, base: int) -> bytes:
    """Deterministic root (key||salt) of an n-byte AES key."""
    return bytes((base + i) & 0xFF for i in range(n + 4))


K2 = {n: ks(n, 0x10) for n in (16, 24, 32)}
K1 = {n: ks(n, 0x80) for n in (16, 24, 32)}
KP = bytes(range(0x40, 0x60))


def ep_blob(keylen=16, r2i=False, k2=None, k1=None, kp=None):
    return B.build_blob("endpoint", keylen, k2=k2 or K2[keylen],
                        k1=k1 or K1[keylen], kp=kp or KP, r2i=r2i)


def keys(spi=0x300, keylen=16, r2i=False):
    b = B.parse_blob(ep_blob(keylen, r2i))
    return b.header_key(spi), b.payload_key(spi)


HK, PK = keys()


def rfc4303_len(inner_len: int) -> int:
    """ESP (RFC 4303) with rfc4106: SPI, Seq, 8-byte IV, payload, padding to
    4 bytes, pad length, next header, 16-byte ICV.  Computed here, not by the
    codec."""
    pad = (4 - (inner_len + 2) % 4) % 4
    return 4 + 4 + 8 + inner_len + pad + 2 + 16


def tcp4(payload=b"", flags=0x10, options=b"", **ipkw):
    return P.tcp_packet(V4S, V4D, 40000, 80, 1000, 2000, flags, 5000,
                        options, payload, **ipkw)


def tcp6(payload=b"", flags=0x10, options=b"", **ipkw):
    return P.tcp_packet(V6S, V6D, 40000, 80, 1000, 2000, flags, 5000,
                        options, payload, **ipkw)


def raw_tcp(opts=b"", payload=b"", urg=0, csum=0xBEEF, flags=0x18, doff=None):
    """A TCP header with exactly these option bytes (no padding added)."""
    d = (20 + len(opts)) // 4 if doff is None else doff
    assert doff is not None or len(opts) % 4 == 0
    return struct.pack("!HHIIBBHHH", 1234, 80, 7, 8, d << 4, flags, 1000,
                       csum, urg) + bytes(opts) + bytes(payload)


def v4(seg, **kw):
    return P.ipv4_packet(V4S, V4D, 6, seg, **kw)


def v6(seg, **kw):
    return P.ipv6_packet(V6S, V6D, 6, seg, **kw)


SACK_OPTS = (b"\x01\x01\x08\x0a" + struct.pack("!II", 11, 22)
             + b"\x01\x01\x05\x0a" + struct.pack("!II", 100, 200))


def hkdf_ref(salt, ikm, info, n):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    t, okm = b"", b""
    for i in range(1, 10):
        t = hmac.new(prk, t + info + bytes((i,)), hashlib.sha256).digest()
        okm += t
    return okm[:n]


# ===========================================================================
# Section 1: key blobs
# ===========================================================================

def all_blobs(keylen, r2i):
    ep = ep_blob(keylen, r2i)
    return {
        B.Role.ENDPOINT: ep,
        B.Role.PEP_VIEW: B.build_blob("pep-view", keylen, k2=K2[keylen], r2i=r2i),
        B.Role.PEP_ORIGIN_IN: B.build_blob("pep-origin-in", keylen,
                                           ko=K1[keylen], pep_id=7, r2i=r2i),
        B.Role.PEP_ORIGIN_OUT: B.build_blob(4, keylen, ko=K1[keylen],
                                            pep_id=0xFFFFFFFF, r2i=r2i),
    }


@pytest.mark.parametrize("keylen", [16, 24, 32])
@pytest.mark.parametrize("r2i", [False, True])
def test_blob_round_trip(keylen, r2i):
    lens = {16: (84, 32), 24: (100, 40), 32: (116, 48)}[keylen]
    for role, raw in all_blobs(keylen, r2i).items():
        assert raw[:4] == b"LESK" and raw[4] == 3 and raw[5] == role
        assert raw[6] == keylen and raw[7] == (1 if r2i else 0)
        assert len(raw) == (lens[0] if role == B.Role.ENDPOINT else lens[1])
        b = B.parse_blob(raw)
        assert (b.role, b.keylen, b.r2i) == (role, keylen, r2i)
        assert b.to_bytes() == raw
        assert B.is_les_blob(raw)
        if role == B.Role.ENDPOINT:
            assert (b.k2, b.k1, b.kp, b.ko) == (K2[keylen], K1[keylen], KP, None)
            assert b.pep_id == 0
            assert raw[12:] == K2[keylen] + K1[keylen] + KP
        elif role == B.Role.PEP_VIEW:
            assert (b.k2, b.k1, b.kp, b.ko) == (K2[keylen], None, None, None)
        else:
            assert (b.k2, b.k1, b.kp, b.ko) == (None, None, None, K1[keylen])
            assert b.pep_id in (7, 0xFFFFFFFF)
            assert raw[8:12] == b.pep_id.to_bytes(4, "big")


def test_blob_constants_and_roles():
    assert B.VERSION == 3 and B.FLAG_R2I == 1 and B.KP_LEN == 32
    assert B.ZONE_SALT == b"LES v3 zone"
    assert B.PEP_ORIGIN_SALT == b"LES v3 pep-origin"
    assert [int(r) for r in B.Role] == [1, 2, 3, 4]
    for r in B.Role:
        assert B.Role.parse(r.label) == r == B.Role.parse(int(r))
        assert B.Role.parse(r.name) == r and B.Role.parse(str(int(r))) == r
    assert B.Role.PEP_ORIGIN_OUT.label == "pep-origin-out"
    with pytest.raises(ValueError):
        B.Role.parse("nobody")


def test_is_les_blob():
    assert B.is_les_blob(b"LESK")
    assert B.is_les_blob(b"LESK" + bytes(16))         # 20 bytes: still LES
    assert B.is_les_blob(b"LESK" + bytes(24))
    assert B.is_les_blob(b"LESK" + bytes(500))
    assert not B.is_les_blob(b"LES")
    assert not B.is_les_blob(b"lesk" + bytes(30))
    assert not B.is_les_blob(bytes(20))
    assert not B.is_les_blob(b"")


GOOD = ep_blob()
VIEW = B.build_blob("pep-view", 16, k2=K2[16])
PO = B.build_blob("pep-origin-in", 16, ko=K1[16], pep_id=9)


def _set(b, i, v):
    return b[:i] + bytes((v,)) + b[i + 1:]


BAD = [
    ("empty", b"", B.BlobShortError),
    ("short", GOOD[:11], B.BlobShortError),
    ("magic", b"LESX" + GOOD[4:], B.BlobMagicError),
    ("magic-short", b"XESK" + GOOD[4:11], B.BlobShortError),
    ("version0", _set(GOOD, 4, 0), B.BlobVersionError),
    ("version1", _set(GOOD, 4, 1), B.BlobVersionError),
    ("version2", _set(GOOD, 4, 2), B.BlobVersionError),
    ("version4", _set(GOOD, 4, 4), B.BlobVersionError),
    ("role0", _set(GOOD, 5, 0), B.BlobRoleError),
    ("role5", _set(GOOD, 5, 5), B.BlobRoleError),
    ("keylen0", _set(GOOD, 6, 0), B.BlobKeyLenError),
    ("keylen20", _set(GOOD, 6, 20), B.BlobKeyLenError),
    ("keylen33", _set(GOOD, 6, 33), B.BlobKeyLenError),
    ("flags2", _set(GOOD, 7, 2), B.BlobFlagsError),
    ("flags81", _set(GOOD, 7, 0x81), B.BlobFlagsError),
    ("pep_id-endpoint", _set(GOOD, 11, 1), B.BlobPepIdError),
    ("pep_id-view", _set(VIEW, 8, 0x80), B.BlobPepIdError),
    ("pep_id-po-zero", PO[:8] + bytes(4) + PO[12:], B.BlobPepIdError),
    ("long", GOOD + b"\0", B.BlobLengthError),
    ("no-kp", GOOD[:52], B.BlobLengthError),
    ("endpoint-as-view", _set(GOOD, 5, 2), B.BlobLengthError),
    ("view-as-endpoint", _set(VIEW, 5, 1), B.BlobLengthError),
    ("view-keylen24", _set(VIEW, 6, 24), B.BlobLengthError),
    ("header-only", GOOD[:12], B.BlobLengthError),
    ("same-keys", GOOD[:32] + K2[16][:16] + b"SALT" + KP, B.BlobSameKeysError),
    # order: the first faulty field in the documented order wins
    ("version-and-role", _set(_set(GOOD, 4, 1), 5, 9), B.BlobVersionError),
    ("role-and-keylen", _set(_set(GOOD, 5, 9), 6, 9), B.BlobRoleError),
    ("keylen-and-flags", _set(_set(GOOD, 6, 9), 7, 9), B.BlobKeyLenError),
    ("flags-and-pep_id", _set(_set(GOOD, 7, 2), 11, 1), B.BlobFlagsError),
    ("pep_id-and-length", _set(GOOD, 11, 1) + b"\0", B.BlobPepIdError),
    ("length-and-same", GOOD[:32] + K2[16] + KP + b"\0", B.BlobLengthError),
]


@pytest.mark.parametrize("name,data,exc", BAD, ids=[b[0] for b in BAD])
def test_blob_malformed(name, data, exc):
    with pytest.raises(exc) as ei:
        B.parse_blob(data)
    assert type(ei.value) is exc
    assert isinstance(ei.value, FormatError) and isinstance(ei.value, B.BlobError)
    assert ei.value.field


def test_blob_v1_refused():
    """A version-1 endpoint blob (header, K2||salt2, K1||salt1) is refused."""
    v1 = b"LESK\x01\x01\x10\x00\x00\x00\x00\x00" + K2[16] + K1[16]
    assert B.is_les_blob(v1)
    with pytest.raises(B.BlobVersionError):
        B.parse_blob(v1)


def test_blob_same_keys_compares_keys_not_salts():
    k1 = K2[16][:16] + b"SALT"                  # same key, other salt
    with pytest.raises(B.BlobSameKeysError):
        B.build_blob("endpoint", 16, k2=K2[16], k1=k1, kp=KP)
    k1 = b"\xee" * 16 + K2[16][16:]              # same salt, other key: fine
    b = B.parse_blob(B.build_blob("endpoint", 16, k2=K2[16], k1=k1, kp=KP))
    assert b.k1 == k1


def test_blob_build_errors():
    with pytest.raises(B.BlobKeyLenError):
        B.build_blob("pep-view", 20, k2=K2[16])
    with pytest.raises(B.BlobKeyError):
        B.build_blob("endpoint", 16, k2=K2[16], k1=K1[16])          # no kp
    with pytest.raises(B.BlobKeyError):
        B.build_blob("endpoint", 16, k2=K2[16], kp=KP)               # no k1
    with pytest.raises(B.BlobKeyError):
        B.build_blob("endpoint", 16, k2=K2[16], k1=K1[24], kp=KP)    # sizes
    with pytest.raises(B.BlobKeyError):
        B.build_blob("endpoint", 16, k2=K2[16], k1=K1[16], kp=KP[:31])
    with pytest.raises(B.BlobKeyError):
        B.build_blob("endpoint", 16, k2=K2[16], k1=K1[16], kp=KP, ko=K1[16])
    with pytest.raises(B.BlobKeyError):
        B.build_blob("pep-view", 16, k2=K2[16], k1=K1[16])
    with pytest.raises(B.BlobKeyError):
        B.build_blob("pep-view", 24, k2=K2[16])
    with pytest.raises(B.BlobKeyError):
        B.build_blob("pep-origin-in", 16, k2=K2[16], pep_id=1)
    with pytest.raises(B.BlobPepIdError):
        B.build_blob("pep-origin-out", 16, ko=K1[16])                # pep_id 0
    with pytest.raises(B.BlobPepIdError):
        B.build_blob("pep-origin-out", 16, ko=K1[16], pep_id=1 << 32)
    with pytest.raises(B.BlobPepIdError):
        B.build_blob("pep-view", 16, k2=K2[16], pep_id=1)
    with pytest.raises(B.BlobSameKeysError):
        B.build_blob("endpoint", 16, k2=K2[16], k1=K2[16], kp=KP)


# ===========================================================================
# Section 2.1 / 6: HKDF, zone keys, PEP-origin roots, derived blobs
# ===========================================================================

def test_hkdf_rfc5869_case1():
    okm = B.hkdf_sha256(bytes(range(13)), b"\x0b" * 22, bytes(range(0xf0, 0xfa)), 42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56"
                         "ecc4c5bf34007208d5b887185865")


@pytest.mark.parametrize("keylen", [16, 24, 32])
def test_zone_key(keylen):
    root = K2[keylen]
    k = B.zone_key(root, b"H", 0x01020304, False)
    assert len(k) == keylen + 4
    assert k == hkdf_ref(b"LES v3 zone", root, b"H\x01\x02\x03\x04\x00", keylen + 4)
    assert B.zone_key(root, b"P", 0x01020304, True) == \
        hkdf_ref(b"LES v3 zone", root, b"P\x01\x02\x03\x04\x01", keylen + 4)
    variants = {B.zone_key(root, z, spi, d) for z in (b"H", b"P")
                for spi in (0x01020304, 0x01020305, 0) for d in (False, True)}
    assert len(variants) == 12                 # zone, SPI and dir all bind
    assert root not in variants
    with pytest.raises(ValueError):
        B.zone_key(root, b"X", 1, False)


@pytest.mark.parametrize("r2i", [False, True])
def test_blob_header_payload_keys(r2i):
    blobs = {r: B.parse_blob(x) for r, x in all_blobs(16, r2i).items()}
    ep, view = blobs[B.Role.ENDPOINT], blobs[B.Role.PEP_VIEW]
    spi = 0xC0FFEE01
    assert ep.header_key(spi) == B.zone_key(K2[16], b"H", spi, r2i)
    assert ep.payload_key(spi) == B.zone_key(K1[16], b"P", spi, r2i)
    assert view.header_key(spi) == ep.header_key(spi)
    assert view.payload_key(spi) is None
    for r in (B.Role.PEP_ORIGIN_IN, B.Role.PEP_ORIGIN_OUT):
        assert blobs[r].header_key(spi) == B.zone_key(K1[16], b"H", spi, r2i)
        assert blobs[r].payload_key(spi) is None
    assert ep.header_key(spi) != ep.header_key(spi + 1)
    assert ep.header_key(spi) != K2[16] and ep.payload_key(spi) != K1[16]
    other = B.parse_blob(ep_blob(16, not r2i))
    assert other.header_key(spi) != ep.header_key(spi)
    assert other.payload_key(spi) != ep.payload_key(spi)


@pytest.mark.parametrize("keylen", [16, 24, 32])
def test_pep_origin_root(keylen):
    ko = B.pep_origin_root(KP, 5, False, keylen)
    assert len(ko) == keylen + 4
    assert ko == hkdf_ref(b"LES v3 pep-origin", KP, b"\0\0\0\x05\x00", keylen + 4)
    assert B.pep_origin_root(KP, 5, True, keylen) == \
        hkdf_ref(b"LES v3 pep-origin", KP, b"\0\0\0\x05\x01", keylen + 4)
    roots = {B.pep_origin_root(KP, p, d, keylen) for p in (1, 2, 5, 0xFFFFFFFF)
             for d in (False, True)}
    assert len(roots) == 8
    with pytest.raises(ValueError):
        B.pep_origin_root(KP, 0, False, keylen)
    with pytest.raises(ValueError):
        B.pep_origin_root(KP[:16], 1, False, keylen)


def test_pep_origin_not_from_k2():
    """KO depends on KP only: K2 (all a pep-view holder has) gives nothing."""
    a = B.derive_blobs(ep_blob(16, k2=K2[16]), [3])
    b = B.derive_blobs(ep_blob(16, k2=ks(16, 0x33)), [3])
    c = B.derive_blobs(ep_blob(16, kp=bytes(32)), [3])
    assert a["pep-origin"][3] == b["pep-origin"][3] != c["pep-origin"][3]
    assert a["pep-view"] != b["pep-view"]
    view = a["pep-view"]
    assert KP not in view and len(view) == 32
    with pytest.raises(ValueError):
        B.derive_blobs(view, [3])              # not an endpoint blob
    with pytest.raises(ValueError):
        B.pep_origin_blob(view, 3, "pep-origin-in")
    # no derivation of K2 under either label gives the KO root
    ko = a["pep-origin"][3]
    for salt in (B.ZONE_SALT, B.PEP_ORIGIN_SALT):
        for info in (b"\0\0\0\x03\0", b"H\0\0\0\x03\0"):
            assert B.hkdf_sha256(salt, K2[16], info, 20) != ko


@pytest.mark.parametrize("keylen", [16, 24, 32])
@pytest.mark.parametrize("r2i", [False, True])
def test_derive_blobs(keylen, r2i):
    ep = ep_blob(keylen, r2i)
    d = B.derive_blobs(ep, [1, 2, 0xFFFFFFFF])
    view = B.parse_blob(d["pep-view"])
    assert (view.role, view.keylen, view.r2i, view.k2) == \
        (B.Role.PEP_VIEW, keylen, r2i, K2[keylen])
    assert set(d["pep-origin"]) == {1, 2, 0xFFFFFFFF}
    for pid, ko in d["pep-origin"].items():
        assert ko == B.pep_origin_root(KP, pid, r2i, keylen)
        bi = B.parse_blob(B.pep_origin_blob(ep, pid, "pep-origin-in"))
        bo = B.parse_blob(B.pep_origin_blob(ep, pid, B.Role.PEP_ORIGIN_OUT))
        for b, role in ((bi, B.Role.PEP_ORIGIN_IN), (bo, B.Role.PEP_ORIGIN_OUT)):
            assert (b.role, b.keylen, b.r2i, b.pep_id, b.ko) == \
                (role, keylen, r2i, pid, ko)
        assert bi.header_key(0x4242) == bo.header_key(0x4242)
    with pytest.raises(ValueError):
        B.pep_origin_blob(ep, 1, "pep-view")
    with pytest.raises(ValueError):
        B.derive_blobs(ep, [0])


# ===========================================================================
# Section 4: what enters the header zone
# ===========================================================================

def plan(nh, data):
    p = Z.hz_plan(nh, data)
    assert len(p.headers) == p.length
    assert len(p.csum) == 2
    assert Z.restore(nh, p.flags, p.headers, p.csum, p.moved) == \
        bytes(data[:p.length])
    assert Z.moved_len(nh, p.flags, p.headers) == len(p.moved)
    if p.length:
        off = p.tcp_off
        assert p.csum == bytes(data[off + 16:off + 18])
    else:
        assert p.csum == b"\0\0" and p.moved == b"" and p.flags == 0 \
            and p.tcp_off == -1
    return p


@pytest.mark.parametrize("fam", ["v4", "v6", "transport"])
@pytest.mark.parametrize("size", [0, 1, 13, 1400])
def test_plan_tcp(fam, size):
    body = bytes(range(256)) * 6
    seg = P.tcp_segment(V4S if fam != "v6" else V6S, V4D if fam != "v6" else V6D,
                        1, 2, 3, 4, 0x18, 100, SACK_OPTS, body[:size])
    data, nh, off = {"v4": (v4(seg), 4, 20), "v6": (v6(seg), 41, 40),
                     "transport": (seg, 6, 0)}[fam]
    p = plan(nh, data)
    th = 20 + len(SACK_OPTS)
    assert (p.length, p.flags, p.tcp_off) == (off + th, 0, off)
    assert p.csum == data[off + 16:off + 18]                    # the checksum
    assert p.moved == b""
    want = bytearray(data[:off + th])
    want[off + 16:off + 18] = size.to_bytes(2, "big")         # payload length
    assert p.headers == bytes(want)


def test_plan_checksum_field_uses_ip_length_not_bytes():
    seg = raw_tcp(payload=b"x" * 10)
    # TFC padding after the IP packet: IPv4 / IPv6 count the IP length ...
    assert plan(4, v4(seg) + bytes(9)).headers[36:38] == b"\0\x0a"
    assert plan(41, v6(seg) + bytes(9)).headers[56:58] == b"\0\x0a"
    # ... transport counts the bytes present
    assert plan(6, seg).headers[16:18] == b"\0\x0a"
    assert plan(6, seg + bytes(9)).headers[16:18] == b"\0\x13"


def test_plan_urgent_pointer():
    p = plan(4, v4(raw_tcp(urg=0x1234, csum=0xABCD, payload=b"u" * 5)))
    assert p.flags == Z.FLAG_URGENT_MOVED
    assert p.headers[38:40] == b"\0\0" and p.headers[36:38] == b"\0\x05"
    assert p.moved == b"\x12\x34" and p.csum == b"\xab\xcd"
    assert plan(4, v4(raw_tcp(urg=0, flags=0x38))).flags == 0   # URG flag alone


KEPT = [b"\x01", b"\x02\x04\x05\xb4", b"\x03\x03\x07", b"\x04\x02",
        b"\x05\x0a" + bytes(8), b"\x05\x12" + bytes(16), b"\x05\x1a" + bytes(24),
        b"\x05\x22" + bytes(32), b"\x08\x0a" + bytes(range(8))]
MOVED = [b"\x13\x12" + bytes(16),            # MD5 signature (19)
         b"\x1d\x10" + bytes(14),            # TCP-AO (29)
         b"\x1e\x04\x00\x00",                # MPTCP (30)
         b"\x22\x02",                        # TFO cookie request (34)
         b"\xfe\x06\xf9\x89\x00\x00",        # experimental (254)
         b"\x06\x06" + bytes(4),             # echo (6), obsolete
         b"\x02\x05\x05\xb4\x00",            # MSS with the wrong length
         b"\x03\x04\x07\x00",                # window scale, wrong length
         b"\x04\x03\x00",                    # SACK-permitted, wrong length
         b"\x05\x0c" + bytes(10),            # SACK, 1.25 blocks
         b"\x05\x02",                        # SACK, no block
         b"\x08\x08" + bytes(6)]             # timestamps, wrong length


def _pad4(o, fill=b"\x01"):
    return o + fill * (-len(o) % 4)


@pytest.mark.parametrize("opt", KEPT, ids=lambda o: f"kind{o[0]}-{len(o)}")
def test_options_kept(opt):
    opts = _pad4(opt)
    p = plan(6, raw_tcp(opts, b"pp"))
    assert p.flags == 0 and p.headers[20:] == opts
    # after a moved option, still kept
    opts2 = _pad4(b"\x1e\x04\x00\x00" + opt)
    p = plan(6, raw_tcp(opts2))
    assert p.flags == Z.FLAG_OPTIONS_MOVED
    assert p.headers[20:] == b"\x01" * 4 + opts2[4:]


@pytest.mark.parametrize("opt", MOVED, ids=lambda o: f"kind{o[0]}-{len(o)}")
def test_options_moved(opt):
    opts = _pad4(b"\x02\x04\x05\xb4" + opt + b"\x01\x01\x08\x0a" + bytes(8))
    p = plan(4, v4(raw_tcp(opts, b"data")))
    assert p.flags == Z.FLAG_OPTIONS_MOVED
    zone = p.headers[40:]
    assert zone == b"\x02\x04\x05\xb4" + b"\x01" * len(opt) + opts[4 + len(opt):]
    assert p.moved == opts


@pytest.mark.parametrize("opts,zone", [
    (b"\x00\x00\x00\x00", b"\x00\x00\x00\x00"),        # EOL, zeros: kept
    (b"\x02\x04\x05\xb4\x00\x00\x00\x00", b"\x02\x04\x05\xb4\x00\x00\x00\x00"),
    (b"\x01\x00\x00\x00", b"\x01\x00\x00\x00"),
    (b"\x00\x01\x01\x01", b"\x01\x01\x01\x01"),        # EOL then non-zero
    (b"\x02\x04\x05\xb4\x00\x00\x00\x05", b"\x02\x04\x05\xb4\x01\x01\x01\x01"),
    (b"\x01\x01\x01\x13", b"\x01\x01\x01\x01"),        # no room for a length
    (b"\x13\x00\x02\x04", b"\x01\x01\x01\x01"),        # length 0: rest moved
    (b"\x13\x01\x02\x04\x05\xb4\x01\x01", b"\x01" * 8),  # length 1
    (b"\x03\x03\x07\x13\x09\x00\x00\x00", b"\x03\x03\x07" + b"\x01" * 5),  # past end
    (b"\x02\x04\x05\xb4\x02\x05\x01\x01", b"\x02\x04\x05\xb4\x01\x01\x01\x01"),
    (b"\x08\x0a" + bytes(8) + b"\x03\x04", b"\x08\x0a" + bytes(8) + b"\x01\x01"),
])
def test_options_malformed_and_eol(opts, zone):
    p = plan(6, raw_tcp(opts, b"z"))
    assert p.headers[20:] == zone
    assert p.flags == (0 if zone == opts else Z.FLAG_OPTIONS_MOVED)
    assert Z.sanitise_options(opts) == zone


def test_options_and_urgent_moved_order():
    opts = b"\x13\x06abcd\x01\x01"
    p = plan(6, raw_tcp(opts, b"q", urg=7, csum=0x1111))
    assert p.flags == Z.FLAG_OPTIONS_MOVED | Z.FLAG_URGENT_MOVED
    assert p.moved == opts + b"\x00\x07" and p.csum == b"\x11\x11"


def _frag6(seg):
    return P.ipv6_packet(V6S, V6D, 44, P.ipv6_frag(6, 0, True) + seg)


NO_HEADERS = [
    ("udp", 4, lambda: P.udp_packet(V4S, V4D, 1, 2, b"abc")),
    ("udp6", 41, lambda: P.udp_packet(V6S, V6D, 1, 2, b"abc")),
    ("udp-transport", 17, lambda: P.udp_segment(V4S, V4D, 1, 2, b"abc")),
    ("icmp", 4, lambda: P.ipv4_packet(V4S, V4D, 1, bytes(8))),
    ("icmp6", 41, lambda: P.ipv6_packet(V6S, V6D, 58, bytes(8))),
    ("gre", 4, lambda: P.ipv4_packet(V4S, V4D, 47, bytes(8))),
    ("ipip", 4, lambda: P.ipv4_packet(V4S, V4D, 4, tcp4())),
    ("ip-options", 4, lambda: v4(raw_tcp(), options=b"\x94\x04\0\0")),
    ("ip-options-nop", 4, lambda: v4(raw_tcp(), options=b"\x01\x01\x01\x00")),
    ("first-fragment", 4, lambda: v4(raw_tcp(payload=bytes(8)), mf=True, df=False)),
    ("later-fragment", 4, lambda: v4(raw_tcp(), frag_off=8, df=False)),
    ("v6-fragment", 41, lambda: _frag6(raw_tcp())),
    ("v6-hbh", 41, lambda: P.ipv6_packet(V6S, V6D, 0, P.ipv6_ext(6) + raw_tcp())),
    ("v6-dstopts", 41, lambda: P.ipv6_packet(V6S, V6D, 60, P.ipv6_ext(6) + raw_tcp())),
    ("v6-routing", 41, lambda: P.ipv6_packet(V6S, V6D, 43, P.ipv6_ext(6, bytes(6)) + raw_tcp())),
    ("jumbogram", 41, lambda: v6(raw_tcp(), payload_length=0)),
    ("v4-in-41", 41, lambda: v4(raw_tcp())),
    ("v6-in-4", 4, lambda: v6(raw_tcp())),
    ("v4-total-over", 4, lambda: v4(raw_tcp(), total_length=41)),
    ("v4-total-under-tcp", 4, lambda: v4(raw_tcp(), total_length=39)),
    ("v4-total-19", 4, lambda: v4(raw_tcp(), total_length=19)),
    ("v6-pl-over", 41, lambda: v6(raw_tcp(), payload_length=21)),
    ("v6-pl-under-tcp", 41, lambda: v6(raw_tcp(), payload_length=19)),
    ("doff4", 4, lambda: v4(raw_tcp(doff=4))),
    ("doff0", 6, lambda: raw_tcp(doff=0)),
    ("doff-past-end", 6, lambda: raw_tcp(doff=6)),
    ("doff-past-ip-length", 4, lambda: v4(raw_tcp(b"\x01" * 4, doff=6))[:-4]),
    ("truncated-tcp", 4, lambda: v4(raw_tcp(), total_length=40)[:39]),
    ("truncated-ip", 4, lambda: v4(raw_tcp())[:19]),
    ("truncated-v6", 41, lambda: v6(raw_tcp())[:39]),
    ("transport-19", 6, lambda: raw_tcp()[:19]),
    ("empty", 4, lambda: b""),
    ("dummy", 59, lambda: tcp4(b"x")),
    ("nh0", 0, lambda: tcp4()),
]


@pytest.mark.parametrize("name,nh,mk", NO_HEADERS, ids=[x[0] for x in NO_HEADERS])
def test_plan_no_headers(name, nh, mk):
    p = plan(nh, mk())
    assert p.length == 0 and p.headers == b""


def test_plan_tcp_ending_exactly_at_limits():
    # TCP header ending exactly at the IPv4 total length / IPv6 payload length
    assert plan(4, v4(raw_tcp())).length == 40
    assert plan(41, v6(raw_tcp())).length == 60
    assert plan(6, raw_tcp()).length == 20
    # largest TCP header: 60 bytes
    assert plan(4, v4(raw_tcp(b"\x01" * 40))).length == 80
    # DF and a non-zero reserved/TOS make no difference
    assert plan(4, v4(raw_tcp(), df=False, tos=0xB8)).length == 40


def rand_opts(rng, n):
    out = b""
    kinds = [0, 1, 2, 3, 4, 5, 8, 19, 29, 30, 34, 254, rng.randrange(256)]
    while len(out) < n:
        k = rng.choice(kinds)
        if k in (0, 1):
            out += bytes((k,))
            continue
        ln = rng.choice([2, 3, 4, 10, 18, rng.randrange(0, 12)])
        out += bytes((k, ln)) + rng.randbytes(max(0, ln - 2))
    out = out[:n]
    if rng.random() < 0.2:
        out = out[:rng.randrange(n + 1)]
        out += bytes(n - len(out))             # EOL-padded
    return out


def rand_inner(rng):
    fam = rng.choice(["v4", "v6", "transport", "udp"])
    opts = rand_opts(rng, 4 * rng.randrange(11))
    seg = raw_tcp(opts, rng.randbytes(rng.choice([0, 1, 2, 3, 50, 300])),
                  urg=rng.choice([0, 0, 1, 0xFFFF, rng.randrange(65536)]),
                  csum=rng.randrange(65536), flags=rng.randrange(256))
    if fam == "v4":
        return 4, v4(seg, ident=rng.randrange(65536))
    if fam == "v6":
        return 41, v6(seg)
    if fam == "udp":
        return 4, P.udp_packet(V4S, V4D, 1, 2, rng.randbytes(rng.randrange(40)))
    return 6, seg


def test_restore_round_trip_random():
    rng = random.Random(20240602)
    seen = set()
    for i in range(600):
        nh, inner = rand_inner(rng)
        p = plan(nh, inner)
        seen.add(p.flags)
        tfc = bytes(rng.randrange(4)) if nh != 6 and rng.random() < 0.3 else b""
        esp = Z.seal(0x300, i + 1, False, HK, PK, nh, inner,
                     iv_mask=rng.randrange(1 << 64), tfc=tfc)
        o = Z.open_full(esp, HK, PK, False)
        assert (o.nexthdr, o.inner, o.flags) == (nh, inner + tfc, p.flags)
        h = Z.open_headers(esp, HK)
        assert (h.length, h.nexthdr, h.flags, h.headers) == \
            (p.length, nh, p.flags, p.headers)
    assert seen == {0, 2, 4, 6}


# ===========================================================================
# Sections 2.2, 3, 3.1: layout, IV, nonces, AAD, hidden L
# ===========================================================================

def gcm_open(key, nonce, ct, aad):
    return AESGCM(key[:-4]).decrypt(nonce, ct, aad)


@pytest.mark.parametrize("esn", [False, True])
@pytest.mark.parametrize("keylen", [16, 24, 32])
@pytest.mark.parametrize("mask", [0, R])
def test_layout_iv_nonce_aad(esn, keylen, mask):
    hk, pk = keys(0x12345678, keylen)
    seq = (5 << 32) + 77 if esn else 77
    inner = tcp4(b"hello world", options=SACK_OPTS)
    esp = Z.seal(0x12345678, seq, esn, hk, pk, 4, inner, iv_mask=mask)
    assert esp[:4] == b"\x12\x34\x56\x78"
    assert esp[4:8] == (77).to_bytes(4, "big")                 # SeqLo only
    iv = esp[8:16]
    assert iv == (seq ^ mask).to_bytes(8, "big")
    p = plan(4, inner)
    L = p.length
    hz_end = 38 + L
    # ICV2 covers all after it, ICV1 the header zone's plaintext (3.1).
    hz_pt = gcm_open(hk, hk[-4:] + iv, esp[16:hz_end], esp[:16] + esp[hz_end:])
    epoch = b"\x00\x05" if esn else b"\x00\x00"               # SeqHi's low 16 bits
    assert hz_pt == L.to_bytes(2, "big") + b"\x04\x00" + epoch + p.headers
    assert Z.open_headers(esp, hk).epoch == (5 if esn else 0)
    P_ = esp[:4] + ((seq >> 32).to_bytes(4, "big") if esn else b"") + esp[4:8]
    pz_pt = gcm_open(pk, pk[-4:] + iv, esp[hz_end:], P_ + iv + hz_pt)
    # checksum (2) | payload | moved | padding (none) | pad length | nh
    assert pz_pt == inner[36:38] + inner[L:] + p.moved + b"\x00\x04"
    assert p.moved == b"" and p.csum == inner[36:38]
    assert len(esp) == 58 + len(inner)
    o = Z.open_full(esp, hk, pk, esn, seq >> 32)
    assert o.inner == inner and o.nexthdr == 4 and o.pad == 0
    if esn:                         # SeqHi is in the payload zone's AAD only
        with pytest.raises(AuthError) as ei:
            Z.open_full(esp, hk, pk, esn, (seq >> 32) + 1)
        assert ei.value.zone == "payload"
        with pytest.raises(AuthError):
            Z.open_full(esp, hk, pk, False)
    assert Z.open_headers(esp, hk).headers == p.headers


def test_iv_is_seq_xor_r_and_unchecked():
    for seq, mask in [(1, 0), (1, R), (0xFFFFFFFF, R), ((1 << 64) - 1, R),
                      (1 << 32, 1 << 32)]:
        esp = Z.seal(1, seq, True, HK, PK, 4, tcp4(b"a"), iv_mask=mask)
        assert int.from_bytes(esp[8:16], "big") == seq ^ mask
        assert Z.open_full(esp, HK, PK, True, seq >> 32).inner == tcp4(b"a")
    # R = seq: an all-zero IV is fine too (the receiver never checks it)
    esp = Z.seal(1, 9, False, HK, PK, 6, raw_tcp(), iv_mask=9)
    assert esp[8:16] == bytes(8)
    Z.open_full(esp, HK, PK, False)
    with pytest.raises(ValueError):
        Z.seal(1, 1 << 32, False, HK, PK, 6, raw_tcp())    # no ESN


@pytest.mark.parametrize("mask", [0, R])
def test_hidden_L(mask):
    inner = tcp6(b"x" * 33, options=SACK_OPTS)
    esp = Z.seal(0x300, 3, False, HK, PK, 41, inner, iv_mask=mask)
    L = 40 + 20 + len(SACK_OPTS)
    assert Z.peek_len(esp, HK) == L
    blk = Cipher(algorithms.AES(HK[:-4]), modes.ECB()).encryptor().update(
        HK[-4:] + esp[8:16] + b"\0\0\0\x02")
    assert Z.peek_block(HK, esp[8:16]) == blk
    assert int.from_bytes(esp[16:18], "big") ^ int.from_bytes(blk[:2], "big") == L
    # the wire bytes of L are ciphertext: not L, and they change with the IV
    wires = {Z.seal(0x300, s, False, HK, PK, 41, inner, iv_mask=mask)[16:18]
             for s in range(1, 20)}
    assert len(wires) > 10
    # a wrong L only makes ICV2 fail (or the zone fall past the end)
    for bit in range(16):
        bad = bytearray(esp)
        bad[16 + bit // 8] ^= 0x80 >> (bit % 8)
        newL = Z.peek_len(bytes(bad), HK)
        assert newL == L ^ (0x8000 >> bit)
        exc = AuthError if newL <= 512 and 38 + newL <= len(esp) else FormatError
        with pytest.raises(exc):
            Z.open_headers(bytes(bad), HK)
        with pytest.raises(LesError):
            Z.open_full(bytes(bad), HK, PK, False)
    # a PEP reads the whole packet: ICV2 fails on one cut after it
    assert Z.open_headers(esp, HK).headers == plan(41, inner).headers
    with pytest.raises(AuthError):
        Z.open_headers(esp[:38 + L], HK)
    with pytest.raises(FormatError):
        Z.open_headers(esp[:37 + L], HK)


def test_open_headers_payload_len():
    for nh, inner, n in [(4, tcp4(b"p" * 77), 77), (41, tcp6(b""), 0),
                         (6, raw_tcp(b"", b"q" * 1000), 1000),
                         (4, P.udp_packet(V4S, V4D, 1, 2, b"u"), None),
                         (59, b"dummy", None)]:
        esp = Z.seal(9, 1, False, HK, PK, nh, inner)
        h = Z.open_headers(esp, HK)
        assert h.payload_len == n and h.nexthdr == nh
        assert h.length == len(h.headers)


def test_v1_review_checksum_not_recoverable():
    """v1 put the real TCP checksum in the header zone, so a K2 holder could
    test guesses of a PIN-like payload against it.  v2: two segments that
    differ only in their payload look the same to a PEP."""
    a = Z.open_headers(Z.seal(9, 1, False, HK, PK, 4, tcp4(b"PIN=1234")), HK)
    b = Z.open_headers(Z.seal(9, 2, False, HK, PK, 4, tcp4(b"PIN=9876")), HK)
    assert tcp4(b"PIN=1234")[36:38] != tcp4(b"PIN=9876")[36:38]
    assert a == b
    assert tcp4(b"PIN=1234")[36:38] not in a.headers[36:38]


def test_v1_review_payload_dependent_options_hidden():
    """An MD5/TCP-AO signature (computed over the payload) is not in the
    header zone."""
    sig = bytes(range(0xA0, 0xB0))
    seg = raw_tcp(b"\x13\x12" + sig + b"\x01\x01", b"secret")
    h = Z.open_headers(Z.seal(9, 1, False, HK, PK, 6, seg), HK)
    assert sig not in h.headers and h.flags == Z.FLAG_OPTIONS_MOVED


def test_v1_review_keys_bound_to_spi_and_direction():
    """v1 used K2/K1 directly: one blob for two SAs shared keys and nonces."""
    blob = B.parse_blob(ep_blob())
    esp = Z.seal(0x100, 1, False, blob.header_key(0x100), blob.payload_key(0x100),
                 4, tcp4(b"x"))
    moved = (0x101).to_bytes(4, "big") + esp[4:]
    with pytest.raises(LesError):
        Z.open_full(moved, blob.header_key(0x101), blob.payload_key(0x101), False)
    rev = B.parse_blob(ep_blob(r2i=True))
    with pytest.raises(LesError):
        Z.open_full(esp, rev.header_key(0x100), rev.payload_key(0x100), False)
    with pytest.raises(LesError):                  # the raw roots are no keys
        Z.open_full(esp, K2[16], K1[16], False)


def test_v1_packet_does_not_open():
    """A v1-shaped packet (clear L after the IV, nh|flags|headers) is refused."""
    hz = AESGCM(HK[:-4]).encrypt(HK[-4:] + bytes(7) + b"\1", b"\x04\x00" + tcp4()[:40],
                                 bytes((0, 0, 0, 9, 0, 0, 0, 1)) + bytes(7) + b"\1\0\x2a")
    v1 = bytes((0, 0, 0, 9, 0, 0, 0, 1)) + bytes(7) + b"\1" + b"\0\x2a" + hz + bytes(20)
    with pytest.raises(LesError):
        Z.open_full(v1, HK, PK, False)
    with pytest.raises(LesError):
        Z.open_headers(v1, HK)


# ===========================================================================
# Section 3: padding, TFC, dummy packets, receiver checks
# ===========================================================================

def forge(nh, flags, headers, pz, *, L=None, seq=1, hk=HK, pk=PK, esn=False,
          epoch=None):
    """A packet with these zone plaintexts, sealed with valid ICVs.  The
    epoch defaults to the right one: SeqHi's low 16 bits."""
    headers = bytes(headers)
    L = len(headers) if L is None else L
    epoch = (seq >> 32) & 0xFFFF if epoch is None else epoch
    hz = L.to_bytes(2, "big") + bytes((nh, flags)) + epoch.to_bytes(2, "big") \
        + headers
    return Z.seal_raw(0x300, seq, esn, hk, hz, pk, pz, iv_mask=R)


def trailer(nh, pad=0):
    """Padding (1, 2, 3, ...), pad length, next header."""
    return bytes(range(1, pad + 1)) + bytes((pad, nh))


Z0 = b"\0\0"          # the checksum field of a packet with L = 0


def test_constants_no_alignment():
    assert all(Z.pad_len(n) == 0 for n in range(8))    # LES does not align
    assert Z.PAD_MAX == 255 and Z.ICV_LEN == 16 and Z.IV_LEN == 8
    assert Z.ESP_HDR_LEN == 8 and Z.HZ_OFF == 16 and Z.HZ_DESC_LEN == 6
    assert Z.HDRS_MAX == 512 and Z.CSUM_LEN == 2 and Z.PZ_MIN == 20
    assert Z.MIN_PACKET == 38 and Z.MIN_FULL_PACKET == 58 == Z.OVERHEAD
    assert (Z.FLAG_HEADER_ONLY, Z.FLAG_OPTIONS_MOVED, Z.FLAG_URGENT_MOVED) == (1, 2, 4)


@pytest.mark.parametrize("fam", ["v4", "v6", "udp", "transport", "dummy"])
@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 333])
def test_sender_adds_no_padding(fam, size):
    body = b"n" * size
    nh, inner = {"v4": (4, tcp4(body)), "v6": (41, tcp6(body)),
                 "udp": (4, P.udp_packet(V4S, V4D, 1, 2, body)),
                 "transport": (6, raw_tcp(payload=body)),
                 "dummy": (59, body)}[fam]
    s = Z.plan_seal(nh, inner)
    assert s.pad == 0 and s.pz_plain[-2:] == bytes((0, nh))
    assert s.pz_plain == s.plan.csum + inner[s.plan.length:] + bytes((0, nh))
    esp = Z.seal(0x300, 1, False, HK, PK, nh, inner)
    assert len(esp) == len(inner) + 58
    assert Z.open_full(esp, HK, PK, False).pad == 0


@pytest.mark.parametrize("extra", [0, 1, 2, 3, 10, 63, 254, 255])
def test_padding_up_to_255_accepted(extra):
    inner = tcp4(b"abc")
    esp = Z.seal(0x300, 1, False, HK, PK, 4, inner, extra_pad=extra)
    assert len(esp) == len(inner) + 58 + extra
    o = Z.open_full(esp, HK, PK, False)
    assert o.inner == inner and o.pad == extra
    for bad in (256, -1):
        with pytest.raises(ValueError):
            Z.seal(0x300, 1, False, HK, PK, 4, inner, extra_pad=bad)


@pytest.mark.parametrize("pad", [0, 1, 7, 254, 255])
def test_any_pad_length_accepted(pad):
    """A receiver accepts any pad length up to 255."""
    inner = P.udp_packet(V4S, V4D, 1, 2, b"xyz")
    o = Z.open_full(forge(4, 0, b"", Z0 + inner + trailer(4, pad)), HK, PK,
                    False)
    assert o.inner == inner and o.pad == pad
    # with a header zone: padding after the moved bytes
    seg = raw_tcp(b"\x13\x06abcd\x01\x01", b"m", urg=3, csum=0x4242)
    p = plan(6, seg)
    o = Z.open_full(forge(6, p.flags, p.headers,
                          p.csum + b"m" + p.moved + trailer(6, pad)),
                    HK, PK, False)
    assert o.inner == seg and o.pad == pad


def test_tfc_padding_tunnel():
    for nh, inner in [(4, tcp4(b"data")), (41, tcp6(b"data")),
                      (4, P.udp_packet(V4S, V4D, 1, 2, b"u"))]:
        for tfc in (b"\0", bytes(13), b"\xff" * 100):
            esp = Z.seal(0x300, 1, False, HK, PK, nh, inner, tfc=tfc)
            o = Z.open_full(esp, HK, PK, False)
            assert o.inner == inner + tfc
            h = Z.open_headers(esp, HK)
            assert h.headers == plan(nh, inner).headers
            if h.payload_len is not None:
                assert h.payload_len == 4


def test_dummy_packet():
    for body in (b"", b"\0" * 40, bytes(range(200))):
        esp = Z.seal(0x300, 1, False, HK, PK, 59, body, iv_mask=R)
        assert Z.peek_len(esp, HK) == 0
        o = Z.open_full(esp, HK, PK, False)
        assert o.dummy and o.inner == body and o.nexthdr == 59
        h = Z.open_headers(esp, HK)
        assert (h.length, h.nexthdr, h.flags, h.headers) == (0, 59, 0, b"")
    assert not Z.open_full(Z.seal(1, 1, False, HK, PK, 4, tcp4()), HK, PK,
                           False).dummy


def test_trailer_errors():
    inner = P.udp_packet(V4S, V4D, 1, 2, b"xyz")
    ok = Z0 + inner + trailer(4, 3)
    Z.open_full(forge(4, 0, b"", ok), HK, PK, False)
    bad_pad = bytearray(ok)
    bad_pad[-3] ^= 1
    for pz, why in [(bytes(bad_pad), "padding"),
                    (Z0 + inner + b"\x01\x02\x04\x03\x04", "padding"),
                    (Z0 + inner[:1] + b"\xff\x04", "exceeds"),
                    (Z0 + b"\x01\x04", "exceeds"),
                    (b"\x00\x01\x02\x04", "exceeds"),  # the padding eats the checksum
                    (Z0 + inner + trailer(41), "disagree")]:
        with pytest.raises(FormatError, match=why):
            Z.open_full(forge(4, 0, b"", pz), HK, PK, False)


@pytest.mark.parametrize("flags", [0x08, 0x10, 0x80, 0xF8])
def test_unknown_flags(flags):
    seg = raw_tcp(payload=b"x")
    p = plan(6, seg)
    esp = forge(6, p.flags | flags, p.headers, p.csum + b"x" + p.moved + trailer(6))
    with pytest.raises(FormatError, match="flags"):
        Z.open_full(esp, HK, PK, False)
    with pytest.raises(FormatError, match="flags"):
        Z.open_headers(esp, HK)


def test_noncanonical_header_zone():
    seg = raw_tcp(b"\x02\x04\x05\xb4", b"payload", csum=0x1234)
    inner = v4(seg)
    p = plan(4, inner)
    L = p.length
    pay = inner[L:]

    def pz(moved=b"", payload=pay, csum=p.csum):
        return csum + payload + moved + trailer(4)

    # the genuine one opens
    assert Z.open_full(forge(4, 0, p.headers, pz()), HK, PK,
                       False).inner == inner
    bad = []
    # TCP headers hidden in the payload zone (L = 0)
    bad.append(forge(4, 0, b"", Z0 + inner + trailer(4)))
    # the real checksum left in the zone
    h = bytearray(p.headers); h[36:38] = b"\x12\x34"
    bad.append(forge(4, 0, h, pz()))
    # a wrong payload length in the checksum field
    h = bytearray(p.headers); h[37] ^= 1
    bad.append(forge(4, 0, h, pz()))
    # OPTIONS_MOVED although every option is kept
    bad.append(forge(4, Z.FLAG_OPTIONS_MOVED, p.headers, pz(inner[40:44])))
    # URGENT_MOVED with a zero urgent pointer
    bad.append(forge(4, Z.FLAG_URGENT_MOVED, p.headers, pz(b"\0\0")))
    # the urgent pointer left in the zone
    seg_u = raw_tcp(b"", b"u", urg=5)
    pu = plan(6, seg_u)
    h = bytearray(pu.headers); h[18:20] = b"\0\x05"
    bad.append(forge(6, 0, h, pu.csum + b"u" + trailer(6)))
    # an option that must move kept in the zone
    seg_m = raw_tcp(b"\x13\x06abcd\x01\x01", b"m")
    pm = plan(6, seg_m)
    bad.append(forge(6, 0, seg_m[:28][:16] + b"\0\x01" + seg_m[18:28],
                     seg_m[16:18] + b"m" + trailer(6)))
    # moved option replaced by something else than NOPs
    h = bytearray(pm.headers); h[20:26] = b"\x00" * 6
    bad.append(forge(6, Z.FLAG_OPTIONS_MOVED, h,
                     pm.csum + b"m" + pm.moved + trailer(6)))
    # zone options that disagree with the moved originals
    h = bytearray(pm.headers); h[26:28] = b"\x04\x02"
    bad.append(forge(6, Z.FLAG_OPTIONS_MOVED, h,
                     pm.csum + b"m" + pm.moved + trailer(6)))
    # a UDP "header zone"
    udp = P.udp_packet(V4S, V4D, 1, 2, b"x" * 12)
    bad.append(forge(4, 0, udp[:28], Z0 + udp[28:] + trailer(4)))
    # a header zone with TCP but a next header that carries none
    bad.append(forge(17, 0, seg[:24], Z0 + seg[24:] + trailer(17)))
    # flags on an empty zone
    bad.append(forge(4, Z.FLAG_URGENT_MOVED, b"", Z0 + inner + b"\0\0" + trailer(4)))
    bad.append(forge(4, Z.FLAG_URGENT_MOVED, b"", Z0 + inner + trailer(4)))
    # IPv4 header with options in the zone
    io4 = v4(raw_tcp(), options=b"\x01\x01\x01\x00")
    bad.append(forge(4, 0, io4[:44], b"\0\0" + trailer(4)))
    # a truncated zone: TCP header cut short of its data offset
    bad.append(forge(4, 0, p.headers[:40], p.csum + p.headers[40:] + pay + trailer(4)))
    # L = 0 with a non-zero checksum field (UDP, dummy, TCP fragment)
    bad.append(forge(4, 0, b"", b"\0\x01" + udp + trailer(4)))
    bad.append(forge(59, 0, b"", b"\xff\xff" + b"dummy" + trailer(59)))
    frag = v4(raw_tcp(payload=bytes(8)), mf=True, df=False)
    bad.append(forge(4, 0, b"", frag[36:38] + frag + trailer(4)))
    # moved bytes after an empty payload zone cannot fit
    bad.append(forge(6, pm.flags, pm.headers, pm.csum + pm.moved[:3] + trailer(6)))
    # no room for the checksum field (L > 0): payload zone of pl + nh only
    bad.append(forge(6, 0, pu.headers[:16] + b"\0\0\0\0", b"\x00\x06"))
    for i, esp in enumerate(bad):
        with pytest.raises(FormatError):
            Z.open_full(esp, HK, PK, False)
        assert isinstance(esp, bytes), i


def test_header_only_on_endpoint_sa():
    inner = tcp4()
    p = plan(4, inner)
    # by length: nothing after ICV2, even with flags 0 (no decryption needed)
    esp = Z.seal_raw(0x300, 1, False, HK, Z.hz_plaintext(4, 0, p.headers))
    with pytest.raises(PolicyError):
        Z.open_full(esp, HK, PK, False)
    with pytest.raises(PolicyError):
        Z.open_full(esp, HK, b"\0" * 20, False)       # before any decryption
    # by flag: a payload zone follows but HEADER_ONLY is set
    esp = forge(4, Z.FLAG_HEADER_ONLY, p.headers, p.csum + p.moved + trailer(4))
    with pytest.raises(PolicyError):
        Z.open_full(esp, HK, PK, False)
    # a header-only packet sealed with the endpoint's header key
    esp = Z.seal_header_only(0x300, 1, False, HK, 4, ack4())
    with pytest.raises(PolicyError):
        Z.open_full(esp, HK, PK, False)


def test_receiver_check_order():
    """After both ICVs: unknown flags (malformed) before HEADER_ONLY
    (policy), HEADER_ONLY before the trailer and the rest (malformed)."""
    p = plan(4, tcp4(b"x"))
    good_pz = p.csum + b"x" + trailer(4)
    bad_pz = p.csum + b"x" + b"\x09\x06"          # pad 9 > zone, wrong nh
    with pytest.raises(FormatError, match="unknown"):
        Z.open_full(forge(4, Z.FLAG_HEADER_ONLY | 0x08, p.headers, bad_pz),
                    HK, PK, False)
    for pz in (good_pz, bad_pz, b"\0\0\0\0"):
        with pytest.raises(PolicyError):
            Z.open_full(forge(4, Z.FLAG_HEADER_ONLY, p.headers, pz), HK, PK,
                        False)
    with pytest.raises(FormatError):
        Z.open_full(forge(4, 0, p.headers, bad_pz), HK, PK, False)


def test_epoch_sealed():
    """Section 3: the header zone's epoch is SeqHi's low 16 bits; 0 without
    ESN.  It is sent, encrypted, at header-zone plaintext bytes 4-5."""
    inner = tcp4(b"e")
    for seq, esn, epoch in [(0x1_0000_0005, True, 1), (5, False, 0),
                            (5, True, 0), (0xFFFFFFFF, False, 0),
                            (0x1_2345_0000_0001, True, 0x2345),
                            ((1 << 64) - 1, True, 0xFFFF)]:
        assert Z.epoch_of(seq) == epoch
        s = Z.plan_seal(4, inner, epoch=Z.epoch_of(seq))
        assert s.hz_plain[4:6] == epoch.to_bytes(2, "big")
        esp = Z.seal(0x300, seq, esn, HK, PK, 4, inner, iv_mask=R)
        L = Z.peek_len(esp, HK)
        pt = gcm_open(HK, HK[-4:] + esp[8:16], esp[16:38 + L],
                      esp[:16] + esp[38 + L:])
        assert pt[:6] == L.to_bytes(2, "big") + b"\x04\x00" + \
            epoch.to_bytes(2, "big")
        assert Z.open_headers(esp, HK).epoch == epoch
        assert Z.open_full(esp, HK, PK, esn, seq >> 32).inner == inner
        ho = Z.seal_header_only(0x300, seq, esn, HK, 4, ack4(), iv_mask=R)
        assert Z.open_headers(ho, HK).epoch == epoch
        assert Z.open_header_only(ho, HK, esn, True, seq >> 32) == ack4()
    assert Z.hz_plaintext(6, 0, b"") == b"\0\0\x06\0\0\0"      # epoch=0 default
    assert Z.hz_plaintext(6, 2, b"ab", 0x1234) == b"\0\x02\x06\x02\x12\x34ab"
    assert Z.hz_plaintext(6, 2, b"ab", epoch=7)[4:6] == b"\0\x07"
    for bad in (-1, 0x10000):
        with pytest.raises(ValueError):
            Z.hz_plaintext(6, 0, b"", bad)


def test_epoch_wrong_seq_hi_fails_icv1_first():
    """open_full with a wrong seq_hi: with ESN the payload zone's AAD holds
    SeqHi, so ICV1 fails (auth, zone "payload") before the epoch is looked
    at.  Without ESN seq_hi is not used at all."""
    seq = 0x1_0000_0005
    esp = Z.seal(0x300, seq, True, HK, PK, 4, tcp4(b"x"), iv_mask=R)
    for hi in (0, 2, 0x10001):        # 0x10001: same epoch, still not SeqHi
        with pytest.raises(AuthError) as ei:
            Z.open_full(esp, HK, PK, True, hi)
        assert ei.value.zone == "payload"
    plain = Z.seal(0x300, 5, False, HK, PK, 4, tcp4(b"x"))
    assert Z.open_full(plain, HK, PK, False, 3).inner == tcp4(b"x")


def test_epoch_checked_after_both_icvs():
    """A packet whose epoch is wrong but whose ICVs are both valid (sealed
    with seal_raw) is malformed (FormatError), with or without ESN."""
    seg = raw_tcp(payload=b"x")
    p = plan(6, seg)
    pz = p.csum + b"x" + p.moved + trailer(6)
    seq = 0x1_0000_0005
    assert Z.open_full(forge(6, 0, p.headers, pz, seq=seq, esn=True), HK, PK,
                       True, 1).inner == seg
    for epoch in (0, 2, 0xFFFF):
        esp = forge(6, 0, p.headers, pz, seq=seq, esn=True, epoch=epoch)
        assert Z.open_headers(esp, HK).epoch == epoch    # a PEP reads it as is
        with pytest.raises(FormatError, match="epoch"):
            Z.open_full(esp, HK, PK, True, 1)
    for epoch in (1, 0x8000):                              # no ESN: must be 0
        with pytest.raises(FormatError, match="epoch"):
            Z.open_full(forge(6, 0, p.headers, pz, epoch=epoch), HK, PK, False)
    # empty header zone (L = 0) too
    udp = P.udp_packet(V4S, V4D, 1, 2, b"u")
    with pytest.raises(FormatError, match="epoch"):
        Z.open_full(forge(4, 0, b"", Z0 + udp + trailer(4), epoch=1), HK, PK,
                    False)
    # header-only packets: the PEP-origin SA checks it as well
    po = B.parse_blob(PO).header_key(0x99)
    for esn, hi, epoch in [(False, 0, 1), (True, 1, 0), (True, 0x10005, 4)]:
        e = Z.seal_raw(0x99, hi << 32 | 1 if esn else 1, esn, po,
                       Z.hz_plaintext(4, Z.FLAG_HEADER_ONLY, ack4(), epoch))
        with pytest.raises(FormatError, match="epoch"):
            Z.open_header_only(e, po, esn, True, hi)
        with pytest.raises(FormatError, match="epoch"):
            Z.open_header_only(e, po, esn, None, hi)


def test_epoch_check_order():
    """Unknown flags (malformed) and HEADER_ONLY (policy) before the epoch;
    the epoch (malformed) before the trailer checks."""
    p = plan(4, tcp4(b"x"))
    bad_pz = p.csum + b"x" + b"\x09\x06"          # pad 9 > zone, wrong nh
    with pytest.raises(FormatError, match="unknown"):
        Z.open_full(forge(4, 0x08, p.headers, bad_pz, epoch=3), HK, PK, False)
    with pytest.raises(PolicyError):
        Z.open_full(forge(4, Z.FLAG_HEADER_ONLY, p.headers, bad_pz, epoch=3),
                    HK, PK, False)
    with pytest.raises(FormatError, match="epoch"):
        Z.open_full(forge(4, 0, p.headers, bad_pz, epoch=3), HK, PK, False)
    # header-only: the flags (policy) before the epoch, the epoch before
    # the content rules (policy)
    po = B.parse_blob(PO).header_key(0x99)
    e = Z.seal_raw(0x99, 1, False, po, Z.hz_plaintext(4, 0, ack4(0x18), 1))
    with pytest.raises(PolicyError):
        Z.open_header_only(e, po, False, True)
    e = Z.seal_raw(0x99, 1, False, po,
                   Z.hz_plaintext(4, Z.FLAG_HEADER_ONLY, ack4(0x18), 1))
    with pytest.raises(FormatError, match="epoch"):
        Z.open_header_only(e, po, False, True)


def test_replay_seq():
    """Section 7: SeqHi's low 16 bits from the epoch, its high bits those
    nearest the window top's SeqHi (ties: the lower); an empty window takes
    SeqHi = epoch."""
    rs = Z.replay_seq
    assert rs(None, 0, 7) == 7
    assert rs(None, 5, 0xFFFFFFFF) == 5 << 32 | 0xFFFFFFFF
    assert rs(None, 0xFFFF, 1) == 0xFFFF << 32 | 1
    top = 5 << 32 | 100
    assert rs(top, 5, 90) == 5 << 32 | 90             # same SeqHi
    assert rs(top, 5, 0xFFFFFFFF) == 5 << 32 | 0xFFFFFFFF
    assert rs(top, 4, 0xFFFFFFF0) == 4 << 32 | 0xFFFFFFF0   # just before
    assert rs(top, 6, 3) == 6 << 32 | 3
    # across a 2^16 block of SeqHi
    top = 0x3_FFFF << 32 | 9
    assert rs(top, 0, 1) == 0x4_0000 << 32 | 1
    assert rs(top, 0xFFFE, 1) == 0x3_FFFE << 32 | 1
    top = 0x4_0000 << 32 | 9
    assert rs(top, 0xFFFF, 1) == 0x3_FFFF << 32 | 1
    assert rs(top, 0x7FFF, 1) == 0x4_7FFF << 32 | 1
    # exactly half the epoch space away: the lower of the two
    assert rs(0x4_0000 << 32, 0x8000, 1) == 0x3_8000 << 32 | 1
    assert rs(0x4_8000 << 32, 0, 1) == 0x4_0000 << 32 | 1
    assert rs(0x4_7FFF << 32, 0xFFFF, 1) == 0x3_FFFF << 32 | 1   # 0x8000 up, 0x8000 down
    assert rs(0x4_8001 << 32, 0, 1) == 0x5_0000 << 32 | 1
    # below SeqHi 0: no such sequence number
    assert rs(7, 0xFFFF, 1) is None
    assert rs(0x0_8000 << 32, 0x8000 + 0x8000 - 1, 0) == 0xFFFF << 32
    assert rs(0x0_7FFF << 32, 0xFFFF, 0) is None      # tie: the lower, -1
    assert rs(0x0_7FFF << 32, 0, 0) == 0
    assert rs(0x0_8000 << 32, 0, 5) == 5           # tie: lower, and >= 0
    assert rs(0x0_7FFE << 32, 0xFFFF, 0) is None
    # above SeqHi 2^32 - 1: none either
    assert rs(0xFFFF_FFFF << 32, 0, 0) is None
    assert rs(0xFFFF_FFFF << 32, 0xFFFF, 3) == 0xFFFF_FFFF << 32 | 3
    # every stream position stays where it was sent, up to 2^15 SeqHi away
    rng = random.Random(5)
    for _ in range(2000):
        top = rng.randrange(1 << 64)
        d = rng.randrange(-0x8000 << 32, 0x7FFF << 32)
        seq = top + d
        if 0 <= seq < 1 << 64 and (top >> 32) - (seq >> 32) <= 0x8000 and \
                (seq >> 32) - (top >> 32) < 0x8000:
            assert rs(top, Z.epoch_of(seq), seq & 0xFFFFFFFF) == seq
    for bad in ((0, -1, 0), (0, 0x10000, 0), (0, 0, 1 << 32), (1 << 64, 0, 0)):
        with pytest.raises(ValueError):
            rs(*bad)


def test_smallest_payload_zone():
    """20 bytes after ICV2 (checksum, pad length, next header, ICV1) is a
    valid payload zone; 1 to 19 is malformed; 0 is header-only."""
    esp = Z.seal(0x300, 1, False, HK, PK, 59, b"")
    assert len(esp) == 58
    assert Z.open_full(esp, HK, PK, False).inner == b""
    hdr = Z.seal_raw(0x300, 1, False, HK, Z.hz_plaintext(59, 0, b""))
    for n in range(1, 20):
        with pytest.raises(FormatError):
            Z.open_full(hdr + bytes(n), HK, PK, False)
    with pytest.raises(PolicyError):
        Z.open_full(hdr, HK, PK, False)


def test_moved_len_and_restore_api():
    seg = raw_tcp(b"\x13\x06abcd\x01\x01", b"q", urg=0x0102, csum=0x0304)
    p = plan(6, seg)
    assert Z.moved_len(6, p.flags, p.headers) == 10
    assert Z.moved_len(6, Z.FLAG_URGENT_MOVED, p.headers) == 2
    assert Z.moved_len(6, 0, p.headers) == 0
    assert Z.moved_len(4, 0, b"") == 0
    for flags in (Z.FLAG_URGENT_MOVED, Z.FLAG_OPTIONS_MOVED):
        with pytest.raises(FormatError):
            Z.moved_len(4, flags, b"")
    with pytest.raises(FormatError):
        Z.moved_len(6, Z.FLAG_HEADER_ONLY, p.headers)
    assert Z.restore(6, p.flags, p.headers, p.csum, p.moved) == seg[:28]
    assert Z.restore(4, 0, b"", b"\0\0", b"") == b""
    with pytest.raises(FormatError):
        Z.restore(6, p.flags, p.headers, p.csum, p.moved[:-1])
    with pytest.raises(FormatError):
        Z.restore(6, p.flags, p.headers, b"\0", p.moved)
    assert not hasattr(p, "residue") and not hasattr(Z, "residue_len")


def test_malformed_layout():
    esp = Z.seal(0x300, 1, False, HK, PK, 4, tcp4(b"abc"))
    L = Z.peek_len(esp, HK)
    for n in (0, 8, 16, 18, 20, 22, 36, 37):
        with pytest.raises(FormatError):
            Z.open_full(esp[:n], HK, PK, False)
        with pytest.raises(FormatError):
            Z.open_headers(esp[:n], HK)
    for n in range(38, 38 + L):                       # header zone past the end
        with pytest.raises(FormatError):
            Z.open_full(esp[:n], HK, PK, False)
    for n in range(38 + L + 1, 38 + L + 20):          # payload zone too short
        with pytest.raises(FormatError):
            Z.open_full(esp[:n], HK, PK, False)
    # L > 512 (a valid ICV2 over a 513-byte zone does not help)
    big = Z.seal_raw(0x300, 1, False, HK, Z.hz_plaintext(59, 0, bytes(513)),
                     PK, Z0 + trailer(59))
    assert Z.peek_len(big, HK) == 513
    with pytest.raises(FormatError, match="512"):
        Z.open_full(big, HK, PK, False)
    with pytest.raises(FormatError, match="512"):
        Z.open_headers(big, HK)
    ok = Z.seal_raw(0x300, 1, False, HK, Z.hz_plaintext(59, 0, bytes(512)))
    with pytest.raises(FormatError):                  # 512: layout ok, zone not
        Z.open_headers(ok, HK)


def _sample(size=30, seq=11, esn=False):
    inner = tcp4(bytes(range(size)), options=SACK_OPTS)
    return Z.seal(0x300, seq, esn, HK, PK, 4, inner, iv_mask=R), inner, seq


def test_flip_every_byte():
    """Wire format 3: a PEP refuses what an endpoint refuses, a bit flipped
    in the payload zone or ICV1 included (ICV2 covers them, 3.1)."""
    esp, inner, _ = _sample()
    for i in range(len(esp)):
        bad = bytearray(esp)
        bad[i] ^= 0x01
        with pytest.raises((AuthError, FormatError)):
            Z.open_full(bytes(bad), HK, PK, False)
        with pytest.raises((AuthError, FormatError)):
            Z.open_headers(bytes(bad), HK)


def test_pep_refuses_payload_zone_mutants():
    """What passed a PEP in wire format 2 (docs/accel.md 8): the payload
    zone replaced, cut or extended under an intact header zone."""
    esp, _, _ = _sample(30, 11)
    other, _, _ = _sample(30, 12)
    L = Z.peek_len(esp, HK)
    end = 38 + L
    for bad in (esp[:end] + other[end:], esp[:-1], esp + b"\0",
                esp[:end] + esp[end + 1:], esp[:end]):
        with pytest.raises(AuthError) as ei:
            Z.open_headers(bad, HK)
        assert ei.value.zone == "header"


def test_reseal_header_zone_fails_icv1():
    """A K2 holder re-seals the header zone with a valid ICV2: ICV1 fails."""
    esp, inner, seq = _sample()
    L = Z.peek_len(esp, HK)
    aad = esp[:16] + esp[38 + L:]
    pt = gcm_open(HK, HK[-4:] + esp[8:16], esp[16:38 + L], aad)
    forged = bytearray(pt)
    forged[6 + 8] ^= 0xFF                                   # TTL
    hz = AESGCM(HK[:-4]).encrypt(HK[-4:] + esp[8:16], bytes(forged), aad)
    bad = esp[:16] + hz + esp[38 + L:]
    assert Z.open_headers(bad, HK).headers[8] == forged[14]  # PEP accepts it
    assert Z.reseal_header_zone(esp, HK, bytes(forged)) == bad
    with pytest.raises(AuthError) as ei:
        Z.open_full(bad, HK, PK, False)
    assert ei.value.zone == "payload"
    # Its own header zone, unchanged, over another packet's payload zone.
    other, _, _ = _sample(30, seq + 1)
    Lo = Z.peek_len(other, HK)
    moved = Z.reseal_header_zone(esp[:38 + L] + other[38 + Lo:], HK, pt)
    assert Z.open_headers(moved, HK).headers == Z.open_headers(esp, HK).headers
    with pytest.raises(AuthError) as ei:
        Z.open_full(moved, HK, PK, False)
    assert ei.value.zone == "payload"


def test_swap_payload_zones():
    a, _, _ = _sample(30, 11)
    b, _, _ = _sample(30, 12)
    La = Z.peek_len(a, HK)
    mixed = a[:38 + La] + b[38 + La:]
    with pytest.raises(AuthError):
        Z.open_full(mixed, HK, PK, False)


def test_wrong_keys():
    esp, _, _ = _sample()
    hk2, pk2 = keys(0x301)
    with pytest.raises(LesError):
        Z.open_full(esp, hk2, PK, False)
    with pytest.raises(AuthError) as ei:
        Z.open_full(esp, HK, pk2, False)
    assert ei.value.zone == "payload"
    with pytest.raises(LesError):
        Z.open_headers(esp, hk2)
    with pytest.raises(LesError):                # payload key as header key
        Z.open_full(esp, PK, PK, False)


@pytest.mark.parametrize("keylen", [16, 24, 32])
@pytest.mark.parametrize("esn", [False, True])
@pytest.mark.parametrize("fam", ["v4", "v6", "transport"])
def test_round_trip(keylen, esn, fam):
    hk, pk = keys(0xAB00 + keylen, keylen, r2i=esn)
    seq = (3 << 32) + 5 if esn else 5
    for size in (0, 1, 2, 3, 100, 1400):
        body = bytes(i & 0xFF for i in range(size))
        inner, nh = {"v4": (tcp4(body, 0x18, SACK_OPTS), 4),
                     "v6": (tcp6(body, 0x18, b"\x02\x04\x05\xa0"), 41),
                     "transport": (raw_tcp(b"", body), 6)}[fam]
        esp = Z.seal(0xAB00 + keylen, seq, esn, hk, pk, nh, inner, iv_mask=R)
        o = Z.open_full(esp, hk, pk, esn, seq >> 32)
        assert (o.nexthdr, o.inner, o.flags) == (nh, inner, 0)


# ===========================================================================
# Section 3.2: overhead against ESP
# ===========================================================================

PEP_OPTS = [b"", b"\x02\x04\x05\xb4", b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + bytes(8)
            + b"\x01\x03\x03\x07", b"\x01\x01\x08\x0a" + bytes(8),
            SACK_OPTS, b"\x01\x01\x05\x22" + bytes(32),
            b"\x01\x01\x08\x0a" + bytes(8) + b"\x01\x01\x05\x1a" + bytes(24)]


@pytest.mark.parametrize("fam", ["v4", "v6", "transport"])
def test_overhead_tcp_21_to_24(fam):
    seen = set()
    for opts in PEP_OPTS:
        for size in range(0, 9):
            body = b"d" * size
            inner, nh = {"v4": (tcp4(body, options=opts), 4),
                         "v6": (tcp6(body, options=opts), 41),
                         "transport": (raw_tcp(_pad4(opts), body), 6)}[fam]
            assert Z.hz_plan(nh, inner).moved == b""
            esp = Z.seal(1, 1, False, HK, PK, nh, inner)
            assert len(esp) == len(inner) + 58 == Z.les_len(len(inner))
            d = len(esp) - rfc4303_len(len(inner))
            assert d == len(esp) - Z.rfc4303_esp_len(len(inner))
            assert 21 <= d <= 24, (opts, size)
            seen.add(d)
    assert seen == {21, 22, 23, 24}


@pytest.mark.parametrize("size", [0, 1, 2, 3, 57, 1000])
def test_overhead_58_without_header_zone(size):
    seen = set()
    for nh, inner in [(4, P.udp_packet(V4S, V4D, 1, 2, b"u" * size)),
                      (41, P.udp_packet(V6S, V6D, 1, 2, b"u" * size)),
                      (17, P.udp_segment(V4S, V4D, 1, 2, b"u" * size)),
                      (4, P.ipv4_packet(V4S, V4D, 1, bytes(8 + size))),
                      (4, v4(raw_tcp(payload=b"f" * size), mf=True, df=False)),
                      (59, b"x" * size)]:
        esp = Z.seal(1, 1, False, HK, PK, nh, inner)
        assert Z.peek_len(esp, HK) == 0
        assert len(esp) == len(inner) + 58
        d = len(esp) - rfc4303_len(len(inner))
        assert 21 <= d <= 24
        seen.add(d)
    assert len(seen) >= 1


def test_overhead_udp_all_residues():
    ds = set()
    for size in range(8):
        for nh, inner in [(4, P.udp_packet(V4S, V4D, 1, 2, b"u" * size)),
                          (41, P.udp_packet(V6S, V6D, 1, 2, b"u" * size))]:
            esp = Z.seal(1, 1, False, HK, PK, nh, inner)
            assert len(esp) - len(inner) == 58
            ds.add(len(esp) - rfc4303_len(len(inner)))
    assert ds == {21, 22, 23, 24}


def test_overhead_moved_bytes_cost_their_length():
    opts = b"\x13\x12" + bytes(16) + b"\x01\x01"
    for size in range(4):
        for urg in (0, 9):
            inner = v4(raw_tcp(opts, b"m" * size, urg=urg))
            esp = Z.seal(1, 1, False, HK, PK, 4, inner)
            moved = len(opts) + (2 if urg else 0)
            assert len(Z.hz_plan(4, inner).moved) == moved
            assert len(esp) == len(inner) + 58 + moved
            d = len(esp) - rfc4303_len(len(inner))
            assert 21 <= d - moved <= 24


# ===========================================================================
# Section 5: header-only packets
# ===========================================================================

def ack4(flags=0x10, payload=b"", options=b"", **kw):
    return P.tcp_packet(V4S, V4D, 80, 40000, 5, 6, flags, 100, options,
                        payload, **kw)


def ack6(flags=0x10, payload=b"", options=b"", **kw):
    return P.tcp_packet(V6S, V6D, 80, 40000, 5, 6, flags, 100, options,
                        payload, **kw)


OK = Z.PoVerdict.OK


@pytest.mark.parametrize("flags", [0x10, 0x50, 0x90, 0xD0])
def test_po_accepts_acks(flags):
    assert Z.pep_origin_check(4, ack4(flags), True) == OK
    assert Z.pep_origin_check(41, ack6(flags), True) == OK
    assert Z.pep_origin_check(41, ack6(flags, options=SACK_OPTS), True) == OK
    seg = P.tcp_segment(V4S, V4D, 1, 2, 3, 4, flags, options=SACK_OPTS)
    assert Z.pep_origin_check(6, seg, False) == OK


@pytest.mark.parametrize("flags", [0x00, 0x40, 0x11, 0x12, 0x14, 0x18, 0x30,
                                   0x02, 0x01, 0xFF])
def test_po_refuses_flags(flags):
    assert Z.pep_origin_check(4, ack4(flags), True) == Z.PoVerdict.FLAGS
    seg = P.tcp_segment(V4S, V4D, 1, 2, 3, 4, flags)
    assert Z.pep_origin_check(6, seg, False) == Z.PoVerdict.FLAGS


def test_po_refusals():
    v = Z.PoVerdict
    ck = Z.pep_origin_check
    assert ck(4, ack4(payload=b"x"), True) == v.PAYLOAD
    assert ck(6, P.tcp_segment(V4S, V4D, 1, 2, payload=b"x"), False) == v.PAYLOAD
    for p, nh in ((ack4(total_length=41), 4), (ack4(total_length=39), 4),
                  (ack6(payload_length=21), 41), (ack6(payload_length=19), 41)):
        assert ck(nh, p, True) != OK                 # IP length != L
    assert ck(4, P.udp_packet(V4S, V4D, 1, 2, b""), True) == v.NOT_TCP
    assert ck(4, P.ipv4_packet(V4S, V4D, 1, bytes(8)), True) == v.NOT_TCP
    assert ck(4, P.ipv4_packet(V4S, V4D, 47, bytes(4)), True) == v.NOT_TCP
    assert ck(17, P.udp_segment(V4S, V4D, 1, 2, b""), False) == v.NOT_TCP
    assert ck(6, ack4(), True) != OK
    assert ck(4, ack4(), False) != OK
    assert ck(41, ack4(), True) != OK
    assert ck(4, ack4(total_length=39)[:39], True) != OK
    bad = bytearray(ack4())
    bad[32] = 0x40                             # doff 4
    assert ck(4, bytes(bad), True) != OK
    assert ck(6, b"", False) != OK
    assert ck(4, b"", True) != OK


def test_po_fragments():
    ck = Z.pep_origin_check
    seg = P.tcp_segment(V4S, V4D, 1, 2, 3, 4, 0x10)
    assert ck(4, P.ipv4_packet(V4S, V4D, 6, seg, mf=True, df=False), True) == \
        Z.PoVerdict.FRAGMENT
    assert ck(4, P.ipv4_packet(V4S, V4D, 6, seg, frag_off=8, df=False), True) != OK
    seg6 = P.tcp_segment(V6S, V6D, 1, 2, 3, 4, 0x10)
    for off, more in ((0, True), (8, False), (0, False)):   # atomic too
        f6 = P.ipv6_packet(V6S, V6D, 44, P.ipv6_frag(6, off, more) + seg6)
        assert ck(41, f6, True) == Z.PoVerdict.FRAGMENT


def test_po_refuses_extension_headers_and_ip_options():
    # A PEP sends neither: an endpoint takes none (protocol.md 5).
    seg6 = P.tcp_segment(V6S, V6D, 1, 2, 3, 4, 0x10)
    p = P.ipv6_packet(V6S, V6D, 0, P.ipv6_ext(6, b"\x05\x02\0\0") + seg6)
    assert Z.pep_origin_check(41, p, True) == Z.PoVerdict.OPTIONS
    p = P.ipv4_packet(V4S, V4D, 6, P.tcp_segment(V4S, V4D, 1, 2, 3, 4, 0x10),
                      options=b"\x94\x04\x00\x00")
    assert Z.pep_origin_check(4, p, True) == Z.PoVerdict.OPTIONS


TS_OPT = bytes((1, 1, 8, 10)) + (7).to_bytes(4, "big") + (9).to_bytes(4, "big")


@pytest.mark.parametrize("opts, ok", [
    (b"", True),
    (TS_OPT, True),
    (TS_OPT + bytes((1, 1, 5, 18)) + bytes(range(16)), True),
    (bytes((1, 1, 5, 10)) + bytes(8), True),
    (bytes((0, 0, 0, 0)), True),
    (bytes((1, 0, 0, 0)), True),
    (bytes((0, 1, 0, 0)), False),                     # bytes after EOL
    (bytes((30, 4, 0, 0)), False),                    # MPTCP
    (bytes((2, 4, 5, 0xb4)), False),                  # MSS outside a SYN
    (bytes((1, 3, 3, 7)), False),                     # window scale
    (bytes((1, 1, 8, 8)) + bytes(4), False),          # timestamps cut short
    (bytes((1, 1, 5, 14)) + bytes(12), False),        # half a SACK block
    (bytes((1, 1, 4, 2)), False),                     # SACK permitted
    (bytes((1, 1, 29, 4)), False),                    # TCP-AO
])
def test_po_tcp_options(opts, ok):
    for tunnel, nh, hdrs in (
            (False, 6, P.tcp_segment(V4S, V4D, 1, 2, 3, 4, 0x10, options=opts)),
            (True, 4, P.ipv4_packet(V4S, V4D, 6, P.tcp_segment(V4S, V4D, 1, 2, 3, 4, 0x10,
                                                                 options=opts))),
            (True, 41, P.ipv6_packet(V6S, V6D, 6, P.tcp_segment(V6S, V6D, 1, 2, 3, 4, 0x10,
                                                                  options=opts)))):
        want = OK if ok else Z.PoVerdict.OPTIONS
        assert Z.pep_origin_check(nh, hdrs, tunnel) == want, (nh, opts.hex())


@pytest.mark.parametrize("esn", [False, True])
@pytest.mark.parametrize("keylen", [16, 24, 32])
@pytest.mark.parametrize("which", ["v4", "v6", "transport"])
def test_header_only_round_trip(esn, keylen, which):
    spi, pep_id = 0x5000 + keylen, 3
    ep = ep_blob(keylen, r2i=esn)
    out = B.parse_blob(B.pep_origin_blob(ep, pep_id, "pep-origin-out"))
    inn = B.parse_blob(B.pep_origin_blob(ep, pep_id, "pep-origin-in"))
    if which == "transport":
        nh, hdrs, tunnel = 6, P.tcp_segment(V4S, V4D, 1, 2, 3, 4, 0x10,
                                            options=SACK_OPTS), False
    elif which == "v4":
        nh, hdrs, tunnel = 4, ack4(options=SACK_OPTS), True
    else:
        nh, hdrs, tunnel = 41, ack6(0x50), True
    seq = (1 << 32) + 9 if esn else 9
    esp = Z.seal_header_only(spi, seq, esn, out.header_key(spi), nh, hdrs,
                             iv_mask=R)
    L = len(hdrs)
    assert len(esp) == 38 + L
    assert esp[8:16] == (seq ^ R).to_bytes(8, "big")
    assert Z.peek_len(esp, inn.header_key(spi)) == L
    assert Z.open_header_only(esp, inn.header_key(spi), esn, tunnel,
                              seq >> 32) == hdrs
    h = Z.open_headers(esp, inn.header_key(spi))
    assert h == (L, nh, Z.FLAG_HEADER_ONLY, hdrs, None, 1 if esn else 0)
    assert h.epoch == (1 if esn else 0)
    if esn:                  # the epoch is checked against the inferred SeqHi
        for hi in (0, 2, 0x10002):
            with pytest.raises(FormatError, match="epoch"):
                Z.open_header_only(esp, inn.header_key(spi), esn, tunnel, hi)
        # only the low 16 bits are sent: a SeqHi 2^16 away agrees
        assert Z.open_header_only(esp, inn.header_key(spi), esn, tunnel,
                                  0x10001) == hdrs
    # not the pep-view's header key, another PEP's, another SPI's or K2 itself
    view = B.parse_blob(B.derive_blobs(ep, [])["pep-view"])
    other = B.parse_blob(B.pep_origin_blob(ep, pep_id + 1, "pep-origin-in"))
    for k in (view.header_key(spi), other.header_key(spi),
              inn.header_key(spi + 1), K2[keylen], inn.ko):
        with pytest.raises(LesError):
            Z.open_header_only(esp, k, esn, tunnel, seq >> 32)
    # an endpoint SA cannot open it (its header key gives a random L)
    epb = B.parse_blob(ep)
    with pytest.raises(LesError):
        Z.open_full(esp, epb.header_key(spi), epb.payload_key(spi), esn)


def test_header_only_policy():
    po = B.parse_blob(PO).header_key(0x99)
    hdrs = ack4()
    esp = Z.seal_header_only(0x99, 1, False, po, 4, hdrs)
    with pytest.raises(PolicyError):                     # data after ICV2
        Z.open_header_only(esp + bytes(18), po, False, True)
    with pytest.raises(PolicyError):
        Z.open_header_only(esp + b"\0", po, False, True)
    data = Z.seal(0x99, 1, False, po, PK, 4, hdrs)       # a data packet
    with pytest.raises(PolicyError):
        Z.open_header_only(data, po, False, True)
    for flags in (0, Z.FLAG_HEADER_ONLY | Z.FLAG_URGENT_MOVED, 0x81):
        e = Z.seal_raw(0x99, 1, False, po, Z.hz_plaintext(4, flags, hdrs))
        with pytest.raises(PolicyError):
            Z.open_header_only(e, po, False, True)
    for nh, h, tun, verdict in [
        (4, ack4(0x18), True, Z.PoVerdict.FLAGS),
        (4, ack4(payload=b"data"), True, Z.PoVerdict.PAYLOAD),
        (4, P.udp_packet(V4S, V4D, 1, 2, b""), True, Z.PoVerdict.NOT_TCP),
        (4, ack4(total_length=44) + bytes(4), True, Z.PoVerdict.PAYLOAD),
    ]:
        e = Z.seal_header_only(0x99, 2, False, po, nh, h)
        assert Z.open_header_only(e, po, False, None) == h   # no content check
        with pytest.raises(PolicyError) as ei:
            Z.open_header_only(e, po, False, tun)
        assert ei.value.verdict == verdict, (h.hex(), verdict)
    with pytest.raises(PolicyError):                     # transport SA
        Z.open_header_only(esp, po, False, False)
    with pytest.raises(ValueError):
        Z.seal_header_only(0x99, 1, False, po, 4, bytes(513))


def test_header_only_tamper():
    po = B.parse_blob(PO).header_key(0x99)
    esp = Z.seal_header_only(0x99, 1, False, po, 41, ack6(), iv_mask=R)
    for i in range(len(esp)):
        bad = bytearray(esp)
        bad[i] ^= 0x80
        with pytest.raises((AuthError, FormatError)):
            Z.open_header_only(bytes(bad), po, False, True)



# ===========================================================================
# packet.py
# ===========================================================================

def test_ipv4_checksum_known_answer():
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert P.checksum(hdr) == 0xB861
    p = P.ipv4_packet("192.168.0.1", "192.168.0.199", 17, bytes(0x73 - 20),
                      ident=0, df=True, ttl=64)
    assert p[:20] == bytes.fromhex("45000073000040004011b861c0a80001c0a800c7")


def test_tcp_checksums():
    for p in (tcp4(b"abc"), tcp6(b"abcd", options=SACK_OPTS), ack4(),
              P.udp_packet(V6S, V6D, 1, 2, b"xyz"),
              P.udp_packet(V4S, V4D, 1, 2, b"xyz")):
        assert P.verify_checksums(p)
        bad = bytearray(p)
        bad[-1] ^= 1
        assert not P.verify_checksums(bytes(bad))


def test_find_esp():
    esp, _, _ = _sample()
    for src, dst in ((V4S, V4D), (V6S, V6D)):
        ip = P.wrap_esp(src, dst, esp)
        f = P.find_esp(ip)
        assert f and f.esp == esp and not f.udp_encap and f.spi == 0x300
        assert str(f.outer.src) == src
        u = P.wrap_esp(src, dst, esp, udp_encap=True)
        f = P.find_esp(u)
        assert f and f.esp == esp and f.udp_encap
        assert P.verify_checksums(u)
        if src == V4S:
            assert u[20 + 6:20 + 8] == b"\0\0"        # RFC 3948: checksum 0
            assert u[20:22] == b"\x11\x94" and u[22:24] == b"\x11\x94"
        else:
            assert u[40 + 6:40 + 8] != b"\0\0"
        # Ethernet padding after the packet is ignored
        assert P.find_esp(ip + bytes(6)).esp == esp
    # NAT keepalive, IKE (non-ESP marker), other UDP ports, TCP: not ESP
    assert P.find_esp(P.udp_packet(V4S, V4D, 4500, 4500, b"\xff")) is None
    assert P.find_esp(P.udp_packet(V4S, V4D, 4500, 4500,
                                   bytes(4) + b"IKE header....")) is None
    assert P.find_esp(P.udp_packet(V4S, V4D, 1234, 5678, esp)) is None
    assert P.find_esp(tcp4(b"x")) is None
    assert P.find_esp(b"") is None
    # outer fragments are not parsed
    frag = P.ipv4_packet(V4S, V4D, 50, esp, mf=True, df=False)
    assert P.find_esp(frag) is None


def test_parse_ip_ext_headers():
    p = P.ipv6_packet(V6S, V6D, 0, P.ipv6_ext(50, bytes(4)) + b"ESPESPESPESP")
    info = P.parse_ip(p)
    assert info.proto == 50 and info.hdr_len == 48 and info.payload == b"ESPESPESPESP"
    assert P.find_esp(p).esp == b"ESPESPESPESP"


# ===========================================================================
# pcap.py
# ===========================================================================

@pytest.mark.parametrize("linktype", [1, 101, 113, 276])
@pytest.mark.parametrize("ns", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_pcap_round_trip(tmp_path, linktype, ns, big):
    esp, _, _ = _sample()
    pkts = [(1700000000.5, P.wrap_esp(V4S, V4D, esp)),
            (1700000001.25, P.wrap_esp(V6S, V6D, esp, udp_encap=True)),
            (1700000002.0, tcp6(b"hello"))]
    path = tmp_path / "x.pcap"
    PC.write_pcap(path, pkts, linktype, nanosecond=ns, big_endian=big)
    raw = path.read_bytes()
    magic = 0xA1B23C4D if ns else 0xA1B2C3D4
    assert raw[:4] == magic.to_bytes(4, "big" if big else "little")
    with PC.PcapReader(path) as r:
        assert r.linktype == linktype and r.nanosecond == ns
        got = list(r)
    assert [ip for _, ip in got] == [ip for _, ip in pkts]
    assert [round(t, 6) for t, _ in got] == [t for t, _ in pkts]
    # append
    with PC.PcapWriter(path, append=True) as w:
        w.write(tcp4(b"more"), 1700000003.0)
    assert [ip for _, ip in PC.read_pcap(path)][-1] == tcp4(b"more")
    assert len(PC.read_pcap(path)) == 4


def test_pcap_nanosecond_exact(tmp_path):
    path = tmp_path / "ns.pcap"
    with PC.PcapWriter(path, nanosecond=True) as w:
        w.write(tcp4(), ts_ns=1_700_000_000_123_456_789)
    rec = next(PC.PcapReader(path).records())
    assert (rec.ts_sec, rec.ts_ns) == (1_700_000_000, 123_456_789)


def test_pcap_foreign_frames(tmp_path):
    ip = tcp4(b"v")
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    vlan = bytes(12) + b"\x81\x00\x00\x05\x08\x00" + ip
    padded = bytes(12) + b"\x08\x00" + ip + bytes(10)
    buf = io.BytesIO()
    buf.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for frame in (arp, vlan, padded):
        buf.write(struct.pack("<IIII", 1, 2, len(frame), len(frame)) + frame)
    buf.seek(0)
    got = [p for _, p in PC.PcapReader(buf)]
    assert got[0] == ip
    assert got[1][:len(ip)] == ip and P.find_esp(got[1]) is None
    assert P.parse_ip(got[1]).payload == ip[20:]       # padding trimmed
    # SLL with a non-IP protocol is skipped
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes(8), 0x0806) + bytes(28)
    assert PC.frame_to_ip(113, sll) is None
    assert PC.frame_to_ip(276, PC.ip_to_frame(276, ip)) == ip


def test_pcap_errors(tmp_path):
    p = tmp_path / "bad.pcap"
    p.write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(40))
    with pytest.raises(PC.PcapError, match="pcapng"):
        PC.PcapReader(p)
    p.write_bytes(b"junk")
    with pytest.raises(PC.PcapError):
        PC.PcapReader(p)
    with pytest.raises(PC.PcapError):
        PC.PcapWriter(tmp_path / "x.pcap", linktype=9999)


# ===========================================================================


# ===========================================================================
# CLI
# ===========================================================================

def cli(*args, check=None):
    env = dict(os.environ, PYTHONPATH=str(TOOLS))
    r = subprocess.run([sys.executable, "-m", "lescodec", *map(str, args)],
                       capture_output=True, text=True, env=env)
    if check is not None:
        assert r.returncode == check, (r.returncode, r.stdout, r.stderr)
    return r


def test_cli_blob_derive():
    k2, k1, kp = K2[16].hex(), K1[16].hex(), KP.hex()
    r = cli("blob", "--role", "endpoint", "--k1", k1, "--k2", k2, "--kp", kp,
            "--r2i", check=0)
    raw = bytes.fromhex(r.stdout.strip())
    assert raw == ep_blob(r2i=True)
    r = cli("blob", "--parse", raw.hex(), "--spi", "0x1234", check=0)
    j = json.loads(r.stdout)
    assert j["role"] == "endpoint" and j["r2i"] and j["kp"] == kp
    assert j["hz_key"] == B.parse_blob(raw).header_key(0x1234).hex()
    r = cli("blob", "--parse", "4c45534b02", check=1)
    assert json.loads(r.stdout)["error"] == "BlobShortError"
    r = cli("blob", "--parse", (GOOD[:32] + K2[16][:16] + b"SALT" + KP).hex(),
            check=1)
    assert json.loads(r.stdout)["error"] == "BlobSameKeysError"
    r = cli("blob", "--role", "pep-origin-in", "--ko", k2, "--pep-id", "7", check=0)
    assert B.parse_blob(bytes.fromhex(r.stdout.strip())).pep_id == 7
    r = cli("derive", "--blob", raw.hex(), "--pep-id", "7", "--pep-id", "9", check=0)
    j = json.loads(r.stdout)
    assert bytes.fromhex(j["pep-view"]) == B.derive_blobs(raw, [])["pep-view"]
    assert bytes.fromhex(j["pep-origin"]["9"]["out"]) == \
        B.pep_origin_blob(raw, 9, "pep-origin-out")
    assert bytes.fromhex(j["pep-origin"]["7"]["ko"]) == \
        B.pep_origin_root(KP, 7, True, 16)
    cli("derive", "--blob", VIEW.hex(), "--pep-id", "1", check=2)
    cli("derive", "--blob", raw.hex(), "--pep-id", "0", check=2)
    cli("blob", "--role", "endpoint", "--k2", k2, "--kp", kp, check=2)   # no K1
    cli("blob", "--role", "nobody", "--k2", k2, check=2)
    cli(check=2)
    assert "open-pcap" in cli("--help", check=0).stdout
    seg = raw_tcp(b"\x13\x06abcd\x01\x01", b"x", urg=1)
    j = json.loads(cli("chain", "--nexthdr", "6", seg.hex(), check=0).stdout)
    p = Z.hz_plan(6, seg)
    assert (j["L"], j["flags"], j["headers"], j["csum"], j["moved"]) == \
        (p.length, p.flags, p.headers.hex(), p.csum.hex(), p.moved.hex())
    assert j["csum"] == "beef" and j["moved"] == "13066162636401010001"


def test_cli_seal_open(tmp_path):
    blob = ep_blob()
    inner = tcp4(b"payload!")
    r = cli("seal", "--spi", "0x500", "--seq", "3", "--blob", blob.hex(),
            "--iv-mask", hex(R), "--inner", inner.hex(), check=0)
    esp = bytes.fromhex(r.stdout.strip())
    b = B.parse_blob(blob)
    hk, pk = b.header_key(0x500), b.payload_key(0x500)
    assert esp == Z.seal(0x500, 3, False, hk, pk, 4, inner, iv_mask=R)
    r = cli("seal", "--spi", "0x500", "--seq", "3", "--hz", hk.hex(), "--pz",
            pk.hex(), "--iv-mask", hex(R), "--inner", inner.hex(), check=0)
    assert bytes.fromhex(r.stdout.strip()) == esp
    j = json.loads(cli("open", esp.hex(), "--blob", blob.hex(), check=0).stdout)
    assert j["auth"] == "ok" and j["view"] == "full"
    assert bytes.fromhex(j["inner"]) == inner and j["L"] == 40
    assert j["spi"] == "0x00000500" and j["seq"] == 3 and j["nexthdr"] == 4
    view = B.derive_blobs(blob, [])["pep-view"]
    j = json.loads(cli("open", esp.hex(), "--blob", view.hex(), check=0).stdout)
    assert j["view"] == "headers" and "inner" not in j and j["payload_len"] == 8
    assert j["epoch"] == 0
    j = json.loads(cli("open", esp.hex(), "--hz", hk.hex(), check=0).stdout)
    assert j["view"] == "headers"
    bad = bytearray(esp)
    bad[-1] ^= 1
    r = cli("open", bytes(bad).hex(), "--blob", blob.hex(), check=1)
    assert json.loads(r.stdout)["auth"] == "fail"
    r = cli("open", esp[:10].hex(), "--blob", blob.hex(), check=1)
    assert json.loads(r.stdout)["error"] == "format"
    cli("open", esp.hex(), check=2)                            # no key

    # into a pcap (UDP-encapsulated, ESN), then open-pcap with a filter
    pc = tmp_path / "c.pcap"
    for seq, spi in ((1 << 32 | 1, 0x500), (1 << 32 | 2, 0x501)):
        cli("seal", "--spi", hex(spi), "--seq", seq, "--esn", "--blob",
            blob.hex(), "--inner", inner.hex(), "--src", V4S, "--dst", V4D,
            "--udp", "--pcap", pc, "--append", "--linktype", "sll2", check=0)
    # a PEP-origin header-only packet too
    out = B.pep_origin_blob(blob, 2, "pep-origin-out")
    inn = B.pep_origin_blob(blob, 2, "pep-origin-in")
    cli("seal", "--spi", "0x600", "--seq", "1", "--blob", out.hex(),
        "--inner", ack4().hex(), "--src", V4D, "--dst", V4S,
        "--pcap", pc, "--append", check=0)
    cli("seal", "--spi", "0x600", "--seq", "1", "--blob", inn.hex(),
        "--inner", ack4().hex(), check=2)                      # cannot seal
    r = cli("open-pcap", pc, "--blob", blob.hex(), "--esn", "--seq-hi", "1",
            "--spi", "0x500", check=0)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["udp"] and lines[0]["seq"] == 1
    assert lines[0]["iv"] == (1 << 32 | 1).to_bytes(8, "big").hex()
    assert lines[0]["epoch"] == 1
    assert bytes.fromhex(lines[0]["inner"]) == inner
    r = cli("open-pcap", pc, "--blob", blob.hex(), "--esn", "--seq-hi", "1",
            check=1)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x.get("auth") for x in lines[:2]] == ["ok", "ok"]
    assert "error" in lines[2] or lines[2]["auth"] == "fail"   # other keys
    r = cli("open-pcap", pc, "--blob", inn.hex(), "--spi", "0x600",
            "--tunnel", check=0)
    (j,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert j["view"] == "header-only" and bytes.fromhex(j["inner"]) == ack4()
    with PC.PcapReader(pc) as rd:
        assert rd.linktype == 276


# ===========================================================================
# Known-answer vectors (tests/host/vectors.json)
# ===========================================================================

def test_vectors_reproduce():
    sys.path.insert(0, str(HERE))
    import gen_vectors
    want = json.loads((HERE / "vectors.json").read_text())
    assert gen_vectors.build() == want, \
        "vectors.json is stale: run python3 tests/host/gen_vectors.py"
    r = subprocess.run([sys.executable, str(HERE / "gen_vectors.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_vectors_open():
    vec = json.loads((HERE / "vectors.json").read_text())
    assert len(vec["packets"]) >= 10
    for v in vec["packets"]:
        esp = bytes.fromhex(v["esp"])
        seq, hz = v["seq"], bytes.fromhex(v["hz_key"])
        assert Z.peek_len(esp, hz) == v["L"]
        blk = bytes.fromhex(v["peek_keystream"])
        assert Cipher(algorithms.AES(hz[:-4]), modes.ECB()).encryptor().update(
            bytes.fromhex(v["peek_counter_block"])) == blk
        assert esp[8:16].hex() == v["iv"] == \
            f"{seq ^ int(v['iv_mask'], 16):016x}"
        # ICV2 covers all that follows it (protocol.md 3.1).
        assert bytes.fromhex(v["hz_aad"]) == esp[:16] + esp[38 + v["L"]:]
        assert gcm_open(hz, bytes.fromhex(v["hz_nonce"]),
                        bytes.fromhex(v["hz_ct"]) + bytes.fromhex(v["icv2"]),
                        bytes.fromhex(v["hz_aad"])).hex() == v["hz_plain"]
        if v["header_only"]:
            inn = B.parse_blob(bytes.fromhex(v["blob_in"]))
            assert inn.header_key(v["spi"]) == hz
            assert inn.ko.hex() == v["ko"]
            assert Z.open_header_only(esp, hz, v["esn"], v["tunnel"],
                                      seq >> 32).hex() == v["inner"]
        else:
            b = B.parse_blob(bytes.fromhex(v["blob"]))
            assert b.header_key(v["spi"]) == hz
            assert b.payload_key(v["spi"]).hex() == v["pz_key"]
            pk = bytes.fromhex(v["pz_key"])
            assert gcm_open(pk, bytes.fromhex(v["pz_nonce"]),
                            esp[38 + v["L"]:], bytes.fromhex(v["pz_aad"])).hex() \
                == v["pz_plain"]
            pz = bytes.fromhex(v["pz_plain"])
            pad = v["pad"]
            assert pz == bytes.fromhex(v["csum"]) + bytes.fromhex(v["payload"]) \
                + bytes.fromhex(v["moved"]) + bytes(range(1, pad + 1)) \
                + bytes((pad, v["nexthdr"]))
            o = Z.open_full(esp, hz, pk, v["esn"], seq >> 32)
            assert o.inner.hex() == v["inner"] + v["tfc"]
            assert o.flags == v["flags"] and o.pad == pad
            assert len(esp) == len(o.inner) + 58 + len(v["moved"]) // 2 + pad
        assert len(esp) == v["esp_len"]
        assert v["epoch"] == (seq >> 32) & 0xFFFF
        assert bytes.fromhex(v["hz_plain"])[4:6] == v["epoch"].to_bytes(2, "big")
        assert Z.open_headers(esp, hz).epoch == v["epoch"]
    assert any(v["epoch"] > 0xFF for v in vec["packets"])
    for b in vec["blobs"]:
        ep = bytes.fromhex(b["endpoint"])
        p = B.parse_blob(ep)
        assert p.header_key(b["spi"]).hex() == b["hz_key"]
        assert B.parse_blob(bytes.fromhex(b["pep_view"])).k2.hex() == b["k2"]
        for po in b["pep_origin"]:
            assert B.pep_origin_root(p.kp, po["pep_id"], p.r2i, p.keylen).hex() \
                == po["ko"]
            assert B.parse_blob(bytes.fromhex(po["blob_out"])).header_key(
                b["spi"]).hex() == po["hz_key"]
    for b in vec["bad_blobs"]:
        with pytest.raises(B.BlobError) as ei:
            B.parse_blob(bytes.fromhex(b["blob"]))
        assert type(ei.value).__name__ == b["error"]
    for c in vec["hz_plans"]:
        got = Z.hz_plan(c["nexthdr"], bytes.fromhex(c["data"]))
        assert (got.length, got.flags, got.headers.hex(), got.csum.hex(),
                got.moved.hex(), got.tcp_off) == \
            (c["L"], c["flags"], c["headers"], c["csum"], c["moved"],
             c["tcp_off"])
