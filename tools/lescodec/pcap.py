"""Classic libpcap files: read (either byte order, microsecond or nanosecond
magic) and write, with link types EN10MB (1), RAW (101), LINUX_SLL (113)
and LINUX_SLL2 (276) (also IPV4 228 / IPV6 229 when reading).

    for ts, ip in PcapReader("x.pcap"):      # IP packets only
        ...
    with PcapWriter("y.pcap", linktype=LINKTYPE_RAW) as w:
        w.write(ip, ts)

pcapng files are recognised and refused with a clear error.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator

from .errors import FormatError

LINKTYPE_EN10MB = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
LINKTYPES = {"en10mb": LINKTYPE_EN10MB, "ether": LINKTYPE_EN10MB,
             "raw": LINKTYPE_RAW, "sll": LINKTYPE_LINUX_SLL,
             "linux_sll": LINKTYPE_LINUX_SLL, "sll2": LINKTYPE_LINUX_SLL2,
             "linux_sll2": LINKTYPE_LINUX_SLL2}

MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
PCAPNG_MAGIC = 0x0A0D0D0A

ETH_P_IP, ETH_P_IPV6 = 0x0800, 0x86DD
_VLAN = (0x8100, 0x88A8, 0x9100)


class PcapError(FormatError):
    pass


def _ethertype_for(ip: bytes) -> int:
    return ETH_P_IPV6 if ip and ip[0] >> 4 == 6 else ETH_P_IP


# Linux cooked captures: (header length, offset of the protocol field).
_COOKED = {LINKTYPE_LINUX_SLL: (16, 14), LINKTYPE_LINUX_SLL2: (20, 0)}


def frame_to_ip(linktype: int, frame: bytes) -> bytes | None:
    """The IP packet in a link-layer frame, or None if it carries no IP."""
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, 12, 14):
        ip = frame
    elif linktype == LINKTYPE_EN10MB:
        if len(frame) < 14:
            return None
        off, et = 14, int.from_bytes(frame[12:14], "big")
        while et in _VLAN and len(frame) >= off + 4:
            et = int.from_bytes(frame[off + 2:off + 4], "big")
            off += 4
        if et not in (ETH_P_IP, ETH_P_IPV6):
            return None
        ip = frame[off:]
    elif linktype in _COOKED:
        hlen, et_off = _COOKED[linktype]
        if len(frame) < hlen:
            return None
        if int.from_bytes(frame[et_off:et_off + 2], "big") not in (ETH_P_IP, ETH_P_IPV6):
            return None
        ip = frame[hlen:]
    else:
        raise PcapError(f"unsupported link type {linktype}")
    if not ip or ip[0] >> 4 not in (4, 6):
        return None
    return bytes(ip)


def ip_to_frame(linktype: int, ip: bytes) -> bytes:
    """Wrap an IP packet in a frame of the link type (dummy addresses)."""
    et = _ethertype_for(ip)
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6):
        return bytes(ip)
    if linktype == LINKTYPE_EN10MB:
        return (b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01"
                + et.to_bytes(2, "big") + bytes(ip))
    if linktype == LINKTYPE_LINUX_SLL:
        # packet type 4 (outgoing), ARPHRD_ETHER, 6-byte address
        return struct.pack("!HHH8sH", 4, 1, 6, b"\x02\0\0\0\0\x01", et) + bytes(ip)
    if linktype == LINKTYPE_LINUX_SLL2:
        return struct.pack("!HHIHBB8s", et, 0, 1, 1, 4, 6,
                           b"\x02\0\0\0\0\x01") + bytes(ip)
    raise PcapError(f"unsupported link type {linktype}")


@dataclass(frozen=True)
class Record:
    ts_sec: int
    ts_ns: int          # fraction in nanoseconds (whatever the file's unit)
    orig_len: int
    frame: bytes

    @property
    def ts(self) -> float:
        return self.ts_sec + self.ts_ns / 1e9


class PcapReader:
    """Iterating yields (timestamp seconds as float, ip_bytes) for every
    record that carries IPv4/IPv6; records() yields every Record."""

    def __init__(self, src: "str | BinaryIO"):
        self._own = isinstance(src, (str, bytes)) or hasattr(src, "__fspath__")
        self.f = open(src, "rb") if self._own else src
        hdr = self.f.read(24)
        if len(hdr) < 24:
            raise PcapError("file too short for a pcap header")
        for bo in ("<", ">"):
            magic = struct.unpack(bo + "I", hdr[:4])[0]
            if magic in (MAGIC_US, MAGIC_NS):
                break
        else:
            if struct.unpack("<I", hdr[:4])[0] == PCAPNG_MAGIC:
                raise PcapError("pcapng is not supported; convert with "
                                "'editcap -F pcap'")
            raise PcapError(f"not a pcap file (magic {hdr[:4].hex()})")
        self.byteorder = bo
        self.nanosecond = magic == MAGIC_NS
        (self.version_major, self.version_minor, _zone, _sigfigs,
         self.snaplen, network) = struct.unpack(bo + "HHiIII", hdr[4:])
        self.linktype = network & 0x0FFFFFFF   # upper bits: FCS length

    def records(self) -> Iterator[Record]:
        bo = self.byteorder
        while True:
            rh = self.f.read(16)
            if not rh:
                return
            if len(rh) < 16:
                raise PcapError("truncated record header")
            sec, frac, incl, orig = struct.unpack(bo + "IIII", rh)
            data = self.f.read(incl)
            if len(data) < incl:
                raise PcapError("truncated record")
            yield Record(sec, frac if self.nanosecond else frac * 1000, orig,
                         data)

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        for r in self.records():
            ip = frame_to_ip(self.linktype, r.frame)
            if ip is not None:
                yield r.ts, ip

    def close(self):
        if self._own:
            self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_pcap(path) -> list[tuple[float, bytes]]:
    with PcapReader(path) as r:
        return list(r)


class PcapWriter:
    def __init__(self, dst: "str | BinaryIO", linktype: int = LINKTYPE_RAW,
                 nanosecond: bool = False, big_endian: bool = False,
                 snaplen: int = 262144, append: bool = False):
        """append: add to an existing non-empty file (path only), keeping its
        link type, byte order and time unit."""
        self._own = isinstance(dst, (str, bytes)) or hasattr(dst, "__fspath__")
        if append and self._own and os.path.exists(dst) and os.path.getsize(dst):
            with PcapReader(dst) as r:
                linktype, nanosecond = r.linktype, r.nanosecond
                big_endian, snaplen = r.byteorder == ">", r.snaplen
        else:
            append = False
        self.f = open(dst, "ab" if append else "wb") if self._own else dst
        self.linktype = linktype
        self.nanosecond = nanosecond
        self.bo = ">" if big_endian else "<"
        self.snaplen = snaplen
        ip_to_frame(linktype, b"\x45")      # refuse unknown link types now
        if append:
            return
        self.f.write(struct.pack(self.bo + "IHHiIII",
                                 MAGIC_NS if nanosecond else MAGIC_US, 2, 4, 0,
                                 0, snaplen, linktype))

    def write(self, ip: bytes, ts: float | None = None, *,
              ts_ns: int | None = None) -> None:
        """Write one IP packet; ts in seconds or ts_ns in nanoseconds
        (default: now)."""
        if ts_ns is None:
            if ts is None:
                ts_ns = time.time_ns()
            else:           # split first: ts * 1e9 would lose the fraction
                sec = int(ts // 1)
                ts_ns = sec * 1_000_000_000 + round((ts - sec) * 1e9)
        sec, ns = divmod(ts_ns, 1_000_000_000)
        frac = ns if self.nanosecond else ns // 1000
        frame = ip_to_frame(self.linktype, ip)
        incl = frame[:self.snaplen]
        self.f.write(struct.pack(self.bo + "IIII", sec, frac, len(incl),
                                 len(frame)) + incl)

    def close(self):
        if self._own:
            self.f.close()
        else:
            self.f.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_pcap(path, packets: Iterable, linktype: int = LINKTYPE_RAW,
               **kw) -> None:
    """packets: IP byte strings, or (timestamp, ip_bytes) pairs."""
    with PcapWriter(path, linktype, **kw) as w:
        for i, p in enumerate(packets):
            if isinstance(p, (bytes, bytearray)):
                w.write(p, float(i))
            else:
                w.write(p[1], p[0])
