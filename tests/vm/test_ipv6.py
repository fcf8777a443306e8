"""IPv6 portals are offloaded like IPv4 ones.

The veth pairs get addresses from the IPv6 benchmarking range (RFC 5180,
2001:2::/48) next to their IPv4 ones. Target A has [::]:3260, which LIO
makes dual-stack (IPv4 connections arrive v4-mapped), target B a specific
address, [2001:2::1]:3263, both offloaded; soft0 serves tgt0. Logins
come from the PDU initiator and from open-iscsi (fio write+verify), and
targetcli-offload and the cxgbit-ext CLI show both portals offloaded.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import cli, topology
from cxgbit_ext.control import Control
from iscsi_initiator import iscsiadm
from iscsi_initiator.pdu import RSVD_TAG, Op, text_request
from iscsi_initiator.session import Connection, Params
from testbed import fio, topo

from .conftest import (
    CFS,
    PDU_INITIATOR,
    V6,
    TargetcliShell,
    connection_lines,
    connection_of,
    initiator_side,
    offloaded_line,
    offloaded_target,
    soft0_counters,
)

OFF, STOCK = topo.LINKS
IQN_A = "iqn.2026-11.org.cxgbit-ext:v6-a"
IQN_B = "iqn.2026-11.org.cxgbit-ext:v6-b"
DIGESTS = Params(header_digest="CRC32C", data_digest="CRC32C")


@pytest.fixture(scope="module")
def targets(v6_addresses: None, module_ko: Path) -> Iterator[None]:
    a = topology.Topology(iqn=IQN_A, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=(("[::]", 3260),), offload=True, name_prefix="v6a")  # fmt: skip
    # the library takes an IPv6 address bare, as ipaddress writes it
    b = topology.Topology(iqn=IQN_B, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=((V6[OFF][1], 3263),), offload=True, name_prefix="v6b")  # fmt: skip
    with offloaded_target(module_ko, a):
        with topo.in_netns():
            topology.create(b)
        try:
            yield
        finally:
            topology.delete(IQN_B)


def login(host: str, iqn: str, port: int = 3260, params: Params | None = None) -> Connection:
    c = Connection(host, port)
    c.login(PDU_INITIATOR, iqn, params)
    return c


def roundtrip(c: Connection, lba: int) -> None:
    data = os.urandom(16384)
    c.scsi_write(lba, data)
    assert c.scsi_read(lba, len(data) // 512) == data


def test_portals_listed(targets: None) -> None:
    portals = (CFS / "portals").read_text().split()
    assert "[::]:3260" in portals
    assert f"[{V6[OFF][1]}]:3263" in portals


def test_v4_and_v6_on_one_port_with_digests(targets: None) -> None:
    """[::]:3260 takes IPv6 and IPv4 at once, both offloaded, CRC32C header and data digests on."""
    v6 = login(V6[OFF][1], IQN_A, params=DIGESTS)
    v4 = login(OFF.tgt_ip, IQN_A, params=DIGESTS)
    try:
        for c in (v6, v4):
            conn = connection_of(initiator_side(c))
            state = None if conn is None else (conn.adapter, conn.login, conn.hdigest, conn.ddigest)
            assert state == ("soft0", False, True, True), f"not offloaded with digests: {conn}"
        roundtrip(v6, 0)
        roundtrip(v4, 32)
        roundtrip(v6, 64)
        conn = connection_of(initiator_side(v6))
        assert conn is not None and conn.counters["bytes_placed"] == 32768, conn
    finally:
        v6.close()
        v4.close()


def test_v6_specific_address_offloaded_line(targets: None) -> None:
    c = login(V6[OFF][1], IQN_B, port=3263)
    try:
        assert offloaded_line(c), "a login to [2001:2::1]:3263 was not offloaded"
        roundtrip(c, 0)
    finally:
        c.close()


def test_v6_over_another_netdev_is_stock(targets: None) -> None:
    """soft0 serves tgt0 only: over tgt1 the [::]:3260 portal is served by stock TCP."""
    c = login(V6[STOCK][1], IQN_A)
    try:
        assert offloaded_line(c) is None
        roundtrip(c, 96)
    finally:
        c.close()


def test_open_iscsi_fio_verify_and_tools_show_v6(
    targets: None, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    portal = f"[{V6[OFF][1]}]:3263"
    iscsiadm.discover(portal)
    iscsiadm.login(IQN_B, portal)
    try:
        (dev,) = iscsiadm.session_disks(IQN_B, expect=1).values()
        mine = [c for c in Control(CFS).connections() if c.peer.startswith(f"[{V6[OFF][0]}]:")]
        assert len(mine) == 1, f"open-iscsi's IPv6 connection is not offloaded: {connection_lines()}"
        fio.write_verify(dev, size="8M", bs="64k", iodepth=8)
        (conn,) = [c for c in Control(CFS).connections() if c.peer == mine[0].peer]
        placed = conn.counters["bytes_placed"]
        assert placed >= 8 * topology.MiB, f"fio's writes were not placed offloaded: {conn}"
    finally:
        iscsiadm.logout(IQN_B, portal)
        iscsiadm.delete_nodes()
    with topo.in_netns():
        capfd.readouterr()
        assert cli.main(["--json", "portals"]) == 0
        rows = {f"{r['ip']}:{r['port']}": r for r in json.loads(capfd.readouterr().out)}
        sh = TargetcliShell(tmp_path / "tcli")
        ls_a = sh.run(f"/iscsi/{IQN_A}/tpg1/portals ls")
        ls_b = sh.run(f"/iscsi/{IQN_B}/tpg1/portals ls")
    for key in ("[::]:3260", portal):
        assert key in rows and rows[key]["offloaded"], f"cxgbit-ext portals: {key}: {rows.get(key)}"
    assert "[::]:3260" in ls_a and "[offload: soft0 " in ls_a, ls_a
    assert f"{V6[OFF][1]}" in ls_b and "[offload: soft0 " in ls_b, ls_b


def send_targets(host: str) -> dict[str, set[str]]:
    """SendTargets=All in a discovery session at host:3260: each target's
    TargetAddress values as the target sent them."""
    c = Connection(host)
    try:
        c.login(PDU_INITIATOR, None, discovery=True)
        c.send(text_request(itt=c.next_itt(), cmdsn=c.cmdsn, expstatsn=c.expstatsn, keys={"SendTargets": "All"}))
        rsp = c.recv()
        assert rsp.opcode == Op.TEXT_RSP and rsp.final and rsp.ttt == RSVD_TAG, f"{host}: {rsp!r}"
        got: dict[str, set[str]] = {}
        name = ""
        for kv in rsp.data.decode().split("\0"):
            key, _, value = kv.partition("=")
            if key == "TargetName":
                name = value
                got[name] = set()
            elif key == "TargetAddress":
                got[name].add(value)
        assert c.logout() == 0
        return got
    finally:
        c.close()


def link_local(ns: str | None, dev: str) -> str:
    """dev's link-local address (in network namespace ns), once usable."""
    pre = ["ip", "-n", ns] if ns else ["ip"]
    for _ in range(50):
        out = topo.sh(*pre, "-6", "-o", "addr", "show", "dev", dev, "scope", "link", "-tentative").stdout.split()
        if "inet6" in out:
            return out[out.index("inet6") + 1].split("/")[0]
        time.sleep(0.2)
    shown = topo.sh(*pre, "-6", "addr", "show", "dev", dev).stdout
    raise AssertionError(f"{dev} has no usable link-local address: {shown}")


@pytest.mark.parametrize("scope", ["global", "link"])
def test_sendtargets_over_v6_names_the_address_it_came_in_on(targets: None, scope: str) -> None:
    """SendTargets over IPv6 through the offloaded netdev is answered as
    through the stock one: the wildcard portal [::]:3260 as the address the
    discovery came in on (a link-local one when it came in on that, as LIO
    does: without a scope, which only the initiator's side has), target B's
    specific portal as configured, and no link-local address otherwise."""
    for ln in (OFF, STOCK):
        addr = V6[ln][1] if scope == "global" else link_local(topo.TGT_NS, ln.tgt_dev)
        host = addr if scope == "global" else f"{addr}%{ln.ini_dev}"
        steered = soft0_counters()["syn_steered"]
        got = send_targets(host)
        moved = soft0_counters()["syn_steered"] - steered
        assert moved == (1 if ln is OFF else 0), f"{ln.tgt_dev} ({scope}): soft0 steered {moved} SYNs"
        assert got.get(IQN_A) == {f"[{addr}]:3260,1"}, f"{ln.tgt_dev} ({scope}): {got}"
        assert got.get(IQN_B) == {f"[{V6[OFF][1]}]:3263,1"}, f"{ln.tgt_dev} ({scope}): {got}"
        if scope == "global":
            assert not [a for addrs in got.values() for a in addrs if a.startswith("[fe80:")], got


IQN_C = "iqn.2026-11.org.cxgbit-ext:v6-ll"
SHARED_LL = "fe80::99"  # on both target netdevs: only the zone tells the portals apart


def ifindex(ns: str, dev: str) -> int:
    return int(topo.sh("ip", "netns", "exec", ns, "cat", f"/sys/class/net/{dev}/ifindex").stdout)


@pytest.fixture(scope="module")
def link_local_portals(targets: None) -> Iterator[dict[str, tuple[str, str]]]:
    """Target C with link-local portals, each zone a target netdev given by
    index ([fe80::...%N]: LIO looks a zone's name up in the initial network
    namespace only), offload on: "own" on each link's own link-local address
    (port 3264), "shared" on fe80::99, which both target netdevs have, zoned
    to tgt1 (port 3265). {name: (the portal as LIO names it, the address as
    the initiator reaches it)}."""
    portals = {}
    for ln in (OFF, STOCK):
        ll = link_local(topo.TGT_NS, ln.tgt_dev)
        portals[f"own {ln.tgt_dev}"] = (f"[{ll}%{ifindex(topo.TGT_NS, ln.tgt_dev)}]:3264", f"{ll}%{ln.ini_dev}")
    for ln in (OFF, STOCK):
        topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "add", f"{SHARED_LL}/64", "dev", ln.tgt_dev, "nodad")
    portals["shared"] = (f"[{SHARED_LL}%{ifindex(topo.TGT_NS, STOCK.tgt_dev)}]:3265", "")
    c = topology.Topology(iqn=IQN_C, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=tuple((p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])) for p, _ in portals.values()),
                          offload=True, name_prefix="v6ll")  # fmt: skip
    with topo.in_netns():
        topology.create(c)
    try:
        yield portals
    finally:
        with topo.in_netns():
            topology.delete(IQN_C)
        for ln in (OFF, STOCK):
            topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "del", f"{SHARED_LL}/64", "dev", ln.tgt_dev, check=False)


def test_a_link_local_portal_with_its_zone_end_to_end(
    link_local_portals: dict[str, tuple[str, str]], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A portal on a link-local address, its zone given, is served as any
    other: over tgt0 offloaded by soft0 (data placed), over tgt1 by stock
    TCP; cxgbit-ext portals and targetcli-offload say so for each."""
    placed = {}
    for name in (f"own {OFF.tgt_dev}", f"own {STOCK.tgt_dev}"):
        c = login(link_local_portals[name][1], IQN_C, port=3264, params=DIGESTS)
        try:
            roundtrip(c, 0)
            conn = connection_of(initiator_side(c))
            placed[name] = None if conn is None else (conn.adapter, conn.counters["bytes_placed"])
        finally:
            c.close()
    assert placed == {f"own {OFF.tgt_dev}": ("soft0", 16384), f"own {STOCK.tgt_dev}": None}, placed
    with topo.in_netns():
        capfd.readouterr()
        assert cli.main(["--json", "portals"]) == 0
        rows = {f"{r['ip']}:{r['port']}": r["offloaded"] for r in json.loads(capfd.readouterr().out)}
        ls = TargetcliShell(tmp_path / "tcli").run(f"/iscsi/{IQN_C}/tpg1/portals ls")
    shown = {name: rows.get(portal) for name, (portal, _) in link_local_portals.items()}
    assert shown == {f"own {OFF.tgt_dev}": True, f"own {STOCK.tgt_dev}": False, "shared": False}, rows
    assert ls.count("[offload: soft0 ") == 1, ls


def test_a_link_local_portal_takes_logins_from_its_zone_only(link_local_portals: dict[str, tuple[str, str]]) -> None:
    """fe80::99 is on both target netdevs, its portal zoned to tgt1: a
    login through tgt1 is served (stock: soft0 serves tgt0 only), one
    through tgt0 is refused, as LIO's own listener on that zone refuses it;
    soft0, whose netdev has the address too, does not take it."""
    steered = soft0_counters()["syn_steered"]
    c = login(f"{SHARED_LL}%{STOCK.ini_dev}", IQN_C, port=3265)
    try:
        roundtrip(c, 32)
        assert offloaded_line(c) is None, "a login through tgt1 was offloaded"
    finally:
        c.close()
    for offload in (False, True):  # stock LIO's answer first, the oracle
        shared_offload(offload)
        with pytest.raises(ConnectionRefusedError):
            login(f"{SHARED_LL}%{OFF.ini_dev}", IQN_C, port=3265)
    assert soft0_counters()["syn_steered"] == steered, "soft0 steered a SYN for a portal zoned to another netdev"


def shared_offload(on: bool) -> None:
    """Flip the stock switch of target C's fe80::99 portal."""
    from rtslib_fb import FabricModule, Target

    from cxgbit_ext.portals import set_offload

    with topo.in_netns():
        tpgs = Target(FabricModule("iscsi"), IQN_C, mode="lookup").tpgs
        (np,) = [np for tpg in tpgs for np in tpg.network_portals if np.port == 3265]
        set_offload(np, on)
