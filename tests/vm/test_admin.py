"""Admin tools against the real module and LIO: the targetcli extension
(driven in-process through configshell, as targetcli-offload runs it), the
CLI, adapters made, switched and removed, save/restore across a module
reload, and bad input changing nothing.
"""

from __future__ import annotations

import errno
import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from configshell_fb import ExecutionError

from cxgbit_ext import cli, persist, portals, topology
from cxgbit_ext.control import Control, PortalReport
from iscsi_initiator import iscsiadm
from iscsi_initiator.session import Connection
from testbed import fio, topo

from .conftest import CFS, PDU_INITIATOR, TargetcliShell, adapter_counters, connection_lines, insmod, lio_clear

# targetcli and its offload plugin over our files: user space: one kernel (tests/vm/shares.py)
pytestmark = pytest.mark.dealt
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
        while CFS.exists() and Control().connections() and time.monotonic() < deadline:
            time.sleep(0.1)
        if CFS.exists():
            # adapters made with mkdir hold the module (configfs), as LIO's objects hold theirs
            for d in (CFS / "adapters").iterdir():
                if d.name != "soft0":
                    d.rmdir()
            assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0


def adapters_state() -> dict[str, tuple[str, ...]]:
    """Each adapter's netdev, ddp and iso files, read from configfs itself."""
    return {
        d.name: tuple((d / f).read_text() for f in ("netdev", "ddp", "iso"))
        for d in sorted((CFS / "adapters").iterdir())
    }


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
        assert "offload enable now: True (offload: soft0 hcrc+dcrc+ddp+iso+t10pi)" in out
        with pytest.raises(ExecutionError, match=f"{T1.tgt_ip} is on tgt1, which no adapter serves"):
            sh.root.get_node(f"{portals}/{NP1}").ui_command_enable_offload("true")
        np1 = f"/sys/kernel/config/target/iscsi/{IQN}/tpgt_1/np/{NP1}/cxgbit"
        assert Path(np1).read_text().strip() == "0", "a refused enable_offload must leave the switch off"
        ls = sh.run(f"{portals} ls")
        assert f"{NP0} " in ls and "[offload: soft0 hcrc+dcrc+ddp+iso+t10pi]" in ls
        assert f"{NP1} " in ls and "[offload: off — not enabled on this portal (enable_offload true)]" in ls
        ls = sh.run("/offload ls")
        assert "adapters" in ls and "soft0" in ls and "[soft on tgt0: hcrc+dcrc+ddp+iso+t10pi, 0 conns]" in ls
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
            assert f"-> {NP0} on soft0: ddp+iso" in ls, ls
            capfd.readouterr()
            assert cli.main(["--json", "connections"]) == 0
            (c,) = json.loads(capfd.readouterr().out)
            assert c["offloads"]["hcrc"] == "off: HeaderDigest=None was negotiated"
            assert c["counters"]["bytes_placed"] >= 8 << 20
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()


# the first series: its batch ran ~90 s shorter than the second's
@pytest.mark.dealt(share=0)
def test_targetcli_adapter_create_switch_delete(admin: None, tmp_path: Path, capfd) -> None:
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli")
        sh.run(f"/offload/adapters/soft0 bind netdev={T0.tgt_dev}")
        out = sh.run(f"/offload/adapters create name=soft1 netdev={T1.tgt_dev}")
        assert f"Created adapter soft1 (soft, serves {T1.tgt_dev})." in out, out
        assert adapters_state()["soft1"] == (f"{T1.tgt_dev}\n", "1\n", "1\n")
        out = sh.run("/offload/adapters/soft1 set offload ddp=false")
        assert "Parameter ddp is now 'false'." in out, out
        assert (CFS / "adapters/soft1/ddp").read_text() == "0\n"
        assert sh.run("/offload/adapters/soft1 get offload ddp iso").split() == ["ddp=false", "iso=true"]
        ls = sh.run("/offload ls")
        assert "[2 adapters, 2 serving]" in ls, ls
        assert f"[soft on {T0.tgt_dev}: hcrc+dcrc+ddp+iso+t10pi, 0 conns]" in ls, ls
        assert f"[soft on {T1.tgt_dev}: hcrc+dcrc+iso+t10pi (ddp off), 0 conns]" in ls, ls

        # refused with the reason, and nothing changed
        before = adapters_state()
        with pytest.raises(ExecutionError, match="adapter soft1 already exists"):
            sh.run(f"/offload/adapters create name=soft1 netdev={T0.tgt_dev}")
        with pytest.raises(ExecutionError, match=f"netdev {T0.tgt_dev} is already served by adapter soft0"):
            sh.run(f"/offload/adapters create name=soft2 netdev={T0.tgt_dev}")
        with pytest.raises(ExecutionError, match=re.escape("Not setting iso! Syntax error, 'maybe' is not true|false")):
            sh.run("/offload/adapters/soft1 set offload ddp=true iso=maybe")
        assert adapters_state() == before

        # the CLI sees the same
        capfd.readouterr()
        assert cli.main(["--json", "adapters"]) == 0
        listed = {a["name"]: a for a in json.loads(capfd.readouterr().out)}
        assert {k: listed["soft1"][k] for k in ("netdev", "ddp", "iso")} == {
            "netdev": T1.tgt_dev, "ddp": False, "iso": True,
        }  # fmt: skip

        # soft0 is built in: refused with the reason, and by the module itself
        with pytest.raises(ExecutionError, match="soft0 is built in; unbind it instead"):
            sh.run("/offload/adapters delete name=soft0")
        with pytest.raises(PermissionError) as e:
            (CFS / "adapters/soft0").rmdir()
        assert e.value.errno == errno.EPERM
        assert "Deleted adapter soft1." in sh.run("/offload/adapters delete name=soft1")
        assert list(adapters_state()) == ["soft0"]
        assert "soft1" not in sh.run("/offload ls")


def test_saveconfig_restore_across_module_reload(admin: None, module_ko: Path, tmp_path: Path, capfd) -> None:
    save = tmp_path / "saveconfig.json"
    ours = persist.beside(save)
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli")
        sh.run("/offload/adapters/soft0 bind netdev=tgt0")
        # a made adapter with an offload switched off must come back as it was
        sh.run(f"/offload/adapters create name=soft1 netdev={T1.tgt_dev}")
        sh.run("/offload/adapters/soft1 set offload ddp=false")
        build(sh)
        sh.root.refresh()
        sh.run(f"/iscsi/{IQN}/tpg1/portals/{NP0} enable_offload true")
        sh.run(f"/iscsi/{IQN}/tpg1/portals/{NP1} enable_offload true")
        from rtslib_fb import RTSRoot

        sh.run(f"/ saveconfig savefile={save}")
        assert ours.exists(), "saveconfig must write cxgbit-ext.json beside saveconfig.json"
        saved_portals = json.loads(save.read_text())["targets"][0]["tpgs"][0]["portals"]
        assert {(p["ip_address"], p["offload"]) for p in saved_portals} == {(T0.tgt_ip, True), (T1.tgt_ip, True)}
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
    # module reload: everything of ours is gone, including soft0's binding. soft1
    # holds the module while it exists (configfs), so it goes first, as at a reboot.
    (CFS / "adapters/soft1").rmdir()
    assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0
    assert insmod(module_ko).returncode == 0
    assert adapters_state() == {"soft0": ("*\n", "1\n", "1\n")}
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli2")
        sh.run(f"/ restoreconfig savefile={save} clear_existing=true")
        assert Control().dump() == ours_before
        assert adapters_state()["soft1"] == (f"{T1.tgt_dev}\n", "0\n", "1\n")
        after = RTSRoot().dump()
        for key in ("targets", "storage_objects"):
            assert canonical(after[key]) == canonical(lio_before[key]), f"{key} differ after restore"

    iscsiadm.discover(T0.tgt_ip)
    iscsiadm.discover(T1.tgt_ip)
    iscsiadm.login(IQN, NP0)
    iscsiadm.login(IQN, NP1)
    try:
        iscsiadm.session_disks(IQN, expect=1)
        conns = {c.local: (c.adapter, c.ddp) for c in Control().connections()}
        # both restored portals offloaded again, each on its adapter, soft1's still without ddp
        assert conns == {NP0: ("soft0", True), NP1: ("soft1", False)}, conns
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()


def test_enable_offload_twice_then_off_is_stock(admin: None, tmp_path: Path) -> None:
    """A portal switched on twice (enable_offload, or rtslib's offload set
    again by a script) and off once is off: LIO's switch adds an offload
    child per write of 1 and removes one per write of 0, so after a second
    write of 1 the portal stayed offloaded while the switch said off."""
    from rtslib_fb import TPG, FabricModule, NetworkPortal, Target

    cxgbit = Path(f"/sys/kernel/config/target/iscsi/{IQN}/tpgt_1/np/{NP0}/cxgbit")
    with topo.in_netns():
        sh = TargetcliShell(tmp_path / "tcli")
        sh.run("/offload/adapters/soft0 bind netdev=tgt0")
        build(sh)
        portal = f"/iscsi/{IQN}/tpg1/portals/{NP0}"
        sh.root.refresh()
        for _ in range(2):
            assert "offload enable now: True" in sh.run(f"{portal} enable_offload true")
        assert "offload enable now: False" in sh.run(f"{portal} enable_offload false")
        assert cxgbit.read_text().strip() == "0", "the switch still reads on"
        assert NP0 not in (CFS / "portals").read_text(), "LIO still has the offload portal set up"
        # the stock switch written twice behind the extension's back, then off
        np = NetworkPortal(TPG(Target(FabricModule("iscsi"), IQN, mode="lookup"), 1, mode="lookup"),
                           T0.tgt_ip, 3260, mode="lookup")  # fmt: skip
        np.offload = True
        np.offload = True
        assert "offload enable now: False" in sh.run(f"{portal} enable_offload false")
        assert cxgbit.read_text().strip() == "0" and NP0 not in (CFS / "portals").read_text()
    # what an initiator sees: the next login is stock TCP, and works
    iscsiadm.discover(T0.tgt_ip)
    iscsiadm.login(IQN, NP0)
    try:
        dev = iscsiadm.session_disks(IQN, expect=1)[0]
        fio.write_verify(dev, size="8M", bs="64k")
        assert Control().connections() == [], "a login after offload was switched off was offloaded"
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()


STATE_IQN = "iqn.2026-11.org.cxgbit-ext:portal-state"
NP1_STATE, ANY_STATE = (T1.tgt_ip, 3262), ("0.0.0.0", 3263)


def reported(ip: str, port: int) -> PortalReport:
    report = Control().portal_report(ip, port)
    assert report is not None, (CFS / "portal_state").read_text()
    return report


def login_goes_to(ip: str, port: int) -> str | None:
    """Log in to ip:port and write then read a block: the adapter the connection
    is offloaded on (its line in the connections file), None if it went stock."""
    c = Connection(ip, port)
    try:
        c.login(PDU_INITIATOR, STATE_IQN)
        data = bytes(range(256)) * 16
        c.scsi_write(0, data)
        assert c.scsi_read(0, len(data) // 512) == data
        peer = f"{c.sock.getsockname()[0]}:{c.sock.getsockname()[1]}"
        lines = [ln.split() for ln in connection_lines() if ln.split()[0] == peer]
        assert len(lines) <= 1, lines
        if not lines:
            return None
        assert lines[0][1] == f"{ip}:{port}", lines
        return dict(w.split("=", 1) for w in lines[0][2:])["adapter"]
    finally:
        c.close()


def test_portal_state_is_the_rule_logins_follow(admin: None) -> None:
    """The module's portal_state says where a portal's logins go, and they go
    there: a portal on tgt1's address with soft0 bound to tgt0 is reported
    unserved and its logins go stock; with an adapter bound to tgt1 it is
    reported on that adapter and its logins are offloaded there. A wildcard
    portal is reported per netdev, and logins over each netdev follow. The
    CLI's reasons are the module's."""
    (CFS / "adapters/soft0/netdev").write_text(T0.tgt_dev)
    t = topology.Topology(iqn=STATE_IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=(NP1_STATE, ANY_STATE), offload=True, name_prefix="pst")  # fmt: skip
    with topo.in_netns():
        topology.create(t)
    lines = (CFS / "portal_state").read_text().splitlines()
    assert sorted(lines) == sorted([f"{T1.tgt_ip}:3262 off unserved {T1.tgt_dev}",
                                    f"0.0.0.0:3263 on {T0.tgt_dev}=soft0 *=-"]), lines  # fmt: skip
    s = portals.state(Control(), *NP1_STATE, True)
    assert s.reason == f"{T1.tgt_ip} is on {T1.tgt_dev}, which no adapter serves (soft0 serves {T0.tgt_dev})"
    summary = portals.state(Control(), *ANY_STATE, True).summary()
    assert summary == f"offload: soft0 hcrc+dcrc+ddp+iso+t10pi on {T0.tgt_dev}"
    soft0 = adapter_counters("soft0")["connections"]
    assert login_goes_to(*NP1_STATE) is None, "a login the module reports unserved was offloaded"
    assert login_goes_to(T1.tgt_ip, 3263) is None, "a login over tgt1, reported unserved, was offloaded"
    assert login_goes_to(T0.tgt_ip, 3263) == "soft0"
    assert adapter_counters("soft0")["connections"] == soft0 + 1

    # an adapter bound to tgt1: the report and the logins move to it
    (CFS / "adapters/soft1").mkdir()
    (CFS / "adapters/soft1/netdev").write_text(T1.tgt_dev)
    assert reported(*NP1_STATE) == PortalReport(T1.tgt_ip, 3262, on=True, netdevs={T1.tgt_dev: "soft1"})
    assert reported(*ANY_STATE) == PortalReport(
        "0.0.0.0", 3263, on=True, netdevs={T0.tgt_dev: "soft0", T1.tgt_dev: "soft1"}, rest=""
    )
    assert portals.state(Control(), *NP1_STATE, True).summary() == "offload: soft1 hcrc+dcrc+ddp+iso+t10pi"
    assert login_goes_to(*NP1_STATE) == "soft1"
    assert login_goes_to(T1.tgt_ip, 3263) == "soft1"
    assert adapter_counters("soft1")["connections"] == 2 and adapter_counters("soft0")["connections"] == soft0 + 1

    # soft0 serving every netdev: tgt1 stays soft1's, every other netdev is soft0's
    (CFS / "adapters/soft0/netdev").write_text("*")
    assert reported(*ANY_STATE) == PortalReport("0.0.0.0", 3263, on=True, netdevs={T1.tgt_dev: "soft1"}, rest="soft0")
    assert login_goes_to(T0.tgt_ip, 3263) == "soft0"
    assert login_goes_to(T1.tgt_ip, 3263) == "soft1"

    # no adapter serves anything: said of every portal, and logins go stock
    (CFS / "adapters/soft0/netdev").write_text("\n")
    (CFS / "adapters/soft1/netdev").write_text("\n")
    lines = (CFS / "portal_state").read_text().splitlines()
    assert sorted(lines) == sorted([f"{T1.tgt_ip}:3262 off unbound", "0.0.0.0:3263 off unbound"]), lines
    assert (
        portals.state(Control(), *ANY_STATE, True).reason
        == "no adapter serves a netdev (cxgbit-ext bind soft0 <netdev>)"
    )
    assert login_goes_to(T0.tgt_ip, 3263) is None
