"""T10-PI behind iSCSI (SBC-4 4.22): a fileio backstore formatted with
protection information, type 1 or type 3, behind an offloaded and a stock
portal in the same boot. Neither transport carries PI on the wire
(iSCSI/TCP has no place for it): on the stock path LIO's core inserts it
on writes and checks and strips it on reads; on the offloaded one soft0
makes a write's PI as it places the data (TARGET_PROT_DOUT_INSERT), and
the PDU layer checks reads before sending them (TARGET_PROT_DIN_STRIP).
The initiator sees plain 512-byte blocks either way:

- data written through one path reads back through the other, and the
  PI on disk (the backstore's .protection file, read here) carries each
  block's guard (CRC-16 T10-DIF) and, in type 1, its LBA as reference tag;
- an offloaded write's PI is soft0's (pi_blocks counts its blocks), with
  data digests and with DDP off too; where the data came again (ERL 1
  recovery) and soft0 could not follow it in order, the PDU layer makes
  it in a pass of its own (pi_passes);
- a block whose guard, application tag or reference tag is corrupted on
  disk reads the same through both paths: ABORTED COMMAND with the LBA in
  the sense data where LIO checks the field (guard: 10h/01h; reference
  tag, type 1 only: 10h/03h), the data where it does not (LIO checks no
  application tag);
- an offloaded read's PI is checked by the PDU layer, not LIO's core
  (pi_checked counts its blocks), in the pass that also makes the data
  digests soft0 sends (the initiator checks every one); a read with a bad
  block gets no Data-In before its CHECK CONDITION, as on stock.

Each path's answers are also written to the results directory
(pi_outcomes.txt), for conformance/results/protocol.md.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest
from rtslib_fb import LUN, TPG, FabricModule, FileIOStorageObject, Target

from cxgbit_ext import topology
from cxgbit_ext.control import Control
from iscsi_initiator.pdu import Op, data_out, scsi_command
from iscsi_initiator.session import Connection, Params, ScsiError
from testbed import topo

from .conftest import (
    CFS,
    PDU_INITIATOR,
    adapter_of,
    clear_unit_attention,
    offloaded_target,
    record,
    soft0_counters,
    target_at_erl,
)

IQN = "iqn.2026-11.org.cxgbit-ext:pi"
OFF, STOCK = topo.LINKS
PATHS = {"offloaded": OFF, "stock": STOCK}
BLOCK = 512
PI_LUN = 1
PI_SIZE = 4 * topology.MiB
TUPLE = 8  # bytes of PI per block: guard (2), application tag (2), reference tag (4)


def crc_t10dif(data: bytes) -> int:
    """CRC-16 T10-DIF (polynomial 0x8bb7, initial 0, not reflected): the
    guard of SBC-4 4.22.4.2, as the kernel's crc_t10dif() computes it."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8BB7) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


@pytest.fixture(scope="module")
def pi_target(module_ko: Path) -> Iterator[None]:
    """A target whose portal 0.0.0.0:3260 is offloaded over tgt0 and stock
    over tgt1, any initiator admitted (demo mode: every LUN mapped)."""
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


@pytest.fixture(scope="module", params=[1, 3], ids=["type1", "type3"])
def pi_lun(request: pytest.FixtureRequest, pi_target: None) -> Iterator[tuple[int, Path]]:
    """LUN 1: a fileio backstore with PI of the type, formatted (every
    tuple 0xff: application tag escape, nothing checked until written);
    the type and the backstore's protection file."""
    kind = int(request.param)
    image = Path(f"/var/tmp/cxgbit-ext/pi{kind}.img")
    image.parent.mkdir(parents=True, exist_ok=True)
    so = FileIOStorageObject(f"pi{kind}", dev=str(image), size=PI_SIZE, write_back=False)
    try:
        so.set_attribute("pi_prot_type", str(kind))
        so.set_attribute("pi_prot_format", "1")
        with topo.in_netns():
            lun = LUN(TPG(Target(FabricModule("iscsi"), IQN, mode="lookup"), 1), PI_LUN, so)
        try:
            yield kind, Path(f"{image}.protection")
        finally:
            lun.delete()
    finally:
        so.delete()
        for f in (image, Path(f"{image}.protection")):
            f.unlink(missing_ok=True)


def connect(path: str, params: Params | None = None, initiator: str = PDU_INITIATOR) -> Connection:
    """A session through ``path``, offloaded on soft0 or stock as named."""
    c = Connection(PATHS[path].tgt_ip, timeout=20)
    c.login(initiator, IQN, params or Params())
    host, port = c.sock.getsockname()[:2]
    assert (adapter_of(f"{host}:{port}") == "soft0") == (path == "offloaded"), f"{path}: adapter"
    clear_unit_attention(c)
    clear_unit_attention(c, PI_LUN)  # made after the target
    return c


def pi_tuples(prot: Path, lba: int, blocks: int) -> list[tuple[int, int, int]]:
    """(guard, application tag, reference tag) of blocks from lba, on disk."""
    with prot.open("rb") as f:
        f.seek(lba * TUPLE)
        raw = f.read(blocks * TUPLE)
    return [struct.unpack_from(">HHI", raw, i * TUPLE) for i in range(blocks)]


def assert_pi_on_disk(kind: int, prot: Path, lba: int, data: bytes) -> None:
    """The tuples of data's blocks from lba as SBC-4 says: guard, 0, LBA (type 1)."""
    for i, (guard, app, ref) in enumerate(pi_tuples(prot, lba, len(data) // BLOCK)):
        block = data[i * BLOCK : (i + 1) * BLOCK]
        assert guard == crc_t10dif(block), f"type {kind}, LBA {lba + i}: guard {guard:#06x} on disk"
        assert app == 0, f"type {kind}, LBA {lba + i}: application tag {app:#06x}"
        if kind == 1:
            assert ref == lba + i, f"type 1, LBA {lba + i}: reference tag {ref}"


def pi_moved(before: dict[str, int]) -> tuple[int, int]:
    """soft0's pi_blocks and pi_passes since before."""
    after = soft0_counters()
    return after["pi_blocks"] - before["pi_blocks"], after["pi_passes"] - before["pi_passes"]


def pi_checked(before: dict[str, int]) -> int:
    """Read blocks whose PI the PDU layer checked since before."""
    return soft0_counters()["pi_checked"] - before["pi_checked"]


def answer(c: Connection, lba: int) -> tuple[object, ...]:
    """What a one-block READ at lba gets: ("GOOD", data) or ("CHECK
    CONDITION", sense key, ASC, ASCQ, INFORMATION or None)."""
    try:
        return ("GOOD", c.scsi_read(lba, 1, lun=PI_LUN))
    except ScsiError as e:
        return ("CHECK CONDITION", e.sense_key, *e.asc_ascq, e.information)


def note(kind: int, line: str) -> None:
    record(f"type {kind}: {line}", "pi_outcomes.txt")


@pytest.mark.parametrize(("writer", "reader"), [("offloaded", "stock"), ("stock", "offloaded")])
def test_data_written_through_one_path_reads_back_through_the_other(
    pi_lun: tuple[int, Path], writer: str, reader: str
) -> None:
    kind, prot = pi_lun
    lba = 64 if writer == "offloaded" else 192
    data = os.urandom(64 * BLOCK)
    w, r = connect(writer), connect(reader)
    before = soft0_counters()
    try:
        w.scsi_write(lba, data, lun=PI_LUN)
        assert r.scsi_read(lba, 64, lun=PI_LUN) == data, f"type {kind}: {writer} wrote, {reader} read other data"
        assert w.logout() == 0 and r.logout() == 0
    finally:
        w.close()
        r.close()
    # the offloaded write's PI is soft0's, made as it placed the data
    assert pi_moved(before) == ((64, 0) if writer == "offloaded" else (0, 0)), f"type {kind}: {writer} write"
    # and the offloaded read's is checked by the PDU layer
    assert pi_checked(before) == (64 if reader == "offloaded" else 0), f"type {kind}: {reader} read"
    assert_pi_on_disk(kind, prot, lba, data)
    note(kind, f"{writer} write, {reader} read: 64 blocks read back; guard, application tag"
               f"{' and reference tag' if kind == 1 else ''} on disk as SBC-4 says")  # fmt: skip


# What each field is corrupted to: never 0xffff in the application tag
# (or 0xffffffff in a type 3 reference tag), which say "do not check".
CORRUPT = {"guard": (0, 0x5A5A), "application tag": (2, 0x1234), "reference tag": (4, 0x0BADF00D)}
# What LIO answers a block whose field is wrong, where it checks the field
# (target_core_sbc.c: sbc_dif_v1_verify(); no application tag is checked)
REFUSED = {"guard": (0x0B, 0x10, 0x01), "reference tag": (0x0B, 0x10, 0x03)}


@contextmanager
def backstore_unchecked(kind: int) -> Iterator[None]:
    """The PI backstore's own check of what it reads (pi_prot_verify, on
    by default with PI) off: a read's tuples are then checked by whoever
    strips them, LIO's core on stock (target_read_prot_action()), the PDU
    layer on offload."""
    so = FileIOStorageObject(f"pi{kind}")
    so.set_attribute("pi_prot_verify", "0")
    try:
        yield
    finally:
        so.set_attribute("pi_prot_verify", "1")


# Who checks a read's tuples: the backstore as it reads them (pi_prot_verify,
# on by default), or, with that off, whoever strips them: LIO's core on
# stock, the PDU layer on offload
CHECKERS = ("backstore", "transport")


@pytest.mark.parametrize("checker", CHECKERS)
@pytest.mark.parametrize("field", CORRUPT)
def test_corrupted_pi_is_answered_alike_on_both_paths(pi_lun: tuple[int, Path], field: str, checker: str) -> None:
    kind, prot = pi_lun
    lba = 320 + list(CORRUPT).index(field) + 8 * CHECKERS.index(checker)
    block = os.urandom(BLOCK)
    c = connect("stock")
    try:
        c.scsi_write(lba, block, lun=PI_LUN)
    finally:
        c.close()
    offset, value = CORRUPT[field]
    with prot.open("r+b") as f:  # LIO reads the file through the same page cache
        f.seek(lba * TUPLE + offset)
        f.write(struct.pack(">H" if offset < 4 else ">I", value))
    got, by_pdu_layer = {}, -1
    for path in PATHS:
        c = connect(path)
        before = soft0_counters()
        try:
            with backstore_unchecked(kind) if checker == "transport" else nullcontext():
                got[path] = answer(c, lba)
            c.logout()
        finally:
            c.close()
        if path == "offloaded":
            # a block the backstore refused never reaches the transport; one
            # it served, the PDU layer checks
            by_pdu_layer = pi_checked(before)
        if got[path][0] == "GOOD":
            shown = "GOOD, " + ("the data as written" if got[path][1:] == (block,) else "other data")
        else:
            _, key, asc, ascq, info = got[path]
            shown = f"CHECK CONDITION, sense key {key:#x}, ASC/ASCQ {asc:02x}h/{ascq:02x}h, INFORMATION {info}"
        note(kind, f"{field} corrupted at LBA {lba}, checked by the {checker}, {path}: {shown}")
    assert got["offloaded"] == got["stock"], f"type {kind}, {field}: offloaded {got['offloaded']}, stock {got['stock']}"
    served = checker == "transport" or got["offloaded"][0] == "GOOD"
    assert by_pdu_layer == served, f"type {kind}, {field}, {checker}: {by_pdu_layer} checked by the PDU layer"
    checked = field in REFUSED and not (field == "reference tag" and kind == 3)
    if checked:
        assert got["stock"] == ("CHECK CONDITION", *REFUSED[field], lba), f"type {kind}, {field}: {got['stock']}"
    else:
        assert got["stock"] == ("GOOD", block), f"type {kind}, {field}: {got['stock'][:1]}"


# How an offloaded read's PI check meets its data digests: none; CRC32C in
# PDUs of 256 KiB (two PDUs, both digests made in the check's pass); CRC32C
# in PDUs of 4 KiB over two bursts, more PDUs than the pass keeps digests
# for (cxgbit_ext's CXE_DIN_CRCS, 16), the rest digested by soft0 as it sends
READS = {"no_digests": Params(), "digests": Params(data_digest="CRC32C"),
         "digests_small_pdus": Params(data_digest="CRC32C", max_recv_dlen=4096)}  # fmt: skip
READ_BLOCKS = 600


def read_task(c: Connection, lba: int, blocks: int) -> tuple[list[int], tuple[object, ...]]:
    """A READ's PDUs as they came (their opcodes) and its answer: ("GOOD",)
    or ("CHECK CONDITION", sense key, ASC, ASCQ, INFORMATION)."""
    pdus = c.recv_task(c.send_read(lba, blocks, lun=PI_LUN))
    last = pdus[-1]
    if last.opcode == Op.SCSI_RSP and (last.u8(3) or last.u8(2)):
        sense = last.data[2 : 2 + int.from_bytes(last.data[:2], "big")] if last.data else b""
        e = ScsiError(last.u8(3), last.u8(2), sense)
        return [p.opcode for p in pdus], ("CHECK CONDITION", e.sense_key, *e.asc_ascq, e.information)
    return [p.opcode for p in pdus], ("GOOD",)


@pytest.mark.parametrize("how", READS)
def test_the_pdu_layer_checks_the_pi_of_offloaded_reads(pi_lun: tuple[int, Path], how: str) -> None:
    kind, prot = pi_lun
    lba = 1024 + 1024 * list(READS).index(how)
    data = os.urandom(READ_BLOCKS * BLOCK)
    w = connect("stock")
    try:
        w.scsi_write(lba, data, lun=PI_LUN)
        w.logout()
    finally:
        w.close()
    r = connect("offloaded", READS[how])
    before = soft0_counters()
    try:
        # every Data-In's digest is checked by the initiator as it comes
        assert r.scsi_read(lba, READ_BLOCKS, lun=PI_LUN) == data, f"type {kind}, {how}: other data"
        assert pi_checked(before) == READ_BLOCKS, f"type {kind}, {how}: blocks checked"
        r.logout()
    finally:
        r.close()
    # the guard of the read's last block corrupted: the same answer on both
    # paths, and no Data-In before it
    bad = lba + READ_BLOCKS - 1
    with prot.open("r+b") as f:
        f.seek(bad * TUPLE)
        f.write(struct.pack(">H", crc_t10dif(data[-BLOCK:]) ^ 0x5A5A))
    got, checked = {}, -1
    with backstore_unchecked(kind):
        for path in PATHS:
            c = connect(path, READS[how])
            before = soft0_counters()
            try:
                got[path] = read_task(c, lba, READ_BLOCKS)
                c.logout()
            finally:
                c.close()
            if path == "offloaded":
                checked = pi_checked(before)
    assert got["offloaded"] == got["stock"], f"type {kind}, {how}: offloaded {got['offloaded']}, stock {got['stock']}"
    assert got["stock"] == ([Op.SCSI_RSP], ("CHECK CONDITION", *REFUSED["guard"], bad)), f"type {kind}, {how}"
    # the refusal is the PDU layer's: it went through every block to the bad one
    assert checked == READ_BLOCKS, f"type {kind}, {how}: {checked} blocks checked"
    note(kind, f"offloaded read, {how}: {READ_BLOCKS} blocks' PI checked by the PDU layer; a bad guard in the "
               f"last block: CHECK CONDITION 10h/01h with its LBA and no Data-In, as stock")  # fmt: skip


# How an offloaded write reaches soft0's placement: immediate data and
# Data-Outs straight from the socket's buffers (placed), the same with
# CRC32C data digests (PI made in the digest's pass), and through the
# bounce page with DDP off.
PLACEMENT = {"placed": (Params(), True), "digests": (Params(data_digest="CRC32C"), True),
             "ddp_off": (Params(), False)}  # fmt: skip


@pytest.mark.parametrize("how", PLACEMENT)
def test_soft0_makes_the_pi_of_every_write_it_places(pi_lun: tuple[int, Path], how: str) -> None:
    kind, prot = pi_lun
    params, ddp = PLACEMENT[how]
    lba = 448 + 128 * list(PLACEMENT).index(how)
    # immediate data, then R2T-solicited Data-Outs, the last one short
    data = os.urandom(100 * BLOCK)
    soft0 = Control(CFS).adapter("soft0")
    soft0.ddp = "on" if ddp else "off"
    try:
        w = connect("offloaded", params)
    finally:
        soft0.ddp = "on"
    before = soft0_counters()
    try:
        w.scsi_write(lba, data, lun=PI_LUN)
        w.logout()
    finally:
        w.close()
    way = "bytes_placed" if ddp else "bytes_copied"
    assert soft0_counters()[way] - before[way] == len(data), f"type {kind}, {how}: not all {way}"
    assert pi_moved(before) == (100, 0), f"type {kind}, {how}"
    assert_pi_on_disk(kind, prot, lba, data)
    r = connect("stock")
    try:
        assert r.scsi_read(lba, 100, lun=PI_LUN) == data, f"type {kind}, {how}: stock read other data"
        r.logout()
    finally:
        r.close()
    note(kind, f"offloaded write, {how}: 100 blocks' PI made by soft0 as it placed them, as SBC-4 says")


def test_pi_of_data_sent_again_at_erl1_takes_a_pass(pi_lun: tuple[int, Path]) -> None:
    """ERL 1: a Data-Out with a bad data digest is placed, rejected and
    asked for again (a recovery R2T); soft0 made tuples for the bad bytes
    and cannot follow data that comes again, so the PDU layer makes the
    PI from the pages in a pass of its own: the PI on disk is the good
    data's. Offloaded only: stock LIO frees such a task twice
    (test_pdu_suite.py, test_bad_data_digest_with_writes_outstanding)."""
    kind, prot = pi_lun
    lba, n = 896, 16
    # an initiator of its own: LIO keeps the ERL a dynamic ACL was made with
    with target_at_erl(IQN, 1):
        c = connect("offloaded", Params(erl=1, data_digest="CRC32C", immediate_data=False),
                    initiator=f"{PDU_INITIATOR}-erl1-type{kind}")  # fmt: skip
    try:
        assert c.target_keys.get("ErrorRecoveryLevel") == "1", c.target_keys
        itt = c.next_itt()
        cdb = struct.pack(">BBIBHB", 0x2A, 0, lba, 0, n, 0)
        before = soft0_counters()
        c.send(scsi_command(cdb, itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, lun=PI_LUN, write_len=n * BLOCK))
        c.cmdsn += 1
        r2t = c.recv()
        assert r2t.opcode == Op.R2T and r2t.itt == itt, r2t
        bad = bytearray(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, lun=PI_LUN,
                                 data=os.urandom(n * BLOCK), final=True).encode(False, True))  # fmt: skip
        bad[-2] ^= 0x01
        c.send_raw(bytes(bad))
        c.sock.settimeout(10)
        while (p := c.recv()).opcode == Op.REJECT:
            pass
        assert p.opcode == Op.R2T and p.itt == itt, f"after a bad data digest at ERL 1: {p!r}"
        assert (p.buffer_offset, p.desired_length) == (0, n * BLOCK), p
        data = os.urandom(n * BLOCK)
        c.send_raw(data_out(itt=itt, ttt=p.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, lun=PI_LUN, data=data,
                            final=True).encode(False, True))  # fmt: skip
        while (p := c.recv()).opcode == Op.REJECT:
            pass
        assert p.opcode == Op.SCSI_RSP and p.itt == itt and p.u8(3) == 0, f"the WRITE after recovery: {p!r}"
        # the first pass's n tuples never reached a finished write; the pass's did
        assert pi_moved(before) == (0, 1), f"type {kind}"
        c.logout()
    finally:
        c.close()
    assert_pi_on_disk(kind, prot, lba, data)
    r = connect("stock")
    try:
        assert r.scsi_read(lba, n, lun=PI_LUN) == data, f"type {kind}: stock read other data"
        r.logout()
    finally:
        r.close()
    note(kind, "offloaded write at ERL 1, its data sent again after a bad digest: PI made in a pass, as SBC-4 says")
