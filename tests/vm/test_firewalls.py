"""Offload holds on a target host with a firewall, and says so truthfully.

Most production hosts run a firewall: iptables (nft-based) with a NAT
table, nftables with conntrack and a default drop, a container bridge with
MASQUERADE, strict reverse-path filtering. Under each, loaded in the
target's namespace while the logins happen, an IPv4 and an IPv6 login to
an offloaded dual-stack portal ([::]:3260) are offloaded (the connections
file lists them, soft0 counts them), carry a write read back, and
portal_state, which the admin tools read, says offloaded: what it claims
and where the logins land agree.

The rest of the host still sees its firewall at work while the portal is
offloaded: a TCP service of the target host beside the portal answers
where the rules let it in and is dropped where they do not; the NAT
table's DNAT still carries its own port; and an offloaded portal the
filter does not let in is dropped for logins too (steering hands a SYN
to a listener in PRE_ROUTING, before the filter's input hook, which still
decides).

A NAT table is the case that bites: its LOCAL_IN hook drops the socket a
SYN was assigned to unless the NAT left the tuple as a lookup would find
it; for a listener (remote port 0) that test never holds, so on 6.12 every
steered SYN went to LIO's stock listener while portal_state said
offloaded. Each configuration has an unrelated DNAT or filter rule only:
none of them touches the portal's traffic.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator.session import Connection
from testbed import topo

from .conftest import CFS, PDU_INITIATOR, offloaded_line, offloaded_target, soft0_counters

OFF = topo.LINKS[0]
IQN = "iqn.2026-11.org.cxgbit-ext:firewalls"
PORT = 3260
V6_INI, V6_TGT = "2001:2::2", "2001:2::1"
BRIDGE, BRIDGE_NET = "cxedock0", "198.19.200"
# offloaded too, and not let in by the stateful filter
FILTERED_PORT = 3262
# a TCP service of the target host's beside the portals, on every address
SERVICE_PORT, BANNER = 9000, b"cxe-neighbour\n"
# the NAT table's DNAT: the address and port it rewrites, per family, to
# the target host's own address and NAT_PORT, where the service listens too
NAT_PORT = 9999
NAT = {"ipv4": ("198.18.9.9", "198.18.9.10"), "ipv6": ("2001:2::99", "2001:2::98")}


def tgt(*cmd: str) -> None:
    topo.sh("ip", "netns", "exec", topo.TGT_NS, *cmd)


def tgt_quiet(*cmd: str) -> None:
    topo.sh("ip", "netns", "exec", topo.TGT_NS, *cmd, check=False)


@contextmanager
def iptables_nat() -> Iterator[None]:
    """Debian's iptables (nft-based): a NAT table per family with one DNAT
    rule for an address and port nobody uses here."""
    (v4, to4), (v6, to6) = NAT["ipv4"], NAT["ipv6"]
    tgt("iptables", "-t", "nat", "-A", "PREROUTING", "-d", v4, "-p", "tcp", "--dport", str(NAT_PORT),
        "-j", "DNAT", "--to-destination", f"{to4}:{NAT_PORT}")  # fmt: skip
    tgt("ip6tables", "-t", "nat", "-A", "PREROUTING", "-d", v6, "-p", "tcp", "--dport", str(NAT_PORT),
        "-j", "DNAT", "--to-destination", f"[{to6}]:{NAT_PORT}")  # fmt: skip
    try:
        yield
    finally:
        tgt_quiet("iptables", "-t", "nat", "-F")
        tgt_quiet("ip6tables", "-t", "nat", "-F")
        tgt_quiet("nft", "delete", "table", "ip", "nat")
        tgt_quiet("nft", "delete", "table", "ip6", "nat")


NFT_FILTER = f"""
table inet cxe_fw {{
    chain input {{
        type filter hook input priority filter; policy drop;
        ct state established,related accept
        ct state invalid drop
        iif lo accept
        meta l4proto {{ icmp, ipv6-icmp }} accept
        tcp dport {PORT} ct state new accept
    }}
}}
"""


@contextmanager
def nft_stateful_filter() -> Iterator[None]:
    """An nftables inet filter: conntrack, default drop, the portal let in."""
    subprocess.run(["ip", "netns", "exec", topo.TGT_NS, "nft", "-f", "-"], input=NFT_FILTER, text=True, check=True)
    try:
        yield
    finally:
        tgt_quiet("nft", "delete", "table", "inet", "cxe_fw")


@contextmanager
def container_bridge() -> Iterator[None]:
    """What Docker sets up: a bridge for containers, MASQUERADE of their
    traffic out, a DOCKER chain of port maps jumped to for local addresses."""
    tgt("ip", "link", "add", BRIDGE, "type", "bridge")
    tgt("ip", "addr", "add", f"{BRIDGE_NET}.1/24", "dev", BRIDGE)
    tgt("ip", "link", "set", BRIDGE, "up")
    tgt("sysctl", "-qw", "net.ipv4.ip_forward=1")
    tgt("iptables", "-t", "nat", "-N", "DOCKER")
    tgt("iptables", "-t", "nat", "-A", "PREROUTING", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "DOCKER")
    tgt("iptables", "-t", "nat", "-A", "POSTROUTING", "-s", f"{BRIDGE_NET}.0/24", "!", "-o", BRIDGE,
        "-j", "MASQUERADE")  # fmt: skip
    tgt("iptables", "-t", "nat", "-A", "DOCKER", "-p", "tcp", "--dport", "8080", "-j", "DNAT",
        "--to-destination", f"{BRIDGE_NET}.2:80")  # fmt: skip
    tgt("iptables", "-A", "FORWARD", "-o", BRIDGE, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED",
        "-j", "ACCEPT")  # fmt: skip
    try:
        yield
    finally:
        tgt_quiet("iptables", "-t", "nat", "-F")
        tgt_quiet("iptables", "-t", "nat", "-X", "DOCKER")
        tgt_quiet("iptables", "-F", "FORWARD")
        tgt_quiet("nft", "delete", "table", "ip", "nat")
        tgt_quiet("nft", "delete", "table", "ip", "filter")
        tgt_quiet("sysctl", "-qw", "net.ipv4.ip_forward=0")
        tgt_quiet("ip", "link", "del", BRIDGE)


@contextmanager
def strict_rp_filter() -> Iterator[None]:
    """Strict reverse-path filtering on every interface (RFC 3704)."""
    for dev in ("all", "default", OFF.tgt_dev):
        tgt("sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=1")
    try:
        yield
    finally:
        for dev in ("all", "default", OFF.tgt_dev):
            tgt_quiet("sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0")


FIREWALLS: dict[str, Callable[[], AbstractContextManager[None]]] = {
    "iptables-nat": iptables_nat,
    "nft-stateful-filter": nft_stateful_filter,
    "container-bridge": container_bridge,
    "strict-rp-filter": strict_rp_filter,
}


@contextmanager
def neighbour_service() -> Iterator[None]:
    """The target host's own TCP service on [::] (both families), on
    SERVICE_PORT and NAT_PORT: each connection gets BANNER."""
    with topo.in_netns():
        socks = []
        for port in (SERVICE_PORT, NAT_PORT):
            s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind(("::", port))
            s.listen(8)
            socks.append(s)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            ready, _, _ = select.select(socks, [], [], 0.2)
            for s in ready:
                c, _ = s.accept()
                with c:
                    c.sendall(BANNER)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join()
        for s in socks:
            s.close()


def answers(host: str, port: int) -> bool:
    """Whether a TCP connection to host:port is answered by the service's
    banner; False when the firewall drops it (no answer in 3 s)."""
    try:
        with socket.create_connection((host, port), timeout=3) as c:
            return c.recv(len(BANNER)) == BANNER
    except TimeoutError:
        return False


@pytest.fixture(scope="module")
def target(iscsid: None, module_ko: Path) -> Iterator[None]:
    (v4, to4), (v6, to6) = NAT["ipv4"], NAT["ipv6"]
    topo.sh("ip", "-6", "addr", "add", f"{V6_INI}/64", "dev", OFF.ini_dev, "nodad")
    topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "add", f"{V6_TGT}/64", "dev", OFF.tgt_dev, "nodad")
    # the DNAT's addresses: its target the host's own, its match routed there
    topo.sh("ip", "-n", topo.TGT_NS, "addr", "add", f"{to4}/32", "dev", "lo")
    topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "add", f"{to6}/128", "dev", "lo", "nodad")
    topo.sh("ip", "route", "add", f"{v4}/32", "via", OFF.tgt_ip, "dev", OFF.ini_dev)
    topo.sh("ip", "-6", "route", "add", f"{v6}/128", "via", V6_TGT, "dev", OFF.ini_dev)
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=(("[::]", PORT), ("[::]", FILTERED_PORT)), offload=True,
                          name_prefix="fw")  # fmt: skip
    try:
        topo.sh("ping", "-6", "-c1", "-W5", "-I", OFF.ini_dev, V6_TGT)
        with offloaded_target(module_ko, t), neighbour_service():
            yield
    finally:
        topo.sh("ip", "route", "del", f"{v4}/32", check=False)
        topo.sh("ip", "-6", "route", "del", f"{v6}/128", check=False)
        topo.sh("ip", "-n", topo.TGT_NS, "addr", "del", f"{to4}/32", "dev", "lo", check=False)
        topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "del", f"{to6}/128", "dev", "lo", check=False)
        topo.sh("ip", "-6", "addr", "del", f"{V6_INI}/64", "dev", OFF.ini_dev, check=False)
        topo.sh("ip", "-n", topo.TGT_NS, "-6", "addr", "del", f"{V6_TGT}/64", "dev", OFF.tgt_dev, check=False)


def claimed() -> str:
    """What portal_state says of the portal."""
    (line,) = [ln for ln in (CFS / "portal_state").read_text().splitlines() if ln.startswith(f"[::]:{PORT} ")]
    return line


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
@pytest.mark.parametrize("firewall", list(FIREWALLS))
def test_logins_are_offloaded_under_the_firewall(target: None, firewall: str, family: str) -> None:
    host = OFF.tgt_ip if family == "ipv4" else V6_TGT
    with FIREWALLS[firewall]():
        state = claimed()
        assert f" on {OFF.tgt_dev}=soft0" in state or " *=soft0" in state, state
        steered = soft0_counters()["syn_steered"]
        conns = soft0_counters()["connections"]
        c = Connection(host, PORT)
        c.login(PDU_INITIATOR, IQN)
        try:
            data = os.urandom(8192)
            c.scsi_write(8, data)
            assert c.scsi_read(8, len(data) // 512) == data
            assert offloaded_line(c) is not None, (
                f"{firewall}: a login to {host} went to stock TCP while portal_state says {state!r}"
                f" (syn_steered {steered} -> {soft0_counters()['syn_steered']})"
            )
            assert soft0_counters()["connections"] == conns + 1
        finally:
            c.close()
        neighbours_see_the_firewall(firewall, family, host)


def neighbours_see_the_firewall(firewall: str, family: str, host: str) -> None:
    """With the offloaded portal serving, the rest of the host's traffic is
    still what the rules make it."""
    filtered = firewall == "nft-stateful-filter"
    assert answers(host, SERVICE_PORT) is not filtered, f"{firewall}: the host's service on port {SERVICE_PORT} " + (
        "answers through a default drop" if filtered else "does not answer"
    )
    if firewall == "iptables-nat":
        match, to = NAT[family]
        assert answers(match, NAT_PORT), f"{firewall}: the DNAT of {match}:{NAT_PORT} to {to} no longer carries"
    if filtered:
        conns = soft0_counters()["connections"]
        with pytest.raises(TimeoutError):
            Connection(host, FILTERED_PORT, timeout=3).login(PDU_INITIATOR, IQN)
        assert soft0_counters()["connections"] == conns, "an offloaded login passed the filter's drop"
