"""CHAP (RFC 1994) with MD5 as iSCSI uses it (RFC 7143 12.1.3)."""

from __future__ import annotations

import hashlib
import secrets


def response(ident: int, secret: bytes, challenge: bytes) -> bytes:
    """CHAP_R = MD5(CHAP_I || secret || CHAP_C)."""
    return hashlib.md5(bytes([ident & 0xFF]) + secret + challenge).digest()


def to_hex(b: bytes) -> str:
    return "0x" + b.hex()


def from_hex(s: str) -> bytes:
    if s[:2].lower() != "0x":
        raise ValueError(f"CHAP value {s!r} is not hex-encoded (0x...)")
    return bytes.fromhex(s[2:])


def new_challenge(n: int = 16) -> tuple[int, bytes]:
    return secrets.randbelow(256), secrets.token_bytes(n)
