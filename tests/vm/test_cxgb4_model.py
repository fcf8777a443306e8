"""The cxgb4 backend's device glue against a modelled adapter.

No Chelsio adapter exists here: a modelled one (cxgb4_models) stands in
for it below the glue, its port a netdev of the target host, and answers
what the glue asks of the chip from the model of its server table. An
offloaded portal on an address of that port gets a listening server on
it, and its sessions are then the model's (test_cxgb4_conns.py has what
they do); every other portal goes on working through the software
adapter.
"""

from __future__ import annotations

import errno
import subprocess
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
    cxgb4_adapter,
    dmesg_since,
    kmsg_mark,
    offloaded_peers,
    offloaded_target,
    wait_for,
)

IQN = "iqn.2026-11.org.cxgbit-ext:c4model"
OFF, STOCK = topo.LINKS  # tgt0 served by soft0, tgt1 not
MODELS = CFS / "cxgb4_models"


@pytest.fixture(scope="module")
def neighbour(iscsid: None, module_ko: Path) -> Iterator[None]:
    """A target offloaded on every address, made before any model."""
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


def models(*lines: str) -> None:
    for line in lines:
        MODELS.write_text(line + "\n")


@pytest.fixture
def portal_target() -> Iterator[list[tuple[str, int]]]:
    """Targets made in the test, on the portals it appends; removed after."""
    made: list[tuple[str, int]] = []
    yield made
    with topo.in_netns():
        for _ip, port in made:
            topology.delete(f"{IQN}-{port}")
    for ip, port in made:
        assert f"{ip}:{port}" not in (CFS / "portals").read_text().split()


def make_portal(made: list[tuple[str, int]], ip: str, port: int) -> None:
    t = topology.Topology(iqn=f"{IQN}-{port}", backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=((ip, port),), offload=True, name_prefix=f"m{port}")  # fmt: skip
    with topo.in_netns():
        topology.create(t)
    made.append((ip, port))
    assert f"{ip}:{port}" in (CFS / "portals").read_text().split()


def login_offloaded(ip: str, port: int) -> None:
    """A session on the portal, offloaded (by the model when it has a
    server for the portal, else by the software adapter): what it writes
    reads back equal."""
    c = Connection(ip, port)
    try:
        c.login(PDU_INITIATOR, f"{IQN}-{port}")
        peer = "{}:{}".format(*c.sock.getsockname()[:2])
        assert peer in offloaded_peers(), "the portal's session is not offloaded"
        data = bytes(range(256)) * 32
        c.scsi_write(8, data)
        assert c.scsi_read(8, len(data) // 512) == data
        c.logout()
    finally:
        c.close()


def test_a_portal_on_a_modelled_adapters_port_gets_a_server(
    neighbour: None, portal_target: list[tuple[str, int]]
) -> None:
    """Listen and unlisten through the glue: one server on the model for
    a portal on its port's address, none for one on another netdev's; the
    portal and the neighbour target still log in offloaded; the server
    and its STID go with the portal, and the model with no server left."""
    models(f"add m0 chip=t6 netdev={OFF.tgt_dev}")
    try:
        line = MODELS.read_text()
        want = f"m0 chip=T6model netdev={OFF.tgt_dev} answer_ms=0 table=16 servers=0 refused=0"
        assert line == want + " conns=0 refused_msgs=0 bad_releases=0 pod_writes=0 pod_writes_late=0\n", line
        assert cxgb4_adapter("m0")["servers"] == "0"
        make_portal(portal_target, OFF.tgt_ip, 3262)
        got = cxgb4_adapter("m0")
        assert (got["servers"], got["stids"], got["stray"], got["unwaited"]) == ("1", "1", "0", "0"), got
        assert "servers=1 " in MODELS.read_text()
        make_portal(portal_target, STOCK.tgt_ip, 3263)  # not the model's port
        assert cxgb4_adapter("m0")["servers"] == "1"
        login_offloaded(OFF.tgt_ip, 3262)
        c = Connection(OFF.tgt_ip)
        c.login(PDU_INITIATOR, IQN)
        c.logout()
        c.close()
        # a model with a server is not removed
        with pytest.raises(OSError) as e:
            models("del m0")
        assert e.value.errno == errno.EBUSY
        with topo.in_netns():
            topology.delete(f"{IQN}-3262")
        portal_target.remove((OFF.tgt_ip, 3262))
        got = cxgb4_adapter("m0")
        assert (got["servers"], got["stids"], got["stray"]) == ("0", "0", "0"), got
        assert "servers=0 refused=0" in MODELS.read_text()
    finally:
        models("del m0")
    assert MODELS.read_text() == ""
    assert "no_ports" in (CFS / "backends").read_text()


def test_late_full_and_refused_answers_leave_no_server(neighbour: None, portal_target: list[tuple[str, int]]) -> None:
    """A chip that answers after the glue's 10 s wait: the portal is made
    without the server (it still works), and the late server is removed
    and its STID given back when its answers come. A chip whose table is
    full: the STID goes back at once. Neither leaves a server or an STID."""
    models(f"add slow chip=t5 netdev={OFF.tgt_dev} answer_ms=12000", f"add full chip=t6 netdev={OFF.tgt_dev} table=0")
    try:
        mark = kmsg_mark("late and full")
        t0 = time.monotonic()
        make_portal(portal_target, OFF.tgt_ip, 3264)
        took = time.monotonic() - t0
        assert took >= 10, f"the portal was made in {took:.1f} s, before the wait ran out"
        log = "\n".join(dmesg_since(mark))
        assert "cxgb4 adapter slow does not listen for it (-110)" in log, log
        assert "cxgb4 adapter full does not listen for it (-28)" in log, log
        assert cxgb4_adapter("full")["stids"] == "0"
        assert cxgb4_adapter("slow")["stids"] == "1"
        login_offloaded(OFF.tgt_ip, 3264)
        # the late open is answered, the unwanted server removed, the removal answered
        wait_for("the late server was not settled", lambda: cxgb4_adapter("slow")["stids"] == "0", 40)
        got = cxgb4_adapter("slow")
        assert (got["servers"], got["unwaited"], got["stray"]) == ("0", "2", "0"), got
        assert "servers=0 refused=0" in next(ln for ln in MODELS.read_text().splitlines() if ln.startswith("slow "))
    finally:
        models("del slow", "del full")


def test_bad_model_requests_change_nothing(neighbour: None) -> None:
    """Each bad write is refused with EINVAL (or ENOENT, ENODEV, EEXIST) and
    leaves the models as they were; a model whose netdev goes keeps its
    line and says so."""
    mark = kmsg_mark("bad model requests")
    for bad in ("add x chip=t7 netdev=lo", "add x chip=t6", "add x chip=t6 netdev=lo table=17",
                "add x chip=t6 netdev=lo answer_ms=nope", "add averyveryverylongname chip=t6 netdev=lo",
                "add x chip=t6 netdev=lo colour=blue", "frobnicate x", "del"):  # fmt: skip
        with pytest.raises(OSError) as e:
            models(bad)
        assert e.value.errno == errno.EINVAL, bad
    log = "\n".join(dmesg_since(mark))
    for why in ("x: 'chip=t7' is not chip=t5|t6, netdev=IF, answer_ms=N or table=N",
                "x: chip=t5|t6 and netdev=IF are needed", "x: table is at most 16, answer_ms at most 60000",
                "x: 'answer_ms=nope' is not", "a name of 1 to 15 characters", "x: 'colour=blue' is not",
                "write 'add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]', 'unplug NAME' "
                "or 'del NAME'"):  # fmt: skip
        assert why in log, f"not said: {why}\n{log}"
    for verb in ("del", "unplug"):
        with pytest.raises(OSError) as e:
            models(f"{verb} nosuch")
        assert e.value.errno == errno.ENOENT, verb
    with pytest.raises(OSError) as e:
        models("add x chip=t6 netdev=nosuchdev0")
    assert e.value.errno == errno.ENODEV
    assert MODELS.read_text() == ""
    subprocess.run(["ip", "-n", topo.TGT_NS, "link", "add", "cxe-m0", "type", "dummy"], check=True)
    models("add d chip=t6 netdev=cxe-m0")
    try:
        with pytest.raises(OSError) as e:
            models("add d chip=t5 netdev=cxe-m0")
        assert e.value.errno == errno.EEXIST
        subprocess.run(["ip", "-n", topo.TGT_NS, "link", "del", "cxe-m0"], check=True)
        assert "netdev=cxe-m0(gone)" in MODELS.read_text()
    finally:
        subprocess.run(["ip", "-n", topo.TGT_NS, "link", "del", "cxe-m0"], capture_output=True)
        models("del d")
    assert MODELS.read_text() == ""
