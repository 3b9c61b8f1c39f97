"""Exception types of lescodec.

    LesError
     +-- FormatError      malformed input (section 6 "malformed")
     |    +-- BlobError   a bad key blob; one subclass per field (blob.py)
     +-- AuthError        ICV1 or ICV2 wrong (section 6 "auth_failed")
     +-- PolicyError      well formed and authentic, but not allowed here
                          (section 6 "policy"): header-only packet on an
                          endpoint SA, data on a PEP-origin SA, or a
                          header-only packet that section 4 refuses.

AuthError is deliberately *not* a FormatError, so a caller can tell
"someone tampered" from "this is not a well-formed LES packet".
"""


class LesError(Exception):
    """Base class of every lescodec error."""


class FormatError(LesError, ValueError):
    """Malformed packet, header or blob."""


class AuthError(LesError):
    """An AES-GCM tag (ICV1 or ICV2) did not verify."""

    def __init__(self, zone: str, msg: str | None = None):
        self.zone = zone  # "header" (ICV2) or "payload" (ICV1)
        super().__init__(msg or f"{'ICV2' if zone == 'header' else 'ICV1'} "
                         f"({zone} zone) does not verify")


class PolicyError(LesError):
    """Authentic but refused by the role's rules (section 4 / 6)."""

    def __init__(self, msg: str, verdict=None):
        self.verdict = verdict
        super().__init__(msg)
