"""The Wireshark dissector (wireshark-plugin/) against the reference codec.

Packets sealed by tools/lescodec (tunnel and transport, both families, ESN,
NAT-T, moved options and urgent pointer, a UDP inner packet, PEP-origin
packets) go into a pcap; tshark with les.so reads it with an endpoint blob,
with the pep-view blob a PEP holds, with the PEP-origin blob, and with no
key, and each field agrees with what lescodec opens.  Corrupted packets
(every bit of one packet flipped in turn, every truncation) show as such:
an expert error, never a crash.

tshark loads plugins from the personal plugin directory only when not run
as root, so it runs as nobody with a HOME of its own (les_sa, the SA
table, in its configuration directory).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from lescodec import blob as B, packet as P, pcap, zone as Z  # noqa: E402
from lescodec.errors import FormatError, LesError  # noqa: E402

PLUGIN = os.path.join(ROOT, "wireshark-plugin")
WS_VERSION = "4.0"
NOBODY = 65534

# Without tshark there is nothing to run; with it, a dissector that does
# not build (libwireshark-dev's headers need glib's, which it does not pull
# in) fails the tests rather than skipping them.
pytestmark = pytest.mark.skipif(
    not shutil.which("tshark"),
    reason="tshark missing (tools/setup-host.sh installs it)")

K2, K1, KP = bytes(range(36)), bytes(range(100, 136)), bytes(range(50, 82))
A4, B4 = "192.0.2.1", "198.51.100.1"
A6, B6 = "2001:db8::1", "2001:db8::2"
# What the dissector flags a packet with (wireshark-plugin/packet-les.c).
LES_EXPERTS = ("les.icv2_bad", "les.icv1_bad", "les.malformed", "les.policy",
               "les.truncated")


def endpoint_blob(r2i=False):
    return B.build_blob("endpoint", 32, k2=K2, k1=K1, kp=KP, r2i=r2i)


def packets():
    """(name, outer IP packet, spi, 64-bit sequence number), in order."""
    ep = B.parse_blob(endpoint_blob())
    po = B.parse_blob(B.pep_origin_blob(endpoint_blob(), 7, "pep-origin-out"))
    out = []

    def add(name, spi, seq, inner, nh, *, src=A4, dst=B4, esn=False, udp=False,
            header_only=False):
        if header_only:
            esp = Z.seal_header_only(spi, seq, esn, po.header_key(spi), nh, inner)
        else:
            esp = Z.seal(spi, seq, esn, ep.header_key(spi), ep.payload_key(spi),
                         nh, inner, iv_mask=0x1122334455667788)
        out.append((name, P.wrap_esp(src, dst, esp, udp_encap=udp), spi, seq))

    data = bytes(range(256)) * 4
    t4 = P.tcp_packet("10.1.0.1", "10.2.0.1", 40000, 80, seq=1000, ack=5000,
                      flags=0x18, options=b"\x01\x01\x08\x0a" + bytes(8),
                      payload=data[:700])
    add("tunnel v4", 0x1000, 1, t4, 4)
    add("tunnel v4 esn", 0x1000, (3 << 32) | 7, t4, 4, esn=True)
    t6 = P.tcp_packet("fd01::1", "fd02::1", 40000, 443, seq=1, ack=2, flags=0x10,
                      payload=data[:300])
    add("tunnel v6-in-v6", 0x1001, 2, t6, 41, src=A6, dst=B6)
    seg = P.tcp_segment(A4, B4, 1234, 5678, seq=9, ack=10, flags=0x38,
                        options=b"\x1e\x04\x00\x00", payload=data[:50], urg=3)
    add("transport, option and urgent moved", 0x1002, 3, seg, 6)
    add("tunnel v4 nat-t", 0x1003, 4, t4, 4, udp=True)
    u4 = P.udp_packet("10.1.0.1", "10.2.0.1", 53, 53, data[:80])
    add("udp inner: no headers", 0x1000, 5, u4, 4)
    ack = P.tcp_packet("10.2.0.1", "10.1.0.1", 80, 40000, seq=5000, ack=1700,
                       flags=0x10, options=b"\x01\x01\x08\x0a" + bytes(8))
    add("pep-origin ack", 0x2007, 6, ack, 4, src=B4, dst=A4, header_only=True)
    return out


@pytest.fixture(scope="module")
def plugin():
    """HOME for tshark, with les.so installed (pytest's own temporary
    directories are private to root)."""
    import pathlib
    import tempfile
    work = pathlib.Path(tempfile.mkdtemp(prefix="les-wireshark-"))
    os.chmod(work, 0o755)
    home = work / "home"
    b = work / "build"
    r = subprocess.run(["make", "-s", "-C", PLUGIN, f"B={b}", "WERROR=1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    d = home / ".local/lib/wireshark/plugins" / WS_VERSION / "epan"
    d.mkdir(parents=True)
    shutil.copy(b / "les.so", d / "les.so")
    (home / ".config/wireshark").mkdir(parents=True)
    for dirpath, dirs, files in os.walk(home):
        for n in [dirpath] + [os.path.join(dirpath, x) for x in dirs + files]:
            os.chmod(n, 0o755)
    # The configuration directory is nobody's: tshark writes there.
    os.chown(home / ".config/wireshark", NOBODY, NOBODY)
    yield home
    shutil.rmtree(work, ignore_errors=True)


def run_tshark(home, pcap_path, rows, *args, timeout=120):
    """tshark's output for @pcap_path with the SA table @rows (src, dst,
    spi, blob hex), run as nobody; it must end well."""
    conf = home / ".config/wireshark/les_sa"
    conf.write_text("".join(f'"{s}","{d}","{spi}","{b}"\n' for s, d, spi, b in rows))
    os.chmod(conf, 0o644)
    os.chmod(pcap_path, 0o644)
    r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                        "--clear-groups", "env", f"HOME={home}", "tshark", "-n",
                        "-r", str(pcap_path), *args],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0 and "Dissector bug" not in r.stderr, r.stderr[-2000:]
    return r.stdout


def tshark(home, pcap_path, rows, *extra):
    """tshark's JSON of @pcap_path, the layers of each frame."""
    out = run_tshark(home, pcap_path, rows, "-T", "json", *extra)
    return [p["_source"]["layers"] for p in json.loads(out)]


def write(home, name, pkts):
    path = home.parent / name
    pcap.write_pcap(str(path), list(pkts))
    return path


def first(layer, key):
    v = layer.get(key)
    return v[0] if isinstance(v, list) else v


def les_fields(layers):
    """The les layer's fields, flattened (field name -> value)."""
    out = {}

    def walk(d):
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v)
            elif k.startswith("les.") and not isinstance(v, dict):
                out.setdefault(k, v)
    walk(layers.get("les", {}))
    return out


def test_endpoint_blob_opens_both_zones(plugin):
    pk = packets()
    path = write(plugin, "ep.pcap", [p[1] for p in pk])
    ep, po = endpoint_blob().hex(), B.pep_origin_blob(endpoint_blob(), 7, "pep-origin-in").hex()
    got = tshark(plugin, path, [("*", "*", "*", ep), ("*", "*", "0x2007", po)])
    assert len(got) == len(pk)
    for (name, ip, spi, seq), layers in zip(pk, got):
        f = P.find_esp(ip)
        lf = les_fields(layers)
        assert int(lf["les.spi"], 16) == spi, name
        assert int(lf["les.seq"]) == f.seq, name
        if name.startswith("pep-origin"):
            o = Z.open_headers(f.esp, B.parse_blob(bytes.fromhex(po)).header_key(spi))
            assert lf["les.flags.header_only"] in ("1", "True"), name
            assert int(lf["les.l"]) == o.length and int(lf["les.nh"]) == o.nexthdr
            assert "tcp" in layers and first(layers["tcp"], "tcp.ack_raw") == "1700", name
            continue
        keys = B.parse_blob(endpoint_blob())
        h = Z.open_headers(f.esp, keys.header_key(spi))
        o = Z.open_full(f.esp, keys.header_key(spi), keys.payload_key(spi),
                        "esn" in name, seq >> 32)
        assert int(lf["les.l"]) == h.length, name
        assert int(lf["les.nh"]) == h.nexthdr, name
        assert int(lf["les.epoch"]) == h.epoch, name
        assert int(lf["les.pz.pad_len"]) == o.pad, name
        assert lf.get("les.esn") in ("1", "True") if "esn" in name else \
            lf.get("les.esn") in ("0", "False"), name
        # The restored inner packet is what Wireshark's own dissectors took:
        # TCP's length, checksum (put back) and options (moved back).
        if "udp inner" in name:
            assert int(lf["les.l"]) == 0 and "udp" in layers, name
        else:
            seg = inner_tcp(o.inner, h.nexthdr)
            tcp = layers["tcp"]
            assert int(first(tcp, "tcp.len")) == len(o.inner) - h.length, name
            assert int(first(tcp, "tcp.checksum"), 16) == int.from_bytes(seg[16:18], "big")
            assert int(first(tcp, "tcp.urgent_pointer")) == int.from_bytes(seg[18:20], "big")
            if "option" in name:
                assert "les.pz.moved" in lf and "tcp.options" in json.dumps(tcp), name
        assert "_ws.expert" not in json.dumps(layers.get("les", {})), name


def test_pep_view_sees_headers_only(plugin):
    pk = [p for p in packets() if not p[0].startswith("pep-origin")]
    path = write(plugin, "view.pcap", [p[1] for p in pk])
    view = B.pep_view_blob(endpoint_blob()).hex()
    got = tshark(plugin, path, [("*", "*", "*", view)])
    keys = B.parse_blob(endpoint_blob())
    for (name, ip, spi, seq), layers in zip(pk, got):
        f = P.find_esp(ip)
        h = Z.open_headers(f.esp, keys.header_key(spi))
        lf = les_fields(layers)
        assert int(lf["les.l"]) == h.length, name
        assert int(lf["les.key_role"]) == 2, name
        assert "les.pz.pad_len" not in lf, name
        if h.length:
            # TCP sees its sequence numbers and the payload's length.
            tcp = layers["tcp"]
            assert int(first(tcp, "tcp.len")) == h.payload_len, name
            assert int(lf["les.tcp_payload_len"]) == h.payload_len, name


def test_no_key_is_esp(plugin):
    pk = packets()
    path = write(plugin, "nokey.pcap", [p[1] for p in pk])
    got = tshark(plugin, path, [])
    for (name, ip, spi, seq), layers in zip(pk, got):
        assert "les" not in layers and "esp" in layers, name
        assert "tcp" not in layers, name
    # As an outsider sees LES: the masked L, the rest encrypted.
    got = tshark(plugin, path, [], "-o", "les.all_esp:TRUE")
    for (name, ip, spi, seq), layers in zip(pk, got):
        lf = les_fields(layers)
        assert "les.masked_l" in lf and "les.l" not in lf and "tcp" not in layers, name


def test_corrupted_packets_are_flagged(plugin):
    """Every bit of one packet flipped in turn, and every truncation: each
    is dissected (no crash), none opens but with its zone flagged."""
    name, ip, spi, _ = packets()[0]
    f = P.find_esp(ip)
    hdr = ip[:len(ip) - len(f.esp)]
    mutants = []
    for i in range(len(f.esp) * 8):
        e = bytearray(f.esp)
        e[i // 8] ^= 1 << (i % 8)
        mutants.append(P.wrap_esp(A4, B4, bytes(e)))
    for n in range(0, len(f.esp), 7):
        mutants.append(P.wrap_esp(A4, B4, f.esp[:n]))
    assert hdr
    path = write(plugin, "mut.pcap", mutants)
    ep = endpoint_blob().hex()
    got = tshark(plugin, path, [("*", "*", "*", ep)])
    assert len(got) == len(mutants)
    flagged = 0
    for m, layers in zip(mutants, got):
        s = json.dumps(layers)
        # A flipped SPI leaves the table, and so does a packet cut before
        # its SPI ends: ESP's view.  Every other mutant is flagged: ICV2,
        # ICV1 or malformed.
        if "les" not in layers:
            assert "esp" in layers or len(m) < 20 + 8, s[:400]
            continue
        assert any(k in s for k in ("les.icv2_bad", "les.icv1_bad", "les.malformed")), s[:400]
        flagged += 1
    assert flagged > len(f.esp) * 8 - 64


def test_forgeries_are_flagged(plugin):
    """What a key holder can forge, and a sender's bug, shows as such:
    a payload zone changed under a genuine header zone fails ICV2; one a
    K2 holder forged, re-sealing the header zone over it, is flagged (ICV1)
    even when a pep-view row comes before the endpoint's (and its headers
    are not handed to TCP); a PEP-origin key's packet that is not header-only is
    refused; a K1 holder's zone that section 4 would not make (a wrong
    payload length, an epoch without ESN) is malformed."""
    ep = B.parse_blob(endpoint_blob())
    spi = 0x1000
    hz, pz = ep.header_key(spi), ep.payload_key(spi)
    t4 = P.tcp_packet("10.1.0.1", "10.2.0.1", 40000, 80, seq=1000, ack=5000,
                      flags=0x18, payload=b"x" * 300)
    good = Z.seal(spi, 1, False, hz, pz, 4, t4)
    flipped = good[:-40] + bytes(b ^ 0x55 for b in good[-40:-16]) + good[-16:]
    # A K2 holder's payload zone: ICV2 sealed again over it (3.1).
    hz_end = Z.MIN_PACKET + Z.peek_len(good, hz)
    rest = flipped[hz_end:]
    forged = good[:16] + AESGCM(hz[:-4]).encrypt(
        hz[-4:] + good[8:16], Z.plan_seal(4, t4).hz_plain, good[:16] + rest) + rest
    po = B.parse_blob(B.pep_origin_blob(endpoint_blob(), 7, "pep-origin-out"))
    plan = Z.plan_seal(4, t4)
    po_data = Z.seal_raw(0x2007, 2, False, po.header_key(0x2007), plan.hz_plain,
                         po.header_key(0x2007), plan.pz_plain)
    bad_len = bytearray(plan.hz_plain)
    bad_len[6 + 20 + 16:6 + 20 + 18] = (299).to_bytes(2, "big")
    k1_bug = Z.seal_raw(spi, 3, False, hz, bytes(bad_len), pz, plan.pz_plain)
    epoch = Z.plan_seal(4, t4, epoch=5)
    k1_epoch = Z.seal_raw(spi, 4, False, hz, epoch.hz_plain, pz, epoch.pz_plain)
    pk = [("good", good, "", "tcp"), ("changed payload zone", flipped, "les.icv2_bad", None),
          ("K2 holder's payload zone", forged, "les.icv1_bad", None),
          ("PEP-origin key, not header-only", po_data, "les.policy", None),
          ("wrong payload length", k1_bug, "les.malformed", None),
          ("epoch without ESN", k1_epoch, "les.malformed", None)]
    path = write(plugin, "forged.pcap", [P.wrap_esp(A4, B4, e) for _, e, _, _ in pk])
    view = B.pep_view_blob(endpoint_blob()).hex()
    po_in = B.pep_origin_blob(endpoint_blob(), 7, "pep-origin-in").hex()
    got = tshark(plugin, path, [("*", "*", "*", view), ("*", "*", "*", endpoint_blob().hex()),
                                ("*", "*", "0x2007", po_in)])
    for (name, _, expert, layer), layers in zip(pk, got):
        s = json.dumps(layers.get("les", {}))
        if expert:
            assert expert in s, (name, s[:600])
        else:
            assert not any(e in s for e in LES_EXPERTS), (name, s[:600])
        assert ("tcp" in layers) == (layer == "tcp"), name


# ---- the VM tests' captures ---------------------------------------------

CAPTURES = os.environ.get("LES_VM_CAPTURES", "")


def inner_tcp(inner: bytes, nexthdr: int) -> bytes | None:
    """The TCP header and payload of an inner packet (None if not TCP)."""
    if nexthdr == 6:
        return inner
    if nexthdr not in (4, 41):
        return None
    ip = P.parse_ip(inner)
    return ip.payload if ip.proto == 6 else None


def check_capture(plugin, keys_path):
    """Every LES packet of one capture, read by tshark with the endpoints'
    blobs and with the PEPs' view of them (a PEP-origin SA's row the same in
    both), against lescodec: the LES fields, and the inner TCP header's as
    Wireshark's TCP dissector read them.  Returns the packets checked, and
    how many of them a PEP sent (header-only, on a PEP-origin SA)."""
    meta = json.load(open(keys_path))
    src_pcap = keys_path[:-len(".keys.json")] + ".pcap"
    path = plugin.parent / os.path.basename(src_pcap)
    shutil.copy(src_pcap, path)
    sas = {sa["spi"]: sa for sa in meta["sas"]}
    keys = {}
    for spi, sa in sas.items():
        b = B.parse_blob(bytes.fromhex(sa["blob"]))
        keys[spi] = (b.header_key(spi),
                     b.payload_key(spi) if b.role == B.Role.ENDPOINT else None)
    with pcap.PcapReader(str(path)) as r:
        frames = [pcap.frame_to_ip(r.linktype, rec.frame) for rec in r.records()]
    checked = origin = 0
    for view in ("endpoint", "pep-view"):
        rows = [(sa["src"], sa["dst"], hex(spi),
                 B.pep_view_blob(bytes.fromhex(sa["blob"])).hex()
                 if view == "pep-view" and keys[spi][1] else sa["blob"])
                for spi, sa in sas.items()]
        got = tshark(plugin, path, rows)
        assert len(got) == len(frames), keys_path
        for n, (ip, layers) in enumerate(zip(frames, got)):
            try:
                f = P.find_esp(ip) if ip else None
            except FormatError:     # not IP (ARP, ...)
                f = None
            if f is None or f.spi not in sas:
                continue
            where = f"{meta['config']} {view} frame {n + 1}"
            hz, pz = keys[f.spi]
            h = Z.open_headers(f.esp, hz)
            lf = les_fields(layers)
            assert int(lf["les.seq"]) == f.seq, where
            assert int(lf["les.masked_l"], 16) == int.from_bytes(f.esp[16:18], "big"), where
            assert int(lf["les.l"]) == h.length, where
            assert int(lf["les.nh"]) == h.nexthdr, where
            assert int(lf["les.flags"], 16) == h.flags, where
            assert int(lf["les.epoch"]) == h.epoch, where
            if pz is None:
                # A PEP's own packet: lescodec takes it as the endpoint's
                # pep-origin-in SA would (section 5), and so does the
                # dissector, whose TCP reads the ACK the PEP sent.
                inner = Z.open_header_only(f.esp, hz, meta["esn"], meta.get("tunnel", True),
                                           meta["seq_hi"])
                assert lf["les.flags.header_only"] in ("1", "True"), where
                assert not any(e in json.dumps(layers.get("les", {})) for e in LES_EXPERTS), where
                tcp = inner_tcp(inner, h.nexthdr)
                tlen, csum = 0, int.from_bytes(tcp[16:18], "big")
                assert int(first(layers["tcp"], "tcp.window_size_value")) == \
                    int.from_bytes(tcp[14:16], "big"), where
                origin += 1
            elif view == "endpoint":
                o = Z.open_full(f.esp, hz, pz, meta["esn"], meta["seq_hi"])
                assert int(lf["les.pz.pad_len"]) == o.pad, where
                assert (lf["les.esn"] in ("1", "True")) == meta["esn"], where
                tcp = inner_tcp(o.inner, h.nexthdr)
                tlen = len(tcp) - (tcp[12] >> 4) * 4 if tcp else None
                csum = int.from_bytes(tcp[16:18], "big") if tcp else None
            else:
                assert "les.pz.pad_len" not in lf, where
                t = {4: 20, 41: 40, 6: 0}.get(h.nexthdr)
                tcp = h.headers[t:] if h.length and t is not None else None
                tlen, csum = h.payload_len, None
            if tcp:
                tl = layers["tcp"]
                assert int(first(tl, "tcp.seq_raw")) == int.from_bytes(tcp[4:8], "big"), where
                assert int(first(tl, "tcp.ack_raw")) == int.from_bytes(tcp[8:12], "big"), where
                assert int(first(tl, "tcp.len")) == tlen, where
                if csum is not None:
                    assert int(first(tl, "tcp.checksum"), 16) == csum, where
            checked += 1
    return checked, origin // 2


@pytest.mark.skipif(not CAPTURES, reason="LES_VM_CAPTURES unset: the VM tests' "
                    "captures are read after the VM runs (tests/run.sh)")
def test_vm_captures(plugin):
    import glob
    files = sorted(k for k in glob.glob(os.path.join(CAPTURES, "*", "*.keys.json"))
                   if os.path.exists(k[:-len(".keys.json")] + ".pcap"))
    assert files, f"no captures with keys under {CAPTURES}"
    checked = {os.path.relpath(k, CAPTURES): check_capture(plugin, k) for k in files}
    print(checked)
    assert all(n for n, _ in checked.values()), checked
    # The PEP engine's captures (tests/vm/accel_tests.py) hold its early
    # ACKs, sealed by the kernel on its PEP-origin SA.
    engine = {k: v for k, v in checked.items() if os.path.basename(k).startswith("accel-")}
    assert not engine or all(origin for _, origin in engine.values()), checked


def codec_opens(esp: bytes, meta) -> bool:
    """Whether an endpoint holding the campaign's keys takes @esp, as
    lescodec decides (replays aside: a replay is a matter of state)."""
    for sa in meta["sas"]:
        b = B.parse_blob(bytes.fromhex(sa["blob"]))
        if int.from_bytes(esp[:4], "big") != sa["spi"]:
            continue
        try:
            if b.role == B.Role.ENDPOINT:
                Z.open_full(esp, b.header_key(sa["spi"]), b.payload_key(sa["spi"]),
                            meta["esn"], meta["seq_hi"])
            else:
                Z.open_header_only(esp, b.header_key(sa["spi"]), meta["esn"],
                                   meta["tunnel"], meta["seq_hi"])
            return True
        except LesError:
            return False
    return False


@pytest.mark.skipif(not CAPTURES, reason="LES_VM_CAPTURES unset: the mutation "
                    "campaigns' packets are read after the VM runs (tests/run.sh)")
def test_vm_mutants(plugin):
    """tshark over every packet of the mutation campaigns (mutants, the
    packets themselves and their replays) with the campaign's keys: no
    crash; every packet lescodec takes opens cleanly, every other one is
    flagged (ICV2, ICV1, malformed, refused).  (What only an endpoint's
    state or K1 could refuse, an epoch against its SeqHi or a restored
    header zone a sender would not make, no mutant without K1 can reach:
    ICV1 binds both.)"""
    import glob
    files = sorted(glob.glob(os.path.join(CAPTURES, "*", "mutants-*.keys.json")))
    assert files, f"no mutation campaign under {CAPTURES}"
    seen = {}
    for k in files:
        meta = json.load(open(k))
        hexes = open(k[:-len(".keys.json")] + ".hex").read().split()
        path = plugin.parent / "mutants.pcap"
        pcap.write_pcap(str(path), [bytes.fromhex(h) for h in hexes])
        rows = [("*", "*", hex(sa["spi"]), sa["blob"]) for sa in meta["sas"]]
        lines = run_tshark(plugin, path, rows, "-T", "fields", "-E", "separator=|",
                           "-e", "les.spi", "-e", "les.l", "-e", "_ws.malformed",
                           *[x for e in LES_EXPERTS for x in ("-e", e)],
                           timeout=600).splitlines()
        assert len(lines) == len(hexes), k
        n = {"packets": len(hexes), "taken": 0, "flagged": 0, "lenient": 0}
        for h, line in zip(hexes, lines):
            spi, ln, malformed, *experts = line.split("|")
            expert = "".join(experts)
            esp = P.find_esp(bytes.fromhex(h))
            taken = esp is not None and codec_opens(esp.esp, meta)
            clean = bool(spi and ln and not expert)
            # Wireshark's own mark, from an IP or TCP dissector, only on
            # what LES flagged first (its malformed group sets it too), or
            # from ESP's on what is too short to be LES.
            assert not malformed or expert or not spi, (k, h[:120], line)
            if taken:
                assert clean, ("lescodec takes it, the dissector does not", k, h[:200], line)
                n["taken"] += 1
            elif clean:
                n["lenient"] += 1
            else:
                n["flagged"] += 1
        seen[os.path.relpath(k, CAPTURES)] = n
        assert n["taken"] and not n["lenient"], (k, n)
    print(seen)
