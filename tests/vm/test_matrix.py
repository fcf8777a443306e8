"""Data integrity on the offloaded path across the settings an admin sets.

The suite's one settings matrix: every value of each iSCSI setting and every
pair of values (a pairwise covering array from allpairspy), its rows dealt
in turn to kernels.conf's series so that each kernel runs its share and
still sees every value of every setting (tests/host/test_matrix_rows.py
checks both), plus the two extreme corners on every kernel.
Each row sets
the target TPG and the open-iscsi node record alike, logs in over tgt0
(offloaded by soft0), checks the kernel initiator negotiated exactly the
row, runs fio random writes of mixed sizes (512 B to 1 MiB) at iodepth 32
with crc32c verify, checks that soft0 placed every byte written (none
copied), and logs out. Rows alternate the rd_mcp and fileio LUN.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from allpairspy import AllPairs
from rtslib_fb import RTSRoot

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from testbed import fio, topo

from .conftest import offloaded_peers, offloaded_target, soft0_counters
from .shares import MINE, SERIES

IQN = "iqn.2026-11.org.cxgbit-ext:matrix"
OFF = topo.LINKS[0]
PORTAL = f"{OFF.tgt_ip}:3260"
KiB = 1024


FACTORS: dict[str, list[object]] = {
    "HeaderDigest": ["None", "CRC32C"],
    "DataDigest": ["None", "CRC32C"],
    "ImmediateData": ["Yes", "No"],
    "InitialR2T": ["Yes", "No"],
    "FirstBurstLength": [64 * KiB, 256 * KiB],
    "MaxBurstLength": [256 * KiB, 1024 * KiB],
    "TargetMRDSL": [4 * KiB, 8 * KiB, 64 * KiB, 256 * KiB],
    "InitiatorMRDSL": [4 * KiB, 8 * KiB, 64 * KiB, 256 * KiB],
}
CORNERS = [
    ["CRC32C", "CRC32C", "Yes", "No", 256 * KiB, 1024 * KiB, 256 * KiB, 256 * KiB],
    ["None", "None", "No", "Yes", 64 * KiB, 256 * KiB, 4 * KiB, 4 * KiB],
]
PAIRWISE = [dict(zip(FACTORS, row, strict=True)) for row in AllPairs(list(FACTORS.values()))]
ALL_ROWS = [{"Kernel": SERIES[i % len(SERIES)], **r} for i, r in enumerate(PAIRWISE)] + [
    {"Kernel": k, **dict(zip(FACTORS, row, strict=True))} for row in CORNERS for k in SERIES
]
ROWS = [r for r in ALL_ROWS if MINE is None or r["Kernel"] == MINE]


def settings(r: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in r.items() if k != "Kernel"}


def row_id(r: dict[str, object]) -> str:
    return "-".join(str(v) for v in settings(r).values())


@pytest.fixture(scope="module")
def matrix_target(iscsid: None, module_ko: Path) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk", "fileio"), lun_size=32 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True,
                          fileio_dir=Path("/var/tmp/cxe-matrix"))  # fmt: skip
    with offloaded_target(module_ko, t):
        iscsiadm.discover(PORTAL)
        yield


def configure(r: dict[str, object]) -> None:
    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == IQN]
    for key in ("HeaderDigest", "DataDigest", "ImmediateData", "InitialR2T", "FirstBurstLength", "MaxBurstLength"):
        tpg.set_parameter(key, str(r[key]))
    # what LIO declares as its MaxRecvDataSegmentLength on the wire
    tpg.set_parameter("MaxXmitDataSegmentLength", str(r["TargetMRDSL"]))
    node = {
        "node.conn[0].iscsi.HeaderDigest": r["HeaderDigest"],
        "node.conn[0].iscsi.DataDigest": r["DataDigest"],
        "node.session.iscsi.ImmediateData": r["ImmediateData"],
        "node.session.iscsi.InitialR2T": r["InitialR2T"],
        "node.session.iscsi.FirstBurstLength": r["FirstBurstLength"],
        "node.session.iscsi.MaxBurstLength": r["MaxBurstLength"],
        "node.conn[0].iscsi.MaxRecvDataSegmentLength": r["InitiatorMRDSL"],
    }
    for name, value in node.items():
        iscsiadm.set_node(IQN, PORTAL, name, str(value))


def negotiated(sid: int) -> dict[str, str]:
    s = Path(f"/sys/class/iscsi_session/session{sid}")
    (c,) = Path("/sys/class/iscsi_connection").glob(f"connection{sid}:*")

    def rd(p: Path) -> str:
        return p.read_text().strip()

    return {
        "HeaderDigest": "CRC32C" if rd(c / "header_digest") == "1" else "None",
        "DataDigest": "CRC32C" if rd(c / "data_digest") == "1" else "None",
        "ImmediateData": "Yes" if rd(s / "immediate_data") == "1" else "No",
        "InitialR2T": "Yes" if rd(s / "initial_r2t") == "1" else "No",
        "FirstBurstLength": rd(s / "first_burst_len"),
        "MaxBurstLength": rd(s / "max_burst_len"),
        "TargetMRDSL": rd(c / "max_xmit_dlength"),
        "InitiatorMRDSL": rd(c / "max_recv_dlength"),
    }


@pytest.mark.parametrize("r", ROWS, ids=row_id)
def test_offloaded_fio_verify(matrix_target: None, r: dict[str, object]) -> None:
    configure(r)
    before = soft0_counters()
    iscsiadm.login(IQN, PORTAL)
    try:
        (sess,) = [s for s in iscsiadm.sessions() if s.iqn == IQN]
        assert negotiated(sess.sid) == {k: str(v) for k, v in settings(r).items()}
        assert any(p.startswith(f"{OFF.ini_ip}:") for p in offloaded_peers())
        disks = iscsiadm.session_disks(IQN, expect=2)
        lun = ROWS.index(r) % 2
        report = fio.run([
            "--name=matrix", f"--filename={disks[lun]}", "--rw=randwrite", "--size=8M",
            "--bssplit=512/10:4k/30:8k/10:64k/20:256k/20:1m/10", "--direct=1", "--ioengine=libaio",
            "--iodepth=32", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--randrepeat=0",
        ])  # fmt: skip
        (res,) = fio.jobs(report)
        assert res.error == 0 and res.write_bytes >= 8 * topology.MiB
        # every byte written went straight into the command's pages
        moved = {k: v - before[k] for k, v in soft0_counters().items() if k in ("bytes_placed", "bytes_copied")}
        assert moved == {"bytes_placed": res.write_bytes, "bytes_copied": 0}
    finally:
        iscsiadm.logout(IQN, PORTAL)
