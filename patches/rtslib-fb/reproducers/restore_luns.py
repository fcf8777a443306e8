#!/usr/bin/python3
"""How an rtslib restore's configfs work grows with the number of LUNs.

For each size N given, makes N iSCSI targets of 16 ramdisk (nullio) LUNs,
saves them with RTSRoot.save_to_file, clears, and restores them with
RTSRoot.restore_from_file while an audit hook counts this process's file
operations under /sys/kernel/config. Prints the count per size and exits 1
if the largest grew faster than linearly from the smallest (more than 1.25
times the ratio of the sizes), 0 otherwise. Leaves LIO's configuration
empty. Run as root on a host with no LIO configuration of its own: it
clears LIO's whole configuration.

    python3 restore_luns.py 1 4
"""

from __future__ import annotations

import os
import sys
import tempfile

from rtslib_fb import LUN, TPG, FabricModule, RDMCPStorageObject, RTSRoot, Target

LUNS = 16
EVENTS = {"open", "os.listdir", "os.scandir", "os.mkdir", "os.rmdir", "os.symlink", "os.remove"}
counting = [False]
ops = [0]


def hook(event: str, args: tuple[object, ...]) -> None:
    if counting[0] and event in EVENTS and args:
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        if isinstance(path, str) and path.startswith("/sys/kernel/config/"):
            ops[0] += 1


def restore_ops(n: int, save: str) -> int:
    iscsi = FabricModule("iscsi")
    for i in range(n):
        tpg = TPG(Target(iscsi, f"iqn.2026-11.org.example:restore{i:03d}"), 1)
        for lun in range(LUNS):
            LUN(tpg, lun, RDMCPStorageObject(f"t{i:03d}l{lun:02d}", 1 << 20, nullio=True))
    root = RTSRoot()
    root.save_to_file(save)
    root.clear_existing(confirm=True)
    ops[0], counting[0] = 0, True
    try:
        errors = root.restore_from_file(save)
    finally:
        counting[0] = False
    if errors:
        sys.exit(f"restore of {n} targets failed: {errors}")
    if sum(1 for _ in root.luns) != n * LUNS:
        sys.exit(f"restore of {n} targets: wrong number of LUNs")
    root.clear_existing(confirm=True)
    return ops[0]


def main() -> int:
    sizes = sorted(int(a) for a in sys.argv[1:]) or [1, 4]
    sys.addaudithook(hook)
    with tempfile.TemporaryDirectory() as tmp:
        counts = {n: restore_ops(n, os.path.join(tmp, f"{n}.json")) for n in sizes}
    for n, c in counts.items():
        print(f"{n:4d} targets x {LUNS} LUNs: {c:7d} configfs operations")
    small, big = sizes[0], sizes[-1]
    ratio, linear = counts[big] / counts[small], big / small
    print(f"grew {ratio:.1f}x for {linear:.0f}x the LUNs")
    return 1 if ratio > 1.25 * linear else 0


if __name__ == "__main__":
    sys.exit(main())
