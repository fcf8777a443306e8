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
import json
import os
import re
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from cxgbit_ext.control import Control  # noqa: E402
from iscsi_initiator import iscsiadm  # noqa: E402
from testbed import fio  # noqa: E402
from testbed.kmod import insmod, module_ko  # noqa: E402

warnings.filterwarnings("ignore", message="Cannot set dbroot")
# How long a session that lost its connection holds its commands before
# it fails them and dm-multipath moves to another path (the iSCSI
# replacement timeout, the session's recovery_tmo). multipathd writes its
# fast_io_fail_tmo there when it sets a path up, over what iscsiadm set:
# the multipath setting is the one that holds.
RECOVERY_TMO = 5
# ceph-iscsi's documented multipath settings for Linux initiators (LIO-ORG
# devices, ALUA prioritizer, failover path groups), for an iblock backstore,
# but for two: the failback deferred 10 s, not 60 (the deferral, no
# failback to a path that has just come back, is multipathd's, the same
# rule at 10 s; each failure waits through it once), and fast_io_fail_tmo
# RECOVERY_TMO, not 25 (25 s spent on every failover that waits for a dead
# connection).
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
}
""".replace("RECOVERY_TMO", str(RECOVERY_TMO))


def log(msg: str) -> None:
    print(f"[{os.uname().nodename} {time.monotonic():8.1f}] {msg}", flush=True)


def sh(*cmd: str, timeout: float = 120, check: bool = True) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}")
    return p.stdout


def wait_for(cond: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


class Rendezvous:
    def __init__(self, path: Path) -> None:
        self.path = path

    def put(self, name: str, body: str = "") -> None:
        tmp = self.path / f".{name}.tmp"
        tmp.write_text(body)
        tmp.rename(self.path / name)

    def has(self, name: str) -> bool:
        # a listing, not a lookup: no negative entry can be cached on 9p
        return name in os.listdir(self.path)

    def wait(self, name: str, timeout: float) -> None:
        wait_for(lambda: self.has(name), f"waiting for {name}", timeout)


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
    dev = ""
    runner: subprocess.Popen[bytes] | None = None
    if backstore == "iblock":
        sh("modprobe", "rbd")
        dev = sh("rbd", "map", plan["image"]).strip()
        log(f"{plan['image']} mapped at {dev}")
    else:
        runner = start_tcmu_runner()
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    p = insmod(module_ko())
    assert p.returncode == 0, p.stderr
    portals = ",".join(g["ip"] for g in plan["gateways"])
    cli = (sys.executable, "-m", "cxgbit_ext.cli")
    create = (*cli, "gateway", "create", "--iqn", plan["iqn"], "--rbd", plan["image"], "--portals", portals,
              "--gateway", str(n), "--owner", str(plan["owner"]), "--backstore", backstore)  # fmt: skip
    log(sh(*create).strip())
    again = sh(*create)
    assert again.startswith("already laid out"), again
    # saved and restored as an admin would at a reboot: the initiator's ALUA
    # and port-id checks then run against the restored layout. Not on a
    # gateway's second boot: its initiator is logging back in, and clearing
    # a user:rbd LUN tcmu-runner is serving deadlocks the two (LIO's rmdir
    # waits for tcmu-runner's answer to the removal holding the directory's
    # lock, which tcmu-runner's worker waits for in a path lookup).
    if not rdv.has(f"restart-gw{n}"):
        saved = ("--file", "/run/cxgbit-ext.json", "--lio", "/run/saveconfig.json")
        shown = sh(*cli, "gateway", "show", "--iqn", plan["iqn"])
        sh(*cli, "save", *saved)
        RTSRoot().clear_existing(confirm=True)
        log(sh(*cli, "restore", *saved).strip())
        assert sh(*cli, "gateway", "show", "--iqn", plan["iqn"]) == shown, "the layout changed across save and restore"
        assert sh(*create).startswith("already laid out")
    log(sh(*cli, "portals").strip())
    rdv.put(f"ready-gw{n}")
    target = next(t for t in FabricModule("iscsi").targets if t.wwn == plan["iqn"])
    tpg = next(t for t in target.tpgs if t.tag == n)
    while not rdv.has("done"):
        for verb, on in (("disable", False), ("enable", True)):
            if rdv.has(f"{verb}-gw{n}") and not rdv.has(f"{verb}d-gw{n}"):
                tpg.enable = on
                log(f"TPG {n} {verb}d")
                rdv.put(f"{verb}d-gw{n}")
        if runner is not None and rdv.has(f"killtcmu-gw{n}") and not rdv.has(f"tcmukilled-gw{n}"):
            runner.kill()  # SIGKILL: a crash, not a shutdown
            runner.wait(30)
            log("tcmu-runner killed")
            rdv.put(f"tcmukilled-gw{n}")
        if runner is not None and rdv.has(f"starttcmu-gw{n}") and not rdv.has(f"tcmustarted-gw{n}"):
            runner = start_tcmu_runner()
            log("tcmu-runner started again")
            rdv.put(f"tcmustarted-gw{n}")
        time.sleep(0.5)
    c = Control().adapter("soft0").counters
    log(f"soft0 counters: {c}")
    rdv.put(f"counters-gw{n}.json", json.dumps(c))
    sh(*cli, "gateway", "delete", "--iqn", plan["iqn"])
    if dev:
        sh("rbd", "unmap", dev)
    if runner is not None:
        runner.terminate()
        runner.wait(30)
        # when each gateway asked for, took and lost the image's lock: the
        # failover's timeline on the target side, beside the initiator's
        for log_file in (Path("/var/log/tcmu-runner.log"), Path("/run/tcmu-runner.out")):
            if log_file.exists():
                rdv.put(f"gw{n}-{log_file.name}", log_file.read_text(errors="replace"))
    return 0


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


def start_multipath() -> None:
    """multipath-tools with ceph-iscsi's settings, fed paths by udev (the
    paths of sessions already logged in too)."""
    Path("/etc/multipath.conf").write_text(MULTIPATH_CONF)
    sh("modprobe", "dm_multipath")
    sh("modprobe", "scsi_dh_alua")
    # multipath-tools learn of paths and make /dev/mapper nodes through udev
    subprocess.run(["/lib/systemd/systemd-udevd", "--daemon"], check=True)
    sh("udevadm", "trigger", "--action=add", "--subsystem-match=block")
    sh("udevadm", "settle", "--timeout=60")
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
            logout_all()
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
        for i in range(len(plan["gateways"])):
            rdv.wait(f"ready-gw{i + 1}", 600)
        iscsiadm.start_iscsid()
        for g in plan["gateways"]:
            portal = f"{g['ip']}:3260"
            iscsiadm.discover(portal)
            # fail a dead path within seconds, not open-iscsi's 120 s
            iscsiadm.set_node(plan["iqn"], portal, "node.session.timeo.replacement_timeout", str(RECOVERY_TMO))
            iscsiadm.login(plan["iqn"], portal)
        start_multipath()
        wait_for(lambda: len(paths()) == 2, "multipath: both paths of one map", 60)
        sds = paths()
        # a survivor waits out a dead owner's watch (30 s) before it may
        # write: longer than the SCSI layer's default 30 s per command
        for sd in sds:
            Path(f"/sys/block/{sd}/device/timeout").write_text("180\n")
        wwids = set(re.findall(r"^(\S+) dm-\d+", sh("multipath", "-ll"), re.M))
        assert len(wwids) == 1, f"expected one WWID, got {wwids}"
        dm = f"/dev/mapper/{wwids.pop()}"
        # multipathd makes the map; udev makes its /dev/mapper node, after
        # multipath -ll already shows the map
        sh("udevadm", "settle", "--timeout=60", check=False)
        wait_for(lambda: Path(dm).exists(), f"udev: {dm}", 60)
        # multipathd has set the map's paths up: each session now holds a
        # lost connection's commands for what it wrote there
        tmo = {p.parent.name: int(p.read_text()) for p in Path("/sys/class/iscsi_session").glob("*/recovery_tmo")}
        log(f"recovery_tmo: {tmo}")
        result["recovery_tmo"] = tmo
        assert len(tmo) == 2 and set(tmo.values()) == {RECOVERY_TMO}, (
            f"sessions hold a lost connection's commands {tmo} s, not {RECOVERY_TMO}"
        )
        # the kernel picks a map's path group at its first I/O: until then
        # both groups read "enabled", whatever their priorities
        sh("dd", f"if={dm}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct")
        mp = sh("multipath", "-ll")
        log(mp)
        result["multipath"] = mp
        groups = re.findall(r"policy='[^']*' prio=(\d+) status=(\w+)", mp)
        assert len(groups) == 2, f"expected two path groups: {groups}"
        result["groups"] = groups
        assert int(groups[0][0]) > int(groups[1][0]) and groups[0][1] == "active", f"AO group not preferred: {groups}"
        rtpg = {sd: sh("sg_rtpg", "-d", f"/dev/{sd}") for sd in sds}
        answers = set(rtpg.values())
        log(f"sg_rtpg: {rtpg}")
        assert len(answers) == 1, f"sg_rtpg differs between paths: {rtpg}"
        result["failovers"] = []
        for how in plan["failures"]:
            result["failovers"].append(failover_under_fio(plan, rdv, dm, how))
        # the owner serves again: a last pass goes through it
        _ok(_verify(dm, loops=1), "fio verify after failback")
    return 0 if result["ok"] else 1


def maps() -> dict[str, list[str]]:
    """Each multipath map's WWID and its sd paths."""
    out = subprocess.run(["multipath", "-ll"], capture_output=True, text=True).stdout
    res: dict[str, list[str]] = {}
    wwid = ""
    for line in out.splitlines():
        m = re.match(r"^(\S+) dm-\d+ ", line)
        if m:
            wwid = m.group(1)
            res[wwid] = []
        elif wwid:
            res[wwid] += re.findall(r"\d+:\d+:\d+:\d+ (sd\w+) ", line)
    return res


def logout_all() -> None:
    """Remove the maps, then log out, as an admin takes LUNs away: a map
    that queues I/O with no path left (no_path_retry queue) would block
    every opener of its device, udev's workers first. A map is removed
    only once nobody holds it open, and an opener may still be waiting on
    a command a failing gateway never answered: logging out fails those,
    so the maps are flushed again after the logout until they are gone."""
    for wwid in maps():
        sh("dmsetup", "message", wwid, "0", "fail_if_no_path", check=False)
    sh("udevadm", "settle", "--timeout=60", check=False)
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


def paths() -> list[str]:
    out = subprocess.run(["multipath", "-ll"], capture_output=True, text=True).stdout
    return re.findall(r"\d+:\d+:\d+:\d+ (sd\w+) ", out)


def active_path(dm: str) -> str | None:
    """The sd device of the path group dm-multipath uses now (one direct
    read first: an idle map marks no group active)."""
    try:
        subprocess.run(["dd", f"if={dm}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct"],
                       capture_output=True, timeout=60)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None  # every path down: the read waits in the queue
    out = subprocess.run(["multipath", "-ll"], capture_output=True, text=True).stdout
    m = re.search(r"status=active\n[ |`-]+\d+:\d+:\d+:\d+ (sd\w+)\s+\S+\s+active", out)
    return m.group(1) if m else None


def path_writes(dm: str) -> dict[str, int]:
    """Write requests completed on each sd path of ``dm`` (field 5 of
    /sys/block/sdX/stat). Only the map writes to its paths (udev and
    multipathd read them), so the path whose count moves carries fio's
    I/O. Reading the counters sends no I/O: a read on the map, or
    ``multipath -ll``'s path checks, would wait in the queue of a dead path
    (a killed tcmu-runner's commands end only at its cmd_time_out)."""
    name = Path(dm).resolve().name
    sds = sorted(p.name for p in Path(f"/sys/block/{name}/slaves").iterdir())
    return {sd: int(Path(f"/sys/block/{sd}/stat").read_text().split()[4]) for sd in sds}


def writes_move(dm: str, sd: str, what: str, t0: float, timeout: float) -> None:
    """Wait until writes complete on path ``sd`` of ``dm`` (counted from
    now); log the counters then."""
    base = path_writes(dm)
    wait_for(lambda: path_writes(dm)[sd] > base[sd], what, timeout)
    log(f"+{time.monotonic() - t0:.1f} s: writes on {sd}; completed writes per path: was {base}, now {path_writes(dm)}")


# how the owner fails and comes back: (request, its answer, seconds to
# wait for it) for the failure, then for the return; a gateway answers
# disable/enable, the host kill (its qemu) and restart (a new boot)
FAILURES = {
    "disable": (("disable", "disabled", 60), ("enable", "enabled", 60)),
    "tcmu": (("killtcmu", "tcmukilled", 60), ("starttcmu", "tcmustarted", 120)),
    "kill": (("kill", "killed", 60), ("restart", "ready", 600)),
}
FAILURE_NAMES = {"disable": "TPG disabled", "tcmu": "tcmu-runner killed", "kill": "VM killed"}


def failover_under_fio(plan: dict[str, Any], rdv: Rendezvous, dm: str, how: str) -> dict[str, Any]:
    """fio write+verify on the multipath device while the owner gateway
    fails (``how``: its TPG disabled, or its VM killed by the host) and then
    comes back: I/O moves to the other gateway and back, every block
    written before the failure reads back after it."""
    owner = plan["owner"]
    done: list[object] = []
    first = active_path(dm)
    stop = threading.Event()
    t = threading.Thread(target=lambda: done.append(_verify_until(dm, stop)))
    t.start()
    time.sleep(3)
    ev: dict[str, Any] = {"failure": FAILURE_NAMES[how], "gateway": owner}
    (fail, failed, fail_s), (back, is_back, back_s) = FAILURES[how]
    t0 = time.monotonic()
    rdv.put(f"{fail}-gw{owner}")
    rdv.wait(f"{failed}-gw{owner}", fail_s)
    assert t.is_alive(), "fio ended before the gateway failed: the failover was not under I/O"
    (other,) = set(path_writes(dm)) - {first}
    writes_move(dm, other, "I/O moving to the other gateway", t0, 120)
    ev["io_moved_after_s"] = round(time.monotonic() - t0, 1)
    log(f"failover: {ev}")
    if how in ("kill", "tcmu"):
        # the survivor takes the image's lock once the dead owner's watch
        # expires, and fences it: the owner's address joins the blocklist
        ip = plan["gateways"][owner - 1]["ip"]
        wait_for(lambda: ip in sh("ceph", "osd", "blocklist", "ls", check=False), f"{ip} on the blocklist", 180)
        ev["fenced_after_s"] = round(time.monotonic() - t0, 1)
        log(f"fenced: {ev}")
    t0 = time.monotonic()
    rdv.put(f"{back}-gw{owner}")
    rdv.wait(f"{is_back}-gw{owner}", back_s)
    if how == "kill":
        ev["gateway_back_after_s"] = round(time.monotonic() - t0, 1)
    writes_move(dm, first, "I/O failing back to the owner", t0, 300)
    ev["failed_back_after_s"] = round(time.monotonic() - t0, 1)
    log(f"failback: {ev}")
    stop.set()
    t.join(timeout=900)
    assert not t.is_alive(), "fio did not finish"
    assert done and not isinstance(done[0], Exception), f"fio verify over the failover: {done}"
    ev["fio_passes"] = done[0]
    return ev


def _verify_until(dev: str, stop: threading.Event) -> object:
    """Passes of write+verify over the whole device until ``stop``; each
    pass reads back what it wrote. The count, or the first failure."""
    passes = 0
    while not stop.is_set():
        res = _verify(dev, loops=1)
        if isinstance(res, Exception):
            return res
        passes += 1
    return passes


def _ok(res: object, what: str) -> None:
    assert not isinstance(res, Exception), f"{what}: {res}"


def _verify(dev: str, loops: int = 4) -> object:
    try:
        return fio.write_verify(dev, size="32M", bs="64k", iodepth=8, loops=loops)
    except (fio.FioError, OSError) as e:
        return e


if __name__ == "__main__":
    sys.exit(run_role(gateway, initiator))
