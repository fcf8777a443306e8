"""What the reproducers share: a line per PDU from the target, and a watch
of what the target sends for a while. Each reproducer adds its own notes
(what a PDU means in its story) through ``note``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# first: a reproducer run as a script goes on under .venv, where its
# dependencies (crc32c) are; under .venv this returns at once
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from testbed.entry import use_project_venv

use_project_venv()
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "initiator"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "userspace"))

# after the switch to .venv, which they need
from cxgbit_ext import portals  # noqa: E402
from iscsi_initiator.pdu import F_DATAIN_STATUS, RSVD_TAG, Op, Pdu  # noqa: E402
from iscsi_initiator.session import Connection, ConnectionClosed  # noqa: E402

Note = Callable[[Pdu], str | None]


def portal(text: str) -> tuple[str, int]:
    """A portal argument (argparse's type): IP, IP:PORT, [IPV6]:PORT."""
    try:
        return portals.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A reproducer's command line: the portal, the target and the
    initiator's name it logs in with; the reproducer adds its own."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("portal", type=portal, help="target portal, IP, IP:PORT or [IPV6]:PORT")
    ap.add_argument("target", help="target IQN")
    ap.add_argument("--initiator", default="iqn.2026-11.org.cxgbit-ext:reproducer", help="initiator IQN")
    return ap


def _sense(rsp: Pdu) -> str:
    sense = rsp.data[2 : 2 + int.from_bytes(rsp.data[:2], "big")] if rsp.data else b""
    if len(sense) >= 14 and sense[0] & 0x7F in (0x70, 0x71):
        return f", sense key 0x{sense[2] & 0x0F:x} ASC/ASCQ 0x{sense[12]:02x}/0x{sense[13]:02x}"
    return ""


def describe(rsp: Pdu, note: Note | None = None) -> str:
    """One line for a PDU from the target; ``note`` may add what it means."""
    if rsp.opcode == Op.REJECT:
        rejected = rsp.data[0] & 0x3F if rsp.data else -1
        line = f"Reject, reason 0x{rsp.u8(2):02x} (of a PDU with opcode 0x{rejected:02x})"
    elif rsp.opcode == Op.SCSI_RSP:
        line = f"SCSI Response, ITT 0x{rsp.itt:08x}, response 0x{rsp.u8(2):02x} status 0x{rsp.u8(3):02x}{_sense(rsp)}"
    elif rsp.opcode == Op.R2T:
        line = (f"R2T for ITT 0x{rsp.itt:08x}, TTT 0x{rsp.ttt:08x}, offset {rsp.buffer_offset}, "
                f"{rsp.desired_length} bytes")  # fmt: skip
    elif rsp.opcode == Op.DATA_IN:
        line = f"Data-In, ITT 0x{rsp.itt:08x}, DataSN {rsp.datasn}, offset {rsp.buffer_offset}, {rsp.dlen} bytes"
        line += f", status 0x{rsp.u8(3):02x}" if rsp.flags & F_DATAIN_STATUS else ""
    elif rsp.opcode == Op.NOOP_IN and rsp.itt == RSVD_TAG:
        line = "NOP-In (the target's own ping)"
    else:
        try:
            line = f"{Op(rsp.opcode).name}, ITT 0x{rsp.itt:08x}"
        except ValueError:
            line = f"opcode 0x{rsp.opcode:02x}, ITT 0x{rsp.itt:08x}"
    meaning = note(rsp) if note else None
    return f"{line}: {meaning}" if meaning else line


@dataclass
class Watched:
    pdus: list[Pdu] = field(default_factory=list)
    closed: bool = False  # the target dropped the connection
    match: Pdu | None = None  # the PDU watched for, if it came


def watch(c: Connection, seconds: float, note: Note | None = None, until: Op | None = None,
          itt: int = RSVD_TAG) -> Watched:  # fmt: skip
    """Print what the target sends for ``seconds`` s, until it drops the
    connection, or until a PDU with opcode ``until`` for ``itt`` (a READ's
    status in its last Data-In counts as its SCSI Response)."""
    w = Watched()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        c.sock.settimeout(left)
        try:
            rsp = c.recv()
        except (ConnectionClosed, ConnectionError):
            print("  the target dropped the connection")
            w.closed = True
            return w
        except TimeoutError:
            break
        print(" ", describe(rsp, note))
        w.pdus.append(rsp)
        status_in_data = until == Op.SCSI_RSP and rsp.opcode == Op.DATA_IN and rsp.flags & F_DATAIN_STATUS
        if until is not None and rsp.itt == itt and (rsp.opcode == until or status_in_data):
            w.match = rsp
            return w
    print(f"  (nothing more within {seconds:g} s)")
    return w
