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
    print(f"adapters: {', '.join(st.adapters) or 'none'}")
    if st.portals:
        print("offloaded portals:")
        for p in st.portals:
            print(f"  {p}")
    else:
        print("offloaded portals: none")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cxgbit-ext", description="iSCSI offload for LIO: status and control")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--configfs", type=Path, default=CONFIGFS, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status", help="module version, transport, adapters, offloaded portals")
    a = ap.parse_args(argv)
    ctl = Control(a.configfs)
    try:
        return cmd_status(ctl, a.json)
    except CxgbitExtError as e:
        if a.json:
            print(json.dumps({"error": str(e)}))
        else:
            print(f"cxgbit-ext: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
