"""The cxgb4 stand-in (tests/kmod/cxgb4sim) in the VM suite: loading it,
wiring its ports, reading what it carried, and a suite's offloaded path
through it.

The stand-in presents a T5 or T6 whose ports are netdevs c4sim0..,
each wired to a peer netdev c4peer0... The chip's ports must live in the
initial network namespace: libcxgb looks the route toward a peer up there
(cxgb_find_route), for mainline cxgbit and for ours alike. The peers stay
in that namespace too, in a VRF, so that the initiators that can only live
there (open-iscsi's kernel initiator) reach a port over the wire: see
``wire_routed``.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cxgbit_ext import topology
from cxgbit_ext.topology import Topology
from iscsi_initiator import iscsiadm
from testbed import topo
from testbed.kmod import CXGB4_BACKEND

from .conftest import TOP, offloaded_target
from .shares import MINE, SERIES, owner, runs_here

DEBUGFS = Path("/sys/kernel/debug/cxgb4sim")
TRACE, ERRORS, STATS, FL_PAGES, STATE, HOLD_CLOSE = (
    DEBUGFS / f for f in ("trace", "errors", "stats", "fl_pages", "state", "hold_close")
)
# the adapter's PCI name, as the backends file and the counters name it
ADAPTER = "0000:c4:00.4"
# port 0 and its peer: the suites' offloaded path
LINK = topo.Link("c4peer0", "c4sim0", "198.18.40.2", "198.18.40.1")
VRF, VRF_TABLE = "c4vrf", "40"
# the rule that sends this host's own traffic for the port over the wire
WIRE_RULE_PREF = "500"


# make test deals the suites' runs through the stand-in over kernels.conf's
# series, each with a chip of its own: the PDU suite and fuzz on the
# second series, libiscsi on the first (SUITE_SHARE, LIBISCSI_SHARE);
# --cxgb4-sim CHIP runs them here through that chip, --every-share through
# this series' chip; make cxgb4-test runs every kernel with each chip.
CHIPS = ("t5", "t6")
SUITE_SHARE, LIBISCSI_SHARE = 1, 0


def chip_here(config: pytest.Config) -> str:
    """The chip the stand-in presents to this kernel's suites."""
    chip: str | None = config.getoption("--cxgb4-sim")
    return chip or (CHIPS[SERIES.index(MINE) % len(CHIPS)] if MINE in SERIES else "t6")


def chip_runs_here(config: pytest.Config, chip: str) -> None:
    """Skip a test of the stand-in's ``chip`` unless it is this kernel's:
    make test runs each chip's cases on one kernel; --every-share runs
    both chips here, --cxgb4-sim CHIP (make cxgb4-test: each chip on every
    kernel) that one."""
    every = config.getoption("--every-share") and not config.getoption("--cxgb4-sim")
    if every or chip == chip_here(config):
        return
    pytest.skip(f"the stand-in's {chip}: this kernel's chip is {chip_here(config)} (--every-share runs it here)")


def cxgb4_test_only(config: pytest.Config, what: str) -> None:
    """Skip ``what`` unless --cxgb4-sim (make cxgb4-test) or --every-share
    asks for it: runs through the stand-in that make test leaves to make
    cxgb4-test (mainline cxgbit's, which check the stand-in; libiscsi and
    the fuzz through ours, whose PDU paths make test's PDU suite and
    soft0 runs cover)."""
    if config.getoption("--cxgb4-sim") or config.getoption("--every-share"):
        return
    pytest.skip(f"{what} through the cxgb4 stand-in: make cxgb4-test runs it")


def skip_unless_here(config: pytest.Config, what: str, share: int) -> None:
    """Skip the run through the stand-in of what unless it is this kernel's."""
    if config.getoption("--cxgb4-sim") or runs_here(what, config.getoption("--every-share"), share):
        return
    pytest.skip(
        f"{what} through the cxgb4 stand-in: dealt to the {owner(what, share)} kernel (--cxgb4-sim runs it here)"
    )


def sh(*cmd: str) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}: {p.stderr or p.stdout}"
    return p.stdout


def loaded(mod: str) -> bool:
    return Path(f"/sys/module/{mod}").exists()


def rmmod(mod: str) -> None:
    if loaded(mod):
        sh("rmmod", mod)


def trace() -> list[str]:
    return TRACE.read_text().splitlines()


def stats() -> dict[str, int]:
    return {k: int(v) for k, v in (ln.split() for ln in STATS.read_text().splitlines())}


def set_state(word: str) -> None:
    """Drive the adapter through what cxgb4 does to it (the stand-in's
    state file): recovery, down, up, detach, attach."""
    STATE.write_text(word + "\n")
    assert STATE.read_text().strip() == {"attach": "up", "detach": "detached"}.get(word, word), STATE.read_text()


def chip_errors() -> list[str]:
    count, *lines = ERRORS.read_text().splitlines()
    return [f"{count} errors", *lines] if int(count) else []


@contextmanager
def stand_in(kver: str, chip: str = "t6") -> Iterator[None]:
    """cxgb4sim presenting ``chip`` and libcxgb loaded (cxgb4 not), port 0
    up at LINK.tgt_ip; every ULD and the stand-in unloaded after."""
    for mod in (CXGB4_BACKEND, "cxgbit_ext", "cxgbit", "libcxgb", "cxgb4"):
        rmmod(mod)
    ko = TOP / "build" / kver / "cxgb4sim/cxgb4sim.ko"
    assert ko.exists(), f"{ko} missing: make modules"
    sh("modprobe", "libcrc32c")  # the chip model's digests
    sh("insmod", str(ko), f"chip={chip}")
    try:
        # libcxgb imports nothing of cxgb4; cxgbit and ours import both
        sh("modprobe", "libcxgb")
        assert not loaded("cxgb4")
        sh("ip", "link", "set", LINK.tgt_dev, "up")
        sh("ip", "addr", "add", f"{LINK.tgt_ip}/24", "dev", LINK.tgt_dev)
        yield
    finally:
        for mod in (CXGB4_BACKEND, "cxgbit_ext", "cxgbit", "libcxgb", "cxgb4sim"):
            rmmod(mod)


@contextmanager
def peer_vrf() -> Iterator[None]:
    """Port 0's peer at LINK.ini_ip in VRF c4vrf of this namespace. A
    socket bound into the VRF reaches LINK.tgt_ip over the wire once the
    local table's rule comes after the VRF's (else the address is local to
    it); everything is put back after."""
    sh("modprobe", "vrf")
    sh("ip", "link", "add", VRF, "type", "vrf", "table", VRF_TABLE)
    try:
        sh("ip", "rule", "add", "pref", "32765", "table", "local")
        sh("ip", "rule", "del", "pref", "0", "table", "local")
        sh("ip", "link", "set", VRF, "up")
        sh("ip", "link", "set", LINK.ini_dev, "master", VRF, "up")
        sh("ip", "addr", "add", f"{LINK.ini_ip}/24", "dev", LINK.ini_dev)
        route = sh("ip", "-o", "route", "get", LINK.tgt_ip, "vrf", VRF)
        assert route.startswith(f"{LINK.tgt_ip} dev {LINK.ini_dev}"), f"not over the wire: {route}"
        sh("ping", "-c1", "-W5", "-I", VRF, LINK.tgt_ip)
        yield
    finally:
        subprocess.run(["ip", "link", "del", VRF], capture_output=True)
        subprocess.run(["ip", "rule", "add", "pref", "0", "table", "local"], capture_output=True)
        subprocess.run(["ip", "rule", "del", "pref", "32765", "table", "local"], capture_output=True)


@contextmanager
def wire_routed() -> Iterator[None]:
    """Every socket of this host that connects to LINK.tgt_ip, bound or
    not (open-iscsi's, libiscsi's, the PDU initiator's), goes over the wire
    from the peer: a rule sends what this host sends to that address
    (iif lo) through the VRF's table, and TCP takes the answers that come
    in through the VRF for sockets bound to no device
    (net.ipv4.tcp_l3mdev_accept). Needs peer_vrf()."""
    accept = Path("/proc/sys/net/ipv4/tcp_l3mdev_accept")
    was = accept.read_text().strip()
    rule = ("pref", WIRE_RULE_PREF, "to", LINK.tgt_ip, "iif", "lo", "table", VRF_TABLE)
    sh("ip", "rule", "add", *rule)
    try:
        accept.write_text("1\n")
        route = sh("ip", "-o", "route", "get", LINK.tgt_ip)
        assert f" dev {LINK.ini_dev} " in route, f"not over the wire: {route}"
        yield
    finally:
        accept.write_text(was + "\n")
        subprocess.run(["ip", "rule", "del", *rule], capture_output=True)


def intree_cxgbit(kver: str) -> Path:
    """Debian's own cxgbit.ko of kver: mainline's, the oracle."""
    (ko,) = Path(f"/lib/modules/{kver}/kernel/drivers/target/iscsi/cxgbit").glob("cxgbit.ko*")
    return ko


@contextmanager
def mainline_target(kver: str, topo_: Topology) -> Iterator[None]:
    """LIO with Debian's cxgbit.ko on the stand-in, and the target of topo_
    made in netns tgt with stock portals (mainline cxgbit does no TCP of
    its own: a portal switched to it takes connections through the chip
    only); everything removed after, cxgbit unloaded."""
    sh("modprobe", "iscsi_target_mod")
    sh("insmod", str(intree_cxgbit(kver)))
    created = False
    try:
        with topo.in_netns():
            topology.create(dataclasses.replace(topo_, offload=False))
        created = True
        yield
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()
        if created:
            topology.delete(topo_.iqn)
        rmmod("cxgbit")


@contextmanager
def suite_target(ko: Path, topo_: Topology, kver: str, chip: str, uld: str = "cxgbit_ext") -> Iterator[None]:
    """A suite's target with an offloaded path through the stand-in
    presenting chip: for uld "cxgbit_ext", our cxgb4 backend on its shipped
    glue (cxgb4_hw=1) beside the target's own portals (offloaded_target:
    made in netns tgt, soft0's and stock); for "cxgbit", mainline's
    (mainline_target). The path is a portal on LINK.tgt_ip of this
    namespace switched to the ULD, which every initiator of this host
    reaches over the wire (wire_routed). After: the chip refused nothing,
    and once the ULD is gone it holds no free-list page."""
    from rtslib_fb import TPG, FabricModule, NetworkPortal, Target

    if uld == "cxgbit_ext":
        target = offloaded_target(ko, topo_, backend_params=("cxgb4_hw=1",), provided=("cxgb4",))
    else:
        target = mainline_target(kver, topo_)
    with stand_in(kver, chip), peer_vrf(), wire_routed():
        with target:
            opened = len(trace())
            tpg = TPG(Target(FabricModule("iscsi"), topo_.iqn, mode="lookup"), 1, mode="lookup")
            NetworkPortal(tpg, LINK.tgt_ip, 3260).offload = True
            servers = [ln for ln in trace()[opened:] if ln.startswith("tx ctrl CPL_PASS_OPEN_REQ")]
            assert len(servers) == 1 and f"ip={LINK.tgt_ip} " in servers[0], f"{uld} listens with {servers}"
            yield
            assert not chip_errors(), f"{uld}: the stand-in refused:\n" + "\n".join(chip_errors())
        assert FL_PAGES.read_text().strip() == "0", f"free-list pages {uld} kept after unloading"
