"""Reservations shared by gateways, the module's half (spr.c), on one
gateway: gateway 1 of 2 laid out by `cxgbit-ext gateway create
--reservations`, which links both its TPGs into reservations/, and this
test in the agent's place on /dev/cxgbit_ext_pr. What must hold, anchored to LIO's own emulation:

- a PERSISTENT RESERVE OUT applied through an internal nexus on the remote
  gateway's TPG (an initiator logged in to gateway 2) is held and enforced
  here: the reservation shows in PERSISTENT RESERVE IN, and a write through
  the offloaded portal gets RESERVATION CONFLICT;
- one received here waits for the agent: nothing changes until the agent
  says run, and the command then gets LIO's answer; fail, or the agent
  closing, fails it with NOT READY and nothing changes;
- with no agent a sharing target's PERSISTENT RESERVE OUT fails, and a
  target that does not share keeps LIO's own;
- a linked TPG serves no command that reads or changes the logical unit
  (NOT READY, ASYMMETRIC ACCESS STATE TRANSITION, as LIO answers in that
  ALUA state) until the agent says it serves, which it says once it has
  applied the cluster's log, and again once the agent holds or goes: a
  gateway that may have missed another gateway's reservation must not let
  a write by it. A neighbour target on the same offloaded portal is never
  held. A gateway restored from its save files (`cxgbit-ext restore`) is
  held from the moment its TPG is enabled.

The backstore is a RAM disk (brd) standing for the mapped RBD image."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from rtslib_fb import RTSRoot

from iscsi_initiator import pr
from iscsi_initiator.session import Connection, ScsiError
from testbed import topo

from .conftest import CFS, TOP, insmod, offloaded_peers
from .test_gateway_layout import cli

IQN = "iqn.2026-11.org.cxgbit-ext:spr"
PORTALS = f"{topo.LINKS[0].tgt_ip},{topo.LINKS[1].tgt_ip}"
NODE_A, NODE_B = "iqn.2026-11.org.cxgbit-ext:node-a", "iqn.2026-11.org.cxgbit-ext:node-b"
B_ISID = "23d000000002"  # node B's session on gateway 2
DEV = "/dev/cxgbit_ext_pr"
LINKS = CFS / "reservations"
TPGS = Path("/sys/kernel/config/target/iscsi") / IQN
# LIO's sense_reason_t values the agent reads back (target_core_base.h)
TCM_UNSUPPORTED_SCSI_OPCODE, TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE = 0x02, 0x0A
TUR = bytes(6)
# NOT READY, LOGICAL UNIT NOT ACCESSIBLE, ASYMMETRIC ACCESS STATE TRANSITION
HELD = (2, (0x04, 0x0A))
# how long a serve lasts, the module's rule
LEASE_S = int(re.search(r"#define CXE_SPR_LEASE_S\s+(\d+)", (TOP / "kmod/cxgbit-ext/pdu/cxe_spr.h").read_text())[1])
NEIGHBOUR = "iqn.2026-11.org.cxgbit-ext:neighbour"


class Agent:
    """The agent's side of the channel: lines in, lines out."""

    def __init__(self) -> None:
        self.fd = os.open(DEV, os.O_RDWR | os.O_NONBLOCK)
        self.buf = b""
        self.renewing: threading.Event | None = None

    def serve(self, iqn: str = IQN) -> None:
        """Serve iqn, renewed every second (the module's lease is 3 s), as
        the agent does while its watch of the log is live."""
        self.say(f"serve {iqn}")
        self.stop_renewing()
        stop = self.renewing = threading.Event()

        def renew() -> None:
            while not stop.wait(1):
                with contextlib.suppress(OSError):
                    self.say(f"serve {iqn}")

        threading.Thread(target=renew, daemon=True).start()

    def stop_renewing(self) -> None:
        if self.renewing is not None:
            self.renewing.set()
            self.renewing = None

    def hold(self, iqn: str = IQN) -> None:
        self.stop_renewing()
        self.say(f"hold {iqn}")

    def line(self, timeout: float = 20) -> str:
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"no line from the module within {timeout} s")
            self.buf += os.read(self.fd, 65536)
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def quiet(self, seconds: float = 1) -> bool:
        return not self.buf and not select.select([self.fd], [], [], seconds)[0]

    def say(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def done(self, tag: int) -> str:
        """The result of run or apply ``tag``: LIO's sense reason, or gone."""
        verb, got, ret = self.line().split()
        assert (verb, int(got)) == ("done", tag)
        return ret

    def apply(self, tag: int, initiator: str, isid: str, tpgt: int, cdb: bytes, param: bytes) -> str:
        self.say(f"apply {tag} {IQN} {tpgt} 0 {initiator} {isid} {cdb.hex()} {param.hex() or '-'}")
        return self.done(tag)

    def close(self) -> None:
        self.stop_renewing()
        os.close(self.fd)


@pytest.fixture
def gateway(lio: None, module_ko: Path) -> Iterator[None]:
    assert insmod(module_ko).returncode == 0
    subprocess.run(["modprobe", "brd", "rd_nr=2", "rd_size=16384"], check=True)
    try:
        with topo.in_netns():
            cli("gateway", "create", "--iqn", IQN, "--rbd", "rbd/spr", "--portals", PORTALS, "--gateway", "1",
                "--dev", "/dev/ram0", "--reservations")  # fmt: skip
        assert sorted(p.name for p in LINKS.iterdir()) == [f"{IQN}:tpgt_1", f"{IQN}:tpgt_2"]
        yield
    finally:
        for link in LINKS.glob("*"):
            link.unlink()
        with topo.in_netns():
            RTSRoot().clear_existing(confirm=True)
        assert subprocess.run(["rmmod", "brd"]).returncode == 0
        assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0


@pytest.fixture
def agent(gateway: None) -> Iterator[Agent]:
    a = Agent()
    a.serve()
    try:
        yield a
    finally:
        a.close()


def node_a() -> Connection:
    """Node A logged in to this gateway's offloaded portal."""
    c = Connection(topo.LINKS[0].tgt_ip, timeout=60)
    c.login(NODE_A, IQN)
    port = c.sock.getsockname()[1]
    peers = offloaded_peers()
    assert any(p.endswith(f":{port}") for p in peers), f"node A's login (port {port}) was not offloaded: {peers}"
    return c


def conflict(c: Connection) -> bool:
    """Whether a write through c gets RESERVATION CONFLICT (else it succeeds)."""
    return pr.write_refused(c, 8)


def test_a_remote_nexus_reservation_is_held_and_enforced_here(agent: Agent) -> None:
    # node B, logged in to gateway 2, registers and reserves there
    reg = pr.out_params(0, 0xB0B)
    assert agent.apply(1, NODE_B, B_ISID, 2, pr.out_cdb(pr.REGISTER), reg) == "0"
    rsv = pr.out_params(0xB0B)
    assert agent.apply(2, NODE_B, B_ISID, 2, pr.out_cdb(pr.RESERVE, pr.WRITE_EXCLUSIVE), rsv) == "0"
    a = node_a()
    try:
        generation, keys = pr.read_keys(a)
        assert keys == [0xB0B] and generation == 1, (generation, keys)
        assert pr.read_reservation(a) == pr.Reservation(1, 0xB0B, pr.WRITE_EXCLUSIVE)
        assert conflict(a), "node A wrote past node B's Write Exclusive reservation"
        a.scsi_read(8, 8)  # Write Exclusive lets others read
        # LIO's emulation answers an internal nexus as any: a RESERVE by a
        # node that is not registered fails (LIO answers it LOGICAL UNIT
        # COMMUNICATION FAILURE, target_core_pr.c) and changes nothing
        foreign = pr.out_cdb(pr.RESERVE, pr.WRITE_EXCLUSIVE)
        got = agent.apply(3, NODE_A, "23d000000009", 2, foreign, pr.out_params(0x99))
        assert got == str(TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE)
        assert pr.read_reservation(a).key == 0xB0B
        # node B releases and unregisters: node A writes again
        assert agent.apply(4, NODE_B, B_ISID, 2, pr.out_cdb(pr.RELEASE, pr.WRITE_EXCLUSIVE), rsv) == "0"
        assert agent.apply(5, NODE_B, B_ISID, 2, pr.out_cdb(pr.REGISTER), pr.out_params(0xB0B, 0)) == "0"
        assert pr.read_keys(a)[1] == []
        assert not conflict(a)
    finally:
        a.close()


def test_register_and_move_through_a_remote_nexus(agent: Agent) -> None:
    """Node B, the holder through gateway 2, moves its reservation to node
    A's I_T nexus through gateway 1 (relative port 1, as gateway create
    pins it): A holds it here and writes. A's nexus is registered first:
    LIO's REGISTER AND MOVE to a nexus that is not puts a device entry's
    reference twice, stock or not (upstream/0013-*)."""
    a = node_a()
    try:
        reg = pr.out_params(0, 0xB0B)
        assert agent.apply(1, NODE_B, B_ISID, 2, pr.out_cdb(pr.REGISTER), reg) == "0"
        assert agent.apply(4, NODE_A, a.isid.hex(), 1, pr.out_cdb(pr.REGISTER), pr.out_params(0, 0xA01)) == "0"
        assert (
            agent.apply(2, NODE_B, B_ISID, 2, pr.out_cdb(pr.RESERVE, pr.WRITE_EXCLUSIVE), pr.out_params(0xB0B)) == "0"
        )
        assert conflict(a)
        move = pr.move_params(0xB0B, 0xA0A, 1, pr.iscsi_port_id(NODE_A, a.isid))
        got = agent.apply(3, NODE_B, B_ISID, 2, pr.out_cdb(pr.REGISTER_AND_MOVE, pr.WRITE_EXCLUSIVE, len(move)), move)
        assert got == "0", f"LIO's sense reason {got}"
        held = pr.read_reservation(a)
        assert (held.key, held.rtype) == (0xA0A, pr.WRITE_EXCLUSIVE), held
        # A's key is the move's; B stays registered (UNREG 0)
        assert sorted(pr.read_keys(a)[1]) == [0xA0A, 0xB0B]
        assert not conflict(a), "node A, the reservation's new holder, was refused"
    finally:
        a.close()


def test_a_local_prout_waits_for_the_agent(agent: Agent) -> None:
    a, watcher = node_a(), node_a()
    pool = ThreadPoolExecutor(1)
    try:
        pending: Future[None] = pool.submit(pr.prout, a, pr.REGISTER, 0, 0xA0A)
        words = agent.line().split()
        assert words[0] == "out" and words[2:] == [
            IQN, "1", "0", NODE_A, a.isid.hex(), pr.out_cdb(pr.REGISTER).hex(), pr.out_params(0, 0xA0A).hex()
        ], words  # fmt: skip
        time.sleep(1)
        assert not pending.done(), "the PERSISTENT RESERVE OUT completed before the agent said run"
        assert pr.read_keys(watcher) == (0, []), "the registration was made before the agent said run"
        agent.say(f"run {words[1]} 7")
        assert agent.done(7) == "0"
        pending.result(timeout=30)
        assert pr.read_keys(watcher) == (1, [0xA0A])
        # the agent fails one: NOT READY, LOGICAL UNIT COMMUNICATION FAILURE, nothing changed
        pending = pool.submit(pr.prout, a, pr.REGISTER_AND_IGNORE, 0, 0xA0B)
        words = agent.line().split()
        agent.say(f"fail {words[1]}")
        with pytest.raises(ScsiError) as e:
            pending.result(timeout=30)
        assert (e.value.sense_key, e.value.asc_ascq) == (2, (0x08, 0x00)), e.value
        assert pr.read_keys(watcher) == (1, [0xA0A])
        # run or fail of a request no longer waiting
        agent.say(f"run {words[1]} 8")
        assert agent.done(8) == "gone"
        with pytest.raises(OSError):
            agent.say(f"fail {words[1]}")
    finally:
        pool.shutdown(wait=False)
        a.close()
        watcher.close()


def test_malformed_agent_lines_are_refused_and_change_nothing(agent: Agent) -> None:
    for bad in ("", "run 1", "apply 1 x", f"apply 1 {IQN} 2 0 {NODE_B} {B_ISID} 5f00 -", "stop\n"):
        with pytest.raises(OSError):
            agent.say(bad or "\n")
    # an apply on a TPG not linked, or of another command than PERSISTENT RESERVE OUT
    params = pr.out_params(0, 1)
    assert agent.apply(1, NODE_B, B_ISID, 3, pr.out_cdb(pr.REGISTER), params) != "0"
    inquiry = bytes.fromhex("12000000ff0000000000")
    assert agent.apply(2, NODE_B, B_ISID, 2, inquiry, b"") == str(TCM_UNSUPPORTED_SCSI_OPCODE)
    with pytest.raises(OSError):
        Agent()  # one agent at a time
    a = node_a()
    try:
        assert pr.read_keys(a) == (0, [])
    finally:
        a.close()


def test_without_an_agent_a_sharing_target_refuses_and_others_keep_lio(gateway: None) -> None:
    a = node_a()
    try:
        agent = Agent()
        try:
            agent.serve()
            pool = ThreadPoolExecutor(1)
            pending: Future[None] = pool.submit(pr.prout, a, pr.REGISTER, 0, 0xA0A)
            assert agent.line().startswith("out ")
        finally:
            agent.close()  # the agent goes with a command waiting
        with pytest.raises(ScsiError) as e:
            pending.result(timeout=30)
        assert (e.value.sense_key, e.value.asc_ascq) == (2, (0x08, 0x00)), e.value
        pool.shutdown()
        with pytest.raises(ScsiError) as e:
            pr.prout(a, pr.REGISTER, 0, 0xA0A)
        assert (e.value.sense_key, e.value.asc_ascq) == HELD, e.value
        # unlinked, the target keeps LIO's own reservations, no agent needed
        for link in LINKS.glob("*"):
            link.unlink()
        assert pr.read_keys(a) == (0, [])
        pr.prout(a, pr.REGISTER, 0, 0xA0A)
        assert pr.read_keys(a) == (1, [0xA0A])
    finally:
        a.close()


def held(command: Callable[[], object]) -> bool:
    """Whether command() is held (NOT READY 04h/0Ah) rather than served;
    any other error fails the test."""
    try:
        command()
    except ScsiError as e:
        assert (e.sense_key, e.asc_ascq) == HELD, e
        return True
    return False


def io_held(c: Connection) -> dict[str, bool]:
    """Each kind of command through c: held (True) or served."""
    got = {
        "tur": held(lambda: c.scsi_in(TUR, 0)),
        "read": held(lambda: c.scsi_in(bytes.fromhex("28000000000000000100"), 512)),
        "write": held(lambda: c.scsi_write(16, os.urandom(512))),
        "prin": held(lambda: pr.read_keys(c)),
    }
    # what a path checker and ALUA's handler ask is answered in any state
    c.scsi_in(bytes.fromhex("120000006000"), 96)  # INQUIRY
    c.scsi_in(bytes.fromhex("a30a00000000000002000000"), 512)  # REPORT TARGET PORT GROUPS
    return got


@pytest.fixture
def neighbour(gateway: None) -> Iterator[None]:
    """Another target on gateway 1's offloaded portal, not sharing."""
    from rtslib_fb import LUN, TPG, BlockStorageObject, FabricModule, NetworkPortal, Target

    from cxgbit_ext import portals

    with topo.in_netns():
        so = BlockStorageObject("neighbour", dev="/dev/ram1")
        tpg = TPG(Target(FabricModule("iscsi"), NEIGHBOUR), 1)
        tpg.set_attribute("authentication", "0")
        tpg.set_attribute("generate_node_acls", "1")
        tpg.set_attribute("demo_mode_write_protect", "0")
        LUN(tpg, 0, storage_object=so)
        portals.set_offload(NetworkPortal(tpg, topo.LINKS[0].tgt_ip, 3260), True)
        assert portals.enable_tpg(Path(tpg.path)) == []
    yield


def test_a_sharing_target_serves_only_while_its_agent_serves(neighbour: None) -> None:
    a = node_a()
    other = Connection(topo.LINKS[0].tgt_ip, timeout=60)
    other.login(NODE_B, NEIGHBOUR)
    everything_held = {"tur": True, "read": True, "write": True, "prin": True}
    served = dict.fromkeys(everything_held, False)
    try:
        port = other.sock.getsockname()[1]
        assert any(p.endswith(f":{port}") for p in offloaded_peers()), "the neighbour's login was not offloaded"
        assert io_held(a) == everything_held, "a linked TPG served with no agent"
        with pytest.raises(ScsiError) as e:
            pr.prout(a, pr.REGISTER, 0, 0xA0A)
        assert (e.value.sense_key, e.value.asc_ascq) == HELD, e.value
        assert io_held(other) == served, "the neighbour target was held"
        agent = Agent()
        try:
            assert io_held(a) == everything_held, "served before the agent said so"
            assert agent.quiet(), "a held PERSISTENT RESERVE OUT reached the agent"
            for bad in (f"serve {NEIGHBOUR}", "serve", f"serve {IQN} 1", f"hold {NEIGHBOUR}"):
                with pytest.raises(OSError):
                    agent.say(bad)
            agent.serve()
            assert io_held(a) == served
            agent.hold()
            assert io_held(a) == everything_held
            assert io_held(other) == served
            agent.serve()
            assert io_held(a) == served
            # an agent that stops renewing (hung, or its watch stale) is held once the lease runs out
            agent.stop_renewing()
            time.sleep(LEASE_S + 1)
            assert io_held(a) == everything_held, "served on past the lease"
            agent.serve()
            assert io_held(a) == served
        finally:
            agent.close()
        assert io_held(a) == everything_held, "served after its agent went"
        assert io_held(other) == served
        # a TPG linked while the agent serves starts held: the agent has
        # not said it applied that target's log
        agent = Agent()
        try:
            agent.serve()
            assert io_held(a) == served
            (LINKS / f"{IQN}:tpgt_1").unlink()
            (LINKS / "gw1").symlink_to(TPGS / "tpgt_1")
            assert io_held(a) == everything_held, "a TPG linked anew served at once"
            agent.serve()
            assert io_held(a) == served
        finally:
            agent.close()
    finally:
        a.close()
        other.close()


@pytest.mark.dealt  # the links made again are user space's; the hold is the test above's
def test_a_restored_gateway_is_held_until_its_agent_serves(gateway: None, tmp_path: Path) -> None:
    saved = ("--file", str(tmp_path / "cxgbit-ext.json"), "--lio", str(tmp_path / "saveconfig.json"))
    with topo.in_netns():
        cli("save", *saved)
        assert json.loads((tmp_path / "cxgbit-ext.json").read_text())["reservations"] == [IQN]
        # a restore clears LIO first (the links go with it), as after a reboot
        cli("restore", *saved)
        assert "reservations shared by the gateways" in cli("gateway", "show", "--iqn", IQN)
    assert sorted(p.name for p in LINKS.iterdir()) == [f"{IQN}:tpgt_1", f"{IQN}:tpgt_2"]
    a = node_a()
    try:
        assert io_held(a) == {"tur": True, "read": True, "write": True, "prin": True}, "served before its agent"
        agent = Agent()
        try:
            agent.serve()
            assert io_held(a) == {"tur": False, "read": False, "write": False, "prin": False}
        finally:
            agent.close()
    finally:
        a.close()
