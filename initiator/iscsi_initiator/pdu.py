"""iSCSI PDUs on the wire (RFC 7143 section 11): encode, decode, digests.

A Pdu is the 48-byte BHS plus AHS and data; fields are read and written
through typed helpers so that tests can also build PDUs no conforming
initiator would send (raw mode). CRC32C comes from the ``crc32c`` package.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import crc32c as _crc32c

BHS_LEN = 48
RSVD_TAG = 0xFFFFFFFF


class Op(enum.IntEnum):
    NOOP_OUT = 0x00
    SCSI_CMD = 0x01
    TMF_REQ = 0x02
    LOGIN_REQ = 0x03
    TEXT_REQ = 0x04
    DATA_OUT = 0x05
    LOGOUT_REQ = 0x06
    SNACK = 0x10
    NOOP_IN = 0x20
    SCSI_RSP = 0x21
    TMF_RSP = 0x22
    LOGIN_RSP = 0x23
    TEXT_RSP = 0x24
    DATA_IN = 0x25
    LOGOUT_RSP = 0x26
    R2T = 0x31
    ASYNC = 0x32
    REJECT = 0x3F


F_FINAL = 0x80
F_IMMEDIATE = 0x40  # byte 0
# SCSI Command flags (byte 1)
F_READ = 0x40
F_WRITE = 0x20
ATTR_SIMPLE = 0x01
# Data-In flags (byte 1)
F_DATAIN_STATUS = 0x01
# Login flags (byte 1)
F_LOGIN_TRANSIT = 0x80
F_LOGIN_CONTINUE = 0x40


def digest(data: bytes) -> bytes:
    """iSCSI CRC32C digest as it goes on the wire (little-endian)."""
    return struct.pack("<I", _crc32c.crc32c(data))


def pad_len(n: int) -> int:
    return -n % 4


@dataclass
class Pdu:
    """One PDU. ``bhs`` is always 48 bytes; the length fields are filled
    from ``ahs``/``data`` by encode() unless ``raw_lengths`` is set."""

    bhs: bytearray = field(default_factory=lambda: bytearray(BHS_LEN))
    ahs: bytes = b""
    data: bytes = b""
    raw_lengths: bool = False

    # -- generic fields -------------------------------------------------
    @property
    def opcode(self) -> int:
        return self.bhs[0] & 0x3F

    @opcode.setter
    def opcode(self, op: int) -> None:
        self.bhs[0] = (self.bhs[0] & 0xC0) | (op & 0x3F)

    @property
    def immediate(self) -> bool:
        return bool(self.bhs[0] & F_IMMEDIATE)

    @immediate.setter
    def immediate(self, v: bool) -> None:
        self.bhs[0] = (self.bhs[0] & ~F_IMMEDIATE & 0xFF) | (F_IMMEDIATE if v else 0)

    @property
    def flags(self) -> int:
        return self.bhs[1]

    @flags.setter
    def flags(self, v: int) -> None:
        self.bhs[1] = v & 0xFF

    @property
    def final(self) -> bool:
        return bool(self.bhs[1] & F_FINAL)

    def u8(self, off: int) -> int:
        return self.bhs[off]

    def u16(self, off: int) -> int:
        return int(struct.unpack_from(">H", self.bhs, off)[0])

    def set_u16(self, off: int, v: int) -> None:
        struct.pack_into(">H", self.bhs, off, v & 0xFFFF)

    def u32(self, off: int) -> int:
        return int(struct.unpack_from(">I", self.bhs, off)[0])

    def set_u32(self, off: int, v: int) -> None:
        struct.pack_into(">I", self.bhs, off, v & 0xFFFFFFFF)

    @property
    def ahs_len(self) -> int:
        return self.bhs[4] * 4

    @property
    def dlen(self) -> int:
        return int.from_bytes(self.bhs[5:8], "big")

    @dlen.setter
    def dlen(self, n: int) -> None:
        self.bhs[5:8] = n.to_bytes(3, "big")

    @property
    def lun(self) -> int:
        return int.from_bytes(self.bhs[8:16], "big")

    @lun.setter
    def lun(self, v: int) -> None:
        self.bhs[8:16] = v.to_bytes(8, "big")

    @property
    def itt(self) -> int:
        return self.u32(16)

    @itt.setter
    def itt(self, v: int) -> None:
        self.set_u32(16, v)

    # Named fields common to several opcodes (RFC 7143 11.x offsets)
    ttt = property(lambda s: s.u32(20), lambda s, v: s.set_u32(20, v))
    cmdsn = property(lambda s: s.u32(24), lambda s, v: s.set_u32(24, v))
    statsn = property(lambda s: s.u32(24), lambda s, v: s.set_u32(24, v))
    expstatsn = property(lambda s: s.u32(28), lambda s, v: s.set_u32(28, v))
    expcmdsn = property(lambda s: s.u32(28), lambda s, v: s.set_u32(28, v))
    maxcmdsn = property(lambda s: s.u32(32), lambda s, v: s.set_u32(32, v))
    datasn = property(lambda s: s.u32(36), lambda s, v: s.set_u32(36, v))
    buffer_offset = property(lambda s: s.u32(40), lambda s, v: s.set_u32(40, v))
    residual = property(lambda s: s.u32(44), lambda s, v: s.set_u32(44, v))
    desired_length = property(lambda s: s.u32(44), lambda s, v: s.set_u32(44, v))

    # -- wire -----------------------------------------------------------
    def encode(self, hdigest: bool = False, ddigest: bool = False) -> bytes:
        if not self.raw_lengths:
            if len(self.ahs) % 4:
                raise ValueError("AHS length must be a multiple of 4")
            self.bhs[4] = len(self.ahs) // 4
            self.dlen = len(self.data)
        hdr = bytes(self.bhs) + self.ahs
        out = hdr + (digest(hdr) if hdigest else b"")
        if self.data:
            body = self.data + bytes(pad_len(len(self.data)))
            out += body + (digest(body) if ddigest else b"")
        return out

    def __repr__(self) -> str:
        try:
            name = Op(self.opcode).name
        except ValueError:
            name = f"0x{self.opcode:02x}"
        return f"<Pdu {name} itt=0x{self.itt:08x} dlen={self.dlen} flags=0x{self.flags:02x}>"


class DigestError(Exception):
    """A received PDU failed its header or data digest."""


def decode(rd: Callable[[int], bytes], hdigest: bool = False, ddigest: bool = False) -> Pdu:
    """Read one PDU with ``rd(n) -> bytes`` (exactly n bytes or raise)."""
    bhs = bytearray(rd(BHS_LEN))
    p = Pdu(bhs=bhs)
    p.ahs = rd(p.ahs_len) if p.ahs_len else b""
    if hdigest:
        d = rd(4)
        if d != digest(bytes(bhs) + p.ahs):
            raise DigestError(f"header digest mismatch on {p!r}")
    if p.dlen:
        body = rd(p.dlen + pad_len(p.dlen))
        if ddigest:
            d = rd(4)
            if d != digest(body):
                raise DigestError(f"data digest mismatch on {p!r}")
        p.data = body[: p.dlen]
    p.raw_lengths = True
    return p


# -- text keys ---------------------------------------------------------------
def encode_keys(keys: dict[str, str] | list[tuple[str, str]]) -> bytes:
    items = keys.items() if isinstance(keys, dict) else keys
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in items)


def decode_keys(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for kv in data.split(b"\0"):
        if kv:
            k, _, v = kv.decode(errors="replace").partition("=")
            out[k] = v
    return out


# -- builders for what an initiator sends -------------------------------------
def scsi_command(
    cdb: bytes, *, itt: int, cmdsn: int, expstatsn: int, lun: int = 0,
    read_len: int = 0, write_len: int = 0, final: bool = True, data: bytes = b"",
) -> Pdu:  # fmt: skip
    if len(cdb) > 16:
        raise ValueError("CDBs over 16 bytes need an extended-CDB AHS")
    p = Pdu()
    p.opcode = Op.SCSI_CMD
    p.flags = (F_FINAL if final else 0) | (F_READ if read_len else 0) | (F_WRITE if write_len else 0) | ATTR_SIMPLE
    p.lun = lun << 48
    p.itt = itt
    p.set_u32(20, read_len or write_len)  # Expected Data Transfer Length
    p.cmdsn, p.expstatsn = cmdsn, expstatsn
    p.bhs[32:48] = cdb.ljust(16, b"\0")
    p.data = data
    return p


def data_out(
    *, itt: int, ttt: int, expstatsn: int, datasn: int, offset: int, data: bytes, final: bool, lun: int = 0
) -> Pdu:
    p = Pdu()
    p.opcode = Op.DATA_OUT
    p.flags = F_FINAL if final else 0
    p.lun = lun << 48
    p.itt, p.ttt, p.expstatsn, p.datasn, p.buffer_offset = itt, ttt, expstatsn, datasn, offset
    p.data = data
    return p


def nop_out(*, itt: int, cmdsn: int, expstatsn: int, ttt: int = RSVD_TAG, data: bytes = b"") -> Pdu:
    p = Pdu()
    p.opcode = Op.NOOP_OUT
    p.immediate = True
    p.flags = F_FINAL
    p.itt, p.ttt, p.cmdsn, p.expstatsn = itt, ttt, cmdsn, expstatsn
    p.data = data
    return p


def text_request(*, itt: int, cmdsn: int, expstatsn: int, keys: dict[str, str], ttt: int = RSVD_TAG) -> Pdu:
    """A Text Request; ``ttt`` other than the reserved tag continues the
    task whose Text Response carried it."""
    p = Pdu()
    p.opcode = Op.TEXT_REQ
    p.immediate = True
    p.flags = F_FINAL
    p.itt, p.ttt, p.cmdsn, p.expstatsn = itt, ttt, cmdsn, expstatsn
    p.data = encode_keys(keys)
    return p


def logout_request(*, itt: int, cmdsn: int, expstatsn: int, reason: int = 0, cid: int = 0) -> Pdu:
    p = Pdu()
    p.opcode = Op.LOGOUT_REQ
    p.immediate = True
    p.flags = F_FINAL | (reason & 0x7F)
    p.itt, p.cmdsn, p.expstatsn = itt, cmdsn, expstatsn
    p.set_u16(20, cid)
    return p


def snack_request(
    *, kind: int, itt: int, expstatsn: int, begrun: int, runlength: int, ttt: int = RSVD_TAG, lun: int = 0
) -> Pdu:
    """A SNACK Request (RFC 7143 11.16) of Type ``kind`` (0 Data/R2T,
    1 Status, 2 DataACK, 3 R-Data): BegRun and RunLength in DataSNs,
    R2TSNs or StatSNs; a DataACK names the TTT of the Data-In asking for it."""
    p = Pdu()
    p.opcode = Op.SNACK
    p.flags = F_FINAL | (kind & 0x0F)
    p.lun = lun << 48
    p.itt, p.ttt, p.expstatsn = itt, ttt, expstatsn
    p.set_u32(40, begrun)
    p.set_u32(44, runlength)
    return p


def tmf_request(
    *, function: int, itt: int, cmdsn: int, expstatsn: int, lun: int = 0, ref_itt: int = RSVD_TAG, ref_cmdsn: int = 0,
    exp_datasn: int = 0,
) -> Pdu:  # fmt: skip
    p = Pdu()
    p.opcode = Op.TMF_REQ
    p.immediate = True
    p.flags = F_FINAL | (function & 0x7F)
    p.lun = lun << 48
    p.itt, p.cmdsn, p.expstatsn = itt, cmdsn, expstatsn
    p.set_u32(20, ref_itt)
    p.set_u32(32, ref_cmdsn)
    p.set_u32(36, exp_datasn)  # TASK REASSIGN: the next DataSN (READ) or R2TSN (WRITE) wanted
    return p


def login_request(
    *, isid: bytes, tsih: int, itt: int, cid: int, cmdsn: int, expstatsn: int,
    csg: int, nsg: int, transit: bool, keys: list[tuple[str, str]],
) -> Pdu:  # fmt: skip
    p = Pdu()
    p.opcode = Op.LOGIN_REQ
    p.immediate = True
    p.flags = (F_LOGIN_TRANSIT if transit else 0) | (csg & 3) << 2 | (nsg & 3 if transit else 0)
    p.bhs[8:14] = isid
    p.set_u16(14, tsih)
    p.itt = itt
    p.set_u16(20, cid)
    p.cmdsn, p.expstatsn = cmdsn, expstatsn
    p.data = encode_keys(keys)
    return p
