"""The PDU-level initiator against stock LIO and the offloaded transport.

One target, portal 0.0.0.0:3260 with offload on and soft0 serving tgt0:
198.18.1.1 (tgt1) reaches LIO's stock iSCSI/TCP, 198.18.0.1 (tgt0) our
transport, in the same boot. Every case runs on both: positive flows (login
with every digest setting, SCSI write/read with immediate, unsolicited and
solicited data at the FirstBurstLength boundaries, NOP, Text, TMF, logout,
digests on every PDU type) and the negative cases of RFC 7143 at ERL 0,
where the offloaded path must be no worse than stock. Each case checks that
a new session on the same path works afterwards.

Beside all of them runs a background session: open-iscsi logged in over the
offloaded path (tgt0) and fio writing and crc32c-verifying its own LUN (1)
pass after pass, for as long as the module's cases run; the module
fixture's teardown stops it and fails unless every pass verified and the
session never reconnected. So the negative cases on both paths run beside a
live offloaded session, and soft0's counters are read net of what that
session counts itself. Every case then runs again with the offloaded path
through the cxgb4 backend's shipped glue on the cxgb4 stand-in
(tests/vm/c4sim.py: its port c4sim0, reached over the wire; the chip and
the kernel that runs it dealt by c4sim), whose adapter's counters are read
the same way.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from iscsi_initiator.pdu import (
    BHS_LEN,
    F_DATAIN_STATUS,
    F_FINAL,
    RSVD_TAG,
    Op,
    Pdu,
    data_out,
    login_request,
    nop_out,
    scsi_command,
    snack_request,
    text_request,
)
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params, ScsiError
from testbed import fio, topo

from . import c4sim, shares
from .conftest import (
    PDU_INITIATOR,
    PDU_IQN,
    clear_unit_attention,
    connection_of,
    cxgb4_adapter,
    cxgb4_counters,
    debug_kernel,
    offloaded_peers,
    offloaded_target,
    record,
    settle_sessions,
    soft0_counters,
    target_at_erl,
    target_tpg_params,
)

if TYPE_CHECKING:
    from rtslib_fb import NodeACL

BLOCK = 512
KiB = 1024
OFF, STOCK = topo.LINKS
FIO_LUN = 1  # the background session's; every PDU case stays on LUN 0
LIO_MRDSL = 262144  # what LIO declares by default (its TPG MaxXmitDataSegmentLength)


def pdu_target(module_ko: Path, kver: str, chip: str | None) -> AbstractContextManager[None]:
    """The suite's target, offloaded on every address; with chip (t5|t6),
    the offloaded path through the cxgb4 backend on the stand-in presenting
    it (c4sim.suite_target), whose port's link then is OFF."""
    t = topology.Topology(iqn=PDU_IQN, backstores=("ramdisk", "ramdisk"), lun_size=16 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    return c4sim.suite_target(module_ko, t, kver, chip) if chip else offloaded_target(module_ko, t)


# The adapter whose counters the offloaded path moves: soft0, or with
# --cxgb4-sim the stand-in's (dual_target sets it, and OFF).
_counted: str | None = None


def offload_counters() -> dict[str, int]:
    """The offloaded path's adapter's counters."""
    return cxgb4_counters(_counted) if _counted else soft0_counters()


def through_chip(path: str) -> bool:
    """Whether path is the offloaded one through the cxgb4 stand-in."""
    return path == "offload" and _counted is not None


def offload_recv_limit(path: str, declared: int) -> int:
    """The MaxRecvDataSegmentLength the target declares on path: what its
    TPG says, or less where a chip receives no more (its limits, shown in
    the backends file)."""
    if not through_chip(path):
        return declared
    assert _counted is not None
    return min(declared, int(cxgb4_adapter(_counted)["recv"].split("(")[0]))


@contextmanager
def suite_target(module_ko: Path, kver: str, chip: str | None) -> Iterator[None]:
    """pdu_target, with OFF and the counted adapter those of its offloaded path."""
    global _counted, OFF
    with pdu_target(module_ko, kver, chip):
        if chip:
            _counted, OFF = c4sim.ADAPTER, c4sim.LINK
        try:
            yield
        finally:
            _counted, OFF = None, topo.LINKS[0]


@pytest.fixture(scope="module", params=["soft0", "cxgb4sim"])
def dual_target(iscsid: None, module_ko: Path, kver: str, request: pytest.FixtureRequest) -> Iterator[None]:
    """The suite's target, its offloaded path through soft0, then through
    the cxgb4 backend on the stand-in (its chip and kernel dealt:
    c4sim.SUITE_SHARE)."""
    chip = None
    if request.param == "cxgb4sim":
        c4sim.skip_unless_here(request.config, "the PDU suite and fuzz", c4sim.SUITE_SHARE)
        chip = c4sim.chip_here(request.config)
    with suite_target(module_ko, kver, chip):
        yield


# -- the background session ------------------------------------------------------

# One fio pass: 4 MiB of random writes (4k to 256k) with crc32c headers, then
# all of it read back and verified. Writes are held to 1 MiB/s so that the
# session keeps I/O going beside every case without starving the TCG guest.
FIO_PASS_BYTES = 4 * topology.MiB
FIO_PASS = [
    "--name=background", "--rw=randwrite", "--bssplit=4k/30:64k/50:256k/20", f"--size={FIO_PASS_BYTES}",
    "--direct=1", "--ioengine=libaio", "--iodepth=8", "--rate=1m",
    "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--randrepeat=0",
]  # fmt: skip


class BackgroundFio:
    """fio write+verify passes on ``dev`` in a thread until finish().

    Passes rather than one time-based job: fio never starts the verify phase
    of a time-based write job ("verification read phase will never start
    because write phase uses all of runtime"); each pass here ends with a
    full read-back and verify of what it wrote.
    """

    def __init__(self, dev: str, peer: str) -> None:
        self.dev, self.peer = dev, peer
        self.current = "fixture setup"  # the test running now, for the report
        self.passes: list[fio.JobResult] = []
        self.error: str | None = None
        self.result: list[str] | None = None  # problems found by finish()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="background-fio", daemon=True)
        self._t0 = time.monotonic()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                (res,) = fio.jobs(fio.run([f"--filename={self.dev}", *FIO_PASS], timeout=300))
            # ValueError, KeyError: a report without exactly one job, or not fio's JSON
            except (fio.FioError, OSError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
                self.error = f"pass {len(self.passes) + 1} failed during {self.current}: {e}"
                return
            if res.error or res.write_bytes < FIO_PASS_BYTES or res.read_bytes != res.write_bytes:
                self.error = (f"pass {len(self.passes) + 1} (during {self.current}): error {res.error}, wrote "
                              f"{res.write_bytes} B of {FIO_PASS_BYTES}, verified {res.read_bytes} B")  # fmt: skip
                return
            self.passes.append(res)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> list[str]:
        """Stop after the pass under way (its verify included); what went wrong, if anything."""
        if self.result is not None:
            return self.result
        self._stop.set()
        self._thread.join(timeout=300)
        problems = []
        if self._thread.is_alive():
            problems.append("fio did not finish its pass within 300 s of the stop")
        if self.error:
            problems.append(self.error)
        if not self.passes:
            problems.append("no fio pass completed")
        if self.peer not in offloaded_peers():
            problems.append(f"the open-iscsi connection {self.peer} is gone: the session was disturbed; "
                            f"kernel log: {' | '.join(session_log(self.peer)) or 'nothing about it'}")  # fmt: skip
        total = sum(r.write_bytes for r in self.passes)
        record(f"background fio on {self.dev} (offloaded, {self.peer}): {len(self.passes)} passes in "
               f"{time.monotonic() - self._t0:.0f} s, {total >> 20} MiB written and verified"
               + "".join(f"; {p}" for p in problems), "pdu_background_fio.txt")  # fmt: skip
        self.result = problems
        return problems


def session_log(peer: str) -> list[str]:
    """The last kernel log lines about the connection from ``peer``, about
    open-iscsi's connections (errors, ping timeouts, recovery) and about
    connections LIO closed (DataOut or NopIn timeouts, reinstatements)."""
    keys = (f"{peer} ", f"{peer}:", "conn error", "ping timeout", "session recovery", "closing iSCSI connection",
            "NopIn", "reinstatement")  # fmt: skip
    out = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    return [ln for ln in out if any(k in ln for k in keys) and PDU_INITIATOR not in ln][-20:]


_background: BackgroundFio | None = None


@pytest.fixture(scope="module")
def background_fio(dual_target: None) -> Iterator[BackgroundFio]:
    """open-iscsi over the offloaded path and fio verify passes on LUN 1, for the whole module."""
    global _background
    portal = f"{OFF.tgt_ip}:3260"
    if not shutil.which("fio"):
        pytest.fail("background fio session: no fio in PATH")
    acl = background_acl() if debug_kernel() else None
    try:
        iscsiadm.discover(portal)
        iscsiadm.login(PDU_IQN, portal)
        disks = iscsiadm.session_disks(PDU_IQN, expect=2)
    except iscsiadm.IscsiadmError as e:
        pytest.fail(f"background fio session: open-iscsi could not log in over the offloaded path: {e}")
    if FIO_LUN not in disks:
        pytest.fail(f"background fio session: no block device for LUN {FIO_LUN} (have {disks})")
    peers = [p for p in offloaded_peers() if p.startswith(f"{OFF.ini_ip}:")]
    if len(peers) != 1:
        pytest.fail(f"background fio session: expected its one offloaded connection, found {peers}")
    bg = BackgroundFio(disks[FIO_LUN], peers[0])
    bg.start()
    _background = bg
    try:
        yield bg
    finally:
        _background = None
        problems = list(bg.finish())
        try:
            iscsiadm.logout(PDU_IQN, portal)
        except iscsiadm.IscsiadmError as e:
            problems.append(f"logout: {e}")
        if acl is not None:
            settle_sessions()
            acl.delete()
    assert not problems, "background fio session: " + "; ".join(problems)


def background_acl() -> NodeACL:
    """open-iscsi's own ACL on the suite's target (patient_acl())."""
    return patient_acl(iscsiadm.INITIATORNAME.read_text().split("=", 1)[1].strip())


def patient_acl(initiator: str, **attributes: str) -> NodeACL:
    """initiator's ACL on the suite's target, its LUNs as demo mode maps
    them and its other attributes as given. LIO's DataOut timeout (3 s from
    each R2T; a node ACL's attribute, which a dynamic ACL keeps at its
    default) can run out behind writes in flight on a debug kernel, where
    the stand-in moves them at a fraction of the speed: 30 s there, as
    test_cxgb4sim's sessions have."""
    from rtslib_fb import MappedLUN, NodeACL, RTSRoot

    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == PDU_IQN]
    acl = NodeACL(tpg, initiator)
    for lun in tpg.luns:
        MappedLUN(acl, lun.lun, lun)
    acl.set_attribute("dataout_timeout", "30")
    for name, value in attributes.items():
        acl.set_attribute(name, value)
    return acl


@pytest.fixture(params=["stock", "offload"])
def path(request: pytest.FixtureRequest, dual_target: None, background_fio: BackgroundFio) -> str:
    """The transport under test, by the address that reaches it. The
    offloaded side of every case runs on every kernel; the stock side, the
    reference, is dealt across kernels.conf's series (tests/vm/shares.py)."""
    if request.param == "stock" and _counted:
        pytest.skip("the stock side of each case runs beside soft0's path")
    if request.param == "stock":
        case = request.node.nodeid
        if not shares.runs_here(case, request.config.getoption("--every-share")):
            pytest.skip(f"stock side dealt to the {shares.owner(case)} kernel (--every-share runs it here)")
    background_fio.current = request.node.nodeid
    return str(request.param)


def ip_of(path: str) -> str:
    return OFF.tgt_ip if path == "offload" else STOCK.tgt_ip


def connect(
    path: str, params: Params | None = None, initiator: str = PDU_INITIATOR, cls: type[Connection] = Connection
) -> Connection:
    host = ip_of(path)
    c = cls(host)
    c.login(initiator, PDU_IQN, params)
    offloaded = f"{OFF.ini_ip}:{c.sock.getsockname()[1]}" in offloaded_peers()
    assert offloaded == (path == "offload"), f"{path} login landed on the wrong transport"
    return c


def tpg_params(**values: str) -> AbstractContextManager[None]:
    """The target's TPG parameters set for the logins inside (restored after)."""
    return target_tpg_params(PDU_IQN, **values)


def write10(lba: int, blocks: int) -> bytes:
    return struct.pack(">BBIBHB", 0x2A, 0, lba, 0, blocks, 0)


def write_retrying_ua(c: Connection, lba: int, data: bytes) -> None:
    try:
        c.scsi_write(lba, data)
    except ScsiError as e:
        # a new session's first command may meet a UNIT ATTENTION (a LUN
        # reset in an earlier case); an initiator retries it once
        assert e.sense_key == 6, e
        c.scsi_write(lba, data)


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.1)


def test_nop_text_tmf(path: str) -> None:
    c = connect(path, Params(header_digest="CRC32C", data_digest="CRC32C"))
    rsp = c.nop(b"echo me")
    assert rsp.data == b"echo me"
    keys = c.text({"SendTargets": "All"})
    assert keys.get("TargetName") == PDU_IQN
    assert c.tmf(5) == 0  # LOGICAL UNIT RESET: function complete
    assert c.logout() == 0


def healthy(path: str) -> None:
    c = connect(path)
    data = os.urandom(8 * BLOCK)
    write_retrying_ua(c, 8, data)
    assert c.scsi_read(8, 8) == data
    c.logout()


def answer_class(rsp: Pdu) -> str:
    if rsp.opcode == Op.REJECT:
        return f"reject 0x{rsp.u8(2):02x}"
    if rsp.opcode == Op.SCSI_RSP and (rsp.u8(2) or rsp.u8(3)):  # iSCSI response, SCSI status
        return f"refused SCSI_RSP 0x{rsp.u8(2):02x}/0x{rsp.u8(3):02x}"
    try:
        return f"accepted {Op(rsp.opcode).name}"
    except ValueError:
        return f"accepted opcode 0x{rsp.opcode:02x}"


def observe(c: Connection, wait: float = 5) -> str:
    """What the target did about the last PDU sent on ``c``.

    "reject 0xNN" (a Reject with that reason), "dropped" (connection closed),
    "accepted <OP>" (it answered as if the PDU were fine), "refused
    SCSI_RSP <response>/<status>" (a SCSI Response that failed the task) or
    "ignored" (no answer, but the connection still answers a NOP).
    """
    c.sock.settimeout(wait)
    try:
        rsp = c.recv()
    except (ConnectionClosed, ConnectionError):
        return "dropped"
    except TimeoutError:
        try:
            c.nop()
        except (ConnectionClosed, TimeoutError, OSError):
            return "dropped"
        return "ignored"
    return answer_class(rsp)


# A data segment that is a PDU in disguise: when a target refuses a PDU and
# does not consume its data segment, it reads that segment as the next PDUs:
# here an immediate NOP-Out ping, then bytes of opcode 0x3f (no initiator
# sends it), where any target drops the connection.
SMUGGLED_ITT = 0x5A5A0001
RAN_DATA = "ran data as PDUs"


def smuggling_data(c: Connection, n: int) -> bytes:
    assert not c.params.hdigest and not c.params.ddigest, "the smuggled ping is built without digests"
    ping = nop_out(itt=SMUGGLED_ITT, cmdsn=c.cmdsn, expstatsn=c.expstatsn).encode()
    return ping + b"\xff" * (n - len(ping))


def observe_data_segment(c: Connection, wait: float = 5, linger: float = 2) -> str:
    """observe() for a PDU whose data segment is smuggling_data(), and
    whether the target then ran that data as PDUs of its own: its first
    answer ("reject 0xNN", "dropped", "ignored", ...), "ran data as PDUs"
    when the first thing it did was answer the smuggled ping, or "<first>,
    then ran data as PDUs". After the first answer it watches ``linger`` s
    more (or until the connection drops) for the smuggled ping's answer."""
    first: str | None = None
    ran = False
    probe: int | None = None
    c.sock.settimeout(wait)
    while True:
        try:
            rsp = c.recv()
        except (ConnectionClosed, ConnectionError):
            first = first or "dropped"
            break
        except TimeoutError:
            if first is not None or probe is not None:
                first = first or "no answer to a NOP-Out"
                break
            probe = c.next_itt()
            try:
                c.send(nop_out(itt=probe, cmdsn=c.cmdsn, expstatsn=c.expstatsn))
            except (ConnectionClosed, OSError):
                first = "dropped"
                break
            continue
        if rsp.opcode == Op.NOOP_IN and rsp.itt == SMUGGLED_ITT:
            ran = True
            first = first or RAN_DATA
        elif probe is not None and rsp.opcode == Op.NOOP_IN and rsp.itt == probe:
            first = first or "ignored"
            break
        else:
            first = first or answer_class(rsp)
        c.sock.settimeout(linger)
    return f"{first}, then {RAN_DATA}" if ran and first != RAN_DATA else first


# RFC 7143 at ERL 0, per case: what a target may do.
REJECT_OR_DROP = {"dropped", "reject 0x04", "reject 0x09"}  # protocol error / invalid PDU field
# Stock LIO's own answers where they are outside that set. On the stock path
# check() takes one of them or an answer the RFC allows (which one stock
# gives varies with timing from run to run): a new deviation fails, one that
# goes away does not. The offloaded transport must not repeat them
# (DESIGN.md: no worse than stock; where stock misbehaves, record).
STOCK_DEVIATIONS: dict[str, str | set[str]] = {
    "data_out_unknown_ttt": "accepted SCSI_RSP",
    # When iscsit_setup_scsi_cmd or iscsit_check_dataout_hdr refuses a PDU,
    # iscsit_handle_scsi_cmd and iscsit_handle_data_out return 0 without
    # reading its data segment, so stock's receive loop takes that data for
    # the next PDUs and runs them (the offloaded path does not); or the
    # connection drops first.
    "immediate_above_fbl": {f"reject 0x09, then {RAN_DATA}", "dropped"},
    "data_out_past_edtl_solicited": {f"reject 0x09, then {RAN_DATA}", "dropped"},
    "data_out_past_edtl_unsolicited": {f"reject 0x09, then {RAN_DATA}", "dropped"},
    # DataSN above the expected one: the data run as PDUs, or a drop
    "datasn_skip": {RAN_DATA, "dropped"},
}

# soft0 counters that the background session moves as well; its own share
# (per connection, in the connections file) is taken out of every delta.
# It moves bursts, burst_pdus and rx_waits too, which are not kept per
# connection: no case in this module can assert on those.
SHARED_COUNTERS = ("pdus_rx", "pdus_tx", "bytes_placed", "bytes_copied")


def connection_counters(peer: str) -> dict[str, int] | None:
    """SHARED_COUNTERS of the offloaded connection from ``peer``, None when there is none."""
    conn = connection_of(peer)
    if conn is None:
        return None
    return {k: v for k, v in conn.counters.items() if k in SHARED_COUNTERS}


def soft0_net_of_background() -> dict[str, int]:
    """soft0's counters less what the background fio connection counted.

    Its connection's counters are read before and after soft0's; a read
    is kept when they did not move in between (fio writes at 1 MiB/s, so
    one of the first few tries holds still)."""
    bg = _background
    if bg is None:
        return offload_counters()
    for _ in range(100):
        own = connection_counters(bg.peer)
        assert own is not None, f"the background session's connection {bg.peer} is gone"
        total = offload_counters()
        if connection_counters(bg.peer) == own:
            return {k: v - own.get(k, 0) for k, v in total.items()}
        time.sleep(0.005)
    raise AssertionError("the background session's counters never held still across a read of soft0's")


class Moved:
    """Counter deltas of soft0 across a case (offload path only), net of
    the background session's own."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.before = soft0_net_of_background() if path == "offload" else {}

    def __call__(self, **want: int) -> None:
        # Through a chip the counters follow its rules, not the software
        # adapter's these expectations state: immediate and unsolicited
        # data come copied, a Data-Out is placed before LIO judges it, and
        # the chip drops a segment past its limit before any tag check.
        # The outcomes each case checks hold all the same.
        if self.path != "offload" or _counted:
            return
        after = soft0_net_of_background()
        got = {k: after.get(k, 0) - self.before.get(k, 0) for k in want}
        assert got == want, f"{_counted or 'soft0'} counters moved {got}, expected {want}"


def check(path: str, case: str, outcome: str, allowed: set[str]) -> None:
    record(f"{path}: {case}: {outcome}")
    if path == "stock" and case in STOCK_DEVIATIONS:
        pinned = STOCK_DEVIATIONS[case]
        seen = pinned if isinstance(pinned, set) else {pinned}
        # one of stock's pinned answers or the RFC's; anything else is new
        assert outcome in seen | allowed, f"stock LIO changed its answer to {case}: {outcome}, pinned {seen}"
    else:
        assert outcome in allowed, f"{case}: {outcome} is not what RFC 7143 allows at ERL 0 ({allowed})"


def test_bad_header_digest(path: str) -> None:
    c = connect(path, Params(header_digest="CRC32C"))
    moved = Moved(path)
    wire = bytearray(nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn).encode(True, False))
    wire[48] ^= 0xFF
    c.send_raw(bytes(wire))
    # 7.8: discard the header (and find the next PDU) or close the connection
    check(path, "bad_header_digest", observe(c), {"dropped", "ignored"})
    moved(hdigest_errors=1, drops=1)
    healthy(path)


@pytest.mark.parametrize("kind", ["scsi_command", "data_out"])
def test_bad_header_digest_at_erl1(path: str, kind: str) -> None:
    """ERL 1: a SCSI Command, or a solicited Data-Out, with a bad header
    digest. RFC 7143 7.8 lets the target discard it only where it can find
    the next PDU without the header's lengths (markers, which LIO does
    not do); otherwise the connection goes (recovered at ERL 2). Both
    paths answer alike and the target serves the next session."""
    c = connect_at_erl(path, 1, f"hdigest-{kind}", Params(header_digest="CRC32C", immediate_data=False))
    clear_unit_attention(c)
    itt = c.next_itt()
    cmd = scsi_command(write10(4192, 8), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=4 * KiB)
    c.cmdsn += 1
    if kind == "scsi_command":
        wire = bytearray(cmd.encode(True, False))
    else:
        c.send(cmd)
        (r2t,) = recv_n(c, 1)
        assert r2t.opcode == Op.R2T and r2t.itt == itt, r2t
        wire = bytearray(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                                  data=os.urandom(4 * KiB), final=True).encode(True, False))  # fmt: skip
    wire[48] ^= 0xFF
    moved = Moved(path)
    c.send_raw(bytes(wire))
    check(path, f"bad_header_digest_{kind}_erl1", observe(c), {"dropped", "ignored"})
    moved(hdigest_errors=1, drops=1)
    healthy(path)


def test_bad_data_digest_on_immediate_data(path: str) -> None:
    c = connect(path, Params(data_digest="CRC32C", immediate_data=True, initial_r2t=True))
    cdb = bytes([0x2A, 0, 0, 0, 0, 16, 0, 0, 1, 0])
    wire = bytearray(scsi_command(cdb, itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn,
                                  write_len=BLOCK, data=os.urandom(BLOCK)).encode(False, True))  # fmt: skip
    wire[-1] ^= 0x01
    moved = Moved(path)
    c.send_raw(bytes(wire))
    check(path, "bad_data_digest_immediate", observe(c), {"dropped", "reject 0x02"})
    moved(ddigest_errors=1, bytes_placed=BLOCK)
    healthy(path)


def test_bad_data_digest_on_data_out(path: str) -> None:
    c = connect(path, Params(data_digest="CRC32C", immediate_data=False, initial_r2t=True))
    itt = c.next_itt()
    cdb = bytes([0x2A, 0, 0, 0, 0, 32, 0, 0, 1, 0])
    moved = Moved(path)  # before the R2T, whose DataOut timer runs for 3 s
    c.send(scsi_command(cdb, itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=BLOCK))
    r2t = c.recv()
    assert r2t.opcode == Op.R2T and r2t.itt == itt
    wire = bytearray(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                              data=os.urandom(BLOCK), final=True).encode(False, True))  # fmt: skip
    wire[-2] ^= 0x01
    c.send_raw(bytes(wire))
    check(path, "bad_data_digest_data_out", observe(c), {"dropped", "reject 0x02"})
    moved(ddigest_errors=1, bytes_placed=BLOCK)
    healthy(path)


@pytest.mark.parametrize("variant", ["others_pending", "others_answered_after", "closed_at_once", "erl1"])
def test_bad_data_digest_with_writes_outstanding(path: str, variant: str) -> None:
    """A Data-Out with a bad data digest among four WRITEs that each hold
    an R2T: LIO answers it with iscsit_reject_cmd(), which drops a
    reference of the task it then leaves to the connection's close.
    Variants at ERL 0: the other three never answered; answered right after
    the bad one; the initiator closing as soon as the bad one is sent (the
    reject racing the close); and the first at ERL 1, where LIO recovers
    the sequence. The connection ends (or the PDU is rejected), the kernel
    log stays clean, the target serves the next session. Not sent to
    stock: its LIO frees the task twice at ERL 0 (6.1 and 6.12: a WARN in
    iscsit_release_cmd, then a refcount underflow)."""
    if path == "stock":
        pytest.skip("stock LIO frees a WRITE_PENDING task twice after a Data-Out data digest error, at ERL 0 "
                    "and at ERL 1 (6.1, 6.12); not sent to stock")  # fmt: skip
    erl = 1 if variant == "erl1" else 0
    # ERL 1 recovers by R2Ts that LIO's DataOut timer would also send for
    # the three waiting writes: on a debug kernel that timer gets 30 s
    acl = patient_acl(f"{PDU_INITIATOR}-{variant}", default_erl=str(erl)) if debug_kernel() and erl else None
    try:
        bad_data_digest_among_writes(path, variant, erl)
    finally:
        if acl is not None:
            settle_sessions()
            acl.delete()


def bad_data_digest_among_writes(path: str, variant: str, erl: int) -> None:
    c = connect_at_erl(path, erl, variant, Params(data_digest="CRC32C", immediate_data=False, initial_r2t=True))
    moved = Moved(path)
    # the four commands in one go, their R2Ts after: LIO's DataOut timer
    # (3 s from each R2T) must not end the connection before the data
    # comes, however slow this initiator runs (a debug kernel under TCG)
    itts = []
    for i in range(4):
        itts.append(c.next_itt())
        c.send(scsi_command(write10(12288 + 8 * i, 8), itt=itts[-1], cmdsn=c.cmdsn, expstatsn=c.expstatsn,
                            write_len=8 * BLOCK))  # fmt: skip
        c.cmdsn += 1
    r2ts = [c.recv_answering_pings() for _ in itts]
    assert sorted(r.itt for r in r2ts if r.opcode == Op.R2T) == sorted(itts), r2ts
    r2ts.sort(key=lambda r: itts.index(r.itt))

    def data_for(r2t: Pdu) -> bytes:
        return data_out(itt=r2t.itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                        data=os.urandom(8 * BLOCK), final=True).encode(False, True)  # fmt: skip

    bad = bytearray(data_for(r2ts[1]))
    bad[-2] ^= 0x01
    wire = bytes(bad)
    if variant == "others_answered_after":
        wire += b"".join(data_for(r) for r in (r2ts[0], r2ts[2], r2ts[3]))
    c.send_raw(wire)
    if variant == "closed_at_once":
        c.close()
        time.sleep(2)
    elif variant == "erl1":
        recover_after_bad_digest(c, r2ts, data_for)
    else:
        check(path, f"bad_data_digest_{variant}", observe(c), {"dropped", "reject 0x02"})
    moved(ddigest_errors=1)
    healthy(path)


def recover_after_bad_digest(c: Connection, r2ts: list[Pdu], data_for: Callable[[Pdu], bytes]) -> None:
    """ERL 1: the target rejects the bad Data-Out (reason 0x02) and asks
    for its data again with a recovery R2T; with that and the other three
    answered, all four WRITEs end GOOD and the data reads back."""
    c.sock.settimeout(10)
    recovery = None
    seen = []
    while recovery is None:
        p = c.recv_answering_pings()
        seen.append(f"{Op(p.opcode).name} {p.u8(2):#04x}" if p.opcode == Op.REJECT else Op(p.opcode).name)
        if p.opcode == Op.R2T and p.itt == r2ts[1].itt:
            recovery = p
        elif p.opcode != Op.REJECT:
            pytest.fail(f"ERL 1 after a bad data digest: {seen}")
    record(f"offload: bad_data_digest_erl1: {', '.join(seen)}")
    assert (recovery.buffer_offset, recovery.desired_length) == (0, 8 * BLOCK), recovery
    data = os.urandom(8 * BLOCK)
    c.send_raw(data_out(itt=recovery.itt, ttt=recovery.ttt, expstatsn=c.expstatsn, datasn=0, offset=0,
                        data=data, final=True).encode(False, True))  # fmt: skip
    c.send_raw(b"".join(data_for(r) for r in (r2ts[0], r2ts[2], r2ts[3])))
    status = {}
    while len(status) < 4:
        p = c.recv_answering_pings()
        if p.opcode == Op.SCSI_RSP:
            status[p.itt] = p.u8(3)
        elif p.opcode != Op.REJECT:
            pytest.fail(f"ERL 1 recovery: {Op(p.opcode).name} while waiting for the four responses")
    assert set(status.values()) == {0}, status
    assert c.scsi_read(12288 + 8, 8) == data
    c.logout()


def test_more_writes_than_ddp_tags_are_placed(request: pytest.FixtureRequest, background_fio: BackgroundFio) -> None:
    """Offloaded path: more solicited WRITEs on one connection than soft0
    has DDP tags per connection (1024). Each task gives its tag back when it
    ends, so every one of them is placed straight into the command's pages;
    a tag kept past its task would run the pool dry and the rest be copied."""
    background_fio.current = request.node.nodeid
    c = connect("offload", Params(immediate_data=False, initial_r2t=True))
    moved = Moved("offload")
    n, data = 1100, os.urandom(4 * KiB)
    for i in range(n):
        c.scsi_write(16384 + 8 * (i % 64), data)
    assert c.scsi_read(16384, len(data) // BLOCK) == data
    moved(bytes_placed=n * len(data), bytes_copied=0)
    c.logout()


def test_dlen_above_mrdsl(path: str) -> None:
    c = connect(path)
    limit = c.params.max_xmit_dlen
    c.send(nop_out(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, data=bytes(limit + 4)))
    check(path, "dlen_above_mrdsl", observe(c), REJECT_OR_DROP)
    healthy(path)


def test_unknown_opcode(path: str) -> None:
    c = connect(path)
    p = Pdu()
    p.opcode = 0x1E
    p.flags = 0x80
    p.itt, p.cmdsn, p.expstatsn = c.next_itt(), c.cmdsn, c.expstatsn
    c.send(p)
    check(path, "unknown_opcode", observe(c), {"dropped", "reject 0x04", "reject 0x05"})
    healthy(path)


def test_data_out_with_unknown_ttt(path: str) -> None:
    c = connect(path, Params(immediate_data=False))
    itt = c.next_itt()
    moved = Moved(path)  # before the R2T, whose DataOut timer runs for 3 s
    c.send(scsi_command(bytes([0x2A, 0, 0, 0, 0, 48, 0, 0, 1, 0]), itt=itt, cmdsn=c.cmdsn,
                        expstatsn=c.expstatsn, write_len=BLOCK))  # fmt: skip
    r2t = c.recv()
    assert r2t.opcode == Op.R2T
    c.send(data_out(itt=itt, ttt=r2t.ttt ^ 0x5A5A, expstatsn=c.expstatsn, datasn=0, offset=0,
                    data=bytes(BLOCK), final=True))  # fmt: skip
    check(path, "data_out_unknown_ttt", observe(c), REJECT_OR_DROP)
    moved(ddp_tag_errors=1, drops=1, bytes_placed=0)
    healthy(path)


@pytest.mark.parametrize("cut", [1, 20, 47])
def test_login_cut_mid_header_then_close(path: str, cut: int) -> None:
    s = socket.create_connection((ip_of(path), 3260), timeout=10)
    login = login_request(isid=b"\x80\0\0\0\0\x09", tsih=0, itt=1, cid=0, cmdsn=1, expstatsn=0, csg=1, nsg=3,
                          transit=True, keys=[("InitiatorName", PDU_INITIATOR)])  # fmt: skip
    s.sendall(login.encode()[:cut])
    s.close()
    healthy(path)


LOGIN_TIMEOUT_S = 15  # LIO's TA_LOGIN_TIMEOUT


def test_stalled_login_is_dropped(path: str) -> None:
    """An initiator that stops in the middle of a login PDU, the first or
    a later one, is dropped after LIO's login timeout (and not before: a
    slow login is not a bad one). The later one stalls first: a stalled
    first PDU holds the portal's login thread, so the other login could
    not start behind it."""
    stalled: list[tuple[str, float, socket.socket]] = []
    c = Connection(ip_of(path), timeout=60)
    c._login_step(0, 1, True, [("InitiatorName", PDU_INITIATOR), ("SessionType", "Normal"),
                               ("TargetName", PDU_IQN), ("AuthMethod", "None")])  # fmt: skip
    nxt = login_request(isid=c.isid, tsih=0, itt=c.itt, cid=0, cmdsn=c.cmdsn, expstatsn=c.expstatsn, csg=1, nsg=3,
                        transit=True, keys=[("HeaderDigest", "None")])  # fmt: skip
    c.sock.sendall(nxt.encode()[:20])
    stalled.append((f"{path}: 20 bytes into the second login PDU", time.monotonic(), c.sock))
    first = socket.create_connection((ip_of(path), 3260), timeout=60)
    login = login_request(isid=b"\x80\0\0\0\0\x0a", tsih=0, itt=1, cid=0, cmdsn=1, expstatsn=0, csg=1, nsg=3,
                          transit=True, keys=[("InitiatorName", PDU_INITIATOR)])  # fmt: skip
    first.sendall(login.encode()[:20])
    stalled.append((f"{path}: 20 bytes into the first login PDU", time.monotonic(), first))
    for what, t0, sock in stalled:
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        except TimeoutError:
            pytest.fail(f"{what}: still open after 60 s")
        took = time.monotonic() - t0
        sock.close()
        record(f"stalled login, {what}: dropped after {took:.1f} s", "pdu_stalled_login.txt")
        assert took >= LOGIN_TIMEOUT_S - 1, f"{what}: dropped after {took:.1f} s, before the login timeout"
    healthy(path)


def garbage_bhs(opcode: int, ahs_words: int = 0, dlen: int = 0) -> bytes:
    bhs = bytearray(48)
    bhs[0], bhs[1], bhs[4] = opcode, 0x87, ahs_words
    bhs[5:8] = dlen.to_bytes(3, "big")
    return bytes(bhs)


GARBAGE = {
    # a SCSI Command as the first PDU, announcing 256 bytes of AHS it never sends
    "command_with_ahs": garbage_bhs(0x01, ahs_words=64),
    # a target opcode, announcing 1 KiB of AHS
    "target_opcode_with_ahs": garbage_bhs(0x23, ahs_words=255),
    # a Login Request whose text is past what LIO takes at login (8 KiB)
    "login_dlen_64k": garbage_bhs(0x43, dlen=64 * KiB),
    # what a port scanner or a confused client sends (fixed seed)
    "random": random.Random(7).randbytes(48 + 512),
}


@pytest.mark.parametrize("case", GARBAGE)
def test_garbage_login_pdu_is_refused(path: str, case: str) -> None:
    """The first PDU cannot start a login: the target closes the connection
    at once (stock reads the 48-byte BHS and closes; the login timeout is
    15 s), answers no Login Response that admits the peer, and the portal
    still logs others in."""
    s = socket.create_connection((ip_of(path), 3260), timeout=10)
    s.sendall(GARBAGE[case])
    # a chip frames the stream itself: a header announcing AHS it never
    # sends is not handed up, and LIO's login timeout ends the connection
    s.settimeout(LOGIN_TIMEOUT_S + 5 if through_chip(path) else 5)
    got = bytearray()
    t0 = time.monotonic()
    try:
        while chunk := s.recv(65536):
            got += chunk
        outcome = "closed"
    except ConnectionResetError:
        outcome = "reset"
    except TimeoutError:
        outcome = "kept open"
    finally:
        s.close()
    record(f"{path}: garbage_login {case}: {outcome} after {time.monotonic() - t0:.1f} s, {len(got)} bytes back")
    assert outcome != "kept open", f"{case}: the target kept the connection open 5 s after a garbage first PDU"
    if len(got) >= 48:
        assert got[0] & 0x3F == Op.LOGIN_RSP and got[36] != 0, f"{case}: answered {bytes(got[:48]).hex()}"
    healthy(path)


def test_wrong_target_name_fails_login(path: str) -> None:
    c = Connection(ip_of(path))
    with pytest.raises(LoginError) as e:
        c.login(PDU_INITIATOR, "iqn.2026-11.org.cxgbit-ext:nonexistent")
    # RFC 7143 has 0x0203 (not found) for this; LIO answers 0x0301 (service unavailable)
    assert (e.value.status_class, e.value.status_detail) == (0x03, 0x01)
    c.close()


def test_nop_in_reserved_tag_roundtrip(path: str) -> None:
    c = connect(path)
    assert c.nop().ttt == RSVD_TAG
    c.logout()


def test_bidirectional_command_is_refused(path: str) -> None:
    c = connect(path)
    p = scsi_command(bytes([0x2A, 0, 0, 0, 0, 64, 0, 0, 1, 0]), itt=c.next_itt(), cmdsn=c.cmdsn,
                     expstatsn=c.expstatsn, write_len=BLOCK)  # fmt: skip
    p.flags |= 0x40  # R as well as W: bidirectional, which LIO does not do
    c.send(p)
    c.cmdsn += 1
    # refused by a Reject, a drop, or the task failed with CHECK CONDITION;
    # never answered as a WRITE that succeeded
    check(path, "bidirectional", observe(c), REJECT_OR_DROP | {"reject 0x05", "refused SCSI_RSP 0x00/0x02"})
    healthy(path)


def connect_at_erl(path: str, erl: int, name: str, params: Params | None = None) -> Connection:
    """A session at ErrorRecoveryLevel ``erl`` on path, its initiator name
    PDU_INITIATOR-``name``."""
    with target_at_erl(PDU_IQN, erl):
        c = connect(path, dataclasses.replace(params or Params(), erl=erl), initiator=f"{PDU_INITIATOR}-{name}")
    assert c.target_keys.get("ErrorRecoveryLevel", str(erl)) == str(erl), c.target_keys
    return c


# -- ERL 1: SNACKs (RFC 7143 11.16), each answer compared with the first one ----

SNACK_DATA_R2T, SNACK_STATUS, SNACK_DATA_ACK = 0, 1, 2
F_DATA_ACK = 0x40  # the A bit of a Data-In


def snack(c: Connection, kind: int, *, itt: int, begrun: int, runlength: int, expstatsn: int,
          ttt: int = RSVD_TAG) -> None:  # fmt: skip
    """A SNACK Request (Type ``kind``), ExpStatSN as given: a SNACK sent
    while a status is unacknowledged must not acknowledge it."""
    c.send(snack_request(kind=kind, itt=itt, ttt=ttt, expstatsn=expstatsn, begrun=begrun, runlength=runlength))


def wire_fields(p: Pdu) -> tuple[object, ...]:
    """What a retransmission repeats (RFC 7143 11.7, 11.4): all but the
    sequence numbers the target stamps afresh (ExpCmdSN, MaxCmdSN and, in a
    PDU without status, StatSN)."""
    status = p.opcode == Op.SCSI_RSP or bool(p.flags & F_DATAIN_STATUS)
    return (Op(p.opcode).name, hex(p.flags), hex(p.itt), hex(p.ttt), p.lun, p.datasn, p.buffer_offset,
            p.residual, p.dlen, p.data, p.statsn if status else None)  # fmt: skip


def recv_n(c: Connection, n: int, wait: float = 10) -> list[Pdu]:
    """The next n PDUs, or the test fails saying what came."""
    c.sock.settimeout(wait)
    got: list[Pdu] = []
    try:
        while len(got) < n:
            got.append(c.recv())
    except (TimeoutError, ConnectionClosed, ConnectionError) as e:
        pytest.fail(f"{len(got)} of {n} PDUs ({[Op(p.opcode).name for p in got]}), then {type(e).__name__}")
    return got


@pytest.mark.parametrize(("begrun", "runlength"), [(1, 2), (2, 0)])
def test_data_snack_resends_the_same_data_in(path: str, begrun: int, runlength: int) -> None:
    """ERL 1, a READ of 16 KiB in four 4 KiB Data-In PDUs, its status
    unacknowledged: a Data SNACK for DataSN begrun.. (RunLength 0: to the
    end) brings those Data-In PDUs again, identical to the first ones
    (DataSN, offset, flags, data), and the session goes on. Offloaded, the
    connections file shows ISO off for the session's ERL: the burst
    planner's model is ERL 0."""
    c = connect_at_erl(path, 1, "snack-data", Params(max_recv_dlen=4 * KiB))
    if path == "offload":
        # the adapter does not cut this session's Data-In, and says why
        line = connection_of(f"{OFF.ini_ip}:{c.sock.getsockname()[1]}")
        assert line is not None and (line.iso, line.iso_off) == (False, "erl"), line
    data = os.urandom(16 * KiB)
    write_retrying_ua(c, 4096, data)
    itt = c.send_read(4096, 32)
    first = c.recv_task(itt)
    assert b"".join(p.data for p in first if p.opcode == Op.DATA_IN) == data
    datains = [p for p in first if p.opcode == Op.DATA_IN]
    assert [p.datasn for p in datains] == [0, 1, 2, 3], [p.datasn for p in datains]
    want = datains[begrun : begrun + runlength] if runlength else datains[begrun:]
    snack(c, SNACK_DATA_R2T, itt=itt, begrun=begrun, runlength=runlength, expstatsn=first[-1].statsn)
    again = recv_n(c, len(want))
    record(f"{path}: data_snack_{begrun}_{runlength}: " + ", ".join(
        f"{Op(p.opcode).name} DataSN {p.datasn} flags {p.flags:#04x}" for p in again))  # fmt: skip
    assert [wire_fields(p) for p in again] == [wire_fields(p) for p in want]
    assert c.nop(b"after").data == b"after"
    assert c.logout() == 0


def test_status_snack_resends_the_same_response(path: str) -> None:
    """ERL 1: a Status SNACK for the StatSN of a WRITE's response, not yet
    acknowledged, brings that SCSI Response again (ITT, StatSN, status)."""
    c = connect_at_erl(path, 1, "snack-status", Params(immediate_data=True, initial_r2t=False))
    write_retrying_ua(c, 4160, os.urandom(4 * KiB))
    itt = c.next_itt()
    c.send(scsi_command(write10(4160, 8), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=4 * KiB,
                        data=os.urandom(4 * KiB)))  # fmt: skip
    c.cmdsn += 1
    (rsp,) = recv_n(c, 1)
    assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    snack(c, SNACK_STATUS, itt=RSVD_TAG, begrun=rsp.statsn, runlength=1, expstatsn=rsp.statsn)
    (again,) = recv_n(c, 1)
    record(f"{path}: status_snack: {Op(again.opcode).name} StatSN {again.statsn} (first {rsp.statsn})")
    assert wire_fields(again) == wire_fields(rsp)
    assert c.nop(b"after").data == b"after"
    assert c.logout() == 0


def test_r2t_snack_resends_the_r2t(path: str) -> None:
    """ERL 1, a WRITE whose data the target solicits: an R2T SNACK for the
    R2T it sent brings that R2T again (R2TSN, offset, length); the data
    sent for it completes the WRITE, which reads back."""
    c = connect_at_erl(path, 1, "snack-r2t", Params(immediate_data=False, initial_r2t=True))
    clear_unit_attention(c)
    itt = c.next_itt()
    c.send(scsi_command(write10(4176, 8), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=4 * KiB))
    c.cmdsn += 1
    (r2t,) = recv_n(c, 1)
    assert r2t.opcode == Op.R2T and r2t.itt == itt, r2t
    snack(c, SNACK_DATA_R2T, itt=itt, begrun=r2t.datasn, runlength=1, expstatsn=c.expstatsn)
    (again,) = recv_n(c, 1)
    record(f"{path}: r2t_snack: {Op(again.opcode).name} R2TSN {again.datasn} offset {again.buffer_offset} "
           f"length {again.desired_length} (first {r2t.datasn} {r2t.buffer_offset} {r2t.desired_length})")  # fmt: skip
    assert (Op(again.opcode).name, again.itt, again.datasn, again.buffer_offset, again.desired_length) == (
        "R2T", itt, r2t.datasn, r2t.buffer_offset, r2t.desired_length)  # fmt: skip
    data = os.urandom(4 * KiB)
    c.send(data_out(itt=itt, ttt=again.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=data, final=True))
    (rsp,) = recv_n(c, 1)
    assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt and rsp.u8(3) == 0, rsp
    assert c.scsi_read(4176, 8) == data
    assert c.logout() == 0


def test_data_ack_snack_acknowledges_a_read(path: str) -> None:
    """ERL 1: the target asks for a DataACK (the A bit) at the end of a
    READ's burst; a DataACK SNACK for it (its TTT, BegRun the next DataSN)
    is taken without an answer and the session goes on."""
    c = connect_at_erl(path, 1, "snack-dataack", Params(max_recv_dlen=4 * KiB))
    clear_unit_attention(c)
    itt = c.send_read(4096, 32)
    first = c.recv_task(itt)
    acks = [p for p in first if p.opcode == Op.DATA_IN and p.flags & F_DATA_ACK]
    record(f"{path}: data_ack: A bit on DataSN {[p.datasn for p in acks]}, TTT {[hex(p.ttt) for p in acks]}")
    assert acks, "no Data-In asked for a DataACK at ERL 1"
    last = acks[-1]
    snack(c, SNACK_DATA_ACK, itt=itt, ttt=last.ttt, begrun=last.datasn + 1, runlength=0,
          expstatsn=first[-1].statsn)  # fmt: skip
    assert observe(c, wait=3) == "ignored"
    assert c.logout() == 0


def test_snack_at_erl0_is_rejected(path: str) -> None:
    c = connect(path)
    snack(c, SNACK_DATA_R2T, itt=c.next_itt(), begrun=0, runlength=0, expstatsn=c.expstatsn)
    check(path, "snack_at_erl0", observe(c), REJECT_OR_DROP)
    healthy(path)


def test_data_snack_beyond_what_a_read_sent_at_erl1(path: str) -> None:
    """ERL 1: a Data SNACK asking a completed READ for DataSNs it never
    sent is refused (a Reject, or the connection dropped) without touching
    the READ's task: the kernel log stays clean and the target serves the
    next session. Not sent to stock: its LIO refuses the SNACK with
    iscsit_reject_cmd(), which drops the READ's last reference (a WARN in
    iscsit_release_cmd), and the connection's close puts it again; the fix
    for LIO itself is upstream/0004-*."""
    if path == "stock":
        pytest.skip("stock LIO releases a READ twice after refusing a Data SNACK for it at ERL 1 "
                    "(iscsit_reject_cmd); not sent to stock")  # fmt: skip
    c = connect_at_erl(path, 1, "data-snack")
    c.scsi_read(0, 1)  # one Data-In: DataSN 0
    snack(c, SNACK_DATA_R2T, itt=c.itt, begrun=1, runlength=1, expstatsn=c.expstatsn)  # DataSN 1, never sent
    check(path, "data_snack_beyond_sent_erl1", observe(c), REJECT_OR_DROP)
    healthy(path)


def test_session_reinstatement_same_isid(path: str) -> None:
    a = connect(path)
    b = Connection(ip_of(path))
    b.isid = a.isid  # same initiator name and ISID: reinstates the session
    b.login(PDU_INITIATOR, PDU_IQN)
    assert a.closed_by_peer(), "the old connection survived its session's reinstatement"
    data = os.urandom(8 * BLOCK)
    try:
        b.scsi_write(16, data)
    except ScsiError as e:
        assert e.sense_key == 6, e  # UNIT ATTENTION after the reinstatement
        b.scsi_write(16, data)
    assert b.scsi_read(16, 8) == data
    b.logout()


def test_target_nop_in_is_answered(path: str) -> None:
    """LIO pings an idle session (NOP-In with a TTT); the answer keeps it up."""
    from rtslib_fb import MappedLUN, NodeACL, RTSRoot

    name = f"{PDU_INITIATOR}-nopin-{path}"
    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == PDU_IQN]
    acl = NodeACL(tpg, name)
    try:
        acl.set_attribute("nopin_timeout", "3")
        MappedLUN(acl, 0, next(iter(tpg.luns)))
        c = Connection(ip_of(path))
        c.login(name, PDU_IQN)
        moved = Moved(path)
        c.sock.settimeout(20)
        ping = c.recv()
        assert ping.opcode == Op.NOOP_IN and ping.itt == RSVD_TAG and ping.ttt != RSVD_TAG, ping
        c.send(nop_out(itt=RSVD_TAG, cmdsn=c.cmdsn, expstatsn=c.expstatsn, ttt=ping.ttt))
        assert c.nop(b"still here").data == b"still here"
        moved(drops=0)
        c.logout()
    finally:
        settle_sessions()
        acl.delete()


# -- Data-Out beyond what was asked for, out of order ----------------------------


def test_data_out_past_r2t_burst(path: str) -> None:
    """A Data-Out that runs past its R2T's Desired Data Transfer Length
    (still inside the command's transfer length)."""
    c = connect(path, Params(immediate_data=False, initial_r2t=True, first_burst=16 * KiB, max_burst=16 * KiB))
    assert c.params.max_burst == 16 * KiB
    itt = c.next_itt()
    moved = Moved(path)  # before the R2T, whose DataOut timer runs for 3 s
    c.send(scsi_command(write10(9000, 64), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=64 * BLOCK))
    c.cmdsn += 1
    data = smuggling_data(c, 20 * KiB)
    r2t = c.recv()
    assert (r2t.opcode, r2t.itt, r2t.buffer_offset, r2t.desired_length) == (Op.R2T, itt, 0, 16 * KiB)
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=data, final=True))
    # stock LIO discards the PDU's data and waits: its DataOut timer (3 s)
    # then fails the connection at ERL 0; hence the longer wait
    check(path, "data_out_past_burst", observe_data_segment(c, wait=10), REJECT_OR_DROP)
    moved(ddp_tag_errors=1, drops=1, bytes_placed=0)
    healthy(path)


@pytest.mark.parametrize("solicited", [True, False], ids=["solicited", "unsolicited"])
def test_data_out_past_transfer_length(path: str, solicited: bool) -> None:
    """A Data-Out whose offset + length passes the command's Expected Data
    Transfer Length: answering an R2T, or as unsolicited data."""
    with tpg_params(InitialR2T="Yes" if solicited else "No"):
        c = connect(path, Params(immediate_data=False, initial_r2t=solicited))
    assert c.params.initial_r2t == solicited
    itt = c.next_itt()
    moved = Moved(path)  # before the R2T, whose DataOut timer runs for 3 s
    c.send(scsi_command(write10(9100, 32), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=32 * BLOCK,
                        final=solicited))  # fmt: skip
    c.cmdsn += 1
    data = smuggling_data(c, 20 * KiB)
    ttt = RSVD_TAG
    if solicited:
        r2t = c.recv()
        assert (r2t.opcode, r2t.itt, r2t.desired_length) == (Op.R2T, itt, 16 * KiB)
        ttt = r2t.ttt
    c.send(data_out(itt=itt, ttt=ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=data, final=True))
    case = f"data_out_past_edtl_{'solicited' if solicited else 'unsolicited'}"
    check(path, case, observe_data_segment(c), REJECT_OR_DROP)
    # solicited: the R2T's tag does not cover it (the adapter drops at once)
    moved(ddp_tag_errors=int(solicited), bytes_placed=0)
    healthy(path)


@pytest.mark.parametrize("order", ["skip", "repeat"])
def test_data_out_datasn_out_of_order(path: str, order: str) -> None:
    """The second Data-Out of an R2T's sequence with DataSN 2 (1 skipped)
    or 0 again, at the right offset."""
    c = connect(path, Params(immediate_data=False, initial_r2t=True))
    itt = c.next_itt()
    # everything read or made before the R2T: its DataOut timer (3 s) must
    # not run out before both Data-Outs are sent, however slow this runs
    moved = Moved(path)
    c.send(scsi_command(write10(9200, 32), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=32 * BLOCK))
    c.cmdsn += 1
    first, second = os.urandom(4 * KiB), smuggling_data(c, 4 * KiB)
    r2t = c.recv()
    assert (r2t.opcode, r2t.itt, r2t.desired_length) == (Op.R2T, itt, 16 * KiB)
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=first, final=False))
    c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=2 if order == "skip" else 0,
                    offset=4 * KiB, data=second, final=False))  # fmt: skip
    # "repeat": LIO discards the duplicate and waits for DataSN 1 until its
    # DataOut timer (3 s) fails the connection
    check(path, f"datasn_{order}", observe_data_segment(c, wait=10), REJECT_OR_DROP)
    moved(ddp_tag_errors=0, bytes_placed=4 * KiB)  # the first PDU only
    healthy(path)


# -- CmdSN outside the command window ------------------------------------------------


@pytest.mark.parametrize("kind", ["read", "write_immediate"])
@pytest.mark.parametrize("where", ["above_maxcmdsn", "far_above_maxcmdsn", "below_expcmdsn"])
def test_cmdsn_outside_window_is_ignored(path: str, where: str, kind: str) -> None:
    """RFC 7143 4.2.2.1: a target MUST silently ignore a non-immediate
    command outside [ExpCmdSN, MaxCmdSN]; the window stays where it was.
    A WRITE's immediate data is not placed (offloaded path: its data
    segment is skipped before LIO sees the command) and not written."""
    c = connect(path, Params(immediate_data=True))
    lba = 9300 + 16 * ["above_maxcmdsn", "far_above_maxcmdsn", "below_expcmdsn"].index(where)
    data = os.urandom(8 * BLOCK)
    write_retrying_ua(c, lba, data)  # so that ExpCmdSN - 1 was a command
    pong = c.nop()
    assert pong.expcmdsn == c.cmdsn
    sn = {
        "above_maxcmdsn": pong.maxcmdsn + 1,
        "far_above_maxcmdsn": pong.maxcmdsn + (1 << 16),
        "below_expcmdsn": c.cmdsn - 1,
    }[where]
    moved = Moved(path)
    if kind == "read":
        cdb = struct.pack(">BBIBHB", 0x28, 0, lba, 0, 8, 0)
        cmd = scsi_command(cdb, itt=c.next_itt(), cmdsn=sn & 0xFFFFFFFF, expstatsn=c.expstatsn, read_len=8 * BLOCK)
    else:
        cmd = scsi_command(write10(lba, 8), itt=c.next_itt(), cmdsn=sn & 0xFFFFFFFF, expstatsn=c.expstatsn,
                           write_len=8 * BLOCK, data=os.urandom(8 * BLOCK))  # fmt: skip
    c.send(cmd)
    check(path, f"cmdsn_{where}", observe(c, wait=1), {"ignored"})
    moved(bytes_placed=0)
    after = c.nop()
    assert (after.expcmdsn, after.maxcmdsn) == (pong.expcmdsn, pong.maxcmdsn), "the ignored command moved the window"
    assert c.scsi_read(lba, 8) == data  # a command at ExpCmdSN still runs; the ignored WRITE wrote nothing
    assert c.logout() == 0


def test_ignored_write_then_connection_dropped(path: str) -> None:
    """A WRITE with immediate data above MaxCmdSN, then at once a PDU that
    drops the connection, 20 times. Stock LIO (6.1) puts the ignored WRITE
    in TRANSPORT_WRITE_PENDING, drops a reference and leaves it listed; a
    close that comes before its TX thread removes it completes the command
    and frees it twice (a WARN in iscsit_release_cmd, then a
    use-after-free), so the stock path is not sent it. The offloaded
    path skips such a command before LIO sees it."""
    if path == "stock":
        record("stock: ignored_write_then_dropped: not sent (a LIO race that frees a command twice on 6.1)")
        pytest.skip("stock LIO can free an ignored WRITE twice when the connection drops at once (6.1); not sent")
    moved = Moved(path)
    for i in range(20):
        c = connect(path, Params(immediate_data=True))
        pong = c.nop()
        c.send(scsi_command(write10(9500 + 8 * i, 8), itt=c.next_itt(), cmdsn=(pong.maxcmdsn + 1) & 0xFFFFFFFF,
                            expstatsn=c.expstatsn, write_len=8 * BLOCK, data=os.urandom(8 * BLOCK)))  # fmt: skip
        bad = Pdu()
        bad.opcode, bad.flags = 0x1E, 0x80  # an opcode no initiator sends: the target drops the connection
        bad.itt, bad.cmdsn, bad.expstatsn = c.next_itt(), c.cmdsn, c.expstatsn
        c.send(bad)
        assert observe(c) in {"dropped", "reject 0x04", "reject 0x05"}
        c.close()
    moved(bytes_placed=0, drops=20)
    healthy(path)


# -- immediate data above FirstBurstLength ---------------------------------------------


def test_immediate_data_above_first_burst(path: str) -> None:
    """FirstBurstLength 4 KiB, 8 KiB of immediate data (within the target's
    MaxRecvDataSegmentLength and the command's transfer length)."""
    c = connect(path, Params(immediate_data=True, initial_r2t=True, first_burst=4 * KiB))
    assert (c.params.first_burst, c.params.immediate_data) == (4 * KiB, True)
    assert c.params.max_xmit_dlen >= 8 * KiB
    moved = Moved(path)
    c.send(scsi_command(write10(9400, 32), itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn,
                        write_len=32 * BLOCK, data=smuggling_data(c, 8 * KiB)))  # fmt: skip
    c.cmdsn += 1
    check(path, "immediate_above_fbl", observe_data_segment(c), REJECT_OR_DROP)
    moved(bytes_placed=0)
    healthy(path)


def test_data_segment_on_a_read(path: str) -> None:
    """A READ(10) whose PDU carries a data segment: immediate data is write
    data (RFC 7143 3.2.4.2), a command without the W bit has none. Stock
    LIO on Debian's 6.1 runs the READ, then runs it again for its
    "immediate data", and oopses (a NULL dereference in
    target_alua_state_check after "read_data_left is zero!"), so the stock
    path is not sent it; the offloaded path refuses it."""
    if path == "stock":
        record("stock: data_segment_on_a_read: not sent (it oopses LIO on Debian's 6.1)")
        pytest.skip("stock LIO oopses on a READ with a data segment (6.1: runs it twice); not sent to stock")
    c = connect(path, Params(immediate_data=True, initial_r2t=False))
    moved = Moved(path)
    c.send(scsi_command(bytes([0x28, 0, 0, 0, 0, 8, 0, 0, 1, 0]), itt=c.next_itt(), cmdsn=c.cmdsn,
                        expstatsn=c.expstatsn, read_len=BLOCK, data=smuggling_data(c, 16)))  # fmt: skip
    c.cmdsn += 1
    check(path, "data_segment_on_a_read", observe_data_segment(c), {"dropped", "reject 0x04"})
    moved(drops=1, bytes_placed=0)
    healthy(path)


# -- a PDU cut off, then the connection closed -------------------------------------------


def sessions_of(initiator: str) -> int:
    """LIO's sessions of ``initiator`` on the target (demo mode: dynamic ACLs)."""
    f = Path(f"/sys/kernel/config/target/iscsi/{PDU_IQN}/tpgt_1/dynamic_sessions")
    return f.read_text().replace("\0", "").splitlines().count(initiator)


@pytest.mark.parametrize("cut", ["header_20_of_48", "immediate_data_half", "data_out_half"])
def test_pdu_cut_off_then_close(path: str, cut: str) -> None:
    """In full feature phase, part of a PDU and then FIN: the target ends
    the session (nothing left behind) and the next session works."""
    name = f"{PDU_INITIATOR}-cut-{path}-{cut.replace('_', '-')}"
    c = connect(path, Params(immediate_data=cut != "data_out_half"), initiator=name)
    peer = f"{OFF.ini_ip}:{c.sock.getsockname()[1]}"
    # LIO registers the session just after it sends the last login response
    wait_for(f"LIO lists the session of {name}", lambda: sessions_of(name) == 1)
    data = os.urandom(16 * BLOCK)
    itt = c.next_itt()
    if cut == "header_20_of_48":
        wire = nop_out(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, data=b"ping").encode()[:20]
    elif cut == "immediate_data_half":
        wire = scsi_command(write10(9500, 16), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=len(data),
                            data=data).encode()[: BHS_LEN + len(data) // 2]  # fmt: skip
    else:
        c.send(scsi_command(write10(9500, 16), itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=len(data)))
        r2t = c.recv()
        assert (r2t.opcode, r2t.itt) == (Op.R2T, itt)
        wire = data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=0, data=data,
                        final=True).encode()[: BHS_LEN + len(data) // 2]  # fmt: skip
    c.send_raw(wire)
    c.close()
    wait_for(f"the target ends the session of {name} after the close", lambda: sessions_of(name) == 0)
    if path == "offload":
        wait_for("the offloaded connection goes with its session", lambda: peer not in offloaded_peers(), 5)
    healthy(path)


# -- RFC 7143 FirstBurstLength boundaries (libiscsi #407 and beyond) ---------------------


@dataclass(frozen=True)
class Wire:
    """One PDU as the initiator sent or received it after login."""

    opcode: int
    flags: int
    dlen: int
    ttt: int
    offset: int
    desired: int
    hdigest: bool  # sent with / checked against a header digest
    ddigest: bool


class Recording(Connection):
    """A Connection that keeps every full-feature PDU it sends and receives."""

    def __init__(self, host: str) -> None:
        super().__init__(host)
        self.sent: list[Wire] = []
        self.received: list[Wire] = []

    def _wire(self, p: Pdu, hd: bool, dd: bool) -> Wire:
        return Wire(p.opcode, p.flags, len(p.data), p.ttt, p.buffer_offset, p.desired_length, hd, dd)

    def send(self, p: Pdu, hdigest: bool | None = None, ddigest: bool | None = None) -> None:
        if self.full_feature:
            hd = self.params.hdigest if hdigest is None else hdigest
            dd = self.params.ddigest if ddigest is None else ddigest
            self.sent.append(self._wire(p, hd, dd and bool(p.data)))
        super().send(p, hdigest, ddigest)

    def recv(self) -> Pdu:
        ff = self.full_feature
        p = super().recv()  # raises DigestError on a wrong digest
        if ff:
            self.received.append(self._wire(p, self.params.hdigest, self.params.ddigest and bool(p.data)))
        return p


FBL = 64 * KiB


@pytest.mark.parametrize(
    ("imm", "r2t", "tgt_mrdsl"),
    [
        (True, True, LIO_MRDSL),
        (True, False, LIO_MRDSL),
        (False, True, LIO_MRDSL),
        (False, False, LIO_MRDSL),
        (True, True, 8 * KiB),  # immediate data capped by the target's MaxRecvDataSegmentLength
        (True, False, 8 * KiB),
    ],
    ids=["imm-r2t", "imm-nor2t", "noimm-r2t", "noimm-nor2t", "imm-r2t-mrdsl8k", "imm-nor2t-mrdsl8k"],
)
def test_first_burst_boundaries(path: str, imm: bool, r2t: bool, tgt_mrdsl: int) -> None:
    """Writes of FirstBurstLength - 512, exactly, and + 512 with every
    ImmediateData/InitialR2T pair, one after another in one session: the
    initiator sends immediate data up to min(FirstBurstLength,
    MaxRecvDataSegmentLength), unsolicited Data-Out up to FirstBurstLength
    when InitialR2T=No, the rest on R2Ts; the data reads back equal, and on
    the offloaded path every byte was placed."""
    with tpg_params(InitialR2T="Yes" if r2t else "No", MaxXmitDataSegmentLength=str(tgt_mrdsl)):
        c = connect(path, Params(immediate_data=imm, initial_r2t=r2t, first_burst=FBL, max_burst=256 * KiB),
                    cls=Recording)  # fmt: skip
    assert isinstance(c, Recording)
    p = c.params
    mrdsl = offload_recv_limit(path, tgt_mrdsl)
    assert (p.immediate_data, p.initial_r2t, p.first_burst, p.max_xmit_dlen) == (imm, r2t, FBL, mrdsl)
    clear_unit_attention(c)
    for i, length in enumerate([FBL - 512, FBL, FBL + 512]):
        first = min(length, FBL)
        imm_len = min(first, mrdsl) if imm else 0
        unsol_len = 0 if r2t else first - imm_len
        lba = 10000 + 480 * (4 * imm + 2 * r2t + (tgt_mrdsl < LIO_MRDSL)) + 160 * i
        data = os.urandom(length)
        moved = Moved(path)
        c.sent.clear()
        c.received.clear()
        c.scsi_write(lba, data)
        (cmd,) = [w for w in c.sent if w.opcode == Op.SCSI_CMD]
        douts = [w for w in c.sent if w.opcode == Op.DATA_OUT]
        r2ts = [w for w in c.received if w.opcode == Op.R2T]
        unsol = sum(w.dlen for w in douts if w.ttt == RSVD_TAG)
        sol = sum(w.dlen for w in douts if w.ttt != RSVD_TAG)
        print(f"{path}: {length} B: immediate {cmd.dlen}, unsolicited {unsol}, on {len(r2ts)} R2Ts {sol}")
        assert (cmd.dlen, unsol, sol) == (imm_len, unsol_len, length - imm_len - unsol_len), f"{length} B"
        assert bool(cmd.flags & F_FINAL) == (unsol_len == 0), "F on the command iff no unsolicited Data-Out follows"
        assert sum(w.desired for w in r2ts) == sol, "the R2Ts asked for exactly what was not sent unsolicited"
        assert max(w.dlen for w in [cmd, *douts]) <= mrdsl
        assert c.scsi_read(lba, length // BLOCK) == data, f"{length} B"
        moved(bytes_placed=length, bytes_copied=0)
    assert c.logout() == 0


def test_digests_on_every_pdu_type(path: str) -> None:
    """HeaderDigest=CRC32C and DataDigest=CRC32C: every PDU type the
    initiator sends is accepted, every type the target sends arrives with
    right digests (recv() checks both and raises DigestError otherwise)."""
    c = connect(path, Params(header_digest="CRC32C", data_digest="CRC32C", immediate_data=True, initial_r2t=True),
                cls=Recording)  # fmt: skip
    assert isinstance(c, Recording)
    assert (c.params.header_digest, c.params.data_digest) == ("CRC32C", "CRC32C")
    clear_unit_attention(c)
    moved = Moved(path)
    data = os.urandom(96 * KiB)  # 64 KiB immediate (FirstBurstLength), 32 KiB on an R2T
    c.scsi_write(12000, data)
    assert c.scsi_read(12000, len(data) // BLOCK) == data  # Data-In, status in the last one
    with pytest.raises(ScsiError) as e:
        c.scsi_read(40000, 8)  # past the 16 MiB LUN: CHECK CONDITION, sense in the data segment
    assert e.value.sense_key == 5, e.value  # ILLEGAL REQUEST
    assert c.nop(b"digest me" * 50).data == b"digest me" * 50
    assert c.text({"SendTargets": "All"}).get("TargetName") == PDU_IQN
    assert c.tmf(1, ref_itt=0x7FFF0000) in (0, 1)  # ABORT TASK of no task: complete, or "task does not exist"
    assert c.logout() == 0
    sent = {(Op(w.opcode), w.dlen > 0) for w in c.sent}
    for want in [(Op.SCSI_CMD, True), (Op.DATA_OUT, True), (Op.NOOP_OUT, True), (Op.TEXT_REQ, True),
                 (Op.TMF_REQ, False), (Op.LOGOUT_REQ, False)]:  # fmt: skip
        assert want in sent, f"{want[0].name}{' with data' if want[1] else ''} was not sent"
    assert all(w.hdigest and (w.ddigest or not w.dlen) for w in c.sent), "a PDU went out without its digests"
    got = {(Op(w.opcode), w.dlen > 0) for w in c.received}
    for want in [(Op.SCSI_RSP, True), (Op.DATA_IN, True), (Op.R2T, False), (Op.NOOP_IN, True), (Op.TEXT_RSP, True),
                 (Op.TMF_RSP, False), (Op.LOGOUT_RSP, False)]:  # fmt: skip
        assert want in got, f"no {want[0].name}{' with data' if want[1] else ''} was received"
    assert all(w.hdigest and (w.ddigest or not w.dlen) for w in c.received), "a PDU came in with digests unchecked"
    moved(hdigest_errors=0, ddigest_errors=0, drops=0, bytes_placed=len(data))


# -- the background session --------------------------------------------------------------


@pytest.mark.parametrize("ahs_len", [0, 200])
def test_malformed_extended_cdb_ahs_offloaded(dual_target: None, ahs_len: int) -> None:
    """A SCSI Command whose extended-CDB AHS has AHSLength 0 (or one that runs
    past TotalAHSLength) drops the connection; LIO never sees it. Offloaded
    path only: stock LIO's iscsit_setup_scsi_cmd copies AHSLength - 1 bytes
    of it without a check (for 0, SIZE_MAX bytes), which would oops the guest."""
    c = connect("offload")
    moved = Moved("offload")
    p = scsi_command(bytes([0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0]), itt=c.next_itt(), cmdsn=c.cmdsn,
                     expstatsn=c.expstatsn, read_len=BLOCK)  # fmt: skip
    p.ahs = ahs_len.to_bytes(2, "big") + bytes([1, 0]) + bytes(16)  # type 1: extended CDB
    c.send_raw(p.encode(False, False))
    check("offload", f"malformed_ahs_{ahs_len}", observe(c), {"dropped", "reject 0x04"})
    moved(drops=1)
    healthy("offload")


@pytest.mark.parametrize("ext", [0, 8])
def test_variable_length_cdb_longer_than_sent_offloaded(dual_target: None, ext: int) -> None:
    """A VARIABLE LENGTH CDB (0x7f; READ(32) here) whose additional CDB
    length claims 32 bytes, sent with only the BHS's 16 (or 8 more in an
    extended-CDB AHS), is refused and the connection dropped: LIO would
    read the CDB's claimed length past what the PDU carried. Offloaded
    path only: stock LIO's target_cmd_init_cdb copies it unchecked."""
    c = connect("offload")
    moved = Moved("offload")
    cdb = bytearray(16)
    cdb[0], cdb[7], cdb[8], cdb[9] = 0x7F, 32 - 8, 0x00, 0x09  # READ(32): service action 0x0009
    p = scsi_command(bytes(cdb), itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, read_len=BLOCK)
    if ext:
        p.ahs = (ext + 1).to_bytes(2, "big") + bytes([1, 0]) + bytes(ext)  # type 1: extended CDB
    c.send_raw(p.encode(False, False))
    check("offload", f"short_variable_length_cdb_{ext}", observe(c), {"dropped", "reject 0x04"})
    moved(drops=1)
    healthy("offload")


def test_text_continuation_of_a_scsi_task_offloaded(dual_target: None) -> None:
    """A Text PDU whose TTT is not 0xffffffff continues the task of its ITT:
    naming an outstanding WRITE (waiting for its Data-Out) it is refused and
    the connection dropped, the WRITE untouched. Offloaded path only: stock
    LIO's iscsit_setup_text_cmd takes the SCSI task over and frees it twice
    (Debian's 6.1), which would bring the guest down."""
    c = connect("offload", Params(immediate_data=False, initial_r2t=True))
    moved = Moved("offload")
    itt = c.next_itt()
    cdb = bytes([0x2A, 0, 0, 0, 0x60, 0, 0, 0, 8, 0])  # WRITE(10) of 8 blocks: an R2T follows
    c.send(scsi_command(cdb, itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, write_len=8 * BLOCK))
    c.cmdsn += 1
    r2t = c.recv()
    assert r2t.opcode == Op.R2T, f"expected an R2T, got {answer_class(r2t)}"
    text = text_request(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, keys={"SendTargets": "All"})
    text.ttt = 1
    c.send(text)
    check("offload", "text_continuing_scsi_task", observe(c), {"dropped", "reject 0x04"})
    moved(drops=1)
    healthy("offload")
