"""Software adapters made with mkdir, their toggles, and the connections file.

soft0 serves tgt0; a second adapter made with ``mkdir adapters/soft1`` and
bound to tgt1 serves logins arriving over tgt1 at the same time, each
connection on the adapter of the netdev it came in on. ``rmdir`` of an
adapter with a live session leaves that session working and sends new
logins to stock TCP. With ``ddp 0`` write data goes through a bounce page
(bytes_copied) instead of being placed; with ``iso 0`` Data-In leaves PDU
by PDU (no bursts). Toggles apply to connections accepted afterwards.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator.session import Connection, Params
from testbed import topo

from .conftest import CFS, PDU_INITIATOR, adapter_counters, connection_lines, offloaded_target

IQN = "iqn.2026-11.org.cxgbit-ext:adapters"
OFF, OTHER = topo.LINKS  # soft0 serves tgt0; soft1 (made here) tgt1
BLOCK = 512
ADAPTERS = CFS / "adapters"


@pytest.fixture(scope="module")
def target(iscsid: None, module_ko: Path) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=32 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


@pytest.fixture
def soft1(target: None) -> Iterator[Path]:
    d = ADAPTERS / "soft1"
    d.mkdir()
    try:
        yield d
    finally:
        if d.exists():
            d.rmdir()


# the key=value fields of a connections line, in the module's order (cxe_conn_line)
CONNECTION_FIELDS = {
    "adapter", "login", "hdigest", "ddigest", "ddp", "iso", "iso_off",
    "pdus_rx", "pdus_tx", "bytes_placed", "bytes_copied", "tx_inline", "data_cache_kib",
}  # fmt: skip


def connections() -> dict[str, dict[str, str]]:
    """peer -> the connection's key=value fields, from the connections file."""
    out = {}
    for ln in connection_lines():
        peer, _local, *kvs = ln.split()
        out[peer] = dict(kv.split("=", 1) for kv in kvs)
    return out


def login(ip: str, params: Params | None = None) -> Connection:
    c = Connection(ip)
    c.login(PDU_INITIATOR, IQN, params)
    return c


def peer(c: Connection) -> str:
    ip, port = c.sock.getsockname()
    return f"{ip}:{port}"


def write_read(c: Connection, lba: int, blocks: int) -> int:
    data = os.urandom(blocks * BLOCK)
    c.scsi_write(lba, data)
    assert c.scsi_read(lba, blocks) == data
    return len(data)


def refused(path: Path, value: str) -> int:
    with pytest.raises(OSError) as e:
        path.write_text(value + "\n")
    return e.value.errno


def test_bad_adapter_input_is_refused_and_changes_nothing(soft1: Path) -> None:
    before = sorted(p.name for p in ADAPTERS.iterdir())
    with pytest.raises(OSError) as e:
        (ADAPTERS / "bad name!").mkdir()
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        (ADAPTERS / "a-name-longer-than-15").mkdir()
    assert e.value.errno == errno.EINVAL
    with pytest.raises(FileExistsError):
        (ADAPTERS / "soft1").mkdir()
    with pytest.raises(OSError) as e:
        (ADAPTERS / "soft0").rmdir()  # built in: unbind it instead
    assert e.value.errno == errno.EPERM
    assert sorted(p.name for p in ADAPTERS.iterdir()) == before
    # a new adapter serves nothing, with every offload on
    assert (soft1 / "netdev").read_text() == "\n"
    assert (soft1 / "type").read_text() == "soft\n"
    assert (soft1 / "ddp").read_text() == "1\n" and (soft1 / "iso").read_text() == "1\n"
    assert (soft1 / "caps").read_text().split() == ["hcrc", "dcrc", "ddp", "iso", "t10pi"]
    # soft0 serves tgt0: no second adapter may name it
    assert refused(soft1 / "netdev", OFF.tgt_dev) == errno.EBUSY
    assert refused(soft1 / "netdev", "not/a/netdev") == errno.EINVAL
    assert (soft1 / "netdev").read_text() == "\n"
    assert refused(soft1 / "ddp", "maybe") == errno.EINVAL
    assert (soft1 / "ddp").read_text() == "1\n"


def test_each_connection_on_the_adapter_of_its_netdev(soft1: Path) -> None:
    (soft1 / "netdev").write_text(OTHER.tgt_dev)
    b0, b1 = adapter_counters("soft0"), adapter_counters("soft1")
    a, b = login(OFF.tgt_ip), login(OTHER.tgt_ip)
    conns = connections()
    assert conns[peer(a)]["adapter"] == "soft0"
    assert conns[peer(b)]["adapter"] == "soft1"
    n_a, n_b = write_read(a, 0, 64), write_read(b, 4096, 96)
    a.logout()
    b.logout()
    a0, a1 = adapter_counters("soft0"), adapter_counters("soft1")
    for before, after, n in ((b0, a0, n_a), (b1, a1, n_b)):
        assert after["syn_steered"] - before["syn_steered"] == 1
        assert after["connections"] - before["connections"] == 1
        assert after["bytes_placed"] - before["bytes_placed"] == n


def test_rmdir_keeps_live_sessions_and_sends_new_logins_to_stock(soft1: Path) -> None:
    (soft1 / "netdev").write_text(OTHER.tgt_dev)
    live = login(OTHER.tgt_ip)
    assert connections()[peer(live)]["adapter"] == "soft1"
    soft1.rmdir()
    assert not soft1.exists()
    # the session started on soft1 goes on, and still reads back what it wrote
    write_read(live, 8192, 64)
    assert connections()[peer(live)]["adapter"] == "soft1"
    stock = login(OTHER.tgt_ip)
    assert peer(stock) not in connections()
    write_read(stock, 8192, 8)
    stock.logout()
    live.logout()


def test_toggles_apply_to_new_connections(target: None) -> None:
    soft0 = ADAPTERS / "soft0"
    params = Params(immediate_data=False, initial_r2t=True, max_recv_dlen=8192, max_burst=65536)
    started_with_all = login(OFF.tgt_ip, params)
    try:
        (soft0 / "ddp").write_text("0\n")
        (soft0 / "iso").write_text("0\n")
        c = login(OFF.tgt_ip, params)
        fields = connections()[peer(c)]
        assert (fields["ddp"], fields["iso"], fields["iso_off"]) == ("0", "0", "adapter")
        first = connections()[peer(started_with_all)]
        assert (first["iso"], first["iso_off"]) == ("1", "no")
        before = adapter_counters("soft0")
        n = write_read(c, 12288, 300)  # solicited by R2Ts; read back in 8 KiB PDUs
        mid = adapter_counters("soft0")
        assert mid["bytes_copied"] - before["bytes_copied"] == n
        assert mid["bytes_placed"] == before["bytes_placed"]
        assert mid["bursts"] == before["bursts"]  # Data-In went PDU by PDU
        assert mid["ddp_tag_errors"] == before["ddp_tag_errors"]
        # the connection made before the change still places and segments
        n = write_read(started_with_all, 16384, 300)
        after = adapter_counters("soft0")
        assert after["bytes_placed"] - mid["bytes_placed"] == n
        assert after["bytes_copied"] == mid["bytes_copied"]
        assert after["bursts"] - mid["bursts"] == 3  # 150 KiB in 64 KiB bursts
        c.logout()
    finally:
        (soft0 / "ddp").write_text("1\n")
        (soft0 / "iso").write_text("1\n")
        started_with_all.logout()


def test_connections_file_is_not_limited_to_a_page(target: None) -> None:
    conns = [login(OFF.tgt_ip) for _ in range(40)]
    try:
        text = (CFS / "connections").read_text()
        assert len(text) > 4096
        listed = connections()
        assert all(listed[peer(c)]["adapter"] == "soft0" for c in conns)
        # every line whole: each of the module's fields, the last one too
        assert all(set(fields) == CONNECTION_FIELDS for fields in listed.values())
    finally:
        for c in conns:
            c.logout()
