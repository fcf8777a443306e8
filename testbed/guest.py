#!/usr/bin/env python3
"""Inside the testbed VM: prepare the guest, run the batch, save the kernel log.

Started by testbed/run through virtme-ng; not meant to be run on the host.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP))

from testbed import topo  # noqa: E402
from testbed.kmod import debug_release  # noqa: E402


def prepare(kver: str, results: Path, veth: bool = True) -> None:
    if os.uname().release != kver:
        sys.exit(f"guest: booted {os.uname().release}, expected {kver}")
    os.environ.update(
        HOME="/tmp/home",
        TARGETCLI_HOME="/tmp/targetcli",
        PYTHONDONTWRITEBYTECODE="1",
        CXE_KVER=kver,
        CXE_TOP=str(TOP),
        CXE_RESULTS=str(results),
    )
    Path("/tmp/home").mkdir(exist_ok=True)
    # what the host's root came over (virtio-fs or 9p), for testbed/run's summary
    mounts = [ln.split() for ln in Path("/proc/self/mounts").read_text().splitlines()]
    root_fs = [m[2] for m in mounts if m[1] == "/"][-1]
    (results / "rootfs.txt").write_text(root_fs + "\n")
    # Report a task stuck for 30 s (Debian's default is 120 s); 120 s on a
    # debug kernel (scripts/build-debug-kernel), several times slower
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("120\n" if debug_release(kver) else "30\n")
    if not Path("/sys/kernel/config/target").exists():
        subprocess.run(["modprobe", "target_core_mod"], check=True)
    if not os.path.ismount("/sys/kernel/config"):
        subprocess.run(["mount", "-t", "configfs", "none", "/sys/kernel/config"], check=True)
    # targetcli-fb needs a system D-Bus; the guest has none running.
    Path("/run/dbus").mkdir(exist_ok=True)
    subprocess.run(["dbus-daemon", "--system", "--fork"], check=False, capture_output=True)
    if veth:
        topo.setup_network()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--kver", required=True)
    ap.add_argument("--exec", dest="exec_", help="a script and its arguments, one shell-quoted string")
    ap.add_argument("--no-veth", action="store_true")
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args()
    try:
        prepare(a.kver, a.results, veth=not a.no_veth)
        os.chdir(TOP)
        if a.exec_:
            cmd = [sys.executable, *shlex.split(a.exec_)]
        else:
            cmd = [
                sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-ra", "-v", "--durations=0", "--timeout=300",
                f"--junitxml={a.results / 'junit.xml'}", *a.pytest_args,
            ]  # fmt: skip
        sys.stdout.flush()
        return subprocess.run(cmd).returncode
    finally:
        dmesg = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
        (a.results / "dmesg.txt").write_text(dmesg)


if __name__ == "__main__":
    sys.exit(main())
