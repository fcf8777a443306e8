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
- cxgbit_ext's cxgb4 backend, through its real glue (cxgb4_hw=1), does the
  same on the same portal: the same requests with the same fields and
  queues, in the same order, as mainline's.
- A SYN from the peer for the listening portal is the chip's: reported as
  CPL_PASS_ACCEPT_REQ (the frame in a free-list buffer), answered by the
  ULD's accept reply through its L2T entry; the chip has no TCP engine
  yet, so the peer then resets, and the ULD must clean up (FW_FLOWC_WR
  first on the flow, the abort reply, the TID's release). Mainline's
  sequence, queues and accept-reply fields are the reference ours is
  compared with; the stand-in reports no error for mainline's.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .conftest import CFS, TOP, dmesg_since, kmsg_mark

SIM_IP, PEER_IP, PEER_NS, PORT = "198.18.40.1", "198.18.40.2", "c4ini", 3260
IQN = "iqn.2026-11.org.cxgbit-ext:c4sim"
TRACE = Path("/sys/kernel/debug/cxgb4sim/trace")
TARGET = Path("/sys/kernel/config/target/iscsi")


def sh(*cmd: str) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}: {p.stderr or p.stdout}"
    return p.stdout


def loaded(mod: str) -> bool:
    return Path(f"/sys/module/{mod}").exists()


def rmmod(mod: str) -> None:
    if loaded(mod):
        sh("rmmod", mod)


def trace() -> list[str]:
    return TRACE.read_text().splitlines()


@pytest.fixture
def stand_in(kver: str, lio: None) -> Iterator[None]:
    """cxgb4sim and libcxgb loaded (cxgb4 not), c4sim0 at SIM_IP, its peer in
    netns c4ini at PEER_IP, the wire between them working."""
    for mod in ("cxgbit_ext", "cxgbit", "libcxgb", "cxgb4"):
        rmmod(mod)
    ko = TOP / "build" / kver / "cxgb4sim/cxgb4sim.ko"
    assert ko.exists(), f"{ko} missing: make modules"
    sh("insmod", str(ko))
    try:
        # libcxgb imports nothing of cxgb4; cxgbit and ours import both
        sh("modprobe", "libcxgb")
        assert not loaded("cxgb4")
        sh("ip", "link", "set", "c4sim0", "up")
        sh("ip", "addr", "add", f"{SIM_IP}/24", "dev", "c4sim0")
        sh("ip", "netns", "add", PEER_NS)
        sh("ip", "link", "set", "c4peer0", "netns", PEER_NS)
        sh("ip", "-n", PEER_NS, "link", "set", "c4peer0", "up")
        sh("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/24", "dev", "c4peer0")
        sh("ip", "netns", "exec", PEER_NS, "ping", "-c1", "-W5", SIM_IP)
        yield
    finally:
        subprocess.run(["ip", "netns", "del", PEER_NS], capture_output=True)
        for mod in ("cxgbit_ext", "cxgbit", "libcxgb", "cxgb4sim"):
            rmmod(mod)


def intree_cxgbit(kver: str) -> Path:
    (ko,) = Path(f"/lib/modules/{kver}/kernel/drivers/target/iscsi/cxgbit").glob("cxgbit.ko*")
    return ko


@contextmanager
def portal() -> Iterator[Path]:
    """A target with a portal on SIM_IP:PORT (its np directory), removed after."""
    tpg = TARGET / IQN / "tpgt_1"
    np = tpg / "np" / f"{SIM_IP}:{PORT}"
    np.mkdir(parents=True)
    try:
        yield np
    finally:
        np.rmdir()
        tpg.rmdir()
        (TARGET / IQN).rmdir()


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
    sh("insmod", str(intree_cxgbit(kver)))
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
    """cxgbit_ext with cxgb4_hw=1, its dependencies but cxgb4 loaded first."""
    for dep in ("configfs", "libcrc32c", "target_core_mod", "iscsi_target_mod"):
        sh("modprobe", dep)
    sh("insmod", str(module_ko), "cxgb4_hw=1")


def test_ours_listens_as_mainline_does(stand_in: None, module_ko: Path) -> None:
    load_ours(module_ko)
    try:
        assert "uld add cxgbit_ext: state UP" in trace(), trace()
        backends = (CFS / "backends").read_text()
        assert "0000:c4:00.4=T6/" in backends, backends
        assert portal_listen_trace() == MAINLINE_LISTEN, "\n".join(trace())
    finally:
        rmmod("cxgbit_ext")
    assert trace()[-1] == "uld unregister cxgbit_ext"


def syn_trace() -> list[str]:
    """The portal switched to the loaded ULD, one SYN from the peer; the
    trace from the SYN until the ULD released the TID, numbered, with the
    peer's port named P."""
    with portal() as np:
        (np / "cxgbit").write_text("1")
        before = len(trace())
        # one SYN: the connect gives up before TCP's first retransmission
        probe = f"import socket; s = socket.socket(); s.settimeout(0.5); s.connect_ex(({SIM_IP!r}, {PORT}))"
        subprocess.run(["ip", "netns", "exec", PEER_NS, "python3", "-c", probe], capture_output=True)
        deadline = time.monotonic() + 10
        while not any("TID_RELEASE" in ln for ln in trace()[before:]) and time.monotonic() < deadline:
            time.sleep(0.2)
        lines = trace()[before:]
        (np / "cxgbit").write_text("0")
    start = next((i for i, ln in enumerate(lines) if ln.startswith("chip: SYN")), None)
    assert start is not None, "the peer's SYN never reached the chip:\n" + "\n".join(lines)
    end = next((i for i, ln in enumerate(lines) if "TID_RELEASE" in ln), len(lines) - 1)
    got = numbered(lines[start : end + 1], "T")
    return [explained(re.sub(rf"{PEER_IP}:\d+", f"{PEER_IP}:P", ln)) for ln in got]


# FW_FLOWC_WR parameters where ours differs from mainline on purpose
# (docs/cxgb4.md, "The stand-in"): MSS (7) and RCV_SCALE (14) are known to
# ours from the SYN, to mainline only once established; so their count too.
EXPLAINED_FLOWC = {"7", "14"}


def explained(line: str) -> str:
    if line.startswith("  flowc "):
        params = [p for p in line.split()[1:] if p.split("=")[0] not in EXPLAINED_FLOWC]
        return "  flowc " + " ".join(params)
    return re.sub(r"(FW_FLOWC_WR tid=\S+) nparams=\d+", r"\1", line)


def test_a_syn_is_answered_as_mainline_answers_it(stand_in: None, kver: str, module_ko: Path) -> None:
    sh("modprobe", "iscsi_target_mod")
    sh("insmod", str(intree_cxgbit(kver)))
    try:
        mainline = syn_trace()
    finally:
        rmmod("cxgbit")
    errors = [ln for ln in mainline if ln.startswith("error:")]
    assert not errors, "the stand-in refuses what mainline cxgbit does:\n" + "\n".join(mainline)
    assert any("CPL_PASS_ACCEPT_RPL" in ln for ln in mainline), mainline
    assert "TID_RELEASE" in mainline[-1], mainline

    load_ours(module_ko)
    try:
        ours = syn_trace()
    finally:
        rmmod("cxgbit_ext")
    assert ours == mainline, "ours:\n" + "\n".join(ours) + "\nmainline:\n" + "\n".join(mainline)
