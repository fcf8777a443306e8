"""The PDU-level initiator's wire encoding against RFC 3720 B.4 and itself,
its digest checks on receive, and the malformed-PDU generator's bounds."""

from __future__ import annotations

import dataclasses
import io
import random
import socket
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from iscsi_initiator import chap
from iscsi_initiator.fuzz import FOREIGN_OPS, READ_ONLY_CDBS, Fuzzed, Limits, PduFuzzer
from iscsi_initiator.pdu import (
    F_WRITE,
    DigestError,
    Op,
    Pdu,
    decode,
    decode_keys,
    encode_keys,
    login_request,
    pad_len,
    scsi_command,
)
from iscsi_initiator.session import Connection, Params, ProtocolError, ScsiError

# RFC 3720 B.4: an iSCSI READ command PDU and its CRC32C
RFC_READ = bytes.fromhex(
    "01c00000" "00000000" "00000000" "00000000" "14000000" "00000400"
    "00000014" "00000018" "28000000" "00000000" "02000000" "00000000"
)  # fmt: skip


def reader(b: bytes):
    f = io.BytesIO(b)

    def rd(n: int) -> bytes:
        out = f.read(n)
        if len(out) != n:
            raise EOFError
        return out

    return rd


def test_rfc3720_b4_read_command_and_digest() -> None:
    cdb = struct.pack(">BBIBHB", 0x28, 0, 0, 0, 2, 0)
    p = scsi_command(cdb, itt=0x14000000, cmdsn=0x14, expstatsn=0x18, read_len=1024)
    p.flags = 0xC0  # F + R, untagged, as in the RFC's example
    wire = p.encode(hdigest=True)
    assert wire[:48] == RFC_READ
    assert wire[48:] == bytes.fromhex("563a96d9")


@pytest.mark.parametrize("hd", [False, True])
@pytest.mark.parametrize("dd", [False, True])
@pytest.mark.parametrize("dlen", [0, 1, 3, 4, 4097])
def test_roundtrip_with_ahs_padding_digests(hd: bool, dd: bool, dlen: int) -> None:
    p = Pdu()
    p.opcode = Op.DATA_OUT
    p.itt, p.ttt, p.datasn, p.buffer_offset = 7, 9, 3, 8192
    p.ahs = bytes(range(8))
    p.data = bytes(i % 251 for i in range(dlen))
    wire = p.encode(hd, dd)
    assert len(wire) == 48 + 8 + 4 * hd + (dlen + (-dlen % 4) + 4 * dd if dlen else 0)
    q = decode(reader(wire), hd, dd)
    assert (q.opcode, q.itt, q.ttt, q.datasn, q.buffer_offset) == (Op.DATA_OUT, 7, 9, 3, 8192)
    assert q.ahs == p.ahs and q.data == p.data


def test_corrupted_digests_are_detected() -> None:
    p = Pdu()
    p.opcode = Op.NOOP_OUT
    p.data = b"ping"
    wire = bytearray(p.encode(True, True))
    bad_h = bytes(wire[:48]) + bytes([wire[48] ^ 1]) + bytes(wire[49:])
    with pytest.raises(DigestError, match="header digest"):
        decode(reader(bad_h), True, True)
    wire[-1] ^= 0x80
    with pytest.raises(DigestError, match="data digest"):
        decode(reader(bytes(wire)), True, True)


def test_text_keys() -> None:
    data = encode_keys([("HeaderDigest", "CRC32C,None"), ("MaxRecvDataSegmentLength", "8192")])
    assert data == b"HeaderDigest=CRC32C,None\0MaxRecvDataSegmentLength=8192\0"
    assert decode_keys(data) == {"HeaderDigest": "CRC32C,None", "MaxRecvDataSegmentLength": "8192"}


def test_login_request_layout() -> None:
    p = login_request(isid=b"\x80\x12\x34\x56\x00\x01", tsih=0, itt=1, cid=0, cmdsn=1, expstatsn=0,
                      csg=1, nsg=3, transit=True, keys=[("A", "b")])  # fmt: skip
    w = p.encode()
    assert w[0] == 0x43  # immediate + Login
    assert w[1] == 0x80 | 1 << 2 | 3  # T, CSG=1, NSG=3
    assert w[8:14] == b"\x80\x12\x34\x56\x00\x01" and w[48:52] == b"A=b\0"


def test_chap_response_is_md5_of_id_secret_challenge() -> None:
    import hashlib

    r = chap.response(0x2A, b"secret", b"\x01\x02")
    assert r == hashlib.md5(b"\x2asecret\x01\x02").digest()
    assert chap.from_hex(chap.to_hex(r)) == r
    with pytest.raises(ValueError, match="not hex"):
        chap.from_hex("abcd")


# -- Connection.recv checks digests once they are negotiated -------------------


@pytest.fixture
def wired() -> Iterator[tuple[Connection, socket.socket]]:
    """A Connection to a local socket standing in for the target."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        c = Connection("127.0.0.1", srv.getsockname()[1], timeout=5)
        peer, _ = srv.accept()
        try:
            yield c, peer
        finally:
            peer.close()
            c.close()


def nop_in(data: bytes) -> Pdu:
    p = Pdu()
    p.opcode = Op.NOOP_IN
    p.flags = 0x80
    p.itt, p.ttt, p.statsn = 0x1001, 0xFFFFFFFF, 7
    p.data = data
    return p


@pytest.mark.parametrize(("where", "error"), [(48, "header digest"), (-1, "data digest"), (None, None)])
def test_recv_checks_both_digests_in_full_feature_phase(
    wired: tuple[Connection, socket.socket], where: int | None, error: str | None
) -> None:
    c, target = wired
    c.params = Params(header_digest="CRC32C", data_digest="CRC32C")
    c.full_feature = True
    wire = bytearray(nop_in(b"pong!").encode(True, True))
    if where is not None:
        wire[where] ^= 0x01
    target.sendall(wire)
    if error:
        with pytest.raises(DigestError, match=error):
            c.recv()
    else:
        assert c.recv().data == b"pong!"
        assert c.expstatsn == 8


def test_recv_expects_no_digests_before_full_feature_phase(wired: tuple[Connection, socket.socket]) -> None:
    c, target = wired
    c.params = Params(header_digest="CRC32C", data_digest="CRC32C")  # offered, not yet in effect
    target.sendall(nop_in(b"login-time").encode())
    assert c.recv().data == b"login-time"


def test_nop_answers_a_target_ping_that_comes_first(wired: tuple[Connection, socket.socket]) -> None:
    """A target's own NOP-In (ITT 0xffffffff, LIO sends one every 15 s)
    may arrive before the answer to our NOP-Out: it is answered, and the
    session goes on."""
    c, target = wired
    c.full_feature = True
    c.itt = 0x1000  # the next NOP-Out has ITT 0x1001, as nop_in() answers
    ping = nop_in(b"")
    ping.itt, ping.ttt = 0xFFFFFFFF, 0x42
    target.sendall(ping.encode() + nop_in(b"").encode())
    assert c.nop().itt == 0x1001
    target.settimeout(5)
    sent = b""
    while len(sent) < 96:  # two NOP-Outs without data
        sent += target.recv(96 - len(sent))
    rd = reader(sent)
    ours, reply = decode(rd), decode(rd)
    assert (ours.opcode, ours.itt) == (Op.NOOP_OUT, 0x1001)
    assert (reply.opcode, reply.itt, reply.ttt) == (Op.NOOP_OUT, 0xFFFFFFFF, 0x42), "the ping was not answered"


def test_recv_answering_pings_returns_the_next_other_pdu(wired: tuple[Connection, socket.socket]) -> None:
    """Two target pings before what the test waits for: each is answered
    with its TTT, and the PDU after them is returned."""
    c, target = wired
    c.full_feature = True
    pings = []
    for ttt in (0x42, 0x43):
        ping = nop_in(b"")
        ping.itt, ping.ttt = 0xFFFFFFFF, ttt
        pings.append(ping.encode())
    target.sendall(b"".join(pings) + nop_in(b"after").encode())
    got = c.recv_answering_pings()
    assert (got.itt, got.data) == (0x1001, b"after")
    target.settimeout(5)
    sent = b""
    while len(sent) < 96:
        sent += target.recv(96 - len(sent))
    rd = reader(sent)
    replies = [decode(rd), decode(rd)]
    assert [(r.opcode, r.itt, r.ttt) for r in replies] == [(Op.NOOP_OUT, 0xFFFFFFFF, t) for t in (0x42, 0x43)]


def test_logout_answers_a_target_ping_that_comes_first(wired: tuple[Connection, socket.socket]) -> None:
    """A session slow enough for LIO's NopInInterval gets a ping between
    its Logout Request and the response: answered, and the logout ends."""
    c, target = wired
    c.full_feature = True
    ping = nop_in(b"")
    ping.itt, ping.ttt = 0xFFFFFFFF, 0x44
    rsp = Pdu()
    rsp.opcode, rsp.flags, rsp.itt = Op.LOGOUT_RSP, 0x80, 0x1001
    c.itt = 0x1000
    target.sendall(ping.encode() + rsp.encode())
    assert c.logout() == 0
    target.settimeout(5)
    sent = b""
    while len(sent) < 96:  # the Logout Request, then the ping's NOP-Out
        sent += target.recv(96 - len(sent))
    rd = reader(sent)
    req, reply = decode(rd), decode(rd)
    assert req.opcode == Op.LOGOUT_REQ
    assert (reply.opcode, reply.itt, reply.ttt) == (Op.NOOP_OUT, 0xFFFFFFFF, 0x44), "the ping was not answered"


# -- a session of several connections (MC/S) ------------------------------------


# leading-only keys (RFC 7143 13): a connection joining a session sends none
SESSION_KEYS = {"SessionType", "ErrorRecoveryLevel", "InitialR2T", "ImmediateData", "MaxBurstLength",
                "FirstBurstLength", "MaxConnections", "DataPDUInOrder", "DataSequenceInOrder", "MaxOutstandingR2T",
                "DefaultTime2Wait", "DefaultTime2Retain"}  # fmt: skip


def no_keys(_: dict[str, str]) -> list[tuple[str, str]]:
    return []


def answer_login(
    target: socket.socket, tsih: int, expcmdsn: int, keys: Callable[[dict[str, str]], list[tuple[str, str]]] = no_keys
) -> list[Pdu]:
    """Take one connection's login to full feature phase, answering every
    request with ``keys(its keys)`` (none by default); the requests."""

    def rd(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            buf += target.recv(n - len(buf))
        return buf

    got: list[Pdu] = []
    while not got or (got[-1].flags & 3) != 3:
        req = decode(rd)
        got.append(req)
        rsp = Pdu()
        rsp.opcode = Op.LOGIN_RSP
        rsp.flags = req.flags & 0x8F | (req.flags & 0x0C)
        rsp.bhs[8:14] = req.bhs[8:14]
        rsp.set_u16(14, tsih)
        rsp.itt, rsp.statsn, rsp.expcmdsn, rsp.maxcmdsn = req.itt, 0, expcmdsn, expcmdsn + 31
        rsp.data = encode_keys(keys(decode_keys(req.data)))
        target.sendall(rsp.encode())
    return got


@pytest.mark.parametrize(("offered", "chosen", "hash_"), [("7,5", 7, "sha256"), ("8", 8, "sha3_256"),
                                                          ("6,5", 6, "sha1"), ("5", 5, "md5")])  # fmt: skip
def test_chap_hashes_with_the_algorithm_the_target_chose(offered: str, chosen: int, hash_: str) -> None:
    """CHAP_A offers the list given; the target's choice hashes the
    response (H(CHAP_I || secret || CHAP_C)), the mutual challenge is that
    hash's size and the target's mutual response is checked with it."""
    import hashlib

    challenge, seen = bytes(range(32)), {}

    def target_keys(req: dict[str, str]) -> list[tuple[str, str]]:
        seen.update(req)
        if "AuthMethod" in req:
            return [("AuthMethod", "CHAP")]
        if "CHAP_A" in req:
            return [("CHAP_A", str(chosen)), ("CHAP_I", "42"), ("CHAP_C", chap.to_hex(challenge))]
        if "CHAP_R" in req:
            ident = bytes([int(req["CHAP_I"])])
            mine = hashlib.new(hash_, ident + b"mutual-secret" + chap.from_hex(req["CHAP_C"])).digest()
            return [("CHAP_N", "tgt"), ("CHAP_R", chap.to_hex(mine))]
        return []

    with socket.create_server(("127.0.0.1", 0)) as srv:
        c = Connection("127.0.0.1", srv.getsockname()[1], timeout=5)
        t = srv.accept()[0]
        try:
            with ThreadPoolExecutor(1) as ex:
                done = ex.submit(answer_login, t, 1, 1, target_keys)
                c.login("iqn.i", "iqn.t", chap_user="u", chap_secret="secret", mutual_user="tgt",
                        mutual_secret="mutual-secret", chap_algs=offered)  # fmt: skip
                done.result()
        finally:
            t.close()
            c.close()
    assert seen["CHAP_A"] == offered
    assert chap.from_hex(seen["CHAP_R"]) == hashlib.new(hash_, b"\x2asecret" + challenge).digest()
    assert len(chap.from_hex(seen["CHAP_C"])) == hashlib.new(hash_).digest_size


def test_a_connection_joins_its_leads_session() -> None:
    """join() logs in with the lead's ISID and TSIH and its own CID,
    sending no leading-only key, and numbers commands from the same
    CmdSN as the lead."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
        lead, second = Connection("127.0.0.1", port, timeout=5), Connection("127.0.0.1", port, timeout=5)
        t1, t2 = srv.accept()[0], srv.accept()[0]
        try:
            with ThreadPoolExecutor(1) as ex:
                first = ex.submit(answer_login, t1, 0x1234, 5)
                lead.login("iqn.i", "iqn.t", Params(max_connections=2))
                keys = {k: v for req in first.result() for k, v in decode_keys(req.data).items()}
                assert keys["MaxConnections"] == "2"
                assert (lead.tsih, lead.cmdsn) == (0x1234, 5)
                joined = ex.submit(answer_login, t2, 0x1234, 5)
                second.join(lead, "iqn.i", "iqn.t", cid=1)
                reqs = joined.result()
            for req in reqs:
                assert (bytes(req.bhs[8:14]), req.u16(14), req.u16(20)) == (lead.isid, 0x1234, 1)
            sent = {k for req in reqs for k in decode_keys(req.data)}
            assert {"InitiatorName", "TargetName", "HeaderDigest"} <= sent and not sent & SESSION_KEYS, sent
            second.cmdsn += 3
            assert lead.cmdsn == 8
        finally:
            for s_ in (t1, t2, lead, second):
                s_.close()


@pytest.mark.parametrize("operational_only", [False, True])
def test_a_login_without_authentication_may_start_in_the_operational_stage(operational_only: bool) -> None:
    """By default a login goes through security negotiation (AuthMethod
    None) first; operational_only sends every key in one CSG 1 request
    to full feature phase, and neither sends a key twice."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        c = Connection("127.0.0.1", srv.getsockname()[1], timeout=5)
        t = srv.accept()[0]
        try:
            with ThreadPoolExecutor(1) as ex:
                done = ex.submit(answer_login, t, 7, 1)
                c.login("iqn.i", "iqn.t", operational_only=operational_only)
                reqs = done.result()
        finally:
            t.close()
            c.close()
    stages = [(r.flags >> 2 & 3, r.flags & 3) for r in reqs]
    assert stages == ([(1, 3)] if operational_only else [(0, 1), (1, 3)])
    keys = [k for r in reqs for k in decode_keys(r.data)]
    assert len(keys) == len(set(keys)), keys
    assert {"InitiatorName", "SessionType", "TargetName", "HeaderDigest", "MaxBurstLength"} <= set(keys)
    assert ("AuthMethod" in keys) is not operational_only
    assert c.full_feature and c.tsih == 7


# -- the malformed-PDU generator -------------------------------------------------


class FakeSession:
    def __init__(self, hd: bool, dd: bool) -> None:
        self.cmdsn, self.expstatsn, self.itt = 1, 1, 0x1000
        self.params = Params(header_digest="CRC32C" if hd else "None", data_digest="CRC32C" if dd else "None")

    def next_itt(self) -> int:
        self.itt += 1
        return self.itt


LIM = Limits(lun=0, scratch_lba=24576, scratch_blocks=256, max_blocks=16)


def fuzzed(seed: int, n: int, hd: bool = False, dd: bool = False, fatal_rate: float = 0.025) -> list[Fuzzed]:
    s, f = FakeSession(hd, dd), PduFuzzer(random.Random(seed), LIM, fatal_rate)
    return [f.next(s) for _ in range(n)]


def test_fuzzer_same_seed_same_pdus() -> None:
    assert [f.wire for f in fuzzed(7, 500)] == [f.wire for f in fuzzed(7, 500)]
    assert [f.wire for f in fuzzed(7, 500)] != [f.wire for f in fuzzed(8, 500)]


@pytest.mark.parametrize(("hd", "dd"), [(False, False), (True, True)])
def test_fuzzed_pdus_stay_within_limits(hd: bool, dd: bool) -> None:
    writing_reads = 0
    for f in fuzzed(11, 10000, hd, dd, fatal_rate=0.1):
        p = f.pdu
        assert p.lun == 0, f
        if p.opcode == Op.TMF_REQ:
            assert p.flags & 0x7F not in (6, 7), "a TARGET WARM/COLD RESET"
        if p.opcode != Op.SCSI_CMD:
            continue
        cdb = p.bhs[32:48]
        assert cdb[0] in READ_ONLY_CDBS or cdb[0] == 0x2A, f"CDB 0x{cdb[0]:02x}"
        # what can write (WRITE(10), a READ with the W flag) writes inside the scratch range
        if cdb[0] in (0x2A, 0x28) and (cdb[0] == 0x2A or p.flags & F_WRITE):
            lba, blocks = struct.unpack(">IxH", cdb[2:9])
            assert 1 <= blocks <= LIM.max_blocks and LIM.scratch_lba <= lba <= lba + blocks <= 24576 + 256
        if cdb[0] == 0x88 and p.flags & F_WRITE:
            lba, blocks = struct.unpack(">QI", cdb[2:14])
            assert 1 <= blocks <= LIM.max_blocks and LIM.scratch_lba <= lba <= lba + blocks <= 24576 + 256
            writing_reads += 1
        assert p.u32(20) <= LIM.max_edtl
        if p.ahs and p.ahs[2] == 1:  # extended CDB: AHSLength within its AHS
            assert 1 <= int.from_bytes(p.ahs[:2], "big") <= len(p.ahs) - 3
    assert writing_reads, "no READ(16) with the W flag among 10,000 PDUs: the check above saw nothing"


@pytest.mark.parametrize(("hd", "dd"), [(False, False), (True, False), (False, True), (True, True)])
def test_fuzzed_wire_is_what_the_header_says_unless_marked(hd: bool, dd: bool) -> None:
    """Every PDU decodes from its wire bytes with nothing left over, digests
    right, unless it is marked as breaking the stream or carries a wrong
    digest on purpose; payload bytes read as a header are a foreign opcode."""
    seen = Counter[str]()
    for f in fuzzed(3, 10000, hd, dd, fatal_rate=0.1):
        seen.update(f.mutations)
        rd = reader(f.wire)
        if f.breaks_stream:
            hdr = 48 + f.pdu.ahs_len + 4 * hd
            body = f.pdu.dlen + pad_len(f.pdu.dlen) + (4 * dd if f.pdu.dlen else 0)
            assert len(f.wire) != hdr + body, f
            continue
        if "bad_hdigest" in f.mutations or "bad_ddigest" in f.mutations:
            with pytest.raises(DigestError):
                decode(rd, hd, dd)
            continue
        q = decode(rd, hd, dd)
        with pytest.raises(EOFError):
            rd(1)
        assert (bytes(q.bhs), q.ahs, q.data) == (bytes(f.pdu.bhs), f.pdu.ahs, f.pdu.data)
        if f.kind not in ("text",) and q.data and not set(f.mutations) & {"login", "text_not_sendtargets"}:
            assert all(b & 0x3F >= 0x20 for b in q.data), "payload that would pass for an initiator opcode"
    assert seen["bad_hdigest"] == 0 if not hd else seen["bad_hdigest"] > 0
    assert seen["short_data"] > 0 and seen["long_data"] > 0


def test_fuzzer_covers_foreign_opcodes_and_fatal_rate() -> None:
    out = fuzzed(5, 20000)
    ops = {f.pdu.opcode for f in out}
    assert {Op.NOOP_OUT, Op.SCSI_CMD, Op.TMF_REQ, Op.TEXT_REQ, Op.DATA_OUT, Op.SNACK, Op.LOGOUT_REQ} <= ops
    assert {Op.LOGIN_REQ, Op.SCSI_RSP, Op.REJECT} & ops, "no Login or target opcode among 20,000 PDUs"
    assert len(ops & set(FOREIGN_OPS)) > 20
    fatal = sum(f.fatal for f in out)
    assert 0.015 * len(out) < fatal < 0.035 * len(out), fatal


def test_stock_limits_leave_out_data_on_commands_without_w() -> None:
    """Limits(data_without_w=False): no SCSI Command without the W bit
    carries a data segment (stock LIO runs such a command twice); the
    default limits do make some, for the offloaded path to refuse."""

    def data_without_w(limits: Limits) -> int:
        s, f = FakeSession(False, False), PduFuzzer(random.Random(13), limits)
        return sum(
            1
            for p in (f.next(s).pdu for _ in range(10000))
            if p.opcode == Op.SCSI_CMD and p.data and not p.flags & F_WRITE
        )

    assert data_without_w(LIM) > 0
    assert data_without_w(dataclasses.replace(LIM, data_without_w=False)) == 0


# -- a READ's PDUs as they came (ERL 1 and 2 cases compare them) ---------------


def data_in(itt: int, datasn: int, offset: int, data: bytes, status: bool = False) -> Pdu:
    p = Pdu()
    p.opcode = Op.DATA_IN
    p.flags = 0x81 if status else 0x00
    p.itt, p.ttt = itt, 0xFFFFFFFF
    p.datasn, p.buffer_offset = datasn, offset
    p.data = data
    return p


def test_send_read_and_its_pdus_up_to_the_status(wired: tuple[Connection, socket.socket]) -> None:
    """send_read() puts a READ(10) on the wire and returns its ITT;
    recv_task() returns every PDU of that task up to the one with its
    status, as they came."""
    c, target = wired
    c.full_feature = True
    itt = c.send_read(96, 2)
    target.settimeout(5)
    cmd = decode(reader(target.recv(48)))
    assert (cmd.opcode, cmd.itt, cmd.u32(20), bytes(cmd.bhs[32:42])) == (
        Op.SCSI_CMD, itt, 1024, bytes([0x28, 0, 0, 0, 0, 96, 0, 0, 2, 0]))  # fmt: skip
    sent = [data_in(itt, 0, 0, b"a" * 512), data_in(itt, 1, 512, b"b" * 512, status=True)]
    target.sendall(b"".join(p.encode() for p in sent))
    got = c.recv_task(itt)
    assert [(p.datasn, p.buffer_offset, p.data) for p in got] == [(0, 0, b"a" * 512), (1, 512, b"b" * 512)]


def test_recv_task_refuses_another_tasks_pdu(wired: tuple[Connection, socket.socket]) -> None:
    c, target = wired
    c.full_feature = True
    target.sendall(data_in(0x77, 0, 0, b"x" * 512).encode())
    with pytest.raises(ProtocolError, match="0x00000077"):
        c.recv_task(0x76)


def test_a_recovering_session_gets_snacks_as_requests() -> None:
    """At ErrorRecoveryLevel 1 and above a SNACK is a request (a kind of
    PDU, each SNACK type, no fatal mutation), at 0 only a fatal mutation."""

    def run(erl: int) -> list[Fuzzed]:
        s, f = FakeSession(False, False), PduFuzzer(random.Random(17), dataclasses.replace(LIM, erl=erl))
        return [f.next(s) for _ in range(10000)]

    at0, at1 = run(0), run(1)
    assert not [f for f in at0 if f.kind == "snack"]
    assert all(f.fatal for f in at0 if f.pdu.opcode == Op.SNACK and "snack" in f.mutations)
    snacks = [f for f in at1 if f.kind == "snack"]
    # those whose mutations leave the type and runs alone (not flags, field)
    plain = [f for f in snacks if set(f.mutations) <= {"itt", "cmdsn", "expstatsn", "dlen", "ahs"}]
    assert {f.pdu.flags & 0x0F for f in plain} == {0, 1, 2, 3}
    assert not [f for f in at1 if "snack" in f.mutations and f.fatal and f.mutations[-1] == "snack"]
    # Data/R2T runs begin near the task's start, unless a mutation moved them
    assert all(f.pdu.u32(40) <= 64 for f in plain if f.pdu.flags & 0x0F == 0)
    assert len([f for f in plain if f.pdu.flags & 0x0F == 0]) > 50


def test_scsi_error_reads_both_sense_formats() -> None:
    """Sense key, ASC/ASCQ and INFORMATION from fixed and descriptor sense
    data, as LIO sends a PI failure (ABORTED COMMAND, 10h/01h, the LBA)."""
    fixed = bytes([0xF0, 0, 0x0B, 0, 0, 0x01, 0x40, 10, 0, 0, 0, 0, 0x10, 0x01]) + bytes(4)
    e = ScsiError(2, 0, fixed)
    assert (e.sense_key, e.asc_ascq, e.information) == (0x0B, (0x10, 0x01), 320)
    assert ScsiError(2, 0, bytes([0x70]) + fixed[1:]).information is None  # VALID clear
    info = bytes([0, 0x0A, 0x80, 0]) + (320).to_bytes(8, "big")
    desc = bytes([0x72, 0x0B, 0x10, 0x03, 0, 0, 0, len(info)]) + info
    e = ScsiError(2, 0, desc)
    assert (e.sense_key, e.asc_ascq, e.information) == (0x0B, (0x10, 0x03), 320)
    assert ScsiError(2, 0, desc[:8]).information is None
    assert (ScsiError(2, 0, b"").sense_key, ScsiError(2, 0, b"").asc_ascq) == (-1, (-1, -1))


def test_register_and_move_parameters_follow_spc4() -> None:
    """REGISTER AND MOVE's list (SPC-4 6.16.4) and the iSCSI initiator
    port TransportID (7.6.4.6, format 01b) the VM tests hand LIO."""
    from iscsi_initiator import pr

    tid = pr.iscsi_port_id("iqn.x:a", bytes.fromhex("23d000000001"))
    body = b"iqn.x:a,i,0x23d000000001\0"
    assert tid[:4] == bytes([0x45, 0]) + (28).to_bytes(2, "big")  # iSCSI, format 01b; 25 bytes padded to 28
    assert tid[4:] == body + bytes(3) and len(tid) % 4 == 0
    p = pr.move_params(0xB0B, 0xA0A, 1, tid, unreg=True)
    assert struct.unpack(">QQxBHI", p[:24]) == (0xB0B, 0xA0A, 2, 1, len(tid)) and p[24:] == tid
    assert pr.out_cdb(pr.REGISTER_AND_MOVE, pr.WRITE_EXCLUSIVE, len(p))[:3] == bytes([0x5F, 7, 1])
