"""Adapters made and removed, bound, and their offloads switched, through
cxgbit_ext.control and the CLI, over a copy of the module's configfs tree
whose kernel side (mkdir/rmdir, writes refused with the module's errnos)
conftest.FakeKernel plays. The VM suite does the same against the module.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from cxgbit_ext import cli
from cxgbit_ext.control import Control, CxgbitExtError

from .conftest import FakeKernel, make_tree, snapshot

ALL = ["hcrc", "dcrc", "ddp", "iso", "t10pi"]


@pytest.fixture
def kernel(tmp_path: Path, kernel_for, netns) -> FakeKernel:
    return kernel_for(make_tree(
        tmp_path, version="0.3.0", netdev="tgt0", portals="", connections="",
    ))  # fmt: skip


@pytest.fixture
def tree(kernel: FakeKernel) -> Path:
    return kernel.root


def run(tree: Path, *args: str) -> int:
    return cli.main(["--configfs", str(tree), *args])


def test_create_lists_the_new_adapter_serving_its_netdev(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(tree, "--json", "adapters", "create", "soft1", "--netdev", "tgt1") == 0
    listed = {a["name"]: a for a in json.loads(capsys.readouterr().out)}
    assert listed["soft1"] == {
        "name": "soft1", "type": "soft", "netdev": "tgt1", "counters": listed["soft1"]["counters"],
        "caps": ALL, "ddp": True, "iso": True, "offloads": ALL,
    }  # fmt: skip
    assert listed["soft0"]["netdev"] == "tgt0"
    assert (tree / "adapters/soft1/netdev").read_text() == "tgt1\n"
    assert run(tree, "adapters", "create", "spare") == 0
    assert capsys.readouterr().out.splitlines() == [
        "adapter   type  serves          offloads",
        "soft0     soft  tgt0            hcrc+dcrc+ddp+iso+t10pi",
        "soft1     soft  tgt1            hcrc+dcrc+ddp+iso+t10pi",
        "spare     soft  no netdev       hcrc+dcrc+ddp+iso+t10pi",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["soft0"], "adapter soft0 already exists; adapters: soft0 (bind it to change its netdev)"),
        (["bad/name"], "'bad/name' is not a valid adapter name: 1 to 15 characters of A-Z a-z 0-9 _ -"),
        (["sixteen-chars-xx"], "'sixteen-chars-xx' is not a valid adapter name"),
        ([""], "'' is not a valid adapter name"),
        (["soft1", "--netdev", "nosuch0"], "adapter soft1: no netdev 'nosuch0' in this network namespace; "
                                           "netdevs: lo, tgt0, tgt1 (or '*' for all)"),
        (["soft1", "--netdev", "tgt0"], "adapter soft1: netdev tgt0 is already served by adapter soft0; "
                                        "unbind soft0 first (one adapter per netdev)"),
    ],
)  # fmt: skip
def test_create_refused_changes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    before = snapshot(tree)
    assert run(tree, "adapters", "create", *args) == 1
    assert capsys.readouterr().err.startswith(f"cxgbit-ext: {message}")
    assert snapshot(tree) == before


def test_create_is_undone_when_the_kernel_refuses_the_bind(
    kernel: FakeKernel, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel.refuse["adapters/soft1/netdev"] = errno.EBUSY  # another tool bound tgt1 meanwhile
    before = snapshot(tree)
    assert run(tree, "--json", "adapters", "create", "soft1", "--netdev", "tgt1") == 1
    err = json.loads(capsys.readouterr().out)["error"]
    assert err == (
        "adapter soft1: cannot serve netdev 'tgt1': another adapter already serves it (the module said: "
        "Device or resource busy); see 'cxgbit-ext adapters'; nothing was changed"
    )
    assert snapshot(tree) == before and not (tree / "adapters/soft1").exists()


def test_delete(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Control(tree).create_adapter("soft1", "tgt1")
    assert run(tree, "--json", "adapters", "delete", "soft1") == 0
    assert [a["name"] for a in json.loads(capsys.readouterr().out)] == ["soft0"]
    assert not (tree / "adapters/soft1").exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("soft0", "cannot delete adapter soft0: soft0 is built in; unbind it instead"),
        ("nosuch", "no adapter 'nosuch'; adapters: soft0, soft1"),
        ("..", "no adapter '..'; adapters: soft0, soft1"),
    ],
)
def test_delete_refused_changes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    Control(tree).create_adapter("soft1")
    before = snapshot(tree)
    assert run(tree, "adapters", "delete", name) == 1
    assert capsys.readouterr().err == f"cxgbit-ext: {message}\n"
    assert snapshot(tree) == before


def test_delete_refused_by_the_kernel_says_why(kernel: FakeKernel, tree: Path) -> None:
    Control(tree).create_adapter("hw0")
    kernel.refuse["rmdir adapters/hw0"] = errno.EPERM  # as for any adapter the module made itself
    with pytest.raises(CxgbitExtError, match=r"cannot delete adapter hw0: it is built in \(the module refused: "
                       r"Operation not permitted\); unbind it instead"):  # fmt: skip
        Control(tree).adapter("hw0").delete()
    assert (tree / "adapters/hw0").is_dir()


def test_connections_of_a_deleted_adapter_go_on_and_say_so(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Control(tree).create_adapter("soft1", "tgt1")
    (tree / "connections").write_text(
        "198.18.1.2:4000 198.18.1.1:3260 adapter=soft1 login=0 hdigest=0 ddigest=0 ddp=0 iso=1 pdus_rx=1 pdus_tx=1 "
        "bytes_placed=0 bytes_copied=512\n"
    )
    assert run(tree, "adapters", "delete", "soft1") == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "deleted adapter soft1; its 1 connection(s) keep running until they end"
    )
    assert run(tree, "connections") == 0
    assert capsys.readouterr().out.splitlines() == [
        "198.18.1.2:4000 -> 198.18.1.1:3260 on soft1 (adapter deleted since): iso",
        "    hcrc off: HeaderDigest=None was negotiated",
        "    dcrc off: DataDigest=None was negotiated",
        "    ddp off: disabled on adapter soft1 when this connection started (ddp 0)",
        "    pdus rx 1 tx 1, placed 0 B, copied 512 B",
    ]


@pytest.mark.parametrize(("iso_off", "why"), [
    ("erl", "off: ErrorRecoveryLevel above 0 was negotiated (Data-In may be sent again, one PDU at a time)"),
    ("order", "off: DataSequenceInOrder=No or DataPDUInOrder=No was negotiated"),
    ("adapter", "off: disabled on adapter soft0 when this connection started (iso 0)"),
])  # fmt: skip
def test_connections_say_why_a_session_keeps_iso_off(
    tree: Path, capsys: pytest.CaptureFixture[str], iso_off: str, why: str
) -> None:
    """The module turns ISO off for a session whose parameters the burst
    planner has no model for, and says which (iso_off); the CLI explains
    it, and the connection's counters stay counters."""
    (tree / "connections").write_text(
        "198.18.0.2:4000 198.18.0.1:3260 adapter=soft0 login=0 hdigest=1 ddigest=1 ddp=1 iso=0 "
        f"iso_off={iso_off} pdus_rx=9 pdus_tx=9 bytes_placed=0 bytes_copied=0\n"
    )
    assert run(tree, "connections") == 0
    assert f"    iso {why}" in capsys.readouterr().out.splitlines()
    (conn,) = Control(tree).connections()
    assert (conn.iso, conn.iso_off, set(conn.counters)) == (False, iso_off, {"pdus_rx", "pdus_tx", "bytes_placed",
                                                                             "bytes_copied"})  # fmt: skip


def test_connections_say_what_data_buffers_each_keeps(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "connections").write_text(
        "198.18.0.2:4000 198.18.0.1:3260 adapter=soft0 login=0 hdigest=1 ddigest=1 ddp=1 iso=1 pdus_rx=9 pdus_tx=9 "
        "bytes_placed=4096 bytes_copied=0 tx_inline=4 data_cache_kib=2048\n"
    )
    assert run(tree, "connections") == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "    pdus rx 9 tx 9, placed 4096 B, copied 0 B, 2048 KiB of data buffers kept"
    )
    (conn,) = Control(tree).connections()
    assert conn.counters["data_cache_kib"] == 2048


@pytest.mark.parametrize(
    ("settings", "ddp", "iso"),
    [(["ddp=0"], "0", "1"), (["ddp=OFF", "iso=no"], "0", "0"), (["iso=False"], "1", "0"), (["ddp=Yes"], "1", "1")],
)
def test_set_switches_offloads(tree: Path, settings: list[str], ddp: str, iso: str) -> None:
    assert run(tree, "set", "soft0", *settings) == 0
    assert ((tree / "adapters/soft0/ddp").read_text(), (tree / "adapters/soft0/iso").read_text()) == (
        f"{ddp}\n",
        f"{iso}\n",
    )


def test_set_shows_what_is_off(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(tree, "set", "soft0", "ddp=0") == 0
    assert capsys.readouterr().out.splitlines()[1] == "soft0     soft  tgt0            hcrc+dcrc+iso+t10pi (ddp off)"
    assert run(tree, "--json", "set", "soft0", "iso=off") == 0
    (a,) = json.loads(capsys.readouterr().out)
    assert (a["ddp"], a["iso"], a["caps"], a["offloads"]) == (False, False, ALL, ["hcrc", "dcrc", "t10pi"])
    assert Control(tree).adapter("soft0").offload_text() == "hcrc+dcrc+t10pi (ddp off, iso off)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["soft0", "ddp=maybe"], "adapter soft0 ddp: 'maybe' is not a boolean; use 1 or 0 (or true/false, yes/no, "
                                 "on/off)"),
        (["soft0", "ddp=0", "iso=2"], "adapter soft0 iso: '2' is not a boolean"),
        (["soft0", "ddp=0", "crc=0"], "adapter soft0: no setting 'crc'; settings: ddp, iso"),
        (["soft0", "ddp"], "'ddp' is not SETTING=VALUE; settings: ddp=0|1, iso=0|1"),
        (["soft0", "ddp=0", "ddp=1"], "ddp given twice"),
        (["soft9", "ddp=0"], "no adapter 'soft9'; adapters: soft0"),
    ],
)  # fmt: skip
def test_set_refused_changes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    before = snapshot(tree)
    assert run(tree, "--json", "set", *args) == 1
    assert json.loads(capsys.readouterr().out)["error"].startswith(message)
    assert snapshot(tree) == before


def test_set_is_undone_when_the_kernel_refuses_a_step(kernel: FakeKernel, tree: Path) -> None:
    kernel.refuse["adapters/soft0/iso"] = errno.EINVAL
    before = snapshot(tree)
    with pytest.raises(CxgbitExtError, match="cannot set iso to 0: Invalid argument; nothing was changed"):
        Control(tree).adapter("soft0").set_toggles({"ddp": "0", "iso": "0"})
    assert snapshot(tree) == before


def test_bind_refuses_a_netdev_another_adapter_serves(kernel: FakeKernel, tree: Path) -> None:
    ctl = Control(tree)
    ctl.create_adapter("soft1")
    with pytest.raises(CxgbitExtError, match="netdev tgt0 is already served by adapter soft0; unbind soft0 first"):
        ctl.adapter("soft1").set_netdev("tgt0")
    ctl.adapter("soft1").set_netdev("*")  # a named netdev goes to soft0, the rest to soft1
    ctl.adapter("soft0").set_netdev("tgt1")
    with pytest.raises(CxgbitExtError, match=r"every netdev \('\*'\) is already served by adapter soft1"):
        ctl.adapter("soft0").set_netdev("*")
    # the kernel's own refusal (a race with another tool) is just as clear
    kernel.refuse["adapters/soft0/netdev"] = errno.EBUSY
    with pytest.raises(CxgbitExtError, match="cannot serve netdev 'tgt0': another adapter already serves it"):
        ctl.adapter("soft0").set_netdev("tgt0")
    assert [(a.name, a.netdev) for a in ctl.adapters()] == [("soft0", "tgt1"), ("soft1", "*")]


def test_adapter_objects_read_and_write_the_tree_live(kernel: FakeKernel, tree: Path) -> None:
    # as rtslib's objects: a property reads its file when asked, setting
    # one writes it (checked first), and another handle sees the change
    ctl = Control(tree)
    soft1 = ctl.create_adapter("soft1", "tgt1")
    same = Control(tree).adapter("soft1")
    assert soft1 == same and soft1 in set(ctl.adapters())
    soft1.ddp = "off"
    assert (tree / "adapters/soft1/ddp").read_text() == "0\n"
    assert (same.ddp, same.iso, same.active) == (False, True, ("hcrc", "dcrc", "iso", "t10pi"))
    same.netdev = "*"
    assert soft1.serving == "every netdev"
    with pytest.raises(CxgbitExtError, match="adapter soft1 iso: 'maybe' is not a boolean"):
        soft1.iso = "maybe"
    with pytest.raises(CxgbitExtError, match="netdev tgt0 is already served by adapter soft0"):
        soft1.netdev = "tgt0"
    assert soft1.dump() == {"name": "soft1", "type": "soft", "netdev": "*", "ddp": False, "iso": True}
    # the counters the module keeps move for this handle too
    kernel.count("soft1", "pdus_rx", 7)
    assert same.counters["pdus_rx"] == 7 and soft1.counters == same.counters

    # deleted by another handle (another admin): this one says so, and
    # Control's listings leave it out
    assert ctl.adapter("soft1").delete() == 0
    assert not soft1.exists
    with pytest.raises(CxgbitExtError, match="adapter soft1 no longer exists"):
        _ = soft1.counters
    with pytest.raises(CxgbitExtError, match="no adapter 'soft1'; adapters: soft0"):
        soft1.ddp = True
    assert list(ctl.counters()) == ["soft0"]
    assert not (tree / "adapters/soft1").exists()
