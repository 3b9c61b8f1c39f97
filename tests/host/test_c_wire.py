"""Differential tests: the pure C of kernel/les_wire.c (built for user
space and loaded with ctypes) against the Python reference codec, on
structured random inputs: what enters the header zone (docs/protocol.md 4),
the PEP's parser, the PEP-origin policy, key blobs and the PEP's replay
window.  Skipped when no C compiler is available.
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
                ("l4_proto", ctypes.c_uint8), ("fragment", ctypes.c_bool),
                ("fragmented", ctypes.c_bool)]


class LesHzPlan(ctypes.Structure):
    """struct les_hz_plan (kernel/les_wire.h), field for field."""
    _fields_ = [("len", ctypes.c_uint), ("tcp_off", ctypes.c_int), ("flags", ctypes.c_uint8),
                ("moved_len", ctypes.c_uint), ("payload_len", ctypes.c_uint16)]


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
                ("tsecr", ctypes.c_uint32), ("payload_len", ctypes.c_uint)]


class LesReplay(ctypes.Structure):
    """struct les_replay (kernel/les_wire.h), field for field."""
    _fields_ = [("top", ctypes.c_uint64), ("size", ctypes.c_uint), ("any", ctypes.c_bool),
                ("bits", ctypes.c_uint32 * 32), ("absorbed", ctypes.c_uint32 * 128)]


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
    l.les_hz_plan.restype = ctypes.c_size_t
    l.les_hz_plan.argtypes = [ctypes.c_uint8, ctypes.c_char_p, ctypes.c_size_t,
                              ctypes.c_size_t, ctypes.POINTER(LesHzPlan)]
    l.les_hz_seal.restype = None
    l.les_hz_seal.argtypes = [ctypes.POINTER(LesHzPlan), ctypes.c_char_p, ctypes.c_char_p,
                              ctypes.c_char_p, ctypes.c_char_p]
    l.les_hz_moved_len.restype = ctypes.c_int
    l.les_hz_moved_len.argtypes = [ctypes.c_uint8, ctypes.c_uint8, ctypes.c_char_p,
                                   ctypes.c_size_t]
    l.les_hz_restore.restype = None
    l.les_hz_restore.argtypes = [ctypes.c_uint8, ctypes.c_uint8, ctypes.c_char_p,
                                 ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p]
    l.les_hz_tcp.restype = ctypes.c_int
    l.les_hz_tcp.argtypes = [ctypes.c_uint8, ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.POINTER(LesTcpSeg)]
    l.les_replay_init.restype = None
    l.les_replay_init.argtypes = [ctypes.POINTER(LesReplay), ctypes.c_uint]
    l.les_replay_seq.restype = ctypes.c_uint64
    l.les_replay_seq.argtypes = [ctypes.POINTER(LesReplay), ctypes.c_uint16, ctypes.c_uint32]
    l.les_replay_check.restype = ctypes.c_bool
    l.les_replay_check.argtypes = [ctypes.POINTER(LesReplay), ctypes.c_uint64]
    l.les_replay_advance.restype = None
    l.les_replay_advance.argtypes = [ctypes.POINTER(LesReplay), ctypes.c_uint64]
    l.les_replay_absorb.restype = None
    l.les_replay_absorb.argtypes = [ctypes.POINTER(LesReplay), ctypes.c_uint64]
    l.les_replay_absorbed.restype = ctypes.c_bool
    l.les_replay_absorbed.argtypes = [ctypes.POINTER(LesReplay), ctypes.c_uint64]
    return l


def c_plan(lib, nh, data, rng=None):
    """The C plan of data, growing `avail` as the C asks (with rng, from a
    random start); then the sealed header zone, checksum and moved bytes."""
    plan = LesHzPlan()
    avail = len(data) if rng is None else rng.randint(0, len(data))
    while True:
        need = lib.les_hz_plan(nh, data, avail, len(data), ctypes.byref(plan))
        if not need:
            break
        assert avail < need <= len(data), (avail, need, len(data))
        avail = need
    hz = ctypes.create_string_buffer(max(plan.len, 1))
    csum = ctypes.create_string_buffer(2)
    moved = ctypes.create_string_buffer(64)
    lib.les_hz_seal(ctypes.byref(plan), data, hz, csum, moved)
    return plan, hz.raw[:plan.len], csum.raw, moved.raw[:plan.moved_len]


S4, D4, S6, D6 = "10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2"

OPTIONS = [b"\x01", b"\x00", b"\x02\x04\x05\xb4", b"\x03\x03\x07", b"\x04\x02",
           b"\x08\x0a" + bytes(8), b"\x05\x0a" + bytes(8), b"\x05\x12" + bytes(16),
           b"\x1e\x04\x00\x00", b"\x22\x0a" + bytes(8), b"\x13\x12" + bytes(16),
           b"\xfd\x04\xab\xcd", b"\x02\x03\x00", b"\x08\x08" + bytes(6), b"\x07",
           b"\x05\x0b" + bytes(9)]


def rand_options(rng):
    opts = b"".join(rng.choice(OPTIONS) for _ in range(rng.randint(0, 6)))
    if rng.random() < 0.2 and opts:
        opts = opts[:rng.randrange(len(opts))] + rng.randbytes(rng.randint(0, 5))
    opts = opts[:40]
    return opts + bytes(-len(opts) % 4)


def rand_packet(rng):
    """A next header and the bytes after the ESP header, from plain TCP to
    everything section 4 leaves out, sometimes cut or followed by TFC bytes."""
    fam = rng.choice([4, 6, 0])
    src, dst = (S4, D4) if fam != 6 else (S6, D6)
    payload = rng.randbytes(rng.choice([0, 1, 10, 300]))
    if rng.random() < 0.8:
        seg = bytearray(P.tcp_segment(src, dst, 1, 2, rng.getrandbits(32), rng.getrandbits(32),
                                      rng.randrange(256), options=rand_options(rng),
                                      payload=payload))
        if rng.random() < 0.2:
            seg[18:20] = rng.randrange(1, 65536).to_bytes(2, "big")
        proto = 6
    else:
        seg, proto = bytearray(P.udp_segment(src, dst, 1, 2, payload)), 17
    if fam == 0:
        nh, pkt = proto, bytes(seg)
    elif fam == 4:
        kw = {}
        r = rng.random()
        if r < 0.1:
            kw = {"mf": True, "df": False}
        elif r < 0.15:
            kw = {"options": bytes(4)}
        elif r < 0.2:
            kw = {"total_length": 20 + len(seg) - rng.randint(1, 30)}
        nh, pkt = 4, P.ipv4_packet(src, dst, proto, bytes(seg), **kw)
    else:
        r = rng.random()
        if r < 0.1:
            nh, pkt = 41, P.ipv6_packet(src, dst, 0, P.ipv6_ext(proto) + bytes(seg))
        elif r < 0.15:
            nh, pkt = 41, P.ipv6_packet(src, dst, proto, bytes(seg), payload_length=0)
        else:
            nh, pkt = 41, P.ipv6_packet(src, dst, proto, bytes(seg))
    if rng.random() < 0.1:
        pkt = pkt[:rng.randrange(len(pkt) + 1)]
    if rng.random() < 0.1:
        pkt += rng.randbytes(rng.randint(1, 40))        # TFC padding
    if rng.random() < 0.05:
        nh = rng.choice([0, 1, 47, 50, 59, 255])
    return nh, bytes(pkt)


def test_hz_plan_matches_c(lib):
    """Section 4, both ways: the same L, flags, header zone, checksum and
    moved bytes from the C and the codec; the C restores the original."""
    rng = random.Random(1)
    with_l = moved = 0
    for _ in range(N):
        nh, data = rand_packet(rng)
        want = Z.hz_plan(nh, data)
        for r in (None, rng):
            plan, hz, csum, mv = c_plan(lib, nh, data, r)
            assert (plan.len, plan.flags, hz, csum, mv) == \
                (want.length, want.flags, want.headers, want.csum, want.moved), (nh, data.hex())
        if plan.len:
            with_l += 1
            moved += bool(plan.flags)
            assert plan.tcp_off == want.tcp_off
            assert lib.les_hz_moved_len(nh, plan.flags, hz, plan.len) == len(mv)
            buf = ctypes.create_string_buffer(hz, plan.len)
            lib.les_hz_restore(nh, plan.flags, buf, plan.len, csum, mv)
            assert buf.raw[:plan.len] == data[:plan.len]
    assert with_l > N // 3 and moved > N // 20, (with_l, moved)


def test_moved_len_refuses_what_cannot_be(lib):
    tcp = P.tcp_packet(S4, D4, 1, 2, payload=b"x")
    hz = Z.hz_plan(4, tcp).headers
    assert lib.les_hz_moved_len(4, 0, hz, len(hz)) == 0
    assert lib.les_hz_moved_len(4, 0x01, hz, len(hz)) == -1     # HEADER_ONLY is not a move
    assert lib.les_hz_moved_len(4, 0x02, b"", 0) == -1          # nothing to move from
    assert lib.les_hz_moved_len(41, 0, hz, len(hz)) == -1       # not an IPv6 header
    assert lib.les_hz_moved_len(4, 0, hz[:-4], len(hz) - 4) == -1


# ---- PEP-origin acceptance -------------------------------------------------
def rand_po(rng):
    tunnel = rng.random() < 0.7
    fam = rng.choice([4, 6])
    flags = rng.choice([0x10, 0x10, 0x50, 0x90, 0xD0, 0x18, 0x11, 0x12, 0x00,
                        rng.randrange(256)])
    payload = rng.choice([b"", b"", b"", b"x", bytes(12)])
    ts = bytes((1, 1, 8, 10)) + rng.randbytes(8)
    opts = rng.choice([b"", b"", b"", b"", bytes(12), b"\x01" * 40, ts, ts,
                       ts + bytes((1, 1, 5, 18)) + rng.randbytes(16),
                       bytes((30, 4, 0, 0)), bytes((0, 1, 0, 0)), bytes((1, 3, 3, 7)),
                       bytes((1, 1, 5, 14)) + bytes(12),
                       rng.randbytes(4 * rng.randrange(1, 11))])
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
    assert seen_ok > N // 20


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
              7: B.BlobPepIdError, 8: B.BlobLengthError, 9: B.BlobSameKeysError}


def rand_blob(rng):
    role = rng.choice(list(B.Role))
    kl = rng.choice([16, 24, 32])
    root = lambda: rng.randbytes(kl + 4)  # noqa: E731
    if role == B.Role.ENDPOINT:
        k2 = root()
        k1 = k2[:kl] + rng.randbytes(4) if rng.random() < 0.05 else root()
        try:
            return bytearray(B.build_blob(role, kl, k2=k2, k1=k1, kp=rng.randbytes(32),
                                          r2i=rng.random() < 0.5))
        except B.BlobError:
            raw = bytearray(B.build_blob(role, kl, k2=k2, k1=root(), kp=rng.randbytes(32)))
            raw[12 + kl + 4:12 + 2 * kl + 4] = k2[:kl]
            return raw
    if role == B.Role.PEP_VIEW:
        return bytearray(B.build_blob(role, kl, k2=root()))
    return bytearray(B.build_blob(role, kl, ko=root(), pep_id=rng.randrange(1, 4)))


def test_blob_parse_matches_c(lib):
    rng = random.Random(4)
    out = ctypes.create_string_buffer(256)
    for _ in range(N):
        raw = rand_blob(rng)
        for _ in range(rng.choice([0, 1, 1, 2])):
            what = rng.randrange(4)
            if what == 0 and raw:
                raw[rng.randrange(min(12, len(raw)))] = rng.choice(
                    [0, 1, 2, 3, 4, 5, 16, 24, 32, rng.randrange(256)])
            elif what == 1:
                del raw[rng.randrange(len(raw) + 1):]
            elif what == 2:
                raw += rng.randbytes(rng.choice([1, 4, 20, 24, 32]))
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


def c_hz_tcp(lib, nh, hdrs):
    seg = LesTcpSeg()
    return lib.les_hz_tcp(nh, hdrs, len(hdrs), ctypes.byref(seg)), seg


@pytest.mark.parametrize("fam", [4, 6])
def test_hz_tcp_reads_what_the_sender_wrote(lib, fam):
    """The PEP's parser against header zones the codec builds: ports,
    numbers, window, MSS, window scale, SACK, timestamps and the payload
    length from the checksum field, in tunnel and transport mode."""
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
        if rng.random() < 0.3:
            opts += b"\x1e\x04\x01\x02"                       # MPTCP: moved, NOPs here
        payload = os.urandom(rng.randrange(0, 200))
        pkt = P.tcp_packet(src, dst, sport, dport, seq, ack, flags, win, opts, payload)
        nh = 4 if fam == 4 else 41
        hz = Z.hz_plan(nh, pkt).headers
        v, seg = c_hz_tcp(lib, nh, hz)
        assert v == 0
        assert (seg.sport, seg.dport, seg.seq, seg.ack, seg.win, seg.flags) == \
            (sport, dport, seq, ack, win, flags)
        assert (seg.mss, seg.wscale, seg.payload_len) == (mss, min(ws, 14), len(payload))
        assert list(seg.sack[:2 * seg.sack_n]) == sack
        assert seg.family == fam
        # Transport mode: the TCP header alone, and still the length.
        tcp = P.tcp_segment(src, dst, sport, dport, seq, ack, flags, win, opts, payload)
        v, seg = c_hz_tcp(lib, 6, Z.hz_plan(6, tcp).headers)
        assert v == 0 and seg.seq == seq and seg.payload_len == len(payload) and seg.family == 0


def test_hz_tcp_verdicts(lib):
    src, dst = "10.1.2.3", "10.9.8.7"
    assert c_hz_tcp(lib, 4, b"")[0] == 1                         # no headers: not TCP
    tcp = P.tcp_packet(src, dst, 1, 2, payload=b"y" * 10)
    hz = Z.hz_plan(4, tcp).headers
    assert c_hz_tcp(lib, 4, hz)[0] == 0
    assert c_hz_tcp(lib, 4, tcp[:40])[0] == 2                    # the real checksum: not a sender's
    assert c_hz_tcp(lib, 6, hz)[0] == 2                          # an IPv4 header is no TCP header
    assert c_hz_tcp(lib, 4, hz[:39])[0] == 2                     # cut short
    bad = bytearray(hz)
    bad[2:4] = (30).to_bytes(2, "big")                           # IP length < headers
    assert c_hz_tcp(lib, 4, bytes(bad))[0] == 2
    urg = bytearray(hz)
    urg[38:40] = b"\x00\x05"                                     # an urgent pointer left in
    assert c_hz_tcp(lib, 4, bytes(urg))[0] == 2


# ---- the PEP's replay window (docs/protocol.md 7) ----------------------------

def test_replay_window_matches_a_model(lib):
    """Random 64-bit sequence numbers around a moving top, against a
    model that remembers every number: accept iff newer than the top, or
    within the window and not seen.  A third of those accepted are marked
    absorbed: one is absorbed iff so marked and within 4,096 of the top,
    whatever the window."""
    rng = random.Random(7)
    for size in (0, 64, 100, 1024, 5000):
        r = LesReplay()
        lib.les_replay_init(ctypes.byref(r), size)
        w = min(max(size, 64), 1024)
        assert r.size == w
        top, seen, absorbed = None, set(), set()
        for _ in range(N // 2):
            base = top if top is not None else rng.getrandbits(40)
            seq = max(0, base + rng.choice([1, 1, 2, -1, -5, -w + 1, -w, -w - 1, 3 * w,
                                            rng.randint(-2 * w, 2 * w), 4096, 4097]))
            want = top is None or seq > top or (top - seq < w and seq not in seen)
            assert lib.les_replay_check(ctypes.byref(r), seq) == want, (size, top, seq)
            marked = top is not None and seq in absorbed and seq <= top and top - seq < 4096
            assert lib.les_replay_absorbed(ctypes.byref(r), seq) == marked, (size, top, seq)
            if want:
                lib.les_replay_advance(ctypes.byref(r), seq)
                seen.add(seq)
                absorbed.discard(seq)
                top = seq if top is None else max(top, seq)
                if rng.random() < 1 / 3:
                    lib.les_replay_absorb(ctypes.byref(r), seq)
                    absorbed.add(seq)


def test_replay_absorbed_marks_match_a_model(lib):
    """Absorbed marks against a model, every number from 4,200 below the
    top up, as the top moves by small steps and by jumps past the marks'
    reach (4,096): a mark holds while its number is within 4,095 of the
    top, and is gone after."""
    rng = random.Random(11)
    r = LesReplay()
    lib.les_replay_init(ctypes.byref(r), 1024)
    top, marked = 10 ** 6, set()
    lib.les_replay_advance(ctypes.byref(r), top)
    for step in range(2000):
        if rng.random() < 0.05:
            top += rng.choice([4095, 4096, 5000])
        else:
            top += rng.choice([1, 2, 3, 31, 32, 33, 63, 64, 65])
        lib.les_replay_advance(ctypes.byref(r), top)
        for s in {top} | {top - rng.randrange(4096) for _ in range(8)}:
            lib.les_replay_absorb(ctypes.byref(r), s)
            marked.add(s)
        # The oldest marks, each time: a slide must take no more than it passes.
        for s in range(top - 4100 if step % 50 else top - 4200, top - 4000 if step % 50 else top + 2):
            want = s in marked and top - s < 4096
            assert lib.les_replay_absorbed(ctypes.byref(r), s) == want, (top, s)


def test_replay_seq_places_every_header_zone(lib):
    """SeqHi from the epoch (its low 16 bits) and the window, so that an old
    header zone stays old (docs/protocol.md 7): a stream across an epoch
    boundary, then replays of every age, each refused."""
    r = LesReplay()
    lib.les_replay_init(ctypes.byref(r), 64)
    seq, sent = (5 << 32) - 100, []

    def place(s):
        return lib.les_replay_seq(ctypes.byref(r), (s >> 32) & 0xFFFF, s & 0xFFFFFFFF)
    for step in [1] * 150 + [3] * 50 + [70] * 5:
        seq += step
        got = place(seq)
        assert got == (seq if r.any else seq & 0xFFFFFFFFFFFF)
        assert lib.les_replay_check(ctypes.byref(r), got)
        lib.les_replay_advance(ctypes.byref(r), got)
        sent.append(seq)
    for old in sent:
        got = place(old)
        assert got == old and not lib.les_replay_check(ctypes.byref(r), got), hex(old)
    # Half the epoch space away ties to the lower one: here, before epoch 0.
    assert not lib.les_replay_check(ctypes.byref(r), place(((r.top >> 32) + 0x8000) << 32))
    lib.les_replay_init(ctypes.byref(r), 64)
    lib.les_replay_advance(ctypes.byref(r), 7)
    assert not lib.les_replay_check(ctypes.byref(r), place(0xFFFF << 32))


# ---- pure ACKs a PEP makes (les_ack_build, docs/accel.md 6) ----------------

class LesAckDesc(ctypes.Structure):
    """struct les_ack_desc (kernel/les_wire.h), field for field."""
    _fields_ = [("family", ctypes.c_uint8), ("saddr", ctypes.c_uint8 * 16),
                ("daddr", ctypes.c_uint8 * 16), ("sport", ctypes.c_uint16),
                ("dport", ctypes.c_uint16), ("seq", ctypes.c_uint32),
                ("ack", ctypes.c_uint32), ("win", ctypes.c_uint16),
                ("flags", ctypes.c_uint8), ("has_ts", ctypes.c_bool),
                ("tsval", ctypes.c_uint32), ("tsecr", ctypes.c_uint32),
                ("sack_n", ctypes.c_uint8), ("sack", ctypes.c_uint32 * 8)]


def rand_ack(rng, fam):
    import ipaddress
    bits = 32 if fam == 4 else 128
    src = str(ipaddress.ip_address(rng.getrandbits(bits) | 1))
    dst = str(ipaddress.ip_address(rng.getrandbits(bits) | 2))
    d = dict(src=src, dst=dst, sport=rng.randrange(1, 65536), dport=rng.randrange(1, 65536),
             seq=rng.getrandbits(32), ack=rng.getrandbits(32), win=rng.randrange(65536),
             flags=0x10 | rng.choice((0, 0x40, 0x80, 0xc0)), has_ts=rng.random() < 0.7,
             tsval=rng.getrandbits(32), tsecr=rng.getrandbits(32))
    d["sack"] = [rng.getrandbits(32) for _ in range(2 * rng.randrange(0, 4 if d["has_ts"] else 5))]
    return d


def c_ack(lib, d, fam, ip):
    import ipaddress
    desc = LesAckDesc(family=fam, sport=d["sport"], dport=d["dport"], seq=d["seq"],
                      ack=d["ack"], win=d["win"], flags=d["flags"], has_ts=d["has_ts"],
                      tsval=d["tsval"], tsecr=d["tsecr"], sack_n=len(d["sack"]) // 2)
    for name in ("src", "dst"):
        packed = ipaddress.ip_address(d[name]).packed
        getattr(desc, name[0] + "addr")[:len(packed)] = list(packed)
    for i, v in enumerate(d["sack"]):
        desc.sack[i] = v
    buf = ctypes.create_string_buffer(128)
    n = lib.les_ack_build(ctypes.byref(desc), ip, buf, len(buf))
    return buf.raw[:n]


@pytest.mark.parametrize("fam", [4, 6])
def test_ack_build_matches_codec(lib, fam):
    """The ACK a PEP sends is the packet the reference codec builds from
    the same fields (checksums included), and one an endpoint's
    PEP-origin policy takes."""
    lib.les_ack_build.restype = ctypes.c_size_t
    lib.les_ack_build.argtypes = [ctypes.c_void_p, ctypes.c_bool, ctypes.c_char_p,
                                  ctypes.c_size_t]
    rng = random.Random(4711 + fam)
    for _ in range(N // 4):
        d = rand_ack(rng, fam)
        opts = b""
        if d["has_ts"]:
            opts += bytes((1, 1, 8, 10)) + struct.pack("!II", d["tsval"], d["tsecr"])
        if d["sack"]:
            opts += bytes((1, 1, 5, 2 + 4 * len(d["sack"]))) + \
                struct.pack(f"!{len(d['sack'])}I", *d["sack"])
        seg = P.tcp_segment(d["src"], d["dst"], d["sport"], d["dport"], d["seq"], d["ack"],
                            d["flags"], d["win"], opts)
        assert c_ack(lib, d, fam, False) == seg
        pkt = P.ip_packet(d["src"], d["dst"], 6, seg) if fam == 6 else \
            P.ipv4_packet(d["src"], d["dst"], 6, seg, ident=0, df=True)
        got = c_ack(lib, d, fam, True)
        assert got == pkt
        assert lib.les_pep_origin_check(4 if fam == 4 else 41, got, len(got), True) == 0


def test_ack_build_refuses_what_a_pep_may_not_send(lib):
    lib.les_ack_build.restype = ctypes.c_size_t
    lib.les_ack_build.argtypes = [ctypes.c_void_p, ctypes.c_bool, ctypes.c_char_p,
                                  ctypes.c_size_t]
    rng = random.Random(7)
    d = rand_ack(rng, 4)
    for flags in (0x00, 0x12, 0x11, 0x14, 0x18, 0x30):
        assert c_ack(lib, dict(d, flags=flags), 4, True) == b"", hex(flags)
    assert c_ack(lib, dict(d, has_ts=True, sack=[1] * 8), 4, True) == b""
    assert c_ack(lib, d, 5, True) == b""
