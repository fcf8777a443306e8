"""Why a portal is or is not offloaded; save/restore all-or-nothing.

Over a copy of the module's configfs layout (the host cannot load it): the
module decides where a portal's logins go and says so in portal_state, the
tests say what it said; tests/vm checks the module's own lines and the
logins that follow them.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from cxgbit_ext import cli, persist, portals
from cxgbit_ext.control import FORMAT, Control, CxgbitExtError, PortalReport

from .conftest import FakeKernel, add_example_backend, make_tree, snapshot

# What the module says with soft0 bound to tgt0, for portals set up in the
# target host's namespace (lo, tgt0 198.18.0.1 2001:2::1, tgt1 198.18.1.1)
# Only what LIO can hold at once: its [::] listener is dual-stack and takes
# IPv4 on its port too, so it has a port no IPv4 portal uses.
PORTAL_STATE = """198.18.0.1:3260 on tgt0=soft0
198.18.1.1:3260 off unserved tgt1
0.0.0.0:3261 on tgt0=soft0 *=-
10.9.9.9:3260 off no_netdev
[2001:2::1]:3263 on tgt0=soft0
[::]:3262 on tgt0=soft0 *=-
"""


@pytest.fixture
def kernel(tmp_path: Path, kernel_for) -> FakeKernel:
    return kernel_for(make_tree(tmp_path, version="0.2.0", netdev="tgt0", portals=PORTAL_STATE, connections=""))


@pytest.fixture
def tree(kernel: FakeKernel) -> Path:
    return kernel.root


@pytest.mark.parametrize(
    ("ip", "port", "requested", "summary"),
    [
        ("198.18.0.1", 3260, True, "offload: soft0 hcrc+dcrc+ddp+iso+t10pi"),
        ("0.0.0.0", 3261, True, "offload: soft0 hcrc+dcrc+ddp+iso+t10pi on tgt0"),
        ("198.18.0.1", 3260, False, "offload: off — not enabled on this portal (enable_offload true)"),
        ("198.18.1.1", 3260, True, "offload: off — 198.18.1.1 is on tgt1, which no adapter serves (soft0 serves tgt0)"),
        ("198.18.0.1", 3999, True, "offload: off — cxgbit_ext holds no listener for it (see dmesg)"),
        ("10.9.9.9", 3260, True, "offload: off — 10.9.9.9 is on no netdev of its network namespace"),
        # rtslib names IPv6 portals with brackets, as LIO's np directories
        ("[2001:2::1]", 3263, True, "offload: soft0 hcrc+dcrc+ddp+iso+t10pi"),
        ("[2001:2:0::1]", 3263, True, "offload: soft0 hcrc+dcrc+ddp+iso+t10pi"),
        ("[::]", 3262, True, "offload: soft0 hcrc+dcrc+ddp+iso+t10pi on tgt0"),
        ("[2001:2:0:1::1]", 3263, True, "offload: off — cxgbit_ext holds no listener for it (see dmesg)"),
    ],
)
def test_portal_state_and_reason(tree: Path, ip: str, port: int, requested: bool, summary: str) -> None:
    assert portals.state(Control(tree), ip, port, requested).summary() == summary


def test_portal_reports_parse_the_module_lines(tree: Path) -> None:
    reports = Control(tree).portal_reports()
    assert [f"{r.ip} {r.port}" for r in reports] == [
        "198.18.0.1 3260", "198.18.1.1 3260", "0.0.0.0 3261", "10.9.9.9 3260", "2001:2::1 3263", ":: 3262",
    ]  # fmt: skip
    assert reports[0] == PortalReport("198.18.0.1", 3260, on=True, netdevs={"tgt0": "soft0"})
    assert reports[1] == PortalReport("198.18.1.1", 3260, on=False, netdevs={}, why="unserved", netdev="tgt1")
    assert reports[2] == PortalReport("0.0.0.0", 3261, on=True, netdevs={"tgt0": "soft0"}, rest="")
    assert Control(tree).portals() == [ln.split()[0] for ln in PORTAL_STATE.splitlines()]


def test_portal_state_module_missing_and_no_adapter(kernel: FakeKernel, tree: Path, tmp_path: Path) -> None:
    s = portals.state(Control(tmp_path / "absent"), "198.18.0.1", 3260, True)
    assert not s.offloaded and "module is not loaded" in s.reason
    (tree / "adapters/soft0/netdev").write_text("\n")
    kernel.report("198.18.0.1:3260 off unbound\n0.0.0.0:3261 off unbound\n")
    for ip, port in (("198.18.0.1", 3260), ("0.0.0.0", 3261)):
        s = portals.state(Control(tree), ip, port, True)
        assert s.reason == "no adapter serves a netdev (cxgbit-ext bind soft0 <netdev>)"


def test_wildcard_portal_no_netdev_of_its_namespace_served(kernel: FakeKernel, tree: Path) -> None:
    """soft0 bound to a netdev of another namespace: the module says so of a wildcard portal."""
    kernel.report("0.0.0.0:3261 off unserved\n")
    s = portals.state(Control(tree), "0.0.0.0", 3261, True)
    assert s.summary() == "offload: off — no adapter serves a netdev of its network namespace (soft0 serves tgt0)"


def test_portal_caps_leave_out_what_every_serving_adapter_has_switched_off(
    kernel: FakeKernel, tree: Path, netns
) -> None:
    ctl = Control(tree)
    ctl.create_adapter("soft1", "tgt1")
    ctl.adapter("soft0").ddp = False
    kernel.report("198.18.0.1:3260 on tgt0=soft0\n0.0.0.0:3261 on tgt0=soft0 tgt1=soft1 *=-\n")
    assert portals.state(ctl, "198.18.0.1", 3260, True).summary() == "offload: soft0 hcrc+dcrc+iso+t10pi"
    # a wildcard portal is served by both: ddp is still on for logins over tgt1
    s = portals.state(ctl, "0.0.0.0", 3261, True)
    assert s.summary() == "offload: soft0+soft1 hcrc+dcrc+ddp+iso+t10pi on tgt0, tgt1"
    ctl.adapter("soft1").ddp = False
    assert portals.state(ctl, "0.0.0.0", 3261, True).caps == ("hcrc", "dcrc", "iso", "t10pi")


def test_adapters_named_by_the_module_are_the_ones_shown(kernel: FakeKernel, tree: Path, netns) -> None:
    """soft0 serving every netdev, soft1 bound to tgt1: the module gives tgt1's
    logins to soft1, every other netdev's to soft0."""
    ctl = Control(tree)
    ctl.adapter("soft0").netdev = "*"
    ctl.create_adapter("soft1", "tgt1")
    ctl.adapter("soft1").iso = "0"
    kernel.report("198.18.1.1:3260 on tgt1=soft1\n198.18.0.1:3260 on tgt0=soft0\n0.0.0.0:3261 on tgt1=soft1 *=soft0\n")
    assert portals.state(ctl, "198.18.1.1", 3260, True).summary() == "offload: soft1 hcrc+dcrc+ddp+t10pi"
    assert portals.state(ctl, "198.18.0.1", 3260, True).summary() == "offload: soft0 hcrc+dcrc+ddp+iso+t10pi"
    s = portals.state(ctl, "0.0.0.0", 3261, True)
    assert s.summary() == "offload: soft0+soft1 hcrc+dcrc+ddp+iso+t10pi on every netdev"


def test_save_then_restore_round_trips(tree: Path, tmp_path: Path, netns, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "etc/cxgbit-ext.json"
    ctl = Control(tree)
    ctl.create_adapter("soft1", "tgt1")
    ctl.adapter("soft1").ddp = False
    assert cli.main(["--configfs", str(tree), "save", "--file", str(f)]) == 0
    saved = json.loads(f.read_text())
    assert saved["format"] == FORMAT == 2
    assert saved["adapters"] == [
        {"name": "soft0", "type": "soft", "netdev": "tgt0", "ddp": True, "iso": True},
        {"name": "soft1", "type": "soft", "netdev": "tgt1", "ddp": False, "iso": True},
    ]
    assert f.stat().st_mode & 0o777 == 0o600
    # what a module reload leaves: soft0 alone, serving every netdev
    ctl.adapter("soft1").delete()
    ctl.adapter("soft0").netdev = "*"
    ctl.adapter("soft0").iso = False
    assert cli.main(["--configfs", str(tree), "restore", "--file", str(f)]) == 0
    assert ctl.dump() == {"format": FORMAT, "adapters": saved["adapters"]}
    assert "restored cxgbit-ext settings" in capsys.readouterr().out


def test_save_names_the_targets_whose_reservations_are_shared(tree: Path, tmp_path: Path) -> None:
    """The module's reservations/ links (what the agent and `gateway create
    --reservations` make) are saved by target, so restore_lio links them
    again before it enables their TPGs."""
    f = tmp_path / "cxgbit-ext.json"
    assert persist.save(Control(tree), f)["reservations"] == []
    links = tree / "reservations"
    links.mkdir(exist_ok=True)
    lio = tmp_path / "target/iscsi"
    for iqn, tag in (("iqn.2026-12.org.x:b", 1), ("iqn.2026-12.org.x:b", 2), ("iqn.2026-12.org.x:a", 1)):
        (lio / iqn / f"tpgt_{tag}").mkdir(parents=True)
        (links / f"{iqn}:tpgt_{tag}").symlink_to(lio / iqn / f"tpgt_{tag}")
    (links / "gw9").symlink_to(lio / "iqn.2026-12.org.x:a" / "tpgt_1")  # any name: the TPG it points to counts
    persist.save(Control(tree), f)
    assert json.loads(f.read_text())["reservations"] == ["iqn.2026-12.org.x:a", "iqn.2026-12.org.x:b"]
    assert persist.load(f)["reservations"] == ["iqn.2026-12.org.x:a", "iqn.2026-12.org.x:b"]


def test_save_then_restore_round_trips_a_backend_no_tool_knows(
    kernel: FakeKernel, tree: Path, tmp_path: Path, netns, capsys: pytest.CaptureFixture[str]
) -> None:
    """An adapter of backend "example" is saved with the type the module
    gives it and its settings come back; one the configuration names that
    this system lacks is refused, naming what mkdir makes here."""
    add_example_backend(kernel)
    f = tmp_path / "etc/cxgbit-ext.json"
    ctl = Control(tree)
    ctl.adapter("ex0").netdev = "tgt1"
    ctl.adapter("ex0").ddp = False
    assert cli.main(["--configfs", str(tree), "save", "--file", str(f)]) == 0
    saved = json.loads(f.read_text())["adapters"]
    assert saved[0] == {"name": "ex0", "type": "example", "netdev": "tgt1", "ddp": False, "iso": True}
    ctl.adapter("ex0").netdev = ""
    ctl.adapter("ex0").set_toggles({"ddp": True, "iso": False})
    assert cli.main(["--configfs", str(tree), "restore", "--file", str(f)]) == 0
    assert ctl.dump() == {"format": FORMAT, "adapters": saved}
    capsys.readouterr()

    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"format": FORMAT, "adapters": [{**saved[0], "name": "ex9", "netdev": "lo"}]}))
    before = snapshot(tree)
    assert cli.main(["--configfs", str(tree), "restore", "--file", str(missing)]) == 1
    assert "adapter ex9 (type 'example') is not on this system, and only soft adapters can be created" in (
        capsys.readouterr().err
    )
    assert snapshot(tree) == before


def test_restore_makes_adapters_of_the_type_mkdir_makes(tmp_path: Path, kernel_for, netns) -> None:
    """A module whose built-in adapter, and so what mkdir makes, is of a
    backend the tools do not know: restore makes the missing ones of it."""
    tree = kernel_for(make_tree(tmp_path, version="0.2.0", netdev="tgt0", portals="", connections="",
                                kind="example")).root  # fmt: skip
    cfg = {"format": FORMAT, "adapters": [
        {"name": "ex1", "type": "example", "netdev": "tgt1", "ddp": True, "iso": False},
    ]}  # fmt: skip
    Control(tree).setup(cfg)
    assert Control(tree).adapter("ex1").dump() == cfg["adapters"][0]


def test_restore_moves_netdevs_between_adapters(tree: Path, netns) -> None:
    """soft0 and soft1 swap netdevs: no step may have both on one (the kernel says EBUSY)."""
    ctl = Control(tree)
    ctl.create_adapter("soft1", "tgt1")
    swapped = {"format": 2, "adapters": [
        {"name": "soft0", "type": "soft", "netdev": "tgt1", "ddp": True, "iso": True},
        {"name": "soft1", "type": "soft", "netdev": "tgt0", "ddp": True, "iso": False},
    ]}  # fmt: skip
    ctl.setup(swapped)
    assert ctl.dump() == swapped


def _entry(**kw: object) -> dict[str, object]:
    return {"name": "soft0", "type": "soft", "netdev": "lo", "ddp": True, "iso": True, **kw}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{not json", "bad JSON"),
        ({"soft0": "lo"}, "format None is not supported by this version (it reads format 2)"),
        ({"format": 1, "adapters": [{"name": "soft0", "netdev": "lo"}]}, "format 1 is not supported"),
        ({"format": 0, "adapters": []}, "format 0 is not supported"),
        ({"format": 99, "adapters": [_entry()]}, "format 99 is not supported"),
        ({"format": True, "adapters": []}, "format True is not supported"),
        ({"format": 2}, "configuration has no 'adapters' list"),
        ({"format": 2, "adapters": [_entry(), _entry()]}, "named twice"),
        ({"format": 2, "adapters": [_entry(netdev="nosuch0")]}, "not in this network namespace"),
        ({"format": 2, "adapters": [_entry(netdev="a/b")]}, "not a netdev name"),
        ({"format": 2, "adapters": [{"name": "soft0", "netdev": "lo"}]},
         "adapters[0].type: expected a string, got None"),
        ({"format": 2, "adapters": [_entry(ddp="0")]}, "adapters[0].ddp: expected true or false, got '0'"),
        ({"format": 2, "adapters": [_entry(iso=1)]}, "adapters[0].iso: expected true or false, got 1"),
        ({"format": 2, "adapters": [_entry(dpp=False)]}, "adapters[0]: unknown key(s) ['dpp']"),
        ({"format": 2, "adapters": [_entry(name="../soft0")]}, "'../soft0' is not an adapter name"),
        ({"format": 2, "adapters": [_entry(), _entry(name="soft1")]},
         "adapters soft0 and soft1 both serve netdev lo in the configuration; one adapter per netdev"),
        ({"format": 2, "adapters": [_entry(netdev="*"), _entry(name="soft1", netdev="*")]},
         "both serve every netdev ('*')"),
        ({"format": 2, "adapters": [_entry(), _entry(name="bad name!", netdev="tgt1")]},
         "'bad name!' is not a valid adapter name"),
        ({"format": 2, "adapters": [_entry(name="t6-0", type="t6", netdev="tgt1")]},
         "adapter t6-0 (type 't6') is not on this system, and only soft adapters can be created"),
        ({"format": 2, "adapters": [_entry(type="t6")]}, "adapter soft0 is of type 'soft' here, 't6' in the"),
        ({"format": 2, "adapters": [_entry()], "reservations": "iqn.x"},
         "'reservations' is 'iqn.x', not a list of target names; nothing was changed"),
        ({"format": 2, "adapters": [_entry()], "reservations": [""]}, "not a list of target names"),
        # soft1 serves tgt1 here and the file does not mention it: two adapters on one netdev
        ({"format": 2, "adapters": [_entry(), _entry(name="soft2", netdev="tgt1")]},
         "adapter soft2 would serve netdev tgt1, which adapter soft1 serves and the configuration does not "
         "mention; unbind soft1 first"),
    ],
)  # fmt: skip
def test_bad_save_files_change_nothing(
    tree: Path, tmp_path: Path, netns, capsys: pytest.CaptureFixture[str], config: object, message: str
) -> None:
    Control(tree).create_adapter("soft1", "tgt1")
    f = tmp_path / "bad.json"
    f.write_text(config if isinstance(config, str) else json.dumps(config))
    before = snapshot(tree)
    assert cli.main(["--configfs", str(tree), "restore", "--file", str(f)]) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert snapshot(tree) == before


def test_setup_rolls_back_when_the_kernel_refuses_a_step(kernel: FakeKernel, tree: Path, netns) -> None:
    ctl = Control(tree)
    ctl.create_adapter("soft1", "tgt1")
    before = snapshot(tree)
    cfg = {"format": FORMAT, "adapters": [
        {"name": "soft0", "type": "soft", "netdev": "lo", "ddp": False, "iso": True},
        {"name": "soft1", "type": "soft", "netdev": "tgt0", "ddp": True, "iso": True},
        {"name": "soft2", "type": "soft", "netdev": "tgt1", "ddp": True, "iso": False},
    ]}  # fmt: skip
    kernel.refuse["adapters/soft2/iso"] = errno.EINVAL  # the last step
    with pytest.raises(
        CxgbitExtError, match="adapter soft2: cannot set iso to 0: Invalid argument; nothing was changed"
    ):
        ctl.setup(cfg)
    assert snapshot(tree) == before
    # a refusal during the undo too: said, not hidden
    kernel.refuse["rmdir adapters/soft2"] = errno.EBUSY
    with pytest.raises(CxgbitExtError, match="undoing the steps already done failed too: cannot delete adapter soft2"):
        ctl.setup(cfg)


def test_lio_offload_requested_reads_rtslib_files(tmp_path: Path) -> None:
    f = tmp_path / "saveconfig.json"
    f.write_text(json.dumps({"targets": [{"tpgs": [{"portals": [
        {"ip_address": "0.0.0.0", "port": 3260, "offload": True, "iser": False},
        {"ip_address": "198.18.1.1", "port": 3260, "offload": False, "iser": False},
    ]}]}]}))  # fmt: skip
    assert persist.offload_requested(f) == [("0.0.0.0", 3260)]
    assert persist.beside(persist.LIO_DEFAULT) == Path("/etc/rtslib-fb-target/cxgbit-ext.json")
    assert persist.beside(Path("/tmp/x.json")) == Path("/tmp/x.cxgbit-ext.json")


def test_rtpi_is_read_and_pinned_where_the_kernel_has_the_file(tmp_path: Path) -> None:
    """A TPG's relative target port (save --lio, restore --lio, gateway
    create): none on a kernel before 6.5, which has no rtpi file."""
    tpg = tmp_path / "tpgt_1"
    tpg.mkdir()
    assert persist.tpg_rtpi(tpg) is None
    assert not persist.pin_rtpi(tpg, 2) and not (tpg / "rtpi").exists()
    (tpg / "rtpi").write_text("0\n")  # LIO shows it "%#x": none assigned yet
    assert persist.tpg_rtpi(tpg) == 0
    assert persist.pin_rtpi(tpg, 2)
    assert (tpg / "rtpi").read_text() == "2"
    (tpg / "rtpi").write_text("0x2\n")
    assert persist.tpg_rtpi(tpg) == 2


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
