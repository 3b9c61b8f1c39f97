"""Differential tests: the pure C of kernel/les_wire.c (built for user
space and loaded with ctypes) against the Python reference codec, on
structured random inputs.  Skipped when no C compiler is available.

Known disagreements with the spec are marked xfail (see the report in the
test names and docstrings); they turn into XPASS once the C is fixed.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import random
import shutil
import struct
import subprocess

import pytest

from lescodec import blob as B
from lescodec import packet as P
from lescodec import zone as Z

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "kernel" / "les_wire.c"
N = int(os.environ.get("LES_DIFF_ITERS", "4000"))


class LesChain(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint), ("l4_off", ctypes.c_int),
                ("l4_proto", ctypes.c_uint8), ("fragment", ctypes.c_bool)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc or not SRC.exists():
        pytest.skip("no C compiler or kernel/les_wire.c")
    so = tmp_path_factory.mktemp("cwire") / "libleswire.so"
    r = subprocess.run([cc, "-O1", "-fPIC", "-shared", "-Wall",
                        f"-I{SRC.parent}", "-o", str(so), str(SRC)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"les_wire.c does not build for user space: {r.stderr[:300]}")
    l = ctypes.CDLL(str(so))
    l.les_hdr_chain.restype = ctypes.c_size_t
    l.les_hdr_chain.argtypes = [ctypes.c_uint8, ctypes.c_char_p, ctypes.c_size_t,
                                ctypes.c_size_t, ctypes.POINTER(LesChain)]
    l.les_pep_origin_check.restype = ctypes.c_int
    l.les_pep_origin_check.argtypes = [ctypes.c_uint8, ctypes.c_char_p,
                                       ctypes.c_size_t, ctypes.c_bool]
    l.les_blob_parse.restype = ctypes.c_int
    l.les_blob_parse.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    l.les_blob_is_les.restype = ctypes.c_bool
    l.les_blob_is_les.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return l


def c_chain(lib, nh, buf, rng=None):
    """Run the C walk; with rng, start from a random `avail` and grow it as
    the C asks (checking that it asks for more each time)."""
    ch = LesChain()
    avail = len(buf) if rng is None else rng.randint(0, len(buf))
    while True:
        need = lib.les_hdr_chain(nh, buf, avail, len(buf), ctypes.byref(ch))
        if not need:
            return (ch.len, ch.l4_off, ch.l4_proto, bool(ch.fragment))
        assert avail < need <= len(buf), (avail, need, len(buf))
        avail = need


# ---- random header chains ---------------------------------------------------

S4, D4, S6, D6 = "10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2"
CHAIN_PROTOS = [4, 41, 0, 43, 60, 44, 51, 6, 17, 136, 1, 58, 47, 50, 59, 132]


def rand_header(rng, proto, nxt):
    """Bytes of one header of `proto` whose next header is `nxt`."""
    if proto == 4:
        opts = bytes(rng.choice([0, 4, 8, 40]))
        frag = rng.choice([0, 0, 0, 0x2000, 0x0010, 0x2010, 0x4000])
        h = bytearray(P.ipv4_packet(S4, D4, nxt, b"", options=opts,
                                    df=False)[:20 + len(opts)])
        h[6:8] = frag.to_bytes(2, "big")
        return h
    if proto == 41:
        return bytearray(P.ipv6_packet(S6, D6, nxt, b"")[:40])
    if proto in (0, 43, 60):
        n = rng.choice([0, 0, 1, 3, 20, 60])
        return bytearray(bytes((nxt, n)) + bytes(rng.randrange(256)
                                                 for _ in range((n + 1) * 8 - 2)))
    if proto == 44:
        off = rng.choice([0, 0, 8, 1480]) | rng.choice([0, 1])
        return bytearray(struct.pack("!BBHI", nxt, 0, off, 99))
    if proto == 51:
        n = rng.choice([1, 4, 7])
        return bytearray(bytes((nxt, n)) + bytes((n + 2) * 4 - 2))
    if proto == 6:
        opts = bytes(rng.choice([0, 4, 12, 20, 40]))
        h = bytearray(P.tcp_segment(S4, D4, 1, 2, 3, 4, rng.randrange(256),
                                    options=opts))
        return h
    if proto in (17, 136, 1, 58):
        return bytearray(rng.randbytes(8))
    return bytearray(rng.randbytes(rng.choice([0, 4, 16])))


def rand_chain(rng):
    nh = rng.choice(CHAIN_PROTOS)
    protos = [nh]
    while len(protos) < rng.randint(1, 7) and protos[-1] in (4, 41, 0, 43, 60, 44, 51):
        protos.append(rng.choice(CHAIN_PROTOS))
    protos.append(rng.choice(CHAIN_PROTOS))
    buf = bytearray()
    for p, q in zip(protos, protos[1:]):
        buf += rand_header(rng, p, q)
    buf += rng.randbytes(rng.choice([0, 1, 7, 40, 300]))
    # mutations
    for _ in range(rng.choice([0, 0, 1, 2])):
        if buf:
            i = rng.randrange(min(len(buf), 80))
            buf[i] = rng.randrange(256)
    if buf and rng.random() < 0.3:
        del buf[rng.randrange(len(buf) + 1):]
    return nh, bytes(buf)


def test_hdr_chain_matches_c(lib):
    rng = random.Random(1)
    for i in range(N):
        nh, buf = rand_chain(rng)
        want = tuple(Z.hdr_chain(nh, buf))
        assert c_chain(lib, nh, buf) == want, (nh, buf.hex())
        assert c_chain(lib, nh, buf, rng) == want, (nh, buf.hex())


def test_hdr_chain_matches_c_near_512(lib):
    rng = random.Random(2)
    for ext in range(400, 520, 8):
        for tcp_opts in range(0, 44, 4):
            seg = P.tcp_segment(S6, D6, 1, 2, options=bytes([1] * tcp_opts),
                                payload=b"x" * rng.randint(0, 20))
            e = bytes((6, ext // 8 - 1)) + bytes(ext - 2)
            p = P.ipv6_packet(S6, D6, 60, e + seg)
            assert c_chain(lib, 41, p) == tuple(Z.hdr_chain(41, p))


# ---- PEP-origin acceptance -------------------------------------------------

def rand_po(rng):
    tunnel = rng.random() < 0.7
    fam = rng.choice([4, 6])
    flags = rng.choice([0x10, 0x10, 0x50, 0x90, 0xD0, 0x18, 0x11, 0x12, 0x00,
                        rng.randrange(256)])
    payload = rng.choice([b"", b"", b"", b"x", bytes(12)])
    opts = rng.choice([b"", b"", bytes(12), b"\x01" * 40])
    src, dst = (S4, D4) if fam == 4 else (S6, D6)
    seg = P.tcp_segment(src, dst, 1, 2, 3, 4, flags, options=opts,
                        payload=payload)
    if rng.random() < 0.1:
        seg = P.udp_segment(src, dst, 1, 2, payload)
        proto = 17
    else:
        proto = 6
    if not tunnel:
        return rng.choice([6, 6, 6, 17, 4]), seg, False
    kw = {}
    if fam == 4:
        r = rng.random()
        if r < 0.1:
            kw = {"mf": True, "df": False}
        elif r < 0.15:
            kw = {"frag_off": 8, "df": False}
        elif r < 0.25:
            kw = {"total_length": 20 + len(seg) + rng.choice([-1, 1, 8])}
        if rng.random() < 0.1:
            kw["options"] = bytes(4)
        pkt = P.ipv4_packet(src, dst, proto, seg, **kw)
        nh = rng.choice([4, 4, 4, 41, 6])
    else:
        r = rng.random()
        body, first = seg, proto
        if r < 0.1:
            body, first = P.ipv6_frag(proto, 0, True) + seg, 44
        elif r < 0.15:
            body, first = P.ipv6_frag(proto, 0, False) + seg, 44
        elif r < 0.2:
            body, first = P.ipv6_ext(proto) + seg, 0
        elif r < 0.3:
            kw = {"payload_length": len(seg) + rng.choice([-1, 1, 8])}
        pkt = P.ipv6_packet(src, dst, first, body, **kw)
        nh = rng.choice([41, 41, 41, 4])
    if rng.random() < 0.1:
        pkt = pkt[:rng.randrange(len(pkt))]
    return nh, pkt, True


def _is_first_fragment(nh, hdrs, tunnel):
    if not tunnel or not hdrs:
        return False
    if nh == 4 and len(hdrs) >= 20 and hdrs[0] >> 4 == 4:
        return bool(int.from_bytes(hdrs[6:8], "big") & 0x2000)
    if nh == 41 and len(hdrs) >= 48 and hdrs[6] == 44:
        return bool(hdrs[43] & 1)
    return False


def test_pep_origin_check_matches_c(lib):
    """Accept/refuse agree, except for first fragments (next test)."""
    rng = random.Random(3)
    seen_ok = 0
    for _ in range(N):
        nh, hdrs, tunnel = rand_po(rng)
        py = Z.pep_origin_check(nh, hdrs, tunnel)
        c = lib.les_pep_origin_check(nh, hdrs, len(hdrs), tunnel)
        if _is_first_fragment(nh, hdrs, tunnel):
            continue
        assert (py == Z.PoVerdict.OK) == (c == 0), (nh, hdrs.hex(), tunnel, py, c)
        seen_ok += c == 0
    assert seen_ok > N // 10


@pytest.mark.parametrize("fam", [4, 6])
def test_c_refuses_first_fragment(lib, fam):
    if fam == 4:
        seg = P.tcp_segment(S4, D4, 1, 2, 3, 4, 0x10)
        pkt = P.ipv4_packet(S4, D4, 6, seg, mf=True, df=False)
        nh = 4
    else:
        seg = P.tcp_segment(S6, D6, 1, 2, 3, 4, 0x10)
        pkt = P.ipv6_packet(S6, D6, 44, P.ipv6_frag(6, 0, True) + seg)
        nh = 41
    assert Z.pep_origin_check(nh, pkt, True) != Z.PoVerdict.OK
    assert lib.les_pep_origin_check(nh, pkt, len(pkt), True) != 0


# ---- blobs -------------------------------------------------------------------

C_BLOB_ERR = {1: B.BlobShortError, 2: B.BlobMagicError, 3: B.BlobVersionError,
              4: B.BlobRoleError, 5: B.BlobKeyLenError, 6: B.BlobFlagsError,
              7: B.BlobLengthError, 8: B.BlobPepIdError}


def test_blob_parse_matches_c(lib):
    rng = random.Random(4)
    out = ctypes.create_string_buffer(256)
    for _ in range(N):
        role = rng.choice(list(B.Role))
        kl = rng.choice([16, 24, 32])
        raw = bytearray(B.build_blob(role, rng.randbytes(kl + 4),
                                     rng.randbytes(kl + 4) if role == 1 else None,
                                     rng.randrange(3) if role in (3, 4) else 0))
        for _ in range(rng.choice([0, 1, 1, 2])):
            what = rng.randrange(4)
            if what == 0 and raw:
                raw[rng.randrange(min(12, len(raw)))] = rng.choice(
                    [0, 1, 2, 3, 4, 5, 16, 24, 32, rng.randrange(256)])
            elif what == 1:
                del raw[rng.randrange(len(raw) + 1):]
            elif what == 2:
                raw += rng.randbytes(rng.choice([1, 4, 20, 24]))
            else:
                raw[8:12] = rng.randrange(3).to_bytes(4, "big")
        raw = bytes(raw)
        c = lib.les_blob_parse(raw, len(raw), out)
        try:
            B.parse_blob(raw)
            py = None
        except B.BlobError as e:
            py = type(e)
        assert C_BLOB_ERR.get(c) is py, (raw.hex(), c, py)
        assert lib.les_blob_is_les(raw, len(raw)) == B.is_les_blob(raw)


class LesTcpSeg(ctypes.Structure):
    """struct les_tcp_seg (kernel/les_wire.h), field for field."""
    _fields_ = [("family", ctypes.c_uint8), ("saddr", ctypes.c_uint8 * 16),
                ("daddr", ctypes.c_uint8 * 16), ("sport", ctypes.c_uint16),
                ("dport", ctypes.c_uint16), ("seq", ctypes.c_uint32),
                ("ack", ctypes.c_uint32), ("win", ctypes.c_uint16),
                ("flags", ctypes.c_uint8), ("wscale", ctypes.c_uint8),
                ("mss", ctypes.c_uint16), ("sack_perm", ctypes.c_bool),
                ("sack_n", ctypes.c_uint8), ("sack", ctypes.c_uint32 * 8),
                ("has_ts", ctypes.c_bool), ("tsval", ctypes.c_uint32),
                ("tsecr", ctypes.c_uint32), ("payload_len", ctypes.c_int)]


def c_hz_tcp(lib, nh, hdrs, tunnel):
    lib.les_hz_tcp.restype = ctypes.c_int
    lib.les_hz_tcp.argtypes = [ctypes.c_uint8, ctypes.c_char_p, ctypes.c_size_t,
                               ctypes.c_bool, ctypes.POINTER(LesTcpSeg)]
    seg = LesTcpSeg()
    return lib.les_hz_tcp(nh, hdrs, len(hdrs), tunnel, ctypes.byref(seg)), seg


@pytest.mark.parametrize("fam", [4, 6])
def test_hz_tcp_reads_what_the_sender_wrote(lib, fam):
    """The PEP's parser against header zones the codec builds: ports,
    numbers, window, MSS, window scale, SACK, timestamps and the payload
    length from the inner IP header."""
    rng = random.Random(fam)
    src, dst = ("10.1.2.3", "10.9.8.7") if fam == 4 else ("fd00::3", "fd00::7")
    for _ in range(300):
        sport, dport = rng.randrange(1, 65536), rng.randrange(1, 65536)
        seq, ack = rng.getrandbits(32), rng.getrandbits(32)
        win, flags = rng.randrange(65536), rng.randrange(256)
        mss, ws = rng.randrange(536, 9000), rng.randrange(15)
        sack = [rng.getrandbits(32) for _ in range(2 * rng.randrange(0, 4))]
        opts = struct.pack("!BBH", 2, 4, mss) + bytes((1, 3, 3, ws))
        if sack:
            opts += bytes((1, 1, 5, 2 + 4 * len(sack))) + struct.pack(f"!{len(sack)}I", *sack)
        payload = os.urandom(rng.randrange(0, 200))
        pkt = P.tcp_packet(src, dst, sport, dport, seq, ack, flags, win, opts, payload)
        nh = 4 if fam == 4 else 41
        chain = Z.hdr_chain(nh, pkt)
        hdrs = pkt[:chain.length]
        v, seg = c_hz_tcp(lib, nh, hdrs, True)
        assert v == 0
        assert (seg.sport, seg.dport, seg.seq, seg.ack, seg.win, seg.flags) == \
            (sport, dport, seq, ack, win, flags)
        assert (seg.mss, seg.wscale, seg.payload_len) == (mss, ws, len(payload))
        assert list(seg.sack[:2 * seg.sack_n]) == sack
        assert seg.family == fam
        # Transport mode: the TCP header alone, length unknown to a PEP.
        tcp = hdrs[chain.l4_off:]
        v, seg = c_hz_tcp(lib, 6, tcp, False)
        assert v == 0 and seg.seq == seq and seg.payload_len == -1 and seg.family == 0


def test_hz_tcp_verdicts(lib):
    src, dst = "10.1.2.3", "10.9.8.7"
    udp = P.udp_packet(src, dst, 1, 2, b"x")
    assert c_hz_tcp(lib, 4, udp[:28], True)[0] == 1            # not TCP
    tcp = P.tcp_packet(src, dst, 1, 2, payload=b"y" * 10)
    assert c_hz_tcp(lib, 6, tcp[:40], True)[0] == 3            # tunnel needs an IP header
    assert c_hz_tcp(lib, 4, tcp[:39], True)[0] == 3            # cut short
    frag = P.ipv4_packet(src, dst, 6, P.tcp_segment(src, dst, 1, 2), mf=True)
    assert c_hz_tcp(lib, 4, frag[:40], True)[0] == 2          # an inner fragment
    bad = bytearray(tcp[:40])
    bad[2:4] = (30).to_bytes(2, "big")                          # IP length < headers
    assert c_hz_tcp(lib, 4, bytes(bad), True)[0] == 3
