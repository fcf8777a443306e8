"""The scale-out gateways' Ceph cluster (testbed/ceph.py), run natively.

Starts a real single-node cluster in its own network namespace, refuses a
second start without touching the first, stores an RBD image's data and
reads it back, and checks that stop leaves nothing behind: no daemon, no
namespace, no directory. One cluster for all of it (a start costs ~15 s).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed.ceph import CephError, Cluster, _alive, _netns_list


def test_cluster_serves_rbd_refuses_a_second_start_and_stops_clean(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "ceph", netns=f"cxe-ceph-t{os.getpid()}", addr="198.18.21.1/24")
    cluster.start()
    try:
        pids = cluster._pids()
        assert len(pids) == 3, f"mon, mgr and osd should be running: {pids}"

        with pytest.raises(CephError, match="already set up"):
            cluster.start()
        assert cluster._pids() == pids and cluster.running()
        health = subprocess.run(["ip", "netns", "exec", cluster.netns, "ceph", "-c", str(cluster.conf), "health"],
                                capture_output=True, text=True, timeout=30)  # fmt: skip
        assert health.returncode == 0, health.stderr

        data = os.urandom(4 << 20)
        (tmp_path / "in").write_bytes(data)
        cluster.rbd("create", "rbd/disk0", "--size", "16M", "--image-feature", "layering,exclusive-lock")
        assert "exclusive-lock" in cluster.rbd("info", "rbd/disk0")
        cluster.rbd("import", "--dest-pool", "rbd", str(tmp_path / "in"), "disk1")
        cluster.rbd("export", "rbd/disk1", str(tmp_path / "out"))
        assert (tmp_path / "out").read_bytes() == data
        assert sorted(cluster.rbd("ls", "rbd").split()) == ["disk0", "disk1"]
    finally:
        cluster.stop()
    assert cluster.netns not in _netns_list()
    assert not cluster.dir.exists()
    alive = [p for p in pids if _alive(p)]
    assert not alive, f"daemons left running after stop: {alive}"
    cluster.stop()  # idempotent
