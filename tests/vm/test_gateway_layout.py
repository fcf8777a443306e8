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
import errno
import io
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rtslib_fb import LUN, TPG, BlockStorageObject, FabricModule, NetworkPortal, RTSRoot, Target

from cxgbit_ext import cli as cxgbit_cli
from cxgbit_ext import portals, topology
from cxgbit_ext.control import HOLD_MAX_S
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, ProtocolError
from testbed import topo

from .conftest import (
    CFS,
    PDU_INITIATOR,
    V6,
    TargetcliShell,
    connection_of,
    initiator_side,
    insmod,
    offloaded_peers,
    soft0_counters,
)

# the tests marked dealt test a tool's or stock LIO's behaviour, not a
# kernel difference of ours; the others run on every kernel

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


@pytest.mark.dealt
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


def test_a_port_id_held_by_another_target_is_refused_by_name(block_dev: str) -> None:
    """From 6.5 on LIO numbers enabled TPGs' ports host-wide: with another
    target enabled on relative port 1, laying out gateway 1 (whose port is
    1 on every gateway) is refused before anything is made, naming the
    holder, not with LIO's bare EINVAL at the enable. Before 6.5 ports are
    per device and the layout is made. A kernel difference: every kernel."""
    other = IQN + "-other"
    args = ("gateway", "create", "--iqn", IQN, "--rbd", "rbd/held", "--portals", PORTALS, "--gateway", "1",
            "--dev", block_dev)  # fmt: skip
    with topo.in_netns():
        tpg = TPG(Target(FabricModule("iscsi"), other), 1)
        NetworkPortal(tpg, topo.LINKS[1].tgt_ip, 3261)
        tpg.enable = True
        rtpi = Path(tpg.path) / "rtpi"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cxgbit_cli.main(list(args))
        print(out.getvalue(), err.getvalue())
        if not rtpi.exists():
            assert rc == 0 and IQN in [t.wwn for t in FabricModule("iscsi").targets]
            return
        assert int(rtpi.read_text(), 0) == 1
        assert rc != 0
        assert f"iscsi {other} tpgt_1 holds it" in err.getvalue()
        assert [t.wwn for t in FabricModule("iscsi").targets] == [other]
        assert not any(so.name == "rbd.held" for so in RTSRoot().storage_objects)


@pytest.mark.dealt
def test_a_layout_on_v6_portals(block_dev: str, v6_addresses: None) -> None:
    """IPv6 portals given bare, as an admin types them: gateway 1's portal is
    offloaded and serves I/O, and the same command again finds its own
    layout ("already laid out") rather than another one."""
    on, other = V6[topo.LINKS[0]][1], V6[topo.LINKS[1]][1]
    args = ("gateway", "create", "--iqn", IQN, "--rbd", "rbd/v6", "--portals", f"{on},{other}", "--gateway", "1",
            "--dev", block_dev)  # fmt: skip
    with topo.in_netns():
        print(cli(*args))
        assert what_initiators_see()["tpgs"][1][1] == [f"[{on}]"]  # type: ignore[index]
    c = Connection(on, timeout=30)
    try:
        c.login(PDU_INITIATOR, IQN)
        assert connection_of(initiator_side(c)) is not None, f"a login to [{on}]:3260 was not offloaded"
        data = os.urandom(16384)
        c.scsi_write(0, data)
        assert c.scsi_read(0, len(data) // 512) == data
    finally:
        c.close()
    with topo.in_netns():
        assert cli(*args).startswith("already laid out")


class RetryingInitiator:
    """One session, as iscsid keeps it: logged in again whenever it cannot
    log in or its connection ends, a NOP-Out every POLL_S to find out."""

    def __init__(self, portal: str, iqn: str = IQN, timeout: float = 5) -> None:
        self.portal, self.iqn, self.timeout = portal, iqn, timeout
        self.conn: Connection | None = None
        self.peer = ""
        self.logins = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)  # in the initiator's namespace

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.conn is None:
                try:
                    c = Connection(self.portal, timeout=self.timeout)
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
        if self.thread.ident is not None:  # started
            self.thread.join(30)
        if self.conn is not None:
            self.conn.close()


@pytest.mark.dealt
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
    # none reached stock, so no TPG had to be disabled again under its sessions
    assert logins == ROUNDS * INITIATORS, f"{logins} logins: sessions were dropped after their login"


@pytest.mark.dealt
@pytest.mark.parametrize("how", ["enable_tpg", "targetcli"])
def test_a_login_handed_to_stock_before_the_enable_stays_off_it(block_dev: str, tmp_path: Path, how: str) -> None:
    """A login for a target whose TPG is still disabled, handed to the stock
    portal but not read there yet (its login thread is busy with another
    connection, as it is for up to a login timeout with an initiator that
    sends nothing), must not become a stock session when the stock portal
    reads it after the TPG's enable: the enable resets it, the initiator
    logs in again and ends on the offloaded portal. The stalled stock
    connection, there before the enable, is reported and left alone; a
    neighbour target's session on the same portal goes on. The enable is
    the library's (as gateway create, topology create and restore make
    it) or targetcli-offload's ``enable`` command."""
    ip = topo.LINKS[1].tgt_ip
    with topo.in_netns():
        topology.create(topology.Topology(iqn=NEIGHBOUR, backstores=("ramdisk",), lun_size=topology.MiB,
                                          portals=((ip, 3260),), offload=True, name_prefix="nb"))  # fmt: skip
        target = Target(FabricModule("iscsi"), IQN)
        tpg = TPG(target, 1)
        for name, value in (("authentication", "0"), ("generate_node_acls", "1"),
                            ("demo_mode_write_protect", "0"), ("cache_dynamic_acls", "1")):  # fmt: skip
            tpg.set_attribute(name, value)
        LUN(tpg, 0, storage_object=BlockStorageObject("stalled", dev=block_dev))
        portals.set_offload(NetworkPortal(tpg, ip, 3260), True)
        # built before the stall: LIO's login timeout (15 s) ends it
        sh = TargetcliShell(tmp_path / "tcli") if how == "targetcli" else None
    neighbour = RetryingInitiator(ip, NEIGHBOUR)
    neighbour.thread.start()
    initiator = RetryingInitiator(ip, timeout=60)  # its first login waits behind the stalled one
    staller = None
    try:
        deadline = time.monotonic() + 30
        while not neighbour.logged_in() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert neighbour.logged_in() in offloaded_peers(), "the neighbour target's session is not offloaded"
        # a connection straight to the stock listener that sends nothing:
        # the stock portal's login thread waits for its first PDU
        netdev = CFS / "adapters/soft0/netdev"
        served = netdev.read_text().strip()
        netdev.write_text("\n")  # none (an empty write never reaches the kernel)
        try:
            staller = Connection(ip, timeout=60)
        finally:
            netdev.write_text(served)
        stalled = "{}:{}".format(*staller.sock.getsockname()[:2])
        assert stalled not in offloaded_peers()
        handed = soft0_counters()["handed_back"]
        initiator.thread.start()
        deadline = time.monotonic() + 30
        while soft0_counters()["handed_back"] == handed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert soft0_counters()["handed_back"] > handed, "the login was not handed to the stock portal"
        with topo.in_netns():
            if sh is None:
                held = portals.enable_tpg(Path(tpg.path), timeout=3)
            else:
                out = sh.run(f"/iscsi/{IQN}/tpg1 enable")
                assert "The TPGT has been enabled." in out, out
                held = [stalled] if f"connection(s) on its offloaded portal: {stalled};" in out else [out]
        # the stock portal's login thread moves on to what is queued behind
        staller.close()
        staller = None
        deadline = time.monotonic() + 60
        while not initiator.logged_in() and time.monotonic() < deadline:
            time.sleep(0.1)
        session = initiator.logged_in()
        assert session, "the initiator could not log in once the TPG was enabled"
        time.sleep(1)  # a stock session made from the stale login would show by now
        assert initiator.logged_in() == session and session in offloaded_peers(), (
            f"the session {session} is on stock TCP ({initiator.logins} logins)"
        )
        assert initiator.logins == 1
        assert held == [stalled], f"enable_tpg reported {held}, not the stalled stock connection {stalled}"
        assert neighbour.logins == 1 and neighbour.logged_in(), "the neighbour target's session was dropped"
        if sh is not None:  # a TPG made in targetcli gets the same enable
            with topo.in_netns():
                for line in ("set global auto_enable_tpgt=false auto_add_default_portal=false",
                             f"/iscsi/{IQN} create 2"):  # fmt: skip
                    sh.run(line)
                assert "The TPGT has been enabled." in sh.run(f"/iscsi/{IQN}/tpg2 enable")
                assert sorted((t.tag, t.enable) for t in target.tpgs) == [(1, True), (2, True)]
    finally:
        initiator.close()
        neighbour.close()
        if staller is not None:
            staller.close()


@pytest.mark.dealt
def test_a_held_target_is_answered_on_the_offloaded_portal(block_dev: str) -> None:
    """login_holds: while a target is held, a login LIO refuses for it on
    the offloaded portal (its TPG is disabled) is refused there, as the
    stock portal would refuse it, and not handed over; once the hold ends
    it is handed over again. Bad writes are refused and change nothing."""
    ip = topo.LINKS[1].tgt_ip
    holds = CFS / "login_holds"
    with topo.in_netns():
        target = Target(FabricModule("iscsi"), IQN)
        tpg = TPG(target, 1)
        tpg.set_attribute("authentication", "0")
        portals.set_offload(NetworkPortal(tpg, ip, 3260), True)

    def login() -> str:
        c = Connection(ip, timeout=30)
        try:
            c.login(PDU_INITIATOR, IQN)
        except LoginError as e:
            return str(e)
        finally:
            c.close()
        raise AssertionError("a login to a disabled TPG succeeded")

    # among them one second past the longest hold: the tools' HOLD_MAX_S is the module's
    for bad in (f"{IQN}\n", f"{IQN} {HOLD_MAX_S + 1}\n", f"{IQN} -1\n", " 5\n", "x" * 224 + " 5\n"):
        with pytest.raises(OSError) as e:
            holds.write_text(bad)
        assert e.value.errno == errno.EINVAL, bad
    with pytest.raises(OSError) as e:
        holds.write_text(f"{IQN} 0\n")  # not held
    assert e.value.errno == errno.ENOENT
    assert holds.read_text() == ""
    before = soft0_counters()
    holds.write_text(f"{IQN} 60\n")
    (line,) = holds.read_text().splitlines()
    name, ms = line.split()
    assert name == IQN and 55_000 < int(ms) <= 60_000
    held = login()
    after = soft0_counters()
    assert after["logins_held"] == before["logins_held"] + 1
    assert after["handed_back"] == before["handed_back"]
    holds.write_text(f"{IQN} 0\n")
    assert holds.read_text() == ""
    stock = login()
    assert soft0_counters()["handed_back"] == after["handed_back"] + 1
    # the same refusal either way: the initiator cannot tell where it came from
    assert held == stock, (held, stock)
