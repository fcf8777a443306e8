"""What SCSI-3 persistent reservations need from the host.

LIO's reservation emulation writes each device's state to
``<dbroot>/pr/aptpl_<unit serial>`` on every PERSISTENT RESERVE OUT, also
when the initiator did not ask for persistence (APTPL 0: it writes that
there is none), and fails the command with NOT READY, LOGICAL UNIT
COMMUNICATION FAILURE, when the file cannot be written. dbroot is LIO's
(``/sys/kernel/config/target/dbroot``); rtslib moves it to its preferred
directory (``/etc/rtslib-fb-target`` on Debian) before the first device
exists. No Debian package makes its ``pr`` directory, so on a stock host
every reservation fails, through stock iSCSI as through offload.
"""

from __future__ import annotations

from pathlib import Path

DBROOT = Path("/sys/kernel/config/target/dbroot")


def state_dir(dbroot: Path = DBROOT) -> Path:
    """The directory LIO writes reservation state to (LIO must be loaded)."""
    return Path(dbroot.read_text().strip()) / "pr"


def ensure_state_dir(dbroot: Path = DBROOT) -> Path:
    """Make state_dir() if it is missing (after rtslib has set dbroot:
    call it once an RTSRoot exists); returns it."""
    d = state_dir(dbroot)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d
