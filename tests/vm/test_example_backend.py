"""The example backend for OEMs (kmod/example-backend), a module of its own
built out of tree on the contract's headers, beside the core.

Its adapter ex0 serves tgt0 in soft0's stead: an open-iscsi session over
tgt0 to the offloaded portal is carried by it (the connections file and
ex0's counters say so) with fio verify, while one over tgt1 stays stock;
the tools list the backend and its adapter as the kernel reports them;
the module cannot unload while its session lives, and unloads after. A
connection such a backend does not take is closed, and nothing of it is
left.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from cxgbit_ext.control import Control
from iscsi_initiator import iscsiadm
from iscsi_initiator.session import Connection, ConnectionClosed
from testbed import fio, topo
from testbed.kmod import insmod, rmmod

from .conftest import (
    CFS,
    PDU_INITIATOR,
    adapter_counters,
    adapter_of,
    connection_lines,
    dmesg_since,
    kmsg_mark,
    offloaded_target,
    wait_for,
)

# the backend contract, which no kernel interface under it changes: one kernel (tests/vm/shares.py)
pytestmark = pytest.mark.dealt
IQN = "iqn.2026-11.org.cxgbit-ext:example"
OFF, STOCK = topo.LINKS
TOP = Path(__file__).resolve().parents[2]
MODULE = "cxgbit_ext_example"


def on_tgt0(ko: Path, *params: str) -> Callable[[], None]:
    """offloaded_target's before: tgt0 taken from soft0 (a netdev is served
    by one adapter; an empty write is not one, hence the newline), then
    the backend module ko loaded onto it with params."""

    def load() -> None:
        (CFS / "adapters/soft0/netdev").write_text("\n")
        p = insmod(ko, f"netdev={OFF.tgt_dev}", *params, provided=("cxgbit_ext",))
        assert p.returncode == 0, p.stderr

    return load


@pytest.fixture
def example_target(iscsid: None, module_ko: Path) -> Iterator[Path]:
    ko = module_ko.parent / "example-backend" / f"{MODULE}.ko"
    assert ko.exists(), f"{ko} missing: scripts/build-kmod builds it"

    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=32 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    try:
        with offloaded_target(module_ko, t, before=on_tgt0(ko)):
            yield ko
            iscsiadm.logout()
            wait_for("the example's connections end", lambda: not connection_lines(), 15)
            p = rmmod(MODULE)
            assert p.returncode == 0, p.stderr
    finally:
        rmmod(MODULE)


def test_the_example_backend_carries_a_session(example_target: Path) -> None:
    assert (CFS / "adapters/ex0/type").read_text() == "example\n"
    assert (CFS / "adapters/ex0/netdev").read_text() == f"{OFF.tgt_dev}\n"
    backends = dict(ln.split(" ", 1) for ln in (CFS / "backends").read_text().splitlines())
    assert backends["example"] == "on caps=hcrc,dcrc,ddp,iso", backends
    # discovery over tgt0 reaches ex0 too, and is handed to the stock portal
    portal = f"{OFF.tgt_ip}:3260"
    assert any(d.iqn == IQN for d in iscsiadm.discover(portal))
    assert adapter_counters("ex0")["handed_back"] == 1
    before = adapter_counters("ex0")
    iscsiadm.login(IQN, portal)
    (dev,) = iscsiadm.session_disks(IQN, expect=1).values()
    (conn,) = Control(CFS).connections()
    assert conn.peer.startswith(f"{OFF.ini_ip}:") and conn.adapter == "ex0", conn
    (res,) = fio.write_verify(dev, size="16M", bs="64k")
    assert res.write_bytes == 16 * topology.MiB
    after = adapter_counters("ex0")
    assert after["connections"] == before["connections"] + 1
    assert after["bytes_placed"] - before["bytes_placed"] >= 16 * topology.MiB
    assert adapter_counters("soft0")["connections"] == 0

    # the tools show the backend and its adapter as the kernel reports them
    cli = subprocess.run([str(TOP / ".venv/bin/cxgbit-ext"), "--json", "status"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    status = json.loads(cli.stdout)
    assert {b["name"] for b in status["backends"]} >= {"soft", "example"}, status["backends"]
    ex0 = {a["name"]: a for a in status["adapters"]}["ex0"]
    assert ex0["type"] == "example" and ex0["counters"]["connections"] >= 1, ex0

    # its session holds the module
    p = rmmod(MODULE)
    assert p.returncode != 0 and "in use" in p.stderr, p
    # a login over tgt1 is not ex0's: stock TCP, beside it
    assert any(d.iqn == IQN for d in iscsiadm.discover(f"{STOCK.tgt_ip}:3260"))
    assert len(connection_lines()) == 1


def test_a_connection_its_backend_does_not_take_is_closed(iscsid: None, module_ko: Path) -> None:
    """A connection steered to an adapter of a backend that does not adopt
    it (the test-only backendprobe, netdev= adopt_err=) is closed, the log
    saying which backend and why; nothing of it is left, nothing holds
    the backend, and with the backend gone soft0 serves the netdev again."""
    probe = module_ko.parent / "backendprobe/backendprobe.ko"
    assert probe.exists(), f"{probe} missing: scripts/build-kmod builds it"

    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), portals=(("0.0.0.0", 3260),), offload=True)
    try:
        with offloaded_target(module_ko, t, before=on_tgt0(probe, "adopt_err=-12")):
            marker = kmsg_mark("a connection backendprobe refuses")
            c = Connection(OFF.tgt_ip, 3260)
            with pytest.raises((ConnectionClosed, OSError)):
                c.login(PDU_INITIATOR, IQN)
            c.close()
            assert any("backend probe did not take it (-12): closed" in ln for ln in dmesg_since(marker))
            assert not connection_lines()
            refused = adapter_counters("probe0")
            assert refused["syn_steered"] >= 1 and refused["connections"] == 0, refused
            p = rmmod("backendprobe")
            assert p.returncode == 0, p.stderr
            (CFS / "adapters/soft0/netdev").write_text(OFF.tgt_dev)
            c = Connection(OFF.tgt_ip, 3260)
            try:
                c.login(PDU_INITIATOR, IQN)
                data = os.urandom(8192)
                c.scsi_write(8, data)
                assert c.scsi_read(8, len(data) // 512) == data
                assert adapter_of(f"{OFF.ini_ip}:{c.sock.getsockname()[1]}") == "soft0"
            finally:
                c.close()
    finally:
        rmmod("backendprobe")
