"""The scale-out gateways' Ceph cluster (testbed/ceph.py), run natively.

Starts a real single-node cluster in its own network namespace, refuses a
second start without touching the first, stores an RBD image's data and
reads it back, and checks that stop leaves nothing behind: no daemon, no
namespace, no directory. A client's link to the cluster is cut and mended
while a neighbour's stays up. The blocklist watcher (guests read the blocklist
from it) follows an entry added and removed. One cluster for all of it (a
start costs ~15 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from testbed.ceph import BRIDGE, PREFLIGHT_REFUSED, CephError, Cluster, _alive, _netns_list


def test_cluster_serves_rbd_refuses_a_second_start_and_stops_clean(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "ceph", netns=f"cxe-ceph-t{os.getpid()}", addr="198.18.21.1/24",
                      options=(("osd_client_watch_timeout", "12"),))  # fmt: skip
    cluster.start()
    try:
        pids = cluster._pids()
        assert len(pids) == 3, f"mon, mgr and osd should be running: {pids}"
        asok = tmp_path / "ceph/run/osd.0.asok"
        got = cluster.run("ceph", "--admin-daemon", str(asok), "config", "get", "osd_client_watch_timeout")
        assert json.loads(got.stdout) == {"osd_client_watch_timeout": "12"}, "the option did not reach the OSD"

        with pytest.raises(CephError, match="already set up"):
            cluster.start()
        assert cluster._pids() == pids and cluster.running()
        health = cluster.run("ceph", "health", timeout=30, check=False)
        assert health.returncode == 0, health.stderr

        data = os.urandom(4 << 20)
        (tmp_path / "in").write_bytes(data)
        cluster.rbd("create", "rbd/disk0", "--size", "16M", "--image-feature", "layering,exclusive-lock")
        assert "exclusive-lock" in cluster.rbd("info", "rbd/disk0")
        cluster.rbd("import", "--dest-pool", "rbd", str(tmp_path / "in"), "disk1")
        cluster.rbd("export", "rbd/disk1", str(tmp_path / "out"))
        assert (tmp_path / "out").read_bytes() == data
        assert sorted(cluster.rbd("ls", "rbd").split()) == ["disk0", "disk1"]

        # a client's link cut and mended, a neighbour's left alone
        clients = {ip: _client(cluster, ip, n) for n, ip in enumerate(("198.18.21.7", "198.18.21.8"))}
        try:
            cut, other = clients
            assert all(_reaches(ns, cluster.ip) for ns in clients.values())
            cluster.cut_off(cut)
            assert not _reaches(clients[cut], cluster.ip) and _reaches(clients[other], cluster.ip)
            cluster.cut_off(cut, False)
            assert _reaches(clients[cut], cluster.ip)
            with pytest.raises(CephError, match="nft in"):
                cluster.cut_off(cut, False)  # nothing cut: said, not ignored
        finally:
            for ns in clients.values():
                subprocess.run(["ip", "netns", "del", ns], check=False)

        # the guests' view of the blocklist follows the cluster's
        listing = tmp_path / "blocklist.json"
        watcher = cluster.watch_blocklist(listing)
        try:
            fenced = "198.18.21.7:0/42"
            cluster.ceph("osd", "blocklist", "add", fenced)
            _wait(lambda: listing.exists() and json.loads(listing.read_text()) == [fenced], "the entry listed")
            cluster.ceph("osd", "blocklist", "rm", fenced)
            _wait(lambda: json.loads(listing.read_text()) == [], "the entry gone")
        finally:
            watcher.kill()
            watcher.wait()
    finally:
        cluster.stop()
    assert cluster.netns not in _netns_list()
    assert not cluster.dir.exists()
    alive = [p for p in pids if _alive(p)]
    assert not alive, f"daemons left running after stop: {alive}"
    cluster.stop()  # idempotent


def _client(cluster: Cluster, ip: str, n: int) -> str:
    """A namespace with address ``ip`` on the cluster's bridge (as a guest's tap)."""
    ns, veth = f"cxe-cl{n}-{os.getpid()}", f"cxecl{n}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    subprocess.run(["ip", "-n", ns, "link", "add", veth, "type", "veth", "peer", "br" + veth,
                    "netns", cluster.netns], check=True)  # fmt: skip
    subprocess.run(["ip", "-n", cluster.netns, "link", "set", "br" + veth, "master", BRIDGE, "up"], check=True)
    subprocess.run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", veth], check=True)
    subprocess.run(["ip", "-n", ns, "link", "set", veth, "up"], check=True)
    return ns


def _reaches(ns: str, ip: str) -> bool:
    return any(
        subprocess.run(["ip", "netns", "exec", ns, "ping", "-c1", "-W1", ip], capture_output=True).returncode == 0
        for _ in range(3)
    )


def _wait(cond: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.2)


class _Ceph:
    """Stands in for subprocess.run: answers each call from a script."""

    def __init__(self, answers: list[tuple[int, str]]) -> None:
        self.answers = answers
        self.calls = 0

    def __call__(self, argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        rc, err = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return subprocess.CompletedProcess(argv, rc, stdout="HEALTH_OK\n" if rc == 0 else "", stderr=err)


REFUSED = f"Error EPERM: {PREFLIGHT_REFUSED} from mon.\n"


@pytest.mark.parametrize(
    ("answers", "calls", "ok"),
    [
        # the monitor refused the tool's command table twice: asked again, answered
        ([(1, REFUSED), (1, REFUSED), (0, "")], 3, True),
        # the command itself failed: that is the answer, never sent twice
        ([(22, "Error EINVAL: invalid command\n"), (0, "")], 1, False),
    ],
)
def test_a_refused_command_table_is_asked_again_other_failures_are_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answers: list[tuple[int, str]], calls: int, ok: bool
) -> None:
    fake = _Ceph(answers)
    monkeypatch.setattr(subprocess, "run", fake)
    cluster = Cluster(tmp_path / "ceph", netns="cxe-ceph-none")
    if ok:
        assert cluster.ceph("health", timeout=10) == "HEALTH_OK\n"
    else:
        with pytest.raises(CephError, match="invalid command"):
            cluster.ceph("health", timeout=10)
    assert fake.calls == calls


def test_a_monitor_that_keeps_refusing_fails_in_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = _Ceph([(1, REFUSED)])
    monkeypatch.setattr(subprocess, "run", fake)
    with pytest.raises(CephError, match=PREFLIGHT_REFUSED):
        Cluster(tmp_path / "ceph", netns="cxe-ceph-none").ceph("health", timeout=1)
    assert 2 <= fake.calls <= 10


@pytest.mark.parametrize("option", [("osd client\nwatch", "1"), ("Bad-Name", "1"), ("osd_x", ""), ("osd_x", "1\n2")])
def test_a_malformed_option_is_refused_before_anything_starts(tmp_path: Path, option: tuple[str, str]) -> None:
    with pytest.raises(CephError, match="ceph option"):
        Cluster(tmp_path / "ceph", netns="cxe-ceph-none", options=(option,))
    assert not (tmp_path / "ceph").exists()
