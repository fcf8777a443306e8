#!/usr/bin/env python3
"""Inside a scale-out guest (started by testbed/scaleout): one role.

    scaleout_guest.py gateway N --plan PLAN.json
    scaleout_guest.py initiator --plan PLAN.json

Every guest has one NIC on the Ceph cluster's bridge. The guests meet
through files in the shared directory named in the plan ("rendezvous"):
a gateway writes ``ready-gwN`` once its layout is up, then acts on
``disable-gwN`` / ``enable-gwN`` (it answers with ``disabled-gwN`` /
``enabled-gwN``) until ``done`` appears; the initiator runs the checks
and writes ``result.json`` and ``done``. The host may kill a gateway's VM
at ``kill-gwN``'s request (written by the initiator) and starts it again
when the initiator writes ``restart-gwN``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from conformance import libiscsi  # noqa: E402
from cxgbit_ext import reservations  # noqa: E402
from cxgbit_ext.control import Control  # noqa: E402
from iscsi_initiator import iscsiadm, pr  # noqa: E402
from iscsi_initiator.session import Connection, ScsiError  # noqa: E402
from testbed import fio  # noqa: E402
from testbed.gateways import FAILURE_NAMES, FAILURES, Rendezvous, put_tcmu_death, tcmu_deaths  # noqa: E402
from testbed.kmod import insmod, module_ko  # noqa: E402

warnings.filterwarnings("ignore", message="Cannot set dbroot")
# How long a session that lost its connection holds its commands before
# it fails them and dm-multipath moves to another path (the iSCSI
# replacement timeout, the session's recovery_tmo). multipathd writes its
# fast_io_fail_tmo there when it sets a path up, over what iscsiadm set:
# the multipath setting is the one that holds.
RECOVERY_TMO = 5
# seconds krbd gives the cluster to answer a request (iblock backstore)
KRBD_REQUEST_TIMEOUT = 20
# ceph-iscsi's documented multipath settings for Linux initiators (LIO-ORG
# devices, ALUA prioritizer, failover path groups), for an iblock backstore,
# but for two: the failback deferred 10 s, not 60 (the deferral, no
# failback to a path that has just come back, is multipathd's, the same
# rule at 10 s; each failure waits through it once), and fast_io_fail_tmo
# RECOVERY_TMO, not 25 (25 s spent on every failover that waits for a dead
# connection).
# An iblock LUN (krbd) is checked by reading it (directio), not by TEST
# UNIT READY: LIO answers TUR itself, so a gateway whose krbd mapping
# the cluster has fenced passes TUR while every read and write fails,
# and multipath would fail back to it at every failback interval. Both
# entries match an iblock LUN: multipath applies every matching entry's
# attributes, a later entry's over an earlier one's. prio_args is inert
# here, as on ceph-iscsi's initiators: detect_prio (on by default) picks
# the sysfs prioritizer without it; the owner's group is the only one
# with PREF, so the score is the state's either way (50 and 10).
MULTIPATH_CONF = """\
defaults {
    user_friendly_names no
    find_multipaths no
}
devices {
    device {
        vendor "LIO-ORG"
        product ".*"
        hardware_handler "1 alua"
        path_grouping_policy "failover"
        path_selector "queue-length 0"
        failback 10
        path_checker tur
        prio alua
        prio_args exclusive_pref_bit
        fast_io_fail_tmo RECOVERY_TMO
        no_path_retry queue
    }
    device {
        vendor "LIO-ORG"
        product "IBLOCK"
        path_checker directio
    }
}
""".replace("RECOVERY_TMO", str(RECOVERY_TMO))


def log(msg: str) -> None:
    print(f"[{os.uname().nodename} {time.monotonic():8.1f}] {msg}", flush=True)


def sh(*cmd: str, timeout: float = 120, check: bool = True) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}")
    return p.stdout


def udev_settle(check: bool = True) -> None:
    """Wait for udev's queue to empty. Under TCG each SCSI disk's events
    (its rules, multipath's, the path checker's first look) take seconds,
    so the wait grows with the disks: 60 s and 15 s per disk (eight
    images on two gateways are 16)."""
    disks = len(list(Path("/sys/block").glob("sd*")))
    limit = 60 + 15 * disks
    sh("udevadm", "settle", f"--timeout={limit}", timeout=limit + 30, check=check)


def wait_for(cond: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


def network(plan: dict[str, Any], mac: str, ip: str) -> None:
    nic = next(p.parent.name for p in Path("/sys/class/net").glob("*/address") if p.read_text().strip() == mac)
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "addr", "add", f"{ip}/24", "dev", nic)
    sh("ip", "link", "set", nic, "up")
    wait_for(lambda: subprocess.run(["ping", "-c1", "-W1", plan["mon"]], capture_output=True).returncode == 0,
             f"the Ceph monitor {plan['mon']} over {nic}", 60)  # fmt: skip
    Path("/etc/ceph").mkdir(exist_ok=True)
    Path("/etc/ceph/ceph.conf").write_text(
        f"[global]\nmon host = {plan['mon']}\nauth cluster required = none\n"
        "auth service required = none\nauth client required = none\n"
    )


def gateway(plan: dict[str, Any], n: int) -> int:
    from rtslib_fb import FabricModule, RTSRoot

    rdv = Rendezvous(Path(plan["rendezvous"]))
    me = plan["gateways"][n - 1]
    network(plan, me["mac"], me["ip"])
    backstore = plan.get("backstore", "iblock")
    devs: list[str] = []
    runner: TcmuRunner | None = None
    if backstore == "iblock":
        sh("modprobe", "rbd")
        for image in plan["images"]:
            # krbd fails a request the cluster has not answered within this
            # (its default waits for ever): a cut-off gateway's commands
            # then fail at it, as user:rbd's do at cmd_time_out, and
            # dm-multipath moves on
            devs.append(sh("rbd", "map", "-o", f"osd_request_timeout={KRBD_REQUEST_TIMEOUT}", image).strip())
            log(f"{image} mapped at {devs[-1]}")
    else:
        keep_cores(rdv, n)
        runner = TcmuRunner(rdv, n)
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    p = insmod(module_ko())
    assert p.returncode == 0, p.stderr
    portals = ",".join(g["ip"] for g in plan["gateways"])
    cli = (sys.executable, "-m", "cxgbit_ext.cli")
    # no --owner: each image's owner is the layout's default spread, which
    # the initiator checks against the plan's owners
    create = (*cli, "gateway", "create", "--iqn", plan["iqn"], "--rbd", ",".join(plan["images"]),
              "--portals", portals, "--gateway", str(n), "--backstore", backstore,
              *(("--reservations",) if plan.get("reservations") else ()),
              *(("--cmd-time-out", str(plan["cmd_time_out"])) if plan.get("cmd_time_out") else ()))  # fmt: skip
    log(sh(*create).strip())
    again = sh(*create)
    assert again.startswith("already laid out"), again
    # saved and restored as an admin would at a reboot: the initiator's ALUA
    # and port-id checks then run against the restored layout. Not on a
    # gateway's second boot: its initiator is logging back in, and clearing
    # a user:rbd LUN tcmu-runner is serving deadlocks the two (LIO's rmdir
    # waits for tcmu-runner's answer to the removal holding the directory's
    # lock, which tcmu-runner's worker waits for in a path lookup).
    if not rdv.has(f"again-gw{n}"):
        saved = ("--file", "/run/cxgbit-ext.json", "--lio", "/run/saveconfig.json")
        shown = sh(*cli, "gateway", "show", "--iqn", plan["iqn"])
        sh(*cli, "save", *saved)
        reservations.unlink_all()  # a linked TPG cannot be cleared
        RTSRoot().clear_existing(confirm=True)
        log(sh(*cli, "restore", *saved).strip())
        assert sh(*cli, "gateway", "show", "--iqn", plan["iqn"]) == shown, "the layout changed across save and restore"
        assert sh(*create).startswith("already laid out")
    log(sh(*cli, "portals").strip())
    # the TPG serves once the agent has applied the log (--reservations)
    agent = start_agent(plan["iqn"]) if plan.get("reservations") else None
    rdv.put(f"ready-gw{n}")
    target = next(t for t in FabricModule("iscsi").targets if t.wwn == plan["iqn"])
    tpg = next(t for t in target.tpgs if t.tag == n)

    def switch(on: bool) -> Callable[[], None]:
        def act() -> None:
            tpg.enable = on
            log(f"TPG {n} {'enabled' if on else 'disabled'}")

        return act

    def kill_tcmu() -> None:
        assert runner is not None
        runner.kill()
        log("tcmu-runner killed")

    def start_tcmu() -> None:
        assert runner is not None
        runner.start()
        log("tcmu-runner started again")

    while not rdv.has("done"):
        rdv.answer(f"disable-gw{n}", f"disabled-gw{n}", switch(False))
        rdv.answer(f"enable-gw{n}", f"enabled-gw{n}", switch(True))
        if runner is not None:
            runner.watch()
            rdv.answer(f"killtcmu-gw{n}", f"tcmukilled-gw{n}", kill_tcmu)
            rdv.answer(f"starttcmu-gw{n}", f"tcmustarted-gw{n}", start_tcmu)
        time.sleep(0.5)
    c = Control().adapter("soft0").counters
    log(f"soft0 counters: {c}")
    rdv.put(f"counters-gw{n}.json", json.dumps(c))
    if agent is not None:
        agent.terminate()
        agent.wait(30)
        rdv.put(f"gw{n}-reservations.log", Path(AGENT_LOG).read_text(errors="replace"))
    sh(*cli, "gateway", "delete", "--iqn", plan["iqn"])
    for dev in devs:
        sh("rbd", "unmap", dev)
    if runner is not None:
        runner.stop()
        # when each gateway asked for, took and lost the image's lock: the
        # failover's timeline on the target side, beside the initiator's
        for log_file in (Path("/var/log/tcmu-runner.log"), Path("/run/tcmu-runner.out")):
            if log_file.exists():
                rdv.put(f"gw{n}-{log_file.name}", log_file.read_text(errors="replace"))
    return 0


# seconds between a tcmu-runner's death and its start again: the drop-in
# docs/usage.md gives gateway hosts (Restart=on-failure, RestartSec=1)
TCMU_RESTART_S = 1.0


class TcmuRunner:
    """A gateway's tcmu-runner, kept as a host with docs/usage.md's drop-in
    keeps it: one that dies unasked (a crash: librados has segfaulted in
    it after a blocklist) is started again TCMU_RESTART_S later, and each
    such death is put in the rendezvous (testbed.gateways.tcmu_deaths) for
    the run to report (a start that fails ends the gateway, as a unit
    whose start fails). A kill asked for (the ``tcmu`` failure) leaves it
    down until a start is asked for: that failure stands for a daemon that
    stays down, as under Debian's unit, which restarts nothing."""

    def __init__(self, rdv: Rendezvous, gateway: int,
                 start: Callable[[], subprocess.Popen[bytes]] | None = None) -> None:  # fmt: skip
        self.rdv = rdv
        self.gateway = gateway
        self._start = start or start_tcmu_runner
        self.proc: subprocess.Popen[bytes] | None = self._start()

    def kill(self) -> None:
        """SIGKILL, as a crash, and no start again until start()."""
        assert self.proc is not None, "tcmu-runner is down already"
        self.proc.kill()
        self.proc.wait(30)
        self.proc = None

    def start(self) -> None:
        assert self.proc is None, "tcmu-runner runs already"
        self.proc = self._start()

    def watch(self) -> bool:
        """If it died unasked: put the death in the rendezvous, wait
        TCMU_RESTART_S and start it again. Whether it had died."""
        if self.proc is None or self.proc.poll() is None:
            return False
        code = self.proc.returncode
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit {code}"
        log(f"tcmu-runner died unasked ({how}); starting it again in {TCMU_RESTART_S:.0f} s")
        put_tcmu_death(self.rdv, self.gateway, how)
        self.proc = None
        time.sleep(TCMU_RESTART_S)
        self.proc = self._start()
        return True

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
            self.proc = None


def keep_cores(rdv: Rendezvous, n: int) -> None:
    """A process of this gateway (and its children) that crashes leaves
    its core in the rendezvous, as core-gwN.<command>.<pid>, for gdb on
    the host, whose binaries the guest runs."""
    Path("/proc/sys/kernel/core_pattern").write_text(f"{rdv.path}/core-gw{n}.%e.%p\n")
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def start_tcmu_runner() -> subprocess.Popen[bytes]:
    """tcmu-runner (its rbd handler serves user:rbd), once it has
    registered on the system bus, which it needs for its handlers."""
    subprocess.run(["modprobe", "target_core_user"], check=True)
    Path("/run/dbus").mkdir(exist_ok=True)
    if subprocess.run(["busctl", "--system", "status"], capture_output=True).returncode != 0:
        subprocess.run(["dbus-daemon", "--system", "--fork", "--nopidfile"], check=True)
    runner = subprocess.Popen(["tcmu-runner"], stdout=open("/run/tcmu-runner.out", "a"), stderr=subprocess.STDOUT)  # noqa: SIM115
    probe = ["busctl", "--system", "status", "org.kernel.TCMUService1"]
    wait_for(lambda: subprocess.run(probe, capture_output=True).returncode == 0, "tcmu-runner on the bus", 60)
    return runner


AGENT_LOG = "/run/cxgbit-ext-reservations.log"


def start_agent(iqn: str) -> subprocess.Popen[str]:
    """The reservations agent of the target, once it has replayed the log."""
    agent = subprocess.Popen([sys.executable, "-m", "cxgbit_ext.cli", "--json", "reservations", "serve", "--iqn", iqn],
                             stdout=subprocess.PIPE, stderr=open(AGENT_LOG, "a"), text=True)  # noqa: SIM115  # fmt: skip
    assert agent.stdout is not None
    line = agent.stdout.readline()
    assert line, f"the reservations agent ended: {Path(AGENT_LOG).read_text(errors='replace')}"
    log(f"reservations agent: {line.strip()}")
    return agent


def start_multipath() -> None:
    """multipath-tools with ceph-iscsi's settings, fed paths by udev (the
    paths of sessions already logged in too)."""
    Path("/etc/multipath.conf").write_text(MULTIPATH_CONF)
    sh("modprobe", "dm_multipath")
    sh("modprobe", "scsi_dh_alua")
    # multipath-tools learn of paths and make /dev/mapper nodes through udev
    subprocess.run(["/lib/systemd/systemd-udevd", "--daemon"], check=True)
    sh("udevadm", "trigger", "--action=add", "--subsystem-match=block")
    udev_settle()
    subprocess.run(["multipathd"], check=True)


@contextmanager
def initiator_run(rdv: Rendezvous, result: dict[str, Any]) -> Iterator[None]:
    """The initiator's body: ``result["ok"]`` once it ends, or the error and
    the multipath and session state when it raises; result.json, logout
    and "done" (which ends the gateways) in any case."""
    try:
        yield
        result["ok"] = True
    except Exception as e:  # every failure is reported, then the run fails
        result["ok"] = False
        result["error"] = f"{type(e).__name__}: {e}"
        log(f"FAILED: {result['error']}")
        for cmd in (["multipath", "-ll"], ["multipathd", "show", "paths"], ["iscsiadm", "-m", "session", "-P", "1"]):
            p = subprocess.run(cmd, capture_output=True, text=True)
            log(f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    finally:
        rdv.put("result.json", json.dumps(result, indent=2))
        try:
            t0 = time.monotonic()
            logout_all()
            log(f"maps removed and sessions logged out in {time.monotonic() - t0:.1f} s")
        finally:
            rdv.put("done")


def run_role(gateway: Callable[[dict[str, Any], int], int], initiator: Callable[[dict[str, Any]], int]) -> int:
    """``SCRIPT gateway N --plan P`` or ``SCRIPT initiator --plan P``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=("gateway", "initiator"))
    ap.add_argument("index", type=int, nargs="?")
    ap.add_argument("--plan", type=Path, required=True)
    a = ap.parse_args()
    plan = json.loads(a.plan.read_text())
    if a.role == "gateway":
        return gateway(plan, a.index)
    return initiator(plan)


def initiator(plan: dict[str, Any]) -> int:
    rdv = Rendezvous(Path(plan["rendezvous"]))
    # Tasks here wait out each failover in I/O (a dead owner's commands
    # until tcmu-runner's 20 s cmd_time_out or the session's recovery_tmo,
    # then the survivor's wait for the owner's watch to lapse, 30 s): longer
    # than the 30 s the testbed gives a blocked task. The kernel's default
    # 120 s still reports a task that is stuck, not waiting.
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("120\n")
    network(plan, plan["initiator"]["mac"], plan["initiator"]["ip"])
    result: dict[str, Any] = {}
    with initiator_run(rdv, result):
        gw_ips = [g["ip"] for g in plan["gateways"]]
        images, owners = plan["images"], plan["owners"]
        for i in range(len(gw_ips)):
            rdv.wait(f"ready-gw{i + 1}", 600)
        iscsiadm.start_iscsid()
        for ip in gw_ips:
            portal = f"{ip}:3260"
            iscsiadm.discover(portal)
            # fail a dead path within seconds, not open-iscsi's 120 s
            iscsiadm.set_node(plan["iqn"], portal, "node.session.timeo.replacement_timeout", str(RECOVERY_TMO))
            if noop := plan.get("noop"):
                # how soon a connection whose gateway is gone is noticed:
                # a NOP-Out every noop s, each answered within noop s
                for key in ("noop_out_interval", "noop_out_timeout"):
                    iscsiadm.set_node(plan["iqn"], portal, f"node.conn[0].timeo.{key}", str(noop))
            iscsiadm.login(plan["iqn"], portal)
        start_multipath()
        wait_for(lambda: len(maps()) == len(images) and all(len(p) == len(gw_ips) for p in maps().values()),
                 f"multipath: {len(images)} maps, each with a path through each of {len(gw_ips)} gateways",
                 120)  # fmt: skip
        # a survivor waits out a dead owner's watch (30 s) before it may
        # write: longer than the SCSI layer's default 30 s per command
        for sds in maps().values():
            for sd in sds:
                Path(f"/sys/block/{sd}/device/timeout").write_text("180\n")
        # image i is LUN i on every gateway
        devs = {images[sd_lun(sds[0])]: f"/dev/mapper/{wwid}" for wwid, sds in maps().items()}
        # multipathd makes the maps; udev makes their /dev/mapper nodes,
        # after multipath -ll already shows them
        udev_settle(check=False)
        for dm in devs.values():
            wait_for(lambda dm=dm: Path(dm).exists(), f"udev: {dm}", 60)
        # multipathd has set the maps' paths up: each session now holds a
        # lost connection's commands for what it wrote there
        tmo = {p.parent.name: int(p.read_text()) for p in Path("/sys/class/iscsi_session").glob("*/recovery_tmo")}
        log(f"recovery_tmo: {tmo}")
        result["recovery_tmo"] = tmo
        # the kernel's NOP-Out timers of each connection, as iscsid set them
        noop = {p.name: [int((p / f).read_text()) for f in ("recv_tmo", "ping_tmo")]
                for p in Path("/sys/class/iscsi_connection").glob("connection*")}  # fmt: skip
        log(f"NOP-Out interval, timeout: {noop}")
        result["noop_out"] = noop
        if plan.get("noop"):
            assert all(v == [plan["noop"]] * 2 for v in noop.values()), f"NOP-Out timers {noop}, not {plan['noop']} s"
        assert len(tmo) == len(gw_ips) and set(tmo.values()) == {RECOVERY_TMO}, (
            f"sessions hold a lost connection's commands {tmo} s, not {RECOVERY_TMO}"
        )
        result["groups"] = {}
        for lun, image in enumerate(images):
            dm = devs[image]
            # the kernel picks a map's path group at its first I/O: until
            # then every group reads "enabled", whatever its priority
            assert active_gateway(dm, gw_ips) == owners[lun], (
                f"{image}: the map does not use its owner, gateway {owners[lun]}:\n{sh('multipath', '-ll')}"
            )
            mp = sh("multipath", "-ll", Path(dm).name)
            groups = re.findall(r"policy='[^']*' prio=(\d+) status=(\w+)", mp)
            result["groups"][image] = groups
            assert len(groups) == len(gw_ips), f"{image}: expected a path group per gateway: {groups}"
            best, *rest = groups
            assert best[1] == "active" and all(int(best[0]) > int(g[0]) for g in rest), (
                f"{image}: the Active/Optimized group is not the one preferred: {groups}"
            )
            rtpg = {sd: sh("sg_rtpg", "-d", f"/dev/{sd}") for sd in path_writes(dm)}
            log(f"{image}: sg_rtpg: {rtpg}")
            assert len(set(rtpg.values())) == 1, f"{image}: sg_rtpg differs between paths: {rtpg}"
        log(sh("multipath", "-ll"))
        result["failovers"] = []
        for how in plan["failures"]:
            result["failovers"].append(failover_under_fio(plan, rdv, devs, how))
        if plan.get("reservations"):
            result["pr_suites"] = pr_suites_across_gateways(plan)
            result["sg_persist"] = sg_persist_across_gateways(plan)
            result["reservations"] = reservations_across_gateways(plan, rdv)
    return 0 if result["ok"] else 1


def sd_lun(sd: str) -> int:
    """The LUN of SCSI disk ``sd`` (the last field of its H:C:T:L)."""
    return int(Path(os.path.realpath(f"/sys/block/{sd}/device")).name.rsplit(":", 1)[1])


def sd_session(sd: str) -> tuple[str, str]:
    """(target name, portal address) of the iSCSI session behind ``sd``."""
    session = Path(os.path.realpath(f"/sys/block/{sd}/device")).parent.parent
    iqn = (Path("/sys/class/iscsi_session") / session.name / "targetname").read_text().strip()
    addr = next(session.glob("connection*/iscsi_connection/*/persistent_address")).read_text().strip()
    return iqn, addr


def active_gateway(dm: str, gw_ips: list[str]) -> int | None:
    """The gateway (1-based) whose path the map ``dm`` uses now."""
    sd = active_path(dm)
    return gw_ips.index(sd_session(sd)[1]) + 1 if sd else None


def maps() -> dict[str, list[str]]:
    """Each multipath map's WWID and its sd paths."""
    out = subprocess.run(["multipath", "-ll"], capture_output=True, text=True).stdout
    return parse_maps(out)


# a path's line in multipath -ll: its H:C:T:L padded to the map's widest
# (a map of hosts 9 and 10 reads "9:0:0:0  sdd"), then its sd device
_PATH = r"\d+:\d+:\d+:\d+\s+(sd\w+)\s"


def parse_maps(out: str) -> dict[str, list[str]]:
    """multipath -ll's maps: each map's WWID and its sd paths."""
    res: dict[str, list[str]] = {}
    wwid = ""
    for line in out.splitlines():
        m = re.match(r"^(\S+) dm-\d+ ", line)
        if m:
            wwid = m.group(1)
            res[wwid] = []
        elif wwid:
            res[wwid] += re.findall(_PATH, line)
    return res


def active_sd(out: str) -> str | None:
    """The sd device of the active path group in multipath -ll's ``out``
    for one map, if that path is up."""
    m = re.search(r"status=active\n[ |`-]+" + _PATH + r"\s*\S+\s+active", out)
    return m.group(1) if m else None


def logout_all() -> None:
    """Remove the maps, then log out, as an admin takes LUNs away: a map
    that queues I/O with no path left (no_path_retry queue) would block
    every opener of its device, udev's workers first. A map is removed
    only once nobody holds it open, and an opener may still be waiting on
    a command a failing gateway never answered: logging out fails those,
    so the maps are flushed again after the logout until they are gone."""
    for wwid in maps():
        sh("dmsetup", "message", wwid, "0", "fail_if_no_path", check=False)
    udev_settle(check=False)
    try:
        wait_for(flushed, "multipath maps flushed before logout", 60)
    except TimeoutError:
        log(f"maps still held before logout:\n{holders()}")
    iscsiadm.logout()
    try:
        wait_for(flushed, "multipath maps gone after logout", 120)
    except TimeoutError:
        log(holders())
        raise


def flushed() -> bool:
    """``multipath -F`` (every map nobody holds open); True once none is left."""
    subprocess.run(["multipath", "-F"], capture_output=True, timeout=120)
    if maps():
        time.sleep(2)
        return False
    return True


def sh_all(*cmd: str) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return f"{p.stdout}{p.stderr}(exit {p.returncode})"


def holders() -> str:
    """What keeps a map: its open count, and every task in D state or
    holding a dm or sd device open, with its kernel stack."""
    out = [f"$ dmsetup info\n{sh_all('dmsetup', 'info')}", f"$ multipath -ll\n{sh_all('multipath', '-ll')}"]
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            state = next(x for x in (proc / "status").read_text().splitlines() if x.startswith("State:"))
            fds = [os.readlink(f) for f in (proc / "fd").iterdir()]
            devs = [f for f in fds if re.match(r"/dev/(dm-|sd|mapper/)", f)]
            if "D (disk sleep)" in state or devs:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append(f"pid {proc.name} [{cmd}] {state} fds {devs}\n{(proc / 'stack').read_text()}")
        except (OSError, StopIteration):
            continue
    return "\n".join(out)


def active_path(dm: str) -> str | None:
    """The sd device of the path group dm-multipath uses now for map ``dm``
    (one direct read first: an idle map marks no group active)."""
    try:
        subprocess.run(["dd", f"if={dm}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct"],
                       capture_output=True, timeout=60)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None  # every path down: the read waits in the queue
    out = subprocess.run(["multipath", "-ll", Path(dm).name], capture_output=True, text=True).stdout
    return active_sd(out)


def path_writes(dm: str, reads: bool = False) -> dict[str, int]:
    """Write requests completed on each sd path of ``dm`` (field 5 of
    /sys/block/sdX/stat), with ``reads`` reads too (field 1). Only the map
    writes to its paths (udev and multipathd read them), so the path whose
    write count moves carries fio's I/O. Reading the counters sends no
    I/O: a read on the map, or ``multipath -ll``'s path checks, would wait
    in the queue of a dead path (a killed tcmu-runner's commands end only
    at its cmd_time_out)."""
    name = Path(dm).resolve().name
    sds = sorted(p.name for p in Path(f"/sys/block/{name}/slaves").iterdir())
    stats = {sd: Path(f"/sys/block/{sd}/stat").read_text().split() for sd in sds}
    return {sd: int(f[4]) + (int(f[0]) if reads else 0) for sd, f in stats.items()}


def writes_move(dm: str, sds: set[str], what: str, t0: float, timeout: float, reads: bool = False) -> str:
    """Wait until writes (with ``reads``, reads or writes) complete on one
    of the paths ``sds`` of ``dm`` (counted from now); log the counters
    then. Returns that path."""
    base = path_writes(dm, reads)
    moved: list[str] = []

    def done() -> bool:
        now = path_writes(dm, reads)
        moved[:] = [sd for sd in sorted(sds) if now[sd] > base[sd]]
        return bool(moved)

    wait_for(done, what, timeout)
    log(f"+{time.monotonic() - t0:.1f} s: {what}: {'I/O' if reads else 'writes'} on {moved[0]}; completed per path: "
        f"was {base}, now {path_writes(dm, reads)}")  # fmt: skip
    return moved[0]


def failover_under_fio(plan: dict[str, Any], rdv: Rendezvous, devs: dict[str, str], how: str) -> dict[str, Any]:
    """fio write+verify on every image's multipath device while gateway 1
    fails (``how``: its TPG disabled, its tcmu-runner or its VM killed,
    its link to the cluster cut) and then comes back: the images it owns
    move to a surviving gateway and back, the images the others own stay
    on their owners throughout, and every block written before the failure
    reads back after it. A cut also checks that a write the gateway held
    does not land over newer data once its link is back."""
    failing = plan["failing"]
    gw_ips = [g["ip"] for g in plan["gateways"]]
    owners = dict(zip(plan["images"], plan["owners"], strict=True))
    moving = [image for image in plan["images"] if owners[image] == failing]
    staying = [image for image in plan["images"] if owners[image] != failing]
    t0 = time.monotonic()
    used = {image: active_path(dm) for image, dm in devs.items()}
    first = {image: sd for image, sd in used.items() if sd}
    log(f"the paths in use, {used}, read in {time.monotonic() - t0:.1f} s")
    assert len(first) == len(used), f"a map uses no path before the failure: {used}"
    stop = threading.Event()
    results: dict[str, list[object]] = {image: [] for image in devs}
    threads = [threading.Thread(target=lambda i=image, d=dm: results[i].append(_verify_until(d, stop)))
               for image, dm in devs.items()]  # fmt: skip
    for t in threads:
        t.start()
    # the failure comes under I/O: each image's owner has written (and so
    # holds the image's lock) before it
    t0 = time.monotonic()
    for image, dm in devs.items():
        writes_move(dm, {first[image]}, f"{image} written through its owner", t0, 120)
    ev: dict[str, Any] = {"failure": FAILURE_NAMES[how], "gateway": failing}
    died = set(tcmu_deaths(rdv))
    (fail, failed, fail_s), (back, is_back, back_s) = FAILURES[how]
    idle = {image: path_writes(devs[image]) for image in staying}
    fenced = blocklisted(rdv, gw_ips[failing - 1])
    t0 = time.monotonic()
    rdv.ask(f"{fail}-gw{failing}", f"{failed}-gw{failing}", fail_s)
    stale: Future[None] | None = None
    newer = os.urandom(STALE_BYTES)
    if how == "cut":
        # a write sent to the owner after its link to the cluster is cut:
        # the owner holds it (it cannot reach the OSDs), fails it to the
        # initiator at its command timeout, and multipath sends it again
        # through a survivor. Newer data then goes over the same blocks.
        # When the link comes back, the copy the owner held must not land:
        # the survivor fenced it (blocklist) when it took the lock.
        older = bytes([0xA5]) * STALE_BYTES
        stale = ThreadPoolExecutor(1).submit(_direct_write, devs[moving[0]], STALE_OFFSET_MB, older)
    assert all(t.is_alive() for t in threads), "fio ended before the gateway failed: the failover was not under I/O"
    took = {}
    for image in moving:
        dm = devs[image]
        sd = writes_move(dm, set(path_writes(dm)) - {first[image]}, f"{image} moving to a survivor", t0, 120)
        took[image] = gw_ips.index(sd_session(sd)[1]) + 1
    ev["io_moved_after_s"] = round(time.monotonic() - t0, 1)
    ev["moved"] = took
    for image in staying:
        # fio's verify reads may be all a pass does for a while
        writes_move(devs[image], {first[image]}, f"{image} going on through its owner", t0, 120, reads=True)
    log(f"failover: {ev}")
    if how in ("kill", "tcmu", "cut"):
        # a survivor takes a moved image's lock once the dead owner's watch
        # expires, and fences it: the owner's client joins the blocklist
        ip = gw_ips[failing - 1]
        wait_for(lambda: blocklisted(rdv, ip) - fenced, f"a new client of {ip} on the blocklist", 180)
        ev["fenced_after_s"] = round(time.monotonic() - t0, 1)
        log(f"fenced: {ev}; blocklisted now: {sorted(blocklisted(rdv, ip))}")
    if stale is not None:
        try:
            stale.result(timeout=300)  # raises what the write raised
        except FutureTimeout:
            raise AssertionError("the write held by the cut-off gateway never completed through a survivor") from None
        ev["newer_data_written_after_s"] = round(time.monotonic() - t0, 1)
        _direct_write(devs[moving[0]], STALE_OFFSET_MB, newer)
    t0 = time.monotonic()
    rdv.ask(f"{back}-gw{failing}", f"{is_back}-gw{failing}", back_s)
    if how == "kill":
        ev["gateway_back_after_s"] = round(time.monotonic() - t0, 1)
    # a path's completed writes count failed ones too: the owner serves
    # again once the map's active path is its, after its writes
    if how == "cut" and plan["backstore"] == "iblock":
        # krbd does not come back from the blocklist: the owner's mapping
        # fails every request until it is mapped again, so its images stay
        # on the survivor, which must still serve them
        time.sleep(30)
        for image in moving:
            serving = active_path(devs[image])
            assert serving and serving != first[image], (
                f"{image}: no survivor serves it after the link came back ({serving})"
            )
        ev["owner_fenced_until_mapped_again"] = True
    else:
        for image in moving:
            writes_move(devs[image], {first[image]}, f"{image} failing back to its owner", t0, 300)
            wait_for(lambda i=image: active_path(devs[i]) == first[i], f"{image} served by its owner again", 120)
        ev["failed_back_after_s"] = round(time.monotonic() - t0, 1)
    log(f"failback: {ev}")
    if how == "cut":
        # read back through the map: the owner (which holds the image's
        # lock again) or, where the owner stays fenced, the survivor
        got = _direct_read(devs[moving[0]], STALE_OFFSET_MB, STALE_BYTES)
        assert got == newer, (
            "the blocks hold "
            + ("the write the cut-off gateway held" if got == older else "neither write")
            + ", not the newer data written through the survivor"
        )
        ev["stale_write_fenced"] = True
    stop.set()
    t0 = time.monotonic()
    for t in threads:
        t.join(timeout=900)
    assert not any(t.is_alive() for t in threads), "fio did not finish"
    log(f"fio's passes under way ended {time.monotonic() - t0:.1f} s after the stop")
    for image in staying:
        # an image whose owner did not fail never left it
        now = path_writes(devs[image])
        wandered = {sd: now[sd] - n for sd, n in idle[image].items() if sd != first[image] and now[sd] != n}
        assert not wandered, f"{image} wrote through another gateway than its owner: {wandered}"
    for image, done in results.items():
        assert done and not isinstance(done[0], Exception), f"{image}: fio verify over the failover: {done}"
    ev["fio_passes"] = {image: done[0] for image, done in results.items()}
    # a gateway's tcmu-runner that died unasked during the trial (and was
    # started again): its figures count, and say so
    ev["tcmu_runner_died"] = [d for name, d in tcmu_deaths(rdv).items() if name not in died]
    return ev


# libiscsi's reservation suites (PERSISTENT RESERVE IN and OUT, and the
# others the pattern takes: PRE-FETCH, PREVENT ALLOW MEDIUM REMOVAL)
PR_SUITES = "ALL.Pr*"
PR_INITIATOR = "iqn.2026-11.org.cxgbit-ext:libiscsi-pr"
# the tests in which the second nexus reads or writes the logical unit
# (libiscsi's verify_persistent_reserve_access with a registrant or
# non-registrant allowed access)
SECOND_NEXUS_IO = {f"ALL.ProutReserve.Access{t}" for t in ("WE", "EARO", "WERO", "EAAR", "WEAR")}


def pr_specs(backstore: str) -> tuple[list[str], list[str]]:
    """What iscsi-test-cu runs with the nexuses on two gateways, and what
    with both on one, as its -t specs (a whole suite where none of its
    tests is set apart). On user:rbd the tests whose second nexus reads or
    writes run on one gateway: tcmu-runner's rbd handler serves an image
    through the gateway that holds its lock, and answers the first command
    through another with BUSY while it moves the lock there (its implicit
    ALUA transition), which an initiator retries and the test tool does
    not. krbd (iblock) serves it through every gateway."""
    tests = [t for t in libiscsi.listed() if t.count(".") == 2 and fnmatch.fnmatch(t, PR_SUITES)]
    apart = sorted(SECOND_NEXUS_IO & set(tests)) if backstore == "user:rbd" else []
    across: list[str] = []
    for suite in dict.fromkeys(t.rsplit(".", 1)[0] for t in tests):
        mine = [t for t in tests if t.startswith(f"{suite}.")]
        kept = [t for t in mine if t not in apart]
        across += [suite] if kept == mine else kept
    return across, apart


def pr_node(iqn: str, name: str, ip: str, isid: bytes | None = None) -> Connection:
    """A PDU-level node logged in to ``iqn`` through ``ip`` (with isid: the
    same I_T nexus as before), its unit attentions taken (a new nexus of a
    target with several LUNs has REPORTED LUNS DATA HAS CHANGED pending)
    with TEST UNIT READY, as an initiator's scan would."""
    c = Connection(ip, timeout=60)
    if isid is not None:
        c.isid = isid
    c.login(name, iqn)
    for _ in range(8):
        try:
            c.scsi_in(bytes(6), 0)
            return c
        except ScsiError as e:
            if e.sense_key != 6:
                c.close()
                raise
    c.close()
    raise AssertionError(f"{name} through {ip}: unit attentions without end")


def take_image_lock(plan: dict[str, Any], ip: str) -> None:
    """Make the gateway at ``ip`` hold image 0's lock (user:rbd): a write
    through it, BUSY tried again while its tcmu-runner takes the lock."""
    c = pr_node(plan["iqn"], PR_INITIATOR, ip)
    try:
        assert not pr.write_refused(c, PR_LBA, busy_s=120), f"{ip} refused a write with no reservation held"
        c.logout()
    finally:
        c.close()


def pr_suites_across_gateways(plan: dict[str, Any]) -> dict[str, Any]:
    """libiscsi's reservation suites on image 0 with their two I_T nexuses
    on different gateways: the first initiator through one gateway, the
    second (the tests' other nexus: the one refused, preempted, moved to)
    through the other, then the other way round, so that each gateway's
    kernel serves each side. Every test must pass, as on one target. The
    tests pr_specs sets apart run with both nexuses on the first gateway."""
    gw1, gw2 = (g["ip"] for g in plan["gateways"][:2])
    across, apart = pr_specs(plan["backstore"])
    ev: dict[str, Any] = {"one gateway": apart}
    for first, second in ((gw1, gw2), (gw2, gw1)):
        t0 = time.monotonic()
        if plan["backstore"] == "user:rbd":
            take_image_lock(plan, first)
        got: dict[str, str] = {}
        for spec in across:
            got |= libiscsi.run(f"iscsi://{first}/{plan['iqn']}/0", PR_INITIATOR, timeout=600, test=spec,
                                url2=f"iscsi://{second}/{plan['iqn']}/0")  # fmt: skip
        alone: dict[str, str] = {}
        for spec in apart:
            alone |= libiscsi.run(f"iscsi://{first}/{plan['iqn']}/0", PR_INITIATOR, timeout=600, test=spec)
        failed = sorted(t for t, v in (got | alone).items() if v != "passed")
        run = f"{first} and {second}"
        ev[run] = {"across": len(got), "one gateway": len(alone), "failed": failed,
                   "took_s": round(time.monotonic() - t0, 1)}  # fmt: skip
        log(f"libiscsi {PR_SUITES} through {run}: {ev[run]}")
        assert len(got) >= 20, f"libiscsi ran {len(got)} reservation tests across {run}: {sorted(got)}"
        assert not failed, f"libiscsi's reservation tests failed through {run}: {failed}"
    return ev


# fence_scsi's reservation: Write Exclusive, Registrants Only
WE_RO = 5
SG_IFACE, SG_NODE_B = "node-b", "iqn.2026-11.org.cxgbit-ext:sg-node-b"
SG_KEY_A, SG_KEY_B = 0x5A5A, 0x6B6B


def session_disk(ip: str, initiator: str, lun: int, missing_ok: bool = False) -> str | None:
    """The sd device of ``lun`` in the open-iscsi session of ``initiator``
    to the gateway at ``ip`` (None with ``missing_ok`` while it has none)."""
    for session in iscsiadm.sessions():
        s = Path(f"/sys/class/iscsi_session/session{session.sid}")
        if session.address != ip or (s / "initiatorname").read_text().strip() != initiator:
            continue
        for blk in (s / "device").glob(f"target*/*:*:*:{lun}/block/*"):
            return blk.name
    if missing_ok:
        return None
    raise AssertionError(f"no disk of LUN {lun} in {initiator}'s session to {ip}")


def take_unit_attentions(sd: str) -> None:
    """TEST UNIT READY on path ``sd`` until it answers GOOD (at most 8):
    a new nexus, or one whose registration was preempted, has unit
    attentions pending."""
    for _ in range(8):
        if subprocess.run(["sg_turs", f"/dev/{sd}"], capture_output=True).returncode == 0:
            return


def sg_persist(sd: str, *args: str) -> str:
    return sh("sg_persist", "--no-inquiry", *args, f"/dev/{sd}")


def sg_write_refused(sd: str) -> bool:
    """Whether a 4 KiB direct write at PR_LBA of path ``sd`` is refused for
    a reservation: the block layer fails it with EBADE ("Invalid exchange",
    its errno for RESERVATION CONFLICT). Any other failure is raised."""
    p = subprocess.run(["dd", "if=/dev/urandom", f"of=/dev/{sd}", "bs=4k", "count=1", f"seek={PR_LBA // 8}",
                        "oflag=direct", "conv=notrunc"], capture_output=True, text=True, timeout=300)  # fmt: skip
    if p.returncode == 0:
        return False
    assert "Invalid exchange" in p.stderr, f"a write on {sd} failed otherwise than for a reservation: {p.stderr}"
    return True


def sg_persist_across_gateways(plan: dict[str, Any]) -> dict[str, Any]:
    """fence_scsi's sequence with sg_persist from two open-iscsi initiators
    on image 0: this initiator (node A) through gateway 1, and an iface with
    another initiator name (node B) logged in through gateway 2 only. A
    registers and reserves Write Exclusive, Registrants Only; B registers
    and sees both keys and A's reservation; both write; B fences A
    (PREEMPT AND ABORT of A's key); A's writes are then refused through
    gateway 1 and its key is gone there too; B clears."""
    gw1, gw2 = (g["ip"] for g in plan["gateways"][:2])
    node_a = iscsiadm.INITIATORNAME.read_text().split("=", 1)[1].strip()
    ev: dict[str, Any] = {}
    sh("iscsiadm", "-m", "iface", "-I", SG_IFACE, "-o", "new")
    sh("iscsiadm", "-m", "iface", "-I", SG_IFACE, "-o", "update", "-n", "iface.initiatorname", "-v", SG_NODE_B)
    iscsiadm.login_all([f"{gw2}:3260"], iface=SG_IFACE)
    wait_for(lambda: session_disk(gw2, SG_NODE_B, 0, missing_ok=True) is not None, "node B's disk of LUN 0", 60)
    a, b = str(session_disk(gw1, node_a, 0)), str(session_disk(gw2, SG_NODE_B, 0))
    ev["disks"] = {"node A through gateway 1": a, "node B through gateway 2": b}
    for sd in (a, b):
        take_unit_attentions(sd)
    sg_persist(a, "--out", "--register", f"--param-sark={SG_KEY_A:#x}")
    sg_persist(a, "--out", "--reserve", f"--param-rk={SG_KEY_A:#x}", f"--prout-type={WE_RO}")
    sg_persist(b, "--out", "--register", f"--param-sark={SG_KEY_B:#x}")
    keys = sg_persist(b, "--in", "--read-keys")
    held = sg_persist(b, "--in", "--read-reservation")
    log(f"sg_persist: node B through gateway 2 reads keys:\n{keys}reservation:\n{held}")
    assert f"{SG_KEY_A:#x}" in keys and f"{SG_KEY_B:#x}" in keys, f"gateway 2 does not show both keys:\n{keys}"
    assert f"Key={SG_KEY_A:#x}" in held and "Write Exclusive, registrants only" in held, (
        f"gateway 2 does not show node A's reservation:\n{held}"
    )
    assert not sg_write_refused(a) and not sg_write_refused(b), "a registrant's write was refused"
    sg_persist(b, "--out", "--preempt-abort", f"--param-rk={SG_KEY_B:#x}", f"--param-sark={SG_KEY_A:#x}",
               f"--prout-type={WE_RO}")  # fmt: skip
    take_unit_attentions(a)
    assert sg_write_refused(a), "node A wrote through gateway 1 after node B fenced it"
    keys = sg_persist(a, "--in", "--read-keys")
    assert f"{SG_KEY_A:#x}" not in keys and f"{SG_KEY_B:#x}" in keys, f"gateway 1 still shows node A's key:\n{keys}"
    assert not sg_write_refused(b), "node B, the holder, was refused"
    ev["fenced"] = True
    sg_persist(b, "--out", "--clear", f"--param-rk={SG_KEY_B:#x}")
    assert "no registered reservation keys" in sg_persist(a, "--in", "--read-keys").lower()
    sh("iscsiadm", "-m", "node", "-T", plan["iqn"], "-p", f"{gw2}:3260", "-I", SG_IFACE, "--logout")
    sh("iscsiadm", "-m", "node", "-T", plan["iqn"], "-p", f"{gw2}:3260", "-I", SG_IFACE, "-o", "delete")
    iscsiadm.iface_delete(SG_IFACE)
    log(f"sg_persist: {ev}")
    return ev


NODE_A, NODE_B = "iqn.2026-11.org.cxgbit-ext:cluster-node-a", "iqn.2026-11.org.cxgbit-ext:cluster-node-b"
KEY_A, KEY_B = 0xA1A1, 0xB2B2


def reservations_across_gateways(plan: dict[str, Any], rdv: Rendezvous) -> dict[str, Any]:
    """A failover cluster's SCSI-3 reservation sequence on image 0, its two
    nodes on different gateways (the PDU initiator as each node): node A
    registers and reserves (Write Exclusive) through gateway 1; node B
    registers through gateway 2, sees A's reservation there and is refused
    writes; gateway 1's VM is killed; B preempts A through gateway 2 and
    writes; gateway 1 comes back (its agent replays the log) and A, logged
    in through it again, is refused and sees B's reservation."""
    gw1, gw2 = (g["ip"] for g in plan["gateways"][:2])
    ev: dict[str, Any] = {}

    def node(name: str, ip: str, isid: bytes | None = None) -> Connection:
        return pr_node(plan["iqn"], name, ip, isid)

    def refused(c: Connection) -> bool:
        # on user:rbd a gateway answers BUSY while its tcmu-runner waits
        # for the image's lock
        return pr.write_refused(c, PR_LBA, busy_s=120)

    a, b = node(NODE_A, gw1), node(NODE_B, gw2)
    pr.prout(a, pr.REGISTER, 0, KEY_A)
    pr.prout(a, pr.RESERVE, KEY_A, rtype=pr.WRITE_EXCLUSIVE)
    pr.prout(b, pr.REGISTER, 0, KEY_B)
    assert pr.read_reservation(b).key == KEY_A, "gateway 2 does not show node A's reservation"
    assert sorted(pr.read_keys(b)[1]) == [KEY_A, KEY_B]
    assert refused(b), "node B wrote through gateway 2 past node A's reservation"
    if plan["backstore"] == "iblock" and "cut" in plan["failures"]:
        # gateway 1's krbd mapping stays fenced after the cut (until the
        # kill below maps it again): the holder's write would fail there
        log("reservations: node A's write as holder not tried: gateway 1's krbd is fenced")
    else:
        assert not refused(a), "node A, the holder, was refused"
    ev["held_on_both"] = True
    a.close()
    (kill, killed, kill_s), (back, is_back, back_s) = FAILURES["kill"]
    t0 = time.monotonic()
    rdv.put(f"{kill}-gw1")
    rdv.wait(f"{killed}-gw1", kill_s)
    pr.prout(b, pr.PREEMPT, KEY_B, KEY_A, pr.WRITE_EXCLUSIVE)
    ev["preempted_after_kill_s"] = round(time.monotonic() - t0, 1)
    assert pr.read_reservation(b).key == KEY_B and pr.read_keys(b)[1] == [KEY_B]
    assert not refused(b), "node B, now the holder, was refused"
    rdv.put(f"{back}-gw1")
    rdv.wait(f"{is_back}-gw1", back_s)
    a = node(NODE_A, gw1)
    try:
        assert pr.read_reservation(a).key == KEY_B, "gateway 1, back, does not show node B's reservation"
        assert pr.read_keys(a)[1] == [KEY_B]
        assert refused(a), "node A wrote through gateway 1 after node B preempted it"
    finally:
        a.close()
    ev["refused_after_return"] = True
    # node B's connection sat idle while gateway 1 booted, past LIO's
    # NOP-In timeout: its nexus (same ISID) logs in again to clear
    b.close()
    b = node(NODE_B, gw2, b.isid)
    pr.prout(b, pr.CLEAR, KEY_B)
    assert pr.read_keys(b)[1] == []
    b.close()
    log(f"reservations: {ev}")
    return ev


# the blocks node A and B write to: past fio's 32M and the stale write's
PR_LBA = (100 << 20) // 512


# the blocks the cut-off gateway's held write goes to: past fio's 32M
STALE_OFFSET_MB = 96
STALE_BYTES = 1 << 20


def blocklisted(rdv: Rendezvous, ip: str) -> set[str]:
    """The blocklist's entries for clients at ``ip`` (ADDR:PORT/NONCE: a
    client that connects again has another nonce), as the host keeps them
    in the rendezvous."""
    f = rdv.path / "blocklist.json"
    entries = json.loads(f.read_text()) if rdv.has("blocklist.json") else []
    return {e for e in entries if e.split(":", 1)[0] == ip}


def _direct_write(dev: str, offset_mb: int, data: bytes) -> None:
    """``data`` at ``offset_mb`` MiB of ``dev``, O_DIRECT (past every cache)."""
    src = Path(f"/run/cxe-direct-{os.getpid()}-{threading.get_ident()}")
    src.write_bytes(data)
    try:
        sh("dd", f"if={src}", f"of={dev}", "bs=1M", f"seek={offset_mb}", f"count={len(data) >> 20}",
           "oflag=direct", "conv=notrunc", timeout=600)  # fmt: skip
    finally:
        src.unlink()


def _direct_read(dev: str, offset_mb: int, size: int) -> bytes:
    p = subprocess.run(["dd", f"if={dev}", "bs=1M", f"skip={offset_mb}", f"count={size >> 20}", "iflag=direct"],
                       capture_output=True, timeout=600, check=True)  # fmt: skip
    return p.stdout


def _verify_until(dev: str, stop: threading.Event) -> object:
    """Passes of write+verify over the whole device until ``stop``; each
    pass reads back what it wrote, 16 blocks at a time as it writes: the
    checks watch where writes complete, and a pass that wrote all its
    blocks first and then only read would hide for the length of its read
    phase where the map sends them. The count, or the first failure."""
    passes = 0
    while not stop.is_set():
        res = _verify(dev, loops=1, backlog=16)
        if isinstance(res, Exception):
            return res
        passes += 1
    return passes


def _verify(dev: str, loops: int = 4, backlog: int | None = None) -> object:
    try:
        return fio.write_verify(dev, size="32M", bs="64k", iodepth=8, loops=loops, backlog=backlog)
    except (fio.FioError, OSError) as e:
        return e


if __name__ == "__main__":
    sys.exit(run_role(gateway, initiator))
