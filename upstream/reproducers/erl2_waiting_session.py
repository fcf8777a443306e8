#!/usr/bin/env python3
"""Leave an ErrorRecoveryLevel 2 session waiting out its Time2Retain,
for the target's side to end it.

Reproducer for upstream/0010-scsi-target-iscsi-close-a-session-no-connection-or-timer-will-close.patch.
The TPG of TARGET and the initiator's ACL must offer ErrorRecoveryLevel 2
(the TPG's ErrorRecoveryLevel parameter and the ACL's default_erl
attribute). With this project's PDU-level initiator
(initiator/iscsi_initiator):

  1. logs a session in at PORTAL with ErrorRecoveryLevel=2 and
     Time2Retain=TIME2RETAIN (default 20 s);
  2. resets its one connection (a TCP RST): the target keeps the session
     for Time2Retain, waiting for the initiator to come back;
  3. with --reinstate, logs a new session in with the same ISID, which
     reinstates the waiting one, and keeps it logged in.

Then, on the target, within Time2Retain: delete the target (targetcli
/iscsi delete TARGET, which disables its TPG first) or the initiator's
ACL. On the kernels' own core that never returns (the ACL's rmdir waits
in core_tpg_del_initiator_node_acl(); the hung task detector reports it),
whatever happened in 3; with the patch it returns at once.

Run it only against a test target: on a stock kernel the target's
configuration can no longer be deleted until reboot. Example:

  upstream/reproducers/erl2_waiting_session.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:upstream
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--time2retain", type=int, default=20, help="seconds the target keeps the session (default 20)")
    ap.add_argument("--reinstate", action="store_true", help="then log a new session in with the same ISID")
    args = ap.parse_args(argv)

    host, port = args.portal
    c = Connection(host, port, timeout=20)
    try:
        keys = c.login(args.initiator, args.target, Params(erl=2, time2retain=args.time2retain))
        if keys.get("ErrorRecoveryLevel") != "2":
            print(f"the target offers ErrorRecoveryLevel={keys.get('ErrorRecoveryLevel')}: 2 is needed")
            return 2
        c.reset()
        print(f"session ISID {c.isid.hex()} TSIH {c.tsih}: its connection reset at {time.strftime('%T')}; "
              f"the target keeps it {keys.get('DefaultTime2Retain', args.time2retain)} s")  # fmt: skip
        if args.reinstate:
            again = Connection(host, port, timeout=20)
            again.isid = c.isid
            again.login(args.initiator, args.target, Params(erl=2, time2retain=args.time2retain))
            print(f"reinstated by a new session, TSIH {again.tsih}")
        print("now delete the target, or the initiator's ACL, on the target: it must return at once")
        return 0
    except (LoginError, ConnectionClosed, OSError) as e:
        print(f"{type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
