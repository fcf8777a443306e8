#!/usr/bin/env python3
"""Move a persistent reservation to an I_T nexus that is not registered.

Reproducer for upstream/0013-scsi-target-fix-a-pr_kref-put-twice-by-register-and-move.patch.
With this project's PDU-level initiator (initiator/iscsi_initiator), two
sessions to TARGET through PORTAL, LUN 0: INITIATOR-b registers key 0xb0b
and takes a Write Exclusive reservation, then sends REGISTER AND MOVE
(SPC-4 6.16.4) to INITIATOR-a's I_T nexus, which is not registered, at
relative target port --rtpi. The reservation moves (READ RESERVATION
through INITIATOR-a's session prints its key, 0xa0a), and the LUN's
device entry for INITIATOR-a has lost a reference it never had: stock
6.1 and 6.12 then warn "refcount_t: underflow; use-after-free" in
core_disable_device_list_for_node() when the LUN is removed (say,
`targetcli clearconfig confirm=True`). With the patch they do not.

The reservation and both registrations are left in place. Example:

  upstream/reproducers/register_and_move_new_registration.py 198.18.0.1 iqn.2026-11.org.cxgbit-ext:rnm
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

from iscsi_initiator import pr
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, ScsiError


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--rtpi", type=int, default=1, help="relative target port of INITIATOR-a's I_T nexus")
    args = ap.parse_args(argv)
    host, port = args.portal
    a, b = Connection(host, port, timeout=20), Connection(host, port, timeout=20)
    try:
        a.login(f"{args.initiator}-a", args.target)
        b.login(f"{args.initiator}-b", args.target)
        pr.prout(b, pr.REGISTER, 0, 0xB0B)
        pr.prout(b, pr.RESERVE, 0xB0B, rtype=pr.WRITE_EXCLUSIVE)
        move = pr.move_params(0xB0B, 0xA0A, args.rtpi, pr.iscsi_port_id(f"{args.initiator}-a", a.isid))
        b.scsi_out(pr.out_cdb(pr.REGISTER_AND_MOVE, pr.WRITE_EXCLUSIVE, len(move)), move)
        held = pr.read_reservation(a)
        print(f"REGISTER AND MOVE: the reservation is held by key {held.key:#x} (0xa0a: moved)")
    except (LoginError, ConnectionClosed, ScsiError, OSError) as e:
        print(f"{type(e).__name__}: {e}")
        return 1
    finally:
        a.close()
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
