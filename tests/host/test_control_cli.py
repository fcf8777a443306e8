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
from cxgbit_ext.control import Control, ModuleNotLoaded


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "cxgbit_ext"
    (root / "adapters" / "soft0").mkdir(parents=True)
    (root / "version").write_text("0.1.0\n")
    (root / "transport").write_text("cxgbit_ext\n")
    (root / "portals").write_text("198.18.0.1:3260\n[::]:3260\n")
    return root


def test_status_reads_the_tree(tree: Path) -> None:
    st = Control(tree).status()
    assert st.version == "0.1.0"
    assert st.portals == ["198.18.0.1:3260", "[::]:3260"]
    assert st.adapters == ["soft0"]


def test_cli_json(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "status"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["transport"] == "cxgbit_ext" and out["portals"][0] == "198.18.0.1:3260"


def test_module_not_loaded_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ModuleNotLoaded, match="not loaded"):
        Control(tmp_path / "absent").status()
    assert cli.main(["--configfs", str(tmp_path / "absent"), "status"]) == 1
    assert "module is not loaded" in capsys.readouterr().err
