#!/usr/bin/env python3
"""Generate tests/host/vectors.json: known-answer vectors produced by the
reference codec (tools/lescodec) for checking the C side byte for byte.

    python3 tests/host/gen_vectors.py          # rewrite vectors.json
    python3 tests/host/gen_vectors.py --check  # exit 1 if it is stale

Every input is fixed (keys, SPI, sequence number, inner packet), so the
output is deterministic.  Besides the final packet ("esp": SPI to the last
ICV) each packet vector lists the intermediate values (zone plaintexts,
nonces, AADs) to make a mismatch easy to locate.
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


def keysalt(keylen: int, start: int) -> bytes:
    return bytes((start + i) & 0xFF for i in range(keylen + 4))


K2 = {n: keysalt(n, 0x00) for n in (16, 24, 32)}
K1 = {n: keysalt(n, 0xA0) for n in (16, 24, 32)}

S4, D4 = "10.1.0.1", "10.2.0.2"
S6, D6 = "fd00:1::1", "fd00:2::2"
SACK = (b"\x01\x01\x08\x0a" + struct.pack("!II", 0x01020304, 0x05060708)
        + b"\x01\x01\x05\x0a" + struct.pack("!II", 1000, 2000))


def data(n: int) -> bytes:
    return bytes((i * 31 + 7) & 0xFF for i in range(n))


def packet_inputs():
    """(name, description, keylen, spi, seq, esn, tunnel, nexthdr, inner)."""
    tcp4 = P.tcp_packet(S4, D4, 40000, 5201, 0x11223344, 0x55667788, 0x18,
                        502, b"", data(13), ident=0x1234)
    tcp6 = P.tcp_packet(S6, D6, 40001, 5201, 1, 2, 0x10, 1024, SACK, data(100))
    seg = P.tcp_segment(S4, D4, 443, 50000, 7, 8, 0x18, 65535,
                        b"\x02\x04\x05\xb4", data(6))
    udp4 = P.udp_packet(S4, D4, 53, 53, b"", ident=7)
    icmp4 = P.ipv4_packet(D4, S4, 1, bytes((3, 4, 0, 0, 0, 0, 0x05, 0xdc))
                          + tcp4[:28], ident=9)
    frag4 = P.ipv4_packet(S4, D4, 6, data(24), frag_off=1480, df=False,
                          ident=0x4321)
    gre6 = P.ipv6_packet(S6, D6, 47, b"\x00\x00\x86\xdd" + data(40))
    badtcp = bytearray(P.tcp_packet(S4, D4, 1, 2, 3, 4, 0x10, 5, b"", data(5)))
    badtcp[32] = 0x40           # TCP data offset 4: chain ends after IPv4
    hop6 = P.ipv6_packet(S6, D6, 0, P.ipv6_ext(60, b"\x05\x02\x00\x00")
                         + P.ipv6_ext(6) + P.tcp_segment(S6, D6, 1, 2, 3, 4,
                                                         0x10, 9, b"", data(3)))
    return [
        ("tunnel-v4-tcp-aes128", "IPv4/TCP with 13 data bytes (1 pad byte)",
         16, 0x00001000, 1, False, True, 4, tcp4),
        ("tunnel-v6-tcp-sack-aes256-esn", "IPv6/TCP with SACK, ESN seq 2^32+2",
         32, 0xC0000001, (1 << 32) + 2, True, True, 41, tcp6),
        ("transport-tcp-aes192", "transport TCP with MSS option, seq 2^32-1",
         24, 0x0000ABCD, 0xFFFFFFFF, False, False, 6, seg),
        ("tunnel-v4-udp-empty", "IPv4/UDP, no data: empty payload",
         16, 0x00001000, 2, False, True, 4, udp4),
        ("tunnel-v4-icmp-error", "ICMP error: 8 ICMP bytes carried, quote is payload",
         16, 0x00001000, 3, False, True, 4, icmp4),
        ("tunnel-v4-later-fragment", "non-first fragment: IPv4 header only",
         16, 0x00001000, 4, False, True, 4, frag4),
        ("tunnel-v6-gre", "IPv6/GRE: IPv6 header only",
         16, 0x00001000, 5, False, True, 41, gre6),
        ("tunnel-v4-tcp-doff4", "malformed TCP (doff 4): IPv4 header only",
         16, 0x00001000, 6, False, True, 4, bytes(badtcp)),
        ("tunnel-v6-hbh-dstopts-tcp-esn", "IPv6 hop-by-hop + dstopts + TCP, ESN",
         16, 0x00001001, (7 << 32) | 0xFFFFFFFF, True, True, 41, hop6),
    ]


def header_only_inputs():
    """(name, description, keylen, spi, pep_id, seq, esn, tunnel, nexthdr, headers)."""
    ack4 = P.tcp_packet(D4, S4, 5201, 40000, 0x55667788, 0x11223351, 0x10,
                        1000, b"", b"", ident=0)
    ack6 = P.tcp_packet(D6, S6, 5201, 40001, 2, 101, 0x50, 2048, SACK, b"")
    seg = P.tcp_segment(D4, S4, 50000, 443, 8, 13, 0x90, 4096)
    return [
        ("po-tunnel-v4-ack", "pure ACK, IPv4, pep_id 1",
         16, 0x00002000, 1, 1, False, True, 4, ack4),
        ("po-tunnel-v6-sack-esn-aes256", "ACK+ECE with SACK, IPv6, ESN",
         32, 0x00002001, 2, (3 << 32) + 1, True, True, 41, ack6),
        ("po-transport-ack-cwr-aes192", "transport ACK+CWR",
         24, 0x00002002, 0xFFFFFFFF, 10, False, False, 6, seg),
    ]


def _zone_details(spi, seq, esn, k2, k1, hz_plain, pz_plain, esp):
    _, p, iv = Z.seq_fields(spi, seq, esn)
    L = len(hz_plain)
    hz_end = 18 + L + 16
    d = {
        "iv": iv.hex(),
        "L": L,
        "hz_plain": hz_plain.hex(),
        "hz_nonce": (k2[-4:] + iv).hex(),
        "hz_aad": (p + iv + L.to_bytes(2, "big")).hex(),
        "icv2": esp[hz_end - 16:hz_end].hex(),
    }
    if pz_plain is not None:
        d.update({
            "pz_plain": pz_plain.hex(),
            "pz_nonce": (k1[-4:] + iv).hex(),
            "pz_aad": (p + iv + L.to_bytes(2, "big") + esp[18:hz_end]).hex(),
            "icv1": esp[-16:].hex(),
        })
    return d


def build() -> dict:
    packets = []
    for name, desc, kl, spi, seq, esn, tunnel, nh, inner in packet_inputs():
        k2, k1 = K2[kl], K1[kl]
        esp = Z.seal(spi, seq, esn, k2, k1, nh, inner, tunnel)
        H = Z.hdr_chain(nh, inner).length
        pad = Z.pad_len(H, len(inner) - H)
        v = {"name": name, "description": desc, "header_only": False,
             "keylen": kl, "k2": k2.hex(), "k1": k1.hex(), "spi": spi,
             "seq": seq, "esn": esn, "tunnel": tunnel, "nexthdr": nh,
             "inner": inner.hex(), "H": H, "pad": pad, "esp_len": len(esp),
             "blob": B.build_blob("endpoint", k2, k1).hex()}
        v.update(_zone_details(spi, seq, esn, k2, k1,
                               bytes((nh, 0)) + inner[:H],
                               inner[H:] + bytes(range(1, pad + 1)) + bytes((pad, nh)),
                               esp))
        v["esp"] = esp.hex()
        packets.append(v)
    for name, desc, kl, spi, pep_id, seq, esn, tunnel, nh, hdrs in header_only_inputs():
        k2 = K2[kl]
        po = B.derive_pep_origin(k2, spi, pep_id)
        esp = Z.seal_header_only(spi, seq, esn, po, nh, hdrs)
        v = {"name": name, "description": desc, "header_only": True,
             "keylen": kl, "k2": k2.hex(), "pep_id": pep_id, "po_key": po.hex(),
             "spi": spi, "seq": seq, "esn": esn, "tunnel": tunnel,
             "nexthdr": nh, "inner": hdrs.hex(), "H": len(hdrs),
             "esp_len": len(esp),
             "blob_out": B.build_blob("pep-origin-out", k2, pep_id=pep_id).hex(),
             "blob_in": B.build_blob("pep-origin-in", k2, pep_id=pep_id).hex()}
        v.update(_zone_details(spi, seq, esn, po, None,
                               bytes((nh, Z.FLAG_HEADER_ONLY)) + hdrs, None, esp))
        v["esp"] = esp.hex()
        packets.append(v)

    blobs = []
    for role, kl, pep in [("endpoint", 16, 0), ("endpoint", 32, 0),
                          ("pep-view", 24, 0), ("pep-origin-in", 16, 0x0A0B0C0D),
                          ("pep-origin-out", 32, 1)]:
        raw = B.build_blob(role, K2[kl], K1[kl] if role == "endpoint" else None, pep)
        blobs.append({"role": role, "keylen": kl, "pep_id": pep,
                      "k2": K2[kl].hex(),
                      "k1": K1[kl].hex() if role == "endpoint" else None,
                      "blob": raw.hex()})

    good = B.build_blob("endpoint", K2[16], K1[16])
    view = B.build_blob("pep-view", K2[16])
    bad = [
        ("short", good[:11], "BlobShortError"),
        ("magic", b"LESX" + good[4:], "BlobMagicError"),
        ("version", good[:4] + b"\x02" + good[5:], "BlobVersionError"),
        ("role0", good[:5] + b"\x00" + good[6:], "BlobRoleError"),
        ("role5", good[:5] + b"\x05" + good[6:], "BlobRoleError"),
        ("keylen", good[:6] + b"\x14" + good[7:], "BlobKeyLenError"),
        ("flags", good[:7] + b"\x01" + good[8:], "BlobFlagsError"),
        ("length-long", good + b"\x00", "BlobLengthError"),
        ("length-endpoint-no-k1", good[:32], "BlobLengthError"),
        ("pep_id-view", view[:11] + b"\x01" + view[12:], "BlobPepIdError"),
    ]
    bad_blobs = [{"name": n, "blob": b.hex(), "error": e} for n, b, e in bad]

    chains = []
    for _, _, _, _, _, _, _, nh, inner in packet_inputs():
        c = Z.hdr_chain(nh, inner)
        chains.append({"nexthdr": nh, "data": inner.hex(), "length": c.length,
                       "l4_off": c.l4_off, "l4_proto": c.l4_proto,
                       "fragment": c.fragment})

    return {
        "comment": "Generated by tests/host/gen_vectors.py from tools/lescodec "
                   "(docs/protocol.md). Keys are key||salt; esp is SPI..last ICV; "
                   "seq is the 64-bit sequence number (only the low 32 bits are "
                   "on the wire).",
        "packets": packets,
        "blobs": blobs,
        "bad_blobs": bad_blobs,
        "chains": chains,
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
