"""Allocation failures injected into the module's call chains (debug
kernels): failslab and fail_page_alloc fail allocations made with
cxgbit_ext's code on the stack (the stack-trace filter set to the module's
text) while logins (offloaded, discovery and target hand-backs), digested
I/O (immediate, unsolicited and R2T-solicited data, Data-In whole or cut),
adapter create/delete, a bound netdev's rename and unregistration and the
portal's offload switch run. Whatever fails, no kernel report, every block
whose write was acknowledged reads back as written once injection stops, a
clean login is then offloaded, no connection is left behind, and the
module unloads (the fixture) with kmemleak clean (testbed/run). fail-nth
sweeps fail each allocation in turn of the module's load and unload, an
adapter's creation and the portal's offload switch.

The probability rounds need the fault-injection stack filter (the 6.12
debug kernel; 6.1's Kconfig has it depend on !X86_64). The fail-nth
sweeps run on any debug kernel: without the filter each allocation the
step's system call makes fails in turn, the kernel's around the module's
as well. Elsewhere each test skips, saying why.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from cxgbit_ext import topology
from iscsi_initiator.pdu import text_request
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError, Params, ProtocolError, ScsiError
from testbed import topo
from testbed.kmod import insmod, rmmod

from .conftest import CFS, PDU_INITIATOR, adapter_of, connection_lines, kmsg_mark, offloaded_target, reproducer

T = TypeVar("T")
IQN = "iqn.2026-11.org.cxgbit-ext:faults"
OFF = topo.LINKS[0]
BLOCK = 512
DEBUGFS = Path("/sys/kernel/debug")
KINDS = ("failslab", "fail_page_alloc")
TIMES = 100_000  # the budget of failures; what is left of it counts them
ROUNDS = 16
PROBABILITIES = (10, 2)  # percent, alternating by round: many failures, then I/O that gets through
LBAS = 128  # 64 KiB per write (past 8 KiB of immediate data), each round its own range
STALL_S = 30  # the SCSI layer's default command timeout (sd: 30 s)
UNANSWERED: list[int] = []


def text_symbols() -> list[tuple[str, int]]:
    """cxgbit_ext's text symbols, each with its address."""
    syms = []
    for line in Path("/proc/kallsyms").read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == "[cxgbit_ext]" and f[1] in "tT":
            syms.append((f[2], int(f[0], 16)))
    assert syms and min(a for _, a in syms), "no readable cxgbit_ext text symbols in /proc/kallsyms"
    return syms


def module_text() -> tuple[int, int]:
    """cxgbit_ext's text, from its symbols (the filter takes a range)."""
    addrs = [a for _, a in text_symbols()]
    return min(addrs), max(addrs) + 0x1000


def function_text(name: str) -> tuple[int, int]:
    """One of cxgbit_ext's functions: its address up to the next symbol's."""
    addrs = dict(text_symbols())
    assert name in addrs, f"{name} is not a symbol of cxgbit_ext"
    later = [a for a in addrs.values() if a > addrs[name]]
    return addrs[name], min(later)


def set_attr(kind: str, name: str, value: object) -> None:
    (DEBUGFS / kind / name).write_text(f"{value}\n")


def injecting(probability: int) -> None:
    for kind in KINDS:
        set_attr(kind, "probability", probability)


def has_stack_filter() -> bool:
    return (DEBUGFS / "failslab/require-start").exists()


def stack_filter(start: int, end: int) -> None:
    """Only allocations with [start, end) on the stack may fail, by
    probability or by a thread's fail-nth; on a kernel without the filter,
    fail-nth counts each allocation its thread makes (the probability
    rounds, which would fail anyone's, skip there)."""
    for kind in KINDS:
        for name, value in (("interval", 1), ("times", TIMES), ("space", 0),
                            ("verbose", 2), ("task-filter", "N"), ("ignore-gfp-wait", "N")):  # fmt: skip
            set_attr(kind, name, value)
        if has_stack_filter():  # its attributes exist only with it
            set_attr(kind, "stacktrace-depth", 32)
            set_attr(kind, "require-start", start)
            set_attr(kind, "require-end", end)
    set_attr("fail_page_alloc", "ignore-gfp-highmem", "N")
    set_attr("fail_page_alloc", "min-order", 0)


# Without the filter a module load's fail-nth also fails the loader's own
# allocations, and 6.1's jump_label_module_notify() WARNs by design when
# its own fails (kernel/jump_label.c): a report that is not the module's.
LOADER_WARNS = "without the stack filter the kernel's module loader WARNs at its own failed allocation (jump_label)"


def need_stack_filter(reason: str = "") -> None:
    need_fail_nth()
    if not has_stack_filter() and reason:
        pytest.skip(f"this kernel has no fault-injection stack filter: {reason}")
    if not has_stack_filter():
        pytest.skip(
            "this kernel has no fault-injection stack filter (FAULT_INJECTION_STACKTRACE_FILTER; "
            "6.1 has it depend on !X86_64): probability rounds would fail every caller's allocations"
        )


def need_fail_nth() -> None:
    if not Path(FailNth.PATH).exists():
        pytest.skip("this kernel has no fault injection (a debug kernel's FAULT_INJECTION_DEBUG_FS)")


def scope() -> str:
    """What a fail-nth sweep fails, for its summary."""
    return "with the module's text on the stack" if has_stack_filter() else "by the system call, any caller"


class FailNth:
    """This thread's fail-nth (Documentation/fault-injection): armed with
    N, the Nth allocation it makes fails, whatever the probability. Under
    the stack filter only allocations with the filter's text on the stack
    count; without it every one does, so a step arms it right before its
    system call and reads it right after."""

    PATH = "/proc/thread-self/fail-nth"

    def __init__(self) -> None:
        # opened once: reading and writing an open fail-nth allocate
        # nothing, so only the step's own calls count against it
        self.fd = os.open(self.PATH, os.O_RDWR)

    def arm(self, n: int) -> None:
        os.write(self.fd, str(n).encode())

    def injected(self) -> bool:
        """Whether the armed failure happened; disarms it either way."""
        left = int(os.pread(self.fd, 32, 0))
        self.arm(0)
        return left == 0

    def close(self) -> None:
        self.arm(0)
        os.close(self.fd)


def sweep(step: Callable[[FailNth, int], bool], limit: int = 1200) -> int:
    """step(fail_nth, n) for n = 1, 2, ... until its n-th allocation is
    past its last (step returns fail_nth.injected(), asked right after its
    operation): the number of allocations that could fail."""
    nth = FailNth()
    try:
        for n in range(1, limit + 1):
            if not step(nth, n):
                return n - 1
    finally:
        nth.close()
    raise AssertionError(f"more than {limit} allocations: the sweep did not end")


def tally(outcomes: dict[str, int], what: str) -> None:
    outcomes[what] = outcomes.get(what, 0) + 1


SYS_FINIT_MODULE = 313  # x86_64
LIBC = ctypes.CDLL(None, use_errno=True)


def kernel_end() -> int:
    """The end of the kernel's image: modules are mapped above it."""
    for line in Path("/proc/kallsyms").read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == "_end":
            return int(f[0], 16)
    raise AssertionError("no _end in /proc/kallsyms")


def test_every_allocation_of_the_module_load_can_fail(module_ko: Path) -> None:
    """fail-nth through cxgbit_ext's init: each allocation made with module
    text on the stack (without the stack filter, each of the load's) fails
    in turn, one load each. A load either fails
    with ENOMEM and leaves no trace of the module (not listed, no sysfs
    directory, no configfs group), or succeeds and works; the load after
    the sweep serves an offloaded login (the next tests), kmemleak clean."""
    need_stack_filter(LOADER_WARNS)
    assert not Path("/sys/module/cxgbit_ext").exists(), "cxgbit_ext is loaded: this test loads it itself"
    deps = subprocess.run(["modinfo", "-F", "depends", str(module_ko)], capture_output=True, text=True, check=True)
    for dep in filter(None, deps.stdout.strip().split(",")):
        subprocess.run(["modprobe", dep], check=True)
    # the module's text is not mapped yet: any module's, called from its init
    stack_filter(kernel_end(), 0xFFFFFFFFFF000000)
    outcomes: dict[str, int] = {}

    def load(nth: FailNth, n: int) -> bool:
        fd = os.open(module_ko, os.O_RDONLY)
        try:
            nth.arm(n)
            rc = LIBC.syscall(SYS_FINIT_MODULE, fd, b"", 0)
            err = ctypes.get_errno()
            injected = nth.injected()
        finally:
            os.close(fd)
        loaded = Path("/sys/module/cxgbit_ext").exists()
        if rc != 0:
            assert err == errno.ENOMEM, f"allocation {n} failed: the load says {errno.errorcode.get(err, err)}"
            assert not loaded and not CFS.exists(), f"allocation {n} failed: the failed load left the module behind"
            tally(outcomes, "refused")
            return injected
        # a failure the load survives is one the kernel's own bookkeeping
        # takes (kmemleak's and lockdep's metadata, debugfs): all of it there
        assert loaded and (CFS / "adapters/soft0/netdev").exists(), f"allocation {n}: the module loaded without soft0"
        tally(outcomes, "loaded" if injected else "clean")
        p = rmmod("cxgbit_ext")
        assert p.returncode == 0, f"allocation {n}: rmmod after the load: {p.stderr}"
        return injected

    try:
        points = sweep(load)
    finally:
        injecting(0)
    summary = f"cxe-test: fail-nth: module load: {points} allocations {scope()} failed in turn, outcomes {outcomes}"
    Path("/dev/kmsg").write_text(summary + "\n")
    print(summary)
    assert points > 0, "no allocation of the module's init was failed: the filter matched nothing"
    p = insmod(module_ko)
    assert p.returncode == 0, f"insmod after the sweep: {p.stderr}"
    p = rmmod("cxgbit_ext")
    assert p.returncode == 0, f"rmmod after the sweep: {p.stderr}"


SYS_DELETE_MODULE = 176  # x86_64


def test_every_allocation_of_the_module_unload_can_fail(module_ko: Path) -> None:
    """fail-nth through cxgbit_ext's unload (delete_module, as rmmod calls
    it): each allocation made in turn fails, one load and unload each. An
    unload cannot refuse for want of memory: whatever failed, the module is
    gone, with no sysfs directory and no configfs group, and loads again."""
    need_stack_filter(LOADER_WARNS)
    assert not Path("/sys/module/cxgbit_ext").exists(), "cxgbit_ext is loaded: this test loads it itself"
    stack_filter(kernel_end(), 0xFFFFFFFFFF000000)
    outcomes: dict[str, int] = {}

    def unload(nth: FailNth, n: int) -> bool:
        p = insmod(module_ko)
        assert p.returncode == 0, f"allocation {n}: insmod before the unload: {p.stderr}"
        nth.arm(n)
        rc = LIBC.syscall(SYS_DELETE_MODULE, b"cxgbit_ext", os.O_NONBLOCK)
        err = ctypes.get_errno()
        injected = nth.injected()
        assert rc == 0, f"allocation {n} failed: the unload says {errno.errorcode.get(err, err)}"
        assert not Path("/sys/module/cxgbit_ext").exists(), f"allocation {n} failed: the module is still listed"
        assert not CFS.exists(), f"allocation {n} failed: the unload left {CFS}"
        tally(outcomes, "unloaded" if injected else "clean")
        return injected

    points = sweep(unload)
    summary = f"cxe-test: fail-nth: module unload: {points} allocations {scope()} failed in turn, outcomes {outcomes}"
    Path("/dev/kmsg").write_text(summary + "\n")
    print(summary)
    p = insmod(module_ko)
    assert p.returncode == 0, f"insmod after the sweep: {p.stderr}"
    p = rmmod("cxgbit_ext")
    assert p.returncode == 0, f"rmmod after the sweep: {p.stderr}"


@pytest.fixture(scope="module")
def faulty_target(iscsid: None, module_ko: Path) -> Iterator[None]:
    need_fail_nth()
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=16 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        stack_filter(*module_text())
        try:
            yield
        finally:
            injecting(0)


# how an injected failure shows to the initiator: the connection refused,
# dropped or timed out, a login refused, a command answered with an error
EXPECTED = (OSError, EOFError, ConnectionClosed, LoginError, ProtocolError, ScsiError)


def attempt(fn: Callable[..., T], *args: object) -> T | None:
    """fn's result, or None when an injected failure ended it."""
    try:
        return fn(*args)
    except EXPECTED:
        return None


def round_params(r: int) -> Params:
    """Round r's login: digests always; the write's data after its immediate
    part unsolicited (InitialR2T=No) or solicited by R2Ts, by turns; the
    read's Data-In in one PDU or cut to 8 KiB PDUs, by pairs of rounds."""
    return Params(header_digest="CRC32C", data_digest="CRC32C", initial_r2t=r % 2 == 0,
                  max_recv_dlen=8192 if r % 4 >= 2 else 262144)  # fmt: skip


def round_trip(lba: int, data: bytes, params: Params) -> bool:
    """Log in with params, write data at lba, read it back: True when the
    write was acknowledged (a read that returns must return the data). A
    command left unanswered for STALL_S on a live connection is what LIO
    does when it cannot allocate a command's state nor the Reject for it
    (iscsit_handle_scsi_cmd() goes on after a failed iscsit_setup_scsi_cmd(),
    on its TCP path too): the initiator then does what one's command timeout
    does, drops the connection, and the round counts it in UNANSWERED."""
    c = Connection(OFF.tgt_ip, timeout=20)
    stalled = threading.Event()

    def stall() -> None:
        stalled.set()
        c.sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(STALL_S, stall)
    timer.start()
    written = False
    try:
        c.login(PDU_INITIATOR, IQN, params)
        c.scsi_write(lba, data)
        written = True
        got = c.scsi_read(lba, len(data) // BLOCK)
        assert got == data, f"LBA {lba}: a read that completed returned other data"
        c.logout()
    except EXPECTED:
        if not stalled.is_set():
            raise
        UNANSWERED.append(lba)
    finally:
        timer.cancel()
        c.close()
    return written


def discovery() -> None:
    c = Connection(OFF.tgt_ip, timeout=20)
    try:
        c.login(PDU_INITIATOR, None, discovery=True)
    finally:
        c.close()


def adapter_churn() -> None:
    a = CFS / "adapters/fi0"
    a.mkdir()
    try:
        (a / "netdev").write_text("lo")
    finally:
        a.rmdir()


FI_DEV = "fid0"  # a veth in the target's namespace, bound, renamed, unregistered


def netdev_churn() -> None:
    """An adapter bound to a new netdev that is renamed, then unregistered:
    whatever failed on the way, the adapter serves no netdev once it is gone."""
    a = CFS / "adapters/fi1"
    topo.sh("ip", "-n", topo.TGT_NS, "link", "add", FI_DEV, "type", "veth", "peer", "name", FI_DEV + "p")
    try:
        a.mkdir()
        with topo.in_netns():
            (a / "netdev").write_text(FI_DEV)
        topo.sh("ip", "-n", topo.TGT_NS, "link", "set", FI_DEV, "name", FI_DEV + "r", check=False)
    finally:
        for name in (FI_DEV, FI_DEV + "r"):
            topo.sh("ip", "-n", topo.TGT_NS, "link", "del", name, check=False)
        if a.exists():
            bound = (a / "netdev").read_text().strip()
            a.rmdir()
            assert bound == "", f"adapter fi1 still serves {bound} after the netdev was unregistered"


def portal_toggle() -> None:
    """The portal's offload switch off and on again (on may be refused)."""
    switch_off()
    with topo.in_netns():
        SWITCH.write_text("1")


def test_allocation_failures_lose_nothing(faulty_target: None) -> None:
    need_stack_filter()
    mark = kmsg_mark("fault injection")
    written: dict[int, bytes] = {}
    try:
        for r in range(ROUNDS):
            injecting(PROBABILITIES[r % len(PROBABILITIES)])
            lba = r * LBAS
            data = os.urandom(LBAS * BLOCK)
            if attempt(round_trip, lba, data, round_params(r)):
                written[lba] = data
            attempt(discovery)
            attempt(adapter_churn)
            attempt(netdev_churn)
            attempt(portal_toggle)
    finally:
        injecting(0)
    with topo.in_netns():
        if SWITCH.read_text().strip() == "0":
            SWITCH.write_text("1")
    failed = {k: TIMES - int((DEBUGFS / k / "times").read_text()) for k in KINDS}
    # what was acknowledged is there, through a clean login
    c = Connection(OFF.tgt_ip, timeout=30)
    try:
        c.login(PDU_INITIATOR, IQN, Params(header_digest="CRC32C", data_digest="CRC32C"))
        host, port = c.sock.getsockname()[:2]
        assert adapter_of(f"{host}:{port}") == "soft0", "after the rounds a clean login is not offloaded"
        for lba, data in written.items():
            assert c.scsi_read(lba, LBAS) == data, f"LBA {lba}: acknowledged write not read back"
        c.logout()
    finally:
        c.close()
    for leftover in ("fi0", "fi1"):
        if (CFS / "adapters" / leftover).exists():
            (CFS / "adapters" / leftover).rmdir()
    deadline = time.monotonic() + 60
    while connection_lines() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not connection_lines(), (CFS / "connections").read_text()
    log = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    log = log[log.rfind(mark) :]
    sites = set(re.findall(r"^\[[ \d.]+\]\s+(\w+)\+0x[0-9a-f]+/0x[0-9a-f]+ \[cxgbit_ext\]", log, re.M))
    summary = (f"cxe-test: fault injection: {failed['failslab']} slab and {failed['fail_page_alloc']} page "
               f"allocation failures injected over {ROUNDS} rounds at {PROBABILITIES} % "
               f"({len(written)} writes acknowledged, {len(UNANSWERED)} commands unanswered); "
               f"module frames in the sampled stacks: {','.join(sorted(sites)) or 'none'}")  # fmt: skip
    Path("/dev/kmsg").write_text(summary + "\n")
    print(summary)
    assert sum(failed.values()) > 0, "no failure was injected: the filter matched nothing"


STOCK_IQN = IQN + "-stock"


@pytest.fixture
def stock_beside(faulty_target: None) -> Iterator[None]:
    """A target on the same address without offload: only the stock portal
    lists it in SendTargets."""
    need_stack_filter()
    with topo.in_netns():
        topology.create(topology.Topology(iqn=STOCK_IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                                          portals=(("0.0.0.0", 3260),), offload=False, name_prefix="fis"))  # fmt: skip
    try:
        yield
    finally:
        topology.delete(STOCK_IQN)


def sendtargets() -> set[str] | None:
    """The targets a discovery session over the offloaded netdev lists, or
    None when the target ended the connection."""
    c = Connection(OFF.tgt_ip, timeout=20)
    try:
        c.login(PDU_INITIATOR, None, discovery=True)
        itt = c.next_itt()
        c.send(text_request(itt=itt, cmdsn=c.cmdsn, expstatsn=c.expstatsn, keys={"SendTargets": "All"}))
        rsp = c.recv()
        keys = rsp.data.decode(errors="replace").split("\0")
        return {k.split("=", 1)[1] for k in keys if k.startswith("TargetName=")}
    except EXPECTED:
        return None
    finally:
        c.close()


# where each allocation is made: accept's 8 KiB copy of the request (a
# page allocation), and the stock listener's request socket the software
# adapter hands the connection back with (the first slab allocation there)
FIRST_LOGIN_ALLOCATIONS = (("fail_page_alloc", "cxe_login_first"), ("failslab", "cxe_soft_hand_back"))


@pytest.mark.parametrize(("kind", "function"), FIRST_LOGIN_ALLOCATIONS)
def test_a_discovery_is_never_answered_offloaded(stock_beside: None, kind: str, function: str) -> None:
    """A discovery session's first Login request that accept cannot keep or
    hand to the stock portal for want of memory ends the connection, as an
    initiator retries, and is never answered on the offloaded portal, whose
    SendTargets lists only the targets with offload there."""
    every = {IQN, STOCK_IQN}
    assert sendtargets() == every
    start, end = function_text(function)
    for k in KINDS:
        set_attr(k, "require-start", start)
        set_attr(k, "require-end", end)
    set_attr(kind, "times", 1)
    try:
        set_attr(kind, "probability", 100)
        got = sendtargets()
    finally:
        injecting(0)
        start, end = module_text()
        for k in KINDS:
            set_attr(k, "require-start", start)
            set_attr(k, "require-end", end)
    assert (DEBUGFS / kind / "times").read_text().strip() == "0", f"no {kind} failure in {function}'s calls"
    assert got in (None, every), f"answered on the offloaded portal: {got}"
    assert sendtargets() == every


# LIO's offload switch of the target's portal (rtslib's NetworkPortal.offload)
SWITCH = Path("/sys/kernel/config/target/iscsi") / IQN / "tpgt_1/np/0.0.0.0:3260/cxgbit"
# An adapter's binding (netdev) and deletion, and the switch turned off,
# allocate nothing in the writer's context: no steps of their own.
STEPS = ("adapter create", "portal offload")
# What a step may answer a failed allocation: ENOMEM, or what the kernel's
# socket calls answer their own: ENFILE for a socket (__sock_create(): "no
# more sockets"), EADDRINUSE for a bind's hash bucket (inet_csk_get_port())
REFUSALS = (errno.ENOMEM, errno.ENFILE, errno.EADDRINUSE)
FN = CFS / "adapters/fn0"


def switch_off() -> None:
    with topo.in_netns():
        for _ in range(8):
            if SWITCH.read_text().strip() == "0":
                return
            SWITCH.write_text("0")
    raise AssertionError(f"{SWITCH}: still on after 8 writes of 0")


def armed_write(nth: FailNth, n: int, path: Path, value: bytes) -> tuple[OSError | None, bool]:
    """One write of value to path with allocation n failing: its error
    (None when it went through), and whether the failure was injected."""
    fd = os.open(path, os.O_WRONLY)
    try:
        nth.arm(n)
        try:
            os.write(fd, value)
            err = None
        except OSError as e:
            err = e
        return err, nth.injected()
    finally:
        os.close(fd)


# LIO's iscsit_add_np() frees a portal whose login thread does not start
# without releasing what its transport set up: the transport's module keeps
# a reference (no later test could unload cxgbit_ext) and its listener
# stays. The patch and its reproducer: upstream/0015-*.
LOGIN_THREAD = (
    "on the kernel's own LIO core a portal whose login thread cannot start leaves its transport's "
    "listener and a reference of its module behind, and no later test could unload it (upstream/0015; --patched-lio)"
)


@pytest.mark.parametrize("step", STEPS)
def test_every_allocation_of_a_configuration_step_can_fail(faulty_target: None, lio_core: str, step: str) -> None:
    """fail-nth through the module's configuration: each allocation made
    with cxgbit_ext's text on the stack (without the stack filter, each
    the step's system call makes) fails in turn, one attempt each,
    for an adapter's creation (mkdir) and the portal's offload switch
    turned on (LIO calls the module to set the portal up: its listener on
    soft0's netdev). A step either fails with ENOMEM (or REFUSALS' socket
    errors) and changes nothing (no adapter, the switch off), or succeeds and
    works (a login through the portal offloaded). Stock LIO's own listener
    answers the same failures with the same errors (iscsit_setup_np())."""
    if step == "portal offload" and not has_stack_filter() and lio_core != "patched":
        pytest.skip(f"no fault-injection stack filter here, so the sweep reaches LIO's own allocations: {LOGIN_THREAD}")
    outcomes: dict[str, int] = {}

    def create(nth: FailNth, n: int) -> bool:
        nth.arm(n)
        try:
            os.mkdir(FN)
            err = None
        except OSError as e:
            err = e
        injected = nth.injected()
        if err is not None:
            assert err.errno in REFUSALS, f"allocation {n} failed: mkdir says {err}"
            assert not FN.exists(), f"allocation {n} failed: the failed mkdir left {FN}"
            tally(outcomes, "refused")
            return injected
        assert (FN / "netdev").read_text().strip() == "", (FN / "netdev").read_text()
        assert (FN / "counters").read_text(), "a new adapter's counters do not read"
        tally(outcomes, "created" if injected else "clean")
        FN.rmdir()
        return injected

    def offload(nth: FailNth, n: int) -> bool:
        switch_off()
        with topo.in_netns():
            err, injected = armed_write(nth, n, SWITCH, b"1")
            on = SWITCH.read_text().strip()
        if err is not None:
            assert err.errno in REFUSALS, f"allocation {n} failed: the switch says {err}"
            assert on == "0", f"allocation {n} failed: the switch reads {on}"
            tally(outcomes, "refused")
            return injected
        assert on == "1", f"allocation {n}: switched on, it reads {on}"
        c = Connection(OFF.tgt_ip, timeout=20)
        try:
            c.login(PDU_INITIATOR, IQN, Params())
            host, port = c.sock.getsockname()[:2]
            assert adapter_of(f"{host}:{port}") == "soft0", f"allocation {n}: switched on, the login is not offloaded"
            c.logout()
        finally:
            c.close()
        tally(outcomes, "on" if injected else "clean")
        return injected

    injecting(0)
    try:
        points = sweep({"adapter create": create, "portal offload": offload}[step])
    finally:
        with topo.in_netns():
            if SWITCH.read_text().strip() == "0":
                SWITCH.write_text("1")
    summary = f"cxe-test: fail-nth: {step}: {points} allocations {scope()} failed in turn, outcomes {outcomes}"
    Path("/dev/kmsg").write_text(summary + "\n")
    print(summary)
    assert points > 0, f"{step}: no allocation was failed: the filter matched nothing"


@pytest.mark.parametrize("transport", ("stock", "offload"))
def test_a_portal_whose_login_thread_cannot_start_leaves_nothing(
    faulty_target: None, lio_core: str, transport: str
) -> None:
    """fail-nth through a portal's creation, every allocation of the system
    call (no stack filter), until LIO's start of the portal's login thread
    is the one that fails: the portal is refused (a mkdir with EINVAL, the
    offload switch with ENOMEM), its
    transport's module holds no more references than before, and the
    portal is created again; offloaded, its logins are offloaded."""
    if lio_core != "patched":
        pytest.skip(LOGIN_THREAD)
    repro = reproducer("np_thread_fail")
    try:
        with topo.in_netns():
            if transport == "stock":
                out = repro.run(IQN, OFF.tgt_ip, 3264)
            else:
                out = repro.run(IQN, "0.0.0.0", 3260, switch="cxgbit", module="cxgbit_ext")
    finally:
        stack_filter(*module_text())
        with topo.in_netns():
            if SWITCH.read_text().strip() == "0":
                SWITCH.write_text("1")
    summary = f"cxe-test: login thread's start failed, {transport}: " + "; ".join(out.lines())
    Path("/dev/kmsg").write_text(summary + "\n")
    print(summary)
    # A portal's mkdir answers EINVAL whatever LIO's error was (the target
    # core's target_fabric_make_np()); the switch's write answers LIO's own.
    expected = "EINVAL" if transport == "stock" else "ENOMEM"
    assert out.answer == expected, f"the portal's creation said {out.answer} when its login thread could not start"
    assert out.refs_after == out.refs_before, f"{out.module} kept {out.refs_after - out.refs_before} more references"
    assert out.again == "ok", f"the portal could not be created again: {out.again}"
    c = Connection(OFF.tgt_ip, timeout=20)
    try:
        c.login(PDU_INITIATOR, IQN, Params())
        host, port = c.sock.getsockname()[:2]
        assert adapter_of(f"{host}:{port}") == "soft0", "after the failed start, the login is not offloaded"
        c.logout()
    finally:
        c.close()
