#!/usr/bin/env python3
"""Inside a perf/scaleout guest: one role.

    perf/scaleout_guest.py gateway N --plan PLAN.json
    perf/scaleout_guest.py initiator --plan PLAN.json

One image per gateway, each laid out on every gateway with ``cxgbit-ext
gateway create`` under its own target name, image i owned
(Active/Optimized) by gateway i. A gateway answers the initiator's
requests in the rendezvous directory: ``req-gwN-K`` holds one of ``snap``
(this VM's TCG instruction count, CPU jiffies, offloaded connections and
soft0 counters), ``offload`` / ``stock`` (its portals' offload switch),
``disable`` / ``enable`` (its TPGs); it answers in ``ans-gwN-K``. The
initiator logs in to every gateway for every image, and for each
transport (offload, then stock) runs the fio points with every gateway
serving (each image through its owner), then with the last gateway's
TPGs disabled, then the one before it, down to gateway 1 alone (each
image through the gateway dm-multipath moved it to, as its path counters
show), snapshotting every gateway around each point.
"""

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

from cxgbit_ext import portals  # noqa: E402
from cxgbit_ext.control import Control  # noqa: E402
from iscsi_initiator import iscsiadm  # noqa: E402
from perf.perflib import cpu_jiffies  # noqa: E402
from testbed import fio  # noqa: E402
from testbed.gateways import Rendezvous  # noqa: E402
from testbed.kmod import insmod, module_ko  # noqa: E402
from testbed.scaleout_guest import (  # noqa: E402
    active_gateway,
    initiator_run,
    log,
    logout_all,
    maps,
    network,
    run_role,
    sd_session,
    sh,
    start_multipath,
    start_tcmu_runner,
    wait_for,
)

CLI = (sys.executable, "-m", "cxgbit_ext.cli")


# ---- gateway ---------------------------------------------------------------


def handle(op: str, tpgs: list[Any], ip: str, insn_file: Path, ctl: Control) -> dict[str, Any]:
    """One request of the initiator to this gateway; its answer."""
    from rtslib_fb import NetworkPortal

    if op == "snap":
        busy, total = cpu_jiffies(Path("/proc/stat").read_text())
        return {"t": time.monotonic(), "busy": busy, "total": total, "insn": int(insn_file.read_text().strip() or 0),
                "offload_conns": len(ctl.connections()), "counters": ctl.adapter("soft0").counters}  # fmt: skip
    if op in ("offload", "stock"):
        for tpg in tpgs:
            portals.set_offload(NetworkPortal(tpg, ip, 3260, mode="lookup"), op == "offload")
        return {}
    if op in ("disable", "enable"):
        for tpg in tpgs:
            tpg.enable = op == "enable"
        return {}
    raise ValueError(f"unknown request {op!r}")


def gateway(plan: dict[str, Any], n: int) -> int:
    from rtslib_fb import FabricModule

    rdv = Rendezvous(Path(plan["rendezvous"]))
    me = plan["gateways"][n - 1]
    network(plan, me["mac"], me["ip"])
    backstore = plan["backstore"]
    devs: dict[str, str] = {}
    runner = None
    if backstore == "iblock":
        sh("modprobe", "rbd")
        devs = {d["image"]: sh("rbd", "map", d["image"]).strip() for d in plan["disks"]}
    else:
        runner = start_tcmu_runner()
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    p = insmod(module_ko())
    assert p.returncode == 0, p.stderr
    addrs = ",".join(g["ip"] for g in plan["gateways"])
    for d in plan["disks"]:
        create = [*CLI, "gateway", "create", "--iqn", d["iqn"], "--rbd", d["image"], "--portals", addrs,
                  "--gateway", str(n), "--owner", str(d["owner"]), "--backstore", backstore]  # fmt: skip
        if d["image"] in devs:
            create += ["--dev", devs[d["image"]]]
        log(sh(*create).strip())
    targets = [t for t in FabricModule("iscsi").targets if t.wwn in {d["iqn"] for d in plan["disks"]}]
    tpgs = [tpg for t in targets for tpg in t.tpgs if tpg.tag == n]
    insn_file = Path(os.environ["CXE_RESULTS"]) / "insn.count"
    ctl = Control()
    rdv.put(f"ready-gw{n}")
    answered: set[str] = set()
    while not rdv.has("done"):
        for req in sorted(f for f in os.listdir(rdv.path) if f.startswith(f"req-gw{n}-") and f not in answered):
            op = (rdv.path / req).read_text().strip()
            ans: dict[str, Any] = {"op": op}
            try:
                ans.update(handle(op, tpgs, me["ip"], insn_file, ctl))
            except Exception as e:  # answered, so that the initiator fails at once with the reason
                ans["error"] = f"{type(e).__name__}: {e}"
            log(f"{req}: {op}")
            rdv.put(req.replace("req-", "ans-"), json.dumps(ans))
            answered.add(req)
        time.sleep(0.2)
    for d in plan["disks"]:
        sh(*CLI, "gateway", "delete", "--iqn", d["iqn"])
    for dev in devs.values():
        sh("rbd", "unmap", dev)
    if runner is not None:
        runner.terminate()
        runner.wait(30)
    return 0


# ---- initiator -------------------------------------------------------------


class Gateways:
    """The initiator's requests to the gateways."""

    def __init__(self, rdv: Rendezvous, count: int) -> None:
        self.rdv, self.count, self.k = rdv, count, 0

    def ask(self, n: int, op: str, timeout: float = 120) -> dict[str, Any]:
        self.k += 1
        req = f"req-gw{n}-{self.k:04d}"
        self.rdv.put(req, op)
        ans = req.replace("req-", "ans-")
        self.rdv.wait(ans, timeout)
        out: dict[str, Any] = json.loads((self.rdv.path / ans).read_text())
        if "error" in out:
            raise RuntimeError(f"gateway {n}: {out['error']}")
        return out

    def all(self, op: str) -> dict[int, dict[str, Any]]:
        return {n: self.ask(n, op) for n in range(1, self.count + 1)}


def own_snap() -> dict[str, float]:
    busy, total = cpu_jiffies(Path("/proc/stat").read_text())
    return {"t": time.monotonic(), "busy": busy, "total": total}


def login_all(plan: dict[str, Any]) -> dict[str, str]:
    """Log in to every gateway for every image; wait for one map per image
    with a path through each gateway. Returns {image: /dev/mapper/WWID}."""
    for d in plan["disks"]:
        for g in plan["gateways"]:
            iscsiadm.login(d["iqn"], f"{g['ip']}:3260")
    n_gw = len(plan["gateways"])
    wait_for(lambda: len(maps()) == len(plan["disks"]) and all(len(p) == n_gw for p in maps().values()),
             "one multipath map per image, a path through each gateway", 120)  # fmt: skip
    by_iqn = {d["iqn"]: d["image"] for d in plan["disks"]}
    return {by_iqn[sd_session(sds[0])[0]]: f"/dev/mapper/{wwid}" for wwid, sds in maps().items()}


def measure(
    plan: dict[str, Any], gws: Gateways, devs: dict[str, str], transport: str, serving: dict[str, int]
) -> list[dict[str, Any]]:
    """The fio points with ``serving`` (image -> gateway carrying it)."""
    rows = []
    a = gws.all("snap")
    time.sleep(plan["idle_s"])
    b = gws.all("snap")
    idle = {n: (b[n]["insn"] - a[n]["insn"]) / (b[n]["t"] - a[n]["t"]) for n in a}
    for rw, bs in plan["points"]:
        job = [f"--rw={rw}", f"--bs={bs}", "--direct=1", "--ioengine=libaio", f"--iodepth={plan['iodepth']}",
               "--time_based", f"--runtime={plan['runtime']}", "--randrepeat=0", "--size=64M"]  # fmt: skip
        for image, dev in devs.items():
            job += [f"--name={image}", f"--filename={dev}"]
        before, m0 = gws.all("snap"), own_snap()
        report = fio.run(job, timeout=plan["runtime"] + 180)
        after, m1 = gws.all("snap"), own_snap()
        res = {j.name: j for j in fio.jobs(report)}
        bad = [j.name for j in res.values() if j.error]
        if bad:
            raise RuntimeError(f"fio errors on {bad}")
        block = int(bs.rstrip("k")) * 1024
        ios = {image: (j.read_bytes + j.write_bytes) // block for image, j in res.items()}
        secs = {n: after[n]["t"] - before[n]["t"] for n in after}
        per_gw: dict[str, Any] = {}
        for n in after:
            carried = sum(ios[image] for image, g in serving.items() if g == n)
            insn = after[n]["insn"] - before[n]["insn"]
            net = max(0.0, insn - idle[n] * secs[n])
            busy = after[n]["busy"] - before[n]["busy"]
            total = after[n]["total"] - before[n]["total"]
            moved = after[n]["counters"].get("pdus_rx", 0) - before[n]["counters"].get("pdus_rx", 0)
            per_gw[f"gw{n}"] = {
                "ios": carried, "insn_net": net, "insn_per_io": net / carried if carried else None,
                "cpu_pct": 100.0 * busy / total if total else 0.0, "offload_conns": after[n]["offload_conns"],
                "soft0_pdus_rx": moved, "idle_insn_per_s": idle[n],
            }  # fmt: skip
        ini_busy = 100.0 * (m1["busy"] - m0["busy"]) / max(1, m1["total"] - m0["total"])
        row = {
            "transport": transport, "gateways": len(set(serving.values())), "rw": rw, "bs": bs,
            "serving": serving, "iops": {i: round(j.read_iops + j.write_iops) for i, j in res.items()},
            "iops_total": round(sum(j.read_iops + j.write_iops for j in res.values())),
            "per_gateway": per_gw, "initiator_cpu_pct": round(ini_busy, 1),
        }  # fmt: skip
        log(f"point: {json.dumps(row)}")
        rows.append(row)
    return rows


def check_transport(gws: Gateways, transport: str, serving: dict[str, int]) -> None:
    """Each serving gateway's sessions are on cxgbit_ext, or none are."""
    snaps = gws.all("snap")
    for n in set(serving.values()):
        conns = snaps[n]["offload_conns"]
        if (transport == "offload") != (conns > 0):
            raise RuntimeError(f"{transport}: gateway {n} has {conns} offloaded connections")


def initiator(plan: dict[str, Any]) -> int:
    rdv = Rendezvous(Path(plan["rendezvous"]))
    network(plan, plan["initiator"]["mac"], plan["initiator"]["ip"])
    gw_ips = [g["ip"] for g in plan["gateways"]]
    gws = Gateways(rdv, len(gw_ips))
    result: dict[str, Any] = {"rows": []}
    with initiator_run(rdv, result):
        for n in range(1, len(gw_ips) + 1):
            rdv.wait(f"ready-gw{n}", 600)
        iscsiadm.start_iscsid()
        for d in plan["disks"]:
            for ip in gw_ips:
                iscsiadm.discover(f"{ip}:3260")
                iscsiadm.set_node(d["iqn"], f"{ip}:3260", "node.session.timeo.replacement_timeout", "5")
        start_multipath()
        owners = {d["image"]: d["owner"] for d in plan["disks"]}
        for transport in plan["transports"]:
            gws.all(transport)
            gws.all("enable")
            devs = login_all(plan)
            sh("udevadm", "settle", "--timeout=60")
            for image, dev in devs.items():
                wait_for(lambda d=dev, o=owners[image]: active_gateway(d, gw_ips) == o, f"{image} on its owner", 180)
            check_transport(gws, transport, owners)
            if not result["rows"]:
                # reads of never-written RBD objects cost the OSD nothing
                # (krbd returns zeros): write what the points read, once
                for dev in devs.values():
                    fio.run([f"--name=fill:{dev}", f"--filename={dev}", "--rw=write", "--bs=1M", "--size=64M",
                             "--direct=1", "--ioengine=libaio", "--iodepth=4"], timeout=600)  # fmt: skip
            result["rows"] += measure(plan, gws, devs, transport, owners)
            # the last gateway goes, then the one before it, down to gateway 1
            for gone in range(len(gw_ips), 1, -1):
                gws.ask(gone, "disable")
                t0 = time.monotonic()
                for image, dev in devs.items():
                    wait_for(lambda d=dev, g=gone: (active_gateway(d, gw_ips) or g) < g,
                             f"{image} on gateways 1-{gone - 1}", 180)  # fmt: skip
                serving = {image: active_gateway(dev, gw_ips) or 0 for image, dev in devs.items()}
                log(f"{transport}: gateway {gone} disabled, images served by {serving} after "
                    f"{time.monotonic() - t0:.1f} s")  # fmt: skip
                check_transport(gws, transport, serving)
                result["rows"] += measure(plan, gws, devs, transport, serving)
            logout_all()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(run_role(gateway, initiator))
