"""open-iscsi driven from Python: iscsid, discovery, login, logout, devices.

Every call goes through ``iscsiadm``; failures raise IscsiadmError with what
iscsiadm printed, so a caller sees why (iscsid down, portal unreachable, ...).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

INITIATORNAME = Path("/etc/iscsi/initiatorname.iscsi")


class IscsiadmError(Exception):
    """An iscsiadm call failed; the message carries its exit code and output."""


@dataclass(frozen=True)
class DiscoveredTarget:
    portal: str  # "ip:port"
    tpgt: int
    iqn: str


def _run(*args: str, timeout: float = 120) -> str:
    p = subprocess.run(["iscsiadm", *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).replace("\n", "; ")
        raise IscsiadmError(f"iscsiadm {' '.join(args)}: exit {p.returncode}: {msg}")
    return p.stdout


def iscsid_running() -> bool:
    return subprocess.run(["pgrep", "-x", "iscsid"], capture_output=True).returncode == 0


def start_iscsid(initiator_name: str = "iqn.2026-11.org.cxgbit-ext:initiator") -> None:
    """Load iscsi_tcp and start iscsid if it is not running (idempotent)."""
    subprocess.run(["modprobe", "iscsi_tcp"], check=True)
    Path("/run/lock/iscsi").mkdir(parents=True, exist_ok=True)
    if not INITIATORNAME.exists() or "InitiatorName=" not in INITIATORNAME.read_text():
        INITIATORNAME.parent.mkdir(parents=True, exist_ok=True)
        INITIATORNAME.write_text(f"InitiatorName={initiator_name}\n")
    if iscsid_running():
        return
    subprocess.run(["iscsid"], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if Path("/run/iscsid.pid").exists() or iscsid_running():
            return
        time.sleep(0.1)
    raise IscsiadmError("iscsid did not start within 10 s")


def discover(portal: str) -> list[DiscoveredTarget]:
    """SendTargets discovery on ``portal`` ("ip" or "ip:port")."""
    out = _run("-m", "discovery", "-t", "sendtargets", "-p", portal)
    found = []
    for line in out.splitlines():
        m = re.match(r"^(\S+):(\d+),(\d+) (\S+)$", line.strip())
        if m:
            found.append(DiscoveredTarget(f"{m[1]}:{m[2]}", int(m[3]), m[4]))
    return found


def set_node(iqn: str, portal: str, name: str, value: str) -> None:
    """Update one node record setting (e.g. node.conn[0].iscsi.HeaderDigest)."""
    _run("-m", "node", "-T", iqn, "-p", portal, "-o", "update", "-n", name, "-v", value)


def login(iqn: str, portal: str) -> None:
    _run("-m", "node", "-T", iqn, "-p", portal, "--login")


def logout(iqn: str | None = None, portal: str | None = None) -> None:
    """Log out of one target/portal, or of every session when both are None."""
    if iqn is None and portal is None:
        if sessions():
            _run("-m", "node", "--logoutall=all")
        return
    args = ["-m", "node"]
    if iqn:
        args += ["-T", iqn]
    if portal:
        args += ["-p", portal]
    _run(*args, "--logout")


def delete_nodes() -> None:
    """Forget every node record (the discovery database)."""
    p = subprocess.run(["iscsiadm", "-m", "node", "-o", "delete"], capture_output=True, text=True)
    # exit 21 = no records found: nothing to delete
    if p.returncode not in (0, 21):
        raise IscsiadmError(f"iscsiadm -m node -o delete: exit {p.returncode}: {p.stderr.strip()}")


@dataclass(frozen=True)
class Session:
    sid: int
    iqn: str
    address: str  # target address of the connection
    port: int


def sessions() -> list[Session]:
    """The kernel's iSCSI sessions, read from sysfs."""
    out = []
    for s in sorted(Path("/sys/class/iscsi_session").glob("session*")):
        sid = int(s.name[len("session") :])
        conns = list(Path("/sys/class/iscsi_connection").glob(f"connection{sid}:*"))
        addr, port = "", 0
        if conns:
            addr = (conns[0] / "persistent_address").read_text().strip()
            port = int((conns[0] / "persistent_port").read_text().strip())
        out.append(Session(sid, (s / "targetname").read_text().strip(), addr, port))
    return out


def session_disks(iqn: str, expect: int, timeout: float = 30) -> dict[int, str]:
    """Map LUN -> /dev/sdX for the session to ``iqn``, waiting for ``expect`` LUNs."""
    deadline = time.monotonic() + timeout
    disks: dict[int, str] = {}
    while time.monotonic() < deadline:
        disks = {}
        for s in sessions():
            if s.iqn != iqn:
                continue
            base = Path(f"/sys/class/iscsi_session/session{s.sid}/device")
            for blk in base.glob("target*/*:*:*:*/block/*"):
                lun = int(blk.parent.parent.name.split(":")[-1])
                dev = Path("/dev") / blk.name
                if dev.exists():
                    disks[lun] = str(dev)
        if len(disks) >= expect:
            return disks
        time.sleep(0.2)
    raise IscsiadmError(f"{iqn}: {len(disks)} of {expect} LUNs appeared within {timeout} s: {disks}")
