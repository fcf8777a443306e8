#!/usr/bin/env python3
"""make demo, inside the testbed guest: the reference topology end to end.

One target with 4 ramdisk LUNs of 64 MiB, demo-mode ACLs, portal
0.0.0.0:3260 with offload on (cxgbit_ext, software adapter soft0) on the
target host; the initiator host discovers and logs in over the veth, runs
10 s of fio 4K random read/write (QD32) on every LUN, prints IOPS and
bandwidth per LUN and the adapter's counters, and tears everything down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from configshell_fb import ConfigShell, ExecutionError  # noqa: E402

from cxgbit_ext import cli, topology  # noqa: E402
from iscsi_initiator import iscsiadm  # noqa: E402
from targetcli_offload import ui  # noqa: E402
from testbed import fio, topo  # noqa: E402
from testbed.kmod import insmod, module_ko  # noqa: E402

IQN = "iqn.2026-11.org.cxgbit-ext:demo"
LINK = topo.LINKS[0]
RUNTIME = 10
# rtslib-fb warns on every RTSRoot() once LIO has devices; not news in a demo
warnings.filterwarnings("ignore", message="Cannot set dbroot")


def targetcli_shell() -> tuple[ConfigShell, ui.OffloadRoot]:
    """targetcli-offload's tree in this process (a targetcli process costs ~10 s under TCG)."""
    ui.install()
    shell = ui.shell_class()("/tmp/targetcli")
    root = ui.OffloadRoot(shell, as_root=True)
    root.refresh()
    return shell, root


def step(msg: str) -> None:
    print(f"\n== {msg}", flush=True)


def main() -> int:
    kver = os.environ["CXE_KVER"]
    step(f"kernel {kver}: loading LIO and cxgbit_ext")
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    p = insmod(module_ko(kver))
    if p.returncode:
        raise SystemExit(f"insmod: {p.stderr}")
    cli.main(["status"])

    step("target host: soft0 serves tgt0 only (cxgbit-ext bind soft0 tgt0); a typo is refused")
    with topo.in_netns():
        cli.main(["bind", "soft0", "tgt9"])
        cli.main(["bind", "soft0", "tgt0"])

    step("target host (netns tgt): 1 target, 4 x 64 MiB ramdisk LUNs, demo ACLs, portal 0.0.0.0:3260, offload on")
    t0 = time.monotonic()
    with topo.in_netns():
        topology.create(topology.Topology(iqn=IQN, offload=True))
    print(f"created in {time.monotonic() - t0:.1f} s")

    step("targetcli-offload (in-process): a second portal on tgt1's address, and enable_offload on it")
    with topo.in_netns():
        shell, root = targetcli_shell()
        portals = f"/iscsi/{IQN}/tpg1/portals"
        shell.run_cmdline(f"{portals} create {topo.LINKS[1].tgt_ip} 3261")
        print(f"{portals}/{topo.LINKS[1].tgt_ip}:3261> enable_offload true")
        try:
            root.get_node(f"{portals}/{topo.LINKS[1].tgt_ip}:3261").ui_command_enable_offload("true")
        except ExecutionError as e:
            print(f"  error: {e}")
        root.refresh()
        print(f"{portals}> ls")
        shell.run_cmdline(f"{portals} ls")
        print("/offload> ls")
        shell.run_cmdline("/offload ls")
        print("$ cxgbit-ext portals")
        cli.main(["portals"])

    step(f"initiator host: discovery and login to {LINK.tgt_ip}:3260 over {LINK.ini_dev}")
    iscsiadm.start_iscsid()
    for d in iscsiadm.discover(LINK.tgt_ip):
        print(f"  found {d.iqn} at {d.portal} (tpgt {d.tpgt})")
    iscsiadm.login(IQN, f"{LINK.tgt_ip}:3260")
    disks = iscsiadm.session_disks(IQN, expect=4)
    for lun, dev in sorted(disks.items()):
        print(f"  LUN {lun} -> {dev}")
    cli.main(["status"])
    print("$ cxgbit-ext connections")
    cli.main(["connections"])

    step(f"fio: {RUNTIME} s 4K randread/randwrite 50/50, iodepth 32, libaio, direct, every LUN at once")
    args = ["--ioengine=libaio", "--direct=1", "--iodepth=32", "--bs=4k", "--rw=randrw",
            "--time_based", f"--runtime={RUNTIME}", "--group_reporting=0"]  # fmt: skip
    for lun, dev in sorted(disks.items()):
        args += [f"--name=lun{lun}", f"--filename={dev}"]
    results = fio.jobs(fio.run(args))
    print(f"{'LUN':<6}{'read IOPS':>11}{'write IOPS':>12}{'read MiB/s':>12}{'write MiB/s':>13}")
    for r in results:
        print(
            f"{r.name:<6}{r.read_iops:>11.0f}{r.write_iops:>12.0f}"
            f"{r.read_bw_kib / 1024:>12.2f}{r.write_bw_kib / 1024:>13.2f}"
        )
    tot_r = sum(r.read_iops for r in results)
    tot_w = sum(r.write_iops for r in results)
    print(f"{'total':<6}{tot_r:>11.0f}{tot_w:>12.0f}")
    print("(qemu TCG: a functional demo; absolute figures are not a benchmark -- see perf/)")
    errors = [r for r in results if r.error]
    print()
    cli.main(["counters"])

    step("teardown: logout, delete target, unload cxgbit_ext")
    iscsiadm.logout(IQN, f"{LINK.tgt_ip}:3260")
    iscsiadm.delete_nodes()
    topology.delete(IQN)
    subprocess.run(["rmmod", "cxgbit_ext"], check=True)
    print("clean")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
