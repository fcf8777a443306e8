"""Adapters serve a netdev by identity, not by name.

soft1 is bound to a netdev of the target host; the tests rename it and
delete it, as an admin or a container runtime would, and check what
initiators and the adapter's files show:

- renamed: the binding follows the netdev (``netdev`` shows the new name),
  a live offloaded session goes on, a new login is offloaded on soft1;
- unregistered: soft1 serves no netdev (and the kernel log says why); a new
  netdev that takes the old name is not served by it; a connection that was
  live on it ends as stock LIO's would (its NOP-In unanswered), while a
  session on another netdev goes on;
- in another namespace: a second target host (netns tgt2) has a netdev of
  the same name as soft0's; soft0 does not serve it, a name two namespaces
  have is refused from a third, and soft1 bound from inside tgt2 serves
  tgt2's netdev only.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator.session import Connection
from testbed import topo

from .conftest import (
    CFS,
    PDU_INITIATOR,
    adapter_counters,
    adapter_of,
    connection_lines,
    dmesg_since,
    kmsg_mark,
    offloaded_target,
    settle_sessions,
)

OFF, STOCK = topo.LINKS
IQN = "iqn.2026-11.org.cxgbit-ext:netdev-identity"
EXTRA = topo.Link("iniz", "tgtz", "198.18.2.2", "198.18.2.1")
# a second target host whose netdev has the name of soft0's on the first
OTHER_NS = "tgt2"
OTHER = topo.Link("ini9", OFF.tgt_dev, "198.18.9.2", "198.18.9.1")
OTHER_IQN = f"{IQN}-tgt2"
OTHER_PORT = 3261


def sh(*cmd: str) -> None:
    topo.sh(*cmd)


@pytest.fixture(scope="module")
def target(iscsid: None, module_ko: Path) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


@pytest.fixture
def soft1(target: None) -> Iterator[Path]:
    d = CFS / "adapters/soft1"
    d.mkdir()
    try:
        yield d
    finally:
        deadline = time.monotonic() + 15
        while any(" adapter=soft1 " in ln for ln in connection_lines()) and time.monotonic() < deadline:
            time.sleep(0.1)
        d.rmdir()


def add_link(ln: topo.Link) -> None:
    sh("ip", "link", "add", ln.ini_dev, "type", "veth", "peer", "name", ln.tgt_dev, "netns", topo.TGT_NS)
    sh("ip", "addr", "add", f"{ln.ini_ip}/24", "dev", ln.ini_dev)
    sh("ip", "link", "set", ln.ini_dev, "up")
    sh("ip", "-n", topo.TGT_NS, "addr", "add", f"{ln.tgt_ip}/24", "dev", ln.tgt_dev)
    sh("ip", "-n", topo.TGT_NS, "link", "set", ln.tgt_dev, "up")
    sh("ping", "-c1", "-W5", "-I", ln.ini_dev, ln.tgt_ip)


def rename(old: str, new: str) -> None:
    sh("ip", "-n", topo.TGT_NS, "link", "set", old, "down")
    sh("ip", "-n", topo.TGT_NS, "link", "set", old, "name", new)
    sh("ip", "-n", topo.TGT_NS, "link", "set", new, "up")


def login(ip: str) -> Connection:
    c = Connection(ip, 3260)
    c.login(PDU_INITIATOR, IQN)
    return c


def peer_of(c: Connection, ini_ip: str) -> str:
    """c's initiator side as the connections file prints it (ip:port)."""
    return f"{ini_ip}:{c.sock.getsockname()[1]}"


def roundtrip(c: Connection, lba: int) -> None:
    data = os.urandom(4096)
    c.scsi_write(lba, data)
    assert c.scsi_read(lba, 8) == data


def test_rename_keeps_the_binding(soft1: Path) -> None:
    (soft1 / "netdev").write_text(STOCK.tgt_dev)
    live = login(STOCK.tgt_ip)
    try:
        assert adapter_of(peer_of(live, STOCK.ini_ip)) == "soft1"
        rename(STOCK.tgt_dev, "tgtx1")
        try:
            assert (soft1 / "netdev").read_text() == "tgtx1\n"
            fresh = login(STOCK.tgt_ip)
            assert adapter_of(peer_of(fresh, STOCK.ini_ip)) == "soft1", (
                "a login after the rename was not offloaded on soft1"
            )
            roundtrip(fresh, 0)
            fresh.close()
            roundtrip(live, 8)
        finally:
            rename("tgtx1", STOCK.tgt_dev)
        assert (soft1 / "netdev").read_text() == f"{STOCK.tgt_dev}\n"
    finally:
        live.close()


def test_unregister_unbinds(soft1: Path) -> None:
    add_link(EXTRA)
    try:
        (soft1 / "netdev").write_text(EXTRA.tgt_dev)
        c = login(EXTRA.tgt_ip)
        assert adapter_of(peer_of(c, EXTRA.ini_ip)) == "soft1"
        c.close()
        mark = kmsg_mark("deleting tgtz")
        sh("ip", "-n", topo.TGT_NS, "link", "del", EXTRA.tgt_dev)
        assert (soft1 / "netdev").read_text() == "\n"
        assert any("soft1: netdev tgtz unregistered" in ln for ln in dmesg_since(mark))
        # a new netdev of the same name is not the one soft1 was bound to
        add_link(EXTRA)
        assert (soft1 / "netdev").read_text() == "\n"
        c = login(EXTRA.tgt_ip)
        assert adapter_of(peer_of(c, EXTRA.ini_ip)) is None, "a new netdev that took the old name was served"
        roundtrip(c, 16)
        c.close()
    finally:
        topo.sh("ip", "-n", topo.TGT_NS, "link", "del", EXTRA.tgt_dev, check=False)


def test_unregister_ends_live_connections(soft1: Path) -> None:
    """A connection offloaded on a netdev that goes away ends the way stock
    LIO's would (its NOP-In goes unanswered), the rest of the host is not
    touched: the adapter empties, unloads, and a session on tgt0 goes on."""
    from rtslib_fb import MappedLUN, NodeACL, RTSRoot

    name = f"{PDU_INITIATOR}-gone"
    (tpg,) = [t for t in RTSRoot().tpgs if t.parent_target.wwn == IQN]
    acl = NodeACL(tpg, name)
    add_link(EXTRA)
    try:
        acl.set_attribute("nopin_timeout", "3")
        acl.set_attribute("nopin_response_timeout", "3")
        MappedLUN(acl, 0, next(iter(tpg.luns)))
        (soft1 / "netdev").write_text(EXTRA.tgt_dev)
        neighbour = login(OFF.tgt_ip)
        assert adapter_of(peer_of(neighbour, OFF.ini_ip)) == "soft0"
        doomed = Connection(EXTRA.tgt_ip, 3260)
        doomed.login(name, IQN)
        peer = f"{EXTRA.ini_ip}:{doomed.sock.getsockname()[1]} "
        assert adapter_of(peer_of(doomed, EXTRA.ini_ip)) == "soft1"
        mark = kmsg_mark("deleting tgtz under a live connection")
        t0 = time.monotonic()
        sh("ip", "-n", topo.TGT_NS, "link", "del", EXTRA.tgt_dev)
        assert time.monotonic() - t0 < 10, "unregistering the netdev waited on a reference"
        deadline = time.monotonic() + 30
        while any(ln.startswith(peer) for ln in connection_lines()) and time.monotonic() < deadline:
            time.sleep(0.2)
        gone = time.monotonic() - t0
        print(f"connection on the unregistered netdev ended after {gone:.1f} s")
        assert not any(ln.startswith(peer) for ln in connection_lines()), "the connection outlived its netdev by 30 s"
        log = dmesg_since(mark)
        assert any("soft1: netdev tgtz unregistered" in ln for ln in log)
        assert any("Did not receive response to NOPIN" in ln for ln in log), "\n".join(log[-20:])
        doomed.sock.close()
        roundtrip(neighbour, 24)
        neighbour.close()
    finally:
        topo.sh("ip", "-n", topo.TGT_NS, "link", "del", EXTRA.tgt_dev, check=False)
        settle_sessions()
        acl.delete()


@pytest.fixture
def other_host(target: None) -> Iterator[None]:
    """netns tgt2 with a netdev named as soft0's and an offloaded target on it."""
    sh("ip", "netns", "add", OTHER_NS)
    t = topology.Topology(iqn=OTHER_IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=((OTHER.tgt_ip, OTHER_PORT),), offload=True, name_prefix="cxe2")  # fmt: skip
    created = False
    try:
        sh("ip", "-n", OTHER_NS, "link", "set", "lo", "up")
        sh("ip", "link", "add", OTHER.ini_dev, "type", "veth", "peer", "name", OTHER.tgt_dev, "netns", OTHER_NS)
        sh("ip", "addr", "add", f"{OTHER.ini_ip}/24", "dev", OTHER.ini_dev)
        sh("ip", "link", "set", OTHER.ini_dev, "up")
        sh("ip", "-n", OTHER_NS, "addr", "add", f"{OTHER.tgt_ip}/24", "dev", OTHER.tgt_dev)
        sh("ip", "-n", OTHER_NS, "link", "set", OTHER.tgt_dev, "up")
        sh("ping", "-c1", "-W5", "-I", OTHER.ini_dev, OTHER.tgt_ip)
        with topo.in_netns(OTHER_NS):
            topology.create(t)
        created = True
        yield
    finally:
        if created:
            topology.delete(OTHER_IQN)
        topo.sh("ip", "link", "del", OTHER.ini_dev, check=False)
        topo.sh("ip", "netns", "del", OTHER_NS, check=False)


def test_same_name_in_another_namespace(soft1: Path, other_host: None) -> None:
    """An adapter serves a netdev of its own namespace: soft0, bound to tgt0
    of netns tgt, does not serve tgt2's tgt0; a name that two namespaces
    have is refused (EEXIST) from a third and changes nothing; soft1 bound
    from inside tgt2 serves tgt2's tgt0 and nothing of netns tgt."""
    with pytest.raises(OSError) as e:
        (soft1 / "netdev").write_text(OFF.tgt_dev)
    assert e.value.errno == errno.EEXIST, e.value
    assert (soft1 / "netdev").read_text() == "\n"

    c = Connection(OTHER.tgt_ip, OTHER_PORT)
    c.login(PDU_INITIATOR, OTHER_IQN)
    assert adapter_of(peer_of(c, OTHER.ini_ip)) is None, "soft0 served a netdev of another namespace that has its name"
    roundtrip(c, 0)
    c.close()

    with topo.in_netns(OTHER_NS):
        (soft1 / "netdev").write_text(OFF.tgt_dev)
    assert (soft1 / "netdev").read_text() == f"{OFF.tgt_dev}\n"
    soft0_before = adapter_counters("soft0")["connections"]
    c = Connection(OTHER.tgt_ip, OTHER_PORT)
    c.login(PDU_INITIATOR, OTHER_IQN)
    assert adapter_of(peer_of(c, OTHER.ini_ip)) == "soft1", "a login over tgt2's tgt0 was not offloaded on soft1"
    roundtrip(c, 8)
    soft1_before = adapter_counters("soft1")["connections"]
    home = login(OFF.tgt_ip)
    assert adapter_of(peer_of(home, OFF.ini_ip)) == "soft0", "a login over netns tgt's tgt0 left soft0"
    roundtrip(home, 16)
    assert adapter_counters("soft0")["connections"] == soft0_before + 1
    assert adapter_counters("soft1")["connections"] == soft1_before
    home.close()
    c.close()
