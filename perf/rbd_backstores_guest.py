#!/usr/bin/env python3
"""Guest side of perf/rbd_backstores: the same image as user:rbd
(tcmu-runner) and as iblock on krbd, each exported through tcm_loop, the
same fio jobs on each; prints one ``RESULT {json}`` line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from testbed import fio  # noqa: E402
from testbed.scaleout_guest import network, sh, start_tcmu_runner  # noqa: E402

JOBS = {
    "4k_randwrite_qd16": ["--rw=randwrite", "--bs=4k", "--iodepth=16"],
    "4k_randread_qd16": ["--rw=randread", "--bs=4k", "--iodepth=16"],
    "256k_write_qd4": ["--rw=write", "--bs=256k", "--iodepth=4"],
}


def disk(model: str) -> str:
    """The SCSI disk tcm_loop made for a backstore of this model."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for d in Path("/sys/block").glob("sd*"):
            if (d / "device/model").read_text().strip().startswith(model):
                return f"/dev/{d.name}"
        time.sleep(0.2)
    raise SystemExit(f"no disk of model {model} within 60 s")


def bench(dev: str, runtime: int) -> dict[str, Any]:
    res = {}
    for name, args in JOBS.items():
        r = fio.run([f"--name={name}", f"--filename={dev}", "--direct=1", "--ioengine=libaio", "--time_based",
                     f"--runtime={runtime}", "--size=64M", *args])  # fmt: skip
        side = r["jobs"][0]["write" if "write" in name else "read"]
        res[name] = {
            "iops": round(side["iops"]),
            "MBps": round(side["bw"] / 1024, 1),
            "clat_p99_ms": round(side["clat_ns"]["percentile"]["99.000000"] / 1e6, 2),
        }
    return res


def main() -> int:
    from rtslib_fb import LUN, TPG, BlockStorageObject, FabricModule, Target, UserBackedStorageObject

    plan = json.loads(Path(sys.argv[1]).read_text())
    out: dict[str, Any] = {"kernel": os.uname().release}
    network(plan, plan["mac"], plan["ip"])
    subprocess.run(["modprobe", "tcm_loop"], check=True)
    t0 = time.monotonic()
    runner = start_tcmu_runner()
    out["tcmu_start_s"] = round(time.monotonic() - t0, 1)
    t1 = time.monotonic()
    so = UserBackedStorageObject("perf_user_rbd", config=f"rbd/{plan['image']}", size=128 << 20)
    out["tcmu_open_s"] = round(time.monotonic() - t1, 1)
    t = Target(FabricModule("loopback"))
    LUN(TPG(t, 1), 0, so)
    out["user_rbd"] = bench(disk("TCMU"), plan["runtime"])
    t.delete()
    so.delete()
    runner.terminate()
    runner.wait(30)
    dev = sh("rbd", "map", plan["image"]).strip()
    so = BlockStorageObject("perf_krbd", dev=dev)
    t = Target(FabricModule("loopback"))
    LUN(TPG(t, 1), 0, so)
    out["iblock_krbd"] = bench(disk("IBLOCK"), plan["runtime"])
    t.delete()
    so.delete()
    sh("rbd", "unmap", dev)
    print("RESULT " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
