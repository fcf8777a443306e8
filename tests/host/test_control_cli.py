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

from .conftest import FakeKernel, make_tree


@pytest.fixture
def kernel(tmp_path: Path, kernel_for) -> FakeKernel:
    return kernel_for(make_tree(
        tmp_path, version="0.1.0", netdev="*",
        counters={"connections": 3, "pdus_rx": 10, "pdus_tx": 12, "bytes_placed": 4096},
        portals="198.18.0.1:3260 on tgt0=soft0\n[::]:3262 on *=soft0\n",
        connections="198.18.0.2:4000 198.18.0.1:3260 adapter=soft0 login=0 hdigest=1 ddigest=0 ddp=1 iso=1 "
        "pdus_rx=5 pdus_tx=6 bytes_placed=4096 bytes_copied=0\n",
    ))  # fmt: skip


@pytest.fixture
def tree(kernel: FakeKernel) -> Path:
    return kernel.root


def test_status_reads_the_tree(tree: Path) -> None:
    st = Control(tree).status()
    assert st.version == "0.1.0"
    assert st.portals == ["198.18.0.1:3260", "[::]:3262"]
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


def test_status_lists_the_backends_and_why_one_is_off(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "status"]) == 0
    got = {b["name"]: b for b in json.loads(capsys.readouterr().out)["backends"]}
    assert got["soft"] == {"name": "soft", "on": True, "caps": ["hcrc", "dcrc", "ddp", "iso"], "why": "", "detail": []}
    assert (got["cxgb4"]["on"], got["cxgb4"]["why"]) == (False, "no_ports")
    assert got["cxgb4"]["caps"] == ["hcrc", "dcrc", "ddp", "iso", "rxagg"]
    assert cli.main(["--configfs", str(tree), "status"]) == 0
    text = capsys.readouterr().out
    assert "backend soft: on (offloads hcrc dcrc ddp iso)" in text
    assert "backend cxgb4: off: no Chelsio T5/T6 adapter attached (cxgb4 has none)" in text

    # an attached adapter: the module lists it after why the backend is off
    (tree / "backends").write_text(
        "soft on caps=hcrc,dcrc,ddp,iso\n"
        "cxgb4 off hw_off 0000:03:00.4=T6/2ports/up/dropped:0 caps=hcrc,dcrc,ddp,iso,rxagg\n"
    )
    (_, b) = Control(tree).backends()
    assert (b.on, b.why, b.detail) == (False, "hw_off", ("0000:03:00.4=T6/2ports/up/dropped:0",))
    assert b.state_text() == (
        "off: its adapters are Chelsio hardware, which this code has never run on: "
        "load cxgbit_ext_cxgb4 with cxgb4_hw=1 to offload on them "
        "0000:03:00.4=T6/2ports/up/dropped:0"
    )


def test_bind_writes_netdev_and_rejects_unknown_adapter(tree: Path) -> None:
    ctl = Control(tree)
    ctl.adapter("soft0").set_netdev("lo")
    assert (tree / "adapters/soft0/netdev").read_text() == "lo\n"
    with pytest.raises(CxgbitExtError, match="no adapter 'soft9'"):
        ctl.adapter("soft9").set_netdev("lo")


def test_bind_to_a_missing_netdev_says_so_and_changes_nothing(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--configfs", str(tree), "bind", "soft0", "nosuch0"]) == 1
    err = capsys.readouterr().err
    assert "no netdev 'nosuch0' in this network namespace" in err and "lo" in err
    assert (tree / "adapters/soft0/netdev").read_text() == "*\n"


def test_unbind_and_capabilities(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "unbind", "soft0"]) == 0
    (a,) = json.loads(capsys.readouterr().out)
    assert (a["netdev"], a["caps"]) == ("", ["hcrc", "dcrc", "ddp", "iso"])
    assert (a["ddp"], a["iso"], a["offloads"]) == (True, True, ["hcrc", "dcrc", "ddp", "iso"])
    assert (tree / "adapters/soft0/netdev").read_text() == "\n"
    assert Control(tree).adapter("soft0").serving == "no netdev"


def test_connections_say_which_offloads_are_off_and_why(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "connections"]) == 0
    (c,) = json.loads(capsys.readouterr().out)
    assert c["offloads"] == {
        "hcrc": "on", "dcrc": "off: DataDigest=None was negotiated", "ddp": "on", "iso": "on",
    }  # fmt: skip
    assert cli.main(["--configfs", str(tree), "connections"]) == 0
    assert "dcrc off: DataDigest=None was negotiated" in capsys.readouterr().out


def test_counters_watch_prints_rates(
    kernel: FakeKernel, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each interval's rate is the counter's change over it: 300 PDUs
    received during each interval show as 300 / interval per second."""
    tree = kernel.root
    real_sleep = cli.time.sleep

    def traffic(s: float) -> None:  # the module counts while the CLI sleeps
        kernel.count("soft0", "pdus_rx", 300)
        real_sleep(s)

    monkeypatch.setattr(cli.time, "sleep", traffic)
    assert cli.main(["--json", "--configfs", str(tree), "counters", "--watch", "0.05", "--count", "2"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2
    for ln in lines:
        rates = ln["rates"]["soft0"]
        assert rates["pdus_rx"] * ln["interval_s"] == pytest.approx(300, rel=0.05), ln
        assert rates["bytes_placed"] == 0, ln
    assert cli.main(["--configfs", str(tree), "counters", "--watch", "0.05", "--count", "1"]) == 0
    (text,) = capsys.readouterr().out.splitlines()
    assert "soft0: pdus_rx " in text and "/s" in text and "bytes_placed" not in text, text


def test_cli_json(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "status"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["transport"] == "cxgbit_ext" and out["portals"][0] == "198.18.0.1:3260"


def test_device_counters_by_backend_and_adapter(tree: Path, tmp_path: Path) -> None:
    """The counters of device backends' adapters, by backend and adapter;
    none with no such backend registered; ModuleNotLoaded when the whole
    tree is gone."""
    ctl = Control(tree)
    assert ctl.device_counters() == {}
    (tree / "device_counters").write_text(
        "cxgb4 m5 pdus_rx 40\ncxgb4 m5 ddp_bytes 7\ncxgb4 m6 pdus_rx 0\noem x0 pdus_rx 3\n"
    )
    assert ctl.device_counters() == {
        "cxgb4": {"m5": {"pdus_rx": 40, "ddp_bytes": 7}, "m6": {"pdus_rx": 0}},
        "oem": {"x0": {"pdus_rx": 3}},
    }
    with pytest.raises(ModuleNotLoaded):
        Control(tmp_path / "absent").device_counters()


def test_module_not_loaded_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ModuleNotLoaded, match="not loaded"):
        Control(tmp_path / "absent").status()
    assert cli.main(["--configfs", str(tmp_path / "absent"), "status"]) == 1
    assert "module is not loaded" in capsys.readouterr().err
