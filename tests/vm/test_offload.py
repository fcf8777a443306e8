"""The offloaded data path through the software adapter, on real LIO.

The portal is 0.0.0.0:3260 on the target host; soft0 serves tgt0 only, so a
login to 198.18.0.1 (over tgt0) is offloaded while a login to 198.18.1.1
(over tgt1) is stock iSCSI/TCP, at the same time. Data written through the
offloaded path reads back equal, with and without digests; the counters
show the PDUs and the bytes placed straight into command pages.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cxgbit_ext import topology
from cxgbit_ext.control import Control
from iscsi_initiator import iscsiadm
from iscsi_initiator.pdu import F_DATAIN_STATUS, RSVD_TAG, Op, nop_out, scsi_command
from iscsi_initiator.session import Connection, Params
from testbed import fio, topo

from .conftest import (
    CFS,
    PDU_INITIATOR,
    offloaded_peers,
    offloaded_target,
    set_offload,
    soft0_counters,
    target_tpg_params,
)

IQN = "iqn.2026-11.org.cxgbit-ext:offload"
OFF, STOCK = topo.LINKS  # tgt0 served by soft0, tgt1 not
BLOCK = 512


@pytest.fixture(scope="module")
def offload_target(iscsid: None, module_ko: Path) -> Iterator[None]:
    t = topology.Topology(
        iqn=IQN,
        backstores=("ramdisk", "fileio"),
        lun_size=64 * topology.MiB,
        portals=(("0.0.0.0", 3260),),
        offload=True,
        fileio_dir=Path("/var/tmp/cxe-offload"),
    )
    with offloaded_target(module_ko, t):
        yield


def login(ip: str, params: Params | None = None) -> Connection:
    c = Connection(ip)
    c.login(PDU_INITIATOR, IQN, params)
    return c


def test_read_is_segmented_by_the_adapter(offload_target: None) -> None:
    """A READ is handed to the adapter once and cut there into
    MaxBurstLength sequences of MaxRecvDataSegmentLength Data-In PDUs (the
    initiator checks DataSN, offsets and the F and S bits of each); the
    WRITE before it was placed, not copied. Each command's pages were
    walked from their start once (sg_walk_starts), the WRITE's across the
    PDUs that carried its data (8 KiB at most each, over several R2Ts) and
    the READ's across its 65 Data-In PDUs: a walk that started over per
    PDU or per burst would make placing and sending quadratic in the I/O
    size. Write placement under every setting is
    test_matrix's and test_pdu_suite's first-burst cases'."""
    before = soft0_counters()
    c = login(OFF.tgt_ip, Params(header_digest="CRC32C", data_digest="CRC32C", max_recv_dlen=8192,
                                 first_burst=65536, max_burst=262144))  # fmt: skip
    assert f"{OFF.ini_ip}:" in " ".join(offloaded_peers())
    data = os.urandom(1037 * BLOCK)
    c.scsi_write(2048, data)
    assert c.scsi_read(2048, 1037) == data
    assert c.nop(b"ping").data == b"ping"
    assert c.logout() == 0
    after = soft0_counters()
    assert after["connections"] == before["connections"] + 1
    assert after["bytes_placed"] - before["bytes_placed"] == len(data)
    assert after["bytes_copied"] == before["bytes_copied"]
    # 1037 blocks: bursts of 256 KiB, 256 KiB and 6.5 KiB; 32 + 32 + 1 PDUs of at most 8 KiB
    assert after["bursts"] - before["bursts"] == 3
    assert after["burst_pdus"] - before["burst_pdus"] == 65
    starts = after["sg_walk_starts"] - before["sg_walk_starts"]
    assert starts == 2, f"{starts} walks of two commands' pages begun at their start"


def test_both_paths_live_at_once(offload_target: None) -> None:
    a = login(OFF.tgt_ip)
    b = login(STOCK.tgt_ip)  # its own ISID: a second session, not a reinstatement
    peers = offloaded_peers()
    assert any(p.startswith(f"{OFF.ini_ip}:") for p in peers)
    assert not any(p.startswith(f"{STOCK.ini_ip}:") for p in peers)
    for c in (a, b):
        data = os.urandom(64 * BLOCK)
        c.scsi_write(4096, data)
        assert c.scsi_read(4096, 64) == data
        c.logout()


def test_open_iscsi_fio_verify_offloaded(offload_target: None) -> None:
    portal = f"{OFF.tgt_ip}:3260"
    assert any(d.iqn == IQN for d in iscsiadm.discover(portal))
    iscsiadm.login(IQN, portal)
    disks = iscsiadm.session_disks(IQN, expect=2)
    assert any(p.startswith(f"{OFF.ini_ip}:") for p in offloaded_peers())
    before = soft0_counters()
    for dev in disks.values():
        (res,) = fio.write_verify(dev, size="16M", bs="64k")
        assert res.write_bytes == 16 * topology.MiB
    after = soft0_counters()
    assert after["bytes_placed"] - before["bytes_placed"] >= 2 * 16 * topology.MiB
    # responses went out from the completing thread, not only LIO's TX thread
    assert after["tx_inline"] > before["tx_inline"]
    # at iodepth 32 the receive side handles several queued PDUs per wake-up
    pdus = after["pdus_rx"] - before["pdus_rx"]
    waits = after["rx_waits"] - before["rx_waits"]
    print(f"receive: {pdus} PDUs in {waits} wake-ups ({pdus / waits:.2f} per wake-up)")
    assert pdus > waits
    iscsiadm.logout(IQN, portal)


def connection_counter(peer: str, name: str) -> int:
    """One counter of the one offloaded connection from ``peer``."""
    (conn,) = [c for c in Control(CFS).connections() if c.peer == peer]
    return conn.counters[name]


@pytest.mark.parametrize("ip", [OFF.tgt_ip, STOCK.tgt_ip], ids=["offload", "stock"])
def test_statsn_follows_the_wire_when_responses_go_inline(offload_target: None, ip: str) -> None:
    """Responses sent by the thread that completed the command (tx_inline)
    and those LIO's TX thread sends (NOP-In replies) share one connection:
    pipelined READs, WRITEs with immediate data and pings all answered,
    every status-carrying PDU's StatSN one above the one before it, in the
    order they arrive, and every read returns what was written."""
    c = login(ip, Params(max_recv_dlen=8192))
    peer = "{}:{}".format(*c.sock.getsockname())
    offloaded = peer in offloaded_peers()
    assert offloaded == (ip == OFF.tgt_ip)
    inline0 = connection_counter(peer, "tx_inline") if offloaded else 0
    blocks = 16  # 8 KiB: one Data-In each
    data = {i: os.urandom(blocks * BLOCK) for i in range(12)}
    for i, d in data.items():
        c.scsi_write(8192 + i * blocks, d)
    want: dict[int, int] = {}  # ITT -> index into data, or -1 for a ping
    for round_ in range(4):
        for i in data:
            itt = c.next_itt()
            cdb = struct.pack(">BBIBHB", 0x28, 0, 8192 + i * blocks, 0, blocks, 0)
            c.send(scsi_command(cdb, itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, read_len=blocks * BLOCK))
            c.cmdsn += 1
            want[itt] = i
            if i % 4 == round_:
                itt = c.next_itt()
                c.send(nop_out(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, data=b"ping"))
                want[itt] = -1
    statsns: list[int] = []
    got: dict[int, bytes] = {}
    while len(got) < len(want):
        p = c.recv()
        if p.opcode == Op.NOOP_IN and p.itt == RSVD_TAG:
            continue  # the target's own ping carries no new StatSN
        assert p.itt in want and p.itt not in got, f"unexpected {p!r}"
        if p.opcode == Op.DATA_IN:
            assert p.flags & F_DATAIN_STATUS and p.u8(3) == 0, f"{p!r} without good status"
        elif p.opcode == Op.NOOP_IN:
            assert want[p.itt] == -1 and p.data == b"ping"
        else:
            raise AssertionError(f"unexpected {p!r}")
        statsns.append(p.statsn)
        got[p.itt] = p.data
    steps = [b - a for a, b in itertools.pairwise(statsns)]
    assert steps == [1] * len(steps), f"StatSN out of wire order: {statsns}"
    for itt, i in want.items():
        if i >= 0:
            assert got[itt] == data[i]
    if offloaded:
        moved = connection_counter(peer, "tx_inline") - inline0
        print(f"{moved} of {len(want) + len(data)} responses sent inline")
        assert moved > 0
    assert c.logout() == 0


DATA_CACHE_KIB = Path("/sys/module/cxgbit_ext/parameters/data_cache_kib")


def cache_io(c: Connection, rounds: int) -> None:
    """Two 8 KiB regions with different data, written and read back in
    turn: each command gets a buffer that last held the other region's
    data, and every READ must return its own region's, never that."""
    a, b = os.urandom(16 * BLOCK), os.urandom(16 * BLOCK)
    for _ in range(rounds):
        c.scsi_write(20480, a)
        c.scsi_write(20480 + 16, b)
        assert c.scsi_read(20480, 16) == a
        assert c.scsi_read(20480 + 16, 16) == b
    # and a size the cache has not seen (64 KiB: a buffer of its own)
    big = os.urandom(128 * BLOCK)
    c.scsi_write(20480 + 32, big)
    assert c.scsi_read(20480 + 32, 128) == big


def test_data_buffers_are_kept_per_connection(offload_target: None) -> None:
    """An offloaded connection lends each READ's and WRITE's data buffer
    from the buffers its ended commands left (data_cache_hits), and reads
    back what was written, never what a buffer held before; with
    data_cache_kib 0 a new login keeps none and LIO allocates as stock, and
    so does a session at ERL 1. The kernel takes the idle buffers back
    when it reclaims memory (drop_caches 2 runs every shrinker) while the
    connection goes on."""
    from rtslib_fb import RTSRoot

    kib = DATA_CACHE_KIB.read_text().strip()
    assert int(kib) > 0, f"data_cache_kib {kib}: the cache is on by default"
    before = soft0_counters()
    c = login(OFF.tgt_ip)
    peer = "{}:{}".format(*c.sock.getsockname())
    cache_io(c, rounds=8)
    mid = soft0_counters()
    hits = mid["data_cache_hits"] - before["data_cache_hits"]
    misses = mid["data_cache_misses"] - before["data_cache_misses"]
    print(f"data buffers: {hits} lent from the cache, {misses} allocated")
    # 34 data commands of two sizes, one at a time: a buffer comes back when
    # the next command acknowledges its status, so the first two of each
    # size allocate; a READ's buffer whose pages TCP still holds is put
    assert hits >= 16 and misses >= 4 and hits + misses == 34
    kept = connection_counter(peer, "data_cache_kib")
    assert 0 < kept <= int(kib)
    Path("/proc/sys/vm/drop_caches").write_text("2")
    assert connection_counter(peer, "data_cache_kib") == 0, f"{kept} KiB kept before reclaim"
    cache_io(c, rounds=1)
    assert c.logout() == 0
    mid = soft0_counters()
    try:
        DATA_CACHE_KIB.write_text("0")
        c = login(OFF.tgt_ip)
        cache_io(c, rounds=2)
        assert c.logout() == 0
    finally:
        DATA_CACHE_KIB.write_text(kib)
    # a dynamic ACL takes the TPG's default_erl when it is made: a new name
    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == IQN]
    tpg.set_attribute("default_erl", "1")
    try:
        with target_tpg_params(IQN, ErrorRecoveryLevel="1"):
            c = Connection(OFF.tgt_ip)
            c.login(f"{PDU_INITIATOR}-cache-erl1", IQN, Params(erl=1))
    finally:
        tpg.set_attribute("default_erl", "0")
    assert c.target_keys.get("ErrorRecoveryLevel") == "1", c.target_keys
    cache_io(c, rounds=2)
    assert c.logout() == 0
    after = soft0_counters()
    assert after["data_cache_hits"] == mid["data_cache_hits"]
    assert after["data_cache_misses"] == mid["data_cache_misses"]


def test_data_buffer_cache_under_mixed_sizes_and_reclaim(offload_target: None) -> None:
    """open-iscsi and fio write+verify at QD32 with 4K-512K blocks mixed,
    through a cache of 256 KiB per connection, so that buffers of every
    size come and go and the oldest are dropped all the time, while the
    kernel reclaims every 50 ms: every block verifies, and the cache both
    lent buffers and allocated them."""
    kib = DATA_CACHE_KIB.read_text().strip()
    portal = f"{OFF.tgt_ip}:3260"
    stop = threading.Event()

    def reclaim() -> int:
        n = 0
        while not stop.wait(0.05):
            Path("/proc/sys/vm/drop_caches").write_text("2")
            n += 1
        return n

    DATA_CACHE_KIB.write_text("256")
    try:
        iscsiadm.login(IQN, portal)
        disks = iscsiadm.session_disks(IQN, expect=2)
        before = soft0_counters()
        with ThreadPoolExecutor(1) as pool:
            reclaims = pool.submit(reclaim)
            try:
                for dev in disks.values():
                    fio.write_verify(dev, size="16M", bssplit="4k/40:8k/20:64k/20:512k/20")
            finally:
                stop.set()
            print(f"{reclaims.result()} reclaims during the I/O")
        after = soft0_counters()
    finally:
        iscsiadm.logout(IQN, portal)
        DATA_CACHE_KIB.write_text(kib)
    assert after["data_cache_hits"] > before["data_cache_hits"]
    assert after["data_cache_misses"] > before["data_cache_misses"]


def workers_waiting_on_a_socket() -> list[str]:
    """Kernel workers (kworker/*) sleeping for room in a socket's send buffer."""
    out = []
    for task in Path("/proc").glob("[0-9]*"):
        try:
            if (
                task.joinpath("comm").read_text().startswith("kworker")
                and "sk_stream_wait_memory" in (task / "stack").read_text()
            ):
                out.append(task.name)
        except OSError:
            continue  # gone meanwhile
    return out


def test_an_initiator_that_stops_reading_holds_up_no_one(offload_target: None) -> None:
    """An initiator sends 32 MiB of READs and reads none of it: the
    target's socket fills, and what does not fit waits for LIO's TX thread
    instead of being sent from the completion work (tx_room says no): no
    kernel worker sleeps waiting for room in a send buffer. A neighbour
    session on the same portal reads and writes meanwhile; when the stalled
    initiator resets its connection, the connection is gone within
    seconds, nothing left sending on it."""
    stalled = login(OFF.tgt_ip)
    peer = "{}:{}".format(*stalled.sock.getsockname())
    assert peer in offloaded_peers()
    inline0 = connection_counter(peer, "tx_inline")
    blocks = 2048  # 1 MiB
    for i in range(32):
        cdb = struct.pack(">BBIBHB", 0x28, 0, i * blocks, 0, blocks, 0)
        stalled.send(scsi_command(cdb, itt=stalled.next_itt(), cmdsn=stalled.cmdsn, expstatsn=stalled.expstatsn,
                                  read_len=blocks * BLOCK))  # fmt: skip
        stalled.cmdsn += 1
    time.sleep(2)
    assert not workers_waiting_on_a_socket(), "completion work sleeps in a send to a peer that reads nothing"
    neighbour = login(OFF.tgt_ip)
    data = os.urandom(64 * BLOCK)
    neighbour.scsi_write(100000, data)
    assert neighbour.scsi_read(100000, 64) == data
    assert neighbour.logout() == 0
    assert peer in offloaded_peers(), "the stalled connection went before its initiator did"
    inline = connection_counter(peer, "tx_inline") - inline0
    print(f"{inline} of 32 reads sent inline before the socket filled")
    assert inline < 32
    stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    stalled.close()  # a reset, with most of 32 MiB unread
    deadline = time.monotonic() + 20
    while peer in offloaded_peers():
        assert time.monotonic() < deadline, "the reset connection was never released"
        time.sleep(0.2)


SG_SCSI_RESET = 0x2284  # <scsi/sg.h>
SG_SCSI_RESET_DEVICE = 1  # the SCSI midlayer sends a LOGICAL UNIT RESET TMF


def lu_resets() -> int:
    """LIO's count of LUN resets, over every device (statistics/scsi_lu)."""
    return sum(int(p.read_text()) for p in Path("/sys/kernel/config/target/core").glob("*/*/statistics/scsi_lu/resets"))


def busy(dev: str) -> tuple[int, int]:
    """(write I/Os completed, I/Os in flight) of a disk, from /sys/block/*/stat."""
    f = Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()
    return int(f[4]), int(f[8])


def test_lun_reset_under_io_offloaded(offload_target: None) -> None:
    """A LUN reset while fio writes at QD32: LIO performs it, the SCSI
    midlayer retries what was aborted, fio verifies every block, and the
    session stays offloaded."""
    portal = f"{OFF.tgt_ip}:3260"
    iscsiadm.discover(portal)
    iscsiadm.login(IQN, portal)
    try:
        dev = iscsiadm.session_disks(IQN, expect=2)[0]
        (peer,) = [p for p in offloaded_peers() if p.startswith(f"{OFF.ini_ip}:")]
        before = lu_resets()
        writes0, _ = busy(dev)
        with ThreadPoolExecutor(1) as pool:
            # the reset goes out at the first write seen: 16 MiB is far past it
            job = pool.submit(fio.write_verify, dev, "16M", "64k")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not job.done():
                writes, inflight = busy(dev)
                if inflight or writes > writes0:
                    break
                time.sleep(0.01)
            if job.done():
                job.result()  # fio's own error, if that is why it ended
                pytest.fail("fio finished before any of its writes was seen")
            fd = os.open(dev, os.O_RDONLY | os.O_NONBLOCK)
            try:
                fcntl.ioctl(fd, SG_SCSI_RESET, struct.pack("i", SG_SCSI_RESET_DEVICE))
            finally:
                os.close(fd)
            assert not job.done(), "fio ended before the reset went out: not under I/O"
            (res,) = job.result()
        assert res.write_bytes == 16 * topology.MiB
        assert lu_resets() == before + 1
        assert peer in offloaded_peers()  # the same connection, still offloaded
    finally:
        iscsiadm.logout(IQN, portal)


def test_offload_off_returns_portal_to_stock(offload_target: None) -> None:
    set_offload(False)
    try:
        assert (CFS / "portals").read_text() == ""
        c = login(OFF.tgt_ip)
        assert offloaded_peers() == []
        c.logout()
    finally:
        set_offload(True)
    assert (CFS / "portals").read_text().strip() == "0.0.0.0:3260"


def targetcli(*args: str) -> subprocess.CompletedProcess[str]:
    """Stock targetcli, run on the target host (its network namespace only)."""
    return subprocess.run(["nsenter", f"--net=/run/netns/{topo.TGT_NS}", "targetcli", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_stock_targetcli_enable_offload_on_a_specific_address(offload_target: None) -> None:
    iqn = "iqn.2026-11.org.cxgbit-ext:targetcli"
    t = topology.Topology(iqn=iqn, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=((OFF.tgt_ip, 3261),), name_prefix="tcli")  # fmt: skip
    with topo.in_netns():
        topology.create(t)
    node = f"/iscsi/{iqn}/tpg1/portals/{OFF.tgt_ip}:3261"
    try:
        p = targetcli(node, "enable_offload", "true")
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"{OFF.tgt_ip}:3261" in (CFS / "portals").read_text().split()
        c = Connection(OFF.tgt_ip, 3261)
        c.login(PDU_INITIATOR, iqn)
        pair = (f"{OFF.ini_ip}:{c.sock.getsockname()[1]}", f"{OFF.tgt_ip}:3261")
        assert pair in [(o.peer, o.local) for o in Control(CFS).connections()]
        c.logout()
        p = targetcli(node, "enable_offload", "false")
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"{OFF.tgt_ip}:3261" not in (CFS / "portals").read_text()
    finally:
        topology.delete(iqn)
