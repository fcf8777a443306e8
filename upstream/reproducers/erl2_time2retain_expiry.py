#!/usr/bin/env python3
"""Let ErrorRecoveryLevel 2 sessions expire: the target closes each one
when its Time2Retain runs out.

Reproducer for upstream/0011-scsi-target-iscsi-close-an-expired-session-in-process-context.patch
and upstream/0012-scsi-target-iscsi-take-tpg_state_lock-with-bottom-halves-disabled.patch.
The TPG of TARGET and the initiator's ACL must offer ErrorRecoveryLevel 2
(the TPG's ErrorRecoveryLevel parameter and the ACL's default_erl
attribute). With this project's PDU-level initiator
(initiator/iscsi_initiator):

  1. logs SESSIONS sessions in at PORTAL (default 1), each with its own
     ISID, at ErrorRecoveryLevel=2 and Time2Retain=TIME2RETAIN (default
     1 s);
  2. resets each one's connection (a TCP RST) and never comes back: the
     target keeps each session for Time2Retain, then its timer closes it;
  3. waits Time2Retain and 3 s more, then logs a session in again and
     logs it out, to show the target answers.

On the target, the kernel log has "Time2Retain timer expired" once per
session. On the kernels' own core, each expiry closes the session in the
timer's softirq: a kernel with CONFIG_DEBUG_ATOMIC_SLEEP reports "BUG:
sleeping function called from invalid context" in
iscsit_handle_time2retain_timeout() at every expiry (0011), and with
CONFIG_PROVE_LOCKING the first one reports "possible irq lock inversion
dependency detected" (0012); a production kernel reports "BUG:
scheduling while atomic" only when a mutex the close takes is contended.
With the patches none of these appear.

Run it only against a test target. Example:

  upstream/reproducers/erl2_time2retain_expiry.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:upstream --sessions 4
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
    ap.add_argument("--time2retain", type=int, default=1, help="seconds the target keeps a session (default 1)")
    ap.add_argument("--sessions", type=int, default=1, help="sessions left to expire (default 1)")
    args = ap.parse_args(argv)

    host, port = args.portal
    params = Params(erl=2, time2retain=args.time2retain)
    try:
        conns = []
        for _ in range(args.sessions):
            c = Connection(host, port, timeout=20)
            keys = c.login(args.initiator, args.target, params)
            if keys.get("ErrorRecoveryLevel") != "2":
                print(f"the target offers ErrorRecoveryLevel={keys.get('ErrorRecoveryLevel')}: 2 is needed")
                return 2
            conns.append((c, keys.get("DefaultTime2Retain", str(args.time2retain))))
        for c, kept in conns:
            c.reset()
            print(f"session ISID {c.isid.hex()} TSIH {c.tsih}: its connection reset at {time.strftime('%T')}; "
                  f"the target keeps it {kept} s")  # fmt: skip
        time.sleep(max(int(kept) for _, kept in conns) + 3)
        again = Connection(host, port, timeout=20)
        again.login(args.initiator, args.target, params)
        print(f"a new session logs in (TSIH {again.tsih}) and out (response {again.logout()})")
        print("now read the target's kernel log: 'Time2Retain timer expired' once per session, and no BUG or WARNING")
        return 0
    except (LoginError, ConnectionClosed, OSError) as e:
        print(f"{type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
