#!/usr/bin/env python3
"""Ask for a task management function LIO answers without its target core,
and print the response code.

Reproducer for upstream/0008-scsi-target-iscsi-answer-tmfs-lio-decides-itself-with-iscsi-codes.patch.
With this project's PDU-level initiator (initiator/iscsi_initiator), on
a session of one connection:

  no-lun  an ABORT TASK for LUN 200, which the session does not have.
          RFC 7143 11.6.1 answers 2 ("LUN does not exist"); stock 6.1 and
          6.12 answer 1 ("Task does not exist"): the iSCSI code 2 is read
          as TCM's TMR_TASK_DOES_NOT_EXIST.

The target is left as it was. Example:

  upstream/reproducers/tmf_response_codes.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:upstream --case no-lun
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params

ABORT_TASK = 1
NO_LUN = 200
MEANING = {0: "function complete", 1: "task does not exist", 2: "LUN does not exist", 255: "function rejected"}


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--case", choices=["no-lun"], default="no-lun")
    args = ap.parse_args(argv)

    host, port = args.portal
    c = Connection(host, port, timeout=20)
    try:
        c.login(args.initiator, args.target, Params())
        code = c.tmf(ABORT_TASK, lun=NO_LUN, ref_itt=0x1234)
        print(f"ABORT TASK for LUN {NO_LUN}: response {code} ({MEANING.get(code, 'other')})")
        c.logout()
    except (LoginError, ConnectionClosed, OSError) as e:
        print(f"{type(e).__name__}: {e}")
        return 1
    finally:
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
