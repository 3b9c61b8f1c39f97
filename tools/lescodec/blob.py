"""LES key blobs (protocol.md section 1) and PEP-origin keys (section 5).

A blob is the "key" of an rfc4106(gcm(aes)) xfrm SA:

    "LESK" | ver (1) | role (1) | keylen (1) | flags (1) | pep_id (4)
           | K2 || salt2 | [K1 || salt1  (endpoint only)]

Throughout lescodec a zone key is passed as one bytes object, the AES key
followed by its 4-byte RFC 4106 salt ("keysalt", keylen + 4 bytes).
"""

from __future__ import annotations

import enum
import hashlib
import hmac
from dataclasses import dataclass

from .errors import FormatError

MAGIC = b"LESK"
VERSION = 1
HDR_LEN = 12
SALT_LEN = 4
KEY_LENS = (16, 24, 32)
RFC4106_KEY_LENS = tuple(k + SALT_LEN for k in KEY_LENS)  # 20, 28, 36

KDF_SALT = b"LES v1 pep-origin"  # 17 bytes, no terminating NUL


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


class BlobKeyError(BlobError):
    """build_blob() was given key material of the wrong size or kind."""

    field = "key"


# ---- the blob ---------------------------------------------------------------

@dataclass(frozen=True)
class Blob:
    role: Role
    keylen: int
    pep_id: int
    k2salt: bytes                 # K2 || salt2 (keylen + 4 bytes)
    k1salt: bytes | None = None   # K1 || salt1, endpoint only

    def to_bytes(self) -> bytes:
        return build_blob(self.role, self.k2salt, self.k1salt, self.pep_id)

    def header_key(self, spi: int | None = None) -> bytes:
        """Key||salt the SA uses for the header zone.

        For the PEP-origin roles this is the derived key, which needs the
        SA's SPI; for the others it is K2||salt2."""
        if self.role in PEP_ORIGIN_ROLES:
            if spi is None:
                raise ValueError("a PEP-origin SA's key depends on its SPI")
            return derive_pep_origin(self.k2salt, spi, self.pep_id)
        return self.k2salt


def blob_len(role: Role | int, keylen: int) -> int:
    return HDR_LEN + (keylen + SALT_LEN) * (2 if role == Role.ENDPOINT else 1)


def is_les_blob(key: bytes) -> bool:
    """Does the kernel treat this rfc4106 "key" as an LES blob?"""
    return len(key) not in RFC4106_KEY_LENS and key[:4] == MAGIC


def _keylen_of(keysalt: bytes, what: str) -> int:
    n = len(keysalt) - SALT_LEN
    if n not in KEY_LENS:
        raise BlobKeyError(f"{what} must be an AES key of 16, 24 or 32 bytes "
                           f"followed by a 4-byte salt, got {len(keysalt)} bytes")
    return n


def build_blob(role: Role | int | str, k2salt: bytes,
               k1salt: bytes | None = None, pep_id: int = 0) -> bytes:
    """Build a blob.  k1salt is required for, and only allowed with, the
    endpoint role; pep_id must be 0 unless the role is a PEP-origin one."""
    role = Role.parse(role)
    keylen = _keylen_of(bytes(k2salt), "K2||salt2")
    if role == Role.ENDPOINT:
        if k1salt is None:
            raise BlobKeyError("the endpoint role needs K1||salt1")
        if _keylen_of(bytes(k1salt), "K1||salt1") != keylen:
            raise BlobKeyError("K1 and K2 must have the same length")
    elif k1salt is not None:
        raise BlobKeyError(f"role {role.label} carries no K1")
    if not 0 <= pep_id <= 0xFFFFFFFF:
        raise BlobPepIdError("pep_id must fit in 32 bits")
    if pep_id and role not in PEP_ORIGIN_ROLES:
        raise BlobPepIdError(f"role {role.label} must have pep_id 0")
    out = (MAGIC + bytes((VERSION, role, keylen, 0)) + pep_id.to_bytes(4, "big")
           + bytes(k2salt) + (bytes(k1salt) if role == Role.ENDPOINT else b""))
    assert len(out) == blob_len(role, keylen)
    return out


def parse_blob(data: bytes) -> Blob:
    """Parse and validate a blob; raises a BlobError subclass naming the field.

    Fields are checked in wire order: length of the fixed part, magic,
    version, role, keylen, flags, then total length, then pep_id."""
    data = bytes(data)
    if len(data) < HDR_LEN:
        raise BlobShortError(f"LES key blob is {len(data)} bytes, shorter "
                             f"than its {HDR_LEN}-byte header")
    if data[:4] != MAGIC:
        raise BlobMagicError("LES key blob has a bad magic")
    ver, role, keylen, flags = data[4], data[5], data[6], data[7]
    if ver != VERSION:
        raise BlobVersionError(f"LES key blob version {ver} is not supported")
    if role not in Role._value2member_map_:
        raise BlobRoleError(f"LES key blob role {role} is unknown")
    role = Role(role)
    if keylen not in KEY_LENS:
        raise BlobKeyLenError(f"LES key blob key length {keylen} is not "
                              "16, 24 or 32")
    if flags:
        raise BlobFlagsError(f"LES key blob flags 0x{flags:02x}: reserved "
                             "bits set")
    want = blob_len(role, keylen)
    if len(data) != want:
        raise BlobLengthError(f"LES key blob is {len(data)} bytes; role "
                              f"{role.label} with keylen {keylen} needs {want}")
    pep_id = int.from_bytes(data[8:12], "big")
    if pep_id and role not in PEP_ORIGIN_ROLES:
        raise BlobPepIdError(f"LES key blob role {role.label} must have "
                             f"pep_id 0, has {pep_id}")
    z = keylen + SALT_LEN
    k2 = data[HDR_LEN:HDR_LEN + z]
    k1 = data[HDR_LEN + z:HDR_LEN + 2 * z] if role == Role.ENDPOINT else None
    return Blob(role, keylen, pep_id, k2, k1)


# ---- PEP-origin key derivation (section 5) --------------------------------

def derive_pep_origin(k2_and_salt: bytes, spi: int, pep_id: int) -> bytes:
    """K_po || salt_po for SA `spi` of PEP `pep_id`.

    PRK = HMAC-SHA256(key="LES v1 pep-origin", msg=K2||salt2)   (HKDF-Extract)
    OKM = HKDF-Expand(PRK, info=spi(4, BE)||pep_id(4, BE), L=keylen+4)
    """
    keylen = _keylen_of(bytes(k2_and_salt), "K2||salt2")
    if not 0 <= spi <= 0xFFFFFFFF or not 0 <= pep_id <= 0xFFFFFFFF:
        raise ValueError("spi and pep_id are 32-bit values")
    info = spi.to_bytes(4, "big") + pep_id.to_bytes(4, "big")
    try:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.hmac import HMAC
        from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

        h = HMAC(KDF_SALT, hashes.SHA256())
        h.update(bytes(k2_and_salt))
        prk = h.finalize()
        return HKDFExpand(hashes.SHA256(), keylen + SALT_LEN, info).derive(prk)
    except ImportError:  # pragma: no cover - same computation with hashlib
        prk = hmac.new(KDF_SALT, bytes(k2_and_salt), hashlib.sha256).digest()
        okm, t, i = b"", b"", 1
        while len(okm) < keylen + SALT_LEN:
            t = hmac.new(prk, t + info + bytes((i,)), hashlib.sha256).digest()
            okm += t
            i += 1
        return okm[:keylen + SALT_LEN]
