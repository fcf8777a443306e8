"""Connections carried by the cxgb4 backend, through its shipped glue
(main.c, cxgb4_hw=1), on the cxgb4 stand-in (tests/vm/c4sim.py).

No Chelsio adapter exists here: the stand-in presents one below cxgb4's
API, with the chip model below it. Its port c4sim0 carries the target's
offloaded portal; the chip takes the SYNs for the servers the backend
opened, turns each connection into a TID and speaks the chip's messages
about it. What the initiators see must be what the software path gives
them, and the rest of the host must not notice: the target's portals in
netns tgt stay where they were, and every TID and page pod goes back when
its connection ends. Nothing here has run on Chelsio hardware.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cxgbit_ext import topology
from cxgbit_ext.control import Connection as OffloadedConnection
from cxgbit_ext.control import Control
from iscsi_initiator import iscsiadm
from iscsi_initiator.pdu import Op, Pdu, data_out, logout_request, nop_out, scsi_command
from iscsi_initiator.session import Connection, ConnectionClosed, Params
from testbed import fio, topo
from testbed.kmod import CXGB4_BACKEND

from . import c4sim
from .conftest import (
    CFS,
    PDU_INITIATOR,
    connection_lines,
    cxgb4_adapter,
    cxgb4_counters,
    debug_kernel,
    lun_disk,
    offloaded_peers,
    settle_sessions,
    wait_for,
)

IQN = "iqn.2026-11.org.cxgbit-ext:c4conns"
OFF, STOCK = c4sim.LINK, topo.LINKS[1]  # the stand-in's port; tgt1: no adapter's
CHIP = c4sim.ADAPTER
BLOCK = 512


def connection_from(peer_ip: str) -> OffloadedConnection:
    """The one offloaded connection from peer_ip."""
    (conn,) = [c for c in Control(CFS).connections() if c.peer.startswith(f"{peer_ip}:")]
    return conn


def offloaded_from(peer_ip: str) -> bool:
    """Whether a connection from peer_ip is offloaded."""
    return any(p.startswith(f"{peer_ip}:") for p in offloaded_peers())


# The glue runs the kernel's skbs, work items and libcxgb, which differ
# between series: every kernel, each with its chip in make test (both chips
# on every kernel: make cxgb4-test, --every-share).
@pytest.fixture(scope="module", params=["t5", "t6"])
def c4_target(request: pytest.FixtureRequest, iscsid: None, module_ko: Path, kver: str) -> Iterator[str]:
    """The target, offloaded on every address, its portal on the stand-in's
    port served by the chip (c4sim.suite_target)."""
    c4sim.chip_runs_here(request.config, request.param)
    t = topology.Topology(iqn=IQN, backstores=("ramdisk", "ramdisk"), lun_size=64 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with c4sim.suite_target(module_ko, t, kver, request.param):
        got = cxgb4_adapter(CHIP)
        assert (got["servers"], got["conns"]) == ("1", "0"), got
        yield request.param
        tids_back("a TID was not given back")
        assert cxgb4_adapter(CHIP)["pods_used"] == "0", "page pods were not given back"
        assert not c4sim.chip_errors(), "the stand-in refused:\n" + "\n".join(c4sim.chip_errors())


def login(ip: str, params: Params | None = None) -> Connection:
    c = Connection(ip)
    c.login(PDU_INITIATOR, IQN, params)
    return c


def tids_back(what: str) -> None:
    """Every TID of the chip's goes back (within 40 s), or fail with what."""
    wait_for(what, lambda: cxgb4_adapter(CHIP)["conns"] == "0", 40)


def reset(c: Connection) -> None:
    """The initiator resets its connection (RST, not FIN)."""
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.sock.close()


def write_r2t(c: Connection, lba: int, length: int) -> tuple[int, Pdu]:
    """A WRITE(10) of length bytes without data: its ITT and its first R2T."""
    itt = c.next_itt()
    cdb = struct.pack(">BBIBHB", 0x2A, 0, lba, 0, length // BLOCK, 0)
    c.send(scsi_command(cdb, itt=itt, cmdsn=c._next_cmdsn(), expstatsn=c.expstatsn, write_len=length))
    r2t = c.recv()
    assert r2t.opcode == Op.R2T and r2t.itt == itt, r2t
    return itt, r2t


def write_read_logout(c: Connection, lba: int, blocks: int) -> None:
    """On session c: blocks written at lba read back equal; then logout."""
    data = os.urandom(blocks * BLOCK)
    c.scsi_write(lba, data)
    assert c.scsi_read(lba, blocks) == data
    assert c.logout() == 0
    c.close()


def reads_back(lba: int, data: bytes) -> None:
    """A new session reads data at lba."""
    check = login(OFF.tgt_ip)
    assert check.scsi_read(lba, len(data) // BLOCK) == data
    assert check.logout() == 0
    check.close()


@pytest.mark.parametrize("digests", ["None", "CRC32C"])
def test_write_read_through_the_chip(c4_target: str, digests: str) -> None:
    """Login, immediate and R2T-solicited writes and a read of three
    bursts on a TID of the chip's: the data reads back equal, the
    connection is the chip's (not soft0's), and its TID goes back at
    logout."""
    accepted = int(cxgb4_adapter(CHIP)["accepted"])
    pod_writes = c4sim.stats()["pod_writes"]
    c = login(OFF.tgt_ip, Params(header_digest=digests, data_digest=digests, max_recv_dlen=8192,
                                 first_burst=65536, max_burst=262144))  # fmt: skip
    assert int(cxgb4_adapter(CHIP)["accepted"]) == accepted + 1
    conn = connection_from(OFF.ini_ip)
    assert conn.adapter == CHIP, conn
    assert conn.hdigest == (digests == "CRC32C"), conn
    assert cxgb4_adapter(CHIP)["conns"] == "1"
    data = os.urandom(1037 * BLOCK)
    c.scsi_write(2048, data)
    assert c.scsi_read(2048, 1037) == data
    assert c.nop(b"ping").data == b"ping"
    conn = connection_from(OFF.ini_ip)
    # R2T-solicited data is placed by the chip through its page pods;
    # only the immediate data (one data segment) comes in a data message
    placed, copied = conn.counters["bytes_placed"], conn.counters["bytes_copied"]
    assert placed + copied == len(data) and 0 < copied <= 16384, conn
    # the adapter's counters (cxgb4_counters) hold this connection's too
    counted = cxgb4_counters(CHIP)
    assert counted["bytes_placed"] >= placed and counted["connections"] >= 1, counted
    assert cxgb4_adapter(CHIP)["pods_used"] == "0", "a completed R2T kept its page pods"
    # each placed R2T's pods were written and cleared on the connection's
    # flow, holding credits, and the chip acked them (else the R2T or the
    # clear would have waited and the connection dropped)
    assert c4sim.stats()["pod_writes"] >= pod_writes + 2 and not c4sim.chip_errors(), c4sim.chip_errors()
    # after a logout the target closes with a FIN behind the response, not a RST
    c.send(logout_request(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn))
    rsp = c.recv()
    assert rsp.opcode == Op.LOGOUT_RSP and rsp.u8(2) == 0, rsp
    c.sock.settimeout(15)
    assert c.sock.recv(1) == b"", "the target sent more after the Logout response"
    c.close()
    tids_back("the TID was not given back after logout")
    assert not offloaded_from(OFF.ini_ip)


def refcnt(mod: str) -> int:
    return int(Path(f"/sys/module/{mod}/refcnt").read_text())


def test_the_backends_module_stays_while_its_session_lives(c4_target: str) -> None:
    """rmmod of the cxgb4 backend's module is refused while a connection of
    its lives, and the core's while the backend is loaded, each saying the
    module is in use; the session moves data on, and once it logs out the
    backend's module is no longer held by it."""
    before = refcnt(CXGB4_BACKEND)
    c = login(OFF.tgt_ip)
    try:
        assert connection_from(OFF.ini_ip).adapter == CHIP
        assert refcnt(CXGB4_BACKEND) == before + 1, "the connection holds no reference of its backend's module"
        for mod in (CXGB4_BACKEND, "cxgbit_ext"):
            p = subprocess.run(["rmmod", mod], capture_output=True, text=True)
            assert p.returncode != 0 and "in use" in p.stderr, (mod, p)
        data = os.urandom(64 * BLOCK)
        c.scsi_write(128, data)
        assert c.scsi_read(128, 64) == data
    finally:
        write_read_logout(c, 256, 8)
    tids_back("the TID was not given back after logout")
    wait_for("the ended connection still holds its backend's module", lambda: refcnt(CXGB4_BACKEND) == before, 30)


def test_a_portal_on_another_port_is_not_the_chips(c4_target: str) -> None:
    """The wildcard portal on tgt1 (no adapter serves it): stock LIO
    answers, and the chip's count of connections does not move."""
    c = login(STOCK.tgt_ip)
    assert not offloaded_from(STOCK.ini_ip)
    assert cxgb4_adapter(CHIP)["conns"] == "0"
    write_read_logout(c, 64, 64)


def test_a_reset_by_the_initiator_gives_the_tid_back(c4_target: str) -> None:
    """An initiator that resets its connection mid-session: the chip
    reports the abort, the backend answers it and gives the TID back, and
    the next login (reinstating the session) works."""
    c = login(OFF.tgt_ip)
    isid = c.isid
    c.scsi_write(0, os.urandom(8 * BLOCK))
    reset(c)
    tids_back("the reset connection's TID was not given back")
    again = Connection(OFF.tgt_ip)
    again.isid = isid
    again.login(PDU_INITIATOR, IQN)
    assert connection_from(OFF.ini_ip).adapter == CHIP
    write_read_logout(again, 0, 8)


def test_a_reset_with_r2ts_out_gives_every_pod_back(c4_target: str) -> None:
    """Two WRITEs with their R2Ts out (pods written, no data sent yet),
    then the initiator resets: the tasks are released with their tags
    live, every pod is cleared and given back, the blocks keep what they
    held, and a new session works."""
    lba, size = 12288, 32 * 1024
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    keep = os.urandom(2 * size)
    c.scsi_write(lba, keep)
    for i in range(2):
        _, r2t = write_r2t(c, lba + i * size // BLOCK, size)
        assert r2t.desired_length == size, r2t
    assert int(cxgb4_adapter(CHIP)["pods_used"]) > 0, "the R2Ts' tags hold no page pods"
    writes = c4sim.stats()["pod_writes"]
    reset(c)
    tids_back("the reset connection's TID was not given back")
    assert cxgb4_adapter(CHIP)["pods_used"] == "0", "released tasks kept their page pods"
    # the flow had ended: both tags' clears went before the TID's
    # release, and the chip carried them out
    assert c4sim.stats()["pod_writes"] >= writes + 2 and not c4sim.chip_errors(), c4sim.chip_errors()
    reads_back(lba, keep)


def dropped_and_healthy(c: Connection) -> None:
    """The target dropped c; its TID goes back and a new session works."""
    assert c.closed_by_peer(), "the target kept a connection whose stream is broken"
    c.close()
    tids_back("the dropped connection's TID was not given back")
    write_read_logout(login(OFF.tgt_ip), 128, 4)


def test_a_bad_header_digest_drops_the_connection(c4_target: str) -> None:
    """The chip checks the header digest: a NOP whose digest is wrong is
    reported, and the connection (ERL 0) is dropped."""
    c = login(OFF.tgt_ip, Params(header_digest="CRC32C"))
    wire = bytearray(nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn).encode(True, False))
    wire[48] ^= 0xFF
    c.send_raw(bytes(wire))
    dropped_and_healthy(c)


def test_a_bad_data_digest_on_data_out_is_caught(c4_target: str) -> None:
    """A Data-Out whose data digest is wrong: the target must not take its
    data; at ERL 0 it drops the connection or rejects the PDU."""
    c = login(OFF.tgt_ip, Params(data_digest="CRC32C", immediate_data=False, initial_r2t=True))
    keep = os.urandom(BLOCK)
    c.scsi_write(32, keep)
    itt, r2t = write_r2t(c, 32, BLOCK)
    wire = bytearray(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                              data=os.urandom(BLOCK), final=True).encode(False, True))  # fmt: skip
    wire[-2] ^= 0x01
    c.send_raw(bytes(wire))
    if not c.closed_by_peer(timeout=5):
        rsp = c.recv()
        assert rsp.opcode == Op.REJECT, rsp
        assert c.logout() == 0
        c.close()
    else:
        c.close()
    tids_back("the connection's TID was not given back")
    reads_back(32, keep)


def test_a_t6_completes_a_run_of_placed_data_outs_at_once(c4_target: str) -> None:
    """An R2T's Data-Outs sent back to back: a T6 hands up one completion
    for a run of placed ones (the target handles fewer PDUs than it was
    sent), a T5 each of them; the data reads back equal either way."""
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True, max_burst=262144))
    data = os.urandom(256 * 1024)
    rx_before = connection_from(OFF.ini_ip).counters["pdus_rx"]
    itt, r2t = write_r2t(c, 0x1000, len(data))
    assert r2t.desired_length == len(data), r2t
    step = c.params.max_xmit_dlen
    wire = b"".join(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=n, offset=off,
                             data=data[off : off + step], final=off + step >= len(data)).encode()
                    for n, off in enumerate(range(0, len(data), step)))  # fmt: skip
    c.send_raw(wire)
    rsp = c.recv()
    assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    sent = 1 + len(range(0, len(data), step))
    handed_up = connection_from(OFF.ini_ip).counters["pdus_rx"] - rx_before
    conn = connection_from(OFF.ini_ip)
    assert conn.counters["bytes_placed"] == len(data), conn
    if c4_target == "t6":
        assert handed_up < sent, (handed_up, sent)
    else:
        assert handed_up == sent, (handed_up, sent)
    assert c.scsi_read(0x1000, len(data) // BLOCK) == data
    assert c.logout() == 0
    c.close()


def test_a_gap_in_placed_data_is_never_taken(c4_target: str) -> None:
    """An R2T for 64 KiB answered by one Data-Out with its last 4 KiB and
    F: the chip places those bytes, but nothing sent the 60 KiB before
    them. A T6 completion stands for earlier Data-Outs only when there
    were some: the target must not run the WRITE; the connection ends and
    the blocks keep what they held."""
    lba, size = 8192, 65536
    keep = os.urandom(size)
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    c.scsi_write(lba, keep)
    itt, r2t = write_r2t(c, lba, size)
    assert r2t.buffer_offset == 0 and r2t.desired_length == size, r2t
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=size - 4096,
                    data=os.urandom(4096), final=True))  # fmt: skip
    assert c.closed_by_peer(), "the target took a Data-Out that left 60 KiB unsent"
    c.close()
    tids_back("the connection's TID was not given back")
    assert cxgb4_adapter(CHIP)["pods_used"] == "0", "a released task kept its page pods"
    reads_back(lba, keep)


def test_a_data_out_for_a_completed_r2t_places_nothing(c4_target: str) -> None:
    """The pods of an R2T are cleared once its last byte arrived: a
    Data-Out that reuses its TTT afterwards is placed nowhere (the block it
    wrote reads back unchanged on a new session), and only that connection
    is dropped."""
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    keep = os.urandom(8 * BLOCK)
    itt, r2t = write_r2t(c, 48, len(keep))
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=keep, final=True))
    rsp = c.recv()
    assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    placed = connection_from(OFF.ini_ip).counters["bytes_placed"]
    assert placed == len(keep), "the R2T's data was not placed"
    assert cxgb4_adapter(CHIP)["pods_used"] == "0", "a completed R2T kept its page pods"
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=1, offset=0,
                    data=os.urandom(len(keep)), final=True))  # fmt: skip
    dropped_and_healthy(c)
    reads_back(48, keep)


# the stand-in's ULP_RX_ISCSI_TAGMASK is 0x3fffffff (its sim.h): the top
# bit says a tag names no pods, as libcxgb reads a chip's mask
NO_PODS = 1 << 29


def test_an_r2t_without_pods_says_so_in_the_chips_tag_format(c4_target: str) -> None:
    """An R2T for less than the chip places (the rest of a write after
    its immediate data) carries the no-pods bit of the chip's tag format,
    since a chip takes any other TTT for a pod index; each such TTT is
    distinct, its data is copied, not placed, and reads back. A placed
    R2T's TTT has that bit clear."""
    c = login(OFF.tgt_ip, Params(immediate_data=True, initial_r2t=True))
    data = [os.urandom(2 * BLOCK), os.urandom(2 * BLOCK), os.urandom(8 * BLOCK)]
    ttts = []
    for i in range(2):
        itt = c.next_itt()
        cdb = struct.pack(">BBIBHB", 0x2A, 0, 72 + 2 * i, 0, 2, 0)
        c.send(scsi_command(cdb, itt=itt, cmdsn=c._next_cmdsn(), expstatsn=c.expstatsn, write_len=2 * BLOCK,
                            data=data[i][:768]))  # fmt: skip
        r2t = c.recv()
        assert r2t.opcode == Op.R2T and (r2t.buffer_offset, r2t.desired_length) == (768, 256), r2t
        ttts.append(r2t.ttt)
        c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=768, data=data[i][768:],
                        final=True))  # fmt: skip
        rsp = c.recv()
        assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    assert all(t & NO_PODS and t != 0xFFFFFFFF for t in ttts) and ttts[0] != ttts[1], [hex(t) for t in ttts]
    assert connection_from(OFF.ini_ip).counters["bytes_placed"] == 0
    itt, r2t = write_r2t(c, 76, len(data[2]))
    assert not r2t.ttt & NO_PODS and r2t.ttt >> 30 == 0, f"a placed R2T's TTT {r2t.ttt:#x}"
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=data[2], final=True))
    rsp = c.recv()
    assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    assert connection_from(OFF.ini_ip).counters["bytes_placed"] == len(data[2])
    assert c.logout() == 0
    c.close()
    tids_back("the connection's TID was not given back")
    reads_back(72, b"".join(data))


def test_pods_taken_again_get_a_new_colour(c4_target: str) -> None:
    """A tag's colour is its first pod's generation, as libcxgb's: two
    R2Ts one after the other get the same pods under different TTTs, so
    a Data-Out carrying the first, finished R2T's TTT for the second
    command names no pods: nothing is placed, the connection is dropped,
    and the second command's blocks keep what they held."""
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    first, keep = os.urandom(8 * BLOCK), os.urandom(8 * BLOCK)
    c.scsi_write(16392, keep)
    itt, r2t1 = write_r2t(c, 16384, len(first))
    c.send(data_out(itt=itt, ttt=r2t1.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=first, final=True))
    rsp = c.recv()
    assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    itt, r2t2 = write_r2t(c, 16392, len(keep))
    assert r2t2.ttt >> 6 == r2t1.ttt >> 6, f"other pods: {r2t1.ttt:#x}, {r2t2.ttt:#x}"
    assert r2t2.ttt != r2t1.ttt, f"pods taken again kept their tag {r2t1.ttt:#x}"
    c.send(data_out(itt=itt, ttt=r2t1.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                    data=os.urandom(len(keep)), final=True))  # fmt: skip
    dropped_and_healthy(c)
    assert cxgb4_adapter(CHIP)["pods_used"] == "0", "a released task kept its page pods"
    reads_back(16384, first + keep)


def test_a_tasks_r2ts_share_one_tag_and_its_pods(c4_target: str) -> None:
    """A WRITE of 256 KiB in 64 KiB bursts: its four R2Ts carry one TTT,
    whose pods over the whole buffer are written once and cleared once
    (16 pods, three to a write: at most 12 pod writes, where a tag per
    R2T over the buffer up to its window wrote 30), every byte is placed
    and reads back, and the pods go back with the task."""
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True, max_burst=65536))
    data, lba = os.urandom(256 * 1024), 20480
    writes, placed = c4sim.stats()["pod_writes"], connection_from(OFF.ini_ip).counters["bytes_placed"]
    itt = c.next_itt()
    cdb = struct.pack(">BBIBHB", 0x2A, 0, lba, 0, len(data) // BLOCK, 0)
    c.send(scsi_command(cdb, itt=itt, cmdsn=c._next_cmdsn(), expstatsn=c.expstatsn, write_len=len(data)))
    step, ttts = c.params.max_xmit_dlen, []
    pdu = c.recv()
    while pdu.opcode == Op.R2T:
        ttts.append(pdu.ttt)
        start, end = pdu.buffer_offset, pdu.buffer_offset + pdu.desired_length
        c.send_raw(b"".join(data_out(itt=itt, ttt=pdu.ttt, expstatsn=c.expstatsn, datasn=n, offset=off,
                                     data=data[off : min(off + step, end)], final=off + step >= end).encode()
                            for n, off in enumerate(range(start, end, step))))  # fmt: skip
        pdu = c.recv()
    assert pdu.opcode == Op.SCSI_RSP and pdu.itt == itt and pdu.u8(3) == 0, pdu
    assert len(ttts) == 4 and len(set(ttts)) == 1, [hex(t) for t in ttts]
    assert c.scsi_read(lba, len(data) // BLOCK) == data
    wait_for("the task's pods did not go back", lambda: cxgb4_adapter(CHIP)["pods_used"] == "0", 10)
    assert connection_from(OFF.ini_ip).counters["bytes_placed"] - placed == len(data)
    assert 0 < c4sim.stats()["pod_writes"] - writes <= 12, c4sim.stats()
    assert c.logout() == 0
    c.close()


def test_a_segment_past_the_chips_limit_drops_the_connection(c4_target: str) -> None:
    """A NOP-Out claiming a 64 KiB data segment, above what the chip takes
    (and what the target declared): the chip stops the stream and the
    connection is dropped; nothing else notices. The drop can come while
    the segment is still being sent (a reset: what the target had not read
    is thrown away), or after."""
    c = login(OFF.tgt_ip)
    p = nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, data=bytes(65536))
    with contextlib.suppress(ConnectionClosed):
        c.send_raw(p.encode())
    dropped_and_healthy(c)


def test_fio_verify_through_the_chip_beside_stock(c4_target: str) -> None:
    """open-iscsi at QD32 with digests through the chip, with a stock
    session on tgt1 writing at the same time: both verify.

    LIO's DataOut timeout (3 s from each R2T; a node ACL's attribute,
    which a dynamic ACL keeps at its default) can expire behind fio's 32
    writes in flight through the stand-in under TCG (seen on 6.1 in make
    test: the session recovered and verified, on a new connection whose
    counters then missed the first writes): the initiator gets an ACL of
    its own with 30 s, as test_cxgb4sim's sessions on a debug kernel."""
    from rtslib_fb import FabricModule, MappedLUN, NodeACL

    off, stock = f"{OFF.tgt_ip}:3260", f"{STOCK.tgt_ip}:3260"
    tpg = next(iter(next(t for t in FabricModule("iscsi").targets if t.wwn == IQN).tpgs))
    acl = NodeACL(tpg, iscsiadm.INITIATORNAME.read_text().split("=", 1)[1].strip())
    for lun in tpg.luns:
        MappedLUN(acl, lun.lun, lun)
    acl.set_attribute("dataout_timeout", "30")
    try:
        for portal in (off, stock):
            iscsiadm.discover(portal)
            iscsiadm.set_node(IQN, portal, "node.conn[0].iscsi.HeaderDigest", "CRC32C")
            iscsiadm.set_node(IQN, portal, "node.conn[0].iscsi.DataDigest", "CRC32C")
            iscsiadm.login(IQN, portal)
        disks = [lun_disk(IQN, OFF.tgt_ip, 0), lun_disk(IQN, STOCK.tgt_ip, 1)]
        assert connection_from(OFF.ini_ip).adapter == CHIP
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda d: fio.write_verify(d, size="8M", bs="64k"), disks))
        for (res,) in results:
            assert res.write_bytes == 8 * topology.MiB
        conn = connection_from(OFF.ini_ip)
        # every write byte came through the chip, most of it placed
        placed, copied = conn.counters["bytes_placed"], conn.counters["bytes_copied"]
        assert placed + copied >= 8 * topology.MiB and placed > copied, conn
    finally:
        iscsiadm.logout(IQN)
        settle_sessions()
        acl.delete()
    tids_back("a TID was not given back after logout")


def test_a_recovery_ends_the_chips_sessions_and_it_listens_again(c4_target: str) -> None:
    """cxgb4's START_RECOVERY (an EEH error or a firmware reset: the chip
    loses every connection and server it had) under a session with an R2T
    out, beside a stock session: the adapter's connections end at once,
    every TID and pod goes back without a message about a TID the chip
    lost; once cxgb4 says UP, the portal has its server on the chip again
    and a new session is carried by the chip; the stock session carries
    on, and the chip saw no request it would refuse."""
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    write_r2t(c, 96, 16 * BLOCK)
    assert int(cxgb4_adapter(CHIP)["pods_used"]) > 0, "the R2T's tag holds no page pods"
    stock = login(STOCK.tgt_ip)
    accepted = int(cxgb4_adapter(CHIP)["accepted"])
    c4sim.set_state("recovery")
    assert c.closed_by_peer(), "a session on the reset chip went on"
    c.close()
    wait_for("the reset adapter kept TIDs, pods or servers",
             lambda: [cxgb4_adapter(CHIP)[k] for k in ("state", "conns", "pods_used", "servers")]
             == ["down", "0", "0", "0"], 30)  # fmt: skip
    wait_for("LIO kept the reset chip's session",
             lambda: not offloaded_from(OFF.ini_ip), 30)  # fmt: skip
    c4sim.set_state("up")
    wait_for("the portal has no server on the chip again", lambda: cxgb4_adapter(CHIP)["servers"] == "1", 30)
    again = login(OFF.tgt_ip)
    assert connection_from(OFF.ini_ip).adapter == CHIP, connection_lines()
    assert int(cxgb4_adapter(CHIP)["accepted"]) == accepted + 1
    write_read_logout(again, 200, 8)
    write_read_logout(stock, 100000, 8)
    tids_back("a TID was not given back")
    assert not c4sim.chip_errors(), "the stand-in refused:\n" + "\n".join(c4sim.chip_errors())


# Last for each chip: the adapter is detached, then attached again.
def test_a_detached_adapter_ends_its_sessions_and_spares_the_rest(c4_target: str) -> None:
    """A surprise removal of the adapter (cxgb4's DETACH, as at a PCI
    remove) under open-iscsi writing and verifying with fio, a session
    with an R2T out (its pods written) and a stock session beside them:
    the adapter's connections end within seconds, not at a peer's timeout,
    and the adapter goes from the backends file; open-iscsi reconnects to
    the same portal, now on the host's TCP (nothing serves the port), and
    fio verifies every block; the stock session carries on; nothing calls
    into cxgb4 for the adapter after DETACH. Attached again (a new probe),
    it serves the portal again and a new session is carried by the chip."""
    portal = f"{OFF.tgt_ip}:3260"
    placed = cxgb4_counters(CHIP).get("bytes_placed", 0)
    iscsiadm.discover(portal)
    iscsiadm.login(IQN, portal)
    try:
        disk = lun_disk(IQN, OFF.tgt_ip, 0)
        with ThreadPoolExecutor(1) as pool:
            job = pool.submit(fio.write_verify, disk, "32M", "64k", 16)
            wait_for("fio's writes were not placed through the chip",
                     lambda: job.done() or cxgb4_counters(CHIP).get("bytes_placed", 0) > placed, 60)  # fmt: skip
            assert not job.done(), "fio ended before the adapter went"
            c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
            write_r2t(c, 96, 16 * BLOCK)
            assert int(cxgb4_adapter(CHIP)["pods_used"]) > 0, "the R2T's tag holds no page pods"
            stock = login(STOCK.tgt_ip)
            c4sim.set_state("detach")
            assert c.closed_by_peer(), "a session on the detached adapter went on"
            c.close()
            wait_for("the detached adapter is still listed",
                     lambda: f"{CHIP}=" not in (CFS / "backends").read_text(), 30)  # fmt: skip
            write_read_logout(stock, 100000, 8)
            # the run's guard against a hang, not a bound on its speed: most of
            # fio's 32 MiB goes after the detach, over the host's TCP, which a
            # debug kernel under TCG takes minutes for
            (res,) = job.result(timeout=900 if debug_kernel() else 300)
        assert res.write_bytes == 32 * topology.MiB
        assert not offloaded_from(OFF.ini_ip), connection_lines()
    finally:
        iscsiadm.logout(IQN)
    assert not c4sim.chip_errors(), "after DETACH:\n" + "\n".join(c4sim.chip_errors())
    c4sim.set_state("attach")
    wait_for("the attached adapter does not serve the portal", lambda: cxgb4_adapter(CHIP)["servers"] == "1", 30)
    again = login(OFF.tgt_ip)
    assert connection_from(OFF.ini_ip).adapter == CHIP, connection_lines()
    write_read_logout(again, 100008, 8)
