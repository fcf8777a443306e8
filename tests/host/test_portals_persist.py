"""Why a portal is or is not offloaded; save/restore all-or-nothing.

Over a copy of the module's configfs layout (the host cannot load it); the
VM suite runs the same code against the real module and LIO.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cxgbit_ext import cli, persist, portals
from cxgbit_ext.control import FORMAT, Control, CxgbitExtError

from .conftest import make_tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(
        tmp_path, version="0.2.0", netdev="tgt0",
        counters="connections 0\npdus_rx 0\npdus_tx 0\nbytes_placed 0\n",
        portals="198.18.0.1:3260\n198.18.1.1:3260\n0.0.0.0:3261\n10.9.9.9:3260\n",
        connections="",
    )  # fmt: skip


ADDRS = {"198.18.0.1": "tgt0", "198.18.1.1": "tgt1", "127.0.0.1": "lo"}


@pytest.mark.parametrize(
    ("ip", "port", "requested", "summary"),
    [
        ("198.18.0.1", 3260, True, "offload: soft0 hcrc+dcrc+ddp+iso+rxagg"),
        ("0.0.0.0", 3261, True, "offload: soft0 hcrc+dcrc+ddp+iso+rxagg on tgt0"),
        ("198.18.0.1", 3260, False, "offload: off — not enabled on this portal (enable_offload true)"),
        ("198.18.1.1", 3260, True, "offload: off — 198.18.1.1 is on tgt1, which no adapter serves (soft0 serves tgt0)"),
        ("198.18.0.1", 3999, True, "offload: off — cxgbit_ext holds no listener for it (see dmesg)"),
        ("10.9.9.9", 3260, True, "offload: off — 10.9.9.9 is on no netdev of this network namespace"),
    ],
)
def test_portal_state_and_reason(tree: Path, ip: str, port: int, requested: bool, summary: str) -> None:
    assert portals.state(Control(tree), ip, port, requested, ADDRS).summary() == summary


def test_portal_state_module_missing_and_no_adapter(tree: Path, tmp_path: Path) -> None:
    s = portals.state(Control(tmp_path / "absent"), "198.18.0.1", 3260, True, ADDRS)
    assert not s.offloaded and "module is not loaded" in s.reason
    (tree / "adapters/soft0/netdev").write_text("\n")
    s = portals.state(Control(tree), "198.18.0.1", 3260, True, ADDRS)
    assert s.reason == "no adapter serves a netdev (cxgbit-ext bind soft0 <netdev>)"


def test_addr_netdevs_sees_loopback() -> None:
    assert portals.addr_netdevs().get("127.0.0.1") == "lo"


def test_save_then_restore_round_trips(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "etc/cxgbit-ext.json"
    ctl = Control(tree)
    ctl.set_netdev("soft0", "lo")
    assert cli.main(["--configfs", str(tree), "save", "--file", str(f)]) == 0
    saved = json.loads(f.read_text())
    assert saved["format"] == FORMAT and saved["adapters"] == [{"name": "soft0", "netdev": "lo"}]
    assert f.stat().st_mode & 0o777 == 0o600
    ctl.set_netdev("soft0", "*")
    assert cli.main(["--configfs", str(tree), "restore", "--file", str(f)]) == 0
    assert ctl.dump() == {"format": FORMAT, "adapters": [{"name": "soft0", "netdev": "lo"}]}
    assert "restored cxgbit-ext settings" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "bad JSON"),
        ('{"soft0": "lo"}', "format None is not supported"),
        ('{"format": 0, "adapters": []}', "format 0 is not supported"),
        ('{"format": 1, "adapters": [{"name": "soft0"}]}', "expected {'name': str, 'netdev': str}"),
        ('{"format": 1, "adapters": [{"name": "soft0", "netdev": "lo"}, {"name": "soft0", "netdev": "lo"}]}',
         "named twice"),
        ('{"format": 1, "adapters": [{"name": "soft7", "netdev": "lo"}]}', "do not exist here"),
        ('{"format": 1, "adapters": [{"name": "soft0", "netdev": "nosuch0"}]}', "not in this network namespace"),
        ('{"format": 1, "adapters": [{"name": "soft0", "netdev": "a/b"}]}', "not a netdev name"),
    ],
)  # fmt: skip
def test_bad_save_files_change_nothing(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    f = tmp_path / "bad.json"
    f.write_text(content)
    before = Control(tree).dump()
    assert cli.main(["--configfs", str(tree), "restore", "--file", str(f)]) == 1
    assert message in capsys.readouterr().err
    assert Control(tree).dump() == before


def test_setup_rolls_back_when_the_kernel_refuses_a_step(tree: Path, tmp_path: Path) -> None:
    soft1 = tree / "adapters/soft1"
    soft1.mkdir()
    for name, text in (("type", "soft"), ("caps", ""), ("counters", "connections 0")):
        (soft1 / name).write_text(text + "\n")
    # readable, but a write fails even for root, as the kernel's -EINVAL would
    (soft1 / "netdev").symlink_to("/proc/version")
    ctl = Control(tree)
    before = {"soft0": ctl.adapter("soft0").netdev}
    cfg = {"format": FORMAT, "adapters": [{"name": "soft0", "netdev": "lo"}, {"name": "soft1", "netdev": "lo"}]}
    with pytest.raises(CxgbitExtError, match="cannot serve netdev"):
        ctl.setup(cfg)
    assert {"soft0": ctl.adapter("soft0").netdev} == before


def test_lio_offload_requested_reads_rtslib_files(tmp_path: Path) -> None:
    f = tmp_path / "saveconfig.json"
    f.write_text(json.dumps({"targets": [{"tpgs": [{"portals": [
        {"ip_address": "0.0.0.0", "port": 3260, "offload": True, "iser": False},
        {"ip_address": "198.18.1.1", "port": 3260, "offload": False, "iser": False},
    ]}]}]}))  # fmt: skip
    assert persist.offload_requested(f) == [("0.0.0.0", 3260)]
    assert persist.beside(persist.LIO_DEFAULT) == Path("/etc/rtslib-fb-target/cxgbit-ext.json")
    assert persist.beside(Path("/tmp/x.json")) == Path("/tmp/x.cxgbit-ext.json")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chap", "user:short"], "CHAP as USER:SECRET"),
        (["--size", "12Q"], "a size like 512M"),
        (["--portal", "1.2.3.4:99999"], "a portal like"),
    ],
)
def test_topology_bad_arguments_exit_with_the_reason(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["topology", "create", "--iqn", "iqn.2026-11.x:y", *args])
    assert e.value.code == 2 and message in capsys.readouterr().err
