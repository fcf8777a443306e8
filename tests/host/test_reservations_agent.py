"""The reservations agent (cxgbit_ext.reservations.Agent) on a real Ceph
cluster (testbed/ceph.py), the module stood in for by a recorder
(tests/host/pr_agents.py): every gateway's module gets every entry, in the
log's order, its own as run and the others' as apply; the others apply an
entry before its gateway runs it (before the initiator hears GOOD); two
gateways appending at once still get one order; a gateway started later
replays the log; an agent whose watch of the log fails or goes stale tells
its module to hold the target, and to serve again once it is live. The
module's side is tests/vm/test_shared_reservations.py."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.ceph import Cluster

from .pr_agents import STALL_S, WATCH_IQN

HERE = Path(__file__).resolve().parent


def _entries(lines: list[str]) -> list[tuple[int, str]]:
    """(seq, how) of each run and apply a module got: run's tag is the seq."""
    out = []
    for line in lines:
        w = line.split()
        out.append((int(w[2]) if w[0] == "run" else int(w[1]), w[0]))
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for the module's tests (a start costs ~15 s)."""
    c = Cluster(tmp_path_factory.mktemp("pr") / "ceph", netns=f"cxe-ceph-pr{os.getpid()}", addr="198.18.22.1/24")
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.mark.timeout(300)
def test_agents_share_one_order_and_apply_before_the_origin_runs(cluster: Cluster) -> None:
    p = cluster.run(sys.executable, str(HERE / "pr_agents.py"), timeout=240)
    got = json.loads(p.stdout)
    print(json.dumps(got, indent=1))
    assert got["head"] == 4 and got["applied"] == [4, 4, 4]
    gw1, gw2, gw3 = (_entries(got[g]) for g in ("gw1", "gw2", "gw3"))
    # every module got entries 1..4 once, in order
    assert [s for s, _ in gw1] == [s for s, _ in gw2] == [s for s, _ in gw3] == [1, 2, 3, 4]
    # each gateway runs its own (entry 1 is gw1's, 2 is gw2's, 3 and 4 one each) and applies the rest
    assert gw1[:2] == [(1, "run"), (2, "apply")] and gw2[:2] == [(1, "apply"), (2, "run")]
    assert sorted(how for _, how in gw1[2:]) == sorted(how for _, how in gw2[2:]) == ["apply", "run"]
    assert {how for _, how in gw3} == {"apply"}, "a gateway started later replays every entry as apply"
    # the same entry carries the same command everywhere
    fields = {g: {int(line.split()[1]): " ".join(line.split()[2:]) for line in got[g] if line.startswith("apply")}
              for g in ("gw2", "gw3")}  # fmt: skip
    assert fields["gw2"][1] == fields["gw3"][1] and "node-1" in fields["gw3"][1]
    # the others apply an entry before its own gateway runs it
    events = got["events"]
    for seq in (1, 2, 3, 4):
        (runner,) = [e.split()[0] for e in events if e.endswith(f" run {seq}")]
        other = "gw2" if runner == "gw1" else "gw1"
        assert events.index(f"{other} apply {seq}") < events.index(f"{runner} run {seq}"), (seq, events)


@pytest.mark.timeout(300)
def lost_watch(cluster: Cluster, how: str) -> dict[str, Any]:
    osd = next(p for p in cluster._pids() if b"ceph-osd" in Path(f"/proc/{p}/cmdline").read_bytes())
    p = cluster.run(sys.executable, str(HERE / "pr_agents.py"), "watch", how, str(osd), timeout=240)
    got: dict[str, Any] = json.loads(p.stdout)
    print(json.dumps(got, indent=1))
    assert got["linked"] == [f"{WATCH_IQN}:tpgt_1"]
    return got


@pytest.mark.timeout(300)
def test_a_failed_watch_holds_the_target(cluster: Cluster) -> None:
    got = lost_watch(cluster, "blocklist")
    # serve once the (empty) log is applied, renewed; hold first thing once the watch fails
    said = [line for line, _ in got["said"]]
    assert said == [f"serve {WATCH_IQN}", "(ready)", f"serve {WATCH_IQN}", f"hold {WATCH_IQN}"], got["said"]
    assert got["said"][-1][1] < 10, "held late"
    assert len(got["ended"]) == 1 and got["ended"][0] != "returned", "served on, blocklisted"


@pytest.mark.timeout(300)
def test_a_stale_watch_holds_the_target_until_it_is_live_again(cluster: Cluster) -> None:
    """The cluster silent for a while (its OSD stopped): the agent stops
    renewing and holds within STALE_S of the watch's last confirmation
    (librados confirms every 5 s), then serves again once it has watched
    again and caught up."""
    from cxgbit_ext.reservations import RENEW_S, STALE_S

    got = lost_watch(cluster, "stall")
    said = [line for line, _ in got["said"]]
    assert said[-3:] == [f"serve {WATCH_IQN}", f"hold {WATCH_IQN}", f"serve {WATCH_IQN}"], got["said"]
    held, back = got["said"][-2][1], got["said"][-1][1]
    assert STALE_S - 5 <= held <= STALE_S + RENEW_S + 1, f"held {held} s after the cluster went silent"
    assert back >= STALL_S, "served again while the cluster was still silent"
    assert got["ended"] == ["returned"]


def test_serve_says_why_it_cannot_start(capsys: pytest.CaptureFixture[str]) -> None:
    """Without the module (this host cannot load it) the agent stops at once
    with the reason, no traceback, and links nothing."""
    from cxgbit_ext import cli, reservations

    assert not reservations.DEVICE.exists()
    assert cli.main(["reservations", "serve", "--iqn", "iqn.2026-11.org.cxgbit-ext:x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cxgbit-ext: /dev/cxgbit_ext_pr: No such file or directory") and "Traceback" not in err
