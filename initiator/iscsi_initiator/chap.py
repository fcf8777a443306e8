"""CHAP (RFC 1994) as iSCSI uses it (RFC 7143 12.1.3), with the hash
algorithms of the IANA PPP registry that LIO and open-iscsi implement:
MD5 (5), SHA-1 (6), SHA-256 (7), SHA3-256 (8)."""

from __future__ import annotations

import hashlib
import secrets

MD5, SHA1, SHA256, SHA3_256 = 5, 6, 7, 8
# CHAP_A value -> hashlib name
ALGORITHMS = {MD5: "md5", SHA1: "sha1", SHA256: "sha256", SHA3_256: "sha3_256"}


def digest_size(alg: int) -> int:
    return hashlib.new(_name(alg)).digest_size


def _name(alg: int) -> str:
    try:
        return ALGORITHMS[alg]
    except KeyError:
        raise ValueError(f"CHAP_A {alg} is none of {sorted(ALGORITHMS)}") from None


def response(ident: int, secret: bytes, challenge: bytes, alg: int = MD5) -> bytes:
    """CHAP_R = H(CHAP_I || secret || CHAP_C), H the algorithm CHAP_A chose."""
    return hashlib.new(_name(alg), bytes([ident & 0xFF]) + secret + challenge).digest()


def to_hex(b: bytes) -> str:
    return "0x" + b.hex()


def from_hex(s: str) -> bytes:
    if s[:2].lower() != "0x":
        raise ValueError(f"CHAP value {s!r} is not hex-encoded (0x...)")
    return bytes.fromhex(s[2:])


def new_challenge(n: int = 16) -> tuple[int, bytes]:
    return secrets.randbelow(256), secrets.token_bytes(n)
