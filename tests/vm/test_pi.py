"""T10-PI behind iSCSI (SBC-4 4.22): a fileio backstore formatted with
protection information, type 1 or type 3, behind an offloaded and a stock
portal in the same boot. Neither transport carries PI on the wire (both
advertise TARGET_PROT_NORMAL, as iSCSI/TCP has no place for it), so LIO's
core inserts it on writes and checks and strips it on reads, and the
initiator sees plain 512-byte blocks either way:

- data written through one path reads back through the other, and the
  PI on disk (the backstore's .protection file, read here) carries each
  block's guard (CRC-16 T10-DIF) and, in type 1, its LBA as reference tag;
- a block whose guard, application tag or reference tag is corrupted on
  disk reads the same through both paths: ABORTED COMMAND with the LBA in
  the sense data where LIO checks the field (guard: 10h/01h; reference
  tag, type 1 only: 10h/03h), the data where it does not (LIO checks no
  application tag).

Each path's answers are also written to the results directory
(pi_outcomes.txt), for conformance/results/protocol.md.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from rtslib_fb import LUN, TPG, FabricModule, FileIOStorageObject, Target

from cxgbit_ext import topology
from iscsi_initiator.session import Connection, Params, ScsiError
from testbed import topo

from .conftest import PDU_INITIATOR, adapter_of, clear_unit_attention, offloaded_target, record

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


def connect(path: str) -> Connection:
    """A session through ``path``, offloaded on soft0 or stock as named."""
    c = Connection(PATHS[path].tgt_ip, timeout=20)
    c.login(PDU_INITIATOR, IQN, Params())
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
    try:
        w.scsi_write(lba, data, lun=PI_LUN)
        assert r.scsi_read(lba, 64, lun=PI_LUN) == data, f"type {kind}: {writer} wrote, {reader} read other data"
        assert w.logout() == 0 and r.logout() == 0
    finally:
        w.close()
        r.close()
    tuples = pi_tuples(prot, lba, 64)
    for i, (guard, app, ref) in enumerate(tuples):
        block = data[i * BLOCK : (i + 1) * BLOCK]
        assert guard == crc_t10dif(block), f"type {kind}, LBA {lba + i}: guard {guard:#06x} on disk"
        assert app == 0, f"type {kind}, LBA {lba + i}: application tag {app:#06x}"
        if kind == 1:
            assert ref == lba + i, f"type 1, LBA {lba + i}: reference tag {ref}"
    note(kind, f"{writer} write, {reader} read: 64 blocks read back; guard, application tag"
               f"{' and reference tag' if kind == 1 else ''} on disk as SBC-4 says")  # fmt: skip


# What each field is corrupted to: never 0xffff in the application tag
# (or 0xffffffff in a type 3 reference tag), which say "do not check".
CORRUPT = {"guard": (0, 0x5A5A), "application tag": (2, 0x1234), "reference tag": (4, 0x0BADF00D)}
# What LIO answers a block whose field is wrong, where it checks the field
# (target_core_sbc.c: sbc_dif_v1_verify(); no application tag is checked)
REFUSED = {"guard": (0x0B, 0x10, 0x01), "reference tag": (0x0B, 0x10, 0x03)}


@pytest.mark.parametrize("field", CORRUPT)
def test_corrupted_pi_is_answered_alike_on_both_paths(pi_lun: tuple[int, Path], field: str) -> None:
    kind, prot = pi_lun
    lba = 320 + list(CORRUPT).index(field)
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
    got = {}
    for path in PATHS:
        c = connect(path)
        try:
            got[path] = answer(c, lba)
            c.logout()
        finally:
            c.close()
        if got[path][0] == "GOOD":
            shown = "GOOD, " + ("the data as written" if got[path][1:] == (block,) else "other data")
        else:
            _, key, asc, ascq, info = got[path]
            shown = f"CHECK CONDITION, sense key {key:#x}, ASC/ASCQ {asc:02x}h/{ascq:02x}h, INFORMATION {info}"
        note(kind, f"{field} corrupted at LBA {lba}, {path}: {shown}")
    assert got["offloaded"] == got["stock"], f"type {kind}, {field}: offloaded {got['offloaded']}, stock {got['stock']}"
    checked = field in REFUSED and not (field == "reference tag" and kind == 3)
    if checked:
        assert got["stock"] == ("CHECK CONDITION", *REFUSED[field], lba), f"type {kind}, {field}: {got['stock']}"
    else:
        assert got["stock"] == ("GOOD", block), f"type {kind}, {field}: {got['stock'][:1]}"
