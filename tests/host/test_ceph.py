"""The scale-out gateways' Ceph cluster (testbed/ceph.py), run natively.

Starts a real single-node cluster in its own network namespace, stores an
RBD image's data and reads it back, and checks that stop leaves nothing
behind: no daemon, no namespace, no directory.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.ceph import CephError, Cluster, _netns_list


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "ceph", netns=f"cxe-ceph-t{os.getpid()}", addr="198.18.21.1/24")
    c.start()
    try:
        yield c
    finally:
        c.stop()


def test_image_data_round_trips_and_stop_leaves_nothing(cluster: Cluster, tmp_path: Path) -> None:
    data = os.urandom(4 << 20)
    (tmp_path / "in").write_bytes(data)
    cluster.rbd("create", "rbd/disk0", "--size", "16M", "--image-feature", "layering,exclusive-lock")
    assert "exclusive-lock" in cluster.rbd("info", "rbd/disk0")
    cluster.rbd("import", "--dest-pool", "rbd", str(tmp_path / "in"), "disk1")
    cluster.rbd("export", "rbd/disk1", str(tmp_path / "out"))
    assert (tmp_path / "out").read_bytes() == data
    assert sorted(cluster.rbd("ls", "rbd").split()) == ["disk0", "disk1"]

    pids = cluster._pids()
    assert len(pids) == 3, f"mon, mgr and osd should be running: {pids}"
    cluster.stop()
    assert cluster.netns not in _netns_list()
    assert not cluster.dir.exists()
    alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text()]
    assert not alive, f"daemons left running after stop: {alive}"
    cluster.stop()  # idempotent


def test_second_start_is_refused_and_changes_nothing(cluster: Cluster) -> None:
    before = cluster._pids()
    with pytest.raises(CephError, match="already set up"):
        cluster.start()
    assert cluster._pids() == before and cluster.running()
    out = subprocess.run(["ip", "netns", "exec", cluster.netns, "ceph", "-c", str(cluster.conf), "health"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
