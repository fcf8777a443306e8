"""LIO's iSCSI core with upstream/'s patches (make fuzz-vm: --patched-lio):
each patch's reproducer, run against the stock iSCSI/TCP path, gets the
answer its patch promises and leaves the kernel log clean (the autouse
check fails a test on any WARN, BUG or oops). On the kernel's own core the
same reproducers oops or corrupt the target, so this runs only on the
patched one; make test skips it and says why."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from rtslib_fb import TPG, FabricModule, NetworkPortal, Target

from cxgbit_ext import topology
from testbed import topo

from .conftest import dmesg_since, insmod, kmsg_mark, reproducer, target_at_erl

IQN = "iqn.2026-11.org.cxgbit-ext:upstream"
LINK = topo.LINKS[0]


@pytest.fixture(scope="module")
def patched_target(lio_core: str, iscsid: None) -> Iterator[None]:
    """A stock-path target (no offload) at ERL 1, ImmediateData=Yes."""
    if lio_core != "patched":
        pytest.skip("the reproducers oops the kernel's own LIO core: make fuzz-vm runs them on the patched one")
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB, portals=((LINK.tgt_ip, 3260),))
    with topo.in_netns():
        topology.create(t)
        tpg = TPG(Target(FabricModule("iscsi"), IQN, mode="lookup"), 1)
        tpg.set_attribute("default_erl", "1")
        tpg.set_parameter("ErrorRecoveryLevel", "1")
        tpg.set_parameter("ImmediateData", "Yes")
        tpg.set_parameter("MaxConnections", "2")
    yield
    with topo.in_netns():
        topology.delete(IQN)


# patch 0005's line in the kernel log
TEXT_REFUSED = "continues a task that is not a Text task"
CASES = [
    # (reproducer, case, what the patched core answers[, what it logs])
    ("extended_cdb_ahs", "zero", ["Reject, reason 0x04"]),
    ("extended_cdb_ahs", "overrun", ["Reject, reason 0x04"]),
    ("extended_cdb_ahs", "varlen", ["sense key 0x5 ASC/ASCQ 0x24/0x00"]),
    ("immediate_data_without_w", "whole", ["Reject, reason 0x04"]),
    ("immediate_data_without_w", "part", ["Reject, reason 0x04"]),
    ("rejected_task_pdu", "data-out-twice", ["Reject, reason 0x09"]),
    # the Reject is queued as the connection fails: it may not get out first
    ("rejected_task_pdu", "digest-erl0", ["the target dropped the connection"]),
    ("rejected_task_pdu", "digest-erl1", ["Reject, reason 0x02"]),
    ("rejected_task_pdu", "data-snack", []),
    ("text_continuation", "empty", ["the target dropped the connection"], TEXT_REFUSED),
    ("text_continuation", "sendtargets", ["the target dropped the connection"], TEXT_REFUSED),
]


@pytest.mark.parametrize("row", CASES, ids=[f"{r[0]}-{r[1]}" for r in CASES])
def test_reproducer_on_the_patched_core(
    patched_target: None, row: tuple[str, ...] | tuple[str, str, list[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    name, case, answers, *logged = row
    mark = kmsg_mark(f"{name} --case {case}")
    rc = reproducer(name).main([LINK.tgt_ip, IQN, "--case", case, "--wait", "2"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, f"{name} --case {case} sent nothing:\n{out}"
    for a in answers:
        assert a in out, f"{name} --case {case}: no '{a}':\n{out}"
    for line in logged:
        assert any(line in ln for ln in dmesg_since(mark)), f"{name} --case {case}: the kernel did not log '{line}'"


def test_refused_text_requests_leave_no_text_behind(patched_target: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Patch 0014: 200 sessions' Text requests LIO refuses each get a
    Reject, and their tasks and text go with their connections: the text
    buffers' slab does not grow by them (unpatched: by 200)."""
    rc = reproducer("refused_text").main([LINK.tgt_ip, IQN, "--sessions", "200"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    grown = re.search(r"objects in use \(([-+]\d+) after 200 sessions\)", out)
    assert grown, out
    assert int(grown.group(1)) < 50, out


def test_a_session_logged_out_while_one_of_its_connections_closes(
    patched_target: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Patch 0006: a connection logged out alone, then at once the session,
    twenty times; every round ends (the log check: no oops)."""
    rc = reproducer("mcs_logout_race").main([LINK.tgt_ip, IQN, "--rounds", "20"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out


def test_an_abort_for_a_lun_not_there_is_answered_lun_does_not_exist(
    patched_target: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Patch 0008: a TMF LIO answers without its target core gets the iSCSI
    code it decided, here 2, "LUN does not exist" (unpatched: 1)."""
    rc = reproducer("tmf_response_codes").main([LINK.tgt_ip, IQN, "--case", "no-lun"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    assert "response 2 (LUN does not exist)" in out, out


def test_a_reassigned_write_completes_and_is_released(patched_target: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Patches 0007 and 0008 at ErrorRecoveryLevel 2: a lost connection's
    WRITE reassigned to the other connection is answered "Function
    complete", completes there, and is released when the initiator
    acknowledges its status (unpatched: an oops in
    target_release_cmd_kref(), the log check's to see)."""
    # a dynamic ACL takes the TPG's default_erl when it is made: an
    # initiator name of its own gets one made now
    with target_at_erl(IQN, 2):
        rc = reproducer("erl2_task_reassign").main(
            [LINK.tgt_ip, IQN, "--initiator", "iqn.2026-11.org.cxgbit-ext:reproducer-erl2"]
        )
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    assert "TASK REASSIGN: response 0 " in out, out
    assert "the data reads back as written" in out, out


def test_sessions_left_to_expire_are_closed_in_process_context(
    patched_target: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Patches 0011 and 0012 at ErrorRecoveryLevel 2: four sessions whose
    connections are reset expire together and are each closed ("Time2Retain
    timer expired", once per session), and a new session logs in after
    (unpatched: on a debug kernel, a sleep in the timer's softirq and a
    lock inversion, the log check's to see)."""
    initiator = "iqn.2026-11.org.cxgbit-ext:reproducer-t2r"
    mark = kmsg_mark("erl2_time2retain_expiry --sessions 4")
    with target_at_erl(IQN, 2):
        rc = reproducer("erl2_time2retain_expiry").main([LINK.tgt_ip, IQN, "--initiator", initiator, "--sessions", "4"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    assert "a new session logs in" in out and "(response 0)" in out, out
    expired = [ln for ln in dmesg_since(mark) if "Time2Retain timer expired" in ln]
    assert len(expired) == 4, f"{len(expired)} sessions expired of 4:\n" + "\n".join(dmesg_since(mark))


def test_enabling_offload_twice_then_once_off_is_off(patched_target: None, module_ko: Path) -> None:
    """Patch 0001: a second write of 1 to a portal's cxgbit switch adds no
    second child portal, so one write of 0 turns it off."""
    assert insmod(module_ko).returncode == 0
    try:
        with topo.in_netns():
            tpg = TPG(Target(FabricModule("iscsi"), IQN, mode="lookup"), 1)
            np = NetworkPortal(tpg, LINK.tgt_ip, 3260, mode="lookup")
            switch = Path(np.path) / "cxgbit"
            switch.write_text("1")
            switch.write_text("1")
            switch.write_text("0")
            assert switch.read_text().strip() == "0"
    finally:
        assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0
