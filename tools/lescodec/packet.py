"""Minimal IPv4/IPv6/UDP/TCP helpers: build test packets with correct
checksums, wrap an ESP packet in an outer IP header (optionally in UDP
port 4500, RFC 3948) and find the ESP packet inside a captured IP packet.

Addresses are anything ipaddress.ip_address() accepts; the family follows
from them.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from .errors import FormatError

IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ESP = 6, 17, 50
IPPROTO_IPIP, IPPROTO_IPV6 = 4, 41
NAT_T_PORT = 4500

def ip_addr(a) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(a, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return a
    if isinstance(a, (bytes, bytearray)):
        return ipaddress.ip_address(bytes(a))
    return ipaddress.ip_address(a)


def _pair(src, dst):
    s, d = ip_addr(src), ip_addr(dst)
    if s.version != d.version:
        raise ValueError("source and destination of different families")
    return s, d


def checksum(data: bytes) -> int:
    """RFC 1071 Internet checksum (the value to store)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def pseudo_header(src, dst, proto: int, length: int) -> bytes:
    s, d = _pair(src, dst)
    if s.version == 4:
        return s.packed + d.packed + struct.pack("!BBH", 0, proto, length)
    return s.packed + d.packed + struct.pack("!IxxxB", length, proto)


def l4_checksum(src, dst, proto: int, segment: bytes) -> int:
    return checksum(pseudo_header(src, dst, proto, len(segment)) + segment)


# ---- IP -------------------------------------------------------------------

def ipv4_packet(src, dst, proto: int, payload: bytes, *, ttl: int = 64,
                ident: int = 0, tos: int = 0, df: bool = True, mf: bool = False,
                frag_off: int = 0, options: bytes = b"",
                total_length: int | None = None) -> bytes:
    """IPv4 header (correct checksum) + payload.  frag_off in bytes (multiple
    of 8); options padded to 4 bytes with EOL."""
    s, d = _pair(src, dst)
    if s.version != 4:
        raise ValueError("IPv4 addresses needed")
    options = bytes(options) + b"\0" * (-len(options) % 4)
    ihl = 5 + len(options) // 4
    if ihl > 15:
        raise ValueError("IPv4 options too long")
    if frag_off % 8:
        raise ValueError("fragment offset must be a multiple of 8")
    tl = ihl * 4 + len(payload) if total_length is None else total_length
    flags = (0x4000 if df else 0) | (0x2000 if mf else 0) | (frag_off // 8)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, tl, ident, flags, ttl,
                      proto, 0, s.packed, d.packed) + options
    hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return hdr + bytes(payload)


def ipv6_packet(src, dst, nexthdr: int, payload: bytes, *, hop_limit: int = 64,
                tclass: int = 0, flow: int = 0,
                payload_length: int | None = None) -> bytes:
    s, d = _pair(src, dst)
    if s.version != 6:
        raise ValueError("IPv6 addresses needed")
    pl = len(payload) if payload_length is None else payload_length
    return struct.pack("!IHBB", 6 << 28 | tclass << 20 | flow, pl, nexthdr,
                       hop_limit) + s.packed + d.packed + bytes(payload)


def ip_packet(src, dst, proto: int, payload: bytes, **kw) -> bytes:
    """IPv4 or IPv6 packet, by address family."""
    if ip_addr(src).version == 4:
        return ipv4_packet(src, dst, proto, payload, **kw)
    return ipv6_packet(src, dst, proto, payload, **kw)


def ipv6_ext(nexthdr: int, body: bytes = b"") -> bytes:
    """A Hop-by-hop / Routing / Destination options header: nexthdr, len and
    `body` padded with PadN to a multiple of 8 bytes."""
    body = bytes(body)
    n = -(len(body) + 2) % 8
    if n == 1:
        body += b"\0"                       # Pad1
    elif n:
        body += bytes((1, n - 2)) + b"\0" * (n - 2)   # PadN
    total = len(body) + 2
    return bytes((nexthdr, total // 8 - 1)) + body


def ipv6_frag(nexthdr: int, offset: int = 0, more: bool = False,
              ident: int = 0) -> bytes:
    if offset % 8:
        raise ValueError("fragment offset must be a multiple of 8")
    return struct.pack("!BBHI", nexthdr, 0, offset | (1 if more else 0), ident)


# ---- UDP / TCP ------------------------------------------------------------

def udp_segment(src, dst, sport: int, dport: int, payload: bytes,
                zero_checksum: bool = False) -> bytes:
    """UDP header + payload.  zero_checksum leaves the IPv4 checksum 0 (not
    allowed for IPv6, where it is always computed)."""
    length = 8 + len(payload)
    seg = struct.pack("!HHHH", sport, dport, length, 0) + bytes(payload)
    if zero_checksum and ip_addr(src).version == 4:
        return seg
    c = l4_checksum(src, dst, IPPROTO_UDP, seg) or 0xFFFF
    return seg[:6] + struct.pack("!H", c) + seg[8:]


def tcp_segment(src, dst, sport: int, dport: int, seq: int = 0, ack: int = 0,
                flags: int = 0x10, window: int = 65535, options: bytes = b"",
                payload: bytes = b"", urg: int = 0,
                doff: int | None = None) -> bytes:
    """TCP header (options padded with NOP to 4 bytes) + payload, with a
    correct checksum.  doff overrides the data offset (for malformed
    headers)."""
    options = bytes(options) + b"\x01" * (-len(options) % 4)
    hl = 20 + len(options)
    d = hl // 4 if doff is None else doff
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF,
                      ack & 0xFFFFFFFF, d << 4, flags & 0xFF, window, 0,
                      urg) + options + bytes(payload)
    c = l4_checksum(src, dst, IPPROTO_TCP, seg)
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def tcp_packet(src, dst, sport: int, dport: int, seq: int = 0, ack: int = 0,
               flags: int = 0x10, window: int = 65535, options: bytes = b"",
               payload: bytes = b"", **ipkw) -> bytes:
    """An IPv4/IPv6 TCP packet with correct checksums."""
    return ip_packet(src, dst, IPPROTO_TCP,
                     tcp_segment(src, dst, sport, dport, seq, ack, flags,
                                 window, options, payload), **ipkw)


def udp_packet(src, dst, sport: int, dport: int, payload: bytes,
               **ipkw) -> bytes:
    return ip_packet(src, dst, IPPROTO_UDP,
                     udp_segment(src, dst, sport, dport, payload), **ipkw)


def verify_checksums(ip: bytes) -> bool:
    """True if the IPv4 header checksum (if IPv4) and the TCP/UDP checksum of
    an unfragmented packet without IPv6 extension headers are right."""
    info = parse_ip(ip)
    if info.version == 4 and checksum(ip[:info.hdr_len]) != 0:
        return False
    if info.proto not in (IPPROTO_TCP, IPPROTO_UDP) or info.fragment:
        return True
    seg = info.payload
    if info.proto == IPPROTO_UDP and info.version == 4 and seg[6:8] == b"\0\0":
        return True
    return checksum(pseudo_header(info.src, info.dst, info.proto, len(seg))
                    + seg) == 0


# ---- parsing --------------------------------------------------------------

@dataclass(frozen=True)
class IpInfo:
    version: int
    src: ipaddress.IPv4Address | ipaddress.IPv6Address
    dst: ipaddress.IPv4Address | ipaddress.IPv6Address
    proto: int           # upper-layer protocol (after IPv6 extension headers)
    hdr_len: int         # bytes before the upper-layer header
    payload: bytes       # the upper-layer bytes (trimmed to the IP length)
    fragment: bool       # any fragment (MF set or offset != 0)


_V6_EXT = (0, 43, 60)


def parse_ip(ip: bytes) -> IpInfo:
    """Parse an IPv4/IPv6 header (skipping IPv6 hop-by-hop, routing, dstopts
    and fragment headers).  Trailing bytes beyond the IP length (Ethernet
    padding) are dropped."""
    ip = bytes(ip)
    if not ip:
        raise FormatError("empty packet")
    v = ip[0] >> 4
    if v == 4:
        if len(ip) < 20:
            raise FormatError("truncated IPv4 header")
        ihl = (ip[0] & 15) * 4
        tl = int.from_bytes(ip[2:4], "big")
        if ihl < 20 or len(ip) < ihl or tl < ihl:
            raise FormatError("bad IPv4 header")
        fo = int.from_bytes(ip[6:8], "big")
        end = min(tl, len(ip))
        return IpInfo(4, ipaddress.IPv4Address(ip[12:16]),
                      ipaddress.IPv4Address(ip[16:20]), ip[9], ihl,
                      ip[ihl:end], bool(fo & 0x3FFF))
    if v == 6:
        if len(ip) < 40:
            raise FormatError("truncated IPv6 header")
        end = min(40 + int.from_bytes(ip[4:6], "big"), len(ip))
        nh, off, frag = ip[6], 40, False
        while nh in _V6_EXT or nh == 44:
            if off + 8 > end:
                raise FormatError("truncated IPv6 extension header")
            if nh == 44:
                fo = int.from_bytes(ip[off + 2:off + 4], "big")
                frag = frag or bool(fo & 0xFFF9)
                nh, off = ip[off], off + 8
            else:
                nh, off = ip[off], off + (ip[off + 1] + 1) * 8
        if off > end:
            raise FormatError("truncated IPv6 extension header")
        return IpInfo(6, ipaddress.IPv6Address(ip[8:24]),
                      ipaddress.IPv6Address(ip[24:40]), nh, off, ip[off:end],
                      frag)
    raise FormatError(f"IP version {v}")


def wrap_esp(src, dst, esp: bytes, udp_encap: bool = False,
             sport: int = NAT_T_PORT, dport: int = NAT_T_PORT, **ipkw) -> bytes:
    """Outer IP header (+ UDP for NAT-T, checksum 0 over IPv4, computed over
    IPv6) around an ESP packet."""
    if udp_encap:
        return ip_packet(src, dst, IPPROTO_UDP,
                         udp_segment(src, dst, sport, dport, esp,
                                     zero_checksum=True), **ipkw)
    return ip_packet(src, dst, IPPROTO_ESP, esp, **ipkw)


@dataclass(frozen=True)
class EspFound:
    outer: IpInfo
    udp_encap: bool
    esp: bytes          # from SPI to the end of the IP payload

    @property
    def spi(self) -> int:
        return int.from_bytes(self.esp[:4], "big")

    @property
    def seq(self) -> int:
        return int.from_bytes(self.esp[4:8], "big")


def find_esp(ip: bytes, nat_t_ports=(NAT_T_PORT,)) -> EspFound | None:
    """The ESP packet in an IP packet: IP proto 50, or UDP with a source or
    destination port in nat_t_ports whose payload is not a NAT-keepalive
    (1 byte 0xff) or IKE (first 4 bytes zero).  None if there is none, or if
    the outer packet is a fragment."""
    try:
        info = parse_ip(ip)
    except FormatError:
        return None
    if info.fragment:
        return None
    if info.proto == IPPROTO_ESP:
        return EspFound(info, False, info.payload) if len(info.payload) >= 8 else None
    if info.proto == IPPROTO_UDP and len(info.payload) >= 8:
        sport, dport, ulen = struct.unpack("!HHH", info.payload[:6])
        if sport not in nat_t_ports and dport not in nat_t_ports:
            return None
        body = info.payload[8:max(ulen, 8)] if ulen >= 8 else info.payload[8:]
        if len(body) < 8 or body[:4] == b"\0\0\0\0":
            return None
        return EspFound(info, True, body)
    return None
