"""lescodec command line.  Keys are hex; a zone key is the AES key followed
by its 4-byte salt (K2||salt2, K1||salt1), as in the key blob.

  open-pcap FILE --k2 HEX [--k1 HEX] [--esn] [--spi SPI]... [--pep-id N]
        One JSON object per ESP packet (proto 50 or UDP 4500) in FILE.
        With --k1 the packet is fully opened (ICV1, ICV2, trailer) and
        "inner" is the inner packet; with only --k2 the header zone is
        opened (a PEP's view).  --pep-id N: packets whose header zone does
        not open under K2 are tried as header-only packets under the
        PEP-origin key derived for their SPI.
  open HEX  ... the same for one packet given as hex (ESP, or IP with --ip).
  seal --spi SPI --seq N --k2 HEX --k1 HEX --inner HEX [--transport]
        Print the sealed ESP packet as hex, or the IP packet with --src and
        --dst (--udp: in UDP 4500), or write it to a pcap with --pcap
        (--append adds to an existing one).
        --header-only (with --po HEX or --pep-id N) seals a header-only
        packet with a PEP-origin key.
  blob --role ROLE --k2 HEX [--k1 HEX] [--pep-id N]   print a key blob
  blob --parse HEX                                     describe a key blob
  derive --k2 HEX --spi SPI --pep-id N                 print K_po||salt_po
  chain --nexthdr N HEX                                header-chain walk

Exit status: 0 ok, 1 an authentication, format or policy failure (for
open-pcap: any packet), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import blob as blobmod
from . import packet, pcap, zone
from .errors import AuthError, FormatError, LesError, PolicyError


class UsageError(Exception):
    pass


def _hex(s: str) -> bytes:
    s = "".join(s.split()).removeprefix("0x")
    try:
        return bytes.fromhex(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not hex: {s[:40]!r}") from None


def _int(s: str) -> int:
    try:
        return int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None


def _keysalt(b: bytes | None, what: str) -> bytes | None:
    if b is not None and len(b) - 4 not in blobmod.KEY_LENS:
        raise UsageError(f"{what} must be 20, 28 or 36 bytes (key || salt), "
                         f"got {len(b)}")
    return b


# ---- open ---------------------------------------------------------------

def _open_one(esp: bytes, a) -> dict:
    rec: dict = {}
    try:
        lay = zone.parse_layout(esp)
    except FormatError as e:
        rec.update(spi=f"0x{int.from_bytes(esp[:4], 'big'):08x}",
                   seq=int.from_bytes(esp[4:8], "big"), len=len(esp),
                   error="format", reason=str(e))
        return rec
    rec.update(spi=f"0x{lay.spi:08x}", seq=lay.seq_lo, iv_seq=lay.iv_seq,
               L=lay.L, len=len(esp))
    strict = not a.lax
    try:
        try:
            if a.k1 is not None:
                nh, inner = zone.open_full(esp, a.k2, a.k1, a.esn, a.seq_hi,
                                           strict)
                h = zone.hdr_chain(nh, inner).length
                rec.update(auth="ok", view="full", nexthdr=nh, flags=0,
                           headers=inner[:h].hex(), inner=inner.hex())
            else:
                nh, flags, hdrs = zone.open_headers(esp, a.k2, a.esn, a.seq_hi,
                                                    strict)
                rec.update(auth="ok", view="headers", nexthdr=nh, flags=flags,
                           headers=hdrs.hex())
        except AuthError as e:
            if a.pep_id is None or (a.k1 is not None and e.zone == "payload"
                                    and lay.rest):
                raise
            po = blobmod.derive_pep_origin(a.k2, lay.spi, a.pep_id)
            nh, hdrs = zone.open_header_only(esp, po, a.esn, a.seq_hi,
                                             a.tunnel, strict)
            rec.update(auth="ok", view="header-only", nexthdr=nh,
                       flags=zone.FLAG_HEADER_ONLY, headers=hdrs.hex(),
                       inner=hdrs.hex())
    except AuthError as e:
        rec.update(auth="fail", zone=e.zone, reason=str(e))
    except PolicyError as e:
        rec.update(auth="ok", error="policy", reason=str(e))
        if e.verdict is not None:
            rec["verdict"] = e.verdict.name
    except FormatError as e:
        rec.update(error="format", reason=str(e))
    return rec


def _failed(rec: dict) -> bool:
    return rec.get("auth") == "fail" or "error" in rec


def cmd_open_pcap(a) -> int:
    bad = 0
    spis = set(a.spi or ())
    with pcap.PcapReader(a.file) as r:
        for n, (ts, ip) in enumerate(r):
            f = packet.find_esp(ip)
            if f is None or (spis and f.spi not in spis):
                continue
            rec = {"n": n, "ts": round(ts, 9), "src": str(f.outer.src),
                   "dst": str(f.outer.dst), "udp": f.udp_encap}
            rec.update(_open_one(f.esp, a))
            bad += _failed(rec)
            print(json.dumps(rec), flush=True)
    return 1 if bad else 0


def cmd_open(a) -> int:
    data = a.packet
    rec = {}
    if a.ip:
        f = packet.find_esp(data)
        if f is None:
            raise UsageError("no ESP packet in that IP packet")
        rec = {"src": str(f.outer.src), "dst": str(f.outer.dst),
               "udp": f.udp_encap}
        data = f.esp
    rec.update(_open_one(data, a))
    print(json.dumps(rec))
    return 1 if _failed(rec) else 0


# ---- seal ---------------------------------------------------------------

def cmd_seal(a) -> int:
    inner = a.inner
    tunnel = not a.transport
    nh = a.nexthdr
    if nh is None:
        if not tunnel:
            nh = 6
        elif inner and inner[0] >> 4 in (4, 6):
            nh = 4 if inner[0] >> 4 == 4 else 41
        else:
            raise UsageError("--nexthdr needed: inner is not IPv4/IPv6")
    if a.header_only:
        po = a.po
        if po is None:
            if a.pep_id is None or a.k2 is None:
                raise UsageError("--header-only needs --po, or --k2 and --pep-id")
            po = blobmod.derive_pep_origin(a.k2, a.spi, a.pep_id)
        esp = zone.seal_header_only(a.spi, a.seq, a.esn, po, nh, inner)
    else:
        if a.k2 is None or a.k1 is None:
            raise UsageError("seal needs --k2 and --k1")
        esp = zone.seal(a.spi, a.seq, a.esn, a.k2, a.k1, nh, inner, tunnel)
    out = esp
    if a.src or a.dst or a.pcap:
        if not (a.src and a.dst):
            raise UsageError("--src and --dst go together (and --pcap needs them)")
        out = packet.wrap_esp(a.src, a.dst, esp, udp_encap=a.udp)
    if a.pcap:
        lt = pcap.LINKTYPES.get(a.linktype.lower()) if not a.linktype.isdigit() \
            else int(a.linktype)
        if lt is None:
            raise UsageError(f"unknown link type {a.linktype}")
        with pcap.PcapWriter(a.pcap, lt, append=a.append) as w:
            w.write(out)
    else:
        print(out.hex())
    return 0


# ---- blob / derive / chain ----------------------------------------------

def cmd_blob(a) -> int:
    if a.parse is not None:
        try:
            b = blobmod.parse_blob(a.parse)
        except blobmod.BlobError as e:
            print(json.dumps({"error": type(e).__name__, "field": e.field,
                              "reason": str(e)}))
            return 1
        print(json.dumps({"role": b.role.label, "keylen": b.keylen,
                          "pep_id": b.pep_id, "k2": b.k2salt.hex(),
                          "k1": b.k1salt.hex() if b.k1salt else None,
                          "is_les": blobmod.is_les_blob(a.parse)}))
        return 0
    if a.role is None or a.k2 is None:
        raise UsageError("blob needs --role and --k2 (or --parse)")
    try:
        role = blobmod.Role.parse(a.role)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        print(blobmod.build_blob(role, a.k2, a.k1, a.pep_id or 0).hex())
    except blobmod.BlobError as e:
        raise UsageError(str(e)) from None
    return 0


def cmd_derive(a) -> int:
    print(blobmod.derive_pep_origin(a.k2, a.spi, a.pep_id).hex())
    return 0


def cmd_chain(a) -> int:
    c = zone.hdr_chain(a.nexthdr, a.data)
    print(json.dumps({"length": c.length, "l4_off": c.l4_off,
                      "l4_proto": c.l4_proto, "fragment": c.fragment,
                      "headers": a.data[:c.length].hex()}))
    return 0


# ---- argument parsing ---------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m lescodec", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def keys(sp, k1=True):
        sp.add_argument("--k2", type=_hex, help="K2||salt2 (hex)")
        if k1:
            sp.add_argument("--k1", type=_hex, help="K1||salt1 (hex)")
        sp.add_argument("--esn", action="store_true",
                        help="extended sequence numbers")

    def opener(sp):
        keys(sp)
        sp.add_argument("--seq-hi", type=_int, default=None,
                        help="high 32 bits of the sequence number for the "
                             "AAD (ESN); default: from the IV")
        sp.add_argument("--pep-id", type=_int, help="also try header-only "
                        "packets under the PEP-origin key of this PEP")
        m = sp.add_mutually_exclusive_group()
        m.add_argument("--tunnel", dest="tunnel", action="store_const",
                       const=True, default=None, help="apply section 4 "
                       "rules to header-only packets as a tunnel-mode SA")
        m.add_argument("--transport", dest="tunnel", action="store_const",
                       const=False, help="... as a transport-mode SA")
        sp.add_argument("--lax", action="store_true", help="do not insist "
                        "on IV == sequence number and minimal padding")

    sp = sub.add_parser("open-pcap", help="open every ESP packet of a pcap")
    sp.add_argument("file")
    opener(sp)
    sp.add_argument("--spi", type=_int, action="append",
                    help="only this SPI (repeatable)")
    sp.set_defaults(func=cmd_open_pcap)

    sp = sub.add_parser("open", help="open one packet given as hex")
    sp.add_argument("packet", type=_hex)
    sp.add_argument("--ip", action="store_true",
                    help="the hex is an IP packet, not ESP")
    opener(sp)
    sp.set_defaults(func=cmd_open)

    sp = sub.add_parser("seal", help="seal a packet")
    keys(sp)
    sp.add_argument("--spi", type=_int, required=True)
    sp.add_argument("--seq", type=_int, required=True,
                    help="64-bit sequence number (ESN) or 32-bit")
    sp.add_argument("--inner", type=_hex, required=True,
                    help="inner IP packet (tunnel) or transport packet")
    sp.add_argument("--nexthdr", type=_int, help="default: 4/41 from the "
                    "inner packet (tunnel), 6 (transport)")
    sp.add_argument("--transport", action="store_true")
    sp.add_argument("--header-only", action="store_true")
    sp.add_argument("--po", type=_hex, help="PEP-origin K||salt (hex)")
    sp.add_argument("--pep-id", type=_int,
                    help="derive the PEP-origin key from --k2 and --spi")
    sp.add_argument("--src", help="outer source address")
    sp.add_argument("--dst", help="outer destination address")
    sp.add_argument("--udp", action="store_true", help="UDP 4500 encapsulation")
    sp.add_argument("--pcap", help="write the IP packet to this pcap")
    sp.add_argument("--append", action="store_true",
                    help="append to an existing pcap")
    sp.add_argument("--linktype", default="raw",
                    help="raw, en10mb, sll, sll2 or a number (new pcaps)")
    sp.set_defaults(func=cmd_seal)

    sp = sub.add_parser("blob", help="build or parse a key blob")
    sp.add_argument("--role", help="endpoint, pep-view, pep-origin-in, "
                    "pep-origin-out")
    sp.add_argument("--k2", type=_hex)
    sp.add_argument("--k1", type=_hex)
    sp.add_argument("--pep-id", type=_int)
    sp.add_argument("--parse", type=_hex, metavar="HEX")
    sp.set_defaults(func=cmd_blob)

    sp = sub.add_parser("derive", help="PEP-origin key (section 5)")
    sp.add_argument("--k2", type=_hex, required=True)
    sp.add_argument("--spi", type=_int, required=True)
    sp.add_argument("--pep-id", type=_int, required=True)
    sp.set_defaults(func=cmd_derive)

    sp = sub.add_parser("chain", help="header-chain walk (section 3)")
    sp.add_argument("--nexthdr", type=_int, required=True)
    sp.add_argument("data", type=_hex)
    sp.set_defaults(func=cmd_chain)
    return p


def main(argv=None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    try:
        for k in ("k2", "k1", "po"):
            if getattr(a, k, None) is not None:
                _keysalt(getattr(a, k), "--" + k)
        if a.cmd in ("open-pcap", "open") and a.k2 is None:
            raise UsageError("--k2 is required")
        return a.func(a)
    except UsageError as e:
        p.error(str(e))   # exits 2
    except LesError as e:           # auth / format / policy: 1
        print(f"lescodec: {e}", file=sys.stderr)
        return 1
    except (ValueError, OverflowError, OSError) as e:   # bad arguments: 2
        print(f"lescodec: {e}", file=sys.stderr)
        return 2

if __name__ == "__main__":
    sys.exit(main())
