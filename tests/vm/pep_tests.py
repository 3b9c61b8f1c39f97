# SPDX-License-Identifier: GPL-2.0
"""The PEP node in a real kernel: m is the PEP between client a and server b.

m holds PEP keys (pep-view SAs with the PEP mark) for both directions of the
a <-> b tunnel.  Its netfilter hook opens header zones, never payload zones,
and keeps a flow table that lesctl shows.  What the endpoints capture, opened
with their own keys, is the reference for every number the PEP reports.
"""
import json
import os
import re
import time
import types

from lesvm import (LESCTL, OUTER, Bg, Config, Sa, P, Z, agent, capture_esp,
                   counters, delta, encap_hold, sh, tunnel_up, xfrm_flush, wait_for)

PEP_MARK = 0x4C455350
MARKER = "LES-PLAINTEXT-MARKER-7f3a9c"


def lesctl(args, ns="m", check=True):
    return sh(f"{LESCTL} {args}", ns=ns, check=check)


def lesctl_j(args, ns="m"):
    return json.loads(lesctl(f"-j {args}", ns=ns).stdout)


def pep_view(sa):
    """The PEP's key for the endpoint SA sa: same SPI, addresses, mode and
    flags, the K2 of sa only."""
    return Sa(sa.cfg, sa.src, sa.dst, sa.spi, role="pep-view", parent=sa)


def pep_keys_up(ab, ba, extra="", esn=True):
    """The PEP's keys; esn=False adds them without the endpoint SAs' ESN
    flag, as an operator may (docs/protocol.md 3.1: it does not matter)."""
    for sa in (ab, ba):
        cmd = pep_view(sa).add_cmd(f"mark {PEP_MARK:#x} {extra}")
        if not esn:
            cmd = cmd.replace(" flag esn replay-seq-hi 1 replay-oseq-hi 1", "")
        sh(cmd, ns="m")


def pep_keys_flush():
    sh("ip xfrm state flush", ns="m")


# ---- what the endpoints saw -------------------------------------------------------

def tcp_of(cfg, sa, esp):
    """The TCP segment inside one LES packet, opened with the endpoint keys."""
    inner = Z.open_full(esp, sa.k2, sa.k1, cfg.esn, seq_hi=sa.seq64(0) >> 32).inner
    seg = P.parse_ip(inner).payload if cfg.tunnel else inner
    doff = (seg[12] >> 4) * 4
    opts, mss, wscale, i = seg[20:doff], None, None, 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        ln = opts[i + 1]
        if kind == 2 and ln == 4:
            mss = int.from_bytes(opts[i + 2:i + 4], "big")
        if kind == 3 and ln == 3:
            wscale = opts[i + 2]
        i += max(ln, 2)
    return {"seq": int.from_bytes(seg[4:8], "big"), "ack": int.from_bytes(seg[8:12], "big"),
            "flags": seg[13], "win": int.from_bytes(seg[14:16], "big"),
            "len": len(seg) - doff, "mss": mss, "wscale": wscale, "data": seg[doff:]}


def side_expected(segs):
    """The numbers the PEP must report for a side that sent segs."""
    syn = [s for s in segs if s["flags"] & 0x02]
    isn = syn[-1]["seq"] if syn else segs[0]["seq"]
    nxt = max(((s["seq"] + s["len"] + (s["flags"] & 1) + ((s["flags"] >> 1) & 1) - isn) % 2**32
               for s in segs))
    acks = [s for s in segs if s["flags"] & 0x10]
    exp = {"isn": isn, "seq": segs[-1]["seq"], "next": (isn + nxt) % 2**32,
           "win": segs[-1]["win"], "packets": len(segs), "bytes": sum(s["len"] for s in segs)}
    if acks:
        exp["ack"] = acks[-1]["ack"]
    if syn and syn[-1]["mss"] is not None:
        exp["mss"] = syn[-1]["mss"]
    return exp


def syn_wscale(segs):
    """The window scale a side's SYN offered, or None."""
    syn = [s for s in segs if s["flags"] & 0x02]
    return syn[-1]["wscale"] if syn else None


def find_flow(flows, port):
    for f in flows:
        if f["responder"]["port"] == port:
            return f
    return None


# ---- the checks -------------------------------------------------------------------

class Transfer:
    """a sends nbytes of MARKER text to b over TCP through m, with captures
    at a (the client's own view), on m's two interfaces, and m's flow table
    read afterwards."""

    def __init__(self, t, cfg, ab, ba, port, nbytes=96 * 1024, tag="pep"):
        self.cfg, self.ab, self.ba, self.port = cfg, ab, ba, port
        out = t.out
        self.paths = {n: f"{out}/{tag}-{n}.pcap" for n in ("a", "m-a", "m-b")}
        snif = [Bg("a", "sniff", "a-m", self.paths["a"], 120),
                Bg("m", "sniff", "m-a", self.paths["m-a"], 120),
                Bg("m", "sniff", "m-b", self.paths["m-b"], 120)]
        self.before = counters("m")
        srv = Bg("b", "tcp-serve", cfg.inner("b"), port, 90)
        self.sent = agent("a", "tcp-send", cfg.inner("a"), cfg.inner("b"), port, nbytes,
                          "les", MARKER, timeout=180)
        self.got = srv.result(timeout=180)
        time.sleep(0.5)
        for s in snif:
            s.stop()
        self.delta = delta(self.before, counters("m"))
        self.flows = lesctl_j("flows")
        self.flow = find_flow(self.flows, port)

    def delivered(self):
        return self.sent == self.got, {"sent": self.sent, "got": self.got}

    def endpoint_view(self):
        """The client's capture opened with its keys: (a's, b's) segments."""
        if getattr(self, "_segs", None) is None:
            self._segs = self._open_client_capture()
        return self._segs

    def _open_client_capture(self):
        segs = {self.ab.spi: [], self.ba.spi: []}
        sas = {self.ab.spi: self.ab, self.ba.spi: self.ba}
        for _, f in capture_esp(self.paths["a"]):
            if f.spi in sas:
                segs[f.spi].append(tcp_of(self.cfg, sas[f.spi], f.esp))
        return segs[self.ab.spi], segs[self.ba.spi]

    def numbers_match(self):
        if not self.flow:
            return False, {"flows": self.flows}
        a_segs, b_segs = self.endpoint_view()
        if not a_segs or not b_segs:
            return False, "the client's capture holds no TCP segments"
        bad = {}
        # Both windows are scaled, or neither (RFC 7323 2.2).
        scaled = syn_wscale(a_segs) is not None and syn_wscale(b_segs) is not None
        for side, segs in (("initiator", a_segs), ("responder", b_segs)):
            exp, got = side_expected(segs), self.flow[side]
            exp["wscale"] = syn_wscale(segs) if scaled else None
            for k, v in exp.items():
                if got.get(k) != v:
                    bad[f"{side} {k}"] = {"pep": got.get(k), "endpoint": v}
        return not bad, bad

    def unchanged_on_the_wire(self):
        """Every ESP packet leaves m exactly as it came in, but for TTL."""
        def esps(path, src):
            out = []
            for ip, f in capture_esp(path):
                if str(f.outer.src) == src:
                    out.append((f.esp, ip[0], len(ip)))
            return out
        src = OUTER["a"][self.cfg.ofam]
        inn, outn = esps(self.paths["m-a"], src), esps(self.paths["m-b"], src)
        # The same packets, byte for byte; not always in the same order:
        # two CPUs may forward two of them at once (seen on 6.12).
        return (len(inn) > 10 and sorted(inn) == sorted(outn),
                {"in": len(inn), "out": len(outn), "same order": inn == outn})

    def no_plaintext(self):
        """The marker is in what a sent (K1 shows it), and nowhere on m."""
        a_segs, _ = self.endpoint_view()
        seen_with_k1 = any(MARKER.encode() in s["data"] for s in a_segs)
        where = []
        for n in ("m-a", "m-b"):
            if MARKER.encode() in open(self.paths[n], "rb").read():
                where.append(n)
        for n, text in (("kernel log", sh("dmesg").stdout),
                        ("lesctl flows", lesctl("flows").stdout + json.dumps(self.flows)),
                        ("lesctl pep show", lesctl("pep show").stdout + lesctl("-j pep show").stdout),
                        ("lesctl stats", lesctl("stats").stdout)):
            if MARKER in text:
                where.append(n)
        return seen_with_k1 and not where, {"seen_with_k1": seen_with_k1, "found on m": where}


def forged(t, cfg, ab, seq):
    """Packets whose header zone a PEP cannot authenticate: it counts them,
    adds no flow, and forwards them untouched (b then drops them).  Under a
    wrong key the hidden L comes out as noise, so such a packet may count as
    malformed instead (docs/protocol.md 3.1)."""
    src, dst = cfg.inner("a"), cfg.inner("b")
    seg = P.tcp_segment(src, dst, 41000, 7300, seq=1, flags=0x02)
    inner = P.ip_packet(src, dst, 6, seg) if cfg.tunnel else seg
    good = Z.seal(ab.spi, ab.seq64(seq), cfg.esn, ab.k2, ab.k1, cfg.inner_nexthdr(6), inner)
    flipped = bytearray(good)
    flipped[22] ^= 0x40                       # a header zone byte
    icv2 = bytearray(Z.seal(ab.spi, ab.seq64(seq + 1), cfg.esn, ab.k2, ab.k1,
                            cfg.inner_nexthdr(6), inner))
    icv2[Z.HZ_OFF + Z.HZ_DESC_LEN + Z.peek_len(good, ab.k2) + 3] ^= 1
    wrong_k2 = Z.seal(ab.spi, ab.seq64(seq + 2), cfg.esn, bytes(36), ab.k1,
                      cfg.inner_nexthdr(6), inner)
    fwd = [bytes(flipped), bytes(icv2), wrong_k2]
    pkts = [P.wrap_esp(cfg.outer("a"), cfg.outer("b"), e, udp_encap=cfg.encap) for e in fwd]
    flows_before = lesctl_j("pep show")["flows"]
    keys_before = {k["spi"]: k["auth_failed"] for k in lesctl_j("pep show")["keys"]}
    snif = Bg("m", "sniff", "m-b", f"{t.out}/pep-forged.pcap", 30)
    cm, cb = counters("m"), counters("b")
    agent("a", "raw-send", cfg.outer("b"), ",".join(p.hex() for p in pkts))
    time.sleep(0.5)
    snif.stop()
    dm, db = delta(cm, counters("m")), delta(cb, counters("b"))
    keys = {k["spi"]: k["auth_failed"] for k in lesctl_j("pep show")["keys"]}
    out = [f.esp for _, f in capture_esp(f"{t.out}/pep-forged.pcap", ab.spi)]
    auth = dm.get("LesPepAuthFailed", 0)
    ok = (auth >= 2 and auth + dm.get("LesPepMalformed", 0) == 3 and "LesPepOpened" not in dm and
          keys.get(ab.spi, 0) - keys_before.get(ab.spi, 0) == auth and
          lesctl_j("pep show")["flows"] == flows_before and out == fwd and
          db.get("LesInAuthFailed", 0) + db.get("LesInMalformed", 0) == 3)
    return ok, {"m": dm, "b": db, "forwarded": len(out), "keys": keys}


def udp_refused(t, cfg, ab, seq):
    """ESP in UDP that its receiver's UDP refuses, though the ESP packet in
    it is genuine: a UDP length 4 bytes short (the receiver cuts the
    packet there, and the checksum, made over all of it, fails over what
    is left), a wrong checksum, and over IPv6 a checksum of 0 (RFC 8200
    8.1).  The PEP reads the datagram as the receiver does, and none:
    each is counted as malformed and forwarded, b's xfrm sees none.  veth
    marks a checksum verified (NETIF_F_RXCSUM) on the way in, where a NIC
    marks only a good one: that is off on m's and b's ends meanwhile."""
    src, dst = cfg.inner("a"), cfg.inner("b")
    inner = P.ip_packet(src, dst, 6, P.tcp_segment(src, dst, 41002, 7300, flags=0x02))
    oa, ob = cfg.outer("a"), cfg.outer("b")
    pkts = []
    hows = ("short length", "bad checksum") + (("zero checksum",) if cfg.ofam == 6 else ())
    for i, how in enumerate(hows):
        e = Z.seal(ab.spi, ab.seq64(seq + i), cfg.esn, ab.k2, ab.k1, cfg.inner_nexthdr(6), inner)
        udp = bytearray(P.udp_segment(oa, ob, P.NAT_T_PORT, P.NAT_T_PORT, e))
        if how == "short length":
            udp[4:6] = (len(udp) - 4).to_bytes(2, "big")
        elif how == "zero checksum":
            udp[6:8] = b"\0\0"
        else:
            udp[6:8] = (int.from_bytes(udp[6:8], "big") ^ 0x5a5a or 1).to_bytes(2, "big")
        pkts.append(P.ip_packet(oa, ob, P.IPPROTO_UDP, bytes(udp)))
    flows_before = lesctl_j("pep show")["flows"]
    cm, cb = counters("m"), counters("b")
    ends = (("m", "m-a"), ("b", "b-m"))
    try:
        for ns, dev in ends:
            sh(f"ethtool -K {dev} rx off", ns=ns)
        agent("a", "raw-send", ob, ",".join(p.hex() for p in pkts))
        time.sleep(0.3)
    finally:
        for ns, dev in ends:
            sh(f"ethtool -K {dev} rx on", ns=ns, check=False)
    dm, db = delta(cm, counters("m")), delta(cb, counters("b"))
    ok = (dm.get("LesPepMalformed") == len(hows) and "LesPepOpened" not in dm and
          "LesPepAuthFailed" not in dm and lesctl_j("pep show")["flows"] == flows_before and
          not any(k.startswith(("LesIn", "XfrmIn")) for k in db))
    return ok, {"m": dm, "b": db}


def gso_passes(t, cfg, ab, ba):
    """UDP GRO forwarding on m's way in from a (`rx-udp-gro-forwarding`;
    veth merges only what comes from a device without TSO, and a's sends
    leave in bursts through netem): ESP in UDP reaches the hook as GSO
    skbs, several ESP packets behind one header.  An observing PEP passes
    them unread, as they came (only an accelerating one splits them:
    `accel gso`), and b gets every byte."""
    feats = ("tcp-segmentation-offload", "generic-receive-offload", "rx-udp-gro-forwarding")
    short = {"tcp-segmentation-offload": "tso", "generic-receive-offload": "gro"}
    was = {}
    for ns, dev in (("a", "a-m"), ("m", "m-a")):
        for ln in sh(f"ethtool -k {dev}", ns=ns).stdout.splitlines():
            name, _, val = ln.strip().partition(": ")
            if name in feats:
                was[(ns, dev, name)] = val.split()[0]
    try:
        sh("ethtool -K a-m tso off && tc qdisc replace dev a-m root netem delay 1ms", ns="a")
        sh("ethtool -K m-a gro on rx-udp-gro-forwarding on", ns="m")
        tr = Transfer(t, cfg, ab, ba, 7270, nbytes=256 * 1024, tag="pep-gso")
    finally:
        sh("tc qdisc del dev a-m root", ns="a", check=False)
        for (ns, dev, name), val in was.items():
            sh(f"ethtool -K {dev} {short.get(name, name)} {val}", ns=ns, check=False)
    d = tr.delta
    return (tr.delivered()[0] and d.get("LesPepGsoUnread", 0) > 0 and
            not d.get("LesPepGso") and not d.get("LesPepErrors"), {"m": d})


def udp_trailer(t, cfg, ab, seq):
    """ESP in UDP with bytes after its UDP length: the receiver's UDP cuts
    them and takes the datagram (udp_rcv()), so the PEP reads the datagram
    as its length says and opens it; b's xfrm takes it too.  Checksums
    are checked, not taken as verified, as in udp_refused."""
    src, dst = cfg.inner("a"), cfg.inner("b")
    inner = P.ip_packet(src, dst, 6, P.tcp_segment(src, dst, 41003, 7300, flags=0x02))
    oa, ob = cfg.outer("a"), cfg.outer("b")
    e = Z.seal(ab.spi, ab.seq64(seq), cfg.esn, ab.k2, ab.k1, cfg.inner_nexthdr(6), inner)
    udp = P.udp_segment(oa, ob, P.NAT_T_PORT, P.NAT_T_PORT, e)
    pkt = P.ip_packet(oa, ob, P.IPPROTO_UDP, udp + b"\xa5" * 8)
    cm, cb = counters("m"), counters("b")
    ends = (("m", "m-a"), ("b", "b-m"))
    try:
        for ns, dev in ends:
            sh(f"ethtool -K {dev} rx off", ns=ns)
        agent("a", "raw-send", ob, pkt.hex())
        time.sleep(0.3)
    finally:
        for ns, dev in ends:
            sh(f"ethtool -K {dev} rx on", ns=ns, check=False)
    dm, db = delta(cm, counters("m")), delta(cb, counters("b"))
    bad = ("Malformed", "Failed", "Error", "Policy")
    # b answers the SYN: its reply through m may be opened too.
    ok = (dm.get("LesPepOpened", 0) >= 1 and db.get("LesInPackets", 0) >= 1 and
          not any(w in k for d in (dm, db) for k in d for w in bad))
    return ok, {"m": dm, "b": db}


def malformed_passes(t, cfg, ab, seq):
    """A packet whose hidden L says 4000 is counted as malformed and
    forwarded."""
    src, dst = cfg.inner("a"), cfg.inner("b")
    inner = P.ip_packet(src, dst, 6, P.tcp_segment(src, dst, 41001, 7300, flags=0x02))
    e = bytearray(Z.seal(ab.spi, ab.seq64(seq), cfg.esn, ab.k2, ab.k1, 4, inner))
    d = Z.peek_len(bytes(e), ab.k2) ^ 4000
    e[16] ^= d >> 8
    e[17] ^= d & 0xFF
    cm, cb = counters("m"), counters("b")
    agent("a", "raw-send", cfg.outer("b"), P.wrap_esp(cfg.outer("a"), cfg.outer("b"), bytes(e)).hex())
    time.sleep(0.3)
    dm, db = delta(cm, counters("m")), delta(cb, counters("b"))
    return dm.get("LesPepMalformed") == 1 and db.get("LesInMalformed") == 1, {"m": dm, "b": db}


def replays(t, cfg, seq):
    """Review item 3: the PEP's replay window.  SYN, the same SYN again, a
    forged RST (bad ICV2) with the next sequence number, then a genuine ACK
    with that number: the replay and the forgery are counted and change
    nothing; the ACK, whose number the forgery did not burn, is read.  Then
    the SYN once more, far behind the window: still a replay (v1 and a
    plain RFC 4303 inference would take it for the next 2^32 epoch).  On an
    SA of their own (b drops their inner packets), so that the tunnel's
    sequence numbers are not moved.  Then the window is the size the
    PEP's key names, not 32 (xfrm_user sets a window above 32 after
    les.ko has made the SA: kernel/sa.c): with replay-window 1024, a
    packet 100 behind the newest, never seen, is read; sent again, it is
    a replay."""
    ab = Sa(cfg, "a", "b", 0x7E00)
    ab.install()
    # A 64-packet window on the PEP (docs/protocol.md 7).
    sh(pep_view(ab).add_cmd(f"mark {PEP_MARK:#x}").replace("replay-window 4096", "replay-window 64"),
       ns="m")
    a_in = "10.10.1.78" if cfg.ifam == 4 else "fd10:1::78"
    b_in = "10.10.2.78" if cfg.ifam == 4 else "fd10:2::78"

    def sealed(s, flags, sa=ab):
        inner = P.tcp_packet(a_in, b_in, 41100, 7300, seq=1000, ack=1 if flags & 0x10 else 0,
                             flags=flags)
        return Z.seal(sa.spi, sa.seq64(s), cfg.esn, sa.k2, sa.k1, cfg.inner_nexthdr(6), inner)
    syn = sealed(seq, 0x02)
    rst = bytearray(sealed(seq + 1, 0x04))
    rst[Z.HZ_OFF + Z.HZ_DESC_LEN + Z.peek_len(bytes(rst), ab.k2)] ^= 1     # ICV2
    ack = sealed(seq + 1, 0x10)
    later = [sealed(seq + 2 + i, 0x10) for i in range(80)]      # past a 64-packet window
    lesctl("flows flush")
    cm = counters("m")
    wrap = [P.wrap_esp(cfg.outer("a"), cfg.outer("b"), e) for e in (syn, syn, bytes(rst), ack)]
    send_from("a", cfg.outer("b"), wrap, chunk=1)
    dm = delta(cm, counters("m"))
    f = find_flow(lesctl_j("flows"), 7300) or {}
    ini = f.get("initiator", {})
    ok = (dm.get("LesPepOpened") == 2 and dm.get("LesPepReplay") == 1 and
          dm.get("LesPepAuthFailed") == 1 and ini.get("packets") == 2 and f.get("handshake"))
    send_from("a", cfg.outer("b"), [P.wrap_esp(cfg.outer("a"), cfg.outer("b"), e)
                                    for e in later + [syn]])
    d2 = delta(cm, counters("m"))
    ok = ok and d2.get("LesPepReplay") == 2 and d2.get("LesPepOpened") == 82
    wide = Sa(cfg, "a", "b", 0x7E01)
    wide.install()
    sh(pep_view(wide).add_cmd(f"mark {PEP_MARK:#x}").replace("replay-window 4096",
                                                             "replay-window 1024"), ns="m")
    c3 = counters("m")
    send_from("a", cfg.outer("b"), [P.wrap_esp(cfg.outer("a"), cfg.outer("b"),
                                               sealed(seq + n, 0x10, wide))
                                    for n in (200, 100, 100)], chunk=1)
    d3 = delta(c3, counters("m"))
    ok = ok and d3.get("LesPepOpened") == 2 and d3.get("LesPepReplay") == 1
    for sa in (ab, wide):
        for sa_ns in ("a", "b", "m"):
            sh(f"ip xfrm state delete src {cfg.outer('a')} dst {cfg.outer('b')} proto esp "
               f"spi {sa.spi:#x}" + (f" mark {PEP_MARK:#x}" if sa_ns == "m" else ""), ns=sa_ns)
    return ok, {"m": dm, "then": d2, "window 1024": d3, "flow": f}


# ---- the flow table's bounds --------------------------------------------------------

def handshake_pkts(cfg, ab, ba, seqs, sport, dport=7400, fake=True):
    """SYN, SYN-ACK, ACK of one connection, sealed as the endpoints would.
    Inner addresses no policy at a or b accepts: the endpoints drop them
    after decryption, so they answer nothing."""
    a_in = "10.10.1.77" if cfg.ifam == 4 else "fd10:1::77"
    b_in = "10.10.2.77" if cfg.ifam == 4 else "fd10:2::77"

    def pkt(sa, src, dst, sp, dp, seq, ack, flags):
        inner = P.tcp_packet(src, dst, sp, dp, seq=seq, ack=ack, flags=flags)
        esp = Z.seal(sa.spi, sa.seq64(next(seqs[sa.spi])), cfg.esn, sa.k2, sa.k1,
                     cfg.inner_nexthdr(6), inner)
        return P.wrap_esp(cfg.outer(sa.src), cfg.outer(sa.dst), esp)
    return (pkt(ab, a_in, b_in, sport, dport, 1000, 0, 0x02),
            pkt(ba, b_in, a_in, dport, sport, 5000, 1001, 0x12),
            pkt(ab, a_in, b_in, sport, dport, 1001, 5001, 0x10))


def send_from(ns, dst, pkts, chunk=200):
    for i in range(0, len(pkts), chunk):
        agent(ns, "raw-send", dst, ",".join(p.hex() for p in pkts[i:i + chunk]))


def crafted_tunnel(spi):
    """A v4-in-v4 tunnel whose keys m holds, with no flow yet, and the ESP
    sequence numbers of what a test seals on it."""
    cfg = Config("tunnel", 4, 4)
    ab, ba = tunnel_up(cfg, spi)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    lesctl("flows flush")
    return cfg, ab, ba, {ab.spi: iter(range(1, 100000)), ba.spi: iter(range(1, 100000))}


def flow_limits(T, t):
    cfg, ab, ba, seqs = crafted_tunnel(0x6100)
    lesctl("pep set max-flows 20 idle-timeout 300")
    a, b = OUTER["a"][4], OUTER["b"][4]

    # One established connection, then a flood of 300 new ones.
    syn, synack, ack = handshake_pkts(cfg, ab, ba, seqs, 30000)
    send_from("a", b, [syn])
    send_from("b", a, [synack])
    send_from("a", b, [ack])
    est = [f for f in lesctl_j("flows") if f["initiator"]["port"] == 30000]
    T.ok(len(est) == 1 and est[0]["state"] == "established" and est[0]["handshake"],
         "a handshake the PEP saw makes an established flow", lesctl_j("flows"))
    before = counters("m")
    flood = [handshake_pkts(cfg, ab, ba, seqs, 31000 + i)[0] for i in range(300)]
    send_from("a", b, flood)
    time.sleep(0.3)
    d = delta(before, counters("m"))
    flows = lesctl_j("flows")
    T.ok(len(flows) <= 20 and lesctl_j("pep show")["flows"] == len(flows),
         "300 new flows against max-flows 20: the table holds at most 20",
         {"flows": len(flows), "delta": d})
    T.ok(d.get("LesPepFlowsEvicted", 0) >= 280 and d.get("LesPepOpened") == 300,
         "half-open flows made room for new ones, each counted", d)
    T.ok(any(f["initiator"]["port"] == 30000 for f in flows),
         "the established flow survived the flood", [f["initiator"]["port"] for f in flows])

    # Fill the table with established flows: then a new one is refused.
    for i in range(19):
        syn, synack, ack = handshake_pkts(cfg, ab, ba, seqs, 32000 + i)
        send_from("a", b, [syn])
        send_from("b", a, [synack])
        send_from("a", b, [ack])
    before = counters("m")
    send_from("a", b, [handshake_pkts(cfg, ab, ba, seqs, 33000)[0]])
    d = delta(before, counters("m"))
    flows = lesctl_j("flows")
    T.ok(len(flows) == 20 and all(f["state"] == "established" for f in flows) and
         d.get("LesPepTableFull") == 1 and not any(f["initiator"]["port"] == 33000 for f in flows),
         "a table full of established flows refuses a new one and counts it",
         {"flows": len(flows), "delta": d})

    # Lowering the limit trims the table; an idle timeout empties it.
    lesctl("pep set max-flows 5")
    T.ok(wait_for(lambda: len(lesctl_j("flows")) == 5, 5),
         "lowering max-flows trims the table to the new limit", len(lesctl_j("flows")))
    before = counters("m")
    lesctl("pep set idle-timeout 1")
    T.ok(wait_for(lambda: not lesctl_j("flows"), 6),
         "flows idle past idle-timeout are dropped", lesctl_j("flows"))
    T.ok(delta(before, counters("m")).get("LesPepFlowsExpired") == 5,
         "expired flows are counted", delta(before, counters("m")))
    lesctl("pep set max-flows 65536 idle-timeout 300")
    pep_keys_flush()
    xfrm_flush()


def tcp_state(T, t):
    """What a flow takes from a segment is what the TCP it goes to would
    take: a window scale once both SYNs said so (RFC 7323 2.2), not a
    window or ACK older than one it had (a segment that overtook another),
    not a SYN on a connection under way (RFC 5961 4.2) unless a SYN-ACK
    answers it."""
    cfg, ab, ba, seqs = crafted_tunnel(0x6180)
    a, b = OUTER["a"][4], OUTER["b"][4]
    a_in, b_in = "10.10.1.77", "10.10.2.77"
    ws = lambda n: bytes((3, 3, n))                          # noqa: E731

    def seal(sa, src, dst, sp, dp, **kw):
        esp = Z.seal(sa.spi, sa.seq64(next(seqs[sa.spi])), cfg.esn, sa.k2, sa.k1,
                     cfg.inner_nexthdr(6), P.tcp_packet(src, dst, sp, dp, **kw))
        return P.wrap_esp(cfg.outer(sa.src), cfg.outer(sa.dst), esp)

    def from_a(port, **kw):
        send_from("a", b, [seal(ab, a_in, b_in, port, 7400, **kw)])

    def from_b(port, **kw):
        send_from("b", a, [seal(ba, b_in, a_in, 7400, port, **kw)])

    def flow(port):
        return next((f for f in lesctl_j("flows") if f["initiator"]["port"] == port), {})

    def sides(port):
        f = flow(port)
        return f.get("initiator", {}), f.get("responder", {})

    from_a(34000, seq=1000, flags=0x02, options=ws(7))
    i, r = sides(34000)
    T.ok(i.get("isn") == 1000 and "wscale" not in i,
         "a SYN's window scale is not taken before its answer says so too", i)
    from_b(34000, seq=5000, ack=1001, flags=0x12, options=ws(9))
    i, r = sides(34000)
    T.ok(i.get("wscale") == 7 and r.get("wscale") == 9,
         "an answer with the option puts both scales in force", (i, r))

    from_a(34001, seq=1000, flags=0x02, options=ws(7))
    from_b(34001, seq=5000, ack=1001, flags=0x12)
    from_a(34001, seq=1000, flags=0x02, options=ws(7))
    i, r = sides(34001)
    T.ok(i.get("isn") == 1000 and r.get("isn") == 5000 and
         "wscale" not in i and "wscale" not in r,
         "an answer without it turns both off, a SYN sent again does not turn them on",
         (i, r))
    # That SYN came after the SYN-ACK (its sender's timer); the server,
    # which sends its SYN-ACK again at most twice a second, did not.
    from_a(34001, seq=1001, ack=5001, flags=0x10)
    T.ok(flow(34001).get("state") == "established",
         "a SYN sent again after its SYN-ACK went by does not start the handshake again: "
         "the ACK that ends it makes the flow established", flow(34001))

    # 34000 on: the receiver b ACKs a's data; an older ACK overtakes it.
    from_a(34000, seq=1001, ack=5001, flags=0x18, payload=b"d" * 1000)
    from_b(34000, seq=5001, ack=1001 + 1000, flags=0x10, window=300)
    from_b(34000, seq=5001, ack=1001 + 500, flags=0x10, window=200)
    i, r = sides(34000)
    T.ok(r.get("ack") == 2001 and r.get("win") == 300,
         "an ACK older than one seen moves neither the ACK nor the window back", r)
    from_a(34000, seq=77777, flags=0x02, options=ws(2))
    i, r = sides(34000)
    T.ok(i.get("isn") == 1000 and i.get("next") == 2001 and i.get("wscale") == 7 and
         flow(34000).get("state") == "established",
         "a SYN on an established connection changes nothing of it", flow(34000))
    # The handshake's own SYN and SYN-ACK again, late (34002): nothing new.
    from_a(34002, seq=1000, flags=0x02, options=ws(7))
    from_b(34002, seq=5000, ack=1001, flags=0x12, options=ws(9))
    from_a(34002, seq=1001, ack=5001, flags=0x18, payload=b"d" * 1000)
    from_a(34002, seq=1000, flags=0x02, options=ws(7))
    from_b(34002, seq=5000, ack=1001, flags=0x12, options=ws(9))
    i, r = sides(34002)
    T.ok(i.get("isn") == 1000 and i.get("next") == 2001 and
         flow(34002).get("state") == "established",
         "the handshake's SYN and SYN-ACK sent again late change nothing of the flow",
         flow(34002))
    from_b(34000, seq=7000, ack=77778, flags=0x12, options=ws(6))
    i, r = sides(34000)
    T.ok(i.get("isn") == 77777 and r.get("isn") == 7000 and i.get("wscale") == 2 and
         r.get("wscale") == 6 and flow(34000).get("state") == "syn-recv",
         "answered with a SYN-ACK, that SYN began a new connection: the flow starts again "
         "from it (its receiver had let the old one go unseen)", flow(34000))
    T.ok(r.get("rtt_samples") == 1,
         "the flow started again times b's round trip from that SYN, as it was seen", r)

    def established(port):
        from_a(port, seq=1000, flags=0x02, options=ws(7))
        from_b(port, seq=5000, ack=1001, flags=0x12, options=ws(9))
        from_a(port, seq=1001, ack=5001, flags=0x18, payload=b"d" * 1000)

    def unchanged(port):
        i, r = sides(port)
        return i.get("isn") == 1000 and r.get("isn") == 5000 and \
            flow(port).get("state") == "established"
    # A SYN-ACK that ACKs anything but the new SYN's ISN + 1 answers nothing.
    established(34003)
    from_a(34003, seq=80000, flags=0x02)
    from_b(34003, seq=9000, ack=80005, flags=0x12)
    T.ok(unchanged(34003), "a SYN-ACK that does not ACK the new SYN starts nothing",
         flow(34003))
    # b's ACK meanwhile (a challenge ACK: it goes on with the old one).
    established(34004)
    from_a(34004, seq=80000, flags=0x02)
    from_b(34004, seq=5001, ack=2001, flags=0x10)
    from_b(34004, seq=9000, ack=80001, flags=0x12)
    T.ok(unchanged(34004), "once the other side sent on, a SYN-ACK to the SYN it had "
         "starts nothing", flow(34004))
    # TCP Fast Open (RFC 7413 3): the SYN's data ACKed with it, even once
    # the SYN came again without them (Linux's resend), or not at all; a
    # part of them, never.
    established(34005)
    from_a(34005, seq=80000, flags=0x02, payload=b"f" * 100)
    from_a(34005, seq=80000, flags=0x02)
    from_b(34005, seq=9000, ack=80101, flags=0x12)
    i, r = sides(34005)
    T.ok(i.get("isn") == 80000 and i.get("next") == 80101 and r.get("isn") == 9000,
         "a SYN-ACK that ACKs a Fast Open SYN and its data starts the flow again from it, "
         "the SYN sent again without them meanwhile", flow(34005))
    established(34007)
    from_a(34007, seq=80000, flags=0x02, payload=b"f" * 100)
    from_b(34007, seq=9000, ack=80001, flags=0x12)
    i, r = sides(34007)
    T.ok(i.get("isn") == 80000 and r.get("isn") == 9000,
         "a SYN-ACK that takes a Fast Open SYN but not its data starts the flow again",
         flow(34007))
    established(34008)
    from_a(34008, seq=80000, flags=0x02, payload=b"f" * 100)
    from_b(34008, seq=9000, ack=80051, flags=0x12)
    T.ok(unchanged(34008), "a SYN-ACK that ACKs part of a Fast Open SYN's data starts nothing",
         flow(34008))
    # A SYN sent twice: which one the SYN-ACK answers is unknown (Karn).
    established(34006)
    from_a(34006, seq=80000, flags=0x02)
    from_a(34006, seq=80000, flags=0x02)
    from_b(34006, seq=9000, ack=80001, flags=0x12)
    i, r = sides(34006)
    T.ok(i.get("isn") == 80000 and not r.get("rtt_samples"),
         "a SYN sent twice starts the flow again, timing nothing", flow(34006))
    pep_keys_flush()
    xfrm_flush()


def opens_async(t, cfg, ab, ba):
    """The opener with an AEAD that always completes later (les.ko loaded
    with an async zone_aead): the flow still matches the client's capture."""
    pep_keys_flush()
    pep_keys_up(ab, ba)
    lesctl("flows flush")
    tr = Transfer(t, cfg, ab, ba, 7300, nbytes=32 * 1024, tag="pep-async")
    pep_keys_flush()
    ok, bad = tr.numbers_match()
    return (ok and tr.delivered()[0] and tr.delta.get("LesPepOpened", 0) > 10 and
            not tr.delta.get("LesPepErrors") and not tr.delta.get("LesPepAuthFailed"),
            {"mismatch": bad, "delta": tr.delta})


# ---- the opener's queue: bounded, and every header zone accounted for -----------------

def flood_setup(t, spi, port, n, name):
    """PEP keys on m for a tunnel whose endpoints are gone again, and a file
    of n SYNs a sealed for it (one per source port from port on), for the
    raw-flood agent: only m's hook reads them, b drops them at once."""
    cfg = Config("tunnel", 4, 4)
    ab, ba = tunnel_up(cfg, spi)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    seqs = {ab.spi: iter(range(1, 10 ** 6)), ba.spi: iter(range(1, 10 ** 6))}
    path = f"{t.out}/{name}.hex"
    with open(path, "w") as f:
        f.write("\n".join(handshake_pkts(cfg, ab, ba, seqs, port + i)[0].hex() for i in range(n)))
    xfrm_flush()
    return cfg, path


def tx_packets(ns, dev):
    link = json.loads(sh(f"ip -s -j link show dev {dev}", ns=ns).stdout)[0]
    return link["stats64"]["tx"]["packets"]


def backlog_bound(T, t):
    """backlog 1 against a flood: a header zone that finds the queue full is
    counted and not read, its packet is forwarded, and every keyed packet the
    hook saw is either opened or counted as not."""
    cfg, path = flood_setup(t, 0x6400, 22000, 100, "pep-backlog")
    # What reaches the forward hook: an nft counter in front of les.ko's.
    sh("nft add table inet lestest; "
       "nft add chain inet lestest seen '{ type filter hook forward priority 0; }'; "
       "nft add rule inet lestest seen meta l4proto esp counter", ns="m")
    try:
        lesctl("pep set backlog 1")
        T.ok(lesctl_j("pep show")["backlog"] == 1 and "backlog 1 " in lesctl("pep show").stdout,
             "pep show reports the backlog setting", lesctl("pep show").stdout)
        before, tx = counters("m"), tx_packets("m", "m-b")
        res = Bg("a", "raw-flood", cfg.outer("b"), path, 3).result()
        d = delta(before, counters("m"))
        tx = tx_packets("m", "m-b") - tx
        seen = int(re.search(r"counter packets (\d+)",
                             sh("nft list chain inet lestest seen", ns="m").stdout).group(1))
    finally:
        sh("nft delete table inet lestest", ns="m", check=False)
        lesctl("pep set backlog 1024")
    full, opened = d.get("LesPepBacklogFull", 0), d.get("LesPepOpened", 0)
    # The flood sends its packets over and over: all but the first of each
    # are replays to the PEP's window (docs/protocol.md 7).
    replay = d.get("LesPepReplay", 0)
    print(f"# backlog 1: the hook saw {seen} keyed packets; {opened} opened, {replay} replays, "
          f"{full} not read", flush=True)
    T.ok(full > 0, "a flood overflows a backlog of 1, and the overflow is counted",
         {"sent": res["sent"], "delta": d})
    T.ok(seen == res["sent"] and tx >= res["sent"],
         "every packet of the flood is forwarded", {"sent": res["sent"], "hook": seen, "tx": tx})
    T.ok(opened + replay + full == seen and not d.get("LesPepErrors"),
         "every keyed packet is either opened, a replay, or counted as not read",
         {"hook": seen, "opened": opened, "replay": replay, "backlog-full": full})
    pep_keys_flush()


# ---- keys: listed, expiring, deleted -----------------------------------------------

def keys_lifecycle(T, t):
    cfg = Config("tunnel", 4, 4)
    ab, ba = tunnel_up(cfg, 0x6200)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    short = pep_view(Sa(cfg, "a", "b", 0x6280))
    sh(short.add_cmd(f"mark {PEP_MARK:#x} limit time-hard 3"), ns="m")
    unmarked = pep_view(Sa(cfg, "b", "a", 0x6290))
    sh(unmarked.add_cmd("mark 0x1234"), ns="m")
    show = lesctl_j("pep show")
    spis = {k["spi"]: k for k in show["keys"]}
    T.ok(set(spis) == {ab.spi, ba.spi, 0x6280, 0x6290} and show["mark"] == PEP_MARK,
         "lesctl pep show lists the pep-view states", show)
    T.ok(spis.get(0x6290, {}).get("active") is False and spis.get(ab.spi, {}).get("active") is True,
         "a key whose mark is not the PEP mark is shown as unused", spis.get(0x6290))
    T.ok(0 < spis.get(0x6280, {}).get("expires", 0) <= 3,
         "a key's remaining lifetime is shown", spis.get(0x6280))
    text = lesctl("pep show").stdout
    T.ok(f"spi 0x{ab.spi:08x}" in text and "expires" in text and "unused" in text,
         "the human output names SPI, lifetime and unused keys", text)
    T.ok(wait_for(lambda: 0x6280 not in {k["spi"] for k in lesctl_j("pep show")["keys"]}, 8),
         "a key is gone when its lifetime ends", lesctl("pep show").stdout)
    sh(f"ip xfrm state delete src {cfg.outer('b')} dst {cfg.outer('a')} proto esp spi 0x6290 mark 0x1234",
       ns="m")
    T.ok({k["spi"] for k in lesctl_j("pep show")["keys"]} == {ab.spi, ba.spi},
         "a deleted key is gone", lesctl("pep show").stdout)
    pep_keys_flush()
    xfrm_flush()


def lesctl_errors(T, t):
    for args, rc, msg in (("pep set max-flows 5000000", 1, "max-flows is at most"),
                          ("pep set idle-timeout 0", 1, "idle-timeout is 1 to 86400"),
                          ("pep set encap-port 0", 1, "encap-port cannot be 0"),
                          ("pep set backlog 0", 1, "backlog is 1 to 65536"),
                          ("pep set backlog 65537", 1, "backlog is 1 to 65536"),
                          ("pep set hook maybe", 2, "on or off"),
                          ("pep set hop-rate 100000001", 1, "hop-rate is at most"),
                          ("pep set buffer 1073741825", 1, "buffers are at most 1 GiB"),
                          ("pep set hop-dev lo", 0, ""),
                          ("pep set hop-dev none", 0, ""),
                          ("flows bogus", 2, "Usage")):
        p = lesctl(args, check=False)
        T.ok(p.returncode == rc and msg in p.stderr,
             f"lesctl {args}: exit {rc} with a clear message", (p.returncode, p.stderr))
    p = sh(f"unshare --user {LESCTL} pep set hook off", ns="m", check=False)
    T.ok(p.returncode == 1 and "CAP_NET_ADMIN" in p.stderr,
         "changing settings needs CAP_NET_ADMIN", (p.returncode, p.stderr))
    # Held packets are memory no memcg pays for: a user namespace's root
    # (its own network namespace) may not switch acceleration on.
    p = sh(f"unshare --user --map-root-user --net {LESCTL} pep set accel on", ns="m",
           check=False)
    T.ok(p.returncode == 1 and "initial namespace's administrator" in p.stderr,
         "a user namespace's root cannot switch acceleration on", (p.returncode, p.stderr))


# ---- unload with packets in the hook ---------------------------------------------------

def unload_under_traffic(T, t, ko):
    cfg, path = flood_setup(t, 0x6300, 20000, 200, "pep-flood")
    flood = Bg("a", "raw-flood", cfg.outer("b"), path, 60)
    T.ok(wait_for(lambda: counters("m").get("LesPepOpened", 0) > 0, 10),
         "the hook is opening header zones of the flood", counters("m"))
    pep_keys_flush()
    ok = wait_for(lambda: sh("rmmod les", check=False).returncode == 0, 15, 0.5)
    res = flood.stop()
    T.ok(ok and not os.path.exists("/sys/module/les"),
         "les.ko unloads while packets flow through the hook", res)
    sh(f"insmod {ko}")


# ---- the step ----------------------------------------------------------------------------

def part_wanted(T, label, name):
    """Whether "label name" matches LES_PARTS (tests/run.sh: the debug
    kernel leaves some parts to Debian's); a part left out says so in a
    SKIP line."""
    only = os.environ.get("LES_PARTS", "")
    if re.search(only, f"{label} {name}"):
        return True
    T.skip(f"{label} {name}: every check", f"not in LES_PARTS {only}")
    return False


def run_parts(T, label, parts, t):
    """Runs each (name, fn(T, t)) under the prefix "label name: "; a part
    that raises fails as its own set-up and the next one still runs."""
    for name, fn in parts:
        if not part_wanted(T, label, name):
            continue
        T.prefix = f"{label} {name}: "
        t0 = time.monotonic()
        try:
            fn(T, t)
        except Exception as e:  # noqa: BLE001
            T.ok(False, "set-up", e)
        T.prefix = ""
        print(f"# {label} {name}: {time.monotonic() - t0:.0f} s", flush=True)


def run(T, out, ko):
    t = types.SimpleNamespace(out=out)
    lesctl("pep set hook on max-flows 65536 idle-timeout 300")
    for i, cfg in enumerate((Config("tunnel", 4, 4), Config("tunnel", 6, 6, encap=True),
                             Config("transport", 4, esn=True))):
        if not part_wanted(T, "pep", str(cfg)):
            continue
        T.prefix = f"pep {cfg}: "
        t0 = time.monotonic()
        holds = []
        try:
            ab, ba = tunnel_up(cfg, 0x7000 + 0x10 * i)
            holds = encap_hold(cfg)
            pep_keys_flush()
            # Review item 6: the ESN tunnel's PEP keys are added without ESN.
            pep_keys_up(ab, ba, esn=not cfg.esn)
            lesctl("flows flush")
            tr = Transfer(t, cfg, ab, ba, 7200 + i)
            if cfg.esn:
                T.ok(tr.delta.get("LesPepOpened", 0) > 20 and not tr.delta.get("LesPepAuthFailed"),
                     "PEP keys added without flag esn read an ESN tunnel", tr.delta)
            T.run("a TCP transfer through the PEP arrives intact", tr.delivered)
            T.ok(tr.delta.get("LesPepOpened", 0) > 20 and "LesPepAuthFailed" not in tr.delta,
                 "the PEP opened the header zones of the transfer", tr.delta)
            T.run("the flow's seq/ack/next/window/MSS/wscale/packets/bytes are the endpoints' own",
                  tr.numbers_match)
            f = tr.flow or {}
            T.ok(f.get("handshake") and f.get("state") == "closed",
                 "the flow saw the handshake and both FINs", f)
            T.ok(all(f.get(s, {}).get("rtt_samples", 0) > 0 and
                     0 < f[s]["rtt_min_us"] <= f[s]["rtt_us"] < 5_000_000
                     for s in ("initiator", "responder")),
                 "RTT is measured on both sides of the PEP",
                 {s: {k: v for k, v in f.get(s, {}).items() if k.startswith("rtt")}
                  for s in ("initiator", "responder")})
            T.run("forwarded packets are not modified (ESP bytes in = out)", tr.unchanged_on_the_wire)
            T.run("the payload's plaintext appears nowhere on the PEP", tr.no_plaintext)
            if cfg.encap:
                # Before the crafted packets below move b's replay window on.
                T.run("ESP in UDP merged by UDP GRO forwarding (GSO skbs) passes an observing "
                      "PEP unread, as it came (LesPepGsoUnread)",
                      gso_passes, t, cfg, ab, ba)
            T.run("forged header zones are counted and forwarded untouched",
                  forged, t, cfg, ab, 50000)
            if cfg.encap:
                T.run("ESP in UDP that its receiver's UDP refuses (a short length, a wrong "
                      "checksum, 0 over IPv6) is counted as malformed and forwarded unread",
                      udp_refused, t, cfg, ab, 50020)
                T.run("ESP in UDP with bytes after its UDP length, which its receiver's UDP "
                      "cuts, is read as the receiver reads it: opened",
                      udp_trailer, t, cfg, ab, 50030)
            if i == 0:
                T.run("an impossible header-zone length is counted and forwarded",
                      malformed_passes, t, cfg, ab, 50010)
                T.run("a replayed SYN changes nothing on the PEP, a forgery does not move its "
                      "window, and the window is the size its key names (1024, not 32)",
                      replays, t, cfg, 20)
                unscaled = ("b's SYN-ACK without window scaling: the PEP scales neither side's "
                            "window (RFC 7323 2.2), its numbers are the endpoints' own")
                if os.uname().release.endswith("lesdebug"):
                    # Flow-table arithmetic, no memory or locking of its own.
                    T.skip(unscaled, "left to Debian's kernels on the debug kernel")
                else:
                    sh("sysctl -qw net.ipv4.tcp_window_scaling=0", ns="b")
                    try:
                        tr = Transfer(t, cfg, ab, ba, 7252, nbytes=32 * 1024,
                                      tag="pep-unscaled")
                    finally:
                        sh("sysctl -qw net.ipv4.tcp_window_scaling=1", ns="b")
                    T.ok(tr.delivered()[0] and tr.numbers_match()[0], unscaled,
                         {"delivered": tr.delivered(), "numbers": tr.numbers_match()})
                # The same traffic with the hook off, then without keys.
                lesctl("pep set hook off")
                tr = Transfer(t, cfg, ab, ba, 7250, nbytes=32 * 1024, tag="pep-off")
                T.ok(tr.delivered()[0] and "LesPepOpened" not in tr.delta and
                     "LesPepNoKey" not in tr.delta,
                     "with the hook off the PEP does nothing", tr.delta)
                lesctl("pep set hook on")
                pep_keys_flush()
                time.sleep(1)   # deleted keys leave the count after xfrm's GC
                tr = Transfer(t, cfg, ab, ba, 7251, nbytes=32 * 1024, tag="pep-nokey")
                T.ok(tr.delivered()[0] and "LesPepNoKey" not in tr.delta and
                     "LesPepOpened" not in tr.delta and tr.flow is None,
                     "without keys the PEP makes no lookup and counts nothing", tr.delta)
                T.run("without keys LES is forwarded unchanged", tr.unchanged_on_the_wire)
        except Exception as e:  # noqa: BLE001
            T.ok(False, "set-up", e)
        finally:
            for h in holds:
                h.stop()
            T.prefix = ""
            print(f"# pep {cfg}: {time.monotonic() - t0:.0f} s", flush=True)
    pep_keys_flush()
    xfrm_flush()
    run_parts(T, "pep", (("keys", keys_lifecycle), ("flow table", flow_limits),
                         ("tcp state", tcp_state),
                         ("backlog", backlog_bound), ("lesctl", lesctl_errors),
                         ("unload", lambda T, t: unload_under_traffic(T, t, ko))), t)
