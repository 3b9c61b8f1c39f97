"""lescodec: reference codec for the Layered ESP (LES) wire format,
version 2.

Written from docs/protocol.md, independently of the kernel's C code, to
check les.ko byte for byte.  Modules:

    blob    key blobs (section 1), zone keys (2.1), PEP-origin roots (6)
    zone    what enters the header zone (4), seal/open of both zones (2.2,
            3), header-only packets and their acceptance rules (5)
    packet  IPv4/IPv6/UDP/TCP building and parsing, ESP in IP / UDP 4500
    pcap    classic libpcap read/write
    errors  FormatError / AuthError / PolicyError

Run `python3 -m lescodec --help` for the command-line tool.
"""

from .errors import AuthError, FormatError, LesError, PolicyError
from .blob import (Blob, BlobError, Role, build_blob, derive_blobs,
                   hkdf_sha256, is_les_blob, parse_blob, pep_origin_blob,
                   pep_origin_root, zone_key)
from .zone import (HzPlan, Opened, OpenedHeaders, PoVerdict, hz_plan,
                   moved_len, open_full, open_header_only, open_headers,
                   peek_len, pep_origin_check, replay_seq, restore, seal,
                   seal_header_only, seal_raw)

__all__ = [
    "AuthError", "FormatError", "LesError", "PolicyError",
    "Blob", "BlobError", "Role", "build_blob", "derive_blobs", "hkdf_sha256",
    "is_les_blob", "parse_blob", "pep_origin_blob", "pep_origin_root",
    "zone_key",
    "HzPlan", "Opened", "OpenedHeaders", "PoVerdict", "hz_plan", "moved_len",
    "open_full",
    "open_header_only", "open_headers", "peek_len", "pep_origin_check",
    "replay_seq", "restore", "seal", "seal_header_only", "seal_raw",
]
