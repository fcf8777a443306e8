#!/usr/bin/env python3
"""perf, inside the target VM: LIO with two targets, and a control server.

Started by perf/run through testbed/run. Builds, on the virtio-net link NIC:

* ``iqn...:perf-stock``   one ramdisk LUN, portal <ip>:3260, stock iSCSI/TCP;
* ``iqn...:perf-offload`` one ramdisk LUN, portal <ip>:3261, offload on
  (cxgbit_ext with soft0 bound to the link NIC);

starts an iperf3 server, then answers the initiator VM on <ip>:7000, one
JSON line per request: ``snap`` (this VM's CPU jiffies, the instruction
count its qemu plugin writes to the shared results dir, soft0's counters and
offloaded connections) and ``quit`` (tear down and exit). The teardown
must leave the module unloadable, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from cxgbit_ext import topology  # noqa: E402
from cxgbit_ext.control import Control  # noqa: E402
from perf.perflib import Plan, cpu_jiffies, kernel_counters, load_plan, request_prof_dump  # noqa: E402
from testbed.kmod import insmod, module_ko  # noqa: E402

IQN_STOCK = "iqn.2026-11.org.cxgbit-ext:perf-stock"
IQN_OFFLOAD = "iqn.2026-11.org.cxgbit-ext:perf-offload"
PORT_STOCK, PORT_OFFLOAD, PORT_CONTROL = 3260, 3261, 7000
warnings.filterwarnings("ignore", message="Cannot set dbroot")


def link_up(mac: str, ip: str, mtu: int) -> str:
    """Bring up the virtio-net NIC with ``mac``; return its name."""
    subprocess.run(["modprobe", "virtio_net"], check=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for dev in Path("/sys/class/net").iterdir():
            if (dev / "address").read_text().strip() == mac:
                subprocess.run(["ip", "link", "set", dev.name, "mtu", str(mtu), "up"], check=True)
                subprocess.run(["ip", "addr", "add", f"{ip}/24", "dev", dev.name], check=True)
                subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
                return dev.name
        time.sleep(0.2)
    raise SystemExit(f"perf: no NIC with MAC {mac}")


_snaps = 0


def snapshot(ctl: Control, insn_file: Path) -> dict[str, object]:
    """This VM now. The plugin dumps where its instructions went since the
    previous snapshot to insn.prof.<prof> (it polls every 10 ms)."""
    global _snaps
    # the instruction count first: reading the rest costs instructions too
    insn = int(insn_file.read_text().strip() or 0)
    _snaps += 1
    label = f"s{_snaps:05d}"
    request_prof_dump(insn_file, label)
    proc_stat = Path("/proc/stat").read_text()
    busy, total = cpu_jiffies(proc_stat)
    kernel = kernel_counters(proc_stat)
    st = ctl.status()
    counters = dict(st.adapters[0].counters) if st.adapters else {}
    return {
        "t": time.monotonic(),
        "busy": busy,
        "total": total,
        "insn": insn,
        "offload_conns": len(st.connections),
        "counters": counters,
        "prof": label,
        "kernel": kernel,
    }


def serve(plan: Plan, ctl: Control, insn_file: Path) -> None:
    srv = socket.create_server((plan.target_ip, PORT_CONTROL), reuse_port=True)
    print(f"perf: target ready, control on {plan.target_ip}:{PORT_CONTROL}", flush=True)
    while True:
        conn, _ = srv.accept()
        with conn, conn.makefile("rw") as f:
            for line in f:
                cmd = line.strip()
                if cmd == "snap":
                    f.write(json.dumps(snapshot(ctl, insn_file)) + "\n")
                    f.flush()
                elif cmd == "quit":
                    f.write('{"ok": true}\n')
                    f.flush()
                    return
                else:
                    f.write(json.dumps({"error": f"unknown request {cmd!r}"}) + "\n")
                    f.flush()


def guest_args() -> tuple[Plan, str, Path]:
    """--plan and --mac of a perf guest script, and its results dir."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", type=Path, required=True)
    ap.add_argument("--mac", required=True)
    a = ap.parse_args()
    return load_plan(a.plan), a.mac, Path(os.environ["CXE_RESULTS"])


def main() -> int:
    plan, mac, results = guest_args()
    nic = link_up(mac, plan.target_ip, plan.mtu)

    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    p = insmod(module_ko())
    if p.returncode:
        raise SystemExit(f"perf: insmod cxgbit_ext: {p.stderr.strip()}")
    ctl = Control()
    ctl.adapter("soft0").netdev = nic
    size = plan.lun_size_mib << 20
    targets = ((IQN_STOCK, PORT_STOCK, False, "stock"), (IQN_OFFLOAD, PORT_OFFLOAD, True, "off"))
    for iqn, port, off, prefix in targets:
        portal = ((plan.target_ip, port),)
        t = topology.Topology(iqn, ("ramdisk",), size, portal, off, name_prefix=prefix, pi_prot_type=plan.pi_prot_type)
        topology.create(t)
    # the kernel's and the modules' symbols as loaded (KASLR), once the
    # targets have loaded every module they use: perf/profile.py
    (results / "kallsyms").write_text(Path("/proc/kallsyms").read_text())
    iperf = subprocess.Popen(["iperf3", "-s", "-B", plan.target_ip], stdout=subprocess.DEVNULL)
    try:
        serve(plan, ctl, results / "insn.count")
    finally:
        iperf.terminate()
        iperf.wait()
        for iqn in (IQN_STOCK, IQN_OFFLOAD):
            topology.delete(iqn)
        deadline = time.monotonic() + 15
        while ctl.connections() and time.monotonic() < deadline:
            time.sleep(0.1)
    p = subprocess.run(["rmmod", "cxgbit_ext"], capture_output=True, text=True)
    if p.returncode:
        print(f"perf: FAIL: cxgbit_ext did not unload: {p.stderr.strip()}", flush=True)
        return 1
    print("perf: target torn down, module unloaded", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
