"""LES packets, wire format version 2: what enters the header zone
(protocol.md section 4), sealing and opening of the two zones (sections 2.2,
3, 3.1), header-only PEP-origin packets and their acceptance rules
(section 5).

`esp` bytes are always the ESP packet from the SPI to its last byte (ICV1,
or ICV2 for a header-only packet), i.e. what follows the outer IP header
(or the UDP header when UDP-encapsulated).  Every key passed here is an
already-derived zone key || salt (blob.zone_key, Blob.header_key/payload_key).

    0     4       8        16                                            22+L     38+L
    | SPI | SeqLo | IV (8) | L (2) nh (1) flags (1) epoch (2) headers (L) | ICV2 |
    | checksum (2) | payload | moved | padding | pad length | next header | ICV1 (16) |

IV = 64-bit sequence number XOR R (the sender's per-SA random value);
epoch = the low 16 bits of SeqHi (0 without ESN).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .blob import KEY_LENS, SALT_LEN
from .errors import AuthError, FormatError, PolicyError

ESP_HDR_LEN = 8          # SPI + SeqLo
IV_LEN = 8
HZ_OFF = ESP_HDR_LEN + IV_LEN            # 16: first header-zone ciphertext byte
HZ_DESC_LEN = 6          # L (2) + next header (1) + flags (1) + epoch (2)
ICV_LEN = 16
HDRS_MAX = 512           # largest L
EPOCH_MASK = 0xFFFF      # the epoch: the low 16 bits of SeqHi
PAD_MAX = 255
CSUM_LEN = 2             # the payload zone's checksum field
MIN_PACKET = HZ_OFF + HZ_DESC_LEN + ICV_LEN   # 38
# Smallest payload zone: checksum, pad length, next header, ICV1.
PZ_MIN = CSUM_LEN + 2 + ICV_LEN               # 20
MIN_FULL_PACKET = MIN_PACKET + PZ_MIN         # 58
# Section 3.2: what LES adds to the inner packet, plus any moved bytes.
OVERHEAD = MIN_FULL_PACKET                    # 58
ESP_ALIGN = 4            # RFC 4303's alignment, for rfc4303_esp_len only

FLAG_HEADER_ONLY = 0x01
FLAG_OPTIONS_MOVED = 0x02
FLAG_URGENT_MOVED = 0x04
FLAGS_KNOWN = FLAG_HEADER_ONLY | FLAG_OPTIONS_MOVED | FLAG_URGENT_MOVED

NH_NONE = 59             # No Next Header: a dummy packet (RFC 4303 2.6)

# IP protocol numbers.
HOPOPTS, ICMP, IPIP, TCP, UDP, IPV6 = 0, 1, 4, 6, 17, 41
ROUTING, FRAGMENT, GRE, ESP, AH, ICMPV6, DSTOPTS, UDPLITE = \
    43, 44, 47, 50, 51, 58, 60, 136

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH = 0x01, 0x02, 0x04, 0x08
TCP_ACK, TCP_URG, TCP_ECE, TCP_CWR = 0x10, 0x20, 0x40, 0x80
PEP_ORIGIN_TCP_OK = TCP_ACK | TCP_ECE | TCP_CWR

# TCP options kept in the header zone: kind -> allowed lengths (section 4).
TCPOPT_EOL, TCPOPT_NOP = 0, 1
KEPT_OPTIONS = {2: (4,), 3: (3,), 4: (2,), 5: (10, 18, 26, 34), 8: (10,)}


# ---- section 4: what enters the header zone --------------------------------

class HzPlan(NamedTuple):
    length: int      # L
    flags: int       # OPTIONS_MOVED | URGENT_MOVED (never HEADER_ONLY)
    headers: bytes   # the L sanitised header bytes
    csum: bytes      # the payload zone's checksum field: the original TCP
                     # checksum, or b"\0\0" if L = 0
    moved: bytes     # [original options] [urgent pointer]; b"" if none
    tcp_off: int     # offset of the TCP header in `headers`, -1 if L = 0


def _tcp_off(nexthdr: int, data: bytes) -> tuple[int, int] | None:
    """(TCP header offset, TCP payload length) if the zone carries the
    headers at the start of `data` (section 4 table), else None."""
    n = len(data)
    if nexthdr == IPIP:
        if n < 20 or data[0] != 0x45:          # version 4, IHL 5
            return None
        tl = int.from_bytes(data[2:4], "big")
        if not 20 <= tl <= n:
            return None
        if int.from_bytes(data[6:8], "big") & 0x3FFF:   # MF, fragment offset
            return None
        if data[9] != TCP or tl < 40:
            return None
        th = (data[32] >> 4) * 4
        if th < 20 or 20 + th > tl:
            return None
        return 20, tl - 20 - th
    if nexthdr == IPV6:
        if n < 40 or data[0] >> 4 != 6:
            return None
        pl = int.from_bytes(data[4:6], "big")
        if pl == 0 or 40 + pl > n or data[6] != TCP or pl < 20:
            return None
        th = (data[52] >> 4) * 4
        if th < 20 or th > pl:
            return None
        return 40, pl - th
    if nexthdr == TCP:
        if n < 20:
            return None
        th = (data[12] >> 4) * 4
        if th < 20 or th > n:
            return None
        return 0, n - th
    return None


def sanitise_options(opts: bytes) -> bytes:
    """Section 4 item 3: the options as the header zone carries them."""
    opts = bytes(opts)
    out = bytearray(opts)
    n, i = len(opts), 0
    while i < n:
        k = opts[i]
        if k == TCPOPT_NOP:
            i += 1
            continue
        if k == TCPOPT_EOL:
            if any(opts[i:]):
                out[i:] = b"\x01" * (n - i)
            break
        if i + 1 >= n or opts[i + 1] < 2 or i + opts[i + 1] > n:
            out[i:] = b"\x01" * (n - i)      # no room / bad length: the rest
            break
        ln = opts[i + 1]
        if ln not in KEPT_OPTIONS.get(k, ()):
            out[i:i + ln] = b"\x01" * ln
        i += ln
    return bytes(out)


def hz_plan(nexthdr: int, data: bytes) -> HzPlan:
    """Section 4 applied to `data`, the bytes after the ESP header up to
    the moved bytes (the inner packet and any TFC padding)."""
    data = bytes(data)
    t = _tcp_off(nexthdr, data)
    if t is None:
        return HzPlan(0, 0, b"", b"\0\0", b"", -1)
    off, plen = t
    if plen > 0xFFFF:
        raise ValueError(f"TCP payload of {plen} bytes does not fit in the "
                         "checksum field")
    th = (data[off + 12] >> 4) * 4
    L = off + th
    hdrs = bytearray(data[:L])
    checksum = bytes(hdrs[off + 16:off + 18])
    hdrs[off + 16:off + 18] = plen.to_bytes(2, "big")
    flags, moved = 0, b""
    opts = bytes(hdrs[off + 20:L])
    clean = sanitise_options(opts)
    if clean != opts:
        flags |= FLAG_OPTIONS_MOVED
        moved += opts
        hdrs[off + 20:L] = clean
    urg = bytes(hdrs[off + 18:off + 20])
    if urg != b"\0\0":
        flags |= FLAG_URGENT_MOVED
        moved += urg
        hdrs[off + 18:off + 20] = b"\0\0"
    return HzPlan(L, flags, bytes(hdrs), checksum, moved, off)


def _zone_tcp_off(nexthdr: int, headers: bytes) -> int:
    """Offset of the TCP header in a received non-empty header zone (not
    header-only); FormatError if the zone is not IP (+) TCP of exactly L
    bytes.  (Only the structure: hz_plan on the restored packet decides.)"""
    L = len(headers)
    off = {IPIP: 20, IPV6: 40, TCP: 0}.get(nexthdr)
    if off is None or L < off + 20:
        raise FormatError(f"a header zone of {L} bytes with next header "
                          f"{nexthdr} is not one section 4 makes")
    if (nexthdr == IPIP and headers[0] != 0x45) or \
            (nexthdr == IPV6 and (headers[0] >> 4 != 6 or headers[6] != TCP)) or \
            (nexthdr == IPIP and headers[9] != TCP):
        raise FormatError("header zone: not an IP header followed by TCP")
    if off + (headers[off + 12] >> 4) * 4 != L:
        raise FormatError("header zone: TCP header does not end at L")
    return off


def moved_len(nexthdr: int, flags: int, headers: bytes) -> int:
    """Number of moved bytes (section 4) that precede the padding for this
    header zone; FormatError if the flags are impossible for it."""
    if flags & ~(FLAG_OPTIONS_MOVED | FLAG_URGENT_MOVED):
        raise FormatError(f"flags 0x{flags:02x} are not moved-field flags")
    if not headers:
        if flags:
            raise FormatError(f"flags 0x{flags:02x} on an empty header zone")
        return 0
    off = _zone_tcp_off(nexthdr, headers)
    n = 0
    if flags & FLAG_OPTIONS_MOVED:
        n += (headers[off + 12] >> 4) * 4 - 20
    if flags & FLAG_URGENT_MOVED:
        n += 2
    return n


def restore(nexthdr: int, flags: int, headers: bytes, csum: bytes,
            moved: bytes) -> bytes:
    """The original header bytes: the checksum field and the moved bytes
    put back into the headers (nothing to do when L = 0)."""
    headers, csum, moved = bytes(headers), bytes(csum), bytes(moved)
    if len(csum) != CSUM_LEN:
        raise FormatError(f"checksum field of {len(csum)} bytes")
    if len(moved) != moved_len(nexthdr, flags, headers):
        raise FormatError("moved bytes' length does not match the header zone")
    if not headers:
        return b""
    off = _zone_tcp_off(nexthdr, headers)
    h = bytearray(headers)
    L = len(h)
    h[off + 16:off + 18] = csum
    p = 0
    if flags & FLAG_OPTIONS_MOVED:
        n = L - off - 20
        h[off + 20:L] = moved[:n]
        p = n
    if flags & FLAG_URGENT_MOVED:
        h[off + 18:off + 20] = moved[p:p + 2]
    return bytes(h)


# ---- section 5: may an endpoint accept a header-only packet? ---------------

class PoVerdict(enum.IntEnum):
    OK = 0
    NOT_TCP = 1      # next header / chain ends in something other than TCP
    PAYLOAD = 2      # bytes follow the TCP header (or IP length says so)
    FLAGS = 3        # TCP flags other than ACK [+ECE, CWR], or no ACK
    MALFORMED = 4    # truncated / malformed header, bad IP length, ...
    FRAGMENT = 5     # IPv4 MF / offset, or an IPv6 Fragment header
    OPTIONS = 6      # IP options, IPv6 extension headers, TCP options a PEP does not send


def _po_walk(nexthdr: int, h: bytes):
    """Walk a header-only packet's chain to its TCP header.  Returns
    (tcp_off, None) or (-1, verdict)."""
    off, nh, n = 0, nexthdr, len(h)
    while True:
        if nh == IPIP:
            if n - off < 20 or h[off] >> 4 != 4:
                return -1, PoVerdict.MALFORMED
            ihl = (h[off] & 0x0F) * 4
            if ihl < 20 or off + ihl > n:
                return -1, PoVerdict.MALFORMED
            if int.from_bytes(h[off + 6:off + 8], "big") & 0x3FFF:
                return -1, PoVerdict.FRAGMENT
            nh, off = h[off + 9], off + ihl
        elif nh == IPV6:
            if n - off < 40 or h[off] >> 4 != 6:
                return -1, PoVerdict.MALFORMED
            nh, off = h[off + 6], off + 40
        elif nh in (HOPOPTS, ROUTING, DSTOPTS, AH):
            if n - off < 2:
                return -1, PoVerdict.MALFORMED
            hl = (h[off + 1] + 2) * 4 if nh == AH else (h[off + 1] + 1) * 8
            if off + hl > n:
                return -1, PoVerdict.MALFORMED
            nh, off = h[off], off + hl
        elif nh == FRAGMENT:
            return -1, PoVerdict.FRAGMENT
        elif nh == TCP:
            if n - off < 20:
                return -1, PoVerdict.MALFORMED
            th = (h[off + 12] >> 4) * 4
            if th < 20 or off + th > n:
                return -1, PoVerdict.MALFORMED
            return off, None
        else:
            return -1, PoVerdict.NOT_TCP


def pep_origin_check(nexthdr: int, headers: bytes, tunnel: bool) -> PoVerdict:
    """Section 5 acceptance rules for the contents of a header-only packet
    (the flags / nothing-after-ICV2 rule is checked by open_header_only).
    Returns PoVerdict.OK (== 0) if the packet is acceptable."""
    headers = bytes(headers)
    if tunnel:
        if nexthdr not in (IPIP, IPV6):
            return PoVerdict.MALFORMED
    elif nexthdr != TCP:
        return PoVerdict.NOT_TCP
    off, v = _po_walk(nexthdr, headers)
    if v is not None:
        return v
    th = (headers[off + 12] >> 4) * 4
    if off + th != len(headers):
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
    flags = headers[off + 13]
    if not flags & TCP_ACK or flags & ~PEP_ORIGIN_TCP_OK & 0xFF:
        return PoVerdict.FLAGS
    ip = 0 if not tunnel else 20 if nexthdr == IPIP else 40
    if off != ip or not _po_options_ok(headers[ip + 20:]):
        return PoVerdict.OPTIONS
    return PoVerdict.OK


def _po_options_ok(opt: bytes) -> bool:
    """TCP options a PEP-origin packet may carry: timestamps (kind 8, 10
    bytes), SACK blocks (kind 5, 2 + 8n bytes, n >= 1), NOP, and EOL
    followed by zeros only."""
    i = 0
    while i < len(opt):
        kind = opt[i]
        if kind == 0:
            return not any(opt[i:])
        if kind == 1:
            i += 1
            continue
        if i + 2 > len(opt):
            return False
        olen = opt[i + 1]
        if i + olen > len(opt):
            return False
        if kind == 8:
            if olen != 10:
                return False
        elif kind != 5 or olen < 10 or (olen - 2) % 8:
            return False
        i += olen
    return True


# ---- sequence numbers, IV, nonces, AAD --------------------------------------

def _check_keysalt(ks: bytes, what: str) -> bytes:
    ks = bytes(ks)
    if len(ks) - SALT_LEN not in KEY_LENS:
        raise ValueError(f"{what}: need an AES key (16/24/32) + 4-byte salt, "
                         f"got {len(ks)} bytes")
    return ks


class SeqFields(NamedTuple):
    wire: bytes      # SPI || SeqLo as sent
    p: bytes         # P: SPI || SeqLo, or SPI || SeqHi || SeqLo with ESN
    iv: bytes        # (SeqHi || SeqLo) XOR R


def seq_fields(spi: int, seq64: int, esn: bool, iv_mask: int = 0) -> SeqFields:
    if not 0 <= spi <= 0xFFFFFFFF:
        raise ValueError("SPI must be a 32-bit value")
    if not 0 <= seq64 < 1 << 64:
        raise ValueError("sequence number must be a 64-bit value")
    if not esn and seq64 >> 32:
        raise ValueError("sequence number over 32 bits without ESN")
    if not 0 <= iv_mask < 1 << 64:
        raise ValueError("iv_mask (R) must be a 64-bit value")
    hi = (seq64 >> 32).to_bytes(4, "big")
    lo = (seq64 & 0xFFFFFFFF).to_bytes(4, "big")
    s = spi.to_bytes(4, "big")
    return SeqFields(s + lo, s + hi + lo if esn else s + lo,
                     (seq64 ^ iv_mask).to_bytes(8, "big"))


def epoch_of(seq64: int) -> int:
    """The header zone's epoch for a 64-bit sequence number: the low 16
    bits of SeqHi (0 without ESN, where SeqHi is 0)."""
    return (seq64 >> 32) & EPOCH_MASK


def replay_seq(top: int | None, epoch: int, seq_lo: int) -> int | None:
    """The 64-bit sequence number a PEP infers for a header zone (section
    7): SeqLo from the ESP header, SeqHi the value whose low 16 bits are
    `epoch` nearest to the window top's SeqHi (top >> 32), ties to the
    lower one.  None if that SeqHi would be negative or above 2^32 - 1 (no
    such sequence number).  top is None for an empty window: SeqHi = epoch.
    Mirrors the kernel's les_replay_seq."""
    if not 0 <= epoch <= EPOCH_MASK:
        raise ValueError("epoch is a 16-bit value")
    if not 0 <= seq_lo <= 0xFFFFFFFF:
        raise ValueError("SeqLo is a 32-bit value")
    if top is None:
        return epoch << 32 | seq_lo
    if not 0 <= top < 1 << 64:
        raise ValueError("top must be a 64-bit value")
    top_hi = top >> 32
    # The candidate in top_hi's 2^16 block, moved by one block toward
    # top_hi if it is more than half a block away; exactly half a block
    # away either way, the lower of the two.
    hi = (top_hi & ~EPOCH_MASK) | epoch
    if hi - top_hi >= 0x8000:
        hi -= 0x10000
    elif top_hi - hi > 0x8000:
        hi += 0x10000
    if not 0 <= hi <= 0xFFFFFFFF:
        return None
    return hi << 32 | seq_lo


def aad_prefix(spi: int, seq_lo: int, esn: bool, seq_hi: int = 0) -> bytes:
    """P of section 3.1."""
    s = spi.to_bytes(4, "big")
    lo = (seq_lo & 0xFFFFFFFF).to_bytes(4, "big")
    return s + (seq_hi & 0xFFFFFFFF).to_bytes(4, "big") + lo if esn else s + lo


def hz_aad(esp_head: bytes, rest: bytes = b"") -> bytes:
    """Header-zone AAD: SPI || SeqLo || IV (the first 16 bytes), then all
    that follows ICV2 (payload zone || ICV1; nothing in a header-only
    packet)."""
    return bytes(esp_head[:HZ_OFF]) + bytes(rest)


def pz_aad(p: bytes, iv: bytes, hz_plain: bytes) -> bytes:
    """Payload-zone AAD: P || IV || header-zone plaintext."""
    return bytes(p) + bytes(iv) + bytes(hz_plain)


def nonce(keysalt: bytes, iv: bytes) -> bytes:
    return bytes(keysalt[-SALT_LEN:]) + bytes(iv)


def _gcm_seal(keysalt: bytes, iv: bytes, aad: bytes, pt: bytes) -> bytes:
    return AESGCM(keysalt[:-SALT_LEN]).encrypt(nonce(keysalt, iv), pt, aad)


def _gcm_open(keysalt: bytes, iv: bytes, aad: bytes, ct_tag: bytes,
              zone: str) -> bytes:
    try:
        return AESGCM(keysalt[:-SALT_LEN]).decrypt(nonce(keysalt, iv),
                                                   ct_tag, aad)
    except InvalidTag:
        raise AuthError(zone) from None


def peek_block(hz_key: bytes, iv: bytes) -> bytes:
    """AES-ECB(header zone key, salt || IV || 00000002): the keystream block
    that encrypts the first 16 header-zone plaintext bytes."""
    hz_key = _check_keysalt(hz_key, "header-zone key")
    enc = Cipher(algorithms.AES(hz_key[:-SALT_LEN]), modes.ECB()).encryptor()
    return enc.update(nonce(hz_key, iv) + b"\0\0\0\x02") + enc.finalize()


def peek_len(esp: bytes, hz_key: bytes) -> int:
    """L as section 3.1 finds it, before any ICV is checked."""
    esp = bytes(esp)
    if len(esp) < HZ_OFF + 2:
        raise FormatError(f"packet of {len(esp)} bytes has no L")
    ks = peek_block(hz_key, esp[8:16])
    return int.from_bytes(bytes(a ^ b for a, b in zip(esp[16:18], ks[:2])),
                          "big")


def pad_len(n: int) -> int:
    """Padding an LES sender adds: none, whatever the length (section 3;
    kept for callers of the old API)."""
    return 0


def rfc4303_esp_len(inner_len: int) -> int:
    """Length of a plain rfc4106 ESP packet (8-byte IV, 16-byte ICV, 4-byte
    alignment, no TFC padding) carrying inner_len bytes, SPI to ICV."""
    pad = -(inner_len + 2) % ESP_ALIGN
    return ESP_HDR_LEN + IV_LEN + inner_len + pad + 2 + ICV_LEN


def les_len(inner_len: int, moved: int = 0) -> int:
    """Length of an LES packet (SPI to ICV1) carrying inner_len bytes with
    `moved` moved bytes and no padding (section 3.2)."""
    return OVERHEAD + inner_len + moved


# ---- sealing ----------------------------------------------------------------

def hz_plaintext(nexthdr: int, flags: int, headers: bytes,
                 epoch: int = 0) -> bytes:
    """L || next header || flags || epoch || headers (section 3); epoch is
    the low 16 bits of SeqHi (epoch_of(seq64))."""
    headers = bytes(headers)
    if not 0 <= epoch <= EPOCH_MASK:
        raise ValueError("epoch is a 16-bit value")
    return (len(headers).to_bytes(2, "big") + bytes((nexthdr, flags)) +
            epoch.to_bytes(2, "big") + headers)


def seal_raw(spi: int, seq64: int, esn: bool, hz_key: bytes, hz_plain: bytes,
             pz_key: bytes | None = None, pz_plain: bytes | None = None, *,
             iv_mask: int = 0) -> bytes:
    """Seal arbitrary zone plaintexts, no checks on their contents (for
    forging malformed packets in tests).  hz_plain is the whole header-zone
    plaintext (L, nh, flags, epoch, headers), pz_plain the whole payload-zone
    plaintext; without pz_key the packet ends at ICV2 (header-only)."""
    hz_key = _check_keysalt(hz_key, "header-zone key")
    sf = seq_fields(spi, seq64, esn, iv_mask)
    head = sf.wire + sf.iv
    rest = b""
    if pz_key is not None:
        # The payload zone first: the header zone's ICV2 covers it (3.1).
        pz_key = _check_keysalt(pz_key, "payload-zone key")
        rest = _gcm_seal(pz_key, sf.iv, pz_aad(sf.p, sf.iv, hz_plain),
                         bytes(pz_plain or b""))
    hz = _gcm_seal(hz_key, sf.iv, hz_aad(head, rest), bytes(hz_plain))
    return head + hz + rest


def reseal_header_zone(esp: bytes, hz_key: bytes, hz_plain: bytes) -> bytes:
    """What a K2 holder can do (for tests): a header zone of its own, with a
    valid ICV2 over whatever follows the old one.  The endpoint refuses it:
    ICV1 covers the header zone's plaintext (section 3.1)."""
    esp = bytes(esp)
    hz_key = _check_keysalt(hz_key, "header-zone key")
    rest = parse_layout(esp, hz_key).rest
    iv = esp[8:HZ_OFF]
    return (esp[:HZ_OFF] +
            _gcm_seal(hz_key, iv, hz_aad(esp, rest), bytes(hz_plain)) + rest)


@dataclass(frozen=True)
class Sealed:
    """What seal() puts in the two zones (for vectors and tests)."""
    plan: HzPlan
    hz_plain: bytes
    pz_plain: bytes
    pad: int


def plan_seal(nexthdr: int, inner: bytes, *, extra_pad: int = 0,
              tfc: bytes = b"", epoch: int = 0) -> Sealed:
    if not 0 <= nexthdr <= 255:
        raise ValueError("next header is one byte")
    data = bytes(inner) + bytes(tfc)
    plan = hz_plan(nexthdr, data)
    payload = data[plan.length:]
    pad = extra_pad
    if not 0 <= pad <= PAD_MAX:
        raise ValueError(f"padding of {pad} bytes: 0 to {PAD_MAX}")
    pz = (plan.csum + payload + plan.moved + bytes(range(1, pad + 1)) +
          bytes((pad, nexthdr)))
    return Sealed(plan, hz_plaintext(nexthdr, plan.flags, plan.headers,
                                     epoch=epoch), pz, pad)


def seal(spi: int, seq64: int, esn: bool, hz_key: bytes, pz_key: bytes,
         nexthdr: int, inner: bytes, *, iv_mask: int = 0, extra_pad: int = 0,
         tfc: bytes = b"") -> bytes:
    """Seal a packet as an endpoint does.  `inner` is the inner IP packet
    (tunnel mode, nexthdr 4 or 41) or the transport packet (nexthdr its
    protocol).  iv_mask is R; extra_pad is the number of padding bytes
    (0 to 255; a sender adds none, section 3); tfc is appended after the
    inner packet (TFC padding)."""
    s = plan_seal(nexthdr, inner, extra_pad=extra_pad, tfc=tfc,
                  epoch=epoch_of(seq64))
    return seal_raw(spi, seq64, esn, hz_key, s.hz_plain, pz_key, s.pz_plain,
                    iv_mask=iv_mask)


def seal_header_only(spi: int, seq64: int, esn: bool, po_key: bytes,
                     nexthdr: int, headers: bytes, *, iv_mask: int = 0) -> bytes:
    """Seal a header-only packet (PEP-origin SA): no payload zone, no
    trailer; `headers` is the whole inner packet, unchanged."""
    headers = bytes(headers)
    if len(headers) > HDRS_MAX:
        raise ValueError(f"headers longer than {HDRS_MAX} bytes")
    return seal_raw(spi, seq64, esn, po_key,
                    hz_plaintext(nexthdr, FLAG_HEADER_ONLY, headers,
                                 epoch=epoch_of(seq64)),
                    iv_mask=iv_mask)


# ---- opening ----------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """A packet split at the header zone whose length was peeked."""
    spi: int
    seq_lo: int
    iv: bytes
    L: int
    hz: bytes        # header-zone ciphertext || ICV2 (6 + L + 16 bytes)
    rest: bytes      # everything after ICV2 (payload zone || ICV1)

    @property
    def hz_end(self) -> int:
        return HZ_OFF + HZ_DESC_LEN + self.L + ICV_LEN


def parse_layout(esp: bytes, hz_key: bytes) -> Layout:
    """Section 8 "malformed" checks that need no ICV: length >= 38, the
    peeked L <= 512, the header zone within the packet."""
    esp = bytes(esp)
    if len(esp) < MIN_PACKET:
        raise FormatError(f"packet of {len(esp)} bytes is shorter than "
                          f"{MIN_PACKET}")
    L = peek_len(esp, hz_key)
    if L > HDRS_MAX:
        raise FormatError(f"L = {L} > {HDRS_MAX}")
    end = MIN_PACKET + L
    if end > len(esp):
        raise FormatError(f"header zone ends at {end}, past the packet "
                          f"end ({len(esp)})")
    return Layout(int.from_bytes(esp[0:4], "big"),
                  int.from_bytes(esp[4:8], "big"),
                  esp[8:16], L, esp[HZ_OFF:end], esp[end:])


class _Hz(NamedTuple):
    nexthdr: int
    flags: int
    epoch: int
    headers: bytes


def _open_hz(esp: bytes, lay: Layout, hz_key: bytes) -> tuple[_Hz, bytes]:
    """ICV2 (over the header zone and all after it); the fields and the
    plaintext, which the payload zone's AAD holds."""
    pt = _gcm_open(hz_key, lay.iv, hz_aad(esp, lay.rest), lay.hz, "header")
    L = int.from_bytes(pt[0:2], "big")
    if L != lay.L or len(pt) != HZ_DESC_LEN + L:   # cannot happen: CTR mode
        raise FormatError("header zone length disagrees with L")
    return (_Hz(pt[2], pt[3], int.from_bytes(pt[4:6], "big"),
                pt[HZ_DESC_LEN:]), pt)


def _check_epoch(epoch: int, esn: bool, seq_hi: int) -> None:
    want = (seq_hi if esn else 0) & EPOCH_MASK
    if epoch != want:
        raise FormatError(f"epoch {epoch} is not the low 16 bits of SeqHi "
                          f"({want})")


class OpenedHeaders(NamedTuple):
    length: int              # L
    nexthdr: int
    flags: int
    headers: bytes           # as in the zone (sanitised unless header-only)
    payload_len: int | None  # TCP payload length (checksum field), or None
    epoch: int = 0           # the low 16 bits of SeqHi (section 3, 7)


def open_headers(esp: bytes, hz_key: bytes) -> OpenedHeaders:
    """A PEP's view: open the header zone only (ICV2 covers the whole
    packet; the payload zone stays sealed).  payload_len is the TCP payload length the zone carries in the
    checksum field; None when the zone carries no TCP header or the packet
    is header-only (its headers are unchanged).  epoch is returned as sent,
    unchecked: a PEP places it with replay_seq (section 7)."""
    esp = bytes(esp)
    hz_key = _check_keysalt(hz_key, "header-zone key")
    lay = parse_layout(esp, hz_key)
    (nh, flags, epoch, headers), _ = _open_hz(esp, lay, hz_key)
    if flags & ~FLAGS_KNOWN:
        raise FormatError(f"unknown header-zone flags 0x{flags:02x}")
    plen = None
    if headers and not flags & FLAG_HEADER_ONLY:
        off = _zone_tcp_off(nh, headers)
        plen = int.from_bytes(headers[off + 16:off + 18], "big")
    elif not headers and flags & (FLAG_OPTIONS_MOVED | FLAG_URGENT_MOVED):
        raise FormatError("moved-field flags on an empty header zone")
    return OpenedHeaders(lay.L, nh, flags, headers, plen, epoch)


class Opened(NamedTuple):
    nexthdr: int
    inner: bytes     # restored inner packet, with any TFC padding
    flags: int
    pad: int

    @property
    def dummy(self) -> bool:
        return self.nexthdr == NH_NONE


def open_full(esp: bytes, hz_key: bytes, pz_key: bytes, esn: bool,
              seq_hi: int = 0) -> Opened:
    """An endpoint's view: ICV2 (header zone) first, then ICV1, then the
    flags, the epoch, the trailer, the checksum and moved bytes and the
    canonical-form check (sections 3.1, 4).

    PolicyError for a header-only packet (nothing after ICV2, or the
    HEADER_ONLY flag); FormatError for a malformed one (a wrong epoch
    included); AuthError if an ICV fails.  seq_hi is the high half of the
    sequence number (ESN AAD; the epoch must be its low 16 bits; without
    ESN SeqHi is 0 and seq_hi is ignored)."""
    esp = bytes(esp)
    hz_key = _check_keysalt(hz_key, "header-zone key")
    pz_key = _check_keysalt(pz_key, "payload-zone key")
    lay = parse_layout(esp, hz_key)
    if not lay.rest:
        raise PolicyError("header-only packet (nothing after ICV2) on an "
                          "endpoint SA")
    if len(lay.rest) < PZ_MIN:
        raise FormatError(f"payload zone of {len(lay.rest)} bytes is "
                          "shorter than its checksum field, trailer and ICV1")
    (nexthdr, flags, epoch, headers), hz_plain = _open_hz(esp, lay, hz_key)
    p = aad_prefix(lay.spi, lay.seq_lo, esn, seq_hi)
    pz = _gcm_open(pz_key, lay.iv, pz_aad(p, lay.iv, hz_plain), lay.rest,
                   "payload")
    if flags & ~FLAGS_KNOWN:
        raise FormatError(f"unknown header-zone flags 0x{flags:02x}")
    if flags & FLAG_HEADER_ONLY:
        raise PolicyError("header-only packet (HEADER_ONLY flag) on an "
                          "endpoint SA")
    _check_epoch(epoch, esn, seq_hi)
    padlen, nh2 = pz[-2], pz[-1]
    if nh2 != nexthdr:
        raise FormatError(f"next headers disagree: header zone {nexthdr}, "
                          f"trailer {nh2}")
    if CSUM_LEN + padlen + 2 > len(pz):
        raise FormatError(f"pad length {padlen} exceeds the payload zone")
    end = len(pz) - 2 - padlen
    if pz[end:len(pz) - 2] != bytes(range(1, padlen + 1)):
        raise FormatError("padding bytes are not 1, 2, 3, ...")
    mlen = moved_len(nexthdr, flags, headers)
    if CSUM_LEN + mlen > end:
        raise FormatError("payload zone shorter than its checksum field and "
                          "moved bytes")
    csum = pz[:CSUM_LEN]
    payload, moved = pz[CSUM_LEN:end - mlen], pz[end - mlen:end]
    inner = restore(nexthdr, flags, headers, csum, moved) + payload
    try:
        plan = hz_plan(nexthdr, inner)
    except ValueError as e:      # a TCP payload no checksum field holds
        raise FormatError(str(e)) from None
    if (plan.length, plan.flags, plan.headers, plan.moved, plan.csum) != \
            (len(headers), flags, headers, moved, csum):
        raise FormatError("the header zone, checksum field or moved bytes "
                          "are not what section 4 makes from the restored "
                          "packet")
    return Opened(nexthdr, inner, flags, padlen)


def open_header_only(esp: bytes, po_key: bytes, esn: bool,
                     tunnel: bool | None, seq_hi: int = 0) -> bytes:
    """A pep-origin-in SA's view: open a header-only packet with the
    PEP-origin SA's header zone key and apply section 5.  Returns the inner
    packet.  PolicyError (with .verdict for content refusals) if refused;
    FormatError for a malformed one, e.g. an epoch that is not the low 16
    bits of seq_hi (the SeqHi xfrm inferred; 0 without ESN).
    tunnel=None skips the content rules (flags / length rules only)."""
    esp = bytes(esp)
    po_key = _check_keysalt(po_key, "header-zone key")
    lay = parse_layout(esp, po_key)
    # Before ICV2, as les.ko: what follows it would be its AAD.
    if lay.rest:
        raise PolicyError(f"{len(lay.rest)} bytes follow ICV2 of a "
                          "header-only packet")
    (nexthdr, flags, epoch, headers), _ = _open_hz(esp, lay, po_key)
    if flags != FLAG_HEADER_ONLY:
        raise PolicyError(f"flags 0x{flags:02x} on a PEP-origin SA: only "
                          "HEADER_ONLY is accepted")
    _check_epoch(epoch, esn, seq_hi)
    if tunnel is not None:
        v = pep_origin_check(nexthdr, headers, tunnel)
        if v != PoVerdict.OK:
            raise PolicyError(f"PEP-origin packet refused: {v.name}", v)
    return headers
