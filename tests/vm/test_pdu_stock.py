"""The PDU-level initiator against stock LIO: the protocol as seen on the wire.

Positive flows (login with every digest setting, SCSI write/read with
immediate, unsolicited and solicited data, NOP, Text, TMF, logout) and the
negative cases of RFC 7143 at ERL 0. These are the reference the offloaded
transport is held to: the same cases run against it once it serves
connections. Each case checks that a second, healthy session keeps working.
"""

from __future__ import annotations

import os
import socket

import pytest

from iscsi_initiator.pdu import RSVD_TAG, Op, Pdu, data_out, nop_out, scsi_command
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params

from .conftest import PDU_INITIATOR, PDU_IQN

BLOCK = 512


def connect(host: str, params: Params | None = None) -> Connection:
    c = Connection(host)
    c.login(PDU_INITIATOR, PDU_IQN, params)
    return c


@pytest.mark.parametrize(
    ("hd", "dd", "imm", "r2t", "mrdsl"),
    [
        ("None", "None", True, True, 8192),
        ("CRC32C", "CRC32C", True, False, 8192),
        ("CRC32C", "None", False, True, 4096),
        ("None", "CRC32C", False, False, 65536),
    ],
)
def test_write_read_back(pdu_target: str, hd: str, dd: str, imm: bool, r2t: bool, mrdsl: int) -> None:
    p = Params(header_digest=hd, data_digest=dd, immediate_data=imm, initial_r2t=r2t, max_recv_dlen=mrdsl)
    c = connect(pdu_target, p)
    assert (c.params.header_digest, c.params.data_digest) == (hd, dd)
    data = os.urandom(300 * BLOCK)  # not a multiple of any burst or segment size
    lba = 64 + 1000 * (hash((hd, dd, imm, r2t)) % 8)
    c.scsi_write(lba, data)
    assert c.scsi_read(lba, 300) == data
    assert c.logout() == 0


def test_nop_text_tmf(pdu_target: str) -> None:
    c = connect(pdu_target, Params(header_digest="CRC32C", data_digest="CRC32C"))
    rsp = c.nop(b"echo me")
    assert rsp.data == b"echo me"
    keys = c.text({"SendTargets": "All"})
    assert keys.get("TargetName") == PDU_IQN
    assert c.tmf(5) == 0  # LOGICAL UNIT RESET: function complete
    assert c.logout() == 0


def healthy(host: str) -> None:
    c = connect(host)
    data = os.urandom(8 * BLOCK)
    c.scsi_write(8, data)
    assert c.scsi_read(8, 8) == data
    c.logout()


def dropped_or_rejected(c: Connection) -> str:
    """RFC 7143 at ERL 0: the target rejects the PDU or drops the connection."""
    c.sock.settimeout(10)
    try:
        while True:
            rsp = c.recv()
            if rsp.opcode == Op.REJECT:
                return f"reject 0x{rsp.u8(2):02x}"
    except (ConnectionClosed, TimeoutError, OSError) as e:
        if isinstance(e, TimeoutError):
            pytest.fail("target neither rejected the PDU nor dropped the connection in 10 s")
        return "dropped"


def test_bad_header_digest_drops_connection(pdu_target: str) -> None:
    c = connect(pdu_target, Params(header_digest="CRC32C"))
    wire = bytearray(nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn).encode(True, False))
    wire[48] ^= 0xFF
    c.send_raw(bytes(wire))
    assert c.closed_by_peer(), "target kept a connection whose header digest failed"
    healthy(pdu_target)


def test_bad_data_digest_on_immediate_data(pdu_target: str) -> None:
    c = connect(pdu_target, Params(data_digest="CRC32C", immediate_data=True, initial_r2t=True))
    cdb = bytes([0x2A, 0, 0, 0, 0, 16, 0, 0, 1, 0])
    wire = bytearray(scsi_command(cdb, itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn,
                                  write_len=BLOCK, data=os.urandom(BLOCK)).encode(False, True))  # fmt: skip
    wire[-1] ^= 0x01
    c.send_raw(bytes(wire))
    print("stock LIO, bad data digest on immediate data:", dropped_or_rejected(c))
    healthy(pdu_target)


def test_bad_data_digest_on_data_out(pdu_target: str) -> None:
    c = connect(pdu_target, Params(data_digest="CRC32C", immediate_data=False, initial_r2t=True))
    itt = c.next_itt()
    cdb = bytes([0x2A, 0, 0, 0, 0, 32, 0, 0, 1, 0])
    c.send(scsi_command(cdb, itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=BLOCK))
    r2t = c.recv()
    assert r2t.opcode == Op.R2T and r2t.itt == itt
    wire = bytearray(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                              data=os.urandom(BLOCK), final=True).encode(False, True))  # fmt: skip
    wire[-2] ^= 0x01
    c.send_raw(bytes(wire))
    print("stock LIO, bad data digest on Data-Out:", dropped_or_rejected(c))
    healthy(pdu_target)


def test_dlen_above_mrdsl_drops_connection(pdu_target: str) -> None:
    c = connect(pdu_target)
    limit = c.params.max_xmit_dlen
    p = nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, data=bytes(limit + 4))
    c.send(p)
    assert c.closed_by_peer(), f"target accepted {limit + 4} bytes above its MaxRecvDataSegmentLength {limit}"
    healthy(pdu_target)


def test_unknown_opcode_is_rejected_or_dropped(pdu_target: str) -> None:
    c = connect(pdu_target)
    p = Pdu()
    p.opcode = 0x1E
    p.flags = 0x80
    p.itt, p.cmdsn, p.expstatsn = c.next_itt(), c.cmdsn, c.expstatsn
    c.send(p)
    print("stock LIO, unknown opcode 0x1e:", dropped_or_rejected(c))
    healthy(pdu_target)


def test_data_out_with_unknown_ttt(pdu_target: str) -> None:
    c = connect(pdu_target, Params(immediate_data=False))
    itt = c.next_itt()
    c.send(scsi_command(bytes([0x2A, 0, 0, 0, 0, 48, 0, 0, 1, 0]), itt=itt, cmdsn=c.cmdsn,
                        expstatsn=c.expstatsn, write_len=BLOCK))  # fmt: skip
    r2t = c.recv()
    assert r2t.opcode == Op.R2T
    c.send(data_out(itt=itt, ttt=r2t.ttt ^ 0x5A5A, expstatsn=c.expstatsn, datasn=0, offset=0,
                    data=bytes(BLOCK), final=True))  # fmt: skip
    print("stock LIO, Data-Out with unknown TTT:", dropped_or_rejected(c))
    healthy(pdu_target)


@pytest.mark.parametrize("cut", [1, 20, 47])
def test_login_cut_mid_header_then_close(pdu_target: str, cut: int) -> None:
    s = socket.create_connection((pdu_target, 3260), timeout=10)
    s.sendall(b"\x43\x87" + bytes(cut - 2 if cut > 2 else 0)[: max(0, cut - 2)] if cut > 1 else b"\x43")
    s.close()
    healthy(pdu_target)


def test_garbage_login_pdu_is_refused(pdu_target: str) -> None:
    s = socket.create_connection((pdu_target, 3260), timeout=10)
    s.sendall(os.urandom(48) + os.urandom(512))
    s.settimeout(10)
    try:
        while s.recv(65536):
            pass
    except (ConnectionResetError, TimeoutError):
        pass
    s.close()
    healthy(pdu_target)


def test_wrong_target_name_fails_login(pdu_target: str) -> None:
    c = Connection(pdu_target)
    with pytest.raises(LoginError) as e:
        c.login(PDU_INITIATOR, "iqn.2026-11.org.cxgbit-ext:nonexistent")
    assert e.value.status_class == 0x02  # initiator error (target not found)
    c.close()


def test_nop_in_reserved_tag_roundtrip(pdu_target: str) -> None:
    c = connect(pdu_target)
    assert c.nop().ttt == RSVD_TAG
    c.logout()
