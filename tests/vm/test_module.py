"""cxgbit_ext module lifecycle against real LIO.

insmod refuses beside the in-tree cxgbit; enable_offload loads our module
through LIO's request_module("cxgbit") and our modprobe.d rule; the module
registers its transport and configfs tree; rmmod is refused while a portal
uses it and is clean once offload is off.
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
