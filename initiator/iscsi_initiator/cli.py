"""cxe-initiator: log in to every target of one or more portals, for people.

    cxe-initiator login --portal IP[:PORT] [--portal ...] [--sessions N] [--iface NAME --netdev DEV]
    cxe-initiator logout
    cxe-initiator status [--json]
    cxe-initiator multipath-conf [--file /etc/multipath.conf]

The T6 paper's initiators each log in to 6 targets; ``--sessions 2`` over two
ifaces plus ``multipath-conf`` gives each LUN two paths under dm-multipath.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from iscsi_initiator import iscsiadm


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cxe-initiator", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)
    li = sub.add_parser("login", help="discover and log in to every target of the portals")
    li.add_argument("--portal", action="append", required=True, help="IP[:PORT], repeatable")
    li.add_argument("--sessions", type=int, default=1, help="sessions per target (default 1)")
    li.add_argument("--iface", help="open-iscsi iface to use (created with --netdev)")
    li.add_argument("--netdev", help="bind --iface to this NIC")
    sub.add_parser("logout", help="log out of every session")
    sub.add_parser("status", help="sessions and their disks")
    mp = sub.add_parser("multipath-conf", help="write a dm-multipath config for LIO LUNs")
    mp.add_argument("--file", type=Path, default=Path("/etc/multipath.conf"))
    a = ap.parse_args(argv)
    try:
        if a.cmd == "login":
            if a.netdev and not a.iface:
                ap.error("--netdev needs --iface NAME")
            iscsiadm.require_iscsid()
            if a.iface and a.netdev:
                iscsiadm.iface_bind(a.iface, a.netdev)
            targets = iscsiadm.login_all(a.portal, a.sessions, a.iface)
            if a.json:
                print(json.dumps([dataclasses.asdict(t) for t in targets]))
            else:
                for t in targets:
                    print(f"logged in: {t.iqn} at {t.portal} x{a.sessions}")
        elif a.cmd == "logout":
            iscsiadm.logout()
            print("logged out of every session" if not a.json else "{}")
        elif a.cmd == "status":
            rows = [dataclasses.asdict(s) for s in iscsiadm.sessions()]
            if a.json:
                print(json.dumps(rows))
            else:
                for s in rows:
                    print(f"session {s['sid']}: {s['iqn']} via {s['address']}:{s['port']}")
                if not rows:
                    print("no sessions")
        else:
            path = iscsiadm.write_multipath_conf(a.file)
            print(f"wrote {path}; (re)start multipathd to apply" if not a.json else json.dumps({"file": str(path)}))
    except iscsiadm.IscsiadmError as e:
        print(
            json.dumps({"error": str(e)}) if a.json else f"cxe-initiator: {e}",
            file=sys.stdout if a.json else sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
