"""testbed/run: how the batch reaches the guest, and a guest kernel that
stops for good.

virtme-ng puts its --exec on the kernel's command line, which x86 cuts at
2048 bytes; the debug lane's batch (fourteen files and a -k selection,
with kmemleak's scans around it) outgrew it, and the 6.1 debug kernel's
fortified strlen panicked at boot. That guest then sat halted until the
lane's three-hour timeout.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import time
from pathlib import Path
from types import ModuleType

from testbed.klog import stopped

TOP = Path(__file__).resolve().parents[2]
COMMAND_LINE_SIZE = 2048

# the 6.1 debug kernel's console when its command line was cut short
EARLY_PANIC = """\
[    0.000000] Command line: virtme_hostname=cxe console=ttyS0 panic=-1 virtme.exec=`c2x`
[    4.034662] detected buffer overflow in __fortify_strlen
[    4.038608] ------------[ cut here ]------------
[    4.038940] kernel BUG at lib/string_helpers.c:1027!
PANIC: early exception 0x06 IP 10:ffffffffa1e25ece error 0 cr2 0xff1100013ffff000
[    4.039474] CPU: 0 PID: 0 Comm: swapper Not tainted 6.1.0-57-amd64-dbg #1
"""


def load_run() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("testbed_run", str(TOP / "testbed/run"))
    spec = importlib.util.spec_from_loader("testbed_run", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_a_batch_of_any_length_reaches_the_guest_through_a_file(tmp_path: Path) -> None:
    run = load_run()
    script = "python3 testbed/guest.py -- " + " ".join(f"tests/vm/test_{i}.py" for i in range(400))
    assert len(script) > COMMAND_LINE_SIZE
    line = run.guest_exec(script, tmp_path)
    assert len(line) < 256, line
    assert (tmp_path / "guest.sh").read_text() == script + "\n"
    out = subprocess.run(["sh", "-c", line.replace("sh ", "cat ", 1)], capture_output=True, text=True, check=True)
    assert out.stdout == script + "\n"


def test_a_kernel_that_stopped_is_told_apart_from_one_that_boots() -> None:
    halted = stopped(EARLY_PANIC.splitlines())
    assert halted is not None and halted.startswith("PANIC: early exception")
    assert stopped(["[ 12.1] Kernel panic - not syncing: Fatal exception"]) is not None
    # panic=-1 on the command line, a WARN: the kernel goes on
    assert stopped([*EARLY_PANIC.splitlines()[:1], "[ 5.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2"]) is None


def test_a_halted_guest_is_killed_at_once_not_at_the_timeout(tmp_path: Path) -> None:
    run = load_run()
    console = tmp_path / "console.log"
    console.write_bytes(b"")
    # a "VM" that writes its console in pieces, then hangs
    writer = (
        f"printf '[ 0.0] booting\\nPANIC: early ex' >>{console}; sleep 3; "
        f"printf 'ception 0x06 IP 10:ffffffffa1e25ece\\n' >>{console}; exec sleep 600"
    )
    proc = subprocess.Popen(["sh", "-c", writer], start_new_session=True)
    t0 = time.monotonic()
    rc, timed_out, halted = run.wait_guest(proc, console, timeout=120)
    assert halted == "PANIC: early exception 0x06 IP 10:ffffffffa1e25ece"
    assert (rc, timed_out) == (-1, False)
    assert time.monotonic() - t0 < 30
    assert proc.poll() is not None


def test_a_guest_that_ends_gives_its_exit_code(tmp_path: Path) -> None:
    run = load_run()
    console = tmp_path / "console.log"
    console.write_text("[ 0.0] booting\n")
    proc = subprocess.Popen(["sh", "-c", "sleep 3; exit 7"], start_new_session=True)
    assert run.wait_guest(proc, console, timeout=120) == (7, False, None)
    slow = subprocess.Popen(["sleep", "600"], start_new_session=True)
    assert run.wait_guest(slow, console, timeout=3) == (-1, True, None)


def test_a_debug_kernels_checker_options_come_from_its_config(tmp_path: Path) -> None:
    # the -dbg kernel's checkers get their boot options and the kmemleak
    # scan; the -kcsan kernel has neither KASAN nor kmemleak, and a
    # kmemleak=on would be an unknown option handed to init
    run = load_run()
    for name, config, want in (
        ("dbg", "CONFIG_KASAN=y\nCONFIG_DEBUG_KMEMLEAK=y\n", {"KASAN", "DEBUG_KMEMLEAK"}),
        ("kcsan", "CONFIG_KCSAN=y\n# CONFIG_KASAN is not set\n# CONFIG_DEBUG_KMEMLEAK is not set\n", set()),
    ):
        (tmp_path / name / "build").mkdir(parents=True)
        (tmp_path / name / "build/.config").write_text(config)
        assert run.checkers(tmp_path / name) == want, name
