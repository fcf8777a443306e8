"""Sessions of several connections (MC/S, RFC 7143 section 4) on offloaded
portals, compared with stock LIO in the same boot: the PDU-level initiator
logs a session in with MaxConnections 2 and joins a second connection to
it, through the offloaded portal or the stock one. Commands go out on both
connections in one CmdSN order, each write read back through the other
connection; one connection logs out alone and the session goes on through
the other. Offloaded sessions must behave as stock ones do, also when
two adapters carry one session's connections.

A session does not mix transports: LIO sizes a session's command tags by
the transport of its first connection, so an offloaded connection asking
to join a session of stock ones is refused ("can't include in session").
The other way round, a stock connection joining an offloaded session, is
LIO's own login: the kernels' LIO takes it (and the commands of the two
overlap), LIO patched by upstream/0009 refuses it; it runs on the patched
core only (--patched-lio)."""

from __future__ import annotations

import os
import re
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator.pdu import Op, data_out, scsi_command
from iscsi_initiator.session import Connection, LoginError, Params
from testbed import topo

from .conftest import (
    CFS,
    PDU_INITIATOR,
    adapter_of,
    clear_unit_attention,
    connection_lines,
    dmesg_since,
    kmsg_mark,
    offloaded_target,
)
from .test_upstream_patches import reproducer

IQN = "iqn.2026-11.org.cxgbit-ext:mcs"
OFF, STOCK = topo.LINKS
LBAS = 16  # 8 KiB per command
ROUNDS = 8
# where each connection logs in: the lead's link, the joining one's
LAYOUTS = {"stock": (STOCK, STOCK), "offloaded": (OFF, OFF)}
# and a session over two adapters: the lead on soft0 (tgt0), the second
# on soft1 (tgt1); each layout's adapters, lead first (None: stock)
SESSIONS = {**LAYOUTS, "two adapters": (OFF, STOCK)}
ADAPTERS = {"stock": [None, None], "offloaded": ["soft0", "soft0"], "two adapters": ["soft0", "soft1"]}


TPG = Path("/sys/kernel/config/target/iscsi") / IQN / "tpgt_1"


@pytest.fixture(scope="module")
def mcs_target(module_ko: Path) -> Iterator[None]:
    """The target with up to 4 connections a session (LIO's default is 1),
    and an ACL for the initiator, whose info file lists its session's
    connections."""
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=16 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True, acls=(PDU_INITIATOR,))  # fmt: skip
    with offloaded_target(module_ko, t):
        (TPG / "param/MaxConnections").write_text("4")
        yield


def session_cids() -> set[int]:
    """The CIDs of the initiator's session as LIO lists them."""
    return {int(c) for c in re.findall(r"CID: (\d+)", (TPG / "acls" / PDU_INITIATOR / "info").read_text())}


def listed_within(cids: set[int], seconds: float = 10) -> bool:
    """LIO lists exactly cids in the session within seconds (it adds a
    joined connection, and drops a closed one, after its last answer)."""
    deadline = time.monotonic() + seconds
    while session_cids() != cids:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def adapter(c: Connection) -> str | None:
    """The adapter of c's offloaded connection (by its initiator side,
    v4-mapped where the portal is dual-stack), None when it is stock."""
    host, port = c.sock.getsockname()[:2]
    return adapter_of(f"{host}:{port}") or adapter_of(f"[::ffff:{host}]:{port}")


@pytest.fixture
def soft1(mcs_target: None) -> Iterator[None]:
    """A second software adapter, serving tgt1: the portal is then offloaded
    on both links, each by its own adapter."""
    d = CFS / "adapters/soft1"
    d.mkdir()
    try:
        (d / "netdev").write_text(STOCK.tgt_dev)
        yield
    finally:
        d.rmdir()


def connect(request: pytest.FixtureRequest, layout: str, n: int = 2) -> list[Connection]:
    """n connections of a SESSIONS layout, the lead's first: CID i on the
    lead's link where i is even, the joining one's where it is odd; soft1
    made for the two adapters' one."""
    links = SESSIONS[layout]
    if links[0] is not links[1]:
        request.getfixturevalue("soft1")
    return [Connection(links[cid % 2].tgt_ip) for cid in range(n)]


@pytest.mark.parametrize("layout", SESSIONS)
@pytest.mark.parametrize("digests", ["None", "CRC32C"])
def test_a_session_of_two_connections(
    mcs_target: None, layout: str, digests: str, request: pytest.FixtureRequest
) -> None:
    lead, second = connect(request, layout)
    try:
        keys = lead.login(PDU_INITIATOR, IQN, Params(max_connections=2, header_digest=digests, data_digest=digests))
        assert keys.get("MaxConnections") == "2", keys
        # LIO finds the session by its TSIH once it lists the lead
        assert listed_within({0}), f"LIO does not list the lead's session: {session_cids()}"
        second.join(lead, PDU_INITIATOR, IQN, cid=1)
        assert listed_within({0, 1}), f"LIO does not list both connections in the session: {session_cids()}"
        got = [adapter(c) for c in (lead, second)]
        assert got == ADAPTERS[layout], f"{layout}: adapters {got}: {connection_lines()}"
        # one CmdSN order over both: each write read back through the other
        for i in range(ROUNDS):
            w, r = (lead, second) if i % 2 == 0 else (second, lead)
            data = os.urandom(LBAS * 512)
            w.scsi_write(i * LBAS, data)
            assert r.scsi_read(i * LBAS, LBAS) == data, f"{layout}: round {i}"
        # the joined connection leaves alone; the session goes on. LIO
        # drops it from the session before the session's logout: LIO's
        # session stop walks the connections with the lock let go, and one
        # that leaves the list meanwhile is read after its list_del (a GPF
        # on stock LIO too, docs/status.md)
        assert second.logout(reason=1, close=False) == 0
        assert second.closed_by_peer(), "the target kept the logged-out connection open"
        assert listed_within({0}), f"LIO still lists CID 1: {session_cids()}"
        data = os.urandom(LBAS * 512)
        lead.scsi_write(ROUNDS * LBAS, data)
        assert lead.scsi_read(ROUNDS * LBAS, LBAS) == data
        assert lead.logout() == 0
    finally:
        lead.close()
        second.close()


@pytest.mark.parametrize("layout", SESSIONS)
def test_a_session_of_four_connections(mcs_target: None, layout: str, request: pytest.FixtureRequest) -> None:
    """As many connections as the TPG allows (4): each joins, LIO lists all
    four, each connection's write is read back through the next one in one
    CmdSN order; they leave one by one, the last CID first, and the
    session goes on over the lead until its logout. Over two adapters the
    connections alternate between them (CIDs 0 and 2 on soft0, 1 and 3 on
    soft1), so each read goes through the other adapter than its write."""
    conns = connect(request, layout, 4)
    try:
        keys = conns[0].login(PDU_INITIATOR, IQN, Params(max_connections=4))
        assert keys.get("MaxConnections") == "4", keys
        assert listed_within({0}), f"LIO does not list the lead's session: {session_cids()}"
        for cid in (1, 2, 3):
            conns[cid].join(conns[0], PDU_INITIATOR, IQN, cid=cid)
            assert listed_within(set(range(cid + 1))), f"after CID {cid} joined, LIO lists {session_cids()}"
        want = [ADAPTERS[layout][cid % 2] for cid in range(4)]
        assert [adapter(c) for c in conns] == want, f"{layout}: {connection_lines()}"
        for i in range(ROUNDS):
            w, r = conns[i % 4], conns[(i + 1) % 4]
            data = os.urandom(LBAS * 512)
            w.scsi_write(i * LBAS, data)
            assert r.scsi_read(i * LBAS, LBAS) == data, f"{layout}: round {i}"
        for cid in (3, 2, 1):
            assert conns[cid].logout(reason=1, close=False) == 0
            assert conns[cid].closed_by_peer(), f"the target kept CID {cid} open after its logout"
            assert listed_within(set(range(cid))), f"after CID {cid} left, LIO lists {session_cids()}"
        data = os.urandom(LBAS * 512)
        conns[0].scsi_write(ROUNDS * LBAS, data)
        assert conns[0].scsi_read(ROUNDS * LBAS, LBAS) == data
        assert conns[0].logout() == 0
    finally:
        for c in conns:
            c.close()


@pytest.mark.parametrize("layout", SESSIONS)
def test_a_data_out_on_another_connection_is_never_placed(
    mcs_target: None, layout: str, request: pytest.FixtureRequest
) -> None:
    """A task's Data-Out belongs on its command's connection (connection
    allegiance, RFC 7143 6.1.2; only a TASK REASSIGN moves it, test_erl2).
    A Data-Out answering the R2T of a WRITE on the lead, sent on the other
    connection, is never placed into the WRITE's buffer. Stock LIO reads
    and throws its data away ("Unable to locate ITT") and both connections
    go on: the Data-Out then sent on the lead completes the WRITE with its
    own data. An offloaded connection ends at a Data-Out whose TTT names no
    R2T of its own (a protocol error: placement hardware may have written
    what such a tag named), and at ERL 0 the session with it: the blocks
    keep what they held."""
    lead, second = connect(request, layout)
    lba = 3 * LBAS
    before, stray, data = (os.urandom(LBAS * 512) for _ in range(3))
    try:
        lead.login(PDU_INITIATOR, IQN, Params(max_connections=2, immediate_data=False, initial_r2t=True))
        assert listed_within({0}), f"LIO does not list the lead's session: {session_cids()}"
        second.join(lead, PDU_INITIATOR, IQN, cid=1)
        assert listed_within({0, 1}), f"LIO does not list both connections: {session_cids()}"
        assert [adapter(c) for c in (lead, second)] == ADAPTERS[layout]
        clear_unit_attention(second)  # a new session's, if any, goes to a plain command
        lead.scsi_write(lba, before)
        itt = lead.next_itt()
        lead.send(scsi_command(struct.pack(">BBIBHB", 0x2A, 0, lba, 0, LBAS, 0), itt=itt, cmdsn=lead.cmdsn,
                               expstatsn=lead.expstatsn, write_len=LBAS * 512))  # fmt: skip
        lead.cmdsn += 1
        lead.sock.settimeout(15)
        r2t = lead.recv()
        assert (r2t.opcode, r2t.itt) == (Op.R2T, itt), f"waiting for the WRITE's R2T: got {r2t!r}"
        second.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=second.expstatsn, datasn=0, offset=0, data=stray,
                             final=True))  # fmt: skip
        if ADAPTERS[layout][1] is not None:
            assert second.closed_by_peer(), f"{layout}: the stray Data-Out's connection goes on"
            lead.close()
            fresh = Connection(SESSIONS[layout][0].tgt_ip)
            fresh.login(PDU_INITIATOR, IQN)
            try:
                clear_unit_attention(fresh)
                got = fresh.scsi_read(lba, LBAS)
            finally:
                fresh.close()
            assert got != stray, f"{layout}: the stray Data-Out was placed into the WRITE"
            assert got == before, f"{layout}: the blocks changed"
            return
        # the other connection goes on: a command after the stray PDU
        assert len(second.scsi_read(0, 1)) == 512, f"{layout}: the connection of the stray Data-Out"
        lead.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=lead.expstatsn, datasn=0, offset=0, data=data,
                           final=True))  # fmt: skip
        rsp = lead.recv()
        assert (rsp.opcode, rsp.itt, rsp.u8(3)) == (Op.SCSI_RSP, itt, 0), f"{layout}: the WRITE's answer {rsp!r}"
        got = second.scsi_read(lba, LBAS)
        assert got != stray, f"{layout}: the stray Data-Out was placed into the WRITE"
        assert got == data, f"{layout}: the WRITE's data does not read back"
        assert listed_within({0, 1}), f"{layout}: a connection left the session: {session_cids()}"
    finally:
        lead.close()
        second.close()


def test_an_offloaded_connection_does_not_join_a_stock_session(mcs_target: None) -> None:
    """The join is answered "can't include in session" (0208) and the
    connection ends; the session goes on over its stock connection."""
    lead, second = Connection(STOCK.tgt_ip), Connection(OFF.tgt_ip)
    try:
        lead.login(PDU_INITIATOR, IQN, Params(max_connections=2))
        with pytest.raises(LoginError) as refused:
            second.join(lead, PDU_INITIATOR, IQN, cid=1)
        assert (refused.value.status_class, refused.value.status_detail) == (0x02, 0x08)
        assert second.closed_by_peer(), "the refused connection stayed open"
        assert session_cids() == {0}
        data = os.urandom(LBAS * 512)
        lead.scsi_write(0, data)
        assert lead.scsi_read(0, LBAS) == data
        assert lead.logout() == 0
    finally:
        lead.close()
        second.close()


def test_a_stock_connection_does_not_join_an_offloaded_session(
    mcs_target: None, lio_core: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """upstream/0009's reproducer: a session led by an offloaded connection
    is joined through the stock path, and LIO answers "can't include in
    session" (0208); the session goes on over its offloaded connection."""
    if lio_core != "patched":
        pytest.skip("the kernels' LIO joins the connection and overlaps the two transports' commands: "
                    "upstream/0009 refuses it, run with --patched-lio")  # fmt: skip
    mark = kmsg_mark("mcs_mixed_transports")
    rc = reproducer("mcs_mixed_transports").main([OFF.tgt_ip, STOCK.tgt_ip, IQN, "--initiator", PDU_INITIATOR])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    assert "join refused: status 0x0208" in out, out
    assert any("connection to a session with connections of another transport" in ln for ln in dmesg_since(mark))
