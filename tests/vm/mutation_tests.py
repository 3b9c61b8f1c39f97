"""Mutation campaigns (docs/testing.md): thousands of LES packets, each a
valid packet changed the way someone on the path could change it (bit flips,
truncation, extension, L), or the way a K2 holder could (a header zone
re-sealed with other flags, next header or headers, a header-only packet cut
from a data packet, zones of two packets joined), injected at an endpoint and
through a PEP.

Every mutant must be dropped at the endpoint and counted there exactly once
(each drop in xfrm_input is one /proc/net/xfrm_stat increment); only the
packets the sender sealed are delivered, each once (a replay of each is
dropped too); the PEP counts one outcome for every ESP packet it forwards;
nothing crashes and nothing leaks (the runner's kmemleak scan); the SA and
the PEP work afterwards.

The seed is random and printed: LES_MUTATION_SEED=N replays a campaign."""

import json
import os
import random
import time
import types

from lesvm import (B, Bg, Config, P, Sa, Z, agent, counters, delta, sh, tunnel_up, wait_for,
                   xfrm_flush)
from pep_tests import pep_keys_flush, pep_keys_up, run_parts

PORT = 7300
CHUNK, PAUSE_MS = 100, 15       # paced so that no receive queue overflows
PEP_OUTCOMES = ("LesPepOpened", "LesPepNoKey", "LesPepAuthFailed", "LesPepMalformed",
                "LesPepNotTcp", "LesPepSkipped", "LesPepBacklogFull", "LesPepKeyExpired",
                "LesPepErrors", "LesPepOuterFragment", "LesPepGsoUnread", "LesPepReplay")


class Base:
    """One valid packet: its zones' plaintexts, and how a K2 holder re-seals
    variants of it."""

    def __init__(self, cfg, sa, seq_lo, keysalt, inner, hz_plain, pz_plain=None):
        self.cfg, self.sa, self.seq64 = cfg, sa, sa.seq64(seq_lo)
        self.keysalt, self.inner = keysalt, inner
        # What a K2 holder seals with on this SA: the header zone key of
        # K2's root for this SPI (on a PEP-origin SA that is not its key).
        k2root = (sa.parent or sa).k2root
        self.k2 = B.zone_key(k2root, b"H", sa.spi, sa.r2i)
        self.hz_plain, self.pz_plain = hz_plain, pz_plain
        self.esp = Z.seal_raw(sa.spi, self.seq64, cfg.esn, keysalt, hz_plain,
                              sa.k1 if pz_plain is not None else None, pz_plain)

    def hz_end(self):
        return Z.HZ_OFF + len(self.hz_plain) + Z.ICV_LEN

    def reseal(self, hz_plain, pz=True):
        """hz_plain sealed under K2, followed by this packet's own payload
        zone and ICV1 or by nothing (pz=False).  K2 is all a K2 holder has:
        in v2 it derives no PEP-origin key (docs/protocol.md 6)."""
        esp = Z.seal_raw(self.sa.spi, self.seq64, self.cfg.esn, self.k2, hz_plain)
        if pz and self.pz_plain is not None:
            esp += self.esp[self.hz_end():]
        return esp


def data_base(cfg, sa, seq_lo, i):
    """A TCP segment with data, sealed as a's endpoint seals it."""
    src, dst = cfg.inner("a"), cfg.inner("b")
    seg = P.tcp_segment(src, dst, 41000, PORT, seq=1000 * i, ack=1, flags=0x18,
                        payload=f"mutation-{i}".encode())
    inner = P.ip_packet(src, dst, 6, seg) if cfg.tunnel else seg
    nh = cfg.inner_nexthdr(6)
    plan = Z.hz_plan(nh, inner)
    return Base(cfg, sa, seq_lo, sa.k2, inner,
                Z.hz_plaintext(nh, plan.flags, plan.headers, epoch=sa.seq64(seq_lo) >> 32),
                plan.csum + inner[plan.length:] + plan.moved + bytes((0, nh)))


def ack_base(cfg, po, seq_lo, i):
    """A pure ACK a PEP sealed on a pep-origin SA (header only)."""
    src, dst = cfg.inner("a"), cfg.inner("b")
    seg = P.tcp_segment(src, dst, 41001, PORT, seq=7, ack=1000 * i, flags=0x10)
    inner = P.ip_packet(src, dst, 6, seg) if cfg.tunnel else seg
    return Base(cfg, po, seq_lo, po.po_key(), inner,
                Z.hz_plaintext(cfg.inner_nexthdr(6), Z.FLAG_HEADER_ONLY, inner,
                               epoch=po.seq64(seq_lo) >> 32))


# ---- mutations ---------------------------------------------------------------------

def regions(b):
    n, end2 = len(b.esp), b.hz_end()
    r = {"SPI": (0, 4), "Seq": (4, 8), "IV": (8, 16), "L": (16, 18),
         "header zone": (18, end2 - Z.ICV_LEN), "ICV2": (end2 - Z.ICV_LEN, end2)}
    if n > end2:
        r.update({"payload zone": (end2, n - Z.ICV_LEN), "ICV1": (n - Z.ICV_LEN, n)})
    return r


def flip(rng, esp, lo, hi, bits=1):
    p = bytearray(esp)
    for _ in range(bits):
        k = rng.randrange(lo * 8, hi * 8)
        p[k // 8] ^= 0x80 >> (k % 8)
    return bytes(p)


def m_bits(rng, b, others):
    return flip(rng, b.esp, 0, len(b.esp), rng.randint(1, 3))


def m_region(rng, b, others):
    lo, hi = rng.choice(list(regions(b).values()))
    return flip(rng, b.esp, lo, hi)


def m_truncate(rng, b, others):
    return b.esp[:rng.randrange(0, len(b.esp))]


def m_extend(rng, b, others):
    return b.esp + rng.randbytes(rng.randint(1, 64))


def m_length(rng, b, others):
    """Another L: the hidden field XORed so that it decodes to v."""
    L, n = len(b.hz_plain) - Z.HZ_DESC_LEN, len(b.esp)
    v = rng.choice((0, 1, 2, L - 1, L + 1, L - 4, L + 4, n - 20, n - 36, 512, 513, 0xFFFF,
                    rng.randrange(0, 0x10000))) & 0xFFFF
    if v == L:
        v ^= 1
    d = L ^ v
    return b.esp[:16] + bytes((b.esp[16] ^ (d >> 8), b.esp[17] ^ (d & 0xFF))) + b.esp[18:]


def m_flags(rng, b, others):
    """A K2 holder re-seals the header zone with other flags."""
    f = rng.choice((Z.FLAG_HEADER_ONLY, Z.FLAG_OPTIONS_MOVED, Z.FLAG_URGENT_MOVED, 0x80,
                    0xFF, 0x00)) ^ b.hz_plain[3]
    return b.reseal(b.hz_plain[:3] + bytes((f & 0xFF or 0x40,)) + b.hz_plain[4:])


def m_nexthdr(rng, b, others):
    nh = rng.choice((0, 4, 6, 17, 41, 50, 59, 255))
    if nh == b.hz_plain[2]:
        nh ^= 1
    return b.reseal(b.hz_plain[:2] + bytes((nh,)) + b.hz_plain[3:])


def m_headers(rng, b, others):
    """A K2 holder changes one header byte (an address, a port, seq, ack,
    window, a flag) and re-seals the zone."""
    hz = bytearray(b.hz_plain)
    hz[rng.randrange(Z.HZ_DESC_LEN, len(hz))] ^= rng.randint(1, 255)
    return b.reseal(bytes(hz))


def m_header_only(rng, b, others):
    """A K2 holder cuts the payload zone off and marks the rest header-only;
    or, on a header-only packet, appends data after ICV2."""
    if b.pz_plain is None:
        return b.esp + rng.randbytes(rng.randint(4, 40))
    return b.reseal(b.hz_plain[:3] + bytes((Z.FLAG_HEADER_ONLY,)) + b.hz_plain[4:], pz=False)


def m_join(rng, b, others):
    """The header zone of this packet with what follows ICV2 in another."""
    o = rng.choice(others)
    return b.esp[:b.hz_end()] + o.esp[o.hz_end():]


def m_seq(rng, b, others):
    """Another sequence number in the clear, the IV unchanged."""
    lo = int.from_bytes(b.esp[4:8], "big")
    v = (lo + rng.choice((1, -1, 2, 64, -64, 1 << 31, rng.randrange(1, 1 << 32)))) & 0xFFFFFFFF
    return b.esp[:4] + v.to_bytes(4, "big") + b.esp[8:]


def m_spi(rng, b, others):
    """Another SA's SPI (the packet is then checked under that SA's keys)."""
    o = rng.choice(others)
    if o.sa.spi == b.sa.spi:
        return flip(rng, b.esp, 0, 4)
    return o.esp[:4] + b.esp[4:]


MUTATIONS = (m_bits, m_region, m_region, m_truncate, m_extend, m_length, m_flags,
             m_nexthdr, m_headers, m_header_only, m_join, m_seq, m_spi)


def mutants(rng, b, others, n):
    out, kinds = [], {}
    while len(out) < n:
        f = rng.choice(MUTATIONS)
        m = f(rng, b, others)
        if m != b.esp:
            out.append(m)
            kinds[f.__name__[2:]] = kinds.get(f.__name__[2:], 0) + 1
    return out, kinds


# ---- a campaign ------------------------------------------------------------------------

def campaign(T, t, cfg, bases, per_base, sender, rng, pep=False):
    """For each base: its mutants, the packet itself, then the packet again
    (a replay).  Sent from `sender` to b; pep: through m, which holds the
    tunnel's pep-view keys."""
    wire, n_mut, kinds = [], 0, {}
    for b in bases:
        ms, k = mutants(rng, b, bases, per_base)
        n_mut += len(ms)
        for name, c in k.items():
            kinds[name] = kinds.get(name, 0) + c
        wire += ms + [b.esp, b.esp]
    path = f"{t.out}/mutants-{'pep' if pep else 'endpoint'}.hex"
    with open(path, "w") as f:
        f.write("\n".join(P.wrap_esp(cfg.outer("a"), cfg.outer("b"), e).hex() for e in wire))
    # The SAs, for a reader of the campaign (tests/host/test_wireshark.py).
    sas = {b.sa.spi: b.sa for b in bases}
    with open(path[:-len(".hex")] + ".keys.json", "w") as f:
        json.dump({"config": str(cfg), "esn": cfg.esn, "tunnel": cfg.tunnel,
                   "seq_hi": bases[0].sa.seq64(0) >> 32,
                   "sas": [{"src": cfg.outer(s.src), "dst": cfg.outer(s.dst), "spi": s.spi,
                            "blob": s.blob().hex()} for s in sas.values()]}, f)
    expected = sorted(expected_segment(cfg, b) for b in bases)

    before = {ns: counters(ns) for ns in "amb"}
    rx = Bg("b", "tcp-raw-recv", cfg.inner("b"), PORT, 3600)
    agent(sender, "raw-send-file", cfg.outer("b"), path, CHUNK, PAUSE_MS, timeout=1800)
    n_drop = n_mut + len(bases)

    def xfrm_drops():
        d = delta(before["b"], counters("b"))
        return sum(v for k, v in d.items() if k.startswith("Xfrm"))
    wait_for(lambda: xfrm_drops() >= n_drop, 120, 1)
    seen = rx.stop()["segments"]
    after = {ns: counters(ns) for ns in "amb"}
    d = {ns: delta(before[ns], after[ns]) for ns in "amb"}
    got = sorted((s["seq"], s["ack"], s["flags"], s["data"]) for s in seen)
    T.ok(got == expected,
         f"of {n_mut} mutants, {len(bases)} packets and {len(bases)} replays, exactly the "
         f"{len(bases)} packets are delivered, each once",
         {"delivered": len(got), "unexpected": [g for g in got if g not in expected][:5],
          "missing": [e for e in expected if e not in got][:5]})
    drops = {k: v for k, v in d["b"].items() if k.startswith("Xfrm")}
    T.ok(sum(drops.values()) == n_drop,
         f"each of the {n_mut} mutants and {len(bases)} replays is dropped and counted once",
         {"xfrm": drops, "les": {k: v for k, v in d["b"].items() if k.startswith("LesIn")},
          "mutations": kinds, "softnet": softnet_dropped()})
    if pep:
        # b answers each delivered segment (RST): m forwards those too.
        forwarded = len(wire) + d["a"].get("LesOutPackets", 0) + d["b"].get("LesOutPackets", 0)
        outcomes = {k: d["m"][k] for k in PEP_OUTCOMES if d["m"].get(k)}
        T.ok(sum(outcomes.values()) == forwarded,
             f"the PEP counts one outcome for each of the {forwarded} ESP packets it forwards",
             {"pep": outcomes, "flows": {k: v for k, v in d["m"].items() if "Flows" in k}})


def expected_segment(cfg, b):
    inner = b.inner
    seg = P.parse_ip(inner).payload if cfg.tunnel else inner
    doff = (seg[12] >> 4) * 4
    return (int.from_bytes(seg[4:8], "big"), int.from_bytes(seg[8:12], "big"), seg[13],
            seg[doff:].hex())


def softnet_dropped():
    """Packets the kernel dropped before any protocol saw them (all CPUs)."""
    out = sh("cat /proc/net/softnet_stat").stdout.split("\n")
    return sum(int(ln.split()[1], 16) for ln in out if ln.strip())


def still_works(T, cfg, bases, next_seq, pep=False):
    """A fresh packet of every SA the campaign used is delivered (and, through
    the PEP, opened)."""
    fresh, seqs = [], {}
    for b in bases:
        if b.sa.spi in seqs:
            continue
        seqs[b.sa.spi] = 1
        i = next_seq()
        f = (data_base(cfg, b.sa, i, i) if b.pz_plain is not None else
             ack_base(cfg, b.sa, i, i))
        fresh.append(f)
    before = counters("m")
    rx = Bg("b", "tcp-raw-recv", cfg.inner("b"), PORT, 60)
    agent("a" if pep else "m", "raw-send", cfg.outer("b"),
          ",".join(P.wrap_esp(cfg.outer("a"), cfg.outer("b"), f.esp).hex() for f in fresh))
    time.sleep(1)
    got = sorted((s["seq"], s["ack"], s["flags"], s["data"]) for s in rx.stop()["segments"])
    T.ok(got == sorted(expected_segment(cfg, f) for f in fresh),
         "afterwards every SA of the campaign still delivers a fresh packet", got)
    if pep:
        d = delta(before, counters("m"))
        T.ok(d.get("LesPepOpened", 0) >= len(fresh),
             "afterwards the PEP still opens header zones", d)


# ---- the step --------------------------------------------------------------------------

def seed():
    s = os.environ.get("LES_MUTATION_SEED")
    return int(s) if s else random.SystemRandom().randrange(1 << 32)


def at_endpoint(T, t, n_bases=200, per_base=50):
    """Injected at b from the path (m), on an ESN tunnel with a pep-origin-in
    SA: half the bases are data packets, half PEP ACKs (header-only)."""
    s = seed()
    rng = random.Random(s)
    T.prefix += f"seed {s}: "
    cfg = Config("tunnel", 4, 4, esn=True)
    ab, _ = tunnel_up(cfg, 0x7800)
    po = Sa(cfg, "a", "b", 0x7880, role="pep-origin-in", parent=ab, pep_id=3)
    sh(po.add_cmd(), ns="b")
    bases = [data_base(cfg, ab, i, i) if i % 2 else ack_base(cfg, po, i, i)
             for i in range(1, n_bases + 1)]
    counter = iter(range(n_bases + 1, 10 ** 6))
    campaign(T, t, cfg, bases, per_base, "m", rng)
    still_works(T, cfg, bases, lambda: next(counter))
    xfrm_flush()


def through_pep(T, t, n_bases=200, per_base=50):
    """Injected at a, forwarded by m (pep-view keys of the tunnel), dropped at b."""
    s = seed()
    rng = random.Random(s)
    T.prefix += f"seed {s}: "
    cfg = Config("tunnel", 6, 6)
    ab, ba = tunnel_up(cfg, 0x7900)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    bases = [data_base(cfg, ab, i, i) for i in range(1, n_bases + 1)]
    counter = iter(range(n_bases + 1, 10 ** 6))
    campaign(T, t, cfg, bases, per_base, "a", rng, pep=True)
    still_works(T, cfg, bases, lambda: next(counter), pep=True)
    pep_keys_flush()
    xfrm_flush()


def run(T, out):
    t = types.SimpleNamespace(out=out)
    sh("sysctl -qw net.core.netdev_max_backlog=20000")
    run_parts(T, "mutation", (("at an endpoint", at_endpoint), ("through a PEP", through_pep)), t)
