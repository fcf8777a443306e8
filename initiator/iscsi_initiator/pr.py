"""SCSI-3 persistent reservations (SPC-4 6.15, 6.16) over a Connection:
PERSISTENT RESERVE OUT's CDB, its basic parameter list and REGISTER AND
MOVE's, PERSISTENT RESERVE IN's READ KEYS and READ RESERVATION answers."""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass

from .session import Connection, ScsiError

PR_IN, PR_OUT = 0x5E, 0x5F
# service actions of PERSISTENT RESERVE OUT
REGISTER, RESERVE, RELEASE, CLEAR, PREEMPT, PREEMPT_AND_ABORT, REGISTER_AND_IGNORE = 0, 1, 2, 3, 4, 5, 6
REGISTER_AND_MOVE = 7
# of PERSISTENT RESERVE IN
READ_KEYS, READ_RESERVATION = 0, 1
# reservation types
WRITE_EXCLUSIVE, EXCLUSIVE_ACCESS = 1, 3
WRITE_EXCLUSIVE_REGISTRANTS_ONLY, EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 5, 6
RESERVATION_CONFLICT, BUSY = 0x18, 0x08  # SCSI statuses
PARAM_LEN = 24


def out_cdb(action: int, rtype: int = 0, length: int = PARAM_LEN) -> bytes:
    """PERSISTENT RESERVE OUT, scope LU."""
    return struct.pack(">BBBxxIB", PR_OUT, action, rtype, length, 0)


def out_params(key: int, sa_key: int = 0, aptpl: bool = False) -> bytes:
    """The basic parameter list: reservation key, service action key."""
    return struct.pack(">QQ4xBx2x", key, sa_key, 1 if aptpl else 0)


def iscsi_port_id(initiator: str, isid: bytes) -> bytes:
    """The TransportID of an iSCSI initiator port (SPC-4 7.6.4.6, format
    01b): its name and ISID, NUL-terminated, padded to a multiple of 4."""
    port = f"{initiator},i,0x{isid.hex()}".encode() + b"\0"
    port += bytes(-len(port) % 4)
    return struct.pack(">BxH", 0x40 | 0x05, len(port)) + port


def move_params(key: int, sa_key: int, rtpi: int, port_id: bytes, unreg: bool = False) -> bytes:
    """REGISTER AND MOVE's parameter list (SPC-4 6.16.4): the reservation
    goes, with a registration of ``sa_key``, to the I_T nexus of initiator
    port ``port_id`` and relative target port ``rtpi``."""
    return struct.pack(">QQxBHI", key, sa_key, 2 if unreg else 0, rtpi, len(port_id)) + port_id


def prout(c: Connection, action: int, key: int = 0, sa_key: int = 0, rtype: int = 0, lun: int = 0) -> None:
    """One PERSISTENT RESERVE OUT; raises ScsiError as the target answers."""
    c.scsi_out(out_cdb(action, rtype), out_params(key, sa_key), lun)


@dataclass(frozen=True)
class Reservation:
    generation: int
    key: int | None  # None: no reservation
    rtype: int


def read_keys(c: Connection, lun: int = 0) -> tuple[int, list[int]]:
    """READ KEYS: PRgeneration and the registered keys."""
    data = c.scsi_in(struct.pack(">BBxxxxxHB", PR_IN, READ_KEYS, 8192, 0), 8192, lun)
    generation, length = struct.unpack(">II", data[:8])
    return generation, [k for (k,) in struct.iter_unpack(">Q", data[8 : 8 + length])]


def read_reservation(c: Connection, lun: int = 0) -> Reservation:
    data = c.scsi_in(struct.pack(">BBxxxxxHB", PR_IN, READ_RESERVATION, 64, 0), 64, lun)
    generation, length = struct.unpack(">II", data[:8])
    if not length:
        return Reservation(generation, None, 0)
    (key,) = struct.unpack(">Q", data[8:16])
    return Reservation(generation, key, data[21] & 0x0F)


def write_refused(c: Connection, lba: int, busy_s: float = 0) -> bool:
    """Whether a 4 KiB write at ``lba`` gets RESERVATION CONFLICT (False:
    it succeeds; any other error is raised). BUSY is tried again for
    ``busy_s`` seconds, as an initiator does."""
    end = time.monotonic() + busy_s
    while True:
        try:
            c.scsi_write(lba, os.urandom(4096))
        except ScsiError as e:
            if e.status == BUSY and time.monotonic() < end:
                time.sleep(1)
                continue
            assert e.status == RESERVATION_CONFLICT, e
            return True
        return False
