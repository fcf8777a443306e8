"""Fixtures for the VM suite (runs inside the testbed guest, as root)."""

from __future__ import annotations

import gzip
import importlib.util
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

# configshell's Console binds sys.stdout as a default argument when first
# imported: imported here, at collection, that is the session's capture,
# open to the end, not a test's capture that a later test finds closed
import configshell_fb.console  # noqa: F401
import pytest

from cxgbit_ext.control import Connection as OffloadedConnection
from cxgbit_ext.control import Control
from cxgbit_ext.topology import Topology, settle_sessions
from iscsi_initiator import iscsiadm
from iscsi_initiator.session import Connection, ScsiError
from testbed import topo
from testbed.klog import bad_lines, report
from testbed.kmod import CXGB4_BACKEND, backend_ko, debug_release, insmod
from tests.vm import shares

TOP = Path(__file__).resolve().parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak-minutes", type=float, default=30,
        help="test_soak.py (make soak, only when named): how long the sessions run under chaos",
    )  # fmt: skip
    parser.addoption(
        "--scale-targets", type=int, default=4,
        help="test_scale: the larger number of targets (x 16 LUNs); make test uses 4, docs/usage.md's figures 64",
    )  # fmt: skip
    parser.addoption(
        "--every-share", action="store_true",
        help="run every piece of work dealt across kernels.conf's series (tests/vm/shares.py) on this kernel",
    )  # fmt: skip
    parser.addoption(
        "--lio-fuzz", action="store_true",
        help="test_pdu_fuzz.py on the stock path too (make fuzz-vm): that brings Debian 6.1's LIO core down",
    )  # fmt: skip
    parser.addoption(
        "--patched-lio", action="store_true",
        help="load LIO's iSCSI core with upstream/'s patches (scripts/build-patched-lio) in place of the kernel's",
    )  # fmt: skip
    parser.addoption(
        "--fuzz-seed", type=int, default=None,
        help="test_pdu_fuzz.py's seed: make test uses a fixed one, make fuzz-vm a new one each run",
    )  # fmt: skip
    parser.addoption(
        "--cxgb4-sim", choices=("t5", "t6"), default=None,
        help="test_conformance.py, test_pdu_fuzz.py, test_pdu_suite.py: the offloaded side through the cxgb4 "
        "backend on the stand-in (tests/kmod/cxgb4sim) presenting that chip",
    )  # fmt: skip
    parser.addoption(
        "--libiscsi-tests", default=None,
        help="test_conformance.py: iscsi-test-cu's -t pattern (ALL.SUITE*), not this kernel's share",
    )  # fmt: skip
    parser.addoption(
        "--libiscsi-timeout", type=float, default=1200,
        help="test_conformance.py: seconds one iscsi-test-cu run may take before it fails, naming where it was",
    )  # fmt: skip
    parser.addoption(
        "--fuzz-pdus", type=int, default=None,
        help="test_pdu_fuzz.py: PDUs per path in sessions of one connection (make test: a regression run's "
        "count; make fuzz-vm and make cxgb4-test: 10000)",
    )  # fmt: skip
    parser.addoption(
        "--fuzz-erl", type=int, default=0,
        help="test_pdu_fuzz.py: also fuzz sessions of two connections at this ErrorRecoveryLevel (make fuzz-vm: 2)",
    )  # fmt: skip
    parser.addoption(
        "--fuzz-semantic", action="store_true",
        help="test_pdu_fuzz.py: mutations of meaning (CmdSN, ITT, flags, TMFs, ...) besides those of framing",
    )  # fmt: skip


# Why make test leaves the seeded fuzz of the stock path out (printed with the skip).
LIO_FUZZ_SKIP = (
    "make fuzz-vm only: seeded malformed PDUs bring stock LIO down on Debian 6.1 within ~1,200 PDUs "
    "(WARN in iscsit_release_cmd from target_complete_ok_work, then a use-after-free: a WRITE_PENDING command "
    "completed and released while iscsit_release_commands_from_conn still holds it); the offloaded path "
    "runs the same fuzz in make test; see tests/vm/test_pdu_fuzz.py"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "dealt: its subject is not a difference between the kernels (user-space tools, stock LIO, logic of ours "
        "no kernel interface under it changes): runs on one kernel of kernels.conf (tests/vm/shares.py), every "
        "kernel with --every-share; dealt(share=N): the Nth series",
    )
    config.addinivalue_line(
        "markers",
        "oracle: mainline cxgbit through the cxgb4 stand-in, a check of the stand-in: make cxgb4-test "
        "(c4sim.cxgb4_test_only)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "CXE_KVER" not in os.environ:
        skip = pytest.mark.skip(reason="VM suite: runs inside the testbed guest (make vm-test)")
        for item in items:
            item.add_marker(skip)
        return
    for item in items:
        params = getattr(item, "callspec", None)
        path = params.params.get("path") if params else None
        if not config.getoption("--lio-fuzz") and item.path.name == "test_pdu_fuzz.py" and path == "stock":
            item.add_marker(pytest.mark.skip(reason=LIO_FUZZ_SKIP))
        elif (dealt := item.get_closest_marker("dealt")) is not None:
            share = dealt.kwargs.get("share")
            if not shares.runs_here(item.nodeid, config.getoption("--every-share"), share):
                why = f"dealt to the {shares.owner(item.nodeid, share)} kernel (--every-share runs it here)"
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="session")
def kver() -> str:
    return os.environ["CXE_KVER"]


@pytest.fixture(scope="session", autouse=True)
def lio_core(request: pytest.FixtureRequest, kver: str) -> str:
    """Which iscsi_target_mod the batch runs on: "kernel", or with
    --patched-lio "patched", loaded before anything else asks for LIO (and
    checked to be the one loaded, by its source checksum)."""
    if not request.config.getoption("--patched-lio"):
        return "kernel"
    ko = TOP / "build/lio-patched" / kver / "iscsi_target_mod.ko"
    assert ko.exists(), f"{ko} missing: scripts/build-patched-lio {kver}"
    assert not Path("/sys/module/iscsi_target_mod").exists(), "the kernel's iscsi_target_mod is loaded already"
    subprocess.run(["modprobe", "target_core_mod"], check=True)
    p = subprocess.run(["insmod", str(ko)], capture_output=True, text=True)
    assert p.returncode == 0, f"insmod {ko}: {p.stderr}"
    want = subprocess.run(["modinfo", "-F", "srcversion", str(ko)], capture_output=True, text=True, check=True)
    have = Path("/sys/module/iscsi_target_mod/srcversion").read_text().strip()
    assert have == want.stdout.strip(), f"iscsi_target_mod loaded is {have}, the patched one {want.stdout.strip()}"
    Path("/dev/kmsg").write_text(f"cxe-test: LIO core with upstream/'s patches: {ko} ({have})\n")
    return "patched"


@pytest.fixture(scope="session")
def module_ko(kver: str, lio_core: str) -> Path:
    # on the patched core, the build against its symbol versions
    ko = TOP / "build" / kver / "cxgbit_ext.ko"
    if lio_core == "patched":
        ko = TOP / "build/lio-patched" / kver / "cxgbit-ext/cxgbit_ext.ko"
    assert ko.exists(), f"{ko} missing: make modules"
    return ko


def debug_kernel() -> bool:
    """A debug kernel (scripts/build-debug-kernel's release, -dbg or -kcsan):
    its checkers under TCG make it several times slower than Debian's."""
    return debug_release(os.uname().release)


def kernel_has(symbol: str) -> bool:
    """Whether the running kernel was built with CONFIG_<symbol>=y: its
    /proc/config.gz (the debug kernels'), else Debian's /boot/config-*."""
    proc = Path("/proc/config.gz")
    if proc.exists():
        text = gzip.decompress(proc.read_bytes()).decode()
    else:
        text = Path(f"/boot/config-{os.uname().release}").read_text()
    return f"CONFIG_{symbol}=y" in text.splitlines()


def dmesg() -> list[str]:
    return subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout.splitlines()


def closed_by_peer(s: socket.socket, timeout: float = 10) -> bool:
    """True when the target closes or resets s within ``timeout`` s (what
    it sent before is read and dropped)."""
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    except TimeoutError:
        return False
    return True


def reproducer(name: str) -> ModuleType:
    """upstream/reproducers/NAME.py, imported to be called in the batch."""
    path = TOP / "upstream/reproducers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"reproducer_{name}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def kmsg_mark(what: str) -> str:
    """Write a unique line into the kernel log and return it."""
    marker = f"cxe-test: {what} {uuid.uuid4().hex}"
    Path("/dev/kmsg").write_text(marker + "\n")
    return marker


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failed test's reason, in the kernel log as it happens: the
    console keeps it where a later hang keeps pytest from printing its
    summary (a fixture's teardown waiting on the kernel)."""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        why = crash.message if crash is not None else str(report.longrepr)
        line = " ".join(why.split())[:400]
        Path("/dev/kmsg").write_text(f"cxe-test: {report.when} failed {report.nodeid}: {line}\n")


def dmesg_since(marker: str) -> list[str]:
    """Kernel log lines after marker (all of them if it has wrapped away)."""
    lines = dmesg()
    for i in range(len(lines) - 1, -1, -1):
        if marker in lines[i]:
            return lines[i + 1 :]
    return lines


class KernelLog:
    """The kernel log's records from now on, read from /dev/kmsg as dmesg
    prints them: a test reads what it added, not the whole log again (the
    log grows through a batch)."""

    def __init__(self) -> None:
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def lines(self) -> list[str] | None:
        """The records since, one line each; None when the ring overwrote
        some before they were read."""
        out = []
        try:
            while True:
                try:
                    rec = os.read(self.fd, 8192).decode(errors="replace")
                except BlockingIOError:
                    return out
                except BrokenPipeError:
                    return None
                head, _, text = rec.partition(";")
                usec = int(head.split(",")[2])
                # lines after the first are the record's key=value metadata
                out.append(f"[{usec // 1000000:5d}.{usec % 1000000:06d}] {text.split(chr(10))[0]}")
        finally:
            os.close(self.fd)


@pytest.fixture(autouse=True)
def kernel_log_clean(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test during which the kernel logged an oops/WARN/BUG/..."""
    log = KernelLog()
    marker = kmsg_mark(f"begin {request.node.nodeid}")
    yield
    lines = log.lines()
    at = next((i for i, line in enumerate(lines or ()) if line.endswith(marker)), None)
    # the whole log, as dmesg shows it, if the reader missed records
    lines = dmesg_since(marker) if lines is None or at is None else lines[at + 1 :]
    assert not bad_lines(lines), "kernel log during this test:\n" + "\n".join(report(lines))


@pytest.fixture(scope="session")
def iscsid() -> None:
    iscsiadm.start_iscsid()


def lio_clear() -> None:
    from rtslib_fb import RTSRoot

    iscsiadm.logout()
    iscsiadm.delete_nodes()
    settle_sessions()
    RTSRoot().clear_existing(confirm=True)


@pytest.fixture
def lio(iscsid: None) -> Iterator[None]:
    """LIO with iscsi_target_mod loaded; everything cleared after the test."""
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    yield
    lio_clear()


PDU_IQN = "iqn.2026-11.org.cxgbit-ext:pdu"
PDU_INITIATOR = "iqn.2026-11.org.cxgbit-ext:pdu-initiator"


CFS = Path("/sys/kernel/config/cxgbit_ext")


@contextmanager
def offloaded_target(
    ko: Path,
    topo_: Topology,
    before: Callable[[], None] | None = None,
    backend_params: tuple[str, ...] | None = None,
    provided: tuple[str, ...] = (),
) -> Iterator[None]:
    """LIO + cxgbit_ext with soft0 serving tgt0 only (and, with
    backend_params, its cxgb4 backend's module loaded with them, its
    dependencies but those provided by a stand-in), and the target of
    topo_ (made after ``before``, when given, has run).

    The target is created from the target host (netns tgt); a portal on
    0.0.0.0 is then reached offloaded over tgt0 and stock over tgt1.
    Everything is removed afterwards and the module must unload.
    """
    from cxgbit_ext import topology

    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    p = insmod(ko)
    assert p.returncode == 0, f"insmod {ko}: {p.stderr}"
    if backend_params is not None:
        p = insmod(backend_ko(ko), *backend_params, provided=(*provided, "cxgbit_ext"))
        if p.returncode:
            subprocess.run(["rmmod", "cxgbit_ext"], capture_output=True)
        assert p.returncode == 0, f"insmod {backend_ko(ko)}: {p.stderr}"
    created = False
    try:
        (CFS / "adapters/soft0/netdev").write_text(topo.LINKS[0].tgt_dev)
        if before:
            before()
        with topo.in_netns():
            topology.create(topo_)
        created = True
        yield
    finally:
        # also when the target could not be made: the module must go
        iscsiadm.logout()
        iscsiadm.delete_nodes()
        if created:
            topology.delete(topo_.iqn)  # once its ACLs' sessions are down
        deadline = time.monotonic() + 15
        while connection_lines() and time.monotonic() < deadline:
            time.sleep(0.1)
        if backend_params is not None:
            # a connection's line goes before its backend lets it go
            refs = Path(f"/sys/module/{CXGB4_BACKEND}/refcnt")
            while refs.exists() and refs.read_text().strip() != "0" and time.monotonic() < deadline:
                time.sleep(0.1)
        # both tried, the backend's first, before either failure is told
        unloaded = []
        for mod in (CXGB4_BACKEND, "cxgbit_ext"):
            if Path(f"/sys/module/{mod}").exists():
                unloaded.append(subprocess.run(["rmmod", mod], capture_output=True, text=True))
        for p in unloaded:
            assert p.returncode == 0, f"{p.args[1]} did not unload: {p.stderr}"


def record(line: str, name: str = "pdu_outcomes.txt") -> None:
    """Print ``line`` and keep it in the results directory (pytest shows
    the output of failed tests only; this is what each path did)."""
    print(line)
    if results := os.environ.get("CXE_RESULTS"):
        with (Path(results) / name).open("a") as f:
            f.write(line + "\n")


def clear_unit_attention(c: Connection, lun: int = 0) -> None:
    """Take the UNIT ATTENTION a new session may meet on ``lun``, with a one-block read."""
    try:
        c.scsi_read(0, 1, lun=lun)
    except ScsiError as e:
        assert e.sense_key == 6, e


def connection_lines() -> list[str]:
    """Lines of the connections file (the kernel pads the last with spaces)."""
    return [ln for ln in (CFS / "connections").read_text().splitlines() if ln.strip()]


def initiator_side(c: Connection) -> str:
    """c's side (ip:port) as the connections file prints it over a
    dual-stack portal: in brackets, IPv4 v4-mapped."""
    host, port = c.sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"[::ffff:{host}]:{port}"


def offloaded_line(c: Connection) -> str | None:
    """The connections line of c, None when it is not offloaded (the
    module prints the initiator side; IPv4 over a dual-stack portal
    arrives v4-mapped)."""
    me = f"{initiator_side(c)} "
    return next((ln for ln in connection_lines() if ln.startswith(me)), None)


def offloaded_peers() -> list[str]:
    """The initiator side (ip:port) of each offloaded connection."""
    return [c.peer for c in Control(CFS).connections()]


def connection_of(peer: str) -> OffloadedConnection | None:
    """The offloaded connection whose initiator side is ``peer`` (ip:port
    as the connections file prints it: IPv6 and v4-mapped in brackets),
    None when no connection line has it."""
    return next((c for c in Control(CFS).connections() if c.peer == peer), None)


def adapter_of(peer: str) -> str | None:
    """The adapter of the offloaded connection whose initiator side is
    ``peer`` (ip:port as the connections file prints it: IPv6 and v4-mapped
    in brackets), None when no connection line has it."""
    c = connection_of(peer)
    return c.adapter if c is not None else None


def cxgb4_adapter(name: str) -> dict[str, str]:
    """The cxgb4 backend's words on one of its adapters, from the backends file."""
    (line,) = [ln for ln in (CFS / "backends").read_text().splitlines() if ln.startswith("cxgb4 ")]
    (word,) = [w for w in line.split() if w.startswith(name + "=")]
    kind, ports, state, *rest = word.split("=", 1)[1].split("/")
    got = {"kind": kind, "ports": ports, "state": state}
    for field in rest:
        key, _, value = field.partition(":")
        got[key] = value
    return got


def wait_for(what: str, ok: Callable[[], bool], seconds: float) -> None:
    """Poll ok() until it holds; fail with what when it does not in time."""
    deadline = time.monotonic() + seconds
    while not ok() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ok(), what


def lun_disk(iqn: str, address: str, lun: int, timeout: float = 30) -> str:
    """The block device of ``lun`` in open-iscsi's session to iqn at ``address``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for s in iscsiadm.sessions():
            if s.iqn != iqn or s.address != address:
                continue
            for blk in Path(f"/sys/class/iscsi_session/session{s.sid}/device").glob(f"target*/*:*:*:{lun}/block/*"):
                if Path(f"/dev/{blk.name}").exists():
                    return f"/dev/{blk.name}"
        time.sleep(0.5)
    raise AssertionError(f"no LUN {lun} of {iqn} at {address} after {timeout} s")


def adapter_counters(name: str) -> dict[str, int]:
    """Adapter ``name``'s counters (adapters/<name>/counters)."""
    return Control(CFS).adapter(name).counters


def soft0_counters() -> dict[str, int]:
    return adapter_counters("soft0")


def cxgb4_counters(name: str) -> dict[str, int]:
    """A cxgb4 adapter's counters (empty until it has carried a connection)."""
    return Control(CFS).device_counters().get("cxgb4", {}).get(name, {})


def set_offload(on: bool) -> None:
    """Flip the stock switch (rtslib NetworkPortal.offload) on the only portal."""
    from rtslib_fb import RTSRoot

    with topo.in_netns():
        (np,) = [p for tpg in RTSRoot().tpgs for p in tpg.network_portals]
        np.offload = on


class TargetcliShell:
    """targetcli-offload's tree in this process (a targetcli process costs
    ~10 s under TCG); run() returns what the command printed.

    Each command runs on a thread of its own, on a stack as shallow as a
    targetcli process's: configshell's Log.debug() reads the source of
    every frame on the stack on each of the ~17 calls a command makes
    (patches/configshell-fb/0001), about 1 s a call from pytest's stack
    on this VM's shared root."""

    def __init__(self, home: Path) -> None:
        import io

        from configshell_fb.console import Console

        from targetcli_offload import ui

        ui.install()
        self.shell = ui.shell_class()(str(home))
        # Console's default stdout is bound at import time: give it our own
        self.buf = io.StringIO()
        con = Console(stdout=self.buf, stderr=self.buf)
        self.shell.con = con
        self.shell.log.con = con
        self.root = ui.OffloadRoot(self.shell, as_root=True)
        self.root.refresh()

    def run(self, line: str) -> str:
        self.buf.seek(0)
        self.buf.truncate()
        # a thread made here shares this one's namespaces (topo.in_netns())
        with ThreadPoolExecutor(1) as pool:
            pool.submit(self.shell.run_cmdline, line).result()
        return self.buf.getvalue()


@contextmanager
def target_tpg_params(iqn: str, **values: str) -> Iterator[None]:
    """Target ``iqn``'s TPG parameters set for the logins made inside
    (restored after): an initiator alone cannot get InitialR2T=No, the
    result is the OR of both sides' values."""
    from rtslib_fb import RTSRoot

    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == iqn]
    old = {k: tpg.get_parameter(k) for k in values}
    try:
        for k, v in values.items():
            tpg.set_parameter(k, v)
        yield
    finally:
        for k, v in old.items():
            tpg.set_parameter(k, v)


@contextmanager
def target_at_erl(iqn: str, erl: int, **params: str) -> Iterator[None]:
    """Target ``iqn`` offering ErrorRecoveryLevel ``erl`` (and TPG
    ``params``) to the logins made inside (restored after). LIO offers the
    ACL's default_erl, and a dynamic ACL takes the TPG's when it is made:
    the TPG's is set too."""
    from rtslib_fb import RTSRoot

    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == iqn]
    saved = tpg.get_attribute("default_erl")
    tpg.set_attribute("default_erl", str(erl))
    try:
        with target_tpg_params(iqn, ErrorRecoveryLevel=str(erl), **params):
            yield
    finally:
        tpg.set_attribute("default_erl", saved)


# IPv6 next to each link's IPv4 addresses, from the benchmarking range
# (RFC 5180, 2001:2::/48): (initiator, target) per link
V6 = {topo.LINKS[0]: ("2001:2::2", "2001:2::1"), topo.LINKS[1]: ("2001:2:0:1::2", "2001:2:0:1::1")}


@pytest.fixture(scope="module")
def v6_addresses(iscsid: None) -> Iterator[None]:
    for ln, (ini, tgt) in V6.items():
        topo.sh("ip", "-6", "addr", "add", f"{ini}/64", "dev", ln.ini_dev, "nodad")
        topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "add", f"{tgt}/64", "dev", ln.tgt_dev, "nodad")
    try:
        for ln, (_, tgt) in V6.items():
            topo.sh("ping", "-6", "-c1", "-W5", "-I", ln.ini_dev, tgt)
        yield
    finally:
        for ln, (ini, tgt) in V6.items():
            topo.sh("ip", "-6", "addr", "del", f"{ini}/64", "dev", ln.ini_dev, check=False)
            topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "del", f"{tgt}/64", "dev", ln.tgt_dev, check=False)
