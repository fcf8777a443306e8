"""Seeded malformed PDUs for robustness tests.

``PduFuzzer(random.Random(seed)).next(session)`` returns one PDU an initiator
in full feature phase could send if it were broken: a well-formed PDU of the
session's current state (NOP-Out, SCSI READ/WRITE/other CDBs, Text, TMF,
Data-Out) with one or two mutations (flipped flag bits, random ITT, TTT,
CmdSN, ExpStatSN or opcode-specific bytes, another DataSegmentLength with a
payload to match, an AHS), and with probability ``fatal_rate`` one mutation
that RFC 7143 answers by closing the connection at ERL 0: an opcode no
initiator sends (target opcodes, Login, unassigned ones), SNACK, Logout, a
data segment shorter or longer than its header says, a wrong header or data
digest, a TTT naming nothing. The same seed gives the same PDUs for the same
session state, so a run can be replayed.

What the PDUs may do to the target is bounded by ``Limits``, so that a
robustness test only disturbs what it owns:

- every LUN field is ``Limits.lun`` (another LUN may carry someone else's I/O);
- SCSI commands are read-only CDBs, or WRITE(10) inside the scratch range
  (and so is a READ with the W flag set: LIO would write its blocks);
- no TMF TARGET WARM/COLD RESET (they would reset every session);
- Expected Data Transfer Length at most ``Limits.max_edtl``: stock LIO sizes an
  iovec array by it before it looks at the CDB (iscsit_allocate_iovecs), and
  above about 1 GiB that kmalloc trips the page allocator's WARN;
- an extended-CDB AHS (type 1) on a SCSI Command has an AHSLength that fits
  its AHS: LIO copies AHSLength - 1 bytes from it unchecked
  (iscsit_setup_scsi_cmd), so 0 means a memcpy of (size_t)-1 and a longer
  one reads past the header buffer.

Payload bytes all have an opcode no initiator sends in their low six bits:
when a target reads part of a data segment as a header (because it refused
the PDU and did not consume its data), it meets a foreign opcode and drops
the connection instead of running our data as commands.

At ``Limits.erl`` 1 and above the session recovers instead of ending: a
SNACK is no protocol error there but a request the target answers, so
SNACKs become a kind of PDU of their own (Data/R2T, Status, DataACK and
R-Data SNACKs for recent tasks and StatSNs) and leave the fatal mutations,
and TMFs include TASK REASSIGN of recent tasks.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Protocol

from iscsi_initiator.pdu import (
    BHS_LEN,
    F_READ,
    F_WRITE,
    RSVD_TAG,
    Op,
    Pdu,
    data_out,
    digest,
    login_request,
    logout_request,
    nop_out,
    scsi_command,
    snack_request,
    text_request,
    tmf_request,
)
from iscsi_initiator.session import Params

BLOCK = 512
INITIATOR_OPS = frozenset({Op.NOOP_OUT, Op.SCSI_CMD, Op.TMF_REQ, Op.TEXT_REQ, Op.DATA_OUT, Op.LOGOUT_REQ, Op.SNACK})
# every other opcode: Login (not in full feature phase), the target's, unassigned
FOREIGN_OPS = tuple(op for op in range(64) if op not in INITIATOR_OPS)
# CDBs that read or do nothing (0xC5: vendor specific, unsupported by LIO)
READ_ONLY_CDBS = (0x00, 0x03, 0x12, 0x1A, 0x25, 0x28, 0x4D, 0x5A, 0x88, 0x9E, 0xA0, 0xA3, 0xC5)
WRITE10, READ10, READ16 = 0x2A, 0x28, 0x88
TMF_TARGET_RESETS = frozenset({6, 7})
AHS_TYPE_ECDB = 1
# bytes whose low six bits (an opcode, if a target reads them as a header) are 0x20..0x3f
_DESYNC = bytes((b & 0xC0) | 0x20 | (b & 0x1F) for b in range(256))

KINDS: dict[str, float] = {"nop": 18, "read": 16, "write": 16, "cdb": 10, "text": 6, "tmf": 6, "data_out": 14}
SNACK_WEIGHT = 8  # the "snack" kind's, at ERL 1 and above
MUTATIONS: dict[str, float] = {"flags": 26, "itt": 12, "cmdsn": 10, "expstatsn": 6, "field": 20, "dlen": 10, "ahs": 4}
FATAL: dict[str, float] = {
    "foreign_opcode": 4, "login": 1, "snack": 2, "logout": 1, "short_data": 2, "long_data": 1,
    "bad_hdigest": 2, "bad_ddigest": 2, "random_ttt": 3, "text_not_sendtargets": 1,
}  # fmt: skip
# the mutations of framing alone (Limits.semantic False)
FRAMING = frozenset({"dlen", "ahs", "foreign_opcode", "short_data", "long_data", "bad_hdigest", "bad_ddigest"})


class Session(Protocol):
    """What the fuzzer reads from (and advances in) a logged-in session."""

    cmdsn: int
    expstatsn: int
    params: Params

    def next_itt(self) -> int: ...


@dataclass(frozen=True)
class Limits:
    lun: int = 0
    scratch_lba: int = 0  # WRITE(10) only to [scratch_lba, scratch_lba + scratch_blocks)
    scratch_blocks: int = 256
    max_blocks: int = 16  # blocks per READ/WRITE
    max_edtl: int = 1 << 24
    max_data: int = 16384  # longest data segment the ``dlen`` mutation makes
    # A Text PDU whose TTT is not 0xffffffff continues the task of its ITT.
    # Stock LIO takes over whatever task has that ITT, a SCSI command too
    # (iscsit_setup_text_cmd rewrites its opcode, state and data direction),
    # and frees it twice: a use-after-free in Debian's 6.1. False keeps
    # every Text PDU's TTT reserved, so a run against stock LIO can go on.
    text_continuation: bool = True
    # A data segment on a SCSI Command without the W bit (immediate data on a
    # READ). Stock LIO runs the command, then runs it again when it has taken
    # the "immediate data" in: a use-after-free (Debian's 6.1: a NULL
    # dereference in target_alua_state_check). False strips the data segment
    # of such a command, so a run against stock LIO can go on.
    data_without_w: bool = True
    # Mutations of a PDU's meaning (flags, ITT, CmdSN, ExpStatSN, header fields,
    # TTTs, Login/Logout/SNACK in full feature phase) besides those of its
    # framing (lengths, AHS, opcodes no initiator sends, cut or overlong data,
    # digests) and Task Management PDUs. LIO's core handles the meaning the
    # same way on stock and offloaded paths, and runs with these bring Debian's
    # 6.1 down on both (a command freed with its timer armed); False leaves
    # framing only, of NOP, SCSI, Text and Data-Out PDUs.
    semantic: bool = True
    # The session's ErrorRecoveryLevel: at 1 and above SNACKs are requests,
    # not protocol errors (see the module's docstring).
    erl: int = 0


@dataclass(frozen=True)
class Fuzzed:
    wire: bytes
    pdu: Pdu  # the header as sent (and its AHS and data)
    kind: str
    mutations: tuple[str, ...]
    breaks_stream: bool  # the header's DataSegmentLength is not what follows it on the wire

    @property
    def fatal(self) -> bool:
        return any(m in FATAL for m in self.mutations)


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


class PduFuzzer:
    def __init__(self, rng: random.Random, limits: Limits | None = None, fatal_rate: float = 0.025) -> None:
        self.rng = rng
        self.limits = limits or Limits()
        self.fatal_rate = fatal_rate
        self.recent: list[int] = []  # ITTs of the last SCSI commands made
        keep = FRAMING if not self.limits.semantic else set(MUTATIONS) | set(FATAL)
        self.mutations = {k: w for k, w in MUTATIONS.items() if k in keep}
        recovers = self.limits.erl >= 1
        self.fatal = {k: w for k, w in FATAL.items() if k in keep and not (recovers and k == "snack")}
        # task management is meaning too: LUN RESET and the task-set TMFs amid
        # the drops and reconnects of a fuzz run also bring LIO's core down
        self.kinds = {k: w for k, w in KINDS.items() if self.limits.semantic or k != "tmf"}
        if recovers:
            self.kinds["snack"] = SNACK_WEIGHT

    # -- pieces -------------------------------------------------------------
    def payload(self, n: int) -> bytes:
        return self.rng.randbytes(n).translate(_DESYNC)

    def _u32(self) -> int:
        return self.rng.getrandbits(32)

    def _scratch(self, blocks: int) -> int:
        lim = self.limits
        return lim.scratch_lba + self.rng.randrange(lim.scratch_blocks - blocks + 1)

    def _remember(self, itt: int) -> None:
        self.recent = [*self.recent[-15:], itt]

    # -- well-formed starting points ----------------------------------------
    def _base(self, kind: str, s: Session) -> Pdu:
        rng, lim = self.rng, self.limits
        if kind == "nop":
            return nop_out(itt=s.next_itt(), cmdsn=s.cmdsn, expstatsn=s.expstatsn,
                           data=self.payload(rng.choice([0, 0, 1, 7, 48, 512])))  # fmt: skip
        if kind == "text":
            keys = {"SendTargets": rng.choice(["All", "", "iqn.2026-11.org.example:none"])}
            return text_request(itt=s.next_itt(), cmdsn=s.cmdsn, expstatsn=s.expstatsn, keys=keys)
        if kind == "tmf":
            function = rng.choice([1, 1, 2, 3, 4, 5, 8, 9, 14])  # 9 and 14: unassigned
            ref = rng.choice(self.recent) if self.recent and rng.random() < 0.7 else self._u32()
            return tmf_request(function=function, itt=s.next_itt(), cmdsn=s.cmdsn, expstatsn=s.expstatsn,
                               lun=lim.lun, ref_itt=ref, ref_cmdsn=s.cmdsn - 1)  # fmt: skip
        if kind == "snack":
            return self._snack(s)
        if kind == "data_out":
            itt = rng.choice(self.recent) if self.recent and rng.random() < 0.6 else self._u32()
            data = self.payload(rng.choice([0, 1, 512, 4096, 8192]))
            return data_out(itt=itt, ttt=RSVD_TAG, expstatsn=s.expstatsn, datasn=rng.choice([0, 0, 1, 2]),
                            offset=rng.choice([0, 0, 512, 4096]), data=data, final=rng.random() < 0.7,
                            lun=lim.lun)  # fmt: skip
        itt = s.next_itt()
        self._remember(itt)
        blocks = rng.randint(1, lim.max_blocks)
        if kind == "read":
            cdb = struct.pack(">BBIBHB", READ10, 0, self._scratch(blocks), 0, blocks, 0)
            p = scsi_command(cdb, itt=itt, cmdsn=s.cmdsn, expstatsn=s.expstatsn, lun=lim.lun, read_len=blocks * BLOCK)
        elif kind == "write":
            cdb = struct.pack(">BBIBHB", WRITE10, 0, self._scratch(blocks), 0, blocks, 0)
            data = self.payload(blocks * BLOCK) if s.params.immediate_data else b""
            p = scsi_command(cdb, itt=itt, cmdsn=s.cmdsn, expstatsn=s.expstatsn, lun=lim.lun,
                             write_len=blocks * BLOCK, data=data)  # fmt: skip
        else:  # "cdb": a read-only CDB, its other bytes random
            cdb = bytes([rng.choice(READ_ONLY_CDBS)]) + rng.randbytes(rng.choice([5, 9, 15]))
            p = scsi_command(cdb, itt=itt, cmdsn=s.cmdsn, expstatsn=s.expstatsn, lun=lim.lun,
                             read_len=rng.choice([0, 8, 36, 96, 512, 4096]))  # fmt: skip
        s.cmdsn += 1  # a non-immediate command takes a CmdSN
        return p

    def _snack(self, s: Session) -> Pdu:
        """A SNACK as a recovering initiator sends one (RFC 7143 11.16):
        Data/R2T or R-Data for runs near the start of a recent task,
        Status for StatSNs just before ExpStatSN (some acknowledged, some
        not), DataACK with a TTT of its own making; now and then a run
        past anything sent."""
        rng = self.rng
        kind = rng.choice([0, 0, 0, 1, 1, 2, 3])
        itt, ttt = RSVD_TAG, RSVD_TAG
        if kind in (0, 3):  # Data/R2T, R-Data: a task's DataSNs or R2TSNs
            itt = rng.choice(self.recent) if self.recent else self._u32()
            begrun, runlength = rng.choice([0, 0, 1, 2, 3, 64]), rng.choice([0, 0, 1, 2])
        elif kind == 1:  # Status: StatSNs
            begrun, runlength = (s.expstatsn - rng.choice([1, 2, 3, 8])) & 0xFFFFFFFF, rng.choice([0, 1, 2])
        else:  # DataACK: ITT reserved, the TTT of the Data-In that asked for it
            ttt = rng.choice([self._u32(), 0, 1])
            begrun, runlength = rng.choice([0, 1, 2]), 0
        return snack_request(kind=kind, itt=itt, ttt=ttt, expstatsn=s.expstatsn, begrun=begrun, runlength=runlength,
                             lun=self.limits.lun)  # fmt: skip

    # -- what makes it malformed --------------------------------------------
    def _mutate(self, m: str, p: Pdu, s: Session) -> str:
        rng = self.rng
        if m == "flags":
            # byte 0: the I bit and the reserved bit (not the opcode); bytes 1-3: any
            i = rng.randrange(4)
            p.bhs[i] ^= 1 << (rng.choice([6, 7]) if i == 0 else rng.randrange(8))
        elif m == "itt":
            p.itt = rng.choice([self._u32(), self._u32(), RSVD_TAG, *self.recent[-2:]])
        elif m == "cmdsn":
            p.cmdsn = (s.cmdsn + rng.choice([-2, -1, 1, 2, 63, 64, 65, 1 << 16, 1 << 31])) & 0xFFFFFFFF
        elif m == "expstatsn":
            p.expstatsn = rng.choice([self._u32(), s.expstatsn + 1000, s.expstatsn - 1])
        elif m == "field":
            off = rng.randrange(20, BHS_LEN)
            n = min(rng.randint(1, 4), BHS_LEN - off)
            p.bhs[off : off + n] = rng.randbytes(n)
        elif m == "dlen":
            p.data = self.payload(rng.choice([0, 1, 3, 4, 511, 4096, self.limits.max_data]))
        elif m == "ahs":
            words = rng.choice([1, 2, 3, 8, 32, 255])
            ahs = bytearray(rng.randbytes(4 * words))
            if rng.random() < 0.5:  # an extended CDB
                struct.pack_into(">HB", ahs, 0, rng.randint(1, 4 * words - 3), AHS_TYPE_ECDB)
            p.ahs = bytes(ahs)
        elif m == "foreign_opcode":
            p.opcode = rng.choice(FOREIGN_OPS)
        elif m == "login":
            q = login_request(isid=rng.randbytes(6), tsih=rng.getrandbits(16), itt=p.itt, cid=0, cmdsn=s.cmdsn,
                              expstatsn=s.expstatsn, csg=1, nsg=3, transit=True,
                              keys=[("InitiatorName", "iqn.2026-11.org.example:in-full-feature")])  # fmt: skip
            p.bhs, p.ahs, p.data = q.bhs, b"", q.data
        elif m == "snack":
            q = snack_request(kind=rng.randrange(4), itt=rng.choice([p.itt, RSVD_TAG]), expstatsn=s.expstatsn,
                              begrun=rng.randrange(4), runlength=rng.randrange(4))  # fmt: skip
            p.bhs, p.data = q.bhs, b""
        elif m == "logout":
            q = logout_request(itt=p.itt, cmdsn=s.cmdsn, expstatsn=s.expstatsn, reason=rng.choice([0, 1, 2, 3, 0x7F]))
            p.bhs, p.ahs, p.data = q.bhs, b"", b""
        elif m == "random_ttt":
            if p.opcode in (Op.SCSI_CMD, Op.TMF_REQ):  # byte 20 is not a TTT there
                p.opcode = rng.choice([Op.NOOP_OUT, Op.TEXT_REQ, Op.DATA_OUT])
            p.ttt = rng.choice([self._u32(), 0, 1])
        elif m == "text_not_sendtargets":
            q = text_request(itt=p.itt, cmdsn=s.cmdsn, expstatsn=s.expstatsn,
                             keys={"X-cxe-fuzz": str(self._u32()), "MaxRecvDataSegmentLength": "512"})  # fmt: skip
            p.bhs, p.ahs, p.data = q.bhs, b"", q.data
        elif m in ("short_data", "long_data", "bad_hdigest", "bad_ddigest"):
            pass  # applied on the wire by next()
        else:
            raise ValueError(f"unknown mutation {m!r}")
        return m

    # -- within the limits --------------------------------------------------
    def _limit(self, p: Pdu) -> None:
        lim, op = self.limits, p.opcode
        p.lun = lim.lun << 48
        if op == Op.TEXT_REQ and not lim.text_continuation:
            p.ttt = RSVD_TAG
        if op == Op.TMF_REQ and p.flags & 0x7F in TMF_TARGET_RESETS:
            p.flags = (p.flags & 0x80) | 2  # ABORT TASK SET instead
        if op != Op.SCSI_CMD:
            return
        if p.data and not p.flags & F_WRITE and not lim.data_without_w:
            p.data = b""
        if p.u32(20) > lim.max_edtl:
            p.set_u32(20, self.rng.randrange(lim.max_edtl + 1))
        cdb = p.bhs[32:48]
        if cdb[0] not in READ_ONLY_CDBS and cdb[0] != WRITE10:
            p.bhs[32] = 0xC5
        elif cdb[0] == WRITE10 or (cdb[0] in (READ10, READ16) and p.flags & F_WRITE):
            # LIO moves data by the W flag, not by the CDB: a READ with W set writes its LBAs
            blocks = min(max(int.from_bytes(cdb[7:9], "big"), 1), lim.max_blocks)
            if cdb[0] == READ16:
                struct.pack_into(">QI", p.bhs, 34, self._scratch(blocks), blocks)
            else:
                struct.pack_into(">IBH", p.bhs, 34, self._scratch(blocks), cdb[6], blocks)
        if len(p.ahs) >= 4 and p.ahs[2] == AHS_TYPE_ECDB:
            ahs = bytearray(p.ahs)
            length = int.from_bytes(ahs[:2], "big")
            if not 1 <= length <= len(ahs) - 3:
                struct.pack_into(">H", ahs, 0, 1 + length % (len(ahs) - 3))
            p.ahs = bytes(ahs)

    def next(self, s: Session) -> Fuzzed:
        rng = self.rng
        kind = _pick(rng, self.kinds)
        p = self._base(kind, s)
        muts = [self._mutate(_pick(rng, self.mutations), p, s) for _ in range(rng.choice([1, 1, 2]))]
        hd, dd = s.params.hdigest, s.params.ddigest
        if rng.random() < self.fatal_rate:
            fatal = _pick(rng, self.fatal)
            if (fatal == "bad_hdigest" and not hd) or (fatal == "bad_ddigest" and not (dd and p.data)):
                fatal = "foreign_opcode"  # the digest is not there to get wrong
            muts.append(self._mutate(fatal, p, s))
        self._limit(p)
        p.bhs[4] = len(p.ahs) // 4
        p.dlen = len(p.data)
        p.raw_lengths = True
        wire = bytearray(p.encode(hd, dd))
        breaks = False
        hdr_end = BHS_LEN + len(p.ahs)
        if "short_data" in muts:  # the header promises more than follows
            # (at least 4 more: 1 to 3 could hide in the padding)
            p.dlen = len(p.data) + rng.choice([4, 4096, 1 << 20, (1 << 24) - 1 - len(p.data)])
            wire[5:8] = p.bhs[5:8]
            if hd:
                wire[hdr_end : hdr_end + 4] = digest(bytes(p.bhs) + p.ahs)
            breaks = True
        elif "long_data" in muts:  # what follows the data segment is more of it
            wire += self.payload(rng.choice([1, 4, 47, 48, 100]))
            breaks = True
        elif "bad_hdigest" in muts:
            wire[hdr_end + rng.randrange(4)] ^= 1 << rng.randrange(8)
        elif "bad_ddigest" in muts:
            wire[-1 - rng.randrange(4)] ^= 1 << rng.randrange(8)
        return Fuzzed(bytes(wire), p, kind, tuple(muts), breaks)


def is_write(p: Pdu) -> bool:
    return p.opcode == Op.SCSI_CMD and bool(p.flags & F_WRITE) and not p.flags & F_READ
