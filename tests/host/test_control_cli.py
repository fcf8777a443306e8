"""cxgbit_ext.control and the CLI over a copy of the module's configfs layout.

The host cannot load the module, so these use a tree laid out as the module
lays out /sys/kernel/config/cxgbit_ext; the VM suite runs the same calls
against the real one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cxgbit_ext import cli
from cxgbit_ext.control import Control, CxgbitExtError, ModuleNotLoaded


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "cxgbit_ext"
    soft0 = root / "adapters" / "soft0"
    soft0.mkdir(parents=True)
    (soft0 / "type").write_text("soft\n")
    (soft0 / "netdev").write_text("*\n")
    (soft0 / "counters").write_text("connections 3\npdus_rx 10\npdus_tx 12\nbytes_placed 4096\n")
    (root / "version").write_text("0.1.0\n")
    (root / "transport").write_text("cxgbit_ext\n")
    (root / "portals").write_text("198.18.0.1:3260\n[::]:3260\n")
    (root / "connections").write_text(
        "198.18.0.2:4000 198.18.0.1:3260 adapter=soft0 hdigest=1 ddigest=0 pdus_rx=5 pdus_tx=6 "
        "bytes_placed=4096 bytes_copied=0\n"
    )
    return root


def test_status_reads_the_tree(tree: Path) -> None:
    st = Control(tree).status()
    assert st.version == "0.1.0"
    assert st.portals == ["198.18.0.1:3260", "[::]:3260"]
    (a,) = st.adapters
    assert (a.name, a.type, a.netdev, a.counters["bytes_placed"]) == ("soft0", "soft", "*", 4096)
    (c,) = st.connections
    assert (c.peer, c.adapter, c.hdigest, c.ddigest, c.counters["pdus_tx"]) == (
        "198.18.0.2:4000",
        "soft0",
        True,
        False,
        6,
    )


def test_bind_writes_netdev_and_rejects_unknown_adapter(tree: Path) -> None:
    ctl = Control(tree)
    ctl.set_netdev("soft0", "tgt0")
    assert (tree / "adapters/soft0/netdev").read_text() == "tgt0"
    with pytest.raises(CxgbitExtError, match="no adapter 'soft9'"):
        ctl.set_netdev("soft9", "tgt0")


def test_cli_json(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "status"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["transport"] == "cxgbit_ext" and out["portals"][0] == "198.18.0.1:3260"


def test_module_not_loaded_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ModuleNotLoaded, match="not loaded"):
        Control(tmp_path / "absent").status()
    assert cli.main(["--configfs", str(tmp_path / "absent"), "status"]) == 1
    assert "module is not loaded" in capsys.readouterr().err
