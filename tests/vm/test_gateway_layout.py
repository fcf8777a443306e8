"""A gateway's layout (cxgbit-ext gateway create) survives a save and a
restore (cxgbit-ext save/restore --lio) unchanged in what initiators see:
the relative target port of each TPG, the ALUA groups and their states, the
unit serial, the enabled and offloaded portal. The gateway is gateway 2 of
2, so its enabled TPG is not the first: where LIO numbers ports itself
(6.12 numbers enabled TPGs in the order they are enabled), a restore that
does not pin them gives this gateway's port the other gateway's id.

The backstore is a RAM disk (brd) standing for the mapped RBD image (the
layout does not depend on what the block device is; testbed/scaleout runs
it on Ceph)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rtslib_fb import TPG, FabricModule, RTSRoot, Target

from cxgbit_ext import cli as cxgbit_cli
from cxgbit_ext import topology
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, ProtocolError
from testbed import topo

from .conftest import PDU_INITIATOR, insmod, offloaded_peers

# a tool's or stock LIO's behaviour, not a kernel difference of ours
pytestmark = pytest.mark.dealt

IQN = "iqn.2026-11.org.cxgbit-ext:gw-layout"
# another target on gateway 2's offloaded portal
NEIGHBOUR = "iqn.2026-11.org.cxgbit-ext:gw-neighbour"
PORTALS = f"{topo.LINKS[0].tgt_ip},{topo.LINKS[1].tgt_ip}"
# layouts made under initiators' retries, how many, how often they check their session
ROUNDS = 8
INITIATORS = 3
POLL_S = 0.2


def cli(*args: str) -> str:
    """``cxgbit-ext ARGS`` in this process (a new Python under TCG takes
    seconds to import rtslib; the scale-out run runs the command itself):
    its exit status must be 0; returns what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cxgbit_cli.main(list(args))
    assert rc == 0, f"cxgbit-ext {' '.join(args)}: {out.getvalue()}{err.getvalue()}"
    return out.getvalue()


@pytest.fixture
def block_dev(lio: None, module_ko: Path) -> Iterator[str]:
    assert insmod(module_ko).returncode == 0
    subprocess.run(["modprobe", "brd", "rd_nr=1", "rd_size=65536"], check=True)
    try:
        yield "/dev/ram0"
    finally:
        with topo.in_netns():
            RTSRoot().clear_existing(confirm=True)
        assert subprocess.run(["rmmod", "brd"]).returncode == 0
        assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0


def what_initiators_see() -> dict[str, object]:
    """Per TPG: enabled, offloaded portals, LUN 0's relative target port id
    (the kernel's SCSI port index), ALUA group; and the device's unit serial
    and ALUA groups with their ids, states and preference."""
    target = next(t for t in FabricModule("iscsi").targets if t.wwn == IQN)
    tpgs = {}
    for tpg in target.tpgs:
        (lun,) = tpg.luns
        rtpi = int((Path(lun.path) / "statistics/scsi_port/indx").read_text())
        tpgs[tpg.tag] = (tpg.enable, sorted(np.ip_address for np in tpg.network_portals if np.offload), rtpi,
                         lun.alua_tg_pt_gp_name)  # fmt: skip
    (so,) = RTSRoot().storage_objects
    groups = {g.name: (g.tg_pt_gp_id, g.alua_access_state, g.alua_access_type, g.preferred) for g in so.alua_tpgs}
    return {"tpgs": tpgs, "wwn": so.wwn, "groups": groups}


def test_layout_survives_save_and_restore(block_dev: str, tmp_path: Path) -> None:
    ours, lio = tmp_path / "cxgbit-ext.json", tmp_path / "saveconfig.json"
    with topo.in_netns():
        cli("gateway", "create", "--iqn", IQN, "--rbd", "rbd/layout", "--portals", PORTALS, "--gateway", "2",
            "--dev", block_dev)  # fmt: skip
        before = what_initiators_see()
        print("laid out:", before)
        # what ceph-iscsi's layout promises: each TPG's port is its gateway's index
        assert {tag: t[2] for tag, t in before["tpgs"].items()} == {1: 1, 2: 2}  # type: ignore[union-attr]
        assert before["groups"]["ao"][1] == 0  # type: ignore[index]
        # beside it, a target whose TPG was never enabled: 6.12 has given it
        # no port id (0), which is no id to restore
        TPG(Target(FabricModule("iscsi"), IQN + "-idle"), 1)
        cli("save", "--file", str(ours), "--lio", str(lio))
        RTSRoot().clear_existing(confirm=True)
        assert not list(FabricModule("iscsi").targets)
        cli("restore", "--file", str(ours), "--lio", str(lio))  # no warning, exit 0
        assert [t.tag for t in Target(FabricModule("iscsi"), IQN + "-idle", mode="lookup").tpgs] == [1]
        after = what_initiators_see()
        print("restored:", after)
        assert after == before
        assert cli("gateway", "create", "--iqn", IQN, "--rbd", "rbd/layout", "--portals", PORTALS, "--gateway", "2",
                   "--dev", block_dev).startswith("already laid out")  # fmt: skip


class RetryingInitiator:
    """One session, as iscsid keeps it: logged in again whenever it cannot
    log in or its connection ends, a NOP-Out every POLL_S to find out."""

    def __init__(self, portal: str, iqn: str = IQN) -> None:
        self.portal, self.iqn = portal, iqn
        self.conn: Connection | None = None
        self.peer = ""
        self.logins = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)  # in the initiator's namespace

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.conn is None:
                try:
                    c = Connection(self.portal, timeout=5)
                except OSError:
                    time.sleep(0.05)
                    continue
                try:
                    c.login(PDU_INITIATOR, self.iqn)
                except (OSError, LoginError, ConnectionClosed, ProtocolError):
                    c.close()
                    time.sleep(0.05)  # refused while the TPG is disabled: again
                    continue
                host, port = c.sock.getsockname()[:2]
                self.conn, self.peer = c, f"{host}:{port}"
                self.logins += 1
                continue
            time.sleep(POLL_S)
            try:
                self.conn.nop()
            except (OSError, ConnectionClosed, ProtocolError):
                self.conn.close()
                self.conn, self.peer = None, ""

    def logged_in(self) -> str:
        """The session's connection (ip:port), or "" while there is none."""
        return self.peer

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        if self.conn is not None:
            self.conn.close()


def test_initiators_retrying_through_the_layout_end_up_offloaded(block_dev: str) -> None:
    """A restarted gateway is laid out while its initiators keep retrying
    their logins: once the layout is made, every initiator's session is on
    the offloaded path, none stays on stock TCP. Another target on the same
    offloaded portal keeps its session through every layout (and every
    disable-and-redo of the gateway's TPG), never logging in again."""
    neighbour_portal = (topo.LINKS[1].tgt_ip, 3260)
    with topo.in_netns():
        topology.create(topology.Topology(iqn=NEIGHBOUR, backstores=("ramdisk",), lun_size=topology.MiB,
                                          portals=(neighbour_portal,), offload=True, name_prefix="nb"))  # fmt: skip
    neighbour = RetryingInitiator(topo.LINKS[1].tgt_ip, NEIGHBOUR)
    neighbour.thread.start()
    stock: list[str] = []
    logins = 0
    try:
        deadline = time.monotonic() + 30
        while not neighbour.logged_in() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert neighbour.logged_in() in offloaded_peers(), "the neighbour target's session is not offloaded"
        for _ in range(ROUNDS):
            initiators = [RetryingInitiator(topo.LINKS[1].tgt_ip) for _ in range(INITIATORS)]  # gateway 2's portal
            for ini in initiators:
                ini.thread.start()
            try:
                with topo.in_netns():
                    cli("gateway", "create", "--iqn", IQN, "--rbd", "rbd/layout", "--portals", PORTALS, "--gateway",
                        "2", "--dev", block_dev)  # fmt: skip
                deadline = time.monotonic() + 60
                while not all(ini.logged_in() for ini in initiators) and time.monotonic() < deadline:
                    time.sleep(0.1)
                peers = [ini.logged_in() for ini in initiators]
                assert all(peers), f"not every initiator could log in once the gateway was laid out: {peers}"
                offloaded = offloaded_peers()
                stock += [p for p in peers if p not in offloaded]
                logins += sum(ini.logins for ini in initiators)
            finally:
                for ini in initiators:
                    ini.close()
            with topo.in_netns():
                cli("gateway", "delete", "--iqn", IQN)
        session = neighbour.logged_in()
        assert neighbour.logins == 1 and session, (
            f"the neighbour target's session was dropped during the layouts ({neighbour.logins} logins)"
        )
    finally:
        neighbour.close()
    print(f"{logins} logins of {INITIATORS} initiators over {ROUNDS} layouts; sessions left on stock TCP: {stock}")
    assert not stock, f"sessions on stock TCP on an offloaded portal: {stock}"
