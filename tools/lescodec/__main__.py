"""lescodec command line (wire format version 2).  Everything is hex.

Keys come either as LES key blobs (--blob, as given to `ip xfrm state add`:
the zone keys then follow from the packet's SPI, section 2.1) or as
already-derived zone keys (--hz, --pz: AES key || 4-byte salt).

  open-pcap FILE (--blob HEX... | --hz HEX [--pz HEX]) [--esn] [--spi SPI]...
        One JSON object per ESP packet (proto 50 or UDP 4500) in FILE.
        An endpoint blob (or --pz) opens the packet fully ("inner" is the
        restored inner packet); a pep-view blob (or --hz alone) opens the
        header zone only (a PEP's view); a pep-origin blob opens header-only
        packets (section 5 rules with --tunnel / --transport).  With several
        --blob each is tried in turn until one authenticates.
  open HEX  ... the same for one packet given as hex (ESP, or IP with --ip).
  seal --spi SPI --seq N (--blob HEX | --hz HEX --pz HEX) --inner HEX
        [--transport] [--iv-mask R] [--header-only]
        Print the sealed ESP packet as hex, or the IP packet with --src and
        --dst (--udp: in UDP 4500), or write it to a pcap with --pcap
        (--append adds to an existing one).  A pep-origin-out blob (or
        --header-only with --hz) seals a header-only packet.
  blob --role ROLE [--keylen N] [--k2 HEX] [--k1 HEX] [--kp HEX] [--ko HEX]
       [--pep-id N] [--r2i]                            print a key blob
  blob --parse HEX [--spi SPI]          describe a blob (and its zone keys)
  derive --blob HEX [--pep-id N]...     pep-view and PEP-origin blobs of an
                                        endpoint blob (section 6)
  chain --nexthdr N HEX                 what enters the header zone (section 4)

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


def _blobs(a) -> list[blobmod.Blob]:
    out = []
    for raw in a.blob or ():
        try:
            out.append(blobmod.parse_blob(raw))
        except blobmod.BlobError as e:
            raise UsageError(f"--blob: {e}") from None
    return out


# ---- open ---------------------------------------------------------------

def _open_with(esp: bytes, a, hz: bytes, pz: bytes | None,
               header_only: bool) -> dict:
    if header_only:
        inner = zone.open_header_only(esp, hz, a.esn, a.tunnel, a.seq_hi)
        h = zone.open_headers(esp, hz)
        return {"L": len(inner), "auth": "ok", "view": "header-only",
                "nexthdr": h.nexthdr, "epoch": h.epoch,
                "flags": zone.FLAG_HEADER_ONLY, "headers": inner.hex(),
                "inner": inner.hex()}
    if pz is not None:
        o = zone.open_full(esp, hz, pz, a.esn, a.seq_hi)
        h = zone.open_headers(esp, hz)
        return {"L": h.length, "auth": "ok", "view": "full",
                "nexthdr": o.nexthdr, "flags": o.flags, "pad": o.pad,
                "epoch": h.epoch,
                "headers": h.headers.hex(), "inner": o.inner.hex(),
                "dummy": o.dummy}
    h = zone.open_headers(esp, hz)
    return {"L": h.length, "auth": "ok", "view": "headers",
            "nexthdr": h.nexthdr, "flags": h.flags, "epoch": h.epoch,
            "headers": h.headers.hex(), "payload_len": h.payload_len}


def _attempts(esp: bytes, a):
    """(hz key, pz key, header-only?) to try, in order."""
    spi = int.from_bytes(esp[:4], "big")
    if a.hz is not None:
        yield a.hz, a.pz, a.header_only
    for b in _blobs(a):
        yield (b.header_key(spi), b.payload_key(spi),
               b.role in blobmod.PEP_ORIGIN_ROLES)


def _open_one(esp: bytes, a) -> dict:
    rec: dict = {"spi": f"0x{int.from_bytes(esp[:4], 'big'):08x}",
                 "seq": int.from_bytes(esp[4:8], "big"), "len": len(esp)}
    if len(esp) >= 16:
        rec["iv"] = esp[8:16].hex()
    last: Exception | None = None
    for hz, pz, ho in _attempts(esp, a):
        try:
            rec.update(_open_with(esp, a, hz, pz, ho))
            return rec
        except AuthError as e:
            last = e
        except PolicyError as e:
            rec.update(auth="ok", error="policy", reason=str(e))
            if e.verdict is not None:
                rec["verdict"] = e.verdict.name
            return rec
        except FormatError as e:
            last = e
    if isinstance(last, AuthError):
        rec.update(auth="fail", zone=last.zone, reason=str(last))
    elif last is not None:
        rec.update(error="format", reason=str(last))
    else:
        rec.update(error="format", reason="no key to try")
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
    hz, pz, header_only = a.hz, a.pz, a.header_only
    blobs = _blobs(a)
    if blobs:
        if len(blobs) > 1 or hz is not None:
            raise UsageError("seal takes one --blob, or --hz/--pz")
        b = blobs[0]
        if b.role == blobmod.Role.PEP_VIEW or b.role == blobmod.Role.PEP_ORIGIN_IN:
            raise UsageError(f"a {b.role.label} blob cannot seal")
        hz, pz = b.header_key(a.spi), b.payload_key(a.spi)
        header_only = b.role == blobmod.Role.PEP_ORIGIN_OUT
    if hz is None:
        raise UsageError("seal needs --blob, or --hz (and --pz)")
    if header_only:
        esp = zone.seal_header_only(a.spi, a.seq, a.esn, hz, nh, inner,
                                    iv_mask=a.iv_mask)
    else:
        if pz is None:
            raise UsageError("a data packet needs a payload zone key")
        esp = zone.seal(a.spi, a.seq, a.esn, hz, pz, nh, inner,
                        iv_mask=a.iv_mask)
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

def _describe(b: blobmod.Blob, raw: bytes, spi: int | None) -> dict:
    d = {"role": b.role.label, "keylen": b.keylen, "r2i": b.r2i,
         "pep_id": b.pep_id}
    for k in ("k2", "k1", "kp", "ko"):
        v = getattr(b, k)
        d[k] = v.hex() if v is not None else None
    d["is_les"] = blobmod.is_les_blob(raw)
    if spi is not None:
        d["spi"] = f"0x{spi:08x}"
        d["hz_key"] = b.header_key(spi).hex()
        pk = b.payload_key(spi)
        d["pz_key"] = pk.hex() if pk is not None else None
    return d


def cmd_blob(a) -> int:
    if a.parse is not None:
        try:
            b = blobmod.parse_blob(a.parse)
        except blobmod.BlobError as e:
            print(json.dumps({"error": type(e).__name__, "field": e.field,
                              "reason": str(e),
                              "is_les": blobmod.is_les_blob(a.parse)}))
            return 1
        print(json.dumps(_describe(b, a.parse, a.spi)))
        return 0
    if a.role is None:
        raise UsageError("blob needs --role (or --parse)")
    try:
        role = blobmod.Role.parse(a.role)
    except ValueError as e:
        raise UsageError(str(e)) from None
    keylen = a.keylen
    if keylen is None:
        root = a.k2 if a.k2 is not None else a.ko
        if root is None:
            raise UsageError("--keylen needed")
        keylen = len(root) - 4
    try:
        print(blobmod.build_blob(role, keylen, k2=a.k2, k1=a.k1, kp=a.kp,
                                 ko=a.ko, pep_id=a.pep_id or 0,
                                 r2i=a.r2i).hex())
    except blobmod.BlobError as e:
        raise UsageError(str(e)) from None
    return 0


def cmd_derive(a) -> int:
    if not a.blob or len(a.blob) != 1:
        raise UsageError("derive needs one --blob (an endpoint blob)")
    try:
        d = blobmod.derive_blobs(a.blob[0], a.pep_id or ())
    except blobmod.BlobError as e:
        raise UsageError(f"--blob: {e}") from None
    except ValueError as e:
        raise UsageError(str(e)) from None
    out = {"pep-view": d["pep-view"].hex(), "pep-origin": {}}
    for pid, ko in d["pep-origin"].items():
        out["pep-origin"][str(pid)] = {
            "ko": ko.hex(),
            "in": blobmod.pep_origin_blob(a.blob[0], pid, "pep-origin-in").hex(),
            "out": blobmod.pep_origin_blob(a.blob[0], pid, "pep-origin-out").hex()}
    print(json.dumps(out))
    return 0


def cmd_chain(a) -> int:
    p = zone.hz_plan(a.nexthdr, a.data)
    print(json.dumps({"L": p.length, "flags": p.flags, "tcp_off": p.tcp_off,
                      "headers": p.headers.hex(), "csum": p.csum.hex(),
                      "moved": p.moved.hex()}))
    return 0


# ---- argument parsing ---------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m lescodec", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def keys(sp):
        sp.add_argument("--blob", type=_hex, action="append",
                        help="LES key blob (hex); repeatable when opening")
        sp.add_argument("--hz", type=_hex, help="header-zone key||salt (hex)")
        sp.add_argument("--pz", type=_hex, help="payload-zone key||salt (hex)")
        sp.add_argument("--esn", action="store_true",
                        help="extended sequence numbers")

    def opener(sp):
        keys(sp)
        sp.add_argument("--seq-hi", type=_int, default=0,
                        help="high 32 bits of the sequence number (ESN): "
                             "in the payload zone's AAD, and the epoch must "
                             "be its low 16 bits; default 0")
        sp.add_argument("--header-only", action="store_true",
                        help="--hz is a PEP-origin SA's key")
        m = sp.add_mutually_exclusive_group()
        m.add_argument("--tunnel", dest="tunnel", action="store_const",
                       const=True, default=None, help="apply section 5 "
                       "rules to header-only packets as a tunnel-mode SA")
        m.add_argument("--transport", dest="tunnel", action="store_const",
                       const=False, help="... as a transport-mode SA")

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
    sp.add_argument("--iv-mask", type=_int, default=0,
                    help="R: the IV is seq XOR R (default 0)")
    sp.add_argument("--inner", type=_hex, required=True,
                    help="inner IP packet (tunnel) or transport packet")
    sp.add_argument("--nexthdr", type=_int, help="default: 4/41 from the "
                    "inner packet (tunnel), 6 (transport)")
    sp.add_argument("--transport", action="store_true")
    sp.add_argument("--header-only", action="store_true",
                    help="with --hz: seal a header-only packet")
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
    sp.add_argument("--keylen", type=_int, help="default: from --k2/--ko")
    sp.add_argument("--k2", type=_hex, help="K2 root (key||salt)")
    sp.add_argument("--k1", type=_hex, help="K1 root (key||salt)")
    sp.add_argument("--kp", type=_hex, help="KP (32 bytes)")
    sp.add_argument("--ko", type=_hex, help="KO root (key||salt)")
    sp.add_argument("--pep-id", type=_int)
    sp.add_argument("--r2i", action="store_true",
                    help="responder-to-initiator direction")
    sp.add_argument("--parse", type=_hex, metavar="HEX")
    sp.add_argument("--spi", type=_int, help="with --parse: also print the "
                    "zone keys of an SA with this SPI")
    sp.set_defaults(func=cmd_blob)

    sp = sub.add_parser("derive", help="pep-view and PEP-origin blobs "
                        "(section 6)")
    sp.add_argument("--blob", type=_hex, action="append", required=True,
                    help="the endpoint blob (hex)")
    sp.add_argument("--pep-id", type=_int, action="append",
                    help="a PEP's pep_id (repeatable)")
    sp.set_defaults(func=cmd_derive)

    sp = sub.add_parser("chain", help="what enters the header zone "
                        "(section 4)")
    sp.add_argument("--nexthdr", type=_int, required=True)
    sp.add_argument("data", type=_hex)
    sp.set_defaults(func=cmd_chain)
    return p


def main(argv=None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    try:
        for k in ("hz", "pz"):
            if getattr(a, k, None) is not None:
                _keysalt(getattr(a, k), "--" + k)
        if a.cmd in ("open-pcap", "open") and a.hz is None and not a.blob:
            raise UsageError("--blob or --hz is required")
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
