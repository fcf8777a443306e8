"""The gateway layout's rules (cxgbit_ext.gateway), without a kernel.

What every gateway must agree on without talking to the others (unit
serial, group names, ids and states) is computed from the arguments alone;
a bad argument is refused before anything is touched. The layout itself is
built and checked against LIO in the scale-out testbed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cxgbit_ext import cli, gateway
from cxgbit_ext.gateway import ANO, AO, GatewayError, Layout

PORTALS = ("198.18.20.11", "198.18.20.12")
IQN = "iqn.2026-11.org.example:gw"


def layout(**kw: object) -> Layout:
    args: dict[str, object] = {
        "iqn": "iqn.2026-11.org.example:gw",
        "images": ("rbd/disk0",),
        "portals": PORTALS,
        "index": 1,
    }
    args.update(kw)
    return Layout(**args)  # type: ignore[arg-type]


def test_every_gateway_computes_the_same_serial_and_groups() -> None:
    one, two = layout(index=1, owners=(2,)), layout(index=2, owners=(2,))
    assert one.wwn(0) == two.wwn(0) and one.so_name(0) == two.so_name(0) == "rbd.disk0"
    assert [one.group(0, g) for g in (1, 2)] == [two.group(0, g) for g in (1, 2)]
    assert one.group(0, 2) == ("ao", 102, AO) and one.group(0, 1) == ("ano1", 101, ANO)
    assert layout(images=("rbd/disk1",)).wwn(0) != one.wwn(0)


def test_images_are_spread_over_the_gateways_unless_owners_are_given() -> None:
    """Image i's Active/Optimized path is on gateway (i mod N) + 1: three
    gateways and five images give owners 1 2 3 1 2, the same on every
    gateway; each image has its own serial and its own groups."""
    three = ("198.18.20.11", "198.18.20.12", "198.18.20.13")
    images = tuple(f"rbd/disk{i}" for i in range(5))
    views = [layout(images=images, portals=three, index=gw) for gw in (1, 2, 3)]
    for v in views:
        v.check()
        assert [v.owner(lun) for lun in range(5)] == [1, 2, 3, 1, 2]
        assert [v.group(lun, v.owner(lun))[2] for lun in range(5)] == [AO] * 5
        assert [v.group(1, gw) for gw in (1, 2, 3)] == [("ano1", 101, ANO), ("ao", 102, AO), ("ano3", 103, ANO)]
    assert len({views[0].wwn(lun) for lun in range(5)}) == 5
    given = layout(images=images[:2], portals=three, owners=(3, 3))
    assert [given.owner(0), given.owner(1)] == [3, 3]
    # what gateway 3 lays out: each image a LUN, in its own ALUA group per TPG
    tpgs = gateway.expected(views[2])["tpgs"]
    assert tpgs[3]["luns"] == {0: ("rbd.disk0", "ano3"), 1: ("rbd.disk1", "ano3"), 2: ("rbd.disk2", "ao"),
                               3: ("rbd.disk3", "ano3"), 4: ("rbd.disk4", "ano3")}  # fmt: skip
    assert tpgs[1]["luns"][0] == ("rbd.disk0", "ao") and tpgs[1]["luns"][3] == ("rbd.disk3", "ao")


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"images": ("disk0",)}, "POOL/IMAGE"),
        ({"images": ("rbd/disk0", "rbd/a/b")}, "'rbd/a/b': expected POOL/IMAGE"),
        ({"images": ()}, "no image given"),
        ({"images": ("rbd/disk0", "rbd/disk0")}, "names an image twice"),
        ({"owners": (1, 2)}, "2 owners for 1 images"),
        ({"iqn": "target1"}, "not an iSCSI name"),
        ({"index": 3}, "this gateway is gateway 3, but there are 2 portals"),
        ({"owners": (0,)}, r"the owner of rbd/disk0 is gateway 0, but there are 2 portals \(1..2\)"),
        ({"images": ("rbd/a", "rbd/b"), "owners": (1, 3)}, "the owner of rbd/b is gateway 3"),
        ({"portals": ("198.18.20.11", "198.18.20.11")}, "repeat an address"),
        # one address in two spellings is one address
        ({"portals": ("fd00::1", "[fd00:0::1]")}, "repeat an address"),
        ({"portals": ("198.18.20.11:3261", "198.18.20.12")}, "'198.18.20.11:3261': every gateway's portal on --port"),
        ({"portals": ("gw1.example", "198.18.20.12")}, "'gw1.example': a portal like"),
        ({"portals": ()}, "no gateway portals"),
        ({"port": 70000}, "not a TCP port"),
        ({"backstore": "rbd"}, "backstore 'rbd': one of iblock, user:rbd"),
        ({"shared": True, "offload": False}, "shared reservations need the offloaded portal"),
        ({"cmd_time_out": 10}, "--cmd-time-out is user:rbd's"),
        ({"cmd_time_out": 30, "backstore": "user:rbd"}, "--cmd-time-out 30: 1 to 29 s, below Linux initiators' 30 s"),
        ({"cmd_time_out": 0, "backstore": "user:rbd"}, "--cmd-time-out 0: 1 to 29 s"),
    ],
)
def test_bad_layout_is_refused(kw: dict[str, object], why: str) -> None:
    with pytest.raises(GatewayError, match=why):
        layout(**kw).check()


def test_expected_layout_enables_and_offloads_the_local_tpg_only() -> None:
    want = gateway.expected(layout(index=2))
    tpgs = want["tpgs"]
    assert isinstance(tpgs, dict)
    assert tpgs[1] == {"enabled": False, "portals": ["198.18.20.11:3260"], "offload": [],
                       "luns": {0: ("rbd.disk0", "ao")}}  # fmt: skip
    assert tpgs[2]["enabled"] and tpgs[2]["offload"] == ["198.18.20.12:3260"]
    assert tpgs[2]["luns"] == {0: ("rbd.disk0", "ano2")}
    # the backstore is part of the layout: the same command with another is refused, not merged
    assert want["backstore"] == "iblock" and gateway.expected(layout(index=2, backstore="user:rbd")) != want
    # so is sharing reservations: a gateway laid out without cannot be "already laid out" with
    assert not want["shared"] and gateway.expected(layout(index=2, shared=True)) == {**want, "shared": True}
    # and user:rbd's command timeout: the default, or the one given
    assert want["cmd_time_out"] is None
    assert gateway.expected(layout(index=2, backstore="user:rbd"))["cmd_time_out"] == gateway.USER_CMD_TIME_OUT
    assert gateway.expected(layout(index=2, backstore="user:rbd", cmd_time_out=8))["cmd_time_out"] == 8


def test_ipv6_portals_are_named_as_lio_lists_them() -> None:
    """LIO names an IPv6 portal [ADDR]:PORT and rtslib lists it so; a portal
    given bare must be laid out, and expected, under that name, or a second
    run of the same command would not find its own layout."""
    want = gateway.expected(layout(portals=("fd00::1", "[fd00::2]"), index=2))
    tpgs = want["tpgs"]
    assert isinstance(tpgs, dict)
    assert tpgs[1]["portals"] == ["[fd00::1]:3260"]
    assert tpgs[2]["portals"] == tpgs[2]["offload"] == ["[fd00::2]:3260"]
    assert layout(portals=("fd00:0::1", "198.18.20.12")).lio_portals == ("[fd00::1]", "198.18.20.12")


def test_cli_refuses_before_touching_anything(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    touched: list[str] = []
    monkeypatch.setattr(gateway, "describe", lambda iqn: touched.append(iqn) or {})
    rc = cli.main(["gateway", "create", "--iqn", IQN, "--rbd", "rbd/disk0",
                   "--portals", ",".join(PORTALS), "--gateway", "3"])  # fmt: skip
    assert rc == 1 and touched == []
    assert "this gateway is gateway 3, but there are 2 portals (1..2)" in capsys.readouterr().err
    rc = cli.main(["gateway", "create", "--iqn", IQN, "--rbd", "rbd/disk0"])
    assert rc == 1 and touched == []
    assert "gateway create needs --portals, --gateway" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["gateway", "create", "--iqn", IQN, "--rbd", "rbd/disk0", "--portals", ",".join(PORTALS),
                  "--gateway", "1", "--backstore", "file"])  # fmt: skip
    assert "invalid choice: 'file'" in capsys.readouterr().err and touched == []
    base = ["gateway", "create", "--iqn", IQN, "--portals", ",".join(PORTALS), "--gateway", "1"]
    rc = cli.main([*base, "--rbd", "rbd/disk0,rbd/disk1", "--dev", "/dev/rbd0"])
    assert rc == 1 and touched == []
    assert "--dev: one block device per image (2)" in capsys.readouterr().err
    rc = cli.main([*base, "--rbd", "rbd/disk0,rbd/disk1", "--owner", "2"])
    assert rc == 1 and touched == []
    assert "1 owners for 2 images" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main([*base, "--rbd", "rbd/disk0", "--owner", "two"])
    assert "'two': expected N,N,..." in capsys.readouterr().err and touched == []
    with pytest.raises(SystemExit):
        cli.main([*base, "--rbd", "rbd/disk0,"])
    assert "'rbd/disk0,': expected POOL/IMAGE,POOL/IMAGE,..." in capsys.readouterr().err and touched == []


def _tpg(root: Path, fabric: str, wwn: str, tag: int, rtpi: int | None, enabled: bool) -> None:
    d = root / fabric / wwn / f"tpgt_{tag}"
    d.mkdir(parents=True)
    (d / "enable").write_text(f"{int(enabled)}\n")
    if rtpi is not None:
        (d / "rtpi").write_text(f"{rtpi:#x}\n")  # as LIO prints it: 0x1, 0


def test_a_port_id_held_by_another_enabled_tpg_is_named(tmp_path: Path) -> None:
    """LIO (6.5 on) numbers the ports of enabled TPGs host-wide, across
    fabrics, and refuses with a bare EINVAL to enable a TPG pinned to a
    held id: the holders are read from configfs, disabled TPGs hold none."""
    _tpg(tmp_path, "iscsi", "iqn.2026-11.org.example:other", 1, 1, True)
    _tpg(tmp_path, "iscsi", "iqn.2026-11.org.example:other", 2, 0, False)
    _tpg(tmp_path, "loopback", "naa.5001405aaaaaaaaa", 1, 3, True)
    _tpg(tmp_path, "iscsi", "iqn.2026-11.org.example:idle", 1, 2, False)
    (tmp_path / "core" / "alua").mkdir(parents=True)
    held = gateway.held_port_ids(tmp_path)
    assert held == {1: "iscsi iqn.2026-11.org.example:other tpgt_1", 3: "loopback naa.5001405aaaaaaaaa tpgt_1"}
    # a kernel without the rtpi file numbers ports per device: none held
    old = tmp_path / "old"
    _tpg(old, "iscsi", "iqn.2026-11.org.example:other", 1, None, True)
    assert gateway.held_port_ids(old) == {}
