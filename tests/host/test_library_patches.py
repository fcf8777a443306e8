"""patches/ for the libraries we build on, against the versions installed.

Each reproducer exits 1 on the library as installed (the bug is still
there: the patch is still needed) and 0 with the patch applied to a copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import configshell_fb

PATCHES = Path(__file__).resolve().parents[2] / "patches"


def test_configshell_debug_cost_patch(tmp_path: Path) -> None:
    """configshell-fb/0001: Log.debug() costs the same from any stack depth."""
    copy = tmp_path / "configshell_fb"
    shutil.copytree(Path(configshell_fb.__file__).parent, copy)
    (patch,) = (PATCHES / "configshell-fb").glob("0001-*.patch")
    p = subprocess.run(["patch", "-p2", "-d", str(copy), "-i", str(patch)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    repro = [sys.executable, str(PATCHES / "configshell-fb/reproducers/debug_cost.py")]
    stock = subprocess.run(repro, capture_output=True, text=True, timeout=120)
    fixed = subprocess.run(repro, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(tmp_path)})
    print(f"configshell as installed: {stock.stdout}{stock.stderr}with 0001: {fixed.stdout}{fixed.stderr}")
    assert fixed.returncode == 0, "debug() with the patch still costs more from a deeper stack"
    assert stock.returncode == 1, "configshell as installed no longer walks the stack: 0001 is not needed"
