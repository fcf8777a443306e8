"""Topology input checks happen before anything is created; a target is
deleted only once its ACLs' sessions are not closing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from cxgbit_ext import topology


def test_defaults_are_the_reference_topology() -> None:
    t = topology.Topology(iqn="iqn.2026-11.org.cxgbit-ext:t")
    assert t.backstores == ("ramdisk",) * 4 and t.lun_size == 64 * topology.MiB
    assert t.portals == (("0.0.0.0", 3260),)
    assert [t.so_name(i) for i in range(4)] == [f"cxe_ramdisk{i}" for i in range(4)]


@pytest.mark.parametrize("kw", [{"backstores": ()}, {"lun_size": 4096}], ids=["no-luns", "tiny-luns"])
def test_bad_topology_is_refused_before_touching_lio(kw: dict[str, object]) -> None:
    with pytest.raises(topology.TopologyError, match="at least one LUN of at least 1 MiB"):
        topology.create(topology.Topology(iqn="iqn.2026-11.org.cxgbit-ext:t", **kw))  # type: ignore[arg-type]


def _info(states: str, conns: tuple[str, ...] = ()) -> str:
    """An ACL's info as LIO's lio_target_nacl_info_show() prints it."""
    text = f"InitiatorName: iqn.2026-11.org.example:ini\nSession State: {states}\n"
    return text + "".join(f"CID: {cid}  Connection State: {st}\n" for cid, st in enumerate(conns))


def test_sessions_on_their_way_down_are_named_and_waited_for(tmp_path: Path) -> None:
    """An ACL whose session is logged in, or which has none, is safe to
    delete; one whose session or a connection of it is closing (or which
    has a session with no connection left) is not, and delete() waits for
    it. What is named is the ACL, below the target it belongs to."""
    acls = {
        "iqn.t1/tpgt_1/acls/up": _info("TARG_SESS_STATE_LOGGED_IN", ("TARG_CONN_STATE_LOGGED_IN",) * 2),
        "iqn.t1/tpgt_1/acls/none": "No active iSCSI Session for Initiator Endpoint: iqn.x\n",
        "iqn.t1/tpgt_1/acls/logout": _info("TARG_SESS_STATE_LOGGED_IN", ("TARG_CONN_STATE_IN_LOGOUT",)),
        "iqn.t1/tpgt_2/acls/cleanup": _info(
            "TARG_SESS_STATE_LOGGED_IN", ("TARG_CONN_STATE_LOGGED_IN", "TARG_CONN_STATE_CLEANUP_WAIT")
        ),
        "iqn.t2/tpgt_1/acls/failed": _info("TARG_SESS_STATE_FAILED"),
        "iqn.t2/tpgt_1/acls/free": _info("TARG_SESS_FREE"),
        "iqn.t2/tpgt_1/acls/no-conn": _info("TARG_SESS_STATE_LOGGED_IN"),
    }
    for acl, text in acls.items():
        (tmp_path / acl).mkdir(parents=True)
        (tmp_path / acl / "info").write_text(text)
    assert topology.closing_sessions("iqn.t1", tmp_path) == ["iqn.t1/tpgt_1/acls/logout", "iqn.t1/tpgt_2/acls/cleanup"]
    assert topology.closing_sessions(lio=tmp_path) == [
        "iqn.t1/tpgt_1/acls/logout",
        "iqn.t1/tpgt_2/acls/cleanup",
        "iqn.t2/tpgt_1/acls/failed",
        "iqn.t2/tpgt_1/acls/free",
        "iqn.t2/tpgt_1/acls/no-conn",
    ]
    # the wait ends when the sessions are down, and returns what is still closing at its end
    t0 = time.monotonic()
    assert topology.settle_sessions("iqn.t2", seconds=0.3, lio=tmp_path) == topology.closing_sessions(
        "iqn.t2", tmp_path
    )
    assert time.monotonic() - t0 >= 0.3
    done = threading.Timer(0.3, lambda: [(tmp_path / a / "info").write_text(acls["iqn.t1/tpgt_1/acls/none"])
                                         for a in acls if a.startswith("iqn.t1")])  # fmt: skip
    done.start()
    t0 = time.monotonic()
    assert topology.settle_sessions("iqn.t1", seconds=10, lio=tmp_path) == []
    assert time.monotonic() - t0 < 5
    done.join()
