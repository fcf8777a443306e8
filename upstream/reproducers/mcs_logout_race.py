#!/usr/bin/env python3
"""Log out one connection of a two-connection session, then at once the
session.

Reproducer for upstream/0006-scsi-target-iscsi-look-up-each-connection-to-stop-afresh.patch.
The TPG of TARGET must allow sessions of two connections (its
MaxConnections parameter 2 or more; LIO's default is 1). Each round, with
this project's PDU-level initiator (initiator/iscsi_initiator):

  1. logs a session in at PORTAL with MaxConnections=2 and joins a second
     connection to it (the same ISID and TSIH, CID 1);
  2. logs the second connection out (reason 1, close the connection) and,
     without waiting for the target to close it, the session through the
     first (reason 0).

Stock 6.1 and 6.12 stop the session in iscsit_stop_session(), which walks
the session's connections with the lock let go; the second connection's
own close takes it off the list meanwhile, and the walk goes on from its
poisoned next pointer: a general protection fault in
iscsit_inc_conn_usage_count() (within the first few rounds in a VM). With
the patch every round ends, and the next round's login is answered.

What the target's kernel did is in its log (dmesg). Run it only against a
test target: on a stock kernel it crashes the target host. Example:

  upstream/reproducers/mcs_logout_race.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:upstream --rounds 20
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)

    host, port = args.portal
    for r in range(args.rounds):
        lead, second = Connection(host, port, timeout=20), Connection(host, port, timeout=20)
        try:
            keys = lead.login(args.initiator, args.target, Params(max_connections=2))
            if keys.get("MaxConnections") != "2":
                print(f"the target allows no second connection (MaxConnections={keys.get('MaxConnections')})")
                return 2
            second.join(lead, args.initiator, args.target, cid=1)
            second.logout(reason=1)
            lead.logout()
        except (LoginError, ConnectionClosed, OSError) as e:
            print(f"round {r + 1}: {e}")
            return 1
        finally:
            lead.close()
            second.close()
    print(f"{args.rounds} rounds: each session of two connections logged out, one connection and then the session")
    return 0


if __name__ == "__main__":
    sys.exit(main())
