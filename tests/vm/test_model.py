"""The cxgb4 backend's receive and transmit layers on real LIO, through the
model of a Chelsio T5 and of a T6 (soft0's model setting: adapters/soft/
model.c).

After login the connection's stream goes through the model: it frames
the PDUs, checks the digests and places R2T-solicited write data through
the connection's DDP tags before the header is handed up; the backend's
assembler turns its messages back into PDUs (on a T6, one completion may
stand for several placed Data-Outs of an R2T); PDUs and Data-In bursts go
out as the backend's work requests (ISO for bursts), which the model
turns into the bytes on the wire. What the initiators see must be what
the software path gives them: data read back equal, digests right, a
stock session beside it untouched. No Chelsio hardware is involved.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from iscsi_initiator.pdu import Op, data_out, scsi_command
from iscsi_initiator.session import Connection, Params
from testbed import fio, topo

from .conftest import CFS, PDU_INITIATOR, lun_disk, offloaded_peers, offloaded_target, soft0_counters

IQN = "iqn.2026-11.org.cxgbit-ext:model"
OFF, STOCK = topo.LINKS  # tgt0 served by soft0, tgt1 not
BLOCK = 512
MODEL = CFS / "adapters/soft0/model"


# Both chips on the first series: the engine calls into the kernel only
# through the software adapter's receive and send paths, which the rest of
# the suite runs on every kernel; what differs between the chips is pure
# code. That batch is the shorter one.
@pytest.fixture(scope="module", params=[pytest.param(chip, marks=pytest.mark.dealt(share=0)) for chip in ("t5", "t6")])
def model_target(request: pytest.FixtureRequest, iscsid: None, module_ko: Path) -> Iterator[str]:
    t = topology.Topology(
        iqn=IQN,
        backstores=("ramdisk", "ramdisk"),
        lun_size=64 * topology.MiB,
        portals=(("0.0.0.0", 3260),),
        offload=True,
    )
    with offloaded_target(module_ko, t):
        MODEL.write_text(request.param)
        try:
            yield request.param
        finally:
            MODEL.write_text("off")


def login(ip: str, params: Params | None = None) -> Connection:
    c = Connection(ip)
    c.login(PDU_INITIATOR, IQN, params)
    return c


def test_model_setting_refuses_what_it_does_not_model(model_target: str) -> None:
    assert MODEL.read_text().strip() == model_target
    with pytest.raises(OSError):
        MODEL.write_text("t4")
    assert MODEL.read_text().strip() == model_target


@pytest.mark.parametrize("digests", ["None", "CRC32C"])
def test_write_read_through_the_model(model_target: str, digests: str) -> None:
    """Immediate, unsolicited and R2T-solicited write data and a read of
    three bursts: the solicited data is placed by the model, the rest
    copied from its data messages; the read goes out in ISO requests."""
    before = soft0_counters()
    c = login(OFF.tgt_ip, Params(header_digest=digests, data_digest=digests, max_recv_dlen=8192,
                                 first_burst=65536, max_burst=262144))  # fmt: skip
    assert any(p.startswith(f"{OFF.ini_ip}:") for p in offloaded_peers())
    data = os.urandom(1037 * BLOCK)
    c.scsi_write(2048, data)
    assert c.scsi_read(2048, 1037) == data
    assert c.nop(b"ping").data == b"ping"
    # InitialR2T=Yes: only the immediate data goes unsolicited
    immediate = min(c.params.max_xmit_dlen, c.params.first_burst)
    assert c.logout() == 0
    after = soft0_counters()

    def moved(k: str) -> int:
        return after[k] - before[k]

    # the immediate data came in a data message (copied), the rest by R2T (placed)
    assert moved("bytes_copied") == immediate
    assert moved("bytes_placed") == len(data) - immediate
    assert moved("model_cpls") > 0 and moved("model_wrs") > 0
    # 1037 blocks: bursts of 256 KiB, 256 KiB and 6.5 KiB; 32 + 32 + 1 PDUs
    assert moved("bursts") == 3 and moved("burst_pdus") == 65
    assert moved("hdigest_errors") == 0 and moved("ddigest_errors") == 0
    if model_target == "t5":
        assert moved("range_bytes") == 0  # a T5 completes each PDU on its own


def test_a_gap_in_placed_data_is_never_taken(model_target: str) -> None:
    """An R2T for 64 KiB answered by one Data-Out with its last 4 KiB and
    F: the chip places those bytes, but nothing sent the 60 KiB before
    them. The target must not run the WRITE (with a T6 a completion may
    stand for earlier Data-Outs, but only ones that were placed): the
    connection ends, and the blocks keep what they held."""
    lba, size = 8192, 65536
    keep = os.urandom(size)
    c = login(OFF.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    c.scsi_write(lba, keep)
    itt = c.next_itt()
    cdb = struct.pack(">BBIBHB", 0x2A, 0, lba, 0, size // BLOCK, 0)
    c.send(scsi_command(cdb, itt=itt, cmdsn=c._next_cmdsn(), expstatsn=c.expstatsn, write_len=size))
    r2t = c.recv()
    assert r2t.opcode == Op.R2T and r2t.buffer_offset == 0 and r2t.desired_length == size
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=size - 4096,
                    data=os.urandom(4096), final=True))  # fmt: skip
    assert c.closed_by_peer(), "the target took a Data-Out that left 60 KiB unsent"
    c.close()
    check = login(OFF.tgt_ip)
    assert check.scsi_read(lba, size // BLOCK) == keep
    assert check.logout() == 0


def test_fio_verify_through_the_model_beside_stock(model_target: str) -> None:
    """open-iscsi at QD32 through the model, with a stock session on the
    same portal writing at the same time: both verify, and some placed
    Data-Outs are completed by a later one (range_bytes). On the T6 only:
    the T5's path is the T6's without the ranges, and the PDU-level cases
    above run it (make test's time)."""
    if model_target != "t6":
        pytest.skip("the T6 covers the T5's path and its ranges (make test's time)")
    off, stock = f"{OFF.tgt_ip}:3260", f"{STOCK.tgt_ip}:3260"
    try:
        for portal in (off, stock):
            iscsiadm.discover(portal)
            iscsiadm.set_node(IQN, portal, "node.conn[0].iscsi.HeaderDigest", "CRC32C")
            iscsiadm.set_node(IQN, portal, "node.conn[0].iscsi.DataDigest", "CRC32C")
            iscsiadm.login(IQN, portal)
        # one LUN each, so that neither overwrites what the other verifies
        disks = [lun_disk(IQN, OFF.tgt_ip, 0), lun_disk(IQN, STOCK.tgt_ip, 1)]
        peers = " ".join(offloaded_peers())
        assert f"{OFF.ini_ip}:" in peers and f"{STOCK.ini_ip}:" not in peers
        before = soft0_counters()
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda d: fio.write_verify(d, size="8M", bs="64k"), disks))
        for (res,) in results:
            assert res.write_bytes == 8 * topology.MiB
        after = soft0_counters()
        placed = after["bytes_placed"] - before["bytes_placed"]
        copied = after["bytes_copied"] - before["bytes_copied"]
        # each 64 KiB write: its immediate data copied, the rest placed by R2T
        assert placed + copied == 8 * topology.MiB and placed > 2 * copied
        assert after["range_bytes"] > before["range_bytes"]
        assert after["model_wrs"] > before["model_wrs"]
        assert after["ddigest_errors"] == before["ddigest_errors"]
    finally:
        iscsiadm.logout(IQN)
