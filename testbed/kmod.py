"""Load the freshly built module inside the guest, as modprobe would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent


def module_ko(kver: str | None = None) -> Path:
    """build/<kver>/cxgbit_ext.ko for the running kernel (or ``kver``)."""
    return TOP / "build" / (kver or os.uname().release) / "cxgbit_ext.ko"


def insmod(ko: Path) -> subprocess.CompletedProcess[str]:
    """insmod after loading the module's dependencies (what modprobe would)."""
    deps = subprocess.run(["modinfo", "-F", "depends", str(ko)], capture_output=True, text=True, check=True)
    for dep in filter(None, deps.stdout.strip().split(",")):
        subprocess.run(["modprobe", dep], check=True)
    return subprocess.run(["insmod", str(ko)], capture_output=True, text=True)
