#!/usr/bin/env python3
"""Generate tests/host/vectors.json: known-answer vectors of wire format
version 3 produced by the reference codec (tools/lescodec) for checking the
C side byte for byte.

    python3 tests/host/gen_vectors.py          # rewrite vectors.json
    python3 tests/host/gen_vectors.py --check  # exit 1 if it is stale

Every input is fixed (blobs, SPI, sequence number, R, inner packet), so the
output is deterministic.  Besides the final packet ("esp": SPI to the last
ICV) each packet vector lists the intermediate values (zone keys, IV,
nonces, AADs, zone plaintexts, the keystream block that hides L, and the
payload zone's parts: checksum field, payload, moved bytes, padding) to make
a mismatch easy to locate.
"""

from __future__ import annotations

import json
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))

from lescodec import blob as B          # noqa: E402
from lescodec import packet as P        # noqa: E402
from lescodec import zone as Z          # noqa: E402

OUT = HERE / "vectors.json"
R0, R1 = 0, 0x0123456789ABCDEF


def fill(n: int, start: int) -> bytes:
    return bytes((start + i) & 0xFF for i in range(n))


def endpoint_blob(keylen: int, r2i: bool = False) -> bytes:
    return B.build_blob("endpoint", keylen, k2=fill(keylen + 4, 0x00),
                        k1=fill(keylen + 4, 0xA0), kp=fill(32, 0x40), r2i=r2i)


S4, D4 = "10.1.0.1", "10.2.0.2"
S6, D6 = "fd00:1::1", "fd00:2::2"
SACK = (b"\x01\x01\x08\x0a" + struct.pack("!II", 0x01020304, 0x05060708)
        + b"\x01\x01\x05\x0a" + struct.pack("!II", 1000, 2000))
SYN_OPTS = (b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + struct.pack("!II", 7, 0)
            + b"\x01\x03\x03\x07")
MD5_OPT = b"\x13\x12" + fill(16, 0x61) + b"\x01\x01"   # kind 19: moved


def data(n: int) -> bytes:
    return bytes((i * 31 + 7) & 0xFF for i in range(n))


def packet_inputs():
    """(name, description, keylen, r2i, spi, seq, esn, iv_mask, nexthdr,
    inner, tfc[, extra_pad])."""
    tcp4 = P.tcp_packet(S4, D4, 40000, 5201, 0x11223344, 0x55667788, 0x18,
                        502, b"", data(13), ident=0x1234)
    tcp6 = P.tcp_packet(S6, D6, 40001, 5201, 1, 2, 0x10, 1024, SACK, data(100))
    seg = P.tcp_segment(S4, D4, 443, 50000, 7, 8, 0x18, 65535,
                        b"\x02\x04\x05\xb4", data(6))
    syn = P.tcp_packet(S4, D4, 40002, 22, 0xFFFFFFF0, 0, 0x02, 64240,
                       SYN_OPTS, b"")
    urg = P.ipv4_packet(S4, D4, 6, P.tcp_segment(S4, D4, 40003, 23, 9, 10,
                                                 0x38, 4000, b"", data(5),
                                                 urg=3))
    md5 = P.tcp_packet(S6, D6, 179, 40004, 5, 6, 0x18, 16384, MD5_OPT, data(19))
    md5urg = P.ipv4_packet(S4, D4, 6, P.tcp_segment(
        S4, D4, 179, 40005, 11, 12, 0x38, 8192, MD5_OPT, data(2), urg=0xBEEF))
    udp4 = P.udp_packet(S4, D4, 53, 53, b"", ident=7)
    icmp4 = P.ipv4_packet(D4, S4, 1, bytes((3, 4, 0, 0, 0, 0, 0x05, 0xdc))
                          + tcp4[:28], ident=9)
    frag4 = P.ipv4_packet(S4, D4, 6, data(24), frag_off=1480, df=False,
                          ident=0x4321)
    opt4 = P.ipv4_packet(S4, D4, 6, P.tcp_segment(S4, D4, 1, 2, 3, 4, 0x10,
                                                  9, b"", data(3)),
                         options=b"\x94\x04\x00\x00")
    hop6 = P.ipv6_packet(S6, D6, 0, P.ipv6_ext(6) + P.tcp_segment(
        S6, D6, 1, 2, 3, 4, 0x10, 9, b"", data(3)))
    return [
        ("tunnel-v4-tcp-aes128", "IPv4/TCP with 13 data bytes",
         16, False, 0x00001000, 1, False, R0, 4, tcp4, b""),
        ("tunnel-v4-tcp-aes128-r", "the same with R = 0x0123456789abcdef",
         16, False, 0x00001000, 1, False, R1, 4, tcp4, b""),
        ("tunnel-v6-tcp-sack-aes256-esn-r2i", "IPv6/TCP with SACK, ESN seq "
         "2^32+2, R2I blob", 32, True, 0xC0000001, (1 << 32) + 2, True, R1,
         41, tcp6, b""),
        ("transport-tcp-aes192", "transport TCP with MSS option, seq 2^32-1",
         24, False, 0x0000ABCD, 0xFFFFFFFF, False, R1, 6, seg, b""),
        ("tunnel-v4-syn-options", "SYN with MSS, SACK-permitted, timestamps, "
         "window scale: all kept", 16, False, 0x00001000, 7, False, R0, 4,
         syn, b""),
        ("tunnel-v4-urgent", "urgent pointer 3: URGENT_MOVED",
         16, False, 0x00001000, 8, False, R1, 4, urg, b""),
        ("tunnel-v6-md5-option", "TCP MD5 option (kind 19): OPTIONS_MOVED",
         16, True, 0x00001002, 9, False, R1, 41, md5, b""),
        ("tunnel-v4-md5-urgent", "MD5 option and urgent pointer: both moved, "
         "options first", 16, False, 0x00001000, 12, False, R1, 4, md5urg, b""),
        ("tunnel-v4-tcp-padded", "IPv4/TCP with 5 padding bytes (a sender "
         "adds none; a receiver accepts 0 to 255)", 16, False, 0x00001000, 13,
         False, R1, 4, tcp4, b"", 5),
        ("tunnel-v4-tcp-tfc", "IPv4/TCP followed by 7 bytes of TFC padding",
         16, False, 0x00001000, 10, False, R1, 4, tcp4, b"\0" * 7),
        ("tunnel-v4-udp-empty", "IPv4/UDP, no data: L = 0",
         16, False, 0x00001000, 2, False, R1, 4, udp4, b""),
        ("tunnel-v4-icmp-error", "ICMP error: L = 0",
         16, False, 0x00001000, 3, False, R0, 4, icmp4, b""),
        ("tunnel-v4-later-fragment", "non-first fragment: L = 0",
         16, False, 0x00001000, 4, False, R0, 4, frag4, b""),
        ("tunnel-v4-ip-options", "IPv4 options: L = 0",
         16, False, 0x00001000, 5, False, R0, 4, opt4, b""),
        ("tunnel-v6-hbh-tcp-esn", "IPv6 hop-by-hop + TCP: L = 0, ESN",
         16, False, 0x00001001, (7 << 32) | 0xFFFFFFFF, True, R1, 41, hop6, b""),
        ("tunnel-v4-tcp-esn-epoch", "IPv4/TCP, ESN SeqHi 0x12345: epoch "
         "0x2345 (SeqHi's low 16 bits)", 16, False, 0x00001003,
         (0x12345 << 32) | 0x10, True, R1, 4, tcp4, b""),
        ("dummy", "dummy packet: next header 59, 8 arbitrary bytes",
         16, False, 0x00001000, 11, False, R1, 59, data(8), b""),
    ]


def header_only_inputs():
    """(name, description, keylen, r2i, spi, pep_id, seq, esn, iv_mask,
    tunnel, nexthdr, headers)."""
    ack4 = P.tcp_packet(D4, S4, 5201, 40000, 0x55667788, 0x11223351, 0x10,
                        1000, b"", b"", ident=0)
    ack6 = P.tcp_packet(D6, S6, 5201, 40001, 2, 101, 0x50, 2048, SACK, b"")
    seg = P.tcp_segment(D4, S4, 50000, 443, 8, 13, 0x90, 4096)
    return [
        ("po-tunnel-v4-ack", "pure ACK, IPv4, pep_id 1",
         16, False, 0x00002000, 1, 1, False, R0, True, 4, ack4),
        ("po-tunnel-v6-sack-esn-aes256-r2i", "ACK+ECE with SACK, IPv6, ESN",
         32, True, 0x00002001, 2, (3 << 32) + 1, True, R1, True, 41, ack6),
        ("po-transport-ack-cwr-aes192", "transport ACK+CWR",
         24, False, 0x00002002, 0xFFFFFFFF, 10, False, R1, False, 6, seg),
    ]


def _common(spi, seq, esn, iv_mask, hz_key, hz_plain, esp):
    sf = Z.seq_fields(spi, seq, esn, iv_mask)
    L = len(hz_plain) - Z.HZ_DESC_LEN
    hz_end = Z.MIN_PACKET + L
    blk = Z.peek_block(hz_key, sf.iv)
    epoch = Z.epoch_of(seq)
    assert hz_plain[4:6] == epoch.to_bytes(2, "big")
    return {
        "iv": sf.iv.hex(),
        "L": L,
        "epoch": epoch,
        "L_wire": esp[16:18].hex(),
        "peek_counter_block": (hz_key[-4:] + sf.iv + b"\0\0\0\x02").hex(),
        "peek_keystream": blk.hex(),
        "hz_plain": hz_plain.hex(),
        "hz_nonce": Z.nonce(hz_key, sf.iv).hex(),
        "hz_aad": Z.hz_aad(esp, esp[hz_end:]).hex(),
        "hz_ct": esp[16:hz_end - 16].hex(),
        "icv2": esp[hz_end - 16:hz_end].hex(),
    }, sf, hz_end


def build() -> dict:
    packets = []
    for (name, desc, kl, r2i, spi, seq, esn, r, nh, inner, tfc,
         *extra) in packet_inputs():
        pad = extra[0] if extra else 0
        blob = endpoint_blob(kl, r2i)
        b = B.parse_blob(blob)
        hz_key, pz_key = b.header_key(spi), b.payload_key(spi)
        s = Z.plan_seal(nh, inner, tfc=tfc, extra_pad=pad,
                        epoch=Z.epoch_of(seq))
        esp = Z.seal(spi, seq, esn, hz_key, pz_key, nh, inner, iv_mask=r,
                     tfc=tfc, extra_pad=pad)
        assert len(esp) == Z.OVERHEAD + len(inner + tfc) + len(s.plan.moved) + pad
        v = {"name": name, "description": desc, "header_only": False,
             "blob": blob.hex(), "keylen": kl, "r2i": r2i, "spi": spi,
             "seq": seq, "esn": esn, "iv_mask": f"{r:016x}", "nexthdr": nh,
             "inner": inner.hex(), "tfc": tfc.hex(),
             "hz_key": hz_key.hex(), "pz_key": pz_key.hex(),
             "flags": s.plan.flags, "headers": s.plan.headers.hex(),
             "csum": s.plan.csum.hex(),
             "payload": (inner + tfc)[s.plan.length:].hex(),
             "moved": s.plan.moved.hex(), "pad": s.pad,
             "esp_len": len(esp),
             "esp_minus_inner": len(esp) - len(inner + tfc),
             "esp_minus_rfc4303": len(esp) - Z.rfc4303_esp_len(len(inner) + len(tfc))}
        d, sf, hz_end = _common(spi, seq, esn, r, hz_key, s.hz_plain, esp)
        v.update(d)
        v.update({
            "pz_plain": s.pz_plain.hex(),
            "pz_nonce": Z.nonce(pz_key, sf.iv).hex(),
            "pz_aad": Z.pz_aad(sf.p, sf.iv, s.hz_plain).hex(),
            "icv1": esp[-16:].hex(),
        })
        v["esp"] = esp.hex()
        packets.append(v)
    for (name, desc, kl, r2i, spi, pep_id, seq, esn, r, tunnel, nh,
         hdrs) in header_only_inputs():
        ep = endpoint_blob(kl, r2i)
        out = B.pep_origin_blob(ep, pep_id, "pep-origin-out")
        inn = B.pep_origin_blob(ep, pep_id, "pep-origin-in")
        po = B.parse_blob(out)
        hz_key = po.header_key(spi)
        esp = Z.seal_header_only(spi, seq, esn, hz_key, nh, hdrs, iv_mask=r)
        v = {"name": name, "description": desc, "header_only": True,
             "endpoint_blob": ep.hex(), "keylen": kl, "r2i": r2i,
             "pep_id": pep_id, "ko": po.ko.hex(), "blob_out": out.hex(),
             "blob_in": inn.hex(), "spi": spi, "seq": seq, "esn": esn,
             "iv_mask": f"{r:016x}", "tunnel": tunnel, "nexthdr": nh,
             "inner": hdrs.hex(), "hz_key": hz_key.hex(),
             "flags": Z.FLAG_HEADER_ONLY, "esp_len": len(esp)}
        d, _, _ = _common(spi, seq, esn, r, hz_key,
                          Z.hz_plaintext(nh, Z.FLAG_HEADER_ONLY, hdrs,
                                         Z.epoch_of(seq)), esp)
        v.update(d)
        v["esp"] = esp.hex()
        packets.append(v)

    blobs = []
    for kl, r2i in ((16, False), (24, True), (32, False)):
        ep = endpoint_blob(kl, r2i)
        b = B.parse_blob(ep)
        der = B.derive_blobs(ep, [1, 0xFFFFFFFF])
        spi = 0x0A0B0C0D
        blobs.append({
            "keylen": kl, "r2i": r2i,
            "k2": b.k2.hex(), "k1": b.k1.hex(), "kp": b.kp.hex(),
            "endpoint": ep.hex(),
            "pep_view": der["pep-view"].hex(),
            "spi": spi,
            "zone_info_h": B.zone_info(B.ZONE_H, spi, r2i).hex(),
            "zone_info_p": B.zone_info(B.ZONE_P, spi, r2i).hex(),
            "hz_key": b.header_key(spi).hex(),
            "pz_key": b.payload_key(spi).hex(),
            "pep_origin": [{
                "pep_id": pid,
                "info": B.pep_origin_info(pid, r2i).hex(),
                "ko": ko.hex(),
                "blob_in": B.pep_origin_blob(ep, pid, "pep-origin-in").hex(),
                "blob_out": B.pep_origin_blob(ep, pid, "pep-origin-out").hex(),
                "hz_key": B.zone_key(ko, B.ZONE_H, spi, r2i).hex(),
            } for pid, ko in der["pep-origin"].items()],
        })

    good = endpoint_blob(16)
    view = B.build_blob("pep-view", 16, k2=fill(20, 0))
    po = B.build_blob("pep-origin-in", 16, ko=fill(20, 0), pep_id=5)
    same = good[:12 + 20] + good[12:12 + 16] + b"SALT" + good[12 + 40:]
    v1 = (b"LESK\x01\x01\x10\x00\x00\x00\x00\x00" + fill(20, 0) + fill(20, 0xA0))
    bad = [
        ("short", good[:11], "BlobShortError"),
        ("magic", b"LESX" + good[4:], "BlobMagicError"),
        ("version1", v1, "BlobVersionError"),
        ("version2", good[:4] + b"\x02" + good[5:], "BlobVersionError"),
        ("role0", good[:5] + b"\x00" + good[6:], "BlobRoleError"),
        ("role5", good[:5] + b"\x05" + good[6:], "BlobRoleError"),
        ("keylen", good[:6] + b"\x14" + good[7:], "BlobKeyLenError"),
        ("flags", good[:7] + b"\x02" + good[8:], "BlobFlagsError"),
        ("flags80", good[:7] + b"\x81" + good[8:], "BlobFlagsError"),
        ("pep_id-endpoint", good[:11] + b"\x01" + good[12:], "BlobPepIdError"),
        ("pep_id-view", view[:11] + b"\x01" + view[12:], "BlobPepIdError"),
        ("pep_id-po-zero", po[:8] + bytes(4) + po[12:], "BlobPepIdError"),
        ("length-long", good + b"\x00", "BlobLengthError"),
        ("length-endpoint-no-kp", good[:52], "BlobLengthError"),
        ("length-view-short", view[:-1], "BlobLengthError"),
        ("same-keys", same, "BlobSameKeysError"),
    ]
    bad_blobs = [{"name": n, "blob": b.hex(), "error": e} for n, b, e in bad]

    plans = []
    for (_, _, _, _, _, _, _, _, nh, inner, tfc, *_) in packet_inputs():
        p = Z.hz_plan(nh, inner + tfc)
        plans.append({"nexthdr": nh, "data": (inner + tfc).hex(),
                      "L": p.length, "flags": p.flags,
                      "headers": p.headers.hex(), "csum": p.csum.hex(),
                      "moved": p.moved.hex(), "tcp_off": p.tcp_off})

    return {
        "comment": "Generated by tests/host/gen_vectors.py from tools/lescodec "
                   "(docs/protocol.md, wire format version 3). Roots and zone "
                   "keys are key||salt; esp is SPI..last ICV; seq is the 64-bit "
                   "sequence number (only the low 32 bits are on the wire); "
                   "iv_mask is R (IV = seq XOR R); epoch is the header "
                   "zone's (the low 16 bits of seq >> 32, section 3).",
        "hkdf": {"zone_salt": B.ZONE_SALT.hex(),
                 "pep_origin_salt": B.PEP_ORIGIN_SALT.hex()},
        "packets": packets,
        "blobs": blobs,
        "bad_blobs": bad_blobs,
        "hz_plans": plans,
    }


def main() -> int:
    text = json.dumps(build(), indent=1) + "\n"
    if "--check" in sys.argv[1:]:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
