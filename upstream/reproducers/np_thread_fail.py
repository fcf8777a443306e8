#!/usr/bin/env python3
"""Fail the start of a portal's login thread and see what LIO leaves.

Reproducer for
upstream/0015-scsi-target-iscsi-release-a-portal-whose-login-thread-cannot-start.patch.
With fail-nth (Documentation/fault-injection), each allocation of a
portal's creation fails in turn, one attempt each, until the one that
fails is kthread_run()'s in iscsit_add_np() (the kernel logs "Unable to
create kthread: iscsi_np"). The portal is created with a mkdir in
LIO's configfs (LIO's iSCSI/TCP) or, with --switch, an existing portal's
offload switch is written 1 (cxgbit, iser: --module names the
transport's module). Then it compares the module's reference count with
its value before and creates the portal again.

Stock 6.1 and 6.12 free the portal without releasing what its transport
set up: on iSCSI/TCP the listening socket stays bound, so the portal
cannot be created again ("kernel_bind() failed: -98") until the next
boot; an offload transport's module (--module) keeps a reference (the
core's own iSCSI/TCP takes none). It exits 1 then, 0 when nothing was
left behind.

It needs a kernel with fault injection (CONFIG_FAILSLAB,
CONFIG_FAULT_INJECTION_DEBUG_FS, debugfs mounted) and root; it creates
TARGET's TPG 1 when it is missing and removes what it created. It fails
allocations of its own thread only, but every one the system call makes.
Run it on a test machine only: on a stock kernel, what it leaves stays
until the next boot. Example:

  upstream/reproducers/np_thread_fail.py 127.0.0.1:3264 iqn.2026-12.org.cxgbit-ext:np
"""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # run as a script, it goes on under .venv, as every reproducer

from cxgbit_ext import portals

LIO = Path("/sys/kernel/config/target/iscsi")
DEBUGFS = Path("/sys/kernel/debug")
THREAD_FAILED = "Unable to create kthread: iscsi_np"
ULONG_MAX = (1 << 64) - 1


def every_allocation() -> None:
    """Let fail-nth fail any allocation of this thread: GFP_KERNEL ones
    too, whatever code is on the stack."""
    for kind in ("failslab", "fail_page_alloc"):
        d = DEBUGFS / kind
        if not d.exists():
            raise SystemExit(f"{d}: no fault injection here (a kernel with CONFIG_FAILSLAB and debugfs)")
        (d / "ignore-gfp-wait").write_text("N\n")
        if (d / "require-start").exists():  # the stack filter: off
            (d / "require-start").write_text("0\n")
            (d / "require-end").write_text(f"{ULONG_MAX}\n")


def refcnt(module: str) -> int:
    return int(Path(f"/sys/module/{module}/refcnt").read_text())


class Kmsg:
    """The kernel log's records from now on."""

    def __init__(self) -> None:
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def read(self) -> str:
        out = []
        while True:
            try:
                out.append(os.read(self.fd, 8192).decode(errors="replace"))
            except BlockingIOError:
                return "".join(out)
            except OSError as e:
                if e.errno != errno.EPIPE:  # overwritten records: go on
                    raise

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class Outcome:
    module: str  # the transport's, whose references count
    failed: int = 0  # allocations failed, the thread's last
    answers: dict[str, int] = field(default_factory=dict)  # what the step answered each
    answer: str = ""  # what the step answered the thread's failure
    refs_before: int = 0
    refs_after: int = 0
    again: str = ""  # the portal created again: "ok" or its error

    @property
    def left_behind(self) -> bool:
        return self.refs_after != self.refs_before or self.again != "ok"

    def lines(self) -> list[str]:
        return [
            f"{self.failed} allocations failed in turn, answers {self.answers}",
            f"the login thread's start failed: the step said {self.answer}",
            f"{self.module} references: {self.refs_before} before, {self.refs_after} after",
            f"the portal created again: {self.again}",
        ]


def _answer(e: OSError | None) -> str:
    return "ok" if e is None else errno.errorcode.get(e.errno or 0, str(e.errno))


class Portal:
    """A portal's creation (a mkdir) or its offload switch written 1, and
    their undoing."""

    def __init__(self, iqn: str, ip: str, port: int, switch: str | None) -> None:
        self.tpg = LIO / iqn / "tpgt_1"
        self.np = self.tpg / "np" / f"{portals.lio_ip(ip)}:{port}"
        self.switch = switch
        self.made: list[Path] = []

    def prepare(self) -> None:
        if not LIO.exists():  # LIO's iSCSI fabric, as targetcli makes it
            subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
            LIO.mkdir(exist_ok=True)
        for d in (LIO / self.tpg.parent.name, self.tpg):
            if not d.exists():
                d.mkdir()
                self.made.append(d)
        if self.switch and not self.np.exists():
            self.np.mkdir()
            self.made.append(self.np)
        self.undo()

    def undo(self) -> None:
        if self.switch is None:
            if self.np.exists():
                self.np.rmdir()
            return
        f = self.np / self.switch
        for _ in range(8):  # one 0 may leave it on: upstream/0001
            if f.read_text().strip() == "0":
                return
            f.write_text("0")
        raise SystemExit(f"{f}: still on after 8 writes of 0")

    def create(self, nth: int = 0) -> tuple[OSError | None, bool]:
        """Create (or switch on) with the nth allocation failing (none with
        0): None when it went through, or its error; and whether the
        failure happened (not when the step made fewer allocations)."""
        fd = os.open(self.np / self.switch, os.O_WRONLY) if self.switch else None
        # opened and armed before the step: only the step's own
        # allocations count; read back, it is 0 once the failure happened
        nth_fd = os.open("/proc/thread-self/fail-nth", os.O_RDWR)
        try:
            os.write(nth_fd, str(nth).encode())
            try:
                if fd is None:
                    self.np.mkdir()
                else:
                    os.write(fd, b"1")
                err = None
            except OSError as e:
                err = e
            left = int(os.pread(nth_fd, 32, 0))
            os.write(nth_fd, b"0")
            return err, nth > 0 and left == 0
        finally:
            os.close(nth_fd)
            if fd is not None:
                os.close(fd)

    def cleanup(self) -> None:
        self.undo()
        for d in reversed(self.made):
            d.rmdir()


def _round(portal: Portal, log: Kmsg, out: Outcome) -> bool:
    """Fail the step's allocation 1, 2, ... in turn: True once the login
    thread's start is the one that failed, False once the step makes fewer
    allocations than the one armed."""
    n = 0
    while True:
        n += 1
        err, injected = portal.create(n)
        said = _answer(err)
        out.answers[said] = out.answers.get(said, 0) + 1
        out.failed += injected
        if THREAD_FAILED in log.read():
            out.answer = said
            return True
        if err is None:
            portal.undo()
        if not injected:
            return False


def run(iqn: str, ip: str, port: int, switch: str | None = None, module: str = "iscsi_target_mod",
        rounds: int = 20) -> Outcome:  # fmt: skip
    """Fail the portal's creation one allocation further each time until
    its login thread's start fails, then create it again. How many
    allocations come before the thread's varies from one attempt to the
    next (the debug kernel's own bookkeeping), so a round that reaches the
    step's last allocation without it starts again from the first."""
    every_allocation()
    portal = Portal(iqn, ip, port, switch)
    portal.prepare()
    out = Outcome(module, refs_before=refcnt(module))
    log = Kmsg()
    try:
        if not any(_round(portal, log, out) for _ in range(rounds)):
            raise SystemExit(
                f"{rounds} rounds of {out.failed} failed allocations and the login thread's start never failed"
            )
        out.refs_after = refcnt(module)
        err, _ = portal.create()
        out.again = _answer(err)
        portal.cleanup()
    finally:
        log.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("portal", type=common.portal, help="the portal to create, IP:PORT or [IPV6]:PORT")
    ap.add_argument("target", help="the target's IQN (its TPG 1 is created if missing)")
    ap.add_argument("--switch", choices=("cxgbit", "iser"), help="write the portal's offload switch instead")
    ap.add_argument("--module", default="iscsi_target_mod", help="the transport's module whose references count")
    a = ap.parse_args()
    ip, port = a.portal
    out = run(a.target, ip, port, a.switch, a.module)
    for line in out.lines():
        print(line)
    print("LEFT BEHIND: the portal's listener and its module's reference" if out.left_behind else "released")
    return 1 if out.left_behind else 0


if __name__ == "__main__":
    sys.exit(main())
