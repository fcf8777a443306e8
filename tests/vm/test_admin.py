"""Admin tools against the real module and LIO: the targetcli extension
(driven in-process through configshell, as targetcli-offload runs it), the
CLI, save/restore across a module reload, and bad input changing nothing.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from configshell_fb import ExecutionError

from cxgbit_ext import cli, persist
from cxgbit_ext.control import Control
from iscsi_initiator import iscsiadm
from testbed import fio, topo

from .conftest import CFS, TargetcliShell, insmod, lio_clear

IQN = "iqn.2026-11.org.cxgbit-ext:admin"
T0, T1 = topo.LINKS[0], topo.LINKS[1]
NP0, NP1 = f"{T0.tgt_ip}:3260", f"{T1.tgt_ip}:3260"


@pytest.fixture
def admin(lio: None, module_ko: Path, tmp_path: Path) -> Iterator[None]:
    assert insmod(module_ko).returncode == 0
    try:
        yield
    finally:
        with topo.in_netns():
            lio_clear()
        deadline = time.monotonic() + 15
        while CFS.exists() and (CFS / "connections").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        if CFS.exists():
            assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0


def canonical(obj: object) -> object:
    """A dump with its lists sorted: configfs lists directories in an order
    that depends on creation order, which a restore does not keep."""
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return sorted((canonical(x) for x in obj), key=lambda x: json.dumps(x, sort_keys=True))
    return obj


def build(sh: TargetcliShell) -> None:
    for line in (
        # targetcli's default 0.0.0.0:3260 portal would hold the port our two need
        "set global auto_add_default_portal=false",
        "/backstores/ramdisk create name=adm0 size=32M",
        f"/iscsi create {IQN}",
        f"/iscsi/{IQN}/tpg1/luns create /backstores/ramdisk/adm0",
        f"/iscsi/{IQN}/tpg1 set attribute authentication=0 generate_node_acls=1 demo_mode_write_protect=0",
        f"/iscsi/{IQN}/tpg1/portals create {T0.tgt_ip} 3260",
        f"/iscsi/{IQN}/tpg1/portals create {T1.tgt_ip} 3260",
        f"/iscsi/{IQN}/tpg1 enable",
    ):
        sh.run(line)


def test_targetcli_offload_tree_portal_state_and_why_not(admin: None, tmp_path: Path, capfd) -> None:
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli")
        # bad input first: refused with the reason, nothing changed
        with pytest.raises(ExecutionError, match="no netdev 'nosuch0' in this network namespace"):
            sh.root.get_node("/offload/adapters/soft0").ui_command_bind("nosuch0")
        assert (CFS / "adapters/soft0/netdev").read_text() == "*\n"
        sh.run("/offload/adapters/soft0 bind netdev=tgt0")
        assert (CFS / "adapters/soft0/netdev").read_text() == "tgt0\n"
        build(sh)
        portals = f"/iscsi/{IQN}/tpg1/portals"
        sh.root.refresh()
        out = sh.run(f"{portals}/{NP0} enable_offload true")
        assert "offload enable now: True (offload: soft0 hcrc+dcrc+ddp+iso+rxagg)" in out
        with pytest.raises(ExecutionError, match=f"{T1.tgt_ip} is on tgt1, which no adapter serves"):
            sh.root.get_node(f"{portals}/{NP1}").ui_command_enable_offload("true")
        np1 = f"/sys/kernel/config/target/iscsi/{IQN}/tpgt_1/np/{NP1}/cxgbit"
        assert Path(np1).read_text().strip() == "0", "a refused enable_offload must leave the switch off"
        ls = sh.run(f"{portals} ls")
        assert f"{NP0} " in ls and "[offload: soft0 hcrc+dcrc+ddp+iso+rxagg]" in ls
        assert f"{NP1} " in ls and "[offload: off — not enabled on this portal (enable_offload true)]" in ls
        ls = sh.run("/offload ls")
        assert "adapters" in ls and "soft0" in ls and "[soft on tgt0: hcrc+dcrc+ddp+iso+rxagg, 0 conns]" in ls
        # the CLI agrees, as JSON
        capfd.readouterr()
        assert cli.main(["--json", "portals"]) == 0
        rows = {f"{r['ip']}:{r['port']}": r for r in json.loads(capfd.readouterr().out)}
        assert rows[NP0]["offloaded"] and not rows[NP1]["offloaded"]
        assert rows[NP1]["reason"] == "not enabled on this portal (enable_offload true)"

    # a login over tgt0 is offloaded and the tree shows it with its offloads
    iscsiadm.discover(T0.tgt_ip)
    iscsiadm.login(IQN, NP0)
    try:
        dev = iscsiadm.session_disks(IQN, expect=1)[0]
        fio.write_verify(dev, size="8M", bs="64k")
        with topo.in_netns():
            sh.root.refresh()
            ls = sh.run("/offload/connections ls")
            assert f"-> {NP0} on soft0: ddp+iso+rxagg" in ls, ls
            capfd.readouterr()
            assert cli.main(["--json", "connections"]) == 0
            (c,) = json.loads(capfd.readouterr().out)
            assert c["offloads"]["hcrc"] == "off: HeaderDigest=None was negotiated"
            assert c["counters"]["bytes_placed"] >= 8 << 20
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()


def test_saveconfig_restore_across_module_reload(admin: None, module_ko: Path, tmp_path: Path, capfd) -> None:
    save = tmp_path / "saveconfig.json"
    ours = persist.beside(save)
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli")
        sh.run("/offload/adapters/soft0 bind netdev=tgt0")
        build(sh)
        sh.root.refresh()
        sh.run(f"/iscsi/{IQN}/tpg1/portals/{NP0} enable_offload true")
        from rtslib_fb import RTSRoot

        sh.run(f"/ saveconfig savefile={save}")
        assert ours.exists(), "saveconfig must write cxgbit-ext.json beside saveconfig.json"
        saved_portals = json.loads(save.read_text())["targets"][0]["tpgs"][0]["portals"]
        assert {(p["ip_address"], p["offload"]) for p in saved_portals} == {(T0.tgt_ip, True), (T1.tgt_ip, False)}
        lio_before = RTSRoot().dump()
        ours_before = Control().dump()

        # a corrupted file of ours: restoreconfig refuses before touching anything
        good = ours.read_text()
        ours.write_text(good[: len(good) // 2])
        with pytest.raises(ExecutionError, match="not a cxgbit-ext save file"):
            sh.root.ui_command_restoreconfig(str(save), clear_existing=True)
        ours.write_text(good)
        assert RTSRoot().dump()["targets"] == lio_before["targets"]

        sh.run("/ clearconfig confirm=true")
    # module reload: everything of ours is gone, including soft0's binding
    assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0
    assert insmod(module_ko).returncode == 0
    assert (CFS / "adapters/soft0/netdev").read_text() == "*\n"
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli2")
        sh.run(f"/ restoreconfig savefile={save} clear_existing=true")
        assert Control().dump() == ours_before
        after = RTSRoot().dump()
        for key in ("targets", "storage_objects"):
            assert canonical(after[key]) == canonical(lio_before[key]), f"{key} differ after restore"

    iscsiadm.discover(T0.tgt_ip)
    iscsiadm.login(IQN, NP0)
    try:
        iscsiadm.session_disks(IQN, expect=1)
        conns = Control().connections()
        assert [c.local for c in conns] == [NP0], "the restored portal must be offloaded again"
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()
