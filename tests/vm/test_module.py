"""cxgbit_ext module lifecycle against real LIO.

insmod refuses beside the in-tree cxgbit; enable_offload loads our module
through LIO's request_module("cxgbit") and our modprobe.d rule; the module
registers its transport and configfs tree; rmmod is refused while a portal
uses it and is clean once offload is off. With cxgb4 and no Chelsio device
(this VM has none), the cxgb4 backend's own module registers its ULD, says
it offloads nothing for want of ports, and cxgb4 unloads once it is gone;
the core alone never loads the Chelsio drivers.
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
from testbed.kmod import CXGB4_BACKEND, backend_ko, rmmod

from .conftest import CFS, TOP, dmesg_since, insmod, kmsg_mark, lio_clear

IQN = "iqn.2026-11.org.cxgbit-ext:module"
LINK = topo.LINKS[0]


def loaded(mod: str) -> bool:
    return Path(f"/sys/module/{mod}").exists()


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
    kos = sorted((built / "updates").glob("*.ko"))
    for ko in kos:
        shutil.copy(ko, mods / "updates" / ko.name)
    conf = Path("/etc/modprobe.d/cxgbit-ext.conf")
    shutil.copy(TOP / "kmod/cxgbit-ext/cxgbit-ext.conf", conf)
    yield
    conf.unlink()
    for ko in kos:
        (mods / "updates" / ko.name).unlink()
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
    for dep in ("libcxgb", "cxgb4"):  # a host that does not run cxgb4
        rmmod(dep)
    assert not loaded("cxgb4")
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), portals=((LINK.tgt_ip, 3260),))
    with topo.in_netns():
        topology.create(t)
        (np,) = [p for tpg in RTSRoot().tpgs for p in tpg.network_portals]
        assert isinstance(np, NetworkPortal)
        # the stock switch: LIO request_module("cxgbit") -> our modprobe.d rule
        np.offload = True
    assert np.offload
    assert loaded("cxgbit_ext") and not loaded("cxgbit")
    # a host that does not run cxgb4 never loads the Chelsio drivers
    assert not loaded(CXGB4_BACKEND) and not loaded("cxgb4")
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


def contract_version() -> int:
    for line in (TOP / "kmod/cxgbit-ext/adapter.h").read_text().splitlines():
        if line.startswith("#define CXE_BACKEND_CONTRACT"):
            return int(line.split()[2])
    raise AssertionError("adapter.h defines no CXE_BACKEND_CONTRACT")


def test_a_backend_module_is_held_to_the_contract(lio: None, module_ko: Path) -> None:
    """A backend module built for another contract version, one under a
    name registered already, and one asking to serve portals by name are
    each refused at load, the kernel log saying why (both versions for
    the first); a good one is listed in the backends file until it
    unloads, and holds the core while it is loaded."""
    probe = module_ko.parent / "backendprobe/backendprobe.ko"
    assert probe.exists(), f"{probe} missing: make modules"
    version = contract_version()
    assert insmod(module_ko).returncode == 0
    try:
        refused = {
            f"contract={version + 1}": f"backend probe: built for contract version {version + 1}, "
            f"cxgbit_ext {(CFS / 'version').read_text().strip()} has version {version}: not registered",
            "name=soft": "backend soft: registered already",
            "flags=1": "backend probe: a module's backend serves its own devices only",
        }
        for param, why in refused.items():
            marker = kmsg_mark(f"backendprobe {param}")
            p = subprocess.run(["insmod", str(probe), param], capture_output=True, text=True)
            assert p.returncode != 0 and not loaded("backendprobe"), (param, p)
            assert any(why in ln for ln in dmesg_since(marker)), (param, dmesg_since(marker))
            assert set(backends()) == {"soft"}, backends()
        p = subprocess.run(["insmod", str(probe)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert backends()["probe"] == "on caps=", backends()
        p = rmmod("cxgbit_ext")
        assert p.returncode != 0 and "in use" in p.stderr, p
        assert rmmod("backendprobe").returncode == 0
        assert set(backends()) == {"soft"}, backends()
    finally:
        rmmod("backendprobe")
        assert rmmod("cxgbit_ext").returncode == 0


def test_the_cxgb4_backend_loads_by_name_beside_the_switched_core(lio: None, installed_module: None) -> None:
    """Where cxgb4 runs, the stock switch still loads the core only; the
    cxgb4 backend's module loads by name (modprobe, with its parameter),
    beside the core the switch loaded, and lists its backend."""
    assert not loaded("cxgbit_ext") and not loaded(CXGB4_BACKEND)
    subprocess.run(["modprobe", "cxgb4"], check=True)
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), portals=((LINK.tgt_ip, 3260),))
    try:
        with topo.in_netns():
            topology.create(t)
            (np,) = [p for tpg in RTSRoot().tpgs for p in tpg.network_portals]
            np.offload = True
        assert loaded("cxgbit_ext") and not loaded(CXGB4_BACKEND)
        subprocess.run(["modprobe", CXGB4_BACKEND, "cxgb4_hw=1"], check=True)
        assert Path(f"/sys/module/{CXGB4_BACKEND}/parameters/cxgb4_hw").read_text() == "Y\n"
        assert backends()["cxgb4"] == "off no_ports caps=hcrc,dcrc,ddp,iso,rxagg"
        np.offload = False
    finally:
        lio_clear()
        for mod in (CXGB4_BACKEND, "cxgbit_ext", "libcxgb", "cxgb4"):
            rmmod(mod)
    assert not loaded("cxgbit_ext") and not loaded("cxgb4")


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


def depends(ko: Path) -> set[str]:
    deps = subprocess.run(["modinfo", "-F", "depends", str(ko)], capture_output=True, text=True, check=True)
    return set(filter(None, deps.stdout.strip().split(",")))


def test_cxgb4_backend_is_a_module_of_its_own(lio: None, module_ko: Path) -> None:
    """The core needs none of the Chelsio drivers: loaded alone it lists
    the soft backend only and loads neither cxgb4 nor libcxgb. The cxgb4
    backend is cxgbit_ext_cxgb4.ko, which needs them and the core: on a
    host with no Chelsio device (as the in-tree cxgbit and cxgbi have them)
    it loads beside them, takes cxgb4's iSCSI target ULD slot, is listed
    as off for want of ports, keeps cxgb4, libcxgb and the core loaded
    while it is, serves real adapters only when told to (cxgb4_hw), and
    leaves the backends file as it found it when it unloads."""
    assert not loaded("cxgbit_ext") and not loaded("cxgbit") and not loaded(CXGB4_BACKEND)
    backend = backend_ko(module_ko)
    assert not {"cxgb4", "libcxgb"} & depends(module_ko), "the core depends on the Chelsio drivers"
    assert {"cxgb4", "libcxgb", "cxgbit_ext"} <= depends(backend), depends(backend)
    for dep in ("libcxgb", "cxgb4"):
        rmmod(dep)
    assert insmod(module_ko).returncode == 0
    try:
        soft = {"soft": "on caps=hcrc,dcrc,ddp,iso,t10pi"}
        assert backends() == soft
        assert not loaded("cxgb4") and not loaded("libcxgb")
        p = insmod(backend, provided=("cxgbit_ext",))
        assert p.returncode == 0, p.stderr
        assert loaded("cxgb4") and loaded("libcxgb")
        assert backends() == {**soft, "cxgb4": "off no_ports caps=hcrc,dcrc,ddp,iso,rxagg"}
        # code never run on a Chelsio adapter serves none unless asked
        assert Path(f"/sys/module/{CXGB4_BACKEND}/parameters/cxgb4_hw").read_text() == "N\n"
        # the soft adapter is untouched: soft0 is there and is a soft one
        assert (CFS / "adapters/soft0/type").read_text() == "soft\n"
        for dep in ("cxgb4", "libcxgb", "cxgbit_ext"):
            assert Path(f"/sys/module/{dep}/holders/{CXGB4_BACKEND}").exists(), dep
            p = rmmod(dep)
            assert p.returncode != 0 and "in use" in p.stderr, p
        cli = subprocess.run([str(TOP / ".venv/bin/cxgbit-ext"), "--json", "status"], capture_output=True, text=True)
        assert cli.returncode == 0, cli.stderr
        got = {b["name"]: b for b in json.loads(cli.stdout)["backends"]}
        assert got["cxgb4"]["on"] is False and got["cxgb4"]["why"] == "no_ports", got
        assert got["soft"]["on"] is True, got
        assert rmmod(CXGB4_BACKEND).returncode == 0
        assert backends() == soft
        # loaded again, told to serve real adapters: with none attached the
        # backend is still off for want of ports
        p = insmod(backend, "cxgb4_hw=1", provided=("cxgbit_ext",))
        assert p.returncode == 0, p.stderr
        assert backends()["cxgb4"] == "off no_ports caps=hcrc,dcrc,ddp,iso,rxagg"
        assert Path(f"/sys/module/{CXGB4_BACKEND}/parameters/cxgb4_hw").read_text() == "Y\n"
    finally:
        if loaded(CXGB4_BACKEND):
            assert rmmod(CXGB4_BACKEND).returncode == 0
        assert rmmod("cxgbit_ext").returncode == 0
    assert not Path(f"/sys/module/cxgb4/holders/{CXGB4_BACKEND}").exists()
    assert rmmod("libcxgb").returncode == 0 and rmmod("cxgb4").returncode == 0
    assert not CFS.exists()
