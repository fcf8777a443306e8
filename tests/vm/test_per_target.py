"""Offload is per target: enabling it on one TPG's portal changes nothing
the initiators of any other target see.

Four targets on the target host, as targetcli makes them by default (each
TPG with its own 0.0.0.0:3260 portal) plus one on a specific address:

    A  0.0.0.0:3260     offload on
    B  0.0.0.0:3260     offload off
    C  0.0.0.0:3260     offload off
    D  198.18.0.1:3262  offload on

soft0 serves tgt0. Every SYN for 0.0.0.0:3260 over tgt0 reaches the
offloaded portal; what LIO would serve differently there (discovery, B, C,
a target that does not exist) must come out exactly as from the stock
portal, and the counters say which path each connection took.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator import iscsiadm
from iscsi_initiator.session import Connection, LoginError
from testbed import topo
from testbed.kmod import insmod

from .conftest import (
    CFS,
    PDU_INITIATOR,
    connection_lines,
    dmesg_since,
    kmsg_mark,
    offloaded_peers,
    soft0_counters,
)  # fmt: skip

# which target is offloaded is our portal logic, the same over either
# kernel: one kernel (tests/vm/shares.py)
pytestmark = pytest.mark.dealt

OFF, STOCK = topo.LINKS
BASE = "iqn.2026-11.org.cxgbit-ext:pt-"
TARGETS = {  # name: (portal, offload)
    "a": ("0.0.0.0", 3260, True),
    "b": ("0.0.0.0", 3260, False),
    "c": ("0.0.0.0", 3260, False),
    "d": (OFF.tgt_ip, 3262, True),
}


# what LIO logs of a login it failed, or of one it read without a TPG for it
FALSE_FAILURE = re.compile(r"Login negotiation failed|Unable to locate Target")


def iqn(name: str) -> str:
    return BASE + name


@pytest.fixture(scope="module")
def targets(iscsid: None, module_ko: Path) -> Iterator[None]:
    subprocess.run(["modprobe", "iscsi_target_mod"], check=True)
    assert insmod(module_ko).returncode == 0
    (CFS / "adapters/soft0/netdev").write_text(OFF.tgt_dev)
    made: list[str] = []
    try:
        with topo.in_netns():
            for name, (ip, port, offload) in TARGETS.items():
                topology.create(
                    topology.Topology(
                        iqn=iqn(name), backstores=("ramdisk",), lun_size=8 * topology.MiB,
                        portals=((ip, port),), offload=offload, name_prefix=f"pt{name}",
                    )
                )  # fmt: skip
                made.append(iqn(name))
        yield
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()
        for t in made:
            topology.delete(t)
        deadline = time.monotonic() + 15
        while connection_lines() and time.monotonic() < deadline:
            time.sleep(0.1)
        p = subprocess.run(["rmmod", "cxgbit_ext"], capture_output=True, text=True)
        assert p.returncode == 0, f"cxgbit_ext did not unload: {p.stderr}"


def listed(portal: str) -> set[str]:
    # the default iface: an iface another test bound to a netdev would send
    # this discovery over that netdev whatever the address
    return {t.iqn for t in iscsiadm.discover_via(portal, iface="default")}


def test_discovery_lists_every_target(targets: None) -> None:
    """SendTargets over the offloaded netdev lists what it lists over the stock one."""
    before = soft0_counters()
    over_stock = listed(f"{STOCK.tgt_ip}:3260")
    mark = kmsg_mark("discovery over the offloaded netdev")
    over_offload = listed(f"{OFF.tgt_ip}:3260")
    assert over_stock == {iqn(n) for n in TARGETS}
    assert over_offload == over_stock
    after = soft0_counters()
    assert after["syn_steered"] > before["syn_steered"], "discovery never reached the offloaded portal"
    assert after["handed_back"] == before["handed_back"] + 1
    # handed back before LIO read it: the log says no login failed
    assert not [line for line in dmesg_since(mark) if FALSE_FAILURE.search(line)], dmesg_since(mark)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_login_and_io_to_each_target(targets: None, name: str) -> None:
    """Each target logs in and does I/O over tgt0; the offloaded ones on soft0, the others stock."""
    _, port, offload = TARGETS[name]
    before = soft0_counters()
    mark = kmsg_mark(f"login to {name} over the offloaded netdev")
    c = Connection(OFF.tgt_ip, port)
    try:
        c.login(PDU_INITIATOR, iqn(name))
        data = os.urandom(8192)
        c.scsi_write(8, data)
        assert c.scsi_read(8, len(data) // 512) == data
        me = f"{OFF.ini_ip}:{c.sock.getsockname()[1]}"
        assert (me in offloaded_peers()) == offload, f"{name}: offloaded={me in offloaded_peers()}, want {offload}"
    finally:
        c.close()
    after = soft0_counters()
    # B and C went through the offloaded portal and were handed back
    steered = port == 3260
    assert after["handed_back"] - before["handed_back"] == (1 if steered and not offload else 0)
    # decided before LIO read the login: the log says no login failed
    assert not [line for line in dmesg_since(mark) if FALSE_FAILURE.search(line)], dmesg_since(mark)


def test_unknown_target_answered_as_stock(targets: None) -> None:
    """A login to a target that does not exist gets the stock portal's answer on both netdevs."""
    answers = []
    for ip in (STOCK.tgt_ip, OFF.tgt_ip):
        c = Connection(ip, 3260)
        try:
            with pytest.raises(LoginError) as e:
                c.login(PDU_INITIATOR, iqn("nosuch"))
            answers.append((e.value.status_class, e.value.status_detail))
        finally:
            c.close()
    assert answers[0] == answers[1], f"stock {answers[0]}, over the offloaded netdev {answers[1]}"
