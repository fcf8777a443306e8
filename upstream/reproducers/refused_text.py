#!/usr/bin/env python3
"""Send LIO Text Requests it refuses, one per session, and count what
they leave behind.

Reproducer for upstream/0014-scsi-target-iscsi-free-a-text-task-it-refuses.patch.
It logs in to TARGET at PORTAL --sessions times with this project's
PDU-level initiator and each time sends one immediate Text Request whose
5000-byte data segment is a key LIO does not take (not SendTargets).
LIO queues a Reject (reason 0x09, protocol error) and closes the
connection, often before the Reject gets out. Stock 6.1 and 6.12 free
neither the task (its tag stays
taken until the session ends) nor its text buffer nor the Reject's copy
of the header: each session leaves a kmalloc-8k object (the text, 5000
bytes rounded up to 4) and a kmalloc-64 one.

Run on the target's host (a VM with the target in it), it prints how
many kmalloc-8k objects /proc/slabinfo gained; elsewhere it says it
cannot count. Example:

  upstream/reproducers/refused_text.py 198.18.1.1 iqn.2026-11.org.cxgbit-ext:upstream --sessions 200
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import describe

from iscsi_initiator.pdu import text_request
from iscsi_initiator.session import Connection, ConnectionClosed, Params

SLAB = "kmalloc-8k"
KEYS = {"X-cxgbit-ext-bogus": "x" * 4980}  # 5000 bytes with its '=' and NUL


def slab_objects(cache: str = SLAB) -> int | None:
    """The objects of ``cache`` in use here, or None without a slabinfo."""
    try:
        lines = Path("/proc/slabinfo").read_text().splitlines()
    except OSError:
        return None
    return next((int(f[1]) for f in map(str.split, lines) if f and f[0] == cache), None)


def refuse(host: str, port: int, target: str, initiator: str) -> str:
    """One session and its refused Text Request: what came back."""
    c = Connection(host, port)
    c.login(initiator, target, Params())
    req = text_request(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, keys=KEYS)
    c.send(req)
    try:
        answer = describe(c.recv())
    except (ConnectionClosed, ConnectionError):
        answer = "the connection closed"
    c.close()
    return answer


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--sessions", type=int, default=200, help="sessions, one refused Text Request each")
    args = ap.parse_args(argv)
    host, port = args.portal
    before = slab_objects()
    answers: dict[str, int] = {}
    for _ in range(args.sessions):
        a = refuse(host, port, args.target, args.initiator)
        answers[a] = answers.get(a, 0) + 1
    for a, n in answers.items():
        print(f"{n} x {a}")
    time.sleep(2)  # the last sessions' teardown
    after = slab_objects()
    if before is None or after is None:
        print(f"no /proc/slabinfo to read here: count {SLAB} on the target's host")
        return 0
    print(f"{SLAB}: {before} -> {after} objects in use ({after - before:+d} after {args.sessions} sessions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
