"""The PDU-level initiator's wire encoding against RFC 3720 B.4 and itself."""

from __future__ import annotations

import io
import struct

import pytest

from iscsi_initiator import chap
from iscsi_initiator.pdu import (
    DigestError,
    Op,
    Pdu,
    decode,
    decode_keys,
    encode_keys,
    login_request,
    scsi_command,
)

# RFC 3720 B.4: an iSCSI READ command PDU and its CRC32C
RFC_READ = bytes.fromhex(
    "01c00000" "00000000" "00000000" "00000000" "14000000" "00000400"
    "00000014" "00000018" "28000000" "00000000" "02000000" "00000000"
)  # fmt: skip


def reader(b: bytes):
    f = io.BytesIO(b)

    def rd(n: int) -> bytes:
        out = f.read(n)
        if len(out) != n:
            raise EOFError
        return out

    return rd


def test_rfc3720_b4_read_command_and_digest() -> None:
    cdb = struct.pack(">BBIBHB", 0x28, 0, 0, 0, 2, 0)
    p = scsi_command(cdb, itt=0x14000000, cmdsn=0x14, expstatsn=0x18, read_len=1024)
    p.flags = 0xC0  # F + R, untagged, as in the RFC's example
    wire = p.encode(hdigest=True)
    assert wire[:48] == RFC_READ
    assert wire[48:] == bytes.fromhex("563a96d9")


@pytest.mark.parametrize("hd", [False, True])
@pytest.mark.parametrize("dd", [False, True])
@pytest.mark.parametrize("dlen", [0, 1, 3, 4, 4097])
def test_roundtrip_with_ahs_padding_digests(hd: bool, dd: bool, dlen: int) -> None:
    p = Pdu()
    p.opcode = Op.DATA_OUT
    p.itt, p.ttt, p.datasn, p.buffer_offset = 7, 9, 3, 8192
    p.ahs = bytes(range(8))
    p.data = bytes(i % 251 for i in range(dlen))
    wire = p.encode(hd, dd)
    assert len(wire) == 48 + 8 + 4 * hd + (dlen + (-dlen % 4) + 4 * dd if dlen else 0)
    q = decode(reader(wire), hd, dd)
    assert (q.opcode, q.itt, q.ttt, q.datasn, q.buffer_offset) == (Op.DATA_OUT, 7, 9, 3, 8192)
    assert q.ahs == p.ahs and q.data == p.data


def test_corrupted_digests_are_detected() -> None:
    p = Pdu()
    p.opcode = Op.NOOP_OUT
    p.data = b"ping"
    wire = bytearray(p.encode(True, True))
    bad_h = bytes(wire[:48]) + bytes([wire[48] ^ 1]) + bytes(wire[49:])
    with pytest.raises(DigestError, match="header digest"):
        decode(reader(bad_h), True, True)
    wire[-1] ^= 0x80
    with pytest.raises(DigestError, match="data digest"):
        decode(reader(bytes(wire)), True, True)


def test_text_keys() -> None:
    data = encode_keys([("HeaderDigest", "CRC32C,None"), ("MaxRecvDataSegmentLength", "8192")])
    assert data == b"HeaderDigest=CRC32C,None\0MaxRecvDataSegmentLength=8192\0"
    assert decode_keys(data) == {"HeaderDigest": "CRC32C,None", "MaxRecvDataSegmentLength": "8192"}


def test_login_request_layout() -> None:
    p = login_request(isid=b"\x80\x12\x34\x56\x00\x01", tsih=0, itt=1, cid=0, cmdsn=1, expstatsn=0,
                      csg=1, nsg=3, transit=True, keys=[("A", "b")])  # fmt: skip
    w = p.encode()
    assert w[0] == 0x43  # immediate + Login
    assert w[1] == 0x80 | 1 << 2 | 3  # T, CSG=1, NSG=3
    assert w[8:14] == b"\x80\x12\x34\x56\x00\x01" and w[48:52] == b"A=b\0"


def test_chap_response_is_md5_of_id_secret_challenge() -> None:
    import hashlib

    r = chap.response(0x2A, b"secret", b"\x01\x02")
    assert r == hashlib.md5(b"\x2asecret\x01\x02").digest()
    assert chap.from_hex(chap.to_hex(r)) == r
    with pytest.raises(ValueError, match="not hex"):
        chap.from_hex("abcd")
