"""ERL 2 connection recovery (RFC 7143 7.2, 11.5.1) in a session of two
connections, offloaded and stock: a connection with a task in flight is
lost (a TCP reset); the target says so on the other connection (an Async
Message), the initiator logs the lost one out for recovery there and
reassigns the task (TASK REASSIGN), and the task completes on the
surviving connection with the right data. Also with the two connections
on two adapters (soft0, soft1): the tasks move to the other adapter's
connection. Recovery onto a stock connection does not arise: a stock
connection cannot join an offloaded session on the core these tests run
on (test_mcs.py, upstream/0009-*).

It runs on LIO's core with upstream/'s patches (--patched-lio): the
kernels' own core oopses in these sessions on both paths, a NULL pointer
dereference in target_release_cmd_kref() when a reassigned task is
released (upstream/0007-*), and answers TASK REASSIGN "Function
rejected" (0008-*). make test's batches, on the kernels' own core, skip
it and say why. Named on pytest's command line it runs on the kernel's
own core too, as the reproducer of that oops:

    scripts/build-patched-lio 6.12.117+deb12-amd64
    testbed/run --kernel 6.12 -- tests/vm/test_erl2.py --patched-lio
    testbed/run --kernel 6.12 -- tests/vm/test_erl2.py   # the oops

A session left to expire is closed in the Time2Retain timer's softirq by
the kernels' own core (upstream/0011-*, 0012-*), which a debug kernel
reports at every expiry; that case runs there only with -k expires:

    scripts/build-patched-lio 6.12.117+deb12-amd64-dbg
    testbed/run --kernel 6.12-dbg -- tests/vm/test_erl2.py -k expires [--patched-lio]
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from rtslib_fb import FabricModule

from cxgbit_ext import topology
from iscsi_initiator.pdu import Op, Pdu, data_out, scsi_command
from iscsi_initiator.session import Connection, Params, ScsiError
from testbed import topo

from .conftest import PDU_INITIATOR, clear_unit_attention, dmesg_since, kmsg_mark, target_tpg_params
from .test_mcs import (
    ADAPTERS,
    IQN,
    LAYOUTS,
    LBAS,
    OFF,
    SESSIONS,
    TPG,
    adapter,
    connect,
    listed_within,
    mcs_target,
    session_cids,
    soft1,
)

__all__ = ["mcs_target", "soft1"]  # the fixtures, used by name
TASK_REASSIGN = 8  # RFC 7143 11.5.1
LOGOUT_FOR_RECOVERY = 2
# What LIO answers a TASK REASSIGN it carries out: "Function complete" (0),
# as RFC 7143 11.6.1 says. The kernels' own core answers "Function
# rejected" (255) and reassigns the task all the same (upstream/0008-*).
REASSIGNED = {"patched": {0}, "kernel": {0, 255}}


@contextlib.contextmanager
def erl2_offered() -> Iterator[None]:
    """The target offering ErrorRecoveryLevel 2 to the initiator's ACL."""
    acl_erl = TPG / "acls" / PDU_INITIATOR / "attrib/default_erl"
    saved = acl_erl.read_text().strip()
    acl_erl.write_text("2")
    try:
        with target_tpg_params(IQN, ErrorRecoveryLevel="2"):
            yield
    finally:
        acl_erl.write_text(saved)


@pytest.fixture
def erl2(request: pytest.FixtureRequest, lio_core: str) -> Iterator[set[int]]:
    """The target offering ErrorRecoveryLevel 2 to the initiator's ACL;
    the TASK REASSIGN responses that mean the task was reassigned."""
    named = any(os.path.basename(a.split("::")[0]) == os.path.basename(__file__) for a in request.config.args)
    if lio_core != "patched" and not named:
        pytest.skip("the kernel's own LIO core oopses in ERL 2 sessions (upstream/0007-*): "
                    "runs with --patched-lio, or when named as the reproducer")  # fmt: skip
    request.getfixturevalue("mcs_target")
    with erl2_offered():
        yield REASSIGNED[lio_core]


def recv_until(c: Connection, want: Callable[[Pdu], bool], what: str) -> Pdu:
    """The first PDU on c that ``want`` takes; any other fails the test."""
    c.sock.settimeout(15)
    p = c.recv()
    assert want(p), f"waiting for {what}: got {p!r}"
    return p


def dropped_async(c: Connection, cid: int) -> None:
    """The Async Message on c that says the target dropped connection cid
    (AsyncEvent 2, Parameter1 the CID), with the session's Time2Wait and
    Time2Retain: what an ERL 2 initiator starts recovery from."""
    msg = recv_until(c, lambda p: p.opcode == Op.ASYNC, "the Async Message about the lost connection")
    assert (msg.u8(36), msg.u16(38)) == (2, cid), f"AsyncEvent {msg.u8(36)}, Parameter1 {msg.u16(38)}"
    assert msg.u16(42) > 0, f"Time2Retain {msg.u16(42)}: the tasks would not wait for reassignment"


@pytest.mark.parametrize("layout", SESSIONS)
def test_a_lost_connections_write_is_reassigned_and_completes(
    erl2: set[int], layout: str, request: pytest.FixtureRequest
) -> None:
    """ERL 2, a session of two connections: a WRITE on the first holds an
    R2T when that connection is lost (a TCP reset). Through the other, the
    initiator logs the lost one out for recovery and reassigns the task
    (TASK REASSIGN, ExpDataSN 0: from the first R2T); the target asks
    again for the data there, the WRITE ends GOOD on the new connection
    and the data reads back. Offloaded as on stock."""
    lead, second = connect(request, layout)
    try:
        keys = lead.login(PDU_INITIATOR, IQN, Params(max_connections=2, erl=2, time2retain=20,
                                                     immediate_data=False, initial_r2t=True))  # fmt: skip
        assert keys.get("ErrorRecoveryLevel") == "2", keys
        assert listed_within({0}), f"LIO does not list the lead's session: {session_cids()}"
        second.join(lead, PDU_INITIATOR, IQN, cid=1)
        assert listed_within({0, 1}), f"LIO does not list both connections: {session_cids()}"
        got = [adapter(c) for c in (lead, second)]
        assert got == ADAPTERS[layout], f"{layout}: adapters {got}"
        clear_unit_attention(second)  # a new session's, if any, goes to a plain command
        itt = lead.next_itt()
        lead.send(scsi_command(struct.pack(">BBIBHB", 0x2A, 0, 64, 0, LBAS, 0), itt=itt, cmdsn=lead.cmdsn,
                               expstatsn=lead.expstatsn, write_len=LBAS * 512))  # fmt: skip
        lead.cmdsn += 1
        r2t = recv_until(lead, lambda p: p.opcode == Op.R2T and p.itt == itt, "the WRITE's R2T")
        lead.reset()
        dropped_async(second, cid=0)
        assert listed_within({1}, 20), f"LIO still lists the lost connection: {session_cids()}"
        assert second.logout(reason=LOGOUT_FOR_RECOVERY, close=False, cid=0, expstatsn=lead.expstatsn) == 0
        assert second.tmf(TASK_REASSIGN, ref_itt=itt, exp_datasn=0) in erl2
        again = recv_until(second, lambda p: p.opcode == Op.R2T and p.itt == itt, "the R2T on the new connection")
        assert (again.datasn, again.buffer_offset, again.desired_length) == (
            r2t.datasn, r2t.buffer_offset, r2t.desired_length)  # fmt: skip
        data = os.urandom(LBAS * 512)
        second.send(data_out(itt=itt, ttt=again.ttt, expstatsn=second.expstatsn, datasn=0, offset=0, data=data,
                             final=True))  # fmt: skip
        rsp = recv_until(second, lambda p: p.opcode == Op.SCSI_RSP and p.itt == itt, "the WRITE's response")
        assert (rsp.u8(2), rsp.u8(3)) == (0, 0), rsp
        assert second.scsi_read(64, LBAS) == data
        assert second.logout() == 0
    finally:
        lead.close()
        second.close()


@pytest.mark.parametrize("layout", SESSIONS)
def test_a_lost_connections_read_is_reassigned_and_sent_again(
    erl2: set[int], layout: str, request: pytest.FixtureRequest
) -> None:
    """ERL 2: a READ answered on the first connection, its status not yet
    acknowledged, when that connection is lost. Reassigned through the
    other from DataSN 0, the READ's data and status come again on the new
    connection, the data as written. Offloaded as on stock."""
    lead, second = connect(request, layout)
    try:
        lead.login(PDU_INITIATOR, IQN, Params(max_connections=2, erl=2, time2retain=20, max_recv_dlen=4096))
        assert listed_within({0}), f"LIO does not list the lead's session: {session_cids()}"
        second.join(lead, PDU_INITIATOR, IQN, cid=1)
        assert listed_within({0, 1}), f"LIO does not list both connections: {session_cids()}"
        got = [adapter(c) for c in (lead, second)]
        assert got == ADAPTERS[layout], f"{layout}: adapters {got}"
        data = os.urandom(LBAS * 512)
        try:
            second.scsi_write(96, data)
        except ScsiError as e:  # a new session's UNIT ATTENTION
            assert e.sense_key == 6, e
            second.scsi_write(96, data)
        itt = lead.send_read(96, LBAS)
        lead.sock.settimeout(15)
        first = lead.recv_task(itt)  # up to the status, which nothing acknowledges
        assert b"".join(p.data for p in first) == data
        lead.reset()
        dropped_async(second, cid=0)
        assert listed_within({1}, 20), f"LIO still lists the lost connection: {session_cids()}"
        # the lost connection's ExpStatSN leaves the READ's status unacknowledged
        assert second.logout(reason=LOGOUT_FOR_RECOVERY, close=False, cid=0, expstatsn=first[-1].statsn) == 0
        assert second.tmf(TASK_REASSIGN, ref_itt=itt, exp_datasn=0) in erl2
        second.sock.settimeout(15)
        again = second.recv_task(itt)
        assert [(p.datasn, p.buffer_offset, p.data) for p in again] == [
            (p.datasn, p.buffer_offset, p.data) for p in first]  # fmt: skip
        assert again[-1].u8(3) == 0, again[-1]
        assert second.logout() == 0
    finally:
        lead.close()
        second.close()


# How a session that waits out Time2Retain is ended by the target's side:
# its target deleted (rtslib disables the TPG first), its ACL deleted with
# the TPG enabled, or a fresh login of the same ISID reinstating it (then
# the target deleted).
ENDINGS = ("target deleted", "acl deleted", "reinstated")


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_target_goes_while_a_session_waits_for_reassignment(
    mcs_target: None, request: pytest.FixtureRequest, lio_core: str, layout: str, ending: str
) -> None:
    """ERL 2: a session whose only connection is lost waits up to
    Time2Retain for the initiator to come back, and only its Time2Retain
    timer closes it. Each way the target's side ends such a session
    meanwhile marks it for closing, which makes that timer give up; the
    session must then be closed there and then, so that deleting its ACL
    or target ends. Stock as offloaded. The kernels' own core leaves it to
    no one and the rmdir waits for good (upstream/0010-*): there the case
    runs only when chosen (-k target_goes), as it leaves a task that
    cannot be killed."""
    if lio_core != "patched" and "target_goes" not in request.config.option.keyword:
        pytest.skip("reproducer of a LIO core hang (upstream/0010-*; the ACL's rmdir never returns "
                    "on the kernel's own core): runs with --patched-lio, or with -k target_goes")  # fmt: skip
    link, _ = LAYOUTS[layout]
    # a target and port of each case's own: on the kernel's core a failed
    # case leaves its target behind for good
    n = ENDINGS.index(ending) + len(ENDINGS) * list(LAYOUTS).index(layout)
    iqn, port = f"{IQN}-gone{n}", 3262 + n
    t = topology.Topology(iqn=iqn, backstores=("ramdisk",), lun_size=8 * topology.MiB, portals=(("0.0.0.0", port),),
                          offload=True, acls=(PDU_INITIATOR,), name_prefix=f"gone{n}")  # fmt: skip
    with topo.in_netns():
        topology.create(t)
    tpg = TPG.parent.parent / iqn / "tpgt_1"
    (tpg / "param/ErrorRecoveryLevel").write_text("2")
    (tpg / "acls" / PDU_INITIATOR / "attrib/default_erl").write_text("2")
    c = Connection(link.tgt_ip, port)
    keys = c.login(PDU_INITIATOR, iqn, Params(erl=2, time2retain=20))
    assert keys.get("ErrorRecoveryLevel") == "2", keys
    assert (adapter(c) is not None) == (link is OFF)
    c.reset()
    time.sleep(2)
    again = None
    if ending == "reinstated":
        again = Connection(link.tgt_ip, port)
        again.isid = c.isid  # TSIH 0: a new session in place of the waiting one
        again.login(PDU_INITIATOR, iqn, Params(erl=2, time2retain=20))
    gone = threading.Event()

    def end() -> None:
        with topo.in_netns():
            if ending == "acl deleted":
                target = next(t for t in FabricModule("iscsi").targets if t.wwn == iqn)
                next(a for tp in target.tpgs for a in tp.node_acls if a.node_wwn == PDU_INITIATOR).delete()
            topology.delete(iqn)
        gone.set()

    threading.Thread(target=end, daemon=True).start()
    assert gone.wait(60), f"{layout}, {ending}: deleting still waits 60 s on (Time2Retain 20 s)"
    if again is not None:
        again.close()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_session_is_freed_when_its_time2retain_expires(
    mcs_target: None, request: pytest.FixtureRequest, lio_core: str, layout: str
) -> None:
    """ERL 2: a session whose only connection is lost, and whose initiator
    never comes back, is freed when its Time2Retain expires: LIO lists it
    no more and the initiator logs in afresh. Stock as offloaded. Closing
    the session sleeps (it takes the TPG's ACL mutex), so it must not run
    in the timer's softirq, where the kernels' own core runs it
    (upstream/0011-*): a debug kernel reports that at every expiry ("BUG:
    sleeping function called from invalid context", which fails the
    case), a production kernel as "scheduling while atomic" when the mutex
    is contended. There the case runs only when chosen (-k expires)."""
    if lio_core != "patched" and "expires" not in request.config.option.keyword:
        pytest.skip("reproducer of a LIO core sleep in a timer (upstream/0011-*; reported at every expiry "
                    "on a debug kernel): runs with --patched-lio, or with -k expires")  # fmt: skip
    link, _ = LAYOUTS[layout]
    mark = kmsg_mark(f"time2retain expiry, {layout}")
    with erl2_offered():
        c = Connection(link.tgt_ip)
        keys = c.login(PDU_INITIATOR, IQN, Params(erl=2, time2retain=1))
        assert keys.get("ErrorRecoveryLevel") == "2", keys
        assert (adapter(c) is not None) == (link is OFF), f"{layout}: adapter {adapter(c)}"
        info = TPG / "acls" / PDU_INITIATOR / "info"
        listed = info.read_text()
        c.reset()
        deadline = time.monotonic() + 30
        while "No active iSCSI Session" not in info.read_text():
            assert time.monotonic() < deadline, f"{layout}: the session outlives its Time2Retain by 30 s:\n{listed}"
            time.sleep(0.1)
        expired = [line for line in dmesg_since(mark) if "Time2Retain timer expired" in line]
        assert expired, f"{layout}: the session was closed, but not by its Time2Retain timer"
        again = Connection(link.tgt_ip)
        again.login(PDU_INITIATOR, IQN, Params(erl=2, time2retain=1))
        clear_unit_attention(again)
        again.scsi_read(0, 1)
        assert again.logout() == 0
