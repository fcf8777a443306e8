"""targetcli-offload's /offload/adapters nodes, driven through configshell
as the interactive shell drives them (run_cmdline), over the fake configfs
tree; tests/vm/test_admin.py does the same against the real module.
"""

from __future__ import annotations

import errno
import io
from pathlib import Path

import pytest
from configshell_fb import ConfigShell, ExecutionError
from configshell_fb.console import Console
from targetcli.ui_node import UINode

from cxgbit_ext.control import Control, counter_lines
from targetcli_offload import ui

from .conftest import EXAMPLE_DEVICE_COUNTERS, FakeKernel, add_example_backend, make_tree, snapshot


class Shell:
    def __init__(self, home: Path) -> None:
        self.shell = ConfigShell(str(home))
        self.buf = io.StringIO()
        con = Console(stdout=self.buf, stderr=self.buf)
        self.shell.con = con
        self.shell.log.con = con
        self.root = UINode("/", shell=self.shell)
        ui.UIAdapters(self.root)

    def run(self, line: str) -> str:
        self.buf.seek(0)
        self.buf.truncate()
        self.shell.run_cmdline(line)
        return self.buf.getvalue()


@pytest.fixture
def kernel(tmp_path: Path, kernel_for, netns, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    k = kernel_for(make_tree(tmp_path, version="0.3.0", netdev="tgt0", portals="",
                             connections=""))  # fmt: skip
    monkeypatch.setattr(ui, "control", lambda: Control(k.root))
    monkeypatch.setattr(ui, "netdevs", lambda: set(netns))
    return k


@pytest.fixture
def sh(kernel: FakeKernel, tmp_path: Path) -> Shell:
    return Shell(tmp_path / "home")


def test_create_set_get_delete(kernel: FakeKernel, sh: Shell) -> None:
    tree = kernel.root
    out = sh.run("/adapters create name=soft1 netdev=tgt1")
    assert "Created adapter soft1 (soft, serves tgt1)." in out
    assert (tree / "adapters/soft1/netdev").read_text() == "tgt1\n"
    assert "Parameter ddp is now 'false'." in sh.run("/adapters/soft1 set offload ddp=false")
    assert (tree / "adapters/soft1/ddp").read_text() == "0\n"
    assert sh.run("/adapters/soft1 get offload ddp iso").split() == ["ddp=false", "iso=true"]
    ls = sh.run("/adapters ls")
    assert "[soft on tgt1: hcrc+dcrc+iso+t10pi (ddp off), 0 conns]" in ls, ls
    assert "[soft on tgt0: hcrc+dcrc+ddp+iso+t10pi, 0 conns]" in ls, ls
    assert "offload: ddp (direct data placement), switched off (set offload ddp=true)" in sh.run("/adapters/soft1 info")
    assert "Deleted adapter soft1." in sh.run("/adapters delete name=soft1")
    assert not (tree / "adapters/soft1").exists()
    assert "soft1" not in sh.run("/adapters ls")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("/adapters create name=soft0", "adapter soft0 already exists"),
        ("/adapters create name=soft1 netdev=tgt0", "netdev tgt0 is already served by adapter soft0"),
        ("/adapters create name=soft1 netdev=nosuch0", "no netdev 'nosuch0' in this network namespace"),
        ("/adapters delete name=soft0", "soft0 is built in; unbind it instead"),
        ("/adapters/soft0 set offload ddp=maybe", "Not setting ddp! Syntax error, 'maybe' is not true|false."),
        # the first value is good, the second is not: neither is set
        ("/adapters/soft0 set offload ddp=false iso=maybe", "Not setting iso!"),
        ("/adapters/soft0 set offload ddp=false crc=false", "adapter soft0: no setting 'crc'; settings: ddp, iso"),
    ],
)
def test_refused_with_the_reason_and_nothing_changed(kernel: FakeKernel, sh: Shell, line: str, message: str) -> None:
    before = snapshot(kernel.root)
    with pytest.raises(ExecutionError) as e:
        sh.run(line)
    assert message in str(e.value)
    assert snapshot(kernel.root) == before


def test_set_offload_is_undone_when_the_kernel_refuses_a_switch(kernel: FakeKernel, sh: Shell) -> None:
    """Both values are good, the kernel refuses the second write: the first
    is put back, as 'cxgbit-ext' does it."""
    kernel.refuse["adapters/soft0/iso"] = errno.EIO
    before = snapshot(kernel.root)
    with pytest.raises(ExecutionError) as e:
        sh.run("/adapters/soft0 set offload ddp=false iso=false")
    assert "cannot set iso to 0" in str(e.value) and "nothing was changed" in str(e.value), e.value
    assert snapshot(kernel.root) == before


def test_completion(sh: Shell) -> None:
    adapters = sh.root.get_node("/adapters")
    assert adapters.ui_complete_create({}, "", "name") == ["soft1"]
    assert adapters.ui_complete_create({}, "tg", "netdev") == ["tgt0", "tgt1"]
    sh.run("/adapters create name=soft1")
    assert adapters.ui_complete_delete({}, "", "name") == ["soft1"]
    assert sh.root.get_node("/adapters/soft1").ui_complete_set({"group": "offload"}, "", "ddp") == ["true", "false"]


def test_status_says_which_backends_offload_and_why_not(sh: Shell) -> None:
    ui.UIOffload(sh.root)
    out = sh.run("/offload status")
    assert "backend soft: on" in out
    assert "backend cxgb4: off: no Chelsio T5/T6 adapter attached (cxgb4 has none)" in out
    assert "adapter soft0 (soft) serves tgt0" in out


def test_a_backend_no_tool_knows_shows_as_the_module_reports_it(kernel: FakeKernel, sh: Shell) -> None:
    """Backend "example": its caps in status, its adapter's type and
    offloads in the tree, its device adapter's counters, and a connection
    on that adapter with its backend's offloads."""
    add_example_backend(kernel)
    (kernel.root / "connections").write_text(
        "198.18.1.2:4000 198.18.1.1:3260 adapter=ex1 login=0 hdigest=1 ddigest=0 ddp=1 iso=1 pdus_rx=3 pdus_tx=4 "
        "bytes_placed=0 bytes_copied=512\n"
    )
    ui.UIOffload(sh.root)
    out = sh.run("/offload status")
    assert "backend example: on (offloads hcrc dcrc)" in out, out
    assert "adapter ex0 (example) serves no netdev: hcrc+dcrc" in out, out
    sh.run("/adapters refresh")
    assert "[example, serves no netdev]" in sh.run("/adapters ls")
    info = sh.run("/adapters/ex0 info").splitlines()
    assert info[1:] == ["type: example", "serves: no netdev", "offload: hcrc (header CRC32C)",
                        "offload: dcrc (data CRC32C)"]  # fmt: skip
    counters = sh.run("/offload counters")
    assert "ex1:\n" + "\n".join(counter_lines(EXAMPLE_DEVICE_COUNTERS)) in counters, counters
    assert "on ex1: hcrc]" in sh.run("/offload/connections ls")
