"""Offload over the netdevs admins stack: VLANs and bonds.

soft0 is bound to the stacked netdev of the target host (a VLAN on tgt0, or
a bond of two veths whose peers the initiator host bonds the same way), so
a connection is offloaded only if its SYN arrived on that netdev, as seen
after the VLAN or bond layer. For each: a login over it is offloaded on
soft0 and data written reads back; a login over tgt1 (another netdev) is
not offloaded and works too. The active-backup bond also fails over under
an open-iscsi session running fio write+verify: the session stays on the
offloaded path and every block verifies.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from iscsi_initiator.session import Connection
from testbed import fio, topo

from .conftest import CFS, PDU_INITIATOR, adapter_of, connection_lines, offloaded_target, soft0_counters

OFF, STOCK = topo.LINKS
IQN = "iqn.2026-11.org.cxgbit-ext:stacked"


@dataclass(frozen=True)
class Stack:
    """A netdev on each host and the addresses on it."""

    ini_dev: str
    tgt_dev: str
    ini_ip: str
    tgt_ip: str


def sh(*cmd: str) -> None:
    topo.sh(*cmd)


@pytest.fixture(scope="module")
def target(iscsid: None, module_ko: Path) -> Iterator[None]:
    sh("modprobe", "bonding")
    sh("modprobe", "8021q")
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=32 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield
        (CFS / "adapters/soft0/netdev").write_text(OFF.tgt_dev)


def addresses(s: Stack) -> None:
    up(s)
    assert_reachable(s)


def up(s: Stack) -> None:
    sh("ip", "addr", "add", f"{s.ini_ip}/24", "dev", s.ini_dev)
    sh("ip", "-n", topo.TGT_NS, "addr", "add", f"{s.tgt_ip}/24", "dev", s.tgt_dev)
    sh("ip", "link", "set", s.ini_dev, "up")
    sh("ip", "-n", topo.TGT_NS, "link", "set", s.tgt_dev, "up")


def reachable(s: Stack, timeout: float) -> bool:
    """The target host answers over s within timeout seconds (a bond in
    802.3ad passes traffic once LACP has agreed on an aggregator)."""
    deadline = time.monotonic() + timeout
    while topo.sh("ping", "-c1", "-W1", "-I", s.ini_dev, s.tgt_ip, check=False).returncode != 0:
        if time.monotonic() >= deadline:
            return False
    return True


def assert_reachable(s: Stack) -> None:
    assert reachable(s, 60), f"{s.tgt_ip} not reachable over {s.ini_dev}:\n{link_state(s)}"


def link_state(s: Stack) -> str:
    """Both hosts' view of the stacked netdev, for a failure report."""
    out = []
    for ns, dev in ((None, s.ini_dev), (topo.TGT_NS, s.tgt_dev)):
        pre = ["ip", "netns", "exec", ns] if ns else []
        for cmd in (["ip", "-s", "-d", "link"], ["ip", "neigh"], ["ip", "addr", "show", dev],
                    ["sh", "-c", f"cat /proc/net/bonding/{dev} 2>/dev/null || true"]):  # fmt: skip
            p = topo.sh(*pre, *cmd, check=False)
            out.append(f"{ns or 'init'}$ {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    bonding = [ln for ln in topo.sh("dmesg", check=False).stdout.splitlines() if "bond" in ln]
    out.append("kernel log, bonding:\n" + "\n".join(bonding[-40:]))
    return "\n".join(out)


@pytest.fixture
def vlan(target: None) -> Iterator[Stack]:
    s = Stack("ini0.100", "tgt0.100", "198.18.4.2", "198.18.4.1")
    sh("ip", "link", "add", "link", OFF.ini_dev, "name", s.ini_dev, "type", "vlan", "id", "100")
    sh("ip", "-n", topo.TGT_NS, "link", "add", "link", OFF.tgt_dev, "name", s.tgt_dev, "type", "vlan", "id", "100")
    try:
        addresses(s)
        yield s
    finally:
        topo.sh("ip", "link", "del", s.ini_dev, check=False)
        topo.sh("ip", "-n", topo.TGT_NS, "link", "del", s.tgt_dev, check=False)


def make_bond(mode: str) -> Stack:
    """A bond of two veths on each host, passing traffic.

    The bonding driver gives every slave its bond's MAC: a frame for the
    bond that arrives on a slave with another MAC is for another host
    there, and ARP drops it. A set-up with such a slave, or one that
    passes no traffic, is made again once with a warning (pytest prints
    it) before the test fails: these tests are about the target over a
    bond, which is bound only after this.
    """
    s = make_bond_once(mode)
    if (off := slaves_off_bond_mac(s)) or not reachable(s, 30):
        why = f"slaves off their bond's MAC {off}" if off else "no ping in 30 s"
        warnings.warn(f"{mode} bond set up again ({why}):\n{link_state(s)}", stacklevel=2)
        drop_bond(s)
        s = make_bond_once(mode)
    try:
        off = slaves_off_bond_mac(s)
        assert not off, f"slaves not on their bond's MAC: {off}\n{link_state(s)}"
        assert_reachable(s)
    except BaseException:
        drop_bond(s)
        raise
    return s


def make_bond_once(mode: str) -> Stack:
    s = Stack("inibond", "tgtbond", "198.18.3.2", "198.18.3.1")
    opts = ["mode", mode, "miimon", "100"] + (["lacp_rate", "fast"] if mode == "802.3ad" else [])
    try:
        # a set address: the bond keeps it rather than take its first slave's
        sh("ip", "link", "add", s.ini_dev, "address", BOND_MAC[s.ini_dev], "type", "bond", *opts)
        sh("ip", "-n", topo.TGT_NS, "link", "add", s.tgt_dev, "address", BOND_MAC[s.tgt_dev], "type", "bond", *opts)
        for i in (0, 1):
            sh("ip", "link", "add", f"inib{i}", "type", "veth", "peer", "name", f"tgtb{i}", "netns", topo.TGT_NS)
            sh("ip", "link", "set", f"inib{i}", "master", s.ini_dev)
            sh("ip", "-n", topo.TGT_NS, "link", "set", f"tgtb{i}", "master", s.tgt_dev)
            sh("ip", "link", "set", f"inib{i}", "up")
            sh("ip", "-n", topo.TGT_NS, "link", "set", f"tgtb{i}", "up")
        up(s)
    except BaseException:
        drop_bond(s)  # nothing half made left for the next test
        raise
    return s


BOND_MAC = {"inibond": "02:00:c6:12:03:02", "tgtbond": "02:00:c6:12:03:01"}


def mac(dev: str, ns: str | None = None) -> str:
    pre = ["ip", "-n", ns] if ns else ["ip"]
    return topo.sh(*pre, "-o", "link", "show", dev).stdout.split("link/ether ")[1].split()[0]


def slaves_off_bond_mac(s: Stack) -> dict[str, str]:
    """Each slave whose MAC is not its bond's (active-backup too: its
    fail_over_mac is none), with the MAC it has."""
    off = {}
    for ns, bond, slaves in ((None, s.ini_dev, ("inib0", "inib1")), (topo.TGT_NS, s.tgt_dev, ("tgtb0", "tgtb1"))):
        want = mac(bond, ns)
        off.update({d: m for d in slaves if (m := mac(d, ns)) != want})
    return off


def drop_bond(s: Stack) -> None:
    for i in (0, 1):
        topo.sh("ip", "link", "del", f"inib{i}", check=False)
    topo.sh("ip", "link", "del", s.ini_dev, check=False)
    topo.sh("ip", "-n", topo.TGT_NS, "link", "del", s.tgt_dev, check=False)


@pytest.fixture(params=["active-backup", "balance-xor", "802.3ad"])
def bond(request: pytest.FixtureRequest, target: None) -> Iterator[Stack]:
    s = make_bond(str(request.param))
    try:
        yield s
    finally:
        drop_bond(s)


def offloaded_over(s: Stack, lba: int) -> None:
    """soft0 serves s.tgt_dev only: a login over it is offloaded, one over
    tgt1 is not, and data written on each reads back."""
    (CFS / "adapters/soft0/netdev").write_text(s.tgt_dev)
    try:
        for ip, ini_ip, expect in ((s.tgt_ip, s.ini_ip, "soft0"), (STOCK.tgt_ip, STOCK.ini_ip, None)):
            c = Connection(ip, 3260)
            c.login(PDU_INITIATOR, IQN)
            me = f"{ini_ip}:{c.sock.getsockname()[1]}"
            assert adapter_of(me) == expect, f"a login over {ip} went {adapter_of(me)}, not {expect}"
            data = os.urandom(64 * 1024)
            c.scsi_write(lba, data)
            assert c.scsi_read(lba, len(data) // 512) == data
            c.logout()
            lba += 128
    finally:
        (CFS / "adapters/soft0/netdev").write_text(OFF.tgt_dev)


def test_vlan(vlan: Stack) -> None:
    offloaded_over(vlan, 0)


def test_bond(bond: Stack) -> None:
    offloaded_over(bond, 1024)


def test_active_backup_failover_under_fio_verify(target: None) -> None:
    """The active slave's link goes down in the middle of fio write+verify
    over an open-iscsi session: the bonds fail over to the other veth, the
    connection stays offloaded, every block verifies."""
    s = make_bond("active-backup")
    portal = f"{s.tgt_ip}:3260"
    (CFS / "adapters/soft0/netdev").write_text(s.tgt_dev)
    try:
        iscsiadm.discover(portal)
        iscsiadm.login(IQN, portal)
        (dev,) = iscsiadm.session_disks(IQN, expect=1).values()
        peers = [ln.split()[0] for ln in connection_lines() if ln.startswith(f"{s.ini_ip}:")]
        assert len(peers) == 1, f"open-iscsi's connection over the bond is not offloaded: {connection_lines()}"
        active = _active_slave(s)
        result: list[object] = []
        t = threading.Thread(target=lambda: result.append(_verify(dev)))
        before = soft0_counters()
        t.start()
        # the link goes down once fio's writes are flowing, not on a timer
        wait_for(lambda: soft0_counters()["pdus_rx"] - before["pdus_rx"] >= 64, "fio's writes never reached soft0")
        sh("ip", "link", "set", active, "down")  # its veth peer loses carrier too
        assert t.is_alive(), "fio ended before the link went down: the failover was not under I/O"
        wait_for(lambda: _active_slave(s) not in ("", active), f"the initiator's bond did not fail over from {active}")
        at_failover = soft0_counters()
        # the network itself must pass traffic after the failover, or a
        # failure below says nothing of the target: both ends' view then
        deadline = time.monotonic() + 30
        while topo.sh("ping", "-c1", "-W1", "-I", s.ini_dev, s.tgt_ip, check=False).returncode != 0:
            assert time.monotonic() < deadline, f"{s.tgt_ip} not reachable after the failover:\n{link_state(s)}"
        t.join(timeout=600)
        assert not t.is_alive(), "fio did not finish within 600 s of the failover"
        assert result and not isinstance(result[0], Exception), (
            f"fio over the failover: {result}\n{link_state(s)}\n"
            f"soft0 at the failover {at_failover}, now {soft0_counters()}"
        )
        assert peers[0] in [ln.split()[0] for ln in connection_lines()], "the offloaded connection did not survive"
        moved = soft0_counters()["pdus_rx"] - at_failover["pdus_rx"]
        assert moved > 0, "no PDU went over soft0 after the failover"
        print(f"active-backup failover {active} -> {_active_slave(s)} under fio verify: {moved} PDUs after it")
    finally:
        iscsiadm.logout(IQN, portal)
        iscsiadm.delete_nodes()
        (CFS / "adapters/soft0/netdev").write_text(OFF.tgt_dev)
        drop_bond(s)


def _active_slave(s: Stack) -> str:
    return Path(f"/sys/class/net/{s.ini_dev}/bonding/active_slave").read_text().strip()


def wait_for(cond: Callable[[], bool], why: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, why
        time.sleep(0.05)


def _verify(dev: str) -> object:
    try:
        # the link goes down after 64 of a pass's 256 writes: two more
        # passes keep I/O going past the failover, and each is verified
        return fio.write_verify(dev, size="16M", bs="64k", iodepth=8, loops=3)
    except (fio.FioError, OSError) as e:
        return e
