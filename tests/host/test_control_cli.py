"""cxgbit_ext.control and the CLI over a copy of the module's configfs layout.

The host cannot load the module, so these use a tree laid out as the module
lays out /sys/kernel/config/cxgbit_ext; the VM suite runs the same calls
against the real one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cxgbit_ext import cli, portals
from cxgbit_ext.control import Control, CxgbitExtError, ModuleNotLoaded, counter_lines

from .conftest import EXAMPLE_DEVICE_COUNTERS, FakeKernel, add_example_backend, make_tree


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
    caps = ["hcrc", "dcrc", "ddp", "iso", "t10pi"]
    assert got["soft"] == {"name": "soft", "on": True, "caps": caps, "why": "", "detail": []}
    assert (got["cxgb4"]["on"], got["cxgb4"]["why"]) == (False, "no_ports")
    assert got["cxgb4"]["caps"] == ["hcrc", "dcrc", "ddp", "iso", "rxagg"]
    assert cli.main(["--configfs", str(tree), "status"]) == 0
    text = capsys.readouterr().out
    assert "backend soft: on (offloads hcrc dcrc ddp iso t10pi)" in text
    assert "backend cxgb4: off: no Chelsio T5/T6 adapter attached (cxgb4 has none)" in text

    # an attached adapter: the module lists it after why the backend is off
    (tree / "backends").write_text(
        "soft on caps=hcrc,dcrc,ddp,iso,t10pi\n"
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
    assert (a["netdev"], a["caps"]) == ("", ["hcrc", "dcrc", "ddp", "iso", "t10pi"])
    assert (a["ddp"], a["iso"], a["offloads"]) == (True, True, ["hcrc", "dcrc", "ddp", "iso", "t10pi"])
    assert (tree / "adapters/soft0/netdev").read_text() == "\n"
    assert Control(tree).adapter("soft0").serving == "no netdev"


def test_connections_say_which_offloads_are_off_and_why(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--configfs", str(tree), "connections"]) == 0
    (c,) = json.loads(capsys.readouterr().out)
    assert c["offloads"] == {
        "hcrc": "on", "dcrc": "off: DataDigest=None was negotiated", "ddp": "on", "iso": "on", "t10pi": "on",
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


def test_status_shows_a_backend_no_tool_knows(kernel: FakeKernel, capsys: pytest.CaptureFixture[str]) -> None:
    """A backend the tools do not know by name: its line with its caps, and
    its adapter in the table with the type the module gives it, the columns
    still lined up."""
    add_example_backend(kernel)
    tree = kernel.root
    assert cli.main(["--configfs", str(tree), "status"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "backend example: on (offloads hcrc dcrc)" in lines
    header = next(ln for ln in lines if ln.startswith("adapter "))
    row = next(ln for ln in lines if ln.startswith("ex0 "))
    assert row.split()[:4] == ["ex0", "example", "no", "netdev"]
    assert row.index("no netdev") == header.index("serves")
    assert cli.main(["--json", "--configfs", str(tree), "status"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert {"name": "example", "on": True, "caps": ["hcrc", "dcrc"], "why": "", "detail": []} in st["backends"]
    (ex0,) = [a for a in st["adapters"] if a["name"] == "ex0"]
    assert (ex0["type"], ex0["caps"], ex0["offloads"]) == ("example", ["hcrc", "dcrc"], ["hcrc", "dcrc"])


def test_counters_and_connections_of_a_backend_no_tool_knows(
    kernel: FakeKernel, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its device's adapter (ex1, in device_counters only) is counted like
    any other, and a connection on it shows the offloads of its backend,
    not as one whose adapter was deleted."""
    add_example_backend(kernel)
    tree = kernel.root
    assert cli.main(["--json", "--configfs", str(tree), "counters"]) == 0
    counters = json.loads(capsys.readouterr().out)
    assert list(counters) == ["ex0", "soft0", "ex1"]
    assert counters["ex1"] == EXAMPLE_DEVICE_COUNTERS
    assert cli.main(["--configfs", str(tree), "counters"]) == 0
    text = capsys.readouterr().out
    assert "ex1:\n" + "\n".join(counter_lines(EXAMPLE_DEVICE_COUNTERS)) in text, text
    (tree / "connections").write_text(
        "198.18.1.2:4000 198.18.1.1:3260 adapter=ex1 login=0 hdigest=1 ddigest=0 ddp=1 iso=1 pdus_rx=3 pdus_tx=4 "
        "bytes_placed=0 bytes_copied=512\n"
    )
    assert cli.main(["--configfs", str(tree), "connections"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "198.18.1.2:4000 -> 198.18.1.1:3260 on ex1: hcrc",
        "    dcrc off: DataDigest=None was negotiated",
        "    pdus rx 3 tx 4, placed 0 B, copied 512 B",
    ]


def test_a_module_without_device_counters_has_no_device_adapters(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.2.0's module, which an upgrade leaves loaded under the new tools,
    has no device_counters file: its adapters are those of adapters/."""
    (tree / "device_counters").unlink()
    assert Control(tree).device_adapters() == []
    assert cli.main(["--json", "--configfs", str(tree), "counters"]) == 0
    assert list(json.loads(capsys.readouterr().out)) == ["soft0"]
    assert cli.main(["--json", "--configfs", str(tree), "connections"]) == 0
    assert [c["adapter"] for c in json.loads(capsys.readouterr().out)] == ["soft0"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("198.18.0.1", ("198.18.0.1", 3260)),
        ("198.18.0.1:3261", ("198.18.0.1", 3261)),
        ("0.0.0.0", ("0.0.0.0", 3260)),
        ("fd00::1", ("fd00::1", 3260)),
        ("[fd00::1]", ("fd00::1", 3260)),
        ("[fd00::1]:3262", ("fd00::1", 3262)),
        ("[::]:3260", ("::", 3260)),
        ("[fe80::1%3]:3260", ("fe80::1%3", 3260)),
        ("fe80::1%eth0", ("fe80::1%eth0", 3260)),
    ],
)
def test_a_portal_is_read_as_lio_writes_it(text: str, expected: tuple[str, int]) -> None:
    assert portals.parse(text) == expected
    # the CLI hands rtslib the address as LIO names it: IPv6 in brackets
    a = cli.parser().parse_args(["topology", "create", "--iqn", "iqn.x", "--portal", text])
    ip, port = expected
    assert a.portal == [(f"[{ip}]" if ":" in ip else ip, port)]


@pytest.mark.parametrize("text", ["fd00:", "198.18.0.1:", "198.18.0.1:0", "198.18.0.1:65536", "[fd00::1", "host:3260",
                                  "fd00::1]:3260", "198.18.0.1:32x", "", "fe80::1%eth0:3261", "fd00::1%eth0",
                                  "[fe80::1%a b]:3260", "198.18.0.1:\uff13\uff12\uff16\uff10"])  # fmt: skip
def test_a_portal_that_is_not_one_is_refused(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match=r"a portal like 0\.0\.0\.0, 198\.18\.0\.1:3260 or"):
        portals.parse(text)
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["topology", "create", "--iqn", "iqn.x", "--portal", text])
    assert "a portal like" in capsys.readouterr().err


def test_a_zoned_portal_is_matched_by_its_zone_index_or_name() -> None:
    """LIO takes a link-local portal's zone by name or index; the module
    prints the index (lo is index 1 in any network namespace)."""
    from cxgbit_ext.control import PortalReport

    report = PortalReport("fe80::1%1", 3260, on=True, netdevs={"lo": "soft0"})
    assert report.is_for("[fe80::1%1]", 3260) and report.is_for("[fe80::1%lo]", 3260)
    assert not report.is_for("[fe80::1%2]", 3260) and not report.is_for("[fe80::1]", 3260)
    assert not report.is_for("[fe80::1%nosuchdev]", 3260)
