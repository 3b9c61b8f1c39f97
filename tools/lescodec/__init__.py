"""lescodec: reference codec for the Layered ESP (LES) wire format.

Written from docs/protocol.md, independently of the kernel's C code, to
check les.ko byte for byte.  Modules:

    blob    key blobs (section 1) and PEP-origin key derivation (section 5)
    zone    header-chain walk (3), seal/open of both zones (2), header-only
            packets and their acceptance rules (4)
    packet  IPv4/IPv6/UDP/TCP building and parsing, ESP in IP / UDP 4500
    pcap    classic libpcap read/write
    errors  FormatError / AuthError / PolicyError

Run `python3 -m lescodec --help` for the command-line tool.
"""

from .errors import AuthError, FormatError, LesError, PolicyError
from .blob import (Blob, BlobError, Role, build_blob, derive_pep_origin,
                   is_les_blob, parse_blob)
from .zone import (Chain, PoVerdict, hdr_chain, open_full, open_header_only,
                   open_headers, parse_layout, pep_origin_check, seal,
                   seal_header_only, seal_raw)

__all__ = [
    "AuthError", "FormatError", "LesError", "PolicyError",
    "Blob", "BlobError", "Role", "build_blob", "derive_pep_origin",
    "is_les_blob", "parse_blob",
    "Chain", "PoVerdict", "hdr_chain", "open_full", "open_header_only",
    "open_headers", "parse_layout", "pep_origin_check", "seal",
    "seal_header_only", "seal_raw",
]
