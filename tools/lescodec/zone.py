"""LES packets: the header-chain walk (protocol.md section 3), sealing and
opening of the two zones (section 2), header-only PEP-origin packets and
their acceptance rules (section 4).

`esp` bytes are always the ESP packet from the SPI to its last byte (ICV1,
or ICV2 for a header-only packet), i.e. what follows the outer IP header
(or the UDP header when UDP-encapsulated).

Layout:

    0     4     8          16    18              18+L       +16
    | SPI | Seq | IV (8)   | L   | header zone   | ICV2      |
    | payload zone: payload | pad | padlen | nexthdr | ICV1 (16) |

Header zone plaintext: nexthdr (1) | flags (1) | headers (H), L = 2 + H.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .blob import KEY_LENS, SALT_LEN
from .errors import AuthError, FormatError, PolicyError

ESP_HDR_LEN = 8          # SPI + Seq
IV_LEN = 8
L_LEN = 2
HZ_OFF = ESP_HDR_LEN + IV_LEN + L_LEN    # 18: first header-zone byte
ICV_LEN = 16
HDRS_MAX = 512           # largest header chain in a header zone
L_MIN, L_MAX = 2, 2 + HDRS_MAX
ALIGN = 4
OVERHEAD_VS_ESP = L_LEN + 2 + ICV_LEN    # 20

FLAG_HEADER_ONLY = 0x01
FLAGS_KNOWN = FLAG_HEADER_ONLY

# IP protocol numbers used by the walk.
HOPOPTS, ICMP, IPIP, TCP, UDP, IPV6 = 0, 1, 4, 6, 17, 41
ROUTING, FRAGMENT, GRE, ESP, AH, ICMPV6, DSTOPTS, UDPLITE = \
    43, 44, 47, 50, 51, 58, 60, 136

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH = 0x01, 0x02, 0x04, 0x08
TCP_ACK, TCP_URG, TCP_ECE, TCP_CWR = 0x10, 0x20, 0x40, 0x80
PEP_ORIGIN_TCP_OK = TCP_ACK | TCP_ECE | TCP_CWR


# ---- section 3: the header-chain walk --------------------------------------

class Chain(NamedTuple):
    length: int      # header bytes the header zone carries (H)
    l4_off: int      # offset of the transport header, -1 if none
    l4_proto: int    # its protocol, 0 if none
    fragment: bool   # stopped at an IPv4 / IPv6-Fragment non-first fragment


class _Hdr(NamedTuple):
    proto: int
    off: int
    length: int
    frag_off: int    # fragment offset (IPv4, Fragment header) else 0
    more_frags: bool


def _walk(nexthdr: int, data: bytes, limit: int = HDRS_MAX):
    """Walk the chain; return (list of _Hdr taken, stopped-at protocol).

    A header is taken only if it is complete, well formed and keeps the
    chain within both the data and `limit` bytes."""
    data = bytes(data)
    total = len(data)
    off = 0
    taken: list[_Hdr] = []
    nh = nexthdr

    def fits(n: int) -> bool:
        return off + n <= total and off + n <= limit

    while True:
        if nh == IPIP:
            if not fits(20):
                break
            ver, ihl = data[off] >> 4, data[off] & 0x0F
            if ver != 4 or ihl < 5 or not fits(ihl * 4):
                break
            fo = int.from_bytes(data[off + 6:off + 8], "big")
            h = _Hdr(nh, off, ihl * 4, fo & 0x1FFF, bool(fo & 0x2000))
            taken.append(h)
            off += h.length
            nh = data[h.off + 9]
            if h.frag_off:
                return taken, None
        elif nh == IPV6:
            if not fits(40) or data[off] >> 4 != 6:
                break
            taken.append(_Hdr(nh, off, 40, 0, False))
            nh = data[off + 6]
            off += 40
        elif nh in (HOPOPTS, ROUTING, DSTOPTS, AH):
            if not fits(2):
                break
            hl = (data[off + 1] + 1) * 8 if nh != AH else (data[off + 1] + 2) * 4
            if not fits(hl):
                break
            taken.append(_Hdr(nh, off, hl, 0, False))
            nh = data[off]
            off += hl
        elif nh == FRAGMENT:
            if not fits(8):
                break
            fo = int.from_bytes(data[off + 2:off + 4], "big")
            h = _Hdr(nh, off, 8, fo >> 3, bool(fo & 1))
            taken.append(h)
            nh = data[off]
            off += 8
            if h.frag_off:
                return taken, None
        elif nh == TCP:
            if not fits(20):
                break
            doff = data[off + 12] >> 4
            if doff < 5 or not fits(doff * 4):
                break
            taken.append(_Hdr(nh, off, doff * 4, 0, False))
            return taken, None
        elif nh in (UDP, UDPLITE, ICMP, ICMPV6):
            if not fits(8):
                break
            taken.append(_Hdr(nh, off, 8, 0, False))
            return taken, None
        else:
            break      # GRE, ESP, SCTP, No Next Header, ...: nothing
    return taken, nh


def hdr_chain(nexthdr: int, data: bytes) -> Chain:
    """Which leading bytes of `data` (starting with a header of protocol
    `nexthdr`) the header zone carries.  Returns Chain(length, l4_off,
    l4_proto, fragment)."""
    taken, _ = _walk(nexthdr, data)
    if not taken:
        return Chain(0, -1, 0, False)
    last = taken[-1]
    length = last.off + last.length
    fragment = last.proto in (IPIP, FRAGMENT) and last.frag_off != 0
    if last.proto in (TCP, UDP, UDPLITE, ICMP, ICMPV6):
        return Chain(length, last.off, last.proto, False)
    return Chain(length, -1, 0, fragment)


# ---- section 4: may an endpoint accept a header-only packet? ---------------

class PoVerdict(enum.IntEnum):
    OK = 0
    NOT_TCP = 1      # next header / chain ends in something other than TCP
    PAYLOAD = 2      # bytes follow the TCP header (or IP length says so)
    FLAGS = 3        # TCP flags other than ACK [+ECE, CWR], or no ACK
    MALFORMED = 4    # truncated / malformed header, bad IP length, ...
    FRAGMENT = 5     # an IPv4 fragment or an IPv6 packet with M or offset


def pep_origin_check(nexthdr: int, headers: bytes, tunnel: bool) -> PoVerdict:
    """Section 4 acceptance rules for the contents of a header-only packet
    (the flags / nothing-after-ICV2 rule is checked by open_header_only).

    Returns PoVerdict.OK (== 0) if the packet is acceptable."""
    headers = bytes(headers)
    if tunnel:
        if nexthdr not in (IPIP, IPV6):
            return PoVerdict.MALFORMED
    elif nexthdr != TCP:
        return PoVerdict.NOT_TCP
    taken, stopped_at = _walk(nexthdr, headers)
    # "not a fragment": no IPv4 MF or offset, and no IPv6 Fragment header
    # at all (an atomic fragment is refused too: a PEP never sends one).
    if any(h.frag_off or h.more_frags or h.proto == FRAGMENT for h in taken):
        return PoVerdict.FRAGMENT
    if not taken or taken[-1].proto != TCP:
        if taken and taken[-1].proto in (UDP, UDPLITE, ICMP, ICMPV6):
            return PoVerdict.NOT_TCP
        if stopped_at is not None and stopped_at not in (
                IPIP, IPV6, HOPOPTS, ROUTING, DSTOPTS, AH, FRAGMENT, TCP,
                UDP, UDPLITE, ICMP, ICMPV6):
            return PoVerdict.NOT_TCP    # e.g. GRE inside
        return PoVerdict.MALFORMED      # truncated / malformed / too long
    tcp = taken[-1]
    if tcp.off + tcp.length != len(headers):
        return PoVerdict.PAYLOAD
    if tunnel:
        if nexthdr == IPIP:
            ip_len = int.from_bytes(headers[2:4], "big")
        else:
            ip_len = 40 + int.from_bytes(headers[4:6], "big")
        if ip_len > len(headers):
            return PoVerdict.PAYLOAD
        if ip_len < len(headers):
            return PoVerdict.MALFORMED
    flags = headers[tcp.off + 13]
    if not flags & TCP_ACK or flags & ~PEP_ORIGIN_TCP_OK & 0xFF:
        return PoVerdict.FLAGS
    return PoVerdict.OK


# ---- sequence numbers, nonces, AAD -----------------------------------------

def _check_keysalt(ks: bytes, what: str) -> bytes:
    ks = bytes(ks)
    if len(ks) - SALT_LEN not in KEY_LENS:
        raise ValueError(f"{what}: need an AES key (16/24/32) + 4-byte salt, "
                         f"got {len(ks)} bytes")
    return ks


def seq_fields(spi: int, seq64: int, esn: bool) -> tuple[bytes, bytes, bytes]:
    """(SPI||Seq as on the wire, AAD prefix P, IV) for a sender."""
    if not 0 <= spi <= 0xFFFFFFFF:
        raise ValueError("SPI must be a 32-bit value")
    if not 0 <= seq64 < 1 << 64:
        raise ValueError("sequence number must be a 64-bit value")
    if not esn and seq64 >> 32:
        raise ValueError("sequence number over 32 bits without ESN")
    hi, lo = (seq64 >> 32).to_bytes(4, "big"), (seq64 & 0xFFFFFFFF).to_bytes(4, "big")
    s = spi.to_bytes(4, "big")
    return s + lo, (s + hi + lo if esn else s + lo), hi + lo


def aad_prefix(spi: int, seq_lo: int, esn: bool, seq_hi: int = 0) -> bytes:
    s = spi.to_bytes(4, "big")
    lo = (seq_lo & 0xFFFFFFFF).to_bytes(4, "big")
    return s + seq_hi.to_bytes(4, "big") + lo if esn else s + lo


def _gcm_seal(keysalt: bytes, iv: bytes, aad: bytes, pt: bytes) -> bytes:
    k = keysalt[:-SALT_LEN]
    return AESGCM(k).encrypt(keysalt[-SALT_LEN:] + iv, pt, aad)


def _gcm_open(keysalt: bytes, iv: bytes, aad: bytes, ct_tag: bytes,
              zone: str) -> bytes:
    try:
        return AESGCM(keysalt[:-SALT_LEN]).decrypt(keysalt[-SALT_LEN:] + iv,
                                                   ct_tag, aad)
    except InvalidTag:
        raise AuthError(zone) from None


def pad_len(hdrs: int, payload: int) -> int:
    """Padding so that hdrs + payload + padding + 2 is a multiple of 4."""
    return -(hdrs + payload + 2) % ALIGN


def rfc4303_esp_len(inner_len: int) -> int:
    """Length of a plain rfc4106 ESP packet (8-byte IV, 16-byte ICV, 4-byte
    alignment, no TFC padding) carrying inner_len bytes, SPI to ICV."""
    return ESP_HDR_LEN + IV_LEN + inner_len + pad_len(inner_len, 0) + 2 + ICV_LEN


# ---- sealing ----------------------------------------------------------------

def seal_raw(spi: int, seq64: int, esn: bool, k2salt: bytes, hz_plain: bytes,
             k1salt: bytes | None = None, pz_plain: bytes | None = None,
             iv: bytes | None = None) -> bytes:
    """Seal arbitrary zone plaintexts, no checks on their contents (for
    building malformed packets in tests).  hz_plain is nexthdr|flags|headers,
    pz_plain the whole payload-zone plaintext (trailer included); without
    pz_plain the packet ends at ICV2.  iv overrides the 8-byte IV."""
    k2salt = _check_keysalt(k2salt, "K2")
    wire, p, iv_ = seq_fields(spi, seq64, esn)
    iv = iv_ if iv is None else bytes(iv)
    if len(iv) != IV_LEN:
        raise ValueError("IV must be 8 bytes")
    hz_plain = bytes(hz_plain)
    if not L_MIN <= len(hz_plain) <= 0xFFFF:
        raise ValueError("header zone plaintext must be 2..65535 bytes")
    lb = len(hz_plain).to_bytes(2, "big")
    hz = _gcm_seal(k2salt, iv, p + iv + lb, hz_plain)   # ct || ICV2
    out = wire + iv + lb + hz
    if pz_plain is not None:
        if k1salt is None:
            raise ValueError("a payload zone needs K1")
        k1salt = _check_keysalt(k1salt, "K1")
        out += _gcm_seal(k1salt, iv, p + iv + lb + hz, bytes(pz_plain))
    return out


def seal(spi: int, seq64: int, esn: bool, k2salt: bytes, k1salt: bytes,
         nexthdr: int, inner: bytes, tunnel: bool) -> bytes:
    """Seal a packet as an endpoint does.

    tunnel: `inner` is the inner IP packet and nexthdr is 4 or 41.
    transport: `inner` is the transport packet (e.g. TCP header + data) and
    nexthdr its protocol."""
    if not 0 <= nexthdr <= 255:
        raise ValueError("next header is one byte")
    if tunnel and nexthdr not in (IPIP, IPV6):
        raise ValueError("tunnel mode needs next header 4 or 41")
    inner = bytes(inner)
    h = hdr_chain(nexthdr, inner).length
    headers, payload = inner[:h], inner[h:]
    pad = pad_len(h, len(payload))
    trailer = bytes(range(1, pad + 1)) + bytes((pad, nexthdr))
    return seal_raw(spi, seq64, esn, k2salt, bytes((nexthdr, 0)) + headers,
                    k1salt, payload + trailer)


def seal_header_only(spi: int, seq64: int, esn: bool, po_keysalt: bytes,
                     nexthdr: int, headers: bytes) -> bytes:
    """Seal a header-only packet (PEP-origin SA): no payload zone, no
    trailer; `headers` is the whole inner packet."""
    headers = bytes(headers)
    if len(headers) > HDRS_MAX:
        raise ValueError(f"headers longer than {HDRS_MAX} bytes")
    return seal_raw(spi, seq64, esn, po_keysalt,
                    bytes((nexthdr, FLAG_HEADER_ONLY)) + headers)


# ---- opening ----------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """What can be read from a packet without any key."""
    spi: int
    seq_lo: int
    iv: bytes
    L: int
    hz: bytes        # header-zone ciphertext || ICV2 (L + 16 bytes)
    rest: bytes      # everything after ICV2 (payload zone || ICV1)

    @property
    def iv_seq(self) -> int:
        return int.from_bytes(self.iv, "big")

    @property
    def hz_ct(self) -> bytes:
        return self.hz[:-ICV_LEN]

    @property
    def icv2(self) -> bytes:
        return self.hz[-ICV_LEN:]


def parse_layout(esp: bytes) -> Layout:
    """Split a packet into its zones (section 6 "malformed" checks only).
    Only the first 18 + L + 16 bytes must be present."""
    esp = bytes(esp)
    if len(esp) < HZ_OFF:
        raise FormatError(f"packet of {len(esp)} bytes is shorter than "
                          f"{HZ_OFF}")
    L = int.from_bytes(esp[16:18], "big")
    if L < L_MIN:
        raise FormatError(f"L = {L} < {L_MIN}")
    if L > L_MAX:
        raise FormatError(f"L = {L} > {L_MAX}")
    end = HZ_OFF + L + ICV_LEN
    if end > len(esp):
        raise FormatError(f"header zone ends at {end}, past the packet "
                          f"end ({len(esp)})")
    return Layout(int.from_bytes(esp[0:4], "big"),
                  int.from_bytes(esp[4:8], "big"),
                  esp[8:16], L, esp[HZ_OFF:end], esp[end:])


def _prefix(lay: Layout, esn: bool, seq_hi: int | None) -> bytes:
    if seq_hi is None:          # take SeqHi from the IV (= full 64-bit seq)
        seq_hi = int.from_bytes(lay.iv[:4], "big") if esn else 0
    return aad_prefix(lay.spi, lay.seq_lo, esn, seq_hi)


def _check_iv(lay: Layout, prefix: bytes, esn: bool) -> None:
    want = prefix[4:12] if esn else bytes(4) + prefix[4:8]
    if lay.iv != want:
        raise FormatError(f"IV {lay.iv.hex()} is not the 64-bit sequence "
                          f"number {want.hex()}")


def _open_hz(lay: Layout, keysalt: bytes, prefix: bytes) -> tuple[int, int, bytes]:
    lb = lay.L.to_bytes(2, "big")
    pt = _gcm_open(_check_keysalt(keysalt, "header-zone key"), lay.iv,
                   prefix + lay.iv + lb, lay.hz, "header")
    nexthdr, flags = pt[0], pt[1]
    if flags & ~FLAGS_KNOWN:
        raise FormatError(f"unknown header-zone flags 0x{flags:02x}")
    return nexthdr, flags, pt[2:]


def open_headers(esp: bytes, k2salt: bytes, esn: bool, seq_hi: int | None = 0,
                 strict: bool = True) -> tuple[int, int, bytes]:
    """A PEP's view: open the header zone with K2 (or a PEP-origin key).
    Reads only the first 18 + L + 16 bytes.  Returns (nexthdr, flags,
    headers).  seq_hi=None takes SeqHi from the IV.  strict also checks
    that the IV is the packet's 64-bit sequence number."""
    lay = parse_layout(esp)
    prefix = _prefix(lay, esn, seq_hi)
    res = _open_hz(lay, k2salt, prefix)
    if strict:
        _check_iv(lay, prefix, esn)
    return res


def open_full(esp: bytes, k2salt: bytes, k1salt: bytes, esn: bool,
              seq_hi: int | None = 0, strict: bool = True) -> tuple[int, bytes]:
    """An endpoint's view: verify ICV1 (payload zone, K1) first, then ICV2
    (header zone, K2), then the trailer.  Returns (nexthdr, inner packet).

    Raises PolicyError for a header-only packet (an endpoint SA drops
    those).  strict additionally requires the IV to be the sequence number
    and the padding to be the minimal 0-3 bytes giving 4-byte alignment."""
    esp = bytes(esp)
    lay = parse_layout(esp)
    prefix = _prefix(lay, esn, seq_hi)
    if not lay.rest:
        # Nothing after ICV2: a header-only packet, or a truncated one.
        _, flags, _ = _open_hz(lay, k2salt, prefix)
        if flags & FLAG_HEADER_ONLY:
            raise PolicyError("header-only packet on an endpoint SA")
        raise FormatError("payload zone missing")
    if len(lay.rest) < 2 + ICV_LEN:
        raise FormatError(f"payload zone of {len(lay.rest)} bytes is "
                          "shorter than its trailer and ICV1")
    lb = lay.L.to_bytes(2, "big")
    pz = _gcm_open(_check_keysalt(k1salt, "K1"), lay.iv,
                   prefix + lay.iv + lb + lay.hz, lay.rest, "payload")
    nexthdr, flags, headers = _open_hz(lay, k2salt, prefix)
    if flags & FLAG_HEADER_ONLY:
        # Marked header-only: an endpoint SA refuses it (section 6 "policy"),
        # whatever follows ICV2.
        raise PolicyError("header-only packet (with a payload zone) on an "
                          "endpoint SA")
    padlen, nh2 = pz[-2], pz[-1]
    if padlen + 2 > len(pz):
        raise FormatError(f"pad length {padlen} exceeds the payload zone")
    payload_end = len(pz) - 2 - padlen
    if pz[payload_end:len(pz) - 2] != bytes(range(1, padlen + 1)):
        raise FormatError("padding bytes are not 1, 2, 3, ...")
    if nh2 != nexthdr:
        raise FormatError(f"next headers disagree: header zone {nexthdr}, "
                          f"trailer {nh2}")
    if strict:
        _check_iv(lay, prefix, esn)
        if padlen > 3 or (len(headers) + len(pz)) % ALIGN:
            raise FormatError(f"padding of {padlen} bytes is not the 0-3 "
                              "bytes that align the packet")
    return nexthdr, headers + pz[:payload_end]


def open_header_only(esp: bytes, po_keysalt: bytes, esn: bool,
                     seq_hi: int | None = 0, tunnel: bool | None = None,
                     strict: bool = True) -> tuple[int, bytes]:
    """A pep-origin-in SA's view: open a header-only packet with the derived
    key.  Returns (nexthdr, headers), headers being the whole inner packet.

    PolicyError if it is not header-only (flag missing, or anything after
    ICV2); if `tunnel` is given (True/False for the SA's mode) also if
    pep_origin_check() refuses the contents (PolicyError.verdict)."""
    lay = parse_layout(esp)
    prefix = _prefix(lay, esn, seq_hi)
    nexthdr, flags, headers = _open_hz(lay, po_keysalt, prefix)
    if strict:
        _check_iv(lay, prefix, esn)
    if flags != FLAG_HEADER_ONLY:
        raise PolicyError("data packet (no HEADER_ONLY flag) on a "
                          "PEP-origin SA")
    if lay.rest:
        raise PolicyError(f"{len(lay.rest)} bytes follow ICV2 of a "
                          "header-only packet")
    if tunnel is not None:
        v = pep_origin_check(nexthdr, headers, tunnel)
        if v != PoVerdict.OK:
            raise PolicyError(f"PEP-origin packet refused: {v.name}", v)
    return nexthdr, headers
