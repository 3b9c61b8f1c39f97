"""LES key blobs (protocol.md section 1), zone keys (section 2.1) and
PEP-origin roots (section 6), wire format version 2.

A blob is the "key" of an rfc4106(gcm(aes)) xfrm SA:

    "LESK" | ver (1) | role (1) | keylen (1) | flags (1) | pep_id (4)
           | key material

    endpoint                        K2 root | K1 root | KP (32)
    pep-view                        K2 root
    pep-origin-in, pep-origin-out   KO root of PEP pep_id

A "root" (and, once derived, a zone key) is passed throughout lescodec as
one bytes object, the AES key followed by its 4-byte salt ("keysalt",
keylen + 4 bytes).  No root is a GCM key: zone_key() binds it to an SA's
SPI and direction.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
from dataclasses import dataclass

from .errors import FormatError

MAGIC = b"LESK"
VERSION = 3
HDR_LEN = 12
SALT_LEN = 4
KEY_LENS = (16, 24, 32)
KP_LEN = 32

FLAG_R2I = 0x01
FLAGS_KNOWN = FLAG_R2I

ZONE_SALT = b"LES v3 zone"              # HKDF salt of the zone keys (2.1)
PEP_ORIGIN_SALT = b"LES v3 pep-origin"  # HKDF salt of the KO roots (6)
ZONE_H, ZONE_P = b"H", b"P"

PEP_ID_MAX = 0xFFFFFFFF


class Role(enum.IntEnum):
    ENDPOINT = 1
    PEP_VIEW = 2
    PEP_ORIGIN_IN = 3
    PEP_ORIGIN_OUT = 4

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")

    @classmethod
    def parse(cls, v: "str | int | Role") -> "Role":
        if isinstance(v, Role):
            return v
        if isinstance(v, int):
            return cls(v)
        s = v.strip().lower().replace("_", "-")
        for r in cls:
            if r.label == s:
                return r
        if s.isdigit():
            return cls(int(s))
        raise ValueError(f"unknown role {v!r}")


PEP_ORIGIN_ROLES = (Role.PEP_ORIGIN_IN, Role.PEP_ORIGIN_OUT)

# Directions a role may be used in (section 1, "Roles and directions").
DIR_IN, DIR_OUT = 1, 2
ROLE_DIRS = {
    Role.ENDPOINT: DIR_IN | DIR_OUT,
    Role.PEP_VIEW: DIR_IN,
    Role.PEP_ORIGIN_IN: DIR_IN,
    Role.PEP_ORIGIN_OUT: DIR_OUT,
}


# ---- errors: one class per malformation -----------------------------------

class BlobError(FormatError):
    """A key blob is malformed.  `field` names the offending field."""

    field = "blob"


class BlobShortError(BlobError):
    field = "length"


class BlobMagicError(BlobError):
    field = "magic"


class BlobVersionError(BlobError):
    field = "version"


class BlobRoleError(BlobError):
    field = "role"


class BlobKeyLenError(BlobError):
    field = "keylen"


class BlobFlagsError(BlobError):
    field = "flags"


class BlobLengthError(BlobError):
    field = "length"


class BlobPepIdError(BlobError):
    field = "pep_id"


class BlobSameKeysError(BlobError):
    """An endpoint blob whose K1 key equals its K2 key."""

    field = "keys"


class BlobKeyError(BlobError):
    """build_blob() was given key material of the wrong size or kind."""

    field = "key"


# ---- HKDF (RFC 5869) and the derivations of sections 2.1 and 6 -------------

def hkdf_sha256(salt: bytes, ikm: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA256 (RFC 5869): Extract with `salt`, Expand with `info`."""
    if not 0 < length <= 255 * 32:
        raise ValueError("HKDF-SHA256 output must be 1 to 8160 bytes")
    prk = hmac.new(bytes(salt), bytes(ikm), hashlib.sha256).digest()
    okm, t, i = b"", b"", 1
    while len(okm) < length:
        t = hmac.new(prk, t + bytes(info) + bytes((i,)), hashlib.sha256).digest()
        okm += t
        i += 1
    return okm[:length]


def _keylen_of(keysalt: bytes, what: str) -> int:
    n = len(keysalt) - SALT_LEN
    if n not in KEY_LENS:
        raise BlobKeyError(f"{what} must be an AES key of 16, 24 or 32 bytes "
                           f"followed by a 4-byte salt, got {len(keysalt)} bytes")
    return n


def zone_info(zone: bytes, spi: int, r2i: bool) -> bytes:
    """HKDF info of a zone key: zone (1) || SPI (4) || dir (1)."""
    zone = bytes(zone)
    if zone not in (ZONE_H, ZONE_P):
        raise ValueError(f"zone must be b'H' or b'P', not {zone!r}")
    if not 0 <= spi <= 0xFFFFFFFF:
        raise ValueError("SPI must be a 32-bit value")
    return zone + spi.to_bytes(4, "big") + bytes((1 if r2i else 0,))


def zone_key(root: bytes, zone: bytes, spi: int, r2i: bool) -> bytes:
    """Section 2.1: the GCM key || salt of one zone of the SA `spi`.

    key || salt = HKDF(salt="LES v3 zone", IKM=root,
                       info=zone || SPI || dir, L=keylen + 4)"""
    root = bytes(root)
    _keylen_of(root, "root")
    return hkdf_sha256(ZONE_SALT, root, zone_info(zone, spi, r2i), len(root))


def pep_origin_info(pep_id: int, r2i: bool) -> bytes:
    if not 1 <= pep_id <= PEP_ID_MAX:
        raise ValueError("pep_id must be 1 to 2^32-1")
    return pep_id.to_bytes(4, "big") + bytes((1 if r2i else 0,))


def pep_origin_root(kp: bytes, pep_id: int, r2i: bool, keylen: int) -> bytes:
    """Section 6: the KO root of PEP `pep_id` on a tunnel direction.

    KO root = HKDF(salt="LES v3 pep-origin", IKM=KP (32),
                   info=pep_id (4) || dir (1), L=keylen + 4)"""
    kp = bytes(kp)
    if len(kp) != KP_LEN:
        raise ValueError(f"KP is {KP_LEN} bytes, got {len(kp)}")
    if keylen not in KEY_LENS:
        raise ValueError("keylen must be 16, 24 or 32")
    return hkdf_sha256(PEP_ORIGIN_SALT, kp, pep_origin_info(pep_id, r2i),
                       keylen + SALT_LEN)


# ---- the blob ---------------------------------------------------------------

@dataclass(frozen=True)
class Blob:
    role: Role
    keylen: int
    r2i: bool
    pep_id: int
    k2: bytes | None = None   # K2 root: endpoint, pep-view
    k1: bytes | None = None   # K1 root: endpoint
    kp: bytes | None = None   # KP (32 bytes): endpoint
    ko: bytes | None = None   # KO root: pep-origin-in / -out

    @property
    def dir(self) -> int:
        """The direction bit: 0 initiator to responder, 1 the reverse."""
        return 1 if self.r2i else 0

    def to_bytes(self) -> bytes:
        return build_blob(self.role, self.keylen, k2=self.k2, k1=self.k1,
                          kp=self.kp, ko=self.ko, pep_id=self.pep_id,
                          r2i=self.r2i)

    def header_root(self) -> bytes:
        return self.ko if self.role in PEP_ORIGIN_ROLES else self.k2

    def header_key(self, spi: int) -> bytes:
        """Key || salt of the header zone of an SA with this SPI (K2 root
        for endpoint and pep-view blobs, KO root for PEP-origin ones)."""
        return zone_key(self.header_root(), ZONE_H, spi, self.r2i)

    def payload_key(self, spi: int) -> bytes | None:
        """Key || salt of the payload zone (endpoint blobs only)."""
        if self.role != Role.ENDPOINT:
            return None
        return zone_key(self.k1, ZONE_P, spi, self.r2i)

    def pep_origin_root(self, pep_id: int) -> bytes:
        """KO root of PEP `pep_id` (endpoint blobs only)."""
        if self.role != Role.ENDPOINT:
            raise ValueError("only an endpoint blob holds KP")
        return pep_origin_root(self.kp, pep_id, self.r2i, self.keylen)


def blob_len(role: Role | int, keylen: int) -> int:
    root = keylen + SALT_LEN
    if role == Role.ENDPOINT:
        return HDR_LEN + 2 * root + KP_LEN
    return HDR_LEN + root


def is_les_blob(key: bytes) -> bool:
    """Does the kernel treat this rfc4106 "key" as an LES blob?  Every key
    that starts with "LESK" is one, whatever its length."""
    return bytes(key[:4]) == MAGIC


def _root(v, keylen: int, what: str) -> bytes:
    v = bytes(v)
    if len(v) != keylen + SALT_LEN:
        raise BlobKeyError(f"{what} root must be {keylen} + 4 bytes for "
                           f"keylen {keylen}, got {len(v)}")
    return v


def build_blob(role: Role | int | str, keylen: int, *, k2: bytes | None = None,
               k1: bytes | None = None, kp: bytes | None = None,
               ko: bytes | None = None, pep_id: int = 0,
               r2i: bool = False) -> bytes:
    """Build a blob.  endpoint: k2, k1, kp; pep-view: k2; PEP-origin roles:
    ko and a pep_id of 1 to 2^32-1.  Anything else raises a BlobError."""
    role = Role.parse(role)
    if keylen not in KEY_LENS:
        raise BlobKeyLenError(f"keylen {keylen} is not 16, 24 or 32")
    given = {"k2": k2, "k1": k1, "kp": kp, "ko": ko}
    need = {Role.ENDPOINT: ("k2", "k1", "kp"), Role.PEP_VIEW: ("k2",),
            Role.PEP_ORIGIN_IN: ("ko",), Role.PEP_ORIGIN_OUT: ("ko",)}[role]
    for name, v in given.items():
        if name in need and v is None:
            raise BlobKeyError(f"role {role.label} needs {name}")
        if name not in need and v is not None:
            raise BlobKeyError(f"role {role.label} carries no {name}")
    if not 0 <= pep_id <= PEP_ID_MAX:
        raise BlobPepIdError("pep_id must fit in 32 bits")
    if role in PEP_ORIGIN_ROLES and pep_id == 0:
        raise BlobPepIdError(f"role {role.label} needs a pep_id of 1 to 2^32-1")
    if role not in PEP_ORIGIN_ROLES and pep_id:
        raise BlobPepIdError(f"role {role.label} must have pep_id 0")
    material = b""
    if role == Role.ENDPOINT:
        k2b, k1b = _root(k2, keylen, "K2"), _root(k1, keylen, "K1")
        kpb = bytes(kp)
        if len(kpb) != KP_LEN:
            raise BlobKeyError(f"KP must be {KP_LEN} bytes, got {len(kpb)}")
        if k1b[:keylen] == k2b[:keylen]:
            raise BlobSameKeysError("K1 and K2 keys are equal")
        material = k2b + k1b + kpb
    elif role == Role.PEP_VIEW:
        material = _root(k2, keylen, "K2")
    else:
        material = _root(ko, keylen, "KO")
    out = (MAGIC + bytes((VERSION, role, keylen, FLAG_R2I if r2i else 0))
           + pep_id.to_bytes(4, "big") + material)
    assert len(out) == blob_len(role, keylen)
    return out


def parse_blob(data: bytes) -> Blob:
    """Parse and validate a blob; raises a BlobError subclass naming the
    field.  Checked in this order: length of the fixed part, magic, version,
    role, keylen, flags, pep_id, total length, K1 key != K2 key."""
    data = bytes(data)
    if len(data) < HDR_LEN:
        raise BlobShortError(f"LES key blob is {len(data)} bytes, shorter "
                             f"than its {HDR_LEN}-byte header")
    if data[:4] != MAGIC:
        raise BlobMagicError("LES key blob has a bad magic")
    ver, role, keylen, flags = data[4], data[5], data[6], data[7]
    if ver != VERSION:
        raise BlobVersionError(f"LES key blob version {ver} is not supported "
                               f"(only {VERSION})")
    if role not in Role._value2member_map_:
        raise BlobRoleError(f"LES key blob role {role} is unknown")
    role = Role(role)
    if keylen not in KEY_LENS:
        raise BlobKeyLenError(f"LES key blob key length {keylen} is not "
                              "16, 24 or 32")
    if flags & ~FLAGS_KNOWN:
        raise BlobFlagsError(f"LES key blob flags 0x{flags:02x}: reserved "
                             "bits set")
    pep_id = int.from_bytes(data[8:12], "big")
    if role in PEP_ORIGIN_ROLES and pep_id == 0:
        raise BlobPepIdError(f"LES key blob role {role.label} needs a "
                             "pep_id, has 0")
    if role not in PEP_ORIGIN_ROLES and pep_id:
        raise BlobPepIdError(f"LES key blob role {role.label} must have "
                             f"pep_id 0, has {pep_id}")
    want = blob_len(role, keylen)
    if len(data) != want:
        raise BlobLengthError(f"LES key blob is {len(data)} bytes; role "
                              f"{role.label} with keylen {keylen} needs {want}")
    z = keylen + SALT_LEN
    m = data[HDR_LEN:]
    r2i = bool(flags & FLAG_R2I)
    if role == Role.ENDPOINT:
        k2, k1, kp = m[:z], m[z:2 * z], m[2 * z:]
        if k1[:keylen] == k2[:keylen]:
            raise BlobSameKeysError("LES key blob: K1 and K2 keys are equal")
        return Blob(role, keylen, r2i, pep_id, k2=k2, k1=k1, kp=kp)
    if role == Role.PEP_VIEW:
        return Blob(role, keylen, r2i, pep_id, k2=m)
    return Blob(role, keylen, r2i, pep_id, ko=m)


# ---- what an endpoint operator hands out (section 1, 6) ---------------------

def _endpoint(endpoint_blob: bytes) -> Blob:
    b = parse_blob(endpoint_blob)
    if b.role != Role.ENDPOINT:
        raise ValueError(f"need an endpoint blob, got {b.role.label}")
    return b


def pep_view_blob(endpoint_blob: bytes) -> bytes:
    b = _endpoint(endpoint_blob)
    return build_blob(Role.PEP_VIEW, b.keylen, k2=b.k2, r2i=b.r2i)


def pep_origin_ko(endpoint_blob: bytes, pep_id: int) -> bytes:
    """The KO root of PEP `pep_id` (what its in and out blobs share)."""
    return _endpoint(endpoint_blob).pep_origin_root(pep_id)


def pep_origin_blob(endpoint_blob: bytes, pep_id: int,
                    role: Role | int | str) -> bytes:
    """The pep-origin-in or pep-origin-out blob of PEP `pep_id`."""
    role = Role.parse(role)
    if role not in PEP_ORIGIN_ROLES:
        raise ValueError("role must be pep-origin-in or pep-origin-out")
    b = _endpoint(endpoint_blob)
    return build_blob(role, b.keylen, ko=b.pep_origin_root(pep_id),
                      pep_id=pep_id, r2i=b.r2i)


def derive_blobs(endpoint_blob: bytes, pep_ids) -> dict:
    """{"pep-view": pep-view blob, "pep-origin": {pep_id: KO root}}.

    The pep-origin entries are the role-neutral material (the KO root,
    keylen + 4 bytes) shared by that PEP's pep-origin-in and pep-origin-out
    blobs; pep_origin_blob() wraps it in either."""
    b = _endpoint(endpoint_blob)
    return {"pep-view": pep_view_blob(endpoint_blob),
            "pep-origin": {int(p): b.pep_origin_root(int(p)) for p in pep_ids}}
