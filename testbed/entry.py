"""Entry scripts run under the project's .venv, whatever python3 started them.

Their shebang is ``#!/usr/bin/env python3``: from a plain shell that is the
system's python3, without what ``make deps`` installs into .venv (matplotlib,
virtme-ng, crc32c). Each entry script calls use_project_venv() before it
imports anything of the project or a third party.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

VENV = Path(__file__).resolve().parent.parent / ".venv"


def use_project_venv() -> None:
    """Return if this interpreter is .venv's; else run this same command line
    (interpreter options, script or -m module, arguments; the working
    directory is kept) under .venv/bin/python in place of this process."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    python = VENV / "bin/python"
    if not python.exists():
        sys.exit(f"{sys.argv[0]}: {VENV} is missing: run `make deps` in {VENV.parent} first")
    # already .venv's python but not in .venv (a broken venv): re-exec would loop
    if Path(sys.executable) == python:
        sys.exit(f"{sys.argv[0]}: {VENV} is not a working venv: remove it and run `make deps`")
    os.execv(python, [str(python), *sys.orig_argv[1:]])
