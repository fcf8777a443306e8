"""cxgbit_ext module lifecycle against real LIO.

insmod refuses beside the in-tree cxgbit; enable_offload loads our module
through LIO's request_module("cxgbit") and our modprobe.d rule; the module
registers its transport and configfs tree; rmmod is refused while a portal
uses it and is clean once offload is off. With cxgb4 and no Chelsio device
(this VM has none), the cxgb4 backend registers its ULD, says it offloads
nothing for want of ports, and cxgb4 unloads once we are gone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from rtslib_fb import NetworkPortal, RTSRoot

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from testbed import topo

from .conftest import CFS, TOP, dmesg_since, insmod, kmsg_mark

IQN = "iqn.2026-11.org.cxgbit-ext:module"
LINK = topo.LINKS[0]


def loaded(mod: str) -> bool:
    return Path(f"/sys/module/{mod}").exists()


def rmmod(mod: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["rmmod", mod], capture_output=True, text=True)


@pytest.fixture
def installed_module(kver: str, tmp_path: Path) -> Iterator[None]:
    """Install the module, its index and the modprobe.d rule as dkms would.

    The index (modules.dep & co. with updates/cxgbit_ext.ko) was made on the
    host by `make modules` with depmod; running depmod over 9p under TCG
    takes minutes. Everything lands in the guest's /lib overlay and the
    original index is put back afterwards.
    """
    mods = Path(f"/lib/modules/{kver}")
    built = TOP / "build" / kver / "modroot" / "lib/modules" / kver
    index = [f for f in built.glob("modules.*") if not f.is_symlink()]
    saved = tmp_path / "index"
    saved.mkdir()
    for f in index:
        if (mods / f.name).exists():
            shutil.copy(mods / f.name, saved / f.name)
        shutil.copy(f, mods / f.name)
    (mods / "updates").mkdir(exist_ok=True)
    shutil.copy(built / "updates/cxgbit_ext.ko", mods / "updates/cxgbit_ext.ko")
    conf = Path("/etc/modprobe.d/cxgbit-ext.conf")
    shutil.copy(TOP / "kmod/cxgbit-ext/cxgbit-ext.conf", conf)
    yield
    conf.unlink()
    (mods / "updates/cxgbit_ext.ko").unlink()
    for f in index:
        if (saved / f.name).exists():
            shutil.copy(saved / f.name, mods / f.name)
        else:
            (mods / f.name).unlink()


def test_refuses_to_load_beside_intree_cxgbit(module_ko: Path) -> None:
    subprocess.run(["modprobe", "cxgbit"], check=True)
    try:
        marker = kmsg_mark("insmod beside cxgbit")
        p = insmod(module_ko)
        assert p.returncode != 0
        assert "Device or resource busy" in p.stderr
        assert any("in-tree cxgbit module is loaded" in line for line in dmesg_since(marker))
        assert not loaded("cxgbit_ext")
    finally:
        subprocess.run(["modprobe", "-r", "cxgbit"], check=True)
    assert not loaded("cxgbit")


def test_offload_switch_loads_module_and_pins_it(lio: None, installed_module: None, tmp_path: Path) -> None:
    assert not loaded("cxgbit_ext")
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), portals=((LINK.tgt_ip, 3260),))
    with topo.in_netns():
        topology.create(t)
        (np,) = [p for tpg in RTSRoot().tpgs for p in tpg.network_portals]
        assert isinstance(np, NetworkPortal)
        # the stock switch: LIO request_module("cxgbit") -> our modprobe.d rule
        np.offload = True
    assert np.offload
    assert loaded("cxgbit_ext") and not loaded("cxgbit")
    assert (CFS / "transport").read_text() == "cxgbit_ext\n"
    built = subprocess.run(["modinfo", "-F", "version", "cxgbit_ext"], capture_output=True, text=True).stdout
    assert (CFS / "version").read_text() == built
    assert (CFS / "portals").read_text() == f"{LINK.tgt_ip}:3260\n"
    assert (CFS / "adapters").is_dir()
    cli = subprocess.run([str(TOP / ".venv/bin/cxgbit-ext"), "--json", "status"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["portals"] == [f"{LINK.tgt_ip}:3260"]

    p = rmmod("cxgbit_ext")
    assert p.returncode != 0 and "in use" in p.stderr, p
    assert loaded("cxgbit_ext")

    # the stock listener on the same address still answers
    assert iscsiadm.DiscoveredTarget(f"{LINK.tgt_ip}:3260", 1, IQN) in iscsiadm.discover(LINK.tgt_ip)

    np.offload = False
    assert (CFS / "portals").read_text() == ""
    p = rmmod("cxgbit_ext")
    assert p.returncode == 0, p.stderr
    assert not loaded("cxgbit_ext") and not CFS.exists()


def test_intree_cxgbit_cannot_load_beside_us(lio: None, module_ko: Path) -> None:
    assert insmod(module_ko).returncode == 0
    try:
        marker = kmsg_mark("modprobe cxgbit beside us")
        p = subprocess.run(["modprobe", "cxgbit"], capture_output=True, text=True)
        assert p.returncode != 0 and not loaded("cxgbit"), p
        assert any("refusing to let the in-tree cxgbit load" in line for line in dmesg_since(marker))
    finally:
        assert rmmod("cxgbit_ext").returncode == 0


def test_insmod_rmmod_cycles(lio: None, module_ko: Path) -> None:
    for _ in range(3):
        assert insmod(module_ko).returncode == 0
        assert (CFS / "transport").read_text() == "cxgbit_ext\n"
        assert rmmod("cxgbit_ext").returncode == 0
    assert not CFS.exists()


def backends() -> dict[str, str]:
    """The module's backends file: each backend's name -> the rest of its line."""
    return dict(ln.split(" ", 1) for ln in (CFS / "backends").read_text().splitlines())


def test_cxgb4_backend_registers_without_a_chelsio_adapter(lio: None, module_ko: Path) -> None:
    """cxgb4 and libcxgb load on a host with no Chelsio device (as the
    in-tree cxgbit and cxgbi have them); ours loads beside them, takes
    cxgb4's iSCSI target ULD slot, lists the cxgb4 backend as off for want
    of ports, keeps both loaded while it is, serves real adapters only when
    told to (cxgb4_hw), and leaves nothing behind in either order of
    loading."""
    assert not loaded("cxgbit_ext") and not loaded("cxgbit")
    deps = subprocess.run(["modinfo", "-F", "depends", str(module_ko)], capture_output=True, text=True, check=True)
    assert {"cxgb4", "libcxgb"} <= set(deps.stdout.strip().split(",")), "the cxgb4 backend was not built in"
    subprocess.run(["modprobe", "libcxgb"], check=True)
    assert loaded("cxgb4") and loaded("libcxgb")
    assert insmod(module_ko).returncode == 0
    try:
        assert backends() == {
            "soft": "on caps=hcrc,dcrc,ddp,iso",
            "cxgb4": "off no_ports caps=hcrc,dcrc,ddp,iso,rxagg",
        }
        # code never run on a Chelsio adapter serves none unless asked
        assert Path("/sys/module/cxgbit_ext/parameters/cxgb4_hw").read_text() == "N\n"
        # the soft adapter is untouched: soft0 is there and is a soft one
        assert (CFS / "adapters/soft0/type").read_text() == "soft\n"
        for dep in ("cxgb4", "libcxgb"):
            assert Path(f"/sys/module/{dep}/holders/cxgbit_ext").exists()
            p = rmmod(dep)
            assert p.returncode != 0 and "in use" in p.stderr, p
        assert loaded("cxgb4") and (CFS / "backends").exists()
        cli = subprocess.run([str(TOP / ".venv/bin/cxgbit-ext"), "--json", "status"], capture_output=True, text=True)
        assert cli.returncode == 0, cli.stderr
        got = {b["name"]: b for b in json.loads(cli.stdout)["backends"]}
        assert got["cxgb4"]["on"] is False and got["cxgb4"]["why"] == "no_ports", got
        assert got["soft"]["on"] is True, got
    finally:
        assert rmmod("cxgbit_ext").returncode == 0
    assert not Path("/sys/module/cxgb4/holders/cxgbit_ext").exists()
    assert rmmod("libcxgb").returncode == 0 and rmmod("cxgb4").returncode == 0

    # ours first (pulling cxgb4 and libcxgb in), told to serve real
    # adapters: with none attached the backend is still off for want of ports
    deps_first = subprocess.run(["modinfo", "-F", "depends", str(module_ko)], capture_output=True, text=True)
    for dep in filter(None, deps_first.stdout.strip().split(",")):
        subprocess.run(["modprobe", dep], check=True)
    p = subprocess.run(["insmod", str(module_ko), "cxgb4_hw=1"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert loaded("cxgb4") and loaded("libcxgb")
    assert backends()["cxgb4"] == "off no_ports caps=hcrc,dcrc,ddp,iso,rxagg"
    assert Path("/sys/module/cxgbit_ext/parameters/cxgb4_hw").read_text() == "Y\n"
    assert rmmod("cxgbit_ext").returncode == 0
    assert rmmod("libcxgb").returncode == 0 and rmmod("cxgb4").returncode == 0
    assert not CFS.exists()
