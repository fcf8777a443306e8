"""Baseline: stock LIO iSCSI/TCP end to end, no cxgbit-ext involved.

An rd_mcp and a fileio LUN, discovery and login over the veth from the
initiator host, 16 MiB fio write+verify (crc32c) on each LUN, logout,
clearconfig, and nothing left behind (iscsi_target_mod unloads).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from rtslib_fb import RTSRoot

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from testbed import fio, topo

# a tool's or stock LIO's behaviour, not a kernel difference of ours
pytestmark = pytest.mark.dealt

IQN = "iqn.2026-11.org.cxgbit-ext:baseline"
LINK = topo.LINKS[0]
PORTAL = f"{LINK.tgt_ip}:3260"
# written and read back on each 64 MiB LUN: a baseline, not a load (64 MiB
# each took 42 s of a VM batch)
FIO_MIB = 16


def test_stock_lio_rdmcp_and_fileio_write_verify(lio: None, tmp_path: Path) -> None:
    t = topology.Topology(
        iqn=IQN,
        backstores=("ramdisk", "fileio"),
        lun_size=64 * topology.MiB,
        portals=((LINK.tgt_ip, 3260),),
        fileio_dir=tmp_path,
    )
    with topo.in_netns():
        topology.create(t)
    image = tmp_path / f"{t.so_name(1)}.img"
    assert image.stat().st_size == 64 * topology.MiB

    found = iscsiadm.discover(PORTAL)
    assert iscsiadm.DiscoveredTarget(PORTAL, 1, IQN) in found
    iscsiadm.login(IQN, PORTAL)
    (sess,) = iscsiadm.sessions()
    assert (sess.iqn, sess.address, sess.port) == (IQN, LINK.tgt_ip, 3260)
    disks = iscsiadm.session_disks(IQN, expect=2)
    assert sorted(disks) == [0, 1]

    _, tx0 = topo.link_bytes(LINK.ini_dev)
    for lun, dev in sorted(disks.items()):
        (res,) = fio.write_verify(dev, size=f"{FIO_MIB}M")
        assert res.write_bytes == FIO_MIB * topology.MiB, (lun, res)
        assert res.read_bytes == FIO_MIB * topology.MiB, (lun, res)  # the verify pass
    _, tx1 = topo.link_bytes(LINK.ini_dev)
    # the write data crossed the veth, not loopback
    assert tx1 - tx0 >= 2 * FIO_MIB * topology.MiB

    iscsiadm.logout(IQN, PORTAL)
    assert iscsiadm.sessions() == []
    topology.delete(IQN)
    root = RTSRoot()
    assert list(root.targets) == [] and list(root.storage_objects) == []
    assert not image.exists()

    # nothing holds a reference into LIO any more: the iSCSI fabric unloads
    Path("/sys/kernel/config/target/iscsi").rmdir()
    subprocess.run(["rmmod", "iscsi_target_mod"], check=True)
    assert not Path("/sys/module/iscsi_target_mod").exists()
