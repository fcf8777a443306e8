"""patches/ for the libraries we build on, against the versions installed.

Each reproducer exits 1 on the library as installed (the bug is still
there: the patch is still needed) and 0 with the patch applied to a copy.
"""

from __future__ import annotations

import ast
import inspect
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import configshell_fb

PATCHES = Path(__file__).resolve().parents[2] / "patches"


Run = subprocess.CompletedProcess[str]


def reproduce(package: Path, library: str, strip: int, script: str, tmp_path: Path) -> tuple[Run, Run]:
    """The library's reproducer on the package as installed, and on a copy
    of it (in tmp_path) with the library's 0001 applied (patch -p strip,
    from the copy's directory for -p2, from tmp_path for -p1)."""
    copy = tmp_path / package.name
    shutil.copytree(package, copy)
    (patch,) = (PATCHES / library).glob("0001-*.patch")
    where = copy if strip == 2 else tmp_path
    p = subprocess.run(["patch", f"-p{strip}", "-d", str(where), "-i", str(patch)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    repro = [sys.executable, str(PATCHES / library / "reproducers" / script)]
    stock = subprocess.run(repro, capture_output=True, text=True, timeout=120)
    fixed = subprocess.run(repro, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(tmp_path)})
    print(f"{library} as installed: {stock.stdout}{stock.stderr}with 0001: {fixed.stdout}{fixed.stderr}")
    return stock, fixed


def test_configshell_debug_cost_patch(tmp_path: Path) -> None:
    """configshell-fb/0001: Log.debug() costs the same from any stack depth."""
    package = Path(configshell_fb.__file__).parent
    stock, fixed = reproduce(package, "configshell-fb", 2, "debug_cost.py", tmp_path)
    assert fixed.returncode == 0, "debug() with the patch still costs more from a deeper stack"
    assert stock.returncode == 1, "configshell as installed no longer walks the stack: 0001 is not needed"


def test_targetcli_rebind_patch(tmp_path: Path) -> None:
    """targetcli-fb/0001: a subclass rebound as UIPortal/UIMultiTPGTarget constructs."""
    import targetcli

    stock, fixed = reproduce(Path(targetcli.__file__).parent, "targetcli-fb", 1, "rebind.py", tmp_path)
    assert fixed.returncode == 0, "a rebound subclass still fails with the patch"
    assert stock.returncode == 1, "targetcli as installed constructs a rebound subclass: 0001 is not needed"


# The stock constructors targetcli_offload.ui.OffloadPortal and OffloadTarget
# re-implement (targetcli-fb/0001 says why), as targetcli 2.1.53 has them
STOCK_CONSTRUCTORS = {
    "UIPortal": [
        'name = "%s:%s" % (portal.ip_address, portal.port)',
        "super(UIPortal, self).__init__(name, portal, parent)",
        "self.refresh()",
    ],
    "UIMultiTPGTarget": [
        "super(UIMultiTPGTarget, self).__init__(target.wwn, target, parent)",
        "self.refresh()",
    ],
}


def test_targetcli_constructors_are_those_targetcli_offload_copies() -> None:
    """When targetcli changes either constructor, OffloadPortal's and
    OffloadTarget's copies must follow it (or go, once 0001 is in)."""
    import targetcli.ui_target as ui_target

    for name, body in STOCK_CONSTRUCTORS.items():
        tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(ui_target, name).__init__)))
        (fn,) = tree.body
        assert isinstance(fn, ast.FunctionDef)
        got = [
            ast.unparse(stmt)
            for stmt in fn.body
            if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Constant)
        ]
        assert got == [ast.unparse(ast.parse(s).body[0]) for s in body], f"targetcli's {name}.__init__ changed: {got}"


def test_libiscsi_sigpipe_patch() -> None:
    """libiscsi/0001: a target resetting the connection between a PDU's
    header and its data kills the application with SIGPIPE; ignored, the
    write fails and the client returns (what conformance/ relies on)."""
    repro = [sys.executable, str(PATCHES / "libiscsi/reproducers/sigpipe.py")]
    stock = subprocess.run(repro, capture_output=True, text=True, timeout=120)
    ignored = subprocess.run([*repro, "--ignore-sigpipe"], capture_output=True, text=True, timeout=120)
    print(f"libiscsi as installed: {stock.stdout}{stock.stderr}SIGPIPE ignored: {ignored.stdout}{ignored.stderr}")
    assert ignored.returncode == 0, "the client did not survive the reset with SIGPIPE ignored"
    assert stock.returncode == 1, "libiscsi as installed survives a reset connection: 0001 is not needed"
