"""The module: which kernel it is built for, where, and its loading inside the
guest, as modprobe would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
# Where `make deps` keeps each kernel's extracted sources (LIO's and cxgb4's
# private headers), one directory per release: as kmod/cxgbit-ext/srcdir.conf
# names it for the module's Makefile and the scripts.
SRC_CACHE = Path(
    next(
        ln.split("=", 1)[1].strip()
        for ln in (TOP / "kmod/cxgbit-ext/srcdir.conf").read_text().splitlines()
        if ln.startswith("CXE_SRCDIR_DEFAULT=")
    )
)


def resolve_kernel(name: str) -> str:
    """Map a series (6.1) or a release (6.1.0-56-amd64) to an installed release."""
    kernels = subprocess.run(
        [str(TOP / "scripts/kernels"), "installed"], check=True, capture_output=True, text=True
    ).stdout.split()
    if name in kernels:
        return name
    for k in kernels:
        series = subprocess.run(
            [str(TOP / "scripts/kernels"), "series", k], check=True, capture_output=True, text=True
        ).stdout.strip()
        if series == name:
            return k
    sys.exit(f"testbed: kernel {name!r} is not installed; installed: {' '.join(kernels)}")


# The releases of scripts/build-debug-kernel: <Debian's release>-dbg (KASAN,
# UBSAN, lockdep, debugobjects, kmemleak, fault injection) and -kcsan
# (KCSAN). Both run several times slower than Debian's under TCG.
DEBUG_SUFFIXES = ("-dbg", "-kcsan")


def debug_release(release: str) -> bool:
    """Whether ``release`` is one of scripts/build-debug-kernel's kernels."""
    return release.endswith(DEBUG_SUFFIXES)


def module_ko(kver: str | None = None) -> Path:
    """build/<kver>/cxgbit_ext.ko for the running kernel (or ``kver``)."""
    return TOP / "build" / (kver or os.uname().release) / "cxgbit_ext.ko"


# The cxgb4 backend's module, built beside the core where the kernel has
# cxgb4 (kmod/cxgbit-ext/Kbuild); it needs the core loaded
CXGB4_BACKEND = "cxgbit_ext_cxgb4"


def backend_ko(core_ko: Path) -> Path:
    """The cxgb4 backend's module built with the core ``core_ko``."""
    return core_ko.with_name(f"{CXGB4_BACKEND}.ko")


def insmod(ko: Path, *params: str, provided: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """insmod with params after loading the module's dependencies (what
    modprobe would), but those in ``provided``: a loaded test module (the
    cxgb4 stand-in) exports their symbols in their place."""
    deps = subprocess.run(["modinfo", "-F", "depends", str(ko)], capture_output=True, text=True, check=True)
    for dep in filter(None, deps.stdout.strip().split(",")):
        if dep not in provided:
            subprocess.run(["modprobe", dep], check=True)
    return subprocess.run(["insmod", str(ko), *params], capture_output=True, text=True)


def rmmod(mod: str) -> subprocess.CompletedProcess[str]:
    """rmmod, its answer kept: a refusal ("in use") is what some tests want."""
    return subprocess.run(["rmmod", mod], capture_output=True, text=True)
