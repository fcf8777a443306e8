"""A soak with chaos (make soak): offloaded sessions under fio verify and
PDU-level write/read-back loops for --soak-minutes while a driver injects,
at random intervals, what a production host sees: link flaps, an adapter
unbound and bound again, the portal's offload switched off and on, the
initiator's connections reset, iscsid killed and restarted, a connection
sending a malformed PDU, a SYN flood on the portal. After each event the
sessions must be going again (open-iscsi logged in, every PDU-level
session reading back a new write) within HEAL_S, offloaded where they
logged in again while the portal was; at the end fio and every read-back
found no bad block, the kernel log is clean (the suite's check), no
connection is left, and unreclaimable slab has come back to its
baseline. What ran is printed: events by kind, the longest recovery,
how many connections were offloaded after each, bytes verified,
reconnects.

Runs only when named (a tests/vm batch skips it, saying why):

    testbed/run --kernel 6.12 -- tests/vm/test_soak.py --soak-minutes 30

The sessions: open-iscsi over tgt0 (soft0) with fio write+verify on two
LUNs, and two PDU-level sessions over tgt1 (soft1) writing and reading
back their own blocks of a third.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, ScsiError
from testbed import fio, topo

from .conftest import CFS, PDU_INITIATOR, connection_lines, offloaded_target, set_offload
from .test_steering import raw_syn

IQN = "iqn.2026-11.org.cxgbit-ext:soak"
T0, T1 = topo.LINKS
PORT = 3260
HEAL_S = 90  # within open-iscsi's replacement timeout (120 s): no I/O error
PDU_SESSIONS = 2
BLOCKS = 128  # 64 KiB per PDU-level write
SLAB_SLACK_KIB = 4096  # unreclaimable slab may differ by this after the run


@pytest.fixture(scope="module")
def soak_minutes(request: pytest.FixtureRequest) -> float:
    named = any(os.path.basename(a.split("::")[0]) == os.path.basename(__file__) for a in request.config.args)
    if not named:
        pytest.skip("the soak runs only when named (make soak): it takes --soak-minutes per kernel")
    return float(request.config.getoption("--soak-minutes"))


def sunreclaim_kib() -> int:
    """Unreclaimable slab (kB), once the reclaimable caches are dropped."""
    Path("/proc/sys/vm/drop_caches").write_text("3")
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("SUnreclaim:"):
            return int(line.split()[1])
    raise AssertionError("no SUnreclaim in /proc/meminfo")


@pytest.fixture(scope="module")
def soak_target(soak_minutes: float, iscsid: None, module_ko: Path) -> Iterator[int]:
    """The target (three RAM-disk LUNs, the portal offloaded), soft1 serving
    tgt1; yields the unreclaimable slab measured before any session."""
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",) * 3, lun_size=32 * topology.MiB,
                          portals=(("0.0.0.0", PORT),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        (CFS / "adapters/soft1").mkdir()
        try:
            (CFS / "adapters/soft1/netdev").write_text(T1.tgt_dev)
            yield sunreclaim_kib()
        finally:
            (CFS / "adapters/soft1").rmdir()


class PduWriter(threading.Thread):
    """A PDU-level session over tgt1 writing random blocks to its own LBAs of
    LUN 2 and reading each back; it logs in again whenever it is dropped.
    A read-back that differs from what was acknowledged is a bad block."""

    def __init__(self, idx: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.idx, self.stop = idx, stop
        self.verified = self.reconnects = 0
        self.bad: list[str] = []

    def run(self) -> None:
        lba0 = self.idx * 16384
        while not self.stop.is_set():
            c = Connection(T1.tgt_ip, PORT)
            try:
                c.login(PDU_INITIATOR, IQN)
                while not self.stop.is_set():
                    lba = lba0 + random.randrange(0, 16384 - BLOCKS, BLOCKS)
                    data = os.urandom(BLOCKS * 512)
                    try:
                        c.scsi_write(lba, data, lun=2)
                        got = c.scsi_read(lba, BLOCKS, lun=2)
                    except ScsiError as e:
                        if e.sense_key == 6:  # UNIT ATTENTION of a new session: again
                            continue
                        raise
                    if got != data:
                        self.bad.append(f"session {self.idx}: LBA {lba} reads back other data")
                    self.verified += 1
            except (ConnectionClosed, LoginError, ScsiError, OSError):
                self.reconnects += 1
                time.sleep(0.5)
            finally:
                c.close()


def fio_job(dev: str, seconds: float) -> subprocess.Popen[str]:
    """fio writing random 64 KiB blocks over dev with crc32c headers and
    verifying them as it goes, for seconds."""
    args = ["fio", "--output-format=json", "--name=soak", f"--filename={dev}", "--ioengine=libaio", "--direct=1",
            "--rw=randwrite", "--bs=64k", "--iodepth=8", "--size=32M", "--verify=crc32c", "--verify_backlog=64",
            "--verify_fatal=1", "--time_based", f"--runtime={int(seconds)}"]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def healed(writers: list[PduWriter], since: list[int]) -> bool:
    """The open-iscsi session is logged in and every PDU-level session has
    had a write read back since ``since`` (their counts then)."""
    states = [(Path(f"/sys/class/iscsi_session/session{s.sid}/state")).read_text().strip()
              for s in iscsiadm.sessions() if s.iqn == IQN]  # fmt: skip
    return states == ["LOGGED_IN"] and all(w.verified > n for w, n in zip(writers, since, strict=True))


# ---- the events ---------------------------------------------------------------


def link_flap() -> None:
    with topo.in_netns():
        topo.sh("ip", "link", "set", T0.tgt_dev, "down")
        time.sleep(random.uniform(1, 4))
        topo.sh("ip", "link", "set", T0.tgt_dev, "up")


def adapter_rebind() -> None:
    (CFS / "adapters/soft1/netdev").write_text("\n")
    time.sleep(random.uniform(0.5, 2))
    (CFS / "adapters/soft1/netdev").write_text(T1.tgt_dev)


def offload_toggle() -> None:
    set_offload(False)
    time.sleep(random.uniform(1, 4))
    set_offload(True)


def tcp_reset() -> None:
    """Every connection of the initiator's to the portal reset (ss -K), as
    a middlebox or a peer's crash does: they all log in again."""
    topo.sh("ss", "-K", "dst", f"{T0.tgt_ip}", "dport", "=", str(PORT))
    topo.sh("ss", "-K", "dst", f"{T1.tgt_ip}", "dport", "=", str(PORT))


def iscsid_kill() -> None:
    subprocess.run(["pkill", "-KILL", "-x", "iscsid"], check=False)
    time.sleep(0.5)
    iscsiadm.start_iscsid()


def malformed_pdu() -> None:
    """A logged-in connection sends a PDU of an opcode no initiator sends:
    the target drops that connection, and only that one."""
    c = Connection(T0.tgt_ip, PORT)
    try:
        c.login(PDU_INITIATOR, IQN)
        c.send_raw(bytes([0x3F, 0x80]) + os.urandom(46))
        assert c.closed_by_peer(), "a connection that sent a malformed PDU stayed open"
    finally:
        c.close()


def syn_flood(count: int = 2000) -> None:
    """SYNs from random ports of the initiator's address on tgt0, from a
    raw socket: no handshake completes (the initiator's TCP resets them)."""
    for _ in range(count):
        raw_syn((T0.ini_ip, random.randrange(20000, 60000)), (T0.tgt_ip, PORT))


EVENTS: dict[str, Callable[[], None]] = {
    "link flap": link_flap,
    "adapter rebind": adapter_rebind,
    "offload toggle": offload_toggle,
    "TCP reset": tcp_reset,
    "iscsid kill": iscsid_kill,
    "malformed PDU": malformed_pdu,
    "SYN flood": syn_flood,
}


@pytest.mark.timeout(0)  # --soak-minutes long: testbed/run's --timeout bounds it (make soak)
def test_a_soak_with_chaos(soak_target: int, soak_minutes: float) -> None:
    baseline = soak_target
    seconds = soak_minutes * 60
    iscsiadm.discover(T0.tgt_ip)
    iscsiadm.login(IQN, f"{T0.tgt_ip}:{PORT}")
    disks = iscsiadm.session_disks(IQN, expect=3)
    stop = threading.Event()
    writers = [PduWriter(i, stop) for i in range(PDU_SESSIONS)]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 30
    while len(connection_lines()) < 1 + PDU_SESSIONS or not healed(writers, [0] * PDU_SESSIONS):
        assert time.monotonic() < deadline, f"sessions not offloaded: {connection_lines()}"
        time.sleep(0.2)
    jobs = [fio_job(disks[lun], seconds + 60) for lun in (0, 1)]
    rng = random.Random(int.from_bytes(os.urandom(4)))
    injected: Counter[str] = Counter()
    heal_times: list[float] = []
    offloaded: Counter[int] = Counter()  # connections offloaded once healed, by count
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            time.sleep(rng.uniform(5, 20))
            kind = rng.choice(list(EVENTS))
            print(f"{time.strftime('%T')} {kind}", flush=True)
            EVENTS[kind]()
            injected[kind] += 1
            t0, since = time.monotonic(), [w.verified for w in writers]
            while not healed(writers, since):
                assert time.monotonic() - t0 < HEAL_S, f"after {kind}: not back in {HEAL_S} s: {connection_lines()}"
                time.sleep(0.2)
            heal_times.append(time.monotonic() - t0)
            offloaded[len(connection_lines())] += 1
            print(f"  going again in {heal_times[-1]:.1f} s, {len(connection_lines())} connections offloaded")
            assert all(j.poll() is None for j in jobs), "fio ended early: " + "".join(
                j.stderr.read() for j in jobs if j.poll() is not None and j.stderr
            )
    finally:
        stop.set()
        for w in writers:
            w.join(30)
    results = []
    for j in jobs:
        out, err = j.communicate(timeout=300)
        results += fio.jobs(fio.parse(j.args, j.returncode, out, err))  # type: ignore[arg-type]
    iscsiadm.logout()
    deadline = time.monotonic() + 15
    while connection_lines() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not connection_lines(), f"connections left: {connection_lines()}"
    after = sunreclaim_kib()
    written = sum(r.write_bytes for r in results)
    print(f"soak: {soak_minutes:g} min, {sum(injected.values())} events ({dict(injected)}), "
          f"heal max {max(heal_times, default=0):.1f} s, offloaded once healed {dict(offloaded)}; "
          f"fio wrote and verified {written >> 20} MiB, "
          f"errors {sum(r.error for r in results)}; PDU sessions read back {sum(w.verified for w in writers)} "
          f"writes, reconnected {sum(w.reconnects for w in writers)} times, bad blocks "
          f"{sum(len(w.bad) for w in writers)}; unreclaimable slab {baseline} -> {after} kB")  # fmt: skip
    assert not [b for w in writers for b in w.bad], [b for w in writers for b in w.bad]
    assert all(r.error == 0 for r in results), results
    assert all(w.verified > 0 for w in writers), "a PDU-level session never got a write read back"
    assert set(injected) == set(EVENTS) or seconds < 600, f"events injected: {dict(injected)}"
    assert after <= baseline + SLAB_SLACK_KIB, f"unreclaimable slab {baseline} -> {after} kB"
