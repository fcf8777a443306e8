"""The cxgb4 stand-in (tests/kmod/cxgb4sim), with mainline cxgbit as the oracle.

cxgb4sim exports the cxgb4 symbols Debian's cxgbit.ko and ours import, with
cxgb4.ko's symbol versions (the build checks them), and presents a T6 whose
ports are netdevs c4sim0.. wired to peers c4peer0..; what crosses the API
is recorded in /sys/kernel/debug/cxgb4sim/trace. What holds so far:

- Debian's own cxgbit.ko loads on it and attaches to its adapter (its
  ``add`` takes the lld info, the state goes UP), and a portal on a port's
  address switched to cxgbit makes it listen: a server request on the
  control path, the reply on its first response queue; switched back, the
  server is closed; cxgbit unloads cleanly.
- cxgbit_ext's cxgb4 backend (cxgbit_ext_cxgb4, cxgb4_hw=1), through its real glue, does the
  same on the same portal: the same requests with the same fields and
  queues, in the same order, as mainline's.
- A connection from the peer for the listening portal: its SYN is the
  chip's (CPL_PASS_ACCEPT_REQ, the frame in a free-list buffer), answered
  by the ULD's accept reply through its L2T entry; the chip's TCP (the
  host's, sim_tcp.c) completes the handshake (CPL_PASS_ESTABLISH), the
  peer closes, the ULD closes and releases the TID. Mainline's sequence,
  queues and accept-reply fields are the reference ours is compared with;
  the stand-in reports no error for mainline's.
- Whole sessions: open-iscsi (reaching the port over the wire through a
  VRF, since it and mainline's ports live in the initial namespace) logs
  in with both digests and fio verifies R2T writes placed through page
  pods and reads the chip cuts (ISO), through mainline cxgbit and through
  ours; the stand-in refuses nothing of either.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from iscsi_initiator import iscsiadm
from testbed import fio, topo
from testbed.kmod import CXGB4_BACKEND, backend_ko

from . import c4sim
from .c4sim import chip_errors, rmmod, sh, stats, trace
from .conftest import CFS, cxgb4_adapter, debug_kernel, dmesg_since, insmod, kmsg_mark, lio_clear, lun_disk

SIM_IP, PEER_IP, PEER_NS, PORT = c4sim.LINK.tgt_ip, c4sim.LINK.ini_ip, "c4ini", 3260
IFACE = "c4peer"
IQN = "iqn.2026-11.org.cxgbit-ext:c4sim"
TARGET = Path("/sys/kernel/config/target/iscsi")


@pytest.fixture
def stand_in(request: pytest.FixtureRequest, kver: str, lio: None) -> Iterator[None]:
    """cxgb4sim and libcxgb loaded (cxgb4 not), c4sim0 up at SIM_IP in this
    namespace (mainline cxgbit finds its ports in the initial one); a T6,
    or the chip a test's parameter names: in make test only this kernel's
    (c4sim.chip_runs_here), and the oracle's runs (marked ``oracle``) only
    in make cxgb4-test."""
    if request.node.get_closest_marker("oracle"):
        c4sim.cxgb4_test_only(request.config, "mainline cxgbit's session")
    if hasattr(request, "param"):
        c4sim.chip_runs_here(request.config, request.param)
    with c4sim.stand_in(kver, getattr(request, "param", "t6")):
        yield


@pytest.fixture
def peer_ns(stand_in: None) -> Iterator[None]:
    """The wire's other end, c4peer0, in netns c4ini at PEER_IP."""
    try:
        sh("ip", "netns", "add", PEER_NS)
        sh("ip", "link", "set", "c4peer0", "netns", PEER_NS)
        sh("ip", "-n", PEER_NS, "link", "set", "c4peer0", "up")
        sh("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/24", "dev", "c4peer0")
        sh("ip", "netns", "exec", PEER_NS, "ping", "-c1", "-W5", SIM_IP)
        yield
    finally:
        subprocess.run(["ip", "netns", "del", PEER_NS], capture_output=True)


@pytest.fixture
def peer_vrf(stand_in: None) -> Iterator[None]:
    """The wire's other end, c4peer0, at PEER_IP in VRF c4vrf of this
    namespace (c4sim.peer_vrf), with open-iscsi's iface c4peer bound to it:
    open-iscsi's kernel initiator and mainline cxgbit's ports both live in
    the initial namespace only."""
    with c4sim.peer_vrf():
        iscsiadm.iface_bind(IFACE, "c4peer0")
        try:
            yield
        finally:
            iscsiadm.logout()
            iscsiadm.delete_nodes()
            iscsiadm.iface_delete(IFACE)


@contextmanager
def portal(addr: str = f"{SIM_IP}:{PORT}") -> Iterator[Path]:
    """A target with a portal on addr (its np directory), removed after;
    made in the calling thread's network namespace, as LIO makes it."""
    tpg = TARGET / IQN / "tpgt_1"
    np = tpg / "np" / addr
    np.mkdir(parents=True)
    try:
        yield np
    finally:
        np.rmdir()
        tpg.rmdir()
        (TARGET / IQN).rmdir()


def c4sim_adapter() -> dict[str, str]:
    """The cxgb4 backend's words on the stand-in's adapter (backends file)."""
    return cxgb4_adapter(c4sim.ADAPTER)


def numbered(lines: list[str], prefix: str) -> list[str]:
    """The lines with each TID or server TID named by order of appearance
    (the ULDs number them differently)."""
    seen: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return f"{m.group(1)}={prefix}{seen.setdefault(m.group(2), str(len(seen)))}"

    return [re.sub(r"\b(stid|tid)=(\d+)", name, ln) for ln in lines]


def portal_listen_trace() -> list[str]:
    """The portal switched to cxgbit and back: the server lines of the trace
    meanwhile, numbered."""
    before = len(trace())
    with portal() as np:
        (np / "cxgbit").write_text("1")
        assert (np / "cxgbit").read_text().strip() == "1"
        (np / "cxgbit").write_text("0")
    return numbered([ln for ln in trace()[before:] if re.match(r"(tx ctrl|rx q=)", ln)], "S")


MAINLINE_LISTEN = [
    f"tx ctrl CPL_PASS_OPEN_REQ stid=S0 ip={SIM_IP} port={PORT} queue=64",
    "rx q=64 CPL_PASS_OPEN_RPL tid=S0",
    "tx ctrl CPL_CLOSE_LISTSRV_REQ stid=S0 queue=64 ipv6=0",
    "rx q=64 CPL_CLOSE_LISTSRV_RPL tid=S0",
]


def test_mainline_cxgbit_attaches_and_listens(stand_in: None, kver: str) -> None:
    mark = kmsg_mark("cxgbit on cxgb4sim")
    sh("modprobe", "iscsi_target_mod")
    sh("insmod", str(c4sim.intree_cxgbit(kver)))
    try:
        assert "uld add cxgbit: state UP" in trace(), trace()
        log = dmesg_since(mark)
        assert any("cdev 0000:c4:00.4 added for iSCSI target transport" in ln for ln in log), (
            "cxgbit did not take the stand-in's adapter:\n" + "\n".join(log)
        )
        assert portal_listen_trace() == MAINLINE_LISTEN, trace()
    finally:
        rmmod("cxgbit")
    assert trace()[-1] == "uld unregister cxgbit"


def load_ours(module_ko: Path) -> None:
    """cxgbit_ext, then its cxgb4 backend with cxgb4_hw=1, their
    dependencies but cxgb4 (the stand-in exports its symbols) loaded first."""
    p = insmod(module_ko)
    assert p.returncode == 0, f"insmod {module_ko}: {p.stderr}"
    p = insmod(backend_ko(module_ko), "cxgb4_hw=1", provided=("cxgb4", "cxgbit_ext"))
    assert p.returncode == 0, f"insmod {backend_ko(module_ko)}: {p.stderr}"


def unload_ours() -> None:
    rmmod(CXGB4_BACKEND)
    rmmod("cxgbit_ext")


def test_ours_listens_as_mainline_does(stand_in: None, module_ko: Path) -> None:
    load_ours(module_ko)
    try:
        assert f"uld add {CXGB4_BACKEND}: state UP" in trace(), trace()
        backends = (CFS / "backends").read_text()
        assert "0000:c4:00.4=T6/" in backends, backends
        assert portal_listen_trace() == MAINLINE_LISTEN, "\n".join(trace())
    finally:
        unload_ours()
    assert trace()[-1] == f"uld unregister {CXGB4_BACKEND}"


def test_the_backend_serves_a_portal_made_before_it_and_leaves_it(stand_in: None, module_ko: Path) -> None:
    """A portal offloaded before the backend's module loads gets its
    server on the chip when it loads. Unloaded with the portal live, the
    backend closes that server, the chip answering, before it leaves
    cxgb4's ULD slot; the portal stays with the core, and a reload serves
    it again."""
    p = insmod(module_ko)
    assert p.returncode == 0, p.stderr
    backend = backend_ko(module_ko)
    try:
        with portal() as np:
            (np / "cxgbit").write_text("1")
            for _ in range(2):
                before = len(trace())
                p = insmod(backend, "cxgb4_hw=1", provided=("cxgb4", "cxgbit_ext"))
                assert p.returncode == 0, p.stderr
                opened = [ln for ln in trace()[before:] if "CPL_PASS_OPEN_REQ" in ln]
                assert len(opened) == 1 and f"ip={SIM_IP} " in opened[0], trace()[before:]
                assert c4sim_adapter()["servers"] == "1"
                before = len(trace())
                rmmod(CXGB4_BACKEND)
                gone = trace()[before:]
                steps = ("CPL_CLOSE_LISTSRV_REQ", "CPL_CLOSE_LISTSRV_RPL", f"uld unregister {CXGB4_BACKEND}")
                order = [next((i for i, ln in enumerate(gone) if what in ln), -1) for what in steps]
                assert -1 not in order and order == sorted(order), gone
                assert not chip_errors(), chip_errors()
                assert (CFS / "portals").read_text() == f"{SIM_IP}:{PORT}\n"
            (np / "cxgbit").write_text("0")
    finally:
        unload_ours()


def test_a_portal_of_another_namespace_gets_no_server(stand_in: None, module_ko: Path) -> None:
    """The adapter's ports are in this namespace: a wildcard portal made in
    another one, whose connections can never come in on them, opens no
    server on the chip; the same portal made here opens one."""
    load_ours(module_ko)
    sh("ip", "netns", "add", "c4other")
    try:
        before = len(trace())
        with topo.in_netns("c4other"), portal(f"0.0.0.0:{PORT}") as np:
            (np / "cxgbit").write_text("1")
            servers = c4sim_adapter()["servers"]
            (np / "cxgbit").write_text("0")
        opened = [ln for ln in trace()[before:] if "CPL_PASS_OPEN_REQ" in ln]
        assert (opened, servers) == ([], "0"), "a portal of another namespace listens on the chip"
        with portal(f"0.0.0.0:{PORT}") as np:
            (np / "cxgbit").write_text("1")
            servers = c4sim_adapter()["servers"]
            (np / "cxgbit").write_text("0")
        assert servers == "1", "the wildcard portal of the ports' namespace does not listen on the chip"
    finally:
        subprocess.run(["ip", "netns", "del", "c4other"], capture_output=True)
        unload_ours()


def syn_trace() -> list[str]:
    """The portal switched to the loaded ULD, a connection from the peer
    opened and closed before any login; the trace from its SYN until the ULD
    released the TID, numbered, with the peer's port named P."""
    with portal() as np:
        (np / "cxgbit").write_text("1")
        before = len(trace())
        # a connection opened and closed at once, before any login
        probe = f"import socket; socket.create_connection(({SIM_IP!r}, {PORT}), timeout=30).close()"
        subprocess.run(["ip", "netns", "exec", PEER_NS, "python3", "-c", probe], capture_output=True)
        deadline = time.monotonic() + 30
        while not any("TID_RELEASE" in ln for ln in trace()[before:]) and time.monotonic() < deadline:
            time.sleep(0.2)
        lines = trace()[before:]
        (np / "cxgbit").write_text("0")
    return from_syn(lines)


def from_syn(lines: list[str]) -> list[str]:
    """lines from the peer's SYN until the first TID release after it,
    numbered, with the peer's port named P."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith("chip: SYN")), None)
    assert start is not None, "the peer's SYN never reached the chip:\n" + "\n".join(lines)
    end = next((i for i, ln in enumerate(lines) if i > start and "TID_RELEASE" in ln), len(lines) - 1)
    got = numbered(lines[start : end + 1], "T")
    return [normalized(re.sub(rf"{PEER_IP}:\d+", f"{PEER_IP}:P", ln)) for ln in got]


def traces_of_both(kver: str, module_ko: Path, take: Callable[[], list[str]]) -> tuple[list[str], list[str]]:
    """take()'s trace with mainline cxgbit loaded, then with ours."""
    sh("modprobe", "iscsi_target_mod")
    sh("insmod", str(c4sim.intree_cxgbit(kver)))
    try:
        mainline = take()
    finally:
        rmmod("cxgbit")
    load_ours(module_ko)
    try:
        ours = take()
    finally:
        unload_ours()
    return mainline, ours


# FW_FLOWC_WR parameters that are each connection's own: its first
# sequence numbers to send (4, SNDNXT) and to receive (5, RCVNXT)
SEQUENCE_FLOWC = {"4", "5"}


def normalized(line: str) -> str:
    if line.startswith("  flowc "):
        params = [p if p.split("=")[0] not in SEQUENCE_FLOWC else p.split("=")[0] + "=SEQ" for p in line.split()[1:]]
        return "  flowc " + " ".join(params)
    return line


def closing_syn_trace() -> list[str]:
    """The portal switched to the loaded ULD, then off while the chip holds
    the server's close (hold_close), and a connection from the peer to the
    server still live on the chip meanwhile: the trace from its SYN until
    the ULD let that TID go, numbered, the peer's port named P."""
    with portal() as np:
        (np / "cxgbit").write_text("1")
        before = len(trace())
        c4sim.HOLD_CLOSE.write_text("1\n")
        # the ULD waits for the close's answer: switched off aside
        off = threading.Thread(target=(np / "cxgbit").write_text, args=("0",))
        try:
            off.start()
            deadline = time.monotonic() + 10
            while not any("CPL_CLOSE_LISTSRV_REQ" in ln for ln in trace()[before:]):
                assert time.monotonic() < deadline, "the ULD never asked to close its server"
                time.sleep(0.1)
            probe = f"import socket; socket.create_connection(({SIM_IP!r}, {PORT}), timeout=2).close()"
            subprocess.run(["ip", "netns", "exec", PEER_NS, "python3", "-c", probe], capture_output=True)
            lines = trace()[before:]
        finally:
            c4sim.HOLD_CLOSE.write_text("0\n")
            off.join(30)
    assert not off.is_alive(), "switching the portal off never ended"
    # the release as the ULD sends it: through cxgb4_remove_tid(), or its
    # own CPL_TID_RELEASE (mainline, for a TID it never entered in cxgb4's
    # table): the same message to the chip
    return [re.sub(r"^tx \S+ (CPL_)?TID_RELEASE (tid=\S+).*", r"TID_RELEASE \2", ln) for ln in from_syn(lines)]


def test_a_syn_for_a_closing_server_is_refused_as_mainline_refuses_it(
    peer_ns: None, kver: str, module_ko: Path
) -> None:
    """A SYN that reaches a server the ULD is closing (the chip has not
    carried out the close yet) gets its TID back unanswered, as mainline
    gives back one whose listener no longer listens: no accept reply, so no
    abort that could overtake one parked on an L2T entry still resolving."""
    mainline, ours = traces_of_both(kver, module_ko, closing_syn_trace)
    assert not [ln for ln in mainline if ln.startswith("error:")], "\n".join(mainline)
    assert "TID_RELEASE" in mainline[-1], mainline
    assert not any("CPL_PASS_ACCEPT_RPL" in ln for ln in mainline), mainline
    assert ours == mainline, "ours:\n" + "\n".join(ours) + "\nmainline:\n" + "\n".join(mainline)


@pytest.mark.parametrize("peer_scaling", ["1", "0"], ids=["peer-wscale", "peer-no-wscale"])
def test_a_syn_is_answered_as_mainline_answers_it(peer_ns: None, kver: str, module_ko: Path, peer_scaling: str) -> None:
    """The same trace, from the SYN to the TID's release, whether or not the
    peer offers window scaling (the firmware scales the peer's windows by
    FW_FLOWC_WR's RCV_SCALE, which the stand-in checks against what TCP
    agreed)."""
    sh("ip", "netns", "exec", PEER_NS, "sysctl", "-qw", f"net.ipv4.tcp_window_scaling={peer_scaling}")
    mainline, ours = traces_of_both(kver, module_ko, syn_trace)
    errors = [ln for ln in mainline if ln.startswith("error:")]
    assert not errors, "the stand-in refuses what mainline cxgbit does:\n" + "\n".join(mainline)
    assert any("CPL_PASS_ACCEPT_RPL" in ln for ln in mainline), mainline
    assert "TID_RELEASE" in mainline[-1], mainline
    assert ours == mainline, "ours:\n" + "\n".join(ours) + "\nmainline:\n" + "\n".join(mainline)


# The target's side of a session: both digests; its writes either every
# one by R2T, their data placed through page pods ("r2t"), or immediate and
# unsolicited up to FirstBurstLength, handed up in free-list buffers
# ("unsolicited").
DIGESTS = {"HeaderDigest": "CRC32C", "DataDigest": "CRC32C", "MaxBurstLength": "262144"}
SESSIONS = {
    "r2t": {**DIGESTS, "InitialR2T": "Yes", "ImmediateData": "No"},
    "unsolicited": {**DIGESTS, "InitialR2T": "No", "ImmediateData": "Yes", "FirstBurstLength": "65536"},
}


def session_fio_verify(session: str) -> dict[str, int]:
    """A 64 MiB ramdisk LUN on SIM_IP:PORT, its portal switched to the
    loaded ULD, open-iscsi logged in through the wire with both digests,
    fio writing (by R2T) and verifying 16 MiB of 64 KiB blocks; then
    logout and the target gone. What the chip carried meanwhile."""
    from rtslib_fb import LUN, TPG, FabricModule, MappedLUN, NetworkPortal, NodeACL, RDMCPStorageObject, Target

    tpg = TPG(Target(FabricModule("iscsi"), IQN), 1)
    lun = LUN(tpg, 0, RDMCPStorageObject("c4sim", size=64 * 1024 * 1024))
    if debug_kernel():
        # LIO's DataOut timeout (3 s; a node ACL's attribute, which a
        # dynamic ACL keeps at its default) runs from each R2T, and fio keeps
        # 32 writes in flight: the last R2T's data waits behind 2 MiB, which
        # a debug kernel moves through the stand-in at a fraction of the speed
        name = iscsiadm.INITIATORNAME.read_text().split("=", 1)[1].strip()
        acl = NodeACL(tpg, name)
        MappedLUN(acl, 0, lun)
        acl.set_attribute("dataout_timeout", "30")
    for attr in ("generate_node_acls", "cache_dynamic_acls"):
        tpg.set_attribute(attr, "1")
    tpg.set_attribute("demo_mode_write_protect", "0")
    tpg.set_attribute("authentication", "0")
    for k, v in SESSIONS[session].items():
        tpg.set_parameter(k, v)
    NetworkPortal(tpg, SIM_IP, PORT)
    (TARGET / IQN / "tpgt_1/np" / f"{SIM_IP}:{PORT}" / "cxgbit").write_text("1")
    tpg.enable = True
    before = stats()
    portal_ = f"{SIM_IP}:{PORT}"
    try:
        assert [t.iqn for t in iscsiadm.discover_via(portal_, IFACE)] == [IQN]
        for k in ("HeaderDigest", "DataDigest"):
            iscsiadm.set_node(IQN, portal_, f"node.conn[0].iscsi.{k}", "CRC32C")
        iscsiadm.login(IQN, portal_)
        (res,) = fio.write_verify(lun_disk(IQN, SIM_IP, 0), size="16M", bs="64k")
        assert res.write_bytes == 16 * 1024 * 1024
    except Exception as e:
        e.add_note(f"the chip's errors:\n{c4sim.ERRORS.read_text()}\nwhat it carried: {stats()}")
        e.add_note("the trace's end:\n" + "\n".join(trace()[-60:]))
        raise
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()
        lio_clear()
    after = stats()
    return {k: after[k] - before[k] for k in after}


def assert_carried(uld: str, session: str, moved: dict[str, int]) -> None:
    """The chip carried the discovery and the session's every byte: R2T
    write data placed through page pods, reads cut by ISO, credits returned."""
    assert not chip_errors(), f"{uld}: the stand-in refused:\n" + "\n".join(chip_errors())
    assert moved["established"] == 2 and moved["rx_refused"] == 0, (uld, moved)
    assert moved["rx_bytes"] >= 16 * 1024 * 1024 and moved["tx_bytes"] >= 16 * 1024 * 1024, (uld, moved)
    if session == "r2t":
        assert moved["rx_placed"] >= 16 * 1024 * 1024 // 2 and moved["pod_writes"] > 0, (uld, moved)
    assert moved["tx_iso"] > 0 and moved["fw4_acks"] > 0, (uld, moved)


@pytest.mark.oracle
@pytest.mark.parametrize("session", list(SESSIONS))
@pytest.mark.parametrize("stand_in", ["t6", "t5"], indirect=True)
def test_mainline_carries_open_iscsi_and_fio_verify(stand_in: None, peer_vrf: None, kver: str, session: str) -> None:
    """The oracle: Debian's cxgbit.ko on the stand-in carries open-iscsi's
    discovery and a session with digests, fio verifying its writes."""
    sh("modprobe", "iscsi_target_mod")
    sh("insmod", str(c4sim.intree_cxgbit(kver)))
    try:
        assert_carried("mainline cxgbit", session, session_fio_verify(session))
    finally:
        rmmod("cxgbit")
    assert c4sim.FL_PAGES.read_text().strip() == "0", "free-list pages mainline cxgbit kept after unloading"


@pytest.mark.parametrize("session", list(SESSIONS))
@pytest.mark.parametrize("stand_in", ["t6", "t5"], indirect=True)
def test_ours_carries_it_through_the_shipped_glue(
    stand_in: None, peer_vrf: None, module_ko: Path, session: str
) -> None:
    """cxgbit_ext's cxgb4 backend (cxgb4_hw=1), through main.c, carries the
    same discovery and session the oracle carries."""
    load_ours(module_ko)
    try:
        assert_carried("cxgbit_ext", session, session_fio_verify(session))
    finally:
        unload_ours()
    # cxgb4 gives a ULD every free-list page of a message but the last
    assert c4sim.FL_PAGES.read_text().strip() == "0", "free-list pages cxgbit_ext kept after unloading"
