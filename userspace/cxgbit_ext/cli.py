"""cxgbit-ext command line: human tables or --json."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cxgbit_ext.control import CONFIGFS, Control, CxgbitExtError


def cmd_status(ctl: Control, as_json: bool) -> int:
    st = ctl.status()
    if as_json:
        print(json.dumps(st.dump(), indent=2))
        return 0
    print(f"cxgbit_ext {st.version}: LIO transport '{st.transport}' registered")
    print(f"offloaded portals: {', '.join(st.portals) or 'none'}")
    print(f"{'adapter':<10}{'type':<6}{'netdev':<10}{'conns':>7}{'pdus rx':>10}{'pdus tx':>10}{'placed B':>14}")
    for a in st.adapters:
        c = a.counters
        print(f"{a.name:<10}{a.type:<6}{a.netdev:<10}{c['connections']:>7}{c['pdus_rx']:>10}{c['pdus_tx']:>10}"
              f"{c['bytes_placed']:>14}")  # fmt: skip
    print(f"offloaded connections: {len(st.connections)}")
    for conn in st.connections:
        dig = "+".join(n for n, on in (("hdr-crc", conn.hdigest), ("data-crc", conn.ddigest)) if on) or "no digests"
        print(f"  {conn.peer} -> {conn.local} on {conn.adapter}: {dig}, "
              f"{conn.counters.get('bytes_placed', 0)} B placed")  # fmt: skip
    return 0


def cmd_counters(ctl: Control, as_json: bool) -> int:
    adapters = ctl.adapters()
    if as_json:
        print(json.dumps({a.name: a.counters for a in adapters}, indent=2))
        return 0
    for a in adapters:
        print(f"{a.name}:")
        for k, v in a.counters.items():
            print(f"  {k:<16}{v:>16}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cxgbit-ext", description="iSCSI offload for LIO: status and control")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--configfs", type=Path, default=CONFIGFS, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status", help="module, portals, adapters, offloaded connections")
    sub.add_parser("counters", help="per-adapter counters")
    bind = sub.add_parser("bind", help="make an adapter serve one netdev, or '*' for all")
    bind.add_argument("adapter")
    bind.add_argument("netdev")
    a = ap.parse_args(argv)
    ctl = Control(a.configfs)
    try:
        if a.cmd == "counters":
            return cmd_counters(ctl, a.json)
        if a.cmd == "bind":
            ctl.set_netdev(a.adapter, a.netdev)
        return cmd_status(ctl, a.json)
    except CxgbitExtError as e:
        if a.json:
            print(json.dumps({"error": str(e)}))
        else:
            print(f"cxgbit-ext: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
