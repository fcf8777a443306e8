"""The testbed's hosts and LIO helpers, used inside the guest.

Hosts: open-iscsi's kernel initiator talks to iscsid over NETLINK_ISCSI,
which the kernel creates in the initial network namespace only
(scsi_transport_iscsi.c: netlink_kernel_create(&init_net, ...)), so iscsid,
iscsiadm and fio must live there. The target host is therefore the network
namespace ``tgt``: LIO's portal sockets belong to the namespace of the
process that creates the portal (sock_create() in iscsit_setup_np), so the
helpers below create portals from inside ``tgt``. Two veth pairs join the
hosts (MTU 9000), addressed from the RFC 2544 benchmarking range:

    init ns (initiator)            netns tgt (target)
    ini0 198.18.0.2/24  <------->  tgt0 198.18.0.1/24
    ini1 198.18.1.2/24  <------->  tgt1 198.18.1.1/24
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TGT_NS = "tgt"
MTU = 9000
CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class Link:
    """One veth pair between the initiator host and the target host."""

    ini_dev: str
    tgt_dev: str
    ini_ip: str
    tgt_ip: str


LINKS = (
    Link("ini0", "tgt0", "198.18.0.2", "198.18.0.1"),
    Link("ini1", "tgt1", "198.18.1.2", "198.18.1.1"),
)


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command, capture its output, raise with stderr on failure."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def setup_network() -> None:
    """Create the target namespace and the veth pairs (idempotent)."""
    if Path(f"/run/netns/{TGT_NS}").exists():
        return
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "netns", "add", TGT_NS)
    sh("ip", "-n", TGT_NS, "link", "set", "lo", "up")
    for ln in LINKS:
        sh("ip", "link", "add", ln.ini_dev, "mtu", str(MTU), "type", "veth",
           "peer", "name", ln.tgt_dev, "mtu", str(MTU), "netns", TGT_NS)  # fmt: skip
        sh("ip", "addr", "add", f"{ln.ini_ip}/24", "dev", ln.ini_dev)
        sh("ip", "link", "set", ln.ini_dev, "up")
        sh("ip", "-n", TGT_NS, "addr", "add", f"{ln.tgt_ip}/24", "dev", ln.tgt_dev)
        sh("ip", "-n", TGT_NS, "link", "set", ln.tgt_dev, "up")
    for ln in LINKS:
        sh("ping", "-c1", "-W5", "-I", ln.ini_dev, ln.tgt_ip)


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextmanager
def in_netns(name: str = TGT_NS) -> Iterator[None]:
    """Run the body with this thread in network namespace ``name``.

    Sockets created inside (LIO portals created through configfs, for one)
    belong to that namespace and stay there after the block ends.
    """
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


def link_bytes(dev: str) -> tuple[int, int]:
    """(rx_bytes, tx_bytes) of a netdev in this namespace."""
    base = Path(f"/sys/class/net/{dev}/statistics")
    return int((base / "rx_bytes").read_text()), int((base / "tx_bytes").read_text())
