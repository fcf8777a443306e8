#!/usr/bin/env python3
"""perf, inside the initiator VM: drive the matrix and record every figure.

Started by perf/run through testbed/run. Waits for the target VM's control
server, measures the link (iperf3) and the target's idle rate, then for each
session of the plan (repeat x digest x transport) logs in with open-iscsi,
checks that the session is what the point claims (digests negotiated, served
by cxgbit_ext or not), runs every fio point with a target snapshot on each
side, logs out. Writes raw.json to the results dir and prints one progress
line per point ("perf: ...").
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from iscsi_initiator import iscsiadm  # noqa: E402
from perf.perflib import (  # noqa: E402
    Cost,
    Plan,
    Snap,
    bs_bytes,
    cost,
    counter_delta,
    cpu_jiffies,
    disk_bytes,
    fill_args,
    fio_args,
    fio_metrics,
    kernel_counters,
    net_delta,
    point_record,
    request_prof_dump,
    sessions,
)
from perf.target_vm import IQN_OFFLOAD, IQN_STOCK, PORT_CONTROL, PORT_OFFLOAD, PORT_STOCK, guest_args, link_up  # noqa: E402
from testbed import fio  # noqa: E402


class TargetControl:
    """The target VM's control server (perf/target_vm.py)."""

    def __init__(self, ip: str, wait: float = 900) -> None:
        deadline = time.monotonic() + wait
        while True:
            try:
                self.sock = socket.create_connection((ip, PORT_CONTROL), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"perf: target control {ip}:{PORT_CONTROL} not up after {wait:.0f} s") from None
                time.sleep(1)
        self.sock.settimeout(60)
        self.f = self.sock.makefile("rw")

    def ask(self, cmd: str) -> dict[str, Any]:
        self.f.write(cmd + "\n")
        self.f.flush()
        reply: dict[str, Any] = json.loads(self.f.readline())
        if "error" in reply:
            raise SystemExit(f"perf: target: {reply['error']}")
        return reply

    def snap(self) -> Snap:
        return Snap.load(self.ask("snap"))


def own_snap() -> tuple[float, int, int]:
    busy, total = cpu_jiffies(Path("/proc/stat").read_text())
    return time.monotonic(), busy, total


def own_cost(a: tuple[float, int, int], b: tuple[float, int, int], insn: tuple[int, int]) -> Cost:
    sa = Snap(a[0], a[1], a[2], insn[0], 0, {})
    sb = Snap(b[0], b[1], b[2], insn[1], 0, {})
    return cost(sa, sb)


class SteadyWindow(threading.Thread):
    """The initiator VM over the middle half of a fio run, timed by the
    device's own I/O counter: fio's start (exec, forking its jobs, their
    buffers) takes more than a second under TCG, and a window timed from
    its launch would count it. From the first completed I/O, runtime / 4
    is left out, then runtime / 2 measured: the VM's CPU (whether the
    initiator bound the point), and its instructions, I/Os and TCP
    segments, so that what the initiator spends per I/O in steady state is
    compared between the paths, not what its start and exit cost."""

    def __init__(self, runtime: float, dev: str, bs: int, insn_file: Path, label: str) -> None:
        super().__init__(daemon=True)
        self.runtime, self.dev, self.bs = runtime, dev, bs
        self.insn_file, self.label = insn_file, label
        self.cpu_pct = math.nan
        self.record: dict[str, Any] = {}

    def ios(self) -> float:
        return disk_bytes(Path("/proc/diskstats").read_text(), self.dev) / self.bs

    def run(self) -> None:
        first = self.ios()
        deadline = time.monotonic() + self.runtime + 60
        while self.ios() == first:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        time.sleep(self.runtime / 4)
        i0, n0, io0 = read_insn(self.insn_file), kernel_counters(), self.ios()
        request_prof_dump(self.insn_file, self.label + "m")
        a = own_snap()
        time.sleep(self.runtime / 2)
        b = own_snap()
        request_prof_dump(self.insn_file, self.label + "n")
        c = own_cost(a, b, (i0, read_insn(self.insn_file)))
        ios, net = self.ios() - io0, net_delta(n0, kernel_counters())
        self.cpu_pct = c.cpu_pct
        self.record = {"seconds": c.seconds, "ios": ios, "insn": c.insn, "net": net, "prof": self.label + "n"}


SESSION_PARAMS = {
    "iscsi_connection": ("max_recv_dlength", "max_xmit_dlength"),
    "iscsi_session": ("first_burst_len", "max_burst_len", "immediate_data", "initial_r2t"),
}


def session_params() -> dict[str, str]:
    """What the one session negotiated, as the initiator's sysfs shows it."""
    out = {}
    for cls, names in SESSION_PARAMS.items():
        for d in Path(f"/sys/class/{cls}").glob("*"):
            for n in names:
                with contextlib.suppress(OSError):
                    out[n] = (d / n).read_text().strip()
    return out


# udev watches a disk opened for writing (60-block.rules) and, when the
# writer closes it, probes it again (scsi_id, blkid: processes exec'd, the
# disk read) as a "change" event. After every fio run that is seconds of
# the initiator's one vCPU under TCG, inside the next point's window; a
# benchmark initiator has no use for it.
UDEV_NOWATCH = Path("/run/udev/rules.d/99-perf-nowatch.rules")


def udev_nowatch() -> None:
    UDEV_NOWATCH.parent.mkdir(parents=True, exist_ok=True)
    UDEV_NOWATCH.write_text('ACTION!="remove", SUBSYSTEM=="block", KERNEL=="sd*", OPTIONS:="nowatch"\n')
    subprocess.run(["udevadm", "control", "--reload"], check=True, timeout=60)


def udev_settle() -> None:
    """udev done with the disk that just appeared (its add event's probes)."""
    subprocess.run(["udevadm", "settle", "--timeout=120"], check=True, timeout=180)


def read_insn(path: Path) -> int:
    return int(path.read_text().strip() or 0)


def iperf(plan: Plan, tc: TargetControl, reverse: bool = False) -> list[dict[str, float]]:
    """The link, initiator -> target (writes' direction) or, reversed,
    target -> initiator (reads'), with both VMs' CPU over each run."""
    out = []
    way = "target -> initiator" if reverse else "initiator -> target"
    for i in range(plan.iperf_repeats):
        a, ia = tc.snap(), own_snap()
        p = subprocess.run(
            ["iperf3", "-c", plan.target_ip, "-t", str(plan.iperf_seconds), "-J", *(["-R"] if reverse else [])],
            capture_output=True, text=True, timeout=plan.iperf_seconds + 60,
        )  # fmt: skip
        b, ib = tc.snap(), own_snap()
        if p.returncode:
            raise SystemExit(f"perf: iperf3: exit {p.returncode}: {p.stdout[-500:]} {p.stderr[-500:]}")
        rep = json.loads(p.stdout)
        gbps = rep["end"]["sum_received"]["bits_per_second"] / 1e9
        c, ic = cost(a, b), own_cost(ia, ib, (0, 0))
        out.append({"gbps": gbps, "target_cpu_pct": c.cpu_pct, "target": c.dump(), "initiator_cpu_pct": ic.cpu_pct})
        print(f"perf: link {way} {i + 1}/{plan.iperf_repeats}: {gbps:.3f} Gbit/s, target {c.cpu_pct:.0f}% CPU, "
              f"initiator {ic.cpu_pct:.0f}% CPU", flush=True)  # fmt: skip
    return out


def check_session(iqn: str, digest: str, transport: str, tc: TargetControl) -> None:
    conns = list(Path("/sys/class/iscsi_connection").glob("connection*"))
    if len(conns) != 1:
        raise SystemExit(f"perf: expected one iSCSI connection, found {len(conns)}")
    want = "1" if digest == "on" else "0"
    for f in ("header_digest", "data_digest"):
        got = (conns[0] / f).read_text().strip()
        if got != want:
            raise SystemExit(f"perf: {iqn}: {f} = {got}, the point needs digest {digest}")
    offloaded = tc.snap().offload_conns
    if offloaded != (1 if transport == "offload" else 0):
        raise SystemExit(f"perf: {iqn}: {offloaded} connection(s) on cxgbit_ext, the point is {transport}")


def main() -> int:
    plan, mac, results = guest_args()
    insn_file = results / "insn.count"
    link_up(mac, plan.initiator_ip, plan.mtu)
    tc = TargetControl(plan.target_ip)
    print("perf: target control up", flush=True)
    iscsiadm.start_iscsid()
    udev_nowatch()
    portals = {"stock": f"{plan.target_ip}:{PORT_STOCK}", "offload": f"{plan.target_ip}:{PORT_OFFLOAD}"}
    iqns = {"stock": IQN_STOCK, "offload": IQN_OFFLOAD}
    for p in portals.values():
        iscsiadm.discover(p)

    link: dict[str, Any] = {"iperf": iperf(plan, tc), "iperf_reverse": iperf(plan, tc, reverse=True)}
    a0 = tc.snap()
    time.sleep(plan.idle_seconds)
    b0 = tc.snap()
    idle = cost(a0, b0)
    link["idle"] = {"insn_per_s": idle.insn / idle.seconds, "cpu_pct": idle.cpu_pct}
    idle_rate = idle.insn / idle.seconds
    print(f"perf: target idle {idle_rate / 1e6:.1f} M insn/s, {idle.cpu_pct:.1f}% CPU", flush=True)

    # this VM's symbols, for its profile dumps (perf/profile.py)
    (results / "kallsyms").write_text(Path("/proc/kallsyms").read_text())
    plan_sessions = sessions(plan)
    total = sum(len(s.points) for s in plan_sessions)
    points: list[dict[str, Any]] = []
    t_start = time.monotonic()
    filled: set[str] = set()
    for s in plan_sessions:
        iqn, portal = iqns[s.transport], portals[s.transport]
        val = "CRC32C" if s.digest == "on" else "None"
        for key in ("HeaderDigest", "DataDigest"):
            iscsiadm.set_node(iqn, portal, f"node.conn[0].iscsi.{key}", val)
        iscsiadm.login(iqn, portal)
        try:
            dev = iscsiadm.session_disks(iqn, expect=1)[0]
            udev_settle()
            check_session(iqn, s.digest, s.transport, tc)
            params = session_params()
            if plan.fill and s.transport not in filled:
                t0 = time.monotonic()
                fio.run(fill_args(dev), timeout=plan.lun_size_mib + 300)
                filled.add(s.transport)
                print(f"perf: {s.transport} LUN filled in {time.monotonic() - t0:.0f} s", flush=True)
            if plan.warmup and s.points:
                # a fresh login's first seconds (TCP buffers growing, caches
                # filling) cost per I/O what no later second does: not measured
                rw, bs = s.points[0]
                fio.run(fio_args(plan, dev, rw, bs, runtime=plan.warmup), timeout=plan.warmup + 120)
            for rw, bs in s.points:
                ia, ii = own_snap(), read_insn(insn_file)
                ta = tc.snap()
                mid = SteadyWindow(plan.runtime, Path(dev).name, bs_bytes(bs), insn_file, f"i{len(points):05d}")
                mid.start()
                report = fio.run(fio_args(plan, dev, rw, bs), timeout=plan.runtime + 120)
                tb = tc.snap()
                mid.join()
                ib, ij = own_snap(), read_insn(insn_file)
                m = fio_metrics(report, rw, plan.percentiles)
                rec = point_record(
                    s, rw, bs, m, cost(ta, tb, idle_rate), own_cost(ia, ib, (ii, ij)), mid.cpu_pct,
                    counter_delta(ta, tb)
                )  # fmt: skip
                rec["target_prof"] = tb.prof  # the dump made at tb: ta..tb
                rec["target_kernel"] = net_delta(ta.kernel, tb.kernel)
                rec["session"] = params
                rec["initiator_steady"] = mid.record
                if mid.record.get("ios"):
                    rec["initiator_insn_per_io"] = mid.record["insn"] / mid.record["ios"]
                points.append(rec)
                n = len(points)
                eta = (time.monotonic() - t_start) / n * (total - n)
                print(
                    f"perf: [{n}/{total}] rep {s.rep + 1} {s.transport:<7} digest {s.digest:<3} {rw:<9} {bs:>4}: "
                    f"{m['iops']:7.0f} IOPS {m['mbps']:7.2f} MB/s p99 {m['lat_p99_us']:8.0f} us | target "
                    f"{rec['target_cpu_pct']:3.0f}% CPU {rec['target_insn_per_io'] / 1e3:7.0f}k insn/IO "
                    f"| initiator {rec['initiator_cpu_pct']:3.0f}% CPU | eta {eta / 60:.1f} min",
                    flush=True,
                )
        finally:
            iscsiadm.logout(iqn, portal)
    tc.ask("quit")
    raw = {"kernel": os.uname().release, "link": link, "points": points}
    (results / "raw.json").write_text(json.dumps(raw, indent=1))
    print(f"perf: {len(points)} points in {(time.monotonic() - t_start) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
