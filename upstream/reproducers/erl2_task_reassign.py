#!/usr/bin/env python3
"""Reassign a lost connection's WRITE to the other connection of an
ErrorRecoveryLevel 2 session, then acknowledge its status.

Reproducer for upstream/0007-scsi-target-iscsi-move-a-reassigned-tasks-count-to-its-new-connection.patch
and upstream/0008-scsi-target-iscsi-answer-tmfs-lio-decides-itself-with-iscsi-codes.patch.
The TPG of TARGET and the initiator's ACL must offer ErrorRecoveryLevel 2
(the TPG's ErrorRecoveryLevel parameter and the ACL's default_erl
attribute) and sessions of two connections (MaxConnections 2). With this
project's PDU-level initiator (initiator/iscsi_initiator):

  1. logs a session in at PORTAL with ErrorRecoveryLevel=2 and
     MaxConnections=2, InitialR2T=Yes, and joins a second connection;
  2. sends a WRITE of 8 blocks at LBA 64 on the first and, once its R2T
     is in, resets that connection (a TCP RST);
  3. on the second: waits for the Async Message that the first was
     dropped, logs the first out for recovery (reason 2) and reassigns
     the WRITE (TASK REASSIGN, immediate, ExpDataSN 0), printing the
     response; sends the data the R2T that follows asks for;
  4. reads the 8 blocks back, which acknowledges the WRITE's status.

Stock 6.12 answers the TASK REASSIGN "Function rejected" (255), and
carries it out all the same (0008); the READ's ExpStatSN releases the
WRITE, whose command counter went with the lost connection: a NULL
pointer dereference in target_release_cmd_kref() (0007). With both
patches the response is 0, the data reads back as written and the
session logs out.

What the target's kernel did is in its log (dmesg). Run it only against a
test target: on a stock kernel it crashes the target host. Example:

  upstream/reproducers/erl2_task_reassign.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:upstream
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import watch

from iscsi_initiator.pdu import Op, data_out, scsi_command
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params, ScsiError

TASK_REASSIGN = 8  # RFC 7143 11.5.1
LOGOUT_FOR_RECOVERY = 2
LBA, BLOCKS = 64, 8


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    args = ap.parse_args(argv)

    host, port = args.portal
    lead, second = Connection(host, port, timeout=20), Connection(host, port, timeout=20)
    try:
        keys = lead.login(args.initiator, args.target, Params(max_connections=2, erl=2, time2retain=20,
                                                              immediate_data=False, initial_r2t=True))  # fmt: skip
        if (keys.get("ErrorRecoveryLevel"), keys.get("MaxConnections")) != ("2", "2"):
            print(f"the target offers ErrorRecoveryLevel={keys.get('ErrorRecoveryLevel')} "
                  f"MaxConnections={keys.get('MaxConnections')}: 2 and 2 are needed")  # fmt: skip
            return 2
        second.join(lead, args.initiator, args.target, cid=1)
        try:
            second.scsi_read(0, 1)  # a new session's UNIT ATTENTION goes to a plain command
        except ScsiError as e:
            print(f"first command: {e}")
        itt = lead.next_itt()
        cdb = struct.pack(">BBIBHB", 0x2A, 0, LBA, 0, BLOCKS, 0)
        lead.send(scsi_command(cdb, itt=itt, cmdsn=lead.cmdsn, expstatsn=lead.expstatsn, write_len=BLOCKS * 512))
        lead.cmdsn += 1
        print(f"WRITE ITT 0x{itt:08x} on CID 0:")
        if watch(lead, 15, until=Op.R2T, itt=itt).match is None:
            print("no R2T for the WRITE")
            return 1
        lead.reset()
        print("CID 0 reset; on CID 1:")
        if watch(second, 15, until=Op.ASYNC).match is None:
            print("no Async Message about the lost connection")
            return 1
        print(f"Logout of CID 0 for recovery: response {second.logout(LOGOUT_FOR_RECOVERY, False, 0, lead.expstatsn)}")
        print(f"TASK REASSIGN: response {second.tmf(TASK_REASSIGN, ref_itt=itt, exp_datasn=0)} (0: function complete)")
        r2t = watch(second, 15, until=Op.R2T, itt=itt).match
        if r2t is None:
            print("no R2T on CID 1: the WRITE was not reassigned")
            return 1
        data = os.urandom(BLOCKS * 512)
        second.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=second.expstatsn, datasn=0, offset=0, data=data,
                             final=True))  # fmt: skip
        rsp = watch(second, 15, until=Op.SCSI_RSP, itt=itt).match
        if rsp is None:
            print("no response to the WRITE")
            return 1
        print("READ back, acknowledging the WRITE's status:")
        same = second.scsi_read(LBA, BLOCKS) == data
        print(f"  the data {'reads back as written' if same else 'differs from what was written'}")
        print(f"Logout: response {second.logout()}")
        return 0 if same else 1
    except (LoginError, ConnectionClosed, ScsiError, OSError) as e:
        print(f"{type(e).__name__}: {e}")
        return 1
    finally:
        lead.close()
        second.close()


if __name__ == "__main__":
    sys.exit(main())
