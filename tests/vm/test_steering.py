"""SYN steering takes only what is ours; a bad stream ends its connection only.

The software adapter takes new connections for an offloaded portal by
steering their SYNs to its own listener. These tests check what the rest of
the host sees while a portal on 0.0.0.0:3260 is offloaded over tgt0:

- traffic the target host forwards to a host behind it (port 3260 too),
  and traffic a DNAT rule sends elsewhere, reaches its destination;
- a SYN on the 4-tuple of a live offloaded connection goes to that
  connection's socket (as the TCP stack and nf_tproxy do), not to the
  listener, and the live session goes on;
- TCP urgent data (which iSCSI never uses) ends that connection, before and
  after login, and a neighbour session goes on;
- a zero-length Data-Out carrying a live R2T's TTT is ignored, as stock LIO
  ignores it, on both paths;
- while SYN cookies may be out, a live offloaded session's packets cost the
  hook a socket lookup, not a route lookup each.

The far host: netns ``far`` behind the target host, reached through it.

    init ns 198.18.0.2 --ini0/tgt0-- netns tgt (forwards) --tgtf/farf-- netns far 198.19.0.2
"""

from __future__ import annotations

import errno
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator.pdu import RSVD_TAG, Op, data_out, scsi_command
from iscsi_initiator.session import Connection, Params
from testbed import topo

from .conftest import PDU_INITIATOR, closed_by_peer, offloaded_peers, offloaded_target, soft0_counters

OFF, STOCK = topo.LINKS
IQN = "iqn.2026-11.org.cxgbit-ext:steering"
FAR_NS = "far"
FAR_IP, FAR_GW = "198.19.0.2", "198.19.0.1"
PORT = 3260


def sh(*cmd: str) -> str:
    return topo.sh(*cmd).stdout


@pytest.fixture(scope="module")
def target(iscsid: None, module_ko: Path) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=16 * topology.MiB,
                          portals=(("0.0.0.0", PORT),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


@pytest.fixture(scope="module")
def far_host(target: None) -> Iterator[None]:
    """netns far behind the target host, which routes for it."""
    sh("ip", "netns", "add", FAR_NS)
    try:
        sh("ip", "-n", FAR_NS, "link", "set", "lo", "up")
        sh("ip", "-n", topo.TGT_NS, "link", "add", "tgtf", "type", "veth", "peer", "name", "farf", "netns", FAR_NS)
        sh("ip", "-n", topo.TGT_NS, "addr", "add", f"{FAR_GW}/24", "dev", "tgtf")
        sh("ip", "-n", topo.TGT_NS, "link", "set", "tgtf", "up")
        sh("ip", "-n", FAR_NS, "addr", "add", f"{FAR_IP}/24", "dev", "farf")
        sh("ip", "-n", FAR_NS, "link", "set", "farf", "up")
        sh("ip", "-n", FAR_NS, "route", "add", "default", "via", FAR_GW)
        sh("ip", "netns", "exec", topo.TGT_NS, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sh("ip", "route", "add", "198.19.0.0/24", "via", OFF.tgt_ip, "dev", OFF.ini_dev)
        yield
    finally:
        topo.sh("ip", "route", "del", "198.19.0.0/24", check=False)
        topo.sh("ip", "netns", "exec", topo.TGT_NS, "sysctl", "-qw", "net.ipv4.ip_forward=0", check=False)
        topo.sh("ip", "-n", topo.TGT_NS, "link", "del", "tgtf", check=False)
        topo.sh("ip", "netns", "del", FAR_NS, check=False)


ECHO = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"far:" + c.recv(100))
    c.close()
"""


@pytest.fixture
def far_echo(far_host: None) -> Iterator[None]:
    """A TCP server on the far host's port 3260 that answers far:<what it got>."""
    p = subprocess.Popen(["ip", "netns", "exec", FAR_NS, sys.executable, "-c", ECHO, str(PORT)],
                         stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "listening"
        yield
    finally:
        p.kill()
        p.wait()


def ask(host: str, port: int = PORT, timeout: float = 10) -> bytes:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(b"hello")
        return s.recv(100)


def test_forwarded_syn_reaches_the_host_behind(far_echo: None) -> None:
    """ip_forward on the target host: port 3260 of a host behind it still answers."""
    before = soft0_counters()["syn_steered"]
    assert ask(FAR_IP) == b"far:hello"
    assert soft0_counters()["syn_steered"] == before, "a forwarded SYN was steered to the offload listener"


def test_dnat_syn_reaches_its_new_destination(far_echo: None) -> None:
    """A DNAT rule on the portal's own ip:port sends connections elsewhere; offload does not take them."""
    nft = ("ip", "netns", "exec", topo.TGT_NS, "nft")
    sh(*nft, "add", "table", "ip", "cxe_dnat")
    sh(*nft, "add chain ip cxe_dnat pre { type nat hook prerouting priority dstnat; }")
    sh(*nft, "add", "rule", "ip", "cxe_dnat", "pre", "ip", "saddr", OFF.ini_ip, "ip", "daddr", OFF.tgt_ip,
       "tcp", "dport", str(PORT), "dnat", "to", f"{FAR_IP}:{PORT}")  # fmt: skip
    try:
        before = soft0_counters()["syn_steered"]
        assert ask(OFF.tgt_ip) == b"far:hello"
        assert soft0_counters()["syn_steered"] == before, "a DNAT'ed SYN was steered to the offload listener"
    finally:
        sh(*nft, "delete", "table", "ip", "cxe_dnat")
    # the rule gone, the portal is offloaded again
    c = login(OFF.tgt_ip)
    try:
        assert f"{OFF.ini_ip}:{c.sock.getsockname()[1]}" in offloaded_peers()
    finally:
        c.close()


def login(ip: str, params: Params | None = None) -> Connection:
    c = Connection(ip, PORT)
    c.login(PDU_INITIATOR, IQN, params)
    return c


def roundtrip(c: Connection, lba: int) -> None:
    data = os.urandom(4096)
    c.scsi_write(lba, data)
    assert c.scsi_read(lba, len(data) // 512) == data


def checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def raw_syn(src: tuple[str, int], dst: tuple[str, int]) -> None:
    """Send one bare SYN from src to dst through a raw socket (the kernel adds the IP header)."""
    seq = random.getrandbits(32)
    hdr = struct.pack("!HHIIBBHHH", src[1], dst[1], seq, 0, 5 << 4, 0x02, 64240, 0, 0)
    pseudo = socket.inet_aton(src[0]) + socket.inet_aton(dst[0]) + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(hdr))
    hdr = hdr[:16] + struct.pack("!H", checksum(pseudo + hdr)) + hdr[18:]
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP) as s:
        s.sendto(hdr, (dst[0], 0))


def test_syn_on_a_live_tuple_goes_to_its_connection(target: None) -> None:
    """A SYN for the 4-tuple of a live offloaded connection is the connection's (RFC 5961
    challenge ACK), never a new connection on the listener; the live session goes on."""
    live = login(OFF.tgt_ip)
    try:
        roundtrip(live, 0)
        src = live.sock.getsockname()
        before = soft0_counters()
        conns = offloaded_peers()
        for _ in range(3):
            raw_syn(src, (OFF.tgt_ip, PORT))
        time.sleep(2)
        after = soft0_counters()
        assert after["syn_steered"] == before["syn_steered"], "a SYN on a live tuple was steered to the listener"
        assert after["connections"] == before["connections"]
        assert offloaded_peers() == conns
        roundtrip(live, 8)
    finally:
        live.close()


def test_client_reusing_a_live_source_port(target: None) -> None:
    """A client that binds the live session's source port with SO_REUSEADDR
    (and SO_REUSEPORT) and connects to the same portal: whatever the
    initiator host's stack lets it do (refuse the bind or the connect), the
    target takes no new connection on that tuple and the live session goes on."""
    live = login(OFF.tgt_ip)
    try:
        roundtrip(live, 40)
        src = live.sock.getsockname()
        before = soft0_counters()
        intruder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        intruder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        intruder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        intruder.settimeout(5)
        try:
            intruder.bind(src)
            intruder.connect((OFF.tgt_ip, PORT))
            outcome = "connected"
        except OSError as e:
            outcome = errno.errorcode.get(e.errno or 0, str(e))
        finally:
            intruder.close()
        print(f"a second socket on {src[0]}:{src[1]} -> {OFF.tgt_ip}:{PORT}: {outcome}")
        time.sleep(1)
        after = soft0_counters()
        assert after["connections"] == before["connections"], f"a connection was taken on a live tuple ({outcome})"
        roundtrip(live, 48)
    finally:
        live.close()


def test_urgent_data_ends_the_connection(target: None) -> None:
    """One urgent byte, before or after login: that connection is dropped (stock skips the byte;
    iSCSI never sends one), the portal thread does not spin, and a neighbour session goes on."""
    neighbour = login(OFF.tgt_ip)
    try:
        pre = socket.create_connection((OFF.tgt_ip, PORT), timeout=10)
        pre.send(b"U", socket.MSG_OOB)
        post = login(OFF.tgt_ip)
        roundtrip(post, 16)
        post.sock.send(b"U", socket.MSG_OOB)
        assert post.closed_by_peer(timeout=10), "urgent byte after login: the connection stayed open"
        assert closed_by_peer(pre), "urgent byte before login: the connection stayed open"
        pre.close()
        post.close()
        roundtrip(neighbour, 24)
        # a fresh login on the same portal works (its thread is not stuck)
        again = login(OFF.tgt_ip)
        roundtrip(again, 32)
        again.close()
    finally:
        neighbour.close()


@pytest.mark.parametrize("path", ["stock", "offload"])
def test_zero_length_data_out_is_ignored(target: None, path: str) -> None:
    """An R2T answered by an empty Data-Out, then by its data: GOOD status, data read back."""
    c = login(OFF.tgt_ip if path == "offload" else STOCK.tgt_ip, Params(immediate_data=False, initial_r2t=True))
    try:
        data = os.urandom(8192)
        itt = c.next_itt()
        cdb = struct.pack(">BBIBHB", 0x2A, 0, 40, 0, len(data) // 512, 0)
        c.send(scsi_command(cdb, itt=itt, cmdsn=c._next_cmdsn(), expstatsn=c.expstatsn, write_len=len(data)))
        r2t = c.recv()
        assert r2t.opcode == Op.R2T and r2t.itt == itt, f"expected an R2T, got {r2t.opcode!r}"
        c.send(data_out(itt=itt, ttt=r2t.ttt, expstatsn=c.expstatsn, datasn=0, offset=r2t.buffer_offset,
                        data=b"", final=False))  # fmt: skip
        c._send_data(itt, r2t.ttt, 0, data, r2t.buffer_offset, r2t.buffer_offset + r2t.desired_length)
        rsp = c.recv()
        assert rsp.opcode == Op.SCSI_RSP and rsp.itt == itt, f"expected status, got {rsp.opcode!r}"
        c._check_status(rsp)
        assert c.scsi_read(40, len(data) // 512) == data
        assert r2t.ttt != RSVD_TAG
    finally:
        c.close()


@contextmanager
def cookies_forced() -> Iterator[None]:
    """SYN cookies sent for every SYN in the target's namespace (tcp_syncookies=2) while it lasts."""
    key = "net.ipv4.tcp_syncookies"
    ns = ("ip", "netns", "exec", topo.TGT_NS)
    old = topo.sh(*ns, "sysctl", "-n", key).stdout.strip()
    sh(*ns, "sysctl", "-qw", f"{key}=2")
    try:
        yield
    finally:
        sh(*ns, "sysctl", "-qw", f"{key}={old}")


def test_syn_cookies_still_offloaded(target: None) -> None:
    """With SYN cookies forced on the target host, a login over tgt0 is still offloaded (the ACK
    that completes a cookie handshake is checked by the offload listener, which sent the cookie)."""
    with cookies_forced():
        c = login(OFF.tgt_ip)
        try:
            assert f"{OFF.ini_ip}:{c.sock.getsockname()[1]}" in offloaded_peers(), "a cookie login went stock"
            roundtrip(c, 48)
        finally:
            c.close()


def test_dropped_syn_ack_still_connects(target: None) -> None:
    """The target's first SYN-ACKs are lost on the way (dropped where the initiator receives
    them): the initiator's retransmitted SYN reaches the request socket, not the listener a
    second time, and the login is offloaded."""
    nft = ("nft",)  # in the initiator's namespace: the target's send succeeds, as on a lossy wire
    sh(*nft, "add", "table", "ip", "cxe_drop")
    sh(*nft, "add chain ip cxe_drop in { type filter hook prerouting priority -300; }")
    sh(*nft, f"add rule ip cxe_drop in tcp sport {PORT} tcp flags & (syn | ack) == (syn | ack) drop")
    lift = threading.Timer(1.5, lambda: sh(*nft, "delete", "table", "ip", "cxe_drop"))
    before = soft0_counters()["syn_steered"]
    lift.start()
    try:
        c = login(OFF.tgt_ip)
    finally:
        lift.join()
    try:
        assert f"{OFF.ini_ip}:{c.sock.getsockname()[1]}" in offloaded_peers()
        roundtrip(c, 56)
        assert soft0_counters()["syn_steered"] == before + 1, "a retransmitted SYN was steered again"
    finally:
        c.close()


def in_segs() -> int:
    """TCP segments the target's namespace has received (its /proc/net/snmp InSegs)."""
    snmp = topo.sh("ip", "netns", "exec", topo.TGT_NS, "cat", "/proc/net/snmp").stdout
    rows = [ln.split() for ln in snmp.splitlines() if ln.startswith("Tcp:")]
    return int(rows[1][rows[0].index("InSegs")])


TRACING = Path("/sys/kernel/tracing")


@contextmanager
def traced(event: str) -> Iterator[Callable[[], int]]:
    """Count a tracepoint's events (e.g. fib/fib_table_lookup) in the trace buffer."""
    if not (TRACING / "trace").exists():
        topo.sh("mount", "-t", "tracefs", "tracefs", str(TRACING))
    (TRACING / "trace").write_text("\n")  # clear it
    enable = TRACING / "events" / event / "enable"
    enable.write_text("1\n")

    def count() -> int:
        name = event.split("/")[1] + ":"
        return sum(name in ln for ln in (TRACING / "trace").read_text().splitlines() if not ln.startswith("#"))

    try:
        yield count
    finally:
        enable.write_text("0\n")


def test_established_traffic_costs_no_route_lookup_while_cookies_may_be_out(target: None) -> None:
    """While the offloaded listener may have sent SYN cookies (forced here; the kernel also
    says so for two minutes after a SYN queue overflow, and in a host's first minutes of
    uptime), the hook checks each ACK for one completing a cookie handshake. A packet of a
    live connection is answered by its socket lookup alone: no route lookup (is the address
    local?) per packet of every offloaded session."""
    with cookies_forced():
        c = login(OFF.tgt_ip)
        try:
            assert f"{OFF.ini_ip}:{c.sock.getsockname()[1]}" in offloaded_peers()
            data = os.urandom(256 * 1024)
            c.scsi_write(0, data)  # warm: routes cached on both sides
            with traced("fib/fib_table_lookup") as lookups:
                segs, before = in_segs(), lookups()
                for i in range(8):
                    c.scsi_write(i * 512, data)
                segs, looked = in_segs() - segs, lookups() - before
            assert c.scsi_read(7 * 512, len(data) // 512) == data
        finally:
            c.close()
    # the veth pair carries GSO packets of up to 64 KiB: each counts one segment here
    assert segs >= 32, f"only {segs} segments received for 2 MiB written ({looked} route lookups)"
    assert looked < segs // 8, f"{looked} route lookups for {segs} segments received on a live session"
