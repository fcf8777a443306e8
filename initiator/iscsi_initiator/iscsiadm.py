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
    return discover_via(portal)


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


# ---- for people: many targets, many sessions, ifaces, multipath --------------


def require_iscsid() -> None:
    if not iscsid_running():
        raise IscsiadmError("iscsid is not running: start it (systemctl start iscsid, or run 'iscsid') and retry")


def iface_bind(name: str, netdev: str) -> None:
    """Create (or update) open-iscsi iface ``name`` bound to ``netdev``, so
    sessions through it leave by that NIC whatever the routing table says."""
    if not Path(f"/sys/class/net/{netdev}").exists():
        raise IscsiadmError(f"iface {name}: no netdev {netdev!r} on this host")
    p = subprocess.run(["iscsiadm", "-m", "iface", "-I", name], capture_output=True, text=True)
    if p.returncode != 0:
        _run("-m", "iface", "-I", name, "-o", "new")
    _run("-m", "iface", "-I", name, "-o", "update", "-n", "iface.net_ifacename", "-v", netdev)


def iface_delete(name: str) -> None:
    """Remove open-iscsi iface ``name`` if it exists. While it exists, a
    discovery without an iface makes node records through it too, so
    logins to any portal also leave by its NIC."""
    p = subprocess.run(["iscsiadm", "-m", "iface", "-I", name], capture_output=True, text=True)
    if p.returncode == 0:
        _run("-m", "iface", "-I", name, "-o", "delete")


def discover_via(portal: str, iface: str | None = None) -> list[DiscoveredTarget]:
    """SendTargets discovery, through ``iface`` when given; an unreachable
    portal is reported as such."""
    args = ["-m", "discovery", "-t", "sendtargets", "-p", portal]
    if iface:
        args += ["-I", iface]
    try:
        out = _run(*args, timeout=60)
    except IscsiadmError as e:
        if "connect" in str(e).lower() or "exit 4" in str(e) or "exit 8" in str(e):
            raise IscsiadmError(f"portal {portal} is unreachable: {e}") from e
        raise
    found = []
    for line in out.splitlines():
        m = re.match(r"^(\S+):(\d+),(\d+) (\S+)$", line.strip())
        if m:
            found.append(DiscoveredTarget(f"{m[1]}:{m[2]}", int(m[3]), m[4]))
    return found


def login_all(portals: list[str], sessions_per_target: int = 1, iface: str | None = None) -> list[DiscoveredTarget]:
    """Discover every target on ``portals`` and log in to each with
    ``sessions_per_target`` sessions (open-iscsi node.session.nr_sessions).
    Returns the targets logged in to."""
    require_iscsid()
    if sessions_per_target < 1:
        raise IscsiadmError("sessions per target must be at least 1")
    targets: list[DiscoveredTarget] = []
    for portal in portals:
        targets += discover_via(portal, iface)
    for t in targets:
        node = ["-m", "node", "-T", t.iqn, "-p", t.portal]
        if iface:
            node += ["-I", iface]
        _run(*node, "-o", "update", "-n", "node.session.nr_sessions", "-v", str(sessions_per_target))
        _run(*node, "--login")
    return targets


MULTIPATH_CONF = """\
# cxgbit-ext: dm-multipath for LIO iSCSI LUNs (written by cxe-initiator)
defaults {
    user_friendly_names yes
    find_multipaths no
}
devices {
    device {
        vendor "LIO-ORG"
        product ".*"
        path_grouping_policy multibus
        path_selector "queue-length 0"
        path_checker tur
        hardware_handler "1 alua"
        prio alua
        failback immediate
        no_path_retry 12
        rr_min_io_rq 1
    }
}
"""


def write_multipath_conf(path: Path = Path("/etc/multipath.conf")) -> Path:
    """Write a multipath.conf for LIO LUNs (all paths of a LUN in one group,
    I/O spread by queue length); an existing different file is kept as .bak."""
    if path.exists() and path.read_text() != MULTIPATH_CONF:
        path.rename(path.with_suffix(".conf.bak"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MULTIPATH_CONF)
    return path
