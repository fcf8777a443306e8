"""The TCG instruction-count plugin (insn_count.c), built for this
machine's qemu; perf/run and perf/scaleout load it into their VMs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PLUGIN_SRC = Path(__file__).resolve().parent / "insn_count.c"
QEMU_INCLUDE = Path("/var/cache/cxgbit-ext/qemu/include")


def build_plugin(out: Path) -> Path:
    """Build the plugin into ``out``; exit with the fix when qemu's plugin
    header is missing."""
    if not (QEMU_INCLUDE / "qemu-plugin.h").exists():
        sys.exit(f"perf: {QEMU_INCLUDE}/qemu-plugin.h missing: run 'make perf-deps'")
    so = out / "libinsn_count.so"
    cmd = ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", f"-I{QEMU_INCLUDE}",
           "-o", str(so), str(PLUGIN_SRC), "-lpthread"]  # fmt: skip
    subprocess.run(cmd, check=True)
    return so
