"""Build and remove the papers' reference topology with rtslib.

One iSCSI target with N LUNs (ramdisk or fileio), demo-mode or explicit ACLs,
optional one-way CHAP, and one or more portals, optionally offloaded through the stock np ``cxgbit`` switch
(rtslib ``NetworkPortal.offload``). Creation is all or nothing: when a step
fails, what was made is deleted again and the error is raised.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rtslib_fb import (
    LUN,
    TPG,
    FabricModule,
    FileIOStorageObject,
    MappedLUN,
    NetworkPortal,
    NodeACL,
    RDMCPStorageObject,
    RTSRoot,
    Target,
)
from rtslib_fb.utils import RTSLibError

from cxgbit_ext import portals, reservations

Backstore = Literal["ramdisk", "fileio", "nullio"]  # nullio: ramdisk that stores nothing
# a session and a connection that are up, as an ACL's info file names their states
LIVE_STATES = {"TARG_SESS_STATE_LOGGED_IN", "TARG_CONN_STATE_LOGGED_IN"}
# how long delete() waits for the sessions of a target's ACLs to finish closing
SETTLE_S = 15.0
MiB = 1 << 20


class TopologyError(Exception):
    """The topology could not be built or removed; nothing was left half made."""


@dataclass(frozen=True)
class Topology:
    """What to build: one target, its LUNs and portals."""

    iqn: str
    backstores: tuple[Backstore, ...] = ("ramdisk",) * 4
    lun_size: int = 64 * MiB
    portals: tuple[tuple[str, int], ...] = (("0.0.0.0", 3260),)
    offload: bool = False
    fileio_dir: Path = Path("/var/tmp/cxgbit-ext")
    name_prefix: str = field(default="cxe")
    acls: tuple[str, ...] = ()  # initiator IQNs; none = demo mode (any initiator)
    chap: tuple[str, str] | None = None  # (userid, password) the initiator must log in with
    pi_prot_type: int = 0  # T10-PI type of every LUN (1 or 3; fileio ones formatted), 0 none

    def so_name(self, lun: int) -> str:
        return f"{self.name_prefix}_{self.backstores[lun]}{lun}"


def _make_storage(topo: Topology, lun: int) -> RDMCPStorageObject | FileIOStorageObject:
    name = topo.so_name(lun)
    so: RDMCPStorageObject | FileIOStorageObject
    if topo.backstores[lun] in ("ramdisk", "nullio"):
        so = RDMCPStorageObject(name, size=topo.lun_size, nullio=topo.backstores[lun] == "nullio")
    else:
        topo.fileio_dir.mkdir(parents=True, exist_ok=True)
        path = topo.fileio_dir / f"{name}.img"
        # like targetcli: the image exists at its full (sparse) size before LIO opens it
        with path.open("xb") as f:
            f.truncate(topo.lun_size)
        so = FileIOStorageObject(name, dev=str(path), size=topo.lun_size, write_back=False)
    return so


def _set_pi(topo: Topology, so: RDMCPStorageObject | FileIOStorageObject) -> None:
    """T10-PI of the topology's type on so, before a LUN exports it (LIO
    refuses to change an exported device's PI); a fileio one formatted."""
    if not topo.pi_prot_type:
        return
    so.set_attribute("pi_prot_type", str(topo.pi_prot_type))
    if isinstance(so, FileIOStorageObject):
        so.set_attribute("pi_prot_format", "1")


def create(topo: Topology) -> Target:
    """Create the target described by ``topo``; raise TopologyError on failure."""
    if not topo.backstores or topo.lun_size < MiB:
        raise TopologyError(f"need at least one LUN of at least 1 MiB, got {len(topo.backstores)} x {topo.lun_size} B")
    made_sos: list[RDMCPStorageObject | FileIOStorageObject] = []
    target: Target | None = None
    try:
        fabric = FabricModule("iscsi")
        if any(t.wwn == topo.iqn for t in fabric.targets):
            raise TopologyError(f"target {topo.iqn} exists already")
        reservations.ensure_state_dir()
        target = Target(fabric, topo.iqn)
        tpg = TPG(target, 1)
        tpg.set_attribute("authentication", "1" if topo.chap else "0")
        tpg.set_attribute("generate_node_acls", "0" if topo.acls else "1")
        tpg.set_attribute("demo_mode_write_protect", "0")
        tpg.set_attribute("cache_dynamic_acls", "0" if topo.acls else "1")
        luns = []
        for i in range(len(topo.backstores)):
            so = _make_storage(topo, i)
            made_sos.append(so)
            _set_pi(topo, so)
            luns.append(LUN(tpg, i, storage_object=so))
        if topo.chap and not topo.acls:
            tpg.chap_userid, tpg.chap_password = topo.chap
        for iqn in topo.acls:
            acl = NodeACL(tpg, iqn)
            if topo.chap:
                acl.chap_userid, acl.chap_password = topo.chap
            for lun in luns:
                MappedLUN(acl, lun.lun, lun)
        for ip, port in topo.portals:
            np = NetworkPortal(tpg, portals.lio_ip(ip), port)
            if topo.offload:
                portals.set_offload(np, True)
        held = portals.enable_tpg(Path(tpg.path))
    except (RTSLibError, OSError) as e:
        _undo(target, made_sos)
        raise TopologyError(f"creating {topo.iqn}: {e}") from e
    except TopologyError:
        _undo(target, made_sos)
        raise
    # made: logins left on stock TCP are reported, the target stays
    portals.say_stock_logins(held, Path(tpg.path), f"target {topo.iqn}")
    return target


def _undo(target: Target | None, sos: list[RDMCPStorageObject | FileIOStorageObject]) -> None:
    if target is not None:
        target.delete()
    for so in sos:
        image = Path(so.udev_path) if isinstance(so, FileIOStorageObject) else None
        so.delete()
        if image is not None:
            image.unlink(missing_ok=True)


def closing_sessions(iqn: str = "*", lio: Path = reservations.LIO_ISCSI) -> list[str]:
    """The explicit ACLs (TARGET/tpgt_N/acls/NAME) of target ``iqn`` (every
    target: "*") whose info lists a session on its way down: a session or
    connection state other than logged in, or a session with no connection
    left."""
    closing = []
    for info in sorted(lio.glob(f"{iqn}/tpgt_*/acls/*/info")):
        try:
            text = info.read_text()
        except OSError:
            continue  # removed meanwhile
        if "No active iSCSI Session" in text:
            continue
        states = re.findall(r"TARG_(?:SESS|CONN)_\w+", text)
        if not any(st.startswith("TARG_CONN") for st in states) or set(states) - LIVE_STATES:
            closing.append(str(info.parent.relative_to(lio)))
    return closing


def settle_sessions(iqn: str = "*", seconds: float = SETTLE_S, lio: Path = reservations.LIO_ISCSI) -> list[str]:
    """Wait, up to ``seconds``, until no ACL of target ``iqn`` lists a
    session on its way down; the ACLs that still do.

    Deleting an ACL (as deleting its target does, or setting its queue
    depth) while one of its sessions closes crashes the kernels' LIO:
    target_shutdown_sessions() takes the session off the ACL's list and
    lets the list's lock go before it calls close_session(), while the
    session's own close (a logout, a dropped connection) deregisters and
    frees it (a NULL pointer dereference in lio_tpg_close_session()). A
    session that is up is closed by the deletion safely, so only those on
    their way down are waited for."""
    deadline = time.monotonic() + seconds
    while (closing := closing_sessions(iqn, lio)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return closing


def delete(iqn: str) -> None:
    """Delete a target and the storage objects only it used, fileio images
    included, once no session of its ACLs is on its way down (settle_sessions();
    one still closing after SETTLE_S seconds is left to the deletion)."""
    fabric = FabricModule("iscsi")
    matches = [t for t in fabric.targets if t.wwn == iqn]
    if not matches:
        raise TopologyError(f"no target {iqn}")
    target = matches[0]
    settle_sessions(iqn)
    sos = {lun.storage_object.path: lun.storage_object for tpg in target.tpgs for lun in tpg.luns}
    target.delete()
    in_use = {lun.storage_object.path for t in RTSRoot().targets for tpg in t.tpgs for lun in tpg.luns}
    _undo(None, [so for p, so in sos.items() if p not in in_use])
