"""A small PDU-level iSCSI initiator for tests.

Login with text-key negotiation (digests, MaxRecvDataSegmentLength, bursts,
ImmediateData/InitialR2T, ErrorRecoveryLevel) and optional CHAP, one-way or
mutual; SCSI READ(10)/WRITE(10) with immediate, unsolicited and solicited
(R2T) data; NOP, Text, TMF, Logout; and raw sends of crafted PDUs for
negative tests. One connection per session, synchronous, sequential.
"""

from __future__ import annotations

import dataclasses
import secrets
import socket
import struct
from dataclasses import dataclass, field

from iscsi_initiator import chap
from iscsi_initiator.pdu import (
    F_DATAIN_STATUS,
    F_FINAL,
    F_LOGIN_TRANSIT,
    RSVD_TAG,
    Op,
    Pdu,
    data_out,
    decode,
    decode_keys,
    login_request,
    logout_request,
    nop_out,
    scsi_command,
    text_request,
    tmf_request,
)


class LoginError(Exception):
    def __init__(self, status_class: int, status_detail: int, keys: dict[str, str]) -> None:
        super().__init__(f"login failed: status class 0x{status_class:02x} detail 0x{status_detail:02x} {keys}")
        self.status_class, self.status_detail, self.keys = status_class, status_detail, keys


class ConnectionClosed(Exception):
    """The target closed the connection (or it reset)."""


class ProtocolError(Exception):
    """The target broke RFC 7143 in what it sent."""


class ScsiError(Exception):
    def __init__(self, status: int, response: int, sense: bytes) -> None:
        super().__init__(f"SCSI status 0x{status:02x} response 0x{response:02x} sense {sense.hex()}")
        self.status, self.response, self.sense = status, response, sense

    @property
    def _fixed(self) -> bool:
        return bool(self.sense) and self.sense[0] & 0x7F in (0x70, 0x71)

    @property
    def sense_key(self) -> int:
        """Sense key of fixed (0x70/0x71) or descriptor (0x72/0x73) sense data, -1 if none."""
        if len(self.sense) < 3:
            return -1
        return self.sense[2] & 0x0F if self._fixed else self.sense[1] & 0x0F

    @property
    def asc_ascq(self) -> tuple[int, int]:
        """Additional sense code and qualifier, (-1, -1) if none."""
        at = 12 if self._fixed else 2
        return (self.sense[at], self.sense[at + 1]) if len(self.sense) > at + 1 else (-1, -1)

    @property
    def information(self) -> int | None:
        """The INFORMATION field (an LBA, for a medium or PI error) where the
        sense data marks it valid: fixed format's VALID bit, descriptor
        format's Information descriptor (type 0) with its VALID bit."""
        s = self.sense
        if self._fixed:
            return int(struct.unpack_from(">I", s, 3)[0]) if len(s) >= 7 and s[0] & 0x80 else None
        at = 8
        while at + 1 < len(s):
            if s[at] == 0 and at + 12 <= len(s) and s[at + 2] & 0x80:
                return int(struct.unpack_from(">Q", s, at + 4)[0])
            at += 2 + s[at + 1]
        return None


@dataclass
class Params:
    """What the initiator offers; after login, what was negotiated."""

    header_digest: str = "None"
    data_digest: str = "None"
    max_recv_dlen: int = 262144  # ours: what the target may send us
    max_xmit_dlen: int = 8192  # target's, learnt at login
    first_burst: int = 65536
    max_burst: int = 262144
    immediate_data: bool = True
    initial_r2t: bool = True
    erl: int = 0
    max_connections: int = 1
    # seconds; a session that is to outlive a lost connection (ERL 2) needs Time2Retain
    time2wait: int = 0
    time2retain: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def hdigest(self) -> bool:
        return self.header_digest == "CRC32C"

    @property
    def ddigest(self) -> bool:
        return self.data_digest == "CRC32C"


_STATUS_OPS = frozenset(
    {Op.SCSI_RSP, Op.NOOP_IN, Op.TEXT_RSP, Op.LOGOUT_RSP, Op.TMF_RSP, Op.LOGIN_RSP, Op.REJECT, Op.ASYNC}
)


def _yn(b: bool) -> str:
    return "Yes" if b else "No"


class _SessionSN:
    """What a session's connections number their tasks from: the CmdSN,
    and the Initiator Task Tags, which are unique in the session."""

    def __init__(self) -> None:
        self.cmdsn = 1
        self.itt = 0x1000


class Connection:
    """One TCP connection to a target portal, logged in by login(), or
    joined to another's session by join()."""

    def __init__(self, host: str, port: int = 3260, timeout: float = 30, source: str | None = None) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=(source, 0) if source else None)  # fmt: skip
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.params = Params()
        self.full_feature = False
        # ISID type "random" (RFC 7143 11.12.5): each Connection is its own
        # session unless the caller sets the same ISID to reinstate one
        self.isid = b"\x80" + secrets.token_bytes(3) + b"\x00\x01"
        self.tsih = 0
        self.cid = 0
        self._sn = _SessionSN()
        self.expstatsn = 0
        self.target_keys: dict[str, str] = {}

    @property
    def cmdsn(self) -> int:
        return self._sn.cmdsn

    @cmdsn.setter
    def cmdsn(self, value: int) -> None:
        self._sn.cmdsn = value

    @property
    def itt(self) -> int:
        return self._sn.itt

    @itt.setter
    def itt(self, value: int) -> None:
        self._sn.itt = value

    # -- plumbing --------------------------------------------------------
    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except (ConnectionResetError, BrokenPipeError) as e:
                raise ConnectionClosed(str(e)) from e
            if not chunk:
                raise ConnectionClosed(f"EOF after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def send(self, p: Pdu, hdigest: bool | None = None, ddigest: bool | None = None) -> None:
        hd = self.params.hdigest and self.full_feature if hdigest is None else hdigest
        dd = self.params.ddigest and self.full_feature if ddigest is None else ddigest
        self.send_raw(p.encode(hd, dd))

    def send_raw(self, b: bytes) -> None:
        try:
            self.sock.sendall(b)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise ConnectionClosed(str(e)) from e

    def recv(self) -> Pdu:
        ff = self.full_feature
        p = decode(self._recv_exact, self.params.hdigest and ff, self.params.ddigest and ff)
        # StatSN advances on every status-carrying PDU but a target-initiated NOP-In
        carries_status = p.opcode in _STATUS_OPS or (p.opcode == Op.DATA_IN and p.flags & F_DATAIN_STATUS)
        if carries_status and not (p.opcode == Op.NOOP_IN and p.itt == RSVD_TAG):
            self.expstatsn = p.statsn + 1
        return p

    def next_itt(self) -> int:
        self.itt += 1
        return self.itt

    def closed_by_peer(self, timeout: float = 10) -> bool:
        """True when the target drops the connection within ``timeout`` s."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()

    def reset(self) -> None:
        """Drop the connection as a lost link ends it for the target: a TCP reset, nothing in flight flushed."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    # -- login -----------------------------------------------------------
    def _login_step(self, csg: int, nsg: int, transit: bool, keys: list[tuple[str, str]]) -> Pdu:
        req = login_request(isid=self.isid, tsih=self.tsih, itt=self.itt, cid=self.cid, cmdsn=self.cmdsn,
                            expstatsn=self.expstatsn, csg=csg, nsg=nsg, transit=transit, keys=keys)  # fmt: skip
        self.send(req)
        rsp = self.recv()
        if rsp.opcode != Op.LOGIN_RSP:
            raise LoginError(0xFF, rsp.opcode, {})
        got = decode_keys(rsp.data)
        self.target_keys.update(got)
        if rsp.u8(36) != 0:
            raise LoginError(rsp.u8(36), rsp.u8(37), got)
        self.tsih = rsp.u16(14)
        return rsp

    def login(
        self, initiator: str, target: str | None, params: Params | None = None, *,
        discovery: bool = False, chap_user: str | None = None, chap_secret: str | None = None,
        mutual_user: str | None = None, mutual_secret: str | None = None, chap_algs: str = "5",
        operational_only: bool = False,
    ) -> dict[str, str]:  # fmt: skip
        """Log in; returns the keys the target sent. Raises LoginError.
        With CHAP, ``chap_algs`` is the CHAP_A list offered, in order of
        preference; the target's choice hashes both directions. Without
        it, ``operational_only`` starts in LoginOperationalNegotiation, as
        an initiator that does not authenticate may (RFC 7143 6.3): a round
        trip fewer, for tests that log in thousands of times."""
        self.params = p = params or Params()
        joining = bool(self.tsih)  # a connection joining a session (join())
        sec: list[tuple[str, str]] = [("InitiatorName", initiator)]
        # SessionType is leading-only (RFC 7143 13.21): a joining connection's session has one
        if not joining:
            sec.append(("SessionType", "Discovery" if discovery else "Normal"))
        if target and not discovery:
            sec.append(("TargetName", target))
        if chap_user:
            self._login_step(0, 0, False, [*sec, ("AuthMethod", "CHAP,None")])
            if self.target_keys.get("AuthMethod") != "CHAP":
                raise LoginError(0xFE, 0, self.target_keys)
            self._login_step(0, 0, False, [("CHAP_A", chap_algs)])
            try:
                alg = int(self.target_keys["CHAP_A"])
                chap.digest_size(alg)
            except (KeyError, ValueError):
                raise LoginError(0xFE, 1, self.target_keys) from None
            ident = int(self.target_keys["CHAP_I"])
            challenge = chap.from_hex(self.target_keys["CHAP_C"])
            secret = (chap_secret or "").encode()
            keys = [("CHAP_N", chap_user), ("CHAP_R", chap.to_hex(chap.response(ident, secret, challenge, alg)))]
            mident, mchal = chap.new_challenge(chap.digest_size(alg))
            if mutual_user:
                keys += [("CHAP_I", str(mident)), ("CHAP_C", chap.to_hex(mchal))]
            rsp = self._login_step(0, 1, True, keys)
            if mutual_user:
                want = chap.response(mident, (mutual_secret or "").encode(), mchal, alg)
                if self.target_keys.get("CHAP_N") != mutual_user or chap.from_hex(self.target_keys["CHAP_R"]) != want:
                    raise LoginError(0xFD, 0, self.target_keys)
        elif not operational_only:
            rsp = self._login_step(0, 1, True, [*sec, ("AuthMethod", "None")])
        if chap_user or not operational_only:
            # the target may stay in security negotiation for a round (T=0)
            for _ in range(4):
                if rsp.flags & F_LOGIN_TRANSIT:
                    break
                rsp = self._login_step(0, 1, True, [])
            sec = []  # sent in that stage
        ops: list[tuple[str, str]] = [
            ("HeaderDigest", p.header_digest), ("DataDigest", p.data_digest),
            ("MaxRecvDataSegmentLength", str(p.max_recv_dlen)),
        ]  # fmt: skip
        # a connection joining a session negotiates its own keys only
        if not discovery and not joining:
            ops += [
                ("ErrorRecoveryLevel", str(p.erl)), ("InitialR2T", _yn(p.initial_r2t)),
                ("ImmediateData", _yn(p.immediate_data)), ("MaxBurstLength", str(p.max_burst)),
                ("FirstBurstLength", str(p.first_burst)), ("MaxConnections", str(p.max_connections)),
                ("DataPDUInOrder", "Yes"), ("DataSequenceInOrder", "Yes"),
                ("MaxOutstandingR2T", "1"), ("DefaultTime2Wait", str(p.time2wait)),
                ("DefaultTime2Retain", str(p.time2retain)),
            ]  # fmt: skip
        ops = [*sec, *ops, *p.extra.items()]
        sent = {k for k, _ in ops}
        self.target_keys = {}
        rsp = self._login_step(1, 3, True, ops)
        for _ in range(8):
            if rsp.flags & F_LOGIN_TRANSIT and (rsp.flags & 3) == 3:
                break
            # answer what the target proposed on its own, taking its values
            answer = [(k, v) for k, v in decode_keys(rsp.data).items() if k not in sent]
            sent |= {k for k, _ in answer}
            rsp = self._login_step(1, 3, True, answer)
        else:
            raise LoginError(0xFC, 0, self.target_keys)
        self._apply(self.target_keys)
        self.cmdsn = rsp.expcmdsn
        self.full_feature = True
        return self.target_keys

    def join(self, lead: Connection, initiator: str, target: str, cid: int) -> dict[str, str]:
        """Log in as connection ``cid`` of ``lead``'s session (MC/S): its
        ISID and TSIH, the CmdSN and task tags it numbers commands from, the session's
        keys as ``lead`` negotiated them; this connection's own keys (its
        digests, MaxRecvDataSegmentLength) offered as ``lead``'s were.
        Returns the keys the target sent."""
        self.isid, self.tsih, self.cid, self._sn = lead.isid, lead.tsih, cid, lead._sn
        return self.login(initiator, target, dataclasses.replace(lead.params, extra={}))

    def _apply(self, k: dict[str, str]) -> None:
        p = self.params
        p.header_digest = k.get("HeaderDigest", "None")
        p.data_digest = k.get("DataDigest", "None")
        p.max_xmit_dlen = int(k.get("MaxRecvDataSegmentLength", "8192"))
        if "InitialR2T" in k:
            p.initial_r2t = p.initial_r2t or k["InitialR2T"] == "Yes"
        if "ImmediateData" in k:
            p.immediate_data = p.immediate_data and k["ImmediateData"] == "Yes"
        p.first_burst = min(p.first_burst, int(k.get("FirstBurstLength", p.first_burst)))
        p.max_burst = min(p.max_burst, int(k.get("MaxBurstLength", p.max_burst)))

    # -- commands --------------------------------------------------------
    def _next_cmdsn(self) -> int:
        sn = self.cmdsn
        self.cmdsn += 1
        return sn

    def scsi_read(self, lba: int, blocks: int, block_size: int = 512, lun: int = 0) -> bytes:
        """READ(10); returns the data. Raises ScsiError on CHECK CONDITION."""
        length = blocks * block_size
        return self._data_in(self.send_read(lba, blocks, block_size, lun), length)

    def scsi_in(self, cdb: bytes, length: int, lun: int = 0) -> bytes:
        """A command reading up to ``length`` bytes (its allocation length);
        returns what the target sent, which may be less. Raises ScsiError."""
        itt = self.next_itt()
        self.send(scsi_command(cdb, itt=itt, cmdsn=self._next_cmdsn(), expstatsn=self.expstatsn, lun=lun,
                               read_len=length))  # fmt: skip
        return self._data_in(itt, length)

    def _data_in(self, itt: int, length: int) -> bytes:
        """Task itt's Data-In up to its status: the data (as much as came)."""
        buf = bytearray(length)
        next_sn, next_off = 0, 0
        while True:
            rsp = self.recv()
            if rsp.opcode == Op.DATA_IN and rsp.itt == itt:
                # RFC 7143 with DataPDUInOrder/DataSequenceInOrder=Yes: DataSN
                # from 0 in steps of 1, offsets contiguous, no PDU above our
                # MaxRecvDataSegmentLength, F at the end of each MaxBurstLength
                # sequence and of the data, S only with F
                if rsp.datasn != next_sn or rsp.buffer_offset != next_off or rsp.dlen > self.params.max_recv_dlen:
                    raise ProtocolError(f"Data-In out of order: DataSN {rsp.datasn} (want {next_sn}), offset "
                                        f"{rsp.buffer_offset} (want {next_off}), length {rsp.dlen}")  # fmt: skip
                next_sn, next_off = next_sn + 1, next_off + rsp.dlen
                # the data may end short of length (an underflow): with S
                end_of_seq = next_off % self.params.max_burst == 0 or next_off == length
                end_of_seq |= bool(rsp.flags & F_DATAIN_STATUS)
                if bool(rsp.flags & F_FINAL) != end_of_seq or (rsp.flags & F_DATAIN_STATUS and not rsp.final):
                    raise ProtocolError(f"Data-In F/S bits 0x{rsp.flags:02x} wrong at offset {next_off} of {length}")
                buf[rsp.buffer_offset : rsp.buffer_offset + rsp.dlen] = rsp.data
                if rsp.flags & F_DATAIN_STATUS:
                    if rsp.u8(3) != 0:
                        raise ScsiError(rsp.u8(3), 0, b"")
                    return bytes(buf[:next_off])
            elif rsp.opcode == Op.SCSI_RSP and rsp.itt == itt:
                self._check_status(rsp)
                return bytes(buf[:next_off])
            else:
                self._unexpected(rsp)

    def send_read(self, lba: int, blocks: int, block_size: int = 512, lun: int = 0) -> int:
        """READ(10) sent, its answer left to the caller (recv_task()); the ITT."""
        itt = self.next_itt()
        self.send(scsi_command(struct.pack(">BBIBHB", 0x28, 0, lba, 0, blocks, 0), itt=itt,
                               cmdsn=self._next_cmdsn(), expstatsn=self.expstatsn, lun=lun,
                               read_len=blocks * block_size))  # fmt: skip
        return itt

    def recv_task(self, itt: int) -> list[Pdu]:
        """Every PDU of task ``itt`` as it came, up to the one with its
        status (a SCSI Response, or a Data-In with S): what ERL 1 and 2
        compare when a task is sent again. Raises ProtocolError on a PDU of
        anything else."""
        got: list[Pdu] = []
        while not got or not (got[-1].opcode == Op.SCSI_RSP or got[-1].flags & F_DATAIN_STATUS):
            p = self.recv_answering_pings()
            if p.itt != itt or p.opcode not in (Op.DATA_IN, Op.SCSI_RSP):
                raise ProtocolError(f"waiting for task 0x{itt:08x}'s Data-In and status, got {p!r}")
            got.append(p)
        return got

    def scsi_write(self, lba: int, data: bytes, block_size: int = 512, lun: int = 0) -> None:
        """WRITE(10) with immediate, unsolicited and R2T-solicited data as negotiated."""
        if len(data) % block_size:
            raise ValueError("data must be whole blocks")
        self.scsi_out(struct.pack(">BBIBHB", 0x2A, 0, lba, 0, len(data) // block_size, 0), data, lun)

    def scsi_out(self, cdb: bytes, data: bytes, lun: int = 0) -> None:
        """A command writing ``data``: immediate, unsolicited and
        R2T-solicited as negotiated. Raises ScsiError."""
        p = self.params
        itt = self.next_itt()
        first = min(len(data), p.first_burst)
        imm = data[: min(first, p.max_xmit_dlen)] if p.immediate_data else b""
        unsol_end = 0 if p.initial_r2t else first
        self.send(scsi_command(cdb, itt=itt, cmdsn=self._next_cmdsn(), expstatsn=self.expstatsn, lun=lun,
                               write_len=len(data), final=p.initial_r2t or len(imm) >= unsol_end,
                               data=imm))  # fmt: skip
        if unsol_end > len(imm):
            self._send_data(itt, RSVD_TAG, lun, data, len(imm), unsol_end)
        while True:
            rsp = self.recv()
            if rsp.opcode == Op.R2T and rsp.itt == itt:
                off, want = rsp.buffer_offset, rsp.desired_length
                self._send_data(itt, rsp.ttt, lun, data, off, off + want)
            elif rsp.opcode == Op.SCSI_RSP and rsp.itt == itt:
                self._check_status(rsp)
                return
            else:
                self._unexpected(rsp)

    def _send_data(self, itt: int, ttt: int, lun: int, data: bytes, start: int, end: int) -> None:
        for sn, off in enumerate(range(start, end, self.params.max_xmit_dlen)):
            chunk = data[off : min(end, off + self.params.max_xmit_dlen)]
            self.send(data_out(itt=itt, ttt=ttt, expstatsn=self.expstatsn, datasn=sn, offset=off, data=chunk,
                               final=off + len(chunk) >= end, lun=lun))  # fmt: skip

    def _check_status(self, rsp: Pdu) -> None:
        status, response = rsp.u8(3), rsp.u8(2)
        if status or response:
            sense = rsp.data[2 : 2 + int.from_bytes(rsp.data[:2], "big")] if rsp.data else b""
            raise ScsiError(status, response, sense)

    def _unexpected(self, rsp: Pdu) -> None:
        if rsp.opcode == Op.NOOP_IN and rsp.itt == RSVD_TAG:
            # target ping: answer it
            self.send(nop_out(itt=RSVD_TAG, cmdsn=self.cmdsn, expstatsn=self.expstatsn, ttt=rsp.ttt))
            return
        if rsp.opcode == Op.ASYNC:
            return
        raise ConnectionClosed(f"unexpected {rsp!r}")

    def recv_answering_pings(self) -> Pdu:
        """The next PDU but the target's pings (NOP-In with the reserved
        ITT), each answered as it comes: a target pings a session that has
        been quiet for its NopInInterval, whatever the test is waiting for."""
        while True:
            p = self.recv()
            if not (p.opcode == Op.NOOP_IN and p.itt == RSVD_TAG):
                return p
            self._unexpected(p)

    def nop(self, data: bytes = b"") -> Pdu:
        itt = self.next_itt()
        self.send(nop_out(itt=itt, cmdsn=self.cmdsn, expstatsn=self.expstatsn, data=data))
        while True:
            rsp = self.recv()
            if rsp.opcode == Op.NOOP_IN and rsp.itt == itt:
                return rsp
            self._unexpected(rsp)  # a target's ping is answered; anything else ends the session

    def text(self, keys: dict[str, str]) -> dict[str, str]:
        itt = self.next_itt()
        self.send(text_request(itt=itt, cmdsn=self.cmdsn, expstatsn=self.expstatsn, keys=keys))
        rsp = self.recv_answering_pings()
        if rsp.opcode != Op.TEXT_RSP:
            raise ConnectionClosed(f"expected Text Response, got {rsp!r}")
        return decode_keys(rsp.data)

    def tmf(self, function: int, lun: int = 0, ref_itt: int = RSVD_TAG, exp_datasn: int = 0) -> int:
        """Task management; returns the TMF response code."""
        itt = self.next_itt()
        self.send(tmf_request(function=function, itt=itt, cmdsn=self.cmdsn, expstatsn=self.expstatsn, lun=lun,
                              ref_itt=ref_itt, exp_datasn=exp_datasn))  # fmt: skip
        rsp = self.recv_answering_pings()
        if rsp.opcode != Op.TMF_RSP:
            raise ConnectionClosed(f"expected TMF Response, got {rsp!r}")
        return rsp.u8(2)

    def logout(self, reason: int = 0, close: bool = True, cid: int | None = None, expstatsn: int | None = None) -> int:
        """Logout: the session (reason 0), connection ``cid`` (1; this one
        by default), or connection ``cid`` lost, for its tasks to be
        reassigned (2: remove the connection for recovery; ``expstatsn``
        then is the lost connection's, RFC 7143 11.14.1); returns the
        response code. With close False the socket stays open, for
        closed_by_peer() to see the target end the connection."""
        itt = self.next_itt()
        self.send(logout_request(itt=itt, cmdsn=self.cmdsn, reason=reason, cid=self.cid if cid is None else cid,
                                 expstatsn=self.expstatsn if expstatsn is None else expstatsn))  # fmt: skip
        rsp = self.recv_answering_pings()
        if rsp.opcode != Op.LOGOUT_RSP:
            raise ConnectionClosed(f"expected Logout Response, got {rsp!r}")
        if close:
            self.close()
        return rsp.u8(2)
