"""Seeded malformed PDUs on each path, beside a live offloaded session.

The target, the two paths and the background session (open-iscsi over the
offloaded path running fio write+verify passes on LUN 1) are those of
test_pdu_suite, made again for this module. On each path the test writes a
block range on LUN 0 from a clean session, then sends ``--fuzz-pdus`` PDUs
(make test: MAKE_TEST_PDUS; make fuzz-vm and make cxgb4-test: FUZZ_PDUS) from
iscsi_initiator.fuzz after login, in windows of WINDOW PDUs back to back,
each window closed by an immediate NOP-Out whose answer says the target
read everything before it. The generator is random.Random(seed): make test
uses DEFAULT_SEED, ``--fuzz-seed N`` another (make fuzz-vm: a new one each
run); the seed is printed and written to the kernel log, and sends the same
stream again, as far as the target answers the same. Every PDU sent is
written to pdu_fuzz_<path>.trace in the results directory (flushed before
each ping), so a target that falls over shows what it was reading. A
connection the target drops (or that stops answering for PING_TIMEOUT s) is
replaced by a new login; R2Ts for our writes are answered with the data
asked for; target pings are answered. At the end a new session must read
back the block range, soft0's ``drops`` counter may have moved at most once
per connection lost; the module fixture's teardown fails unless the
background session verified every fio pass. The offloaded path goes first.

make test runs the offloaded path with the mutations of framing (lengths,
AHS, opcodes no initiator sends, cut or overlong data, digests) of NOP,
SCSI, Text and Data-Out PDUs. Two LIO holes it found are refused by the
offloaded path before LIO sees them: a SCSI Command with a data segment but
no W bit (LIO runs the command twice) and malformed AHS segments
(iscsit_setup_scsi_cmd copies AHSLength - 1 bytes unchecked); so are Text
continuations naming a SCSI task (``--fuzz-semantic``; freed twice).

The stock path runs only with ``--lio-fuzz`` (make fuzz-vm), and with those
three kinds of PDU left out: on Debian's 6.1 it still falls over within
about 1,200 PDUs of framing (seed 12345: a WARN in iscsit_release_cmd from
target_complete_ok_work, a WRITE_PENDING command released while
iscsit_release_commands_from_conn still has it on its list). The mutations
of meaning (``--fuzz-semantic``: CmdSN, ITT, flags, fields, TMFs) reach that
race two more ways, which the offloaded path refuses before LIO sees them (a
SCSI Command outside the CmdSN window, a Data-Out past its task's transfer
length). They stay out of make test until they have passed on more seeds
than 777 and 1 (offloaded, Debian 6.1) and on 6.12.

make fuzz-vm runs on LIO's core patched by upstream/ (--patched-lio), and
there the stock path gets every kind of PDU the offloaded one does.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from iscsi_initiator.fuzz import FATAL, Fuzzed, Limits, PduFuzzer, is_write
from iscsi_initiator.pdu import RSVD_TAG, Op, Pdu, data_out, nop_out
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params

from . import c4sim, shares
from . import test_pdu_suite as suite
from .conftest import PDU_INITIATOR, PDU_IQN, clear_unit_attention, debug_kernel, soft0_counters, target_at_erl

background_fio = suite.background_fio


@pytest.fixture(scope="module", params=["soft0", "cxgb4sim"])
def dual_target(iscsid: None, module_ko: Path, kver: str, request: pytest.FixtureRequest) -> Iterator[None]:
    """The PDU suite's target (and module load), of this module's own: its
    offloaded path through soft0 (in make test on one kernel), then through
    the cxgb4 backend on the stand-in (make cxgb4-test)."""
    chip = None
    if request.param == "cxgb4sim":
        c4sim.cxgb4_test_only(request.config, "the fuzz")
        c4sim.skip_unless_here(request.config, "the PDU suite and fuzz", c4sim.SUITE_SHARE)
        chip = c4sim.chip_here(request.config)
    elif not shares.runs_here("fuzz-soft0", request.config.getoption("--every-share"), 1 - c4sim.SUITE_SHARE):
        # one kernel: the fuzz's subject is our PDU parsing, the same over either
        pytest.skip(f"the fuzz through soft0: dealt to the {shares.owner('fuzz-soft0', 1 - c4sim.SUITE_SHARE)} "
                    "kernel (--every-share runs it here)")  # fmt: skip
    with suite.suite_target(module_ko, kver, chip):
        yield


# The count the issue asks for, per path: make fuzz-vm and make cxgb4-test
# send it (--fuzz-pdus), each run of fuzz-vm with a new seed. make test
# replays the first MAKE_TEST_PDUS of DEFAULT_SEED's stream, every kind of
# PDU and of mutation among them, as a regression test: the whole count
# costs 268 s of the first series' batch (a third of its PDUs end their
# connection, each loss a new login under TCG), over make test's budget.
# The run is bounded by its steps, not by a budget for the whole: a ping
# unanswered for PING_TIMEOUT s ends that connection, a target that stops
# logging us in fails the test. How long a count takes depends on the
# machine, so a whole run is only cut at STUCK_AFTER_S, far above that; the
# offloaded path must send every PDU, stock's count is recorded (it
# reconnects more: it reads the data of a PDU it refused as the next PDUs,
# see test_pdu_suite.STOCK_DEVIATIONS).
FUZZ_PDUS = 10_000
MAKE_TEST_PDUS = 2_500
# in sessions of two connections each connection lost costs two logins
RECOVERY_FUZZ_PDUS = 4_000
# a debug kernel under TCG beside another lane's VM sends 4 PDUs/s
STUCK_AFTER_S = 1800.0 if debug_kernel() else 600.0
WINDOW = 16  # PDUs sent back to back before a ping
PING_TIMEOUT = 2.0  # s: a ping unanswered this long means the connection is stuck
DEFAULT_SEED = 12345  # make test's; --fuzz-seed N for another
DATA_LBA, DATA_BLOCKS = 20480, 64  # written before, read back after
LIMITS = Limits(lun=0, scratch_lba=24576, scratch_blocks=256, max_blocks=16,
                semantic=False)  # fuzz writes land only in the scratch LBAs  # fmt: skip
# Stock LIO: none of the PDUs known to crash it (see Limits: Text
# continuations, data segments on commands without the W bit); the
# offloaded path refuses them and gets them all.
STOCK_LIMITS = dataclasses.replace(LIMITS, text_continuation=False, data_without_w=False)
# LIO with upstream/'s patches (--patched-lio) refuses both (0003, 0005):
# the stock path gets every PDU the offloaded one does.
PATCHED_LIMITS = LIMITS
INITIATOR = f"{PDU_INITIATOR}-fuzz"
R2T_ANSWER_MAX = 64 * 1024  # R2Ts of larger (fuzzed) writes are left to the target's DataOut timer


class Lost(Exception):
    """The connection ended; the message says how."""


@dataclass
class FuzzRun:
    path: str
    seed: int
    count: int = FUZZ_PDUS  # PDUs to send
    sent: int = 0
    reconnects: int = 0
    lost: int = 0  # connections that ended other than by our logout
    login_s: float = 0.0  # time spent logging in: where a slow run's time goes
    login_retries: int = 0
    r2ts_answered: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    fatal: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    endings: Counter[str] = field(default_factory=Counter)

    def lines(self, elapsed: float) -> list[str]:
        def fmt(c: Counter[str]) -> str:
            return ", ".join(f"{k} {v}" for k, v in c.most_common()) or "none"

        return [
            f"{self.path}: seed {self.seed}: {self.sent} of {self.count} PDUs in {elapsed:.0f} s, "
            f"{self.reconnects} reconnects, {self.lost} connections lost, {self.r2ts_answered} R2Ts answered",
            f"{self.path}:   logins: {self.login_s:.0f} s for {self.reconnects + 1}, {self.login_retries} retried",
            f"{self.path}:   PDU kinds: {fmt(self.kinds)}",
            f"{self.path}:   fatal mutations: {fmt(self.fatal)}",
            f"{self.path}:   target answers: {fmt(self.answers)}",
            f"{self.path}:   connection endings: {fmt(self.endings)}",
        ]


def answer_class(rsp: Pdu) -> str:
    try:
        name = Op(rsp.opcode).name
    except ValueError:
        name = f"opcode 0x{rsp.opcode:02x}"
    if rsp.opcode == Op.REJECT:
        return f"REJECT 0x{rsp.u8(2):02x}"
    if rsp.opcode == Op.SCSI_RSP:
        return f"SCSI_RSP status 0x{rsp.u8(3):02x}"
    if rsp.opcode in (Op.TMF_RSP, Op.LOGOUT_RSP):
        return f"{name} 0x{rsp.u8(2):02x}"
    return name


class Fuzzing:
    def __init__(
        self, path: str, seed: int, semantic: bool, stock_limits: Limits = STOCK_LIMITS, erl: int = 0,
        count: int = FUZZ_PDUS,
    ) -> None:  # fmt: skip
        self.path = path
        self.erl = erl
        self.isid = b""  # the session's, at ERL 1 and above: each new one reinstates it
        self.run = FuzzRun(path, seed, count)
        limits = dataclasses.replace(LIMITS if path == "offload" else stock_limits, semantic=semantic, erl=erl)
        self.fuzzer = PduFuzzer(random.Random(seed), limits)
        # each login's digests from a stream of their own: the PDUs' stream
        # does not advance with logins
        self.digests = random.Random(seed ^ 0xD16E57)
        self.writes: dict[int, int] = {}  # ITT -> transfer length of the writes on this connection
        # every PDU sent, one line each (its header and AHS in hex), flushed
        # before each window's ping: when the target falls over, the last
        # lines are what it was reading
        results = os.environ.get("CXE_RESULTS")
        self.trace = (Path(results) / f"pdu_fuzz_{path}.trace").open("w") if results else None

    def login(self) -> list[Connection]:
        t0 = time.monotonic()
        try:
            return self._login()
        finally:
            self.run.login_s += time.monotonic() - t0

    def _login(self) -> list[Connection]:
        """A new session: one connection at ERL 0; at ERL 1 and above two
        (MC/S), the PDUs going to each a window at a time, each new session
        of the ISID of the one before, as an initiator reinstates its
        session: the target closes the one it replaces there and then
        (upstream/0010-*), rather than when its Time2Retain expires, which
        LIO's core does in the timer's softirq and sleeps there
        (docs/status.md)."""
        hd, dd = self.digests.choice([("None", "None"), ("CRC32C", "None"), ("None", "CRC32C"), ("CRC32C", "CRC32C")])
        params = Params(header_digest=hd, data_digest=dd)
        if self.erl:
            params = dataclasses.replace(params, erl=self.erl, max_connections=2, time2retain=20)
        err: Exception | None = None
        for attempt in range(5):
            self.run.login_retries += attempt > 0
            conns: list[Connection] = []
            try:
                conns.append(Connection(suite.ip_of(self.path), timeout=10))
                if self.erl and self.isid:
                    conns[0].isid = self.isid
                # one round trip: the fuzz logs in some 2,500 times
                conns[0].login(INITIATOR, PDU_IQN, params, operational_only=True)
                self.isid = conns[0].isid
                if self.erl:
                    conns.append(Connection(suite.ip_of(self.path), timeout=10))
                    conns[1].join(conns[0], INITIATOR, PDU_IQN, cid=1)
            except (LoginError, ConnectionClosed, OSError) as e:
                for c in conns:
                    c.close()
                err = e
                time.sleep(0.5)
                continue
            for c in conns:
                c.sock.settimeout(PING_TIMEOUT)
            self.writes.clear()
            return conns
        raise AssertionError(f"{self.path}: the target no longer logs us in: {err}")

    def send(self, c: Connection, wire: bytes) -> None:
        try:
            c.send_raw(wire)
        except (ConnectionClosed, OSError) as e:  # OSError: reset, or a send stuck for PING_TIMEOUT s
            raise Lost("dropped (seen on send)" if not isinstance(e, TimeoutError) else "stuck on send") from e

    def answer(self, c: Connection, rsp: Pdu) -> None:
        self.run.answers[answer_class(rsp)] += 1
        if rsp.opcode == Op.NOOP_IN and rsp.itt == RSVD_TAG:  # the target pings us
            self.send(c, nop_out(itt=RSVD_TAG, cmdsn=c.cmdsn, expstatsn=c.expstatsn, ttt=rsp.ttt).encode(
                c.params.hdigest, c.params.ddigest))  # fmt: skip
        elif rsp.opcode == Op.R2T and rsp.itt in self.writes and self.writes[rsp.itt] <= R2T_ANSWER_MAX:
            start, end = rsp.buffer_offset, rsp.buffer_offset + rsp.desired_length
            step = min(c.params.max_xmit_dlen, 8192)
            for sn, off in enumerate(range(start, end, step)):
                n = min(step, end - off)
                p = data_out(itt=rsp.itt, ttt=rsp.ttt, expstatsn=c.expstatsn, datasn=sn, offset=off, data=bytes(n),
                             final=off + n >= end, lun=LIMITS.lun)  # fmt: skip
                self.send(c, p.encode(c.params.hdigest, c.params.ddigest))
            self.run.r2ts_answered += 1

    def read_until(self, c: Connection, itt: int | None, quiet: float | None = None) -> Pdu | None:
        """Answers until the NOP-In for ``itt`` (returned), or until none
        came for ``quiet`` s (None returned)."""
        if quiet is not None:
            c.sock.settimeout(quiet)
        try:
            while True:
                try:
                    rsp = c.recv()  # raises DigestError if the target got a digest wrong: a failure
                except (ConnectionClosed, ConnectionError) as e:
                    raise Lost("dropped by the target") from e
                except TimeoutError as e:
                    if quiet is not None:
                        return None
                    raise Lost(f"no answer to a ping within {PING_TIMEOUT:.0f} s") from e
                if itt is not None and rsp.opcode == Op.NOOP_IN and rsp.itt == itt:
                    return rsp
                self.answer(c, rsp)
        finally:
            c.sock.settimeout(PING_TIMEOUT)

    def ping(self, c: Connection) -> None:
        if self.trace:
            self.trace.flush()
            os.fsync(self.trace.fileno())
        itt = c.next_itt()
        self.send(c, nop_out(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn).encode(c.params.hdigest, c.params.ddigest))
        pong = self.read_until(c, itt)
        assert pong is not None
        c.cmdsn = pong.expcmdsn  # what the target took; commands it refused left no gap

    def window(self, c: Connection) -> None:
        for _ in range(min(WINDOW, self.run.count - self.run.sent)):
            f: Fuzzed = self.fuzzer.next(c)
            if self.trace:
                hdr = f.wire[: 48 + len(f.pdu.ahs)]
                self.trace.write(f"{self.run.sent} conn {self.run.reconnects} {f.kind} {'+'.join(f.mutations)} "
                                 f"dlen {len(f.wire) - len(hdr)} {hdr.hex()}\n")  # fmt: skip
            self.send(c, f.wire)
            self.run.sent += 1
            self.run.kinds[f.kind] += 1
            self.run.fatal.update(m for m in f.mutations if m in FATAL)
            if is_write(f.pdu):
                self.writes[f.pdu.itt] = f.pdu.u32(20)
            if f.breaks_stream:
                # what we sent next would be read as this PDU's data: give
                # the target a moment to act on what it has, then start over
                self.read_until(c, None, quiet=0.3)
                raise Lost("closed by us after a data segment its header misstates")
        self.ping(c)

    def fuzz(self) -> FuzzRun:
        deadline = time.monotonic() + STUCK_AFTER_S
        conns = self.login()
        windows = 0
        while self.run.sent < self.run.count and time.monotonic() < deadline:
            try:
                self.window(conns[windows % len(conns)])
                windows += 1
            except Lost as e:
                if self.trace:
                    self.trace.write(f"-- {e}\n")
                self.run.lost += 1
                self.run.endings[str(e)] += 1
                for c in conns:
                    c.close()
                conns = self.login()
                self.run.reconnects += 1
        try:
            for c in reversed(conns):
                self.ping(c)
            conns[0].sock.settimeout(10)
            conns[0].logout()  # the session's, with every connection
            self.run.endings["logged out at the end"] += 1
        except (Lost, ConnectionClosed, OSError) as e:
            self.run.lost += 1
            self.run.endings[f"at the end: {e}"] += 1
        for c in conns:
            c.close()
        if self.trace:
            self.trace.close()
        return self.run


# bounded by STUCK_AFTER_S, not by the suite's default 300 s: the count
# takes longer on a loaded host (274 s and over 300 s on 6.1 in make test,
# 2026-12-01), which is no fault of the code under test
@pytest.mark.timeout(int(STUCK_AFTER_S) + 300)
@pytest.mark.parametrize("path", ["offload", "stock"])
def test_seeded_malformed_pdus(
    path: str, request: pytest.FixtureRequest, background_fio: suite.BackgroundFio, lio_core: str
) -> None:
    seeded_malformed_pdus(path, request, background_fio, lio_core, erl=0)


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("path", ["offload", "stock"])
def test_seeded_malformed_pdus_in_recovering_sessions(
    path: str, request: pytest.FixtureRequest, background_fio: suite.BackgroundFio, lio_core: str
) -> None:
    """The fuzz in sessions of two connections at ErrorRecoveryLevel
    --fuzz-erl (make fuzz-vm: 2, on LIO's patched core): SNACKs of every
    type for recent tasks among the PDUs (TASK REASSIGNs too, with the
    TMFs of --fuzz-semantic), the windows alternating between the
    connections."""
    erl = request.config.getoption("--fuzz-erl")
    if not erl:
        pytest.skip("the recovery-level fuzz runs with --fuzz-erl N (make fuzz-vm: 2, on LIO's patched core; "
                    "the kernels' own oopses in ERL 2 sessions, upstream/0007-*)")  # fmt: skip
    with target_at_erl(PDU_IQN, erl, MaxConnections="2"):
        seeded_malformed_pdus(path, request, background_fio, lio_core, erl=erl)


def seeded_malformed_pdus(
    path: str, request: pytest.FixtureRequest, background_fio: suite.BackgroundFio, lio_core: str, erl: int
) -> None:
    if path == "stock" and suite.through_chip("offload"):
        pytest.skip("the stock side runs beside soft0's path")
    background_fio.current = request.node.nodeid
    seed = request.config.getoption("--fuzz-seed")
    seed = DEFAULT_SEED if seed is None else seed
    semantic = bool(request.config.getoption("--fuzz-semantic"))
    asked: int | None = request.config.getoption("--fuzz-pdus")
    count = RECOVERY_FUZZ_PDUS if erl else (asked or MAKE_TEST_PDUS)
    Path("/dev/kmsg").write_text(f"cxe-test: pdu fuzz on {path}: seed {seed}, {count} PDUs\n")
    print(f"{path}: seed {seed} (--fuzz-seed {seed} replays it)")
    print(f"{path}: mutations of " + ("framing and meaning" if semantic else "framing (--fuzz-semantic adds meaning)"))
    if erl:
        print(f"{path}: sessions of two connections at ErrorRecoveryLevel {erl}: SNACKs are requests")
    stock_limits = PATCHED_LIMITS if lio_core == "patched" else STOCK_LIMITS
    if path == "stock" and lio_core == "patched":
        print("stock: LIO's core with upstream/'s patches: every kind of PDU the offloaded path gets")
    elif path == "stock":
        print("stock: no Text continuations, no data segments on commands without the W bit: both crash stock LIO")
    c = suite.connect(path)
    data = os.urandom(DATA_BLOCKS * suite.BLOCK)
    suite.write_retrying_ua(c, DATA_LBA, data)
    c.logout()
    drops = soft0_counters()["drops"]

    t0 = time.monotonic()
    run = Fuzzing(path, seed, semantic, stock_limits, erl, count).fuzz()
    elapsed = time.monotonic() - t0
    for line in run.lines(elapsed):
        suite.record(line, "pdu_fuzz.txt")

    # the target still works, and the data written before is intact
    c = suite.connect(path)
    clear_unit_attention(c)  # a fuzzed LOGICAL UNIT RESET may have left one
    assert c.scsi_read(DATA_LBA, DATA_BLOCKS) == data, "data written before the fuzz changed"
    assert c.logout() == 0
    if path == "offload":
        moved = soft0_counters()["drops"] - drops
        # through the cxgb4 stand-in soft0 counts none: the chip's connections are its adapter's
        assert moved <= run.lost, f"soft0 counted {moved} drops for {run.lost} connections lost"
        assert run.sent == count, (
            f"stuck: {run.sent} of {count} PDUs in {elapsed:.0f} s ({run.sent / elapsed:.0f} PDUs/s, "
            f"{run.reconnects} reconnects, {run.login_s:.0f} s of logins)"
        )
