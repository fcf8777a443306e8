#!/usr/bin/env python3
"""Join a connection of LIO's iSCSI/TCP transport to a session whose
leading connection is of another transport, then keep both busy.

Reproducer for upstream/0009-scsi-target-iscsi-refuse-a-connection-of-another-transport-to-a-session.patch.
LEAD is a portal where an offload transport of LIO (cxgbit, isert, this
project's cxgbit_ext) takes the connection, JOIN one of the same target
portal group where LIO's own iSCSI/TCP does; the TPG must allow sessions
of two connections (MaxConnections 2 or more; LIO's default is 1). With
this project's PDU-level initiator (initiator/iscsi_initiator) it:

  1. logs a session in at LEAD with MaxConnections=2, reads through it,
     and joins a second connection to it at JOIN (the same ISID and
     TSIH, CID 1);
  2. if the join is answered, sends READs on both connections back to
     back, ROUNDS times, and reads every answer.

LIO takes a session's commands from one tag map whose entries
iscsi_target_locate_portal() sizes by the leading connection's transport
(sizeof(struct iscsit_cmd) plus its priv_size) and iscsit_allocate_cmd()
indexes by the transport of the connection at hand: on the stock core
the join is answered, and the commands of the two connections overlap in
the map (silently on Debian's 6.12, as far as READs of a RAM disk
show). With the patch the join is answered "can't include in session"
(status 0x0208) and the session goes on over its leading connection:
exit 0. Exit 1 when the join is answered.

What the target's kernel did is in its log (dmesg). Run it only against a
test target: on a stock kernel it corrupts the target's memory. Example:

  upstream/reproducers/mcs_mixed_transports.py 198.18.1.1 198.18.2.1 iqn.2026-11.org.cxgbit-ext:upstream
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params

READS = 8  # per connection and round, sent before any answer is read


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lead", type=common.portal, help="portal of the offload transport, IP[:PORT]")
    ap.add_argument("join", type=common.portal, help="portal of LIO's iSCSI/TCP in the same TPG, IP[:PORT]")
    ap.add_argument("target", help="target IQN")
    ap.add_argument("--initiator", default="iqn.2026-11.org.cxgbit-ext:reproducer", help="initiator IQN")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)

    (lead_host, lead_port), (join_host, join_port) = args.lead, args.join
    lead, second = Connection(lead_host, lead_port, timeout=20), Connection(join_host, join_port, timeout=20)
    try:
        keys = lead.login(args.initiator, args.target, Params(max_connections=2))
        if keys.get("MaxConnections") != "2":
            print(f"the target allows no second connection (MaxConnections={keys.get('MaxConnections')})")
            return 2
        lead.scsi_read(0, 8)  # answered: LIO lists the session, a join finds it
        try:
            second.join(lead, args.initiator, args.target, cid=1)
        except LoginError as e:
            print(f"join refused: status 0x{e.status_class:02x}{e.status_detail:02x}")
            lead.scsi_read(0, 8)
            lead.logout()
            return 0 if (e.status_class, e.status_detail) == (0x02, 0x08) else 1
        print("join answered: the session has connections of two transports")
        second.itt = 0x8000  # a session's tasks need ITTs of their own, whatever the connection
        for _ in range(args.rounds):
            itts = [(c, c.send_read(8 * i, 8)) for i in range(READS) for c in (lead, second)]
            for c, itt in itts:
                c.recv_task(itt)
        print(f"{args.rounds} rounds of {READS} READs per connection answered")
        return 1
    except (ConnectionClosed, OSError) as e:
        print(f"the target ended a connection: {e}")
        return 1
    finally:
        lead.close()
        second.close()


if __name__ == "__main__":
    sys.exit(main())
