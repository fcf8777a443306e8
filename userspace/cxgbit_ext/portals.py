"""Is a LIO portal really offloaded, and if not, why not.

LIO's own switch (the np ``cxgbit`` attribute, rtslib ``NetworkPortal.offload``,
targetcli ``enable_offload``) only says that offload was asked for. Whether a
login to the portal is served by an adapter is the module's to say: for each
portal it holds, its portal_state file tells which adapters take the logins
and on which netdevs, or why none does, by the rule its SYN steering follows.
This module presents that, and says itself only what the module cannot know:
that the switch is off, or that the module is not loaded.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cxgbit_ext.control import Adapter, Control, CxgbitExtError, PortalReport


@dataclass(frozen=True)
class PortalState:
    ip: str
    port: int
    requested: bool  # the np cxgbit switch is on
    offloaded: bool
    adapters: tuple[str, ...] = ()
    caps: tuple[str, ...] = ()  # what a login gets from at least one serving adapter
    netdevs: str = ""  # which netdevs get offload (for a wildcard portal)
    reason: str = ""  # why not offloaded

    def summary(self) -> str:
        """One line, as targetcli's ls shows it."""
        if self.offloaded:
            where = f" on {self.netdevs}" if self.netdevs else ""
            return f"offload: {'+'.join(self.adapters)} {'+'.join(self.caps)}{where}".rstrip()
        return f"offload: off — {self.reason}"


# writes of 0 that clear a switch written on several times over
MAX_OFFLOAD_CHILDREN = 64

# /proc/net/tcp{,6} states of a connection that is, or is becoming, one a
# listener hands out (TCP_NEW_SYN_RECV shows as SYN_RECV)
_TCP_ESTABLISHED, _TCP_SYN_RECV = 0x01, 0x03
# LIO's default login_timeout: the longest a login may hold its connection
LOGIN_TIMEOUT_S = 15.0
# after an enable: how long logins under way may take to settle
SETTLE_S = 2.0

Addr = tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]


def set_offload(np: Any, on: bool) -> None:
    """Turn LIO's offload switch of rtslib NetworkPortal ``np`` on or off.

    LIO adds an offload child portal for every write of 1, even when one is
    there, and removes one per write of 0; the switch reads 1 while any is
    left. So 1 is written only when the switch is off, and 0 until it reads
    off (clearing what repeated writes, by another tool or a script, left).
    """
    if on:
        if not np.offload:
            np.offload = True
        return
    for _ in range(MAX_OFFLOAD_CHILDREN):
        if not np.offload:
            return
        np.offload = False
    raise CxgbitExtError(f"{np.ip_address}:{np.port}: offload still on after {MAX_OFFLOAD_CHILDREN} writes of 0")


def state(ctl: Control, ip: str, port: int, requested: bool) -> PortalState:
    """The offload state of portal ``ip:port`` whose np switch is ``requested``."""

    def off(reason: str) -> PortalState:
        return PortalState(ip, port, requested, offloaded=False, reason=reason)

    if not requested:
        return off("not enabled on this portal (enable_offload true)")
    if not ctl.loaded:
        return off("the cxgbit_ext module is not loaded (LIO could not load it: see dmesg; modprobe cxgbit_ext)")
    report = ctl.portal_report(ip, port)
    if report is None:
        return off("cxgbit_ext holds no listener for it (see dmesg)")
    adapters = ctl.adapters()
    if not report.on:
        return off(_why_not(ip, report, adapters))
    taking = {*report.netdevs.values(), *([report.rest] if report.rest else [])}
    serving = [a for a in adapters if a.name in taking]
    # in the module's order of adapters; one removed since the report has no caps to show
    names = [a.name for a in serving] + sorted(taking - {a.name for a in serving})
    # an offload toggled off on every adapter that serves the portal is not shown
    active = {c for a in serving for c in a.active}
    caps = tuple(c for c in dict.fromkeys(c for a in serving for c in a.caps) if c in active)
    return PortalState(ip, port, requested, offloaded=True, adapters=tuple(names), caps=caps, netdevs=_where(report))


def _where(report: PortalReport) -> str:
    """Which netdevs a wildcard portal is offloaded on ("" for a specific address)."""
    if report.rest is None:
        return ""
    return "every netdev" if report.rest else ", ".join(report.netdevs)


def _why_not(ip: str, report: PortalReport, adapters: list[Adapter]) -> str:
    served = "; ".join(f"{a.name} serves {a.serving}" for a in adapters if a.netdev)
    if report.why == "unbound":
        return "no adapter serves a netdev (cxgbit-ext bind soft0 <netdev>)"
    if report.why == "unserved" and report.netdev:
        return f"{ip} is on {report.netdev}, which no adapter serves ({served})"
    if report.why == "unserved":
        return f"no adapter serves a netdev of its network namespace ({served})"
    if report.why == "no_netdev":
        return f"{ip} is on no netdev of its network namespace"
    return f"cxgbit_ext reports it {report.why} {report.netdev}".rstrip()


def lio_portals(ctl: Control) -> list[tuple[str, str, PortalState]]:
    """(target iqn, tpg tag, state) of every iSCSI portal LIO has."""
    from rtslib_fb import FabricModule
    from rtslib_fb.utils import RTSLibError

    try:
        fabric = FabricModule("iscsi")
        targets = list(fabric.targets)
    except RTSLibError:
        return []
    out = []
    for t in targets:
        for tpg in t.tpgs:
            for np in tpg.network_portals:
                out.append((t.wwn, str(tpg.tag), state(ctl, np.ip_address, np.port, np.offload)))
    return out


ISCSI_PORT = 3260


def parse(text: str, default_port: int = ISCSI_PORT) -> tuple[str, int]:
    """A portal as an admin types it and LIO names it: ``IP``, ``IP:PORT``,
    an IPv6 address bare or in brackets, ``[IP6]:PORT``; (address, port).
    A bare IPv6 address has no port (its last group is not one); a link-local
    one may carry its zone (fe80::1%eth0, [fe80::1%3]:3260). ValueError saying
    what a portal looks like for anything else."""
    host, port = text, None
    bracketed = text.startswith("[")
    if bracketed:
        host, sep, rest = text[1:].partition("]")
        if not sep or rest[:1] not in ("", ":"):
            host = ""
        port = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port = text.split(":")
    zone = host.partition("%")[2]
    try:
        ip = ipaddress.ip_address(host)
        number = default_port if port is None else int(port) if port.isascii() and port.isdigit() else 0
        if not 0 < number < 65536 or (bracketed and ip.version != 6):
            raise ValueError(text)
        # a zone is a netdev's name or index, on a link-local address only
        # (LIO drops it on any other)
        if zone and (not ip.is_link_local or ":" in zone or not zone.isprintable() or " " in zone):
            raise ValueError(text)
    except ValueError:
        raise ValueError(f"{text!r}: a portal like 0.0.0.0, 198.18.0.1:3260 or [fd00::1]:3260") from None
    return str(ip), number


def lio_ip(ip: str) -> str:
    """An address as LIO's portal names (and rtslib's NetworkPortal) carry
    it: IPv6 in brackets, [fe80::1%3]; rtslib adds none itself."""
    return f"[{ip}]" if ":" in ip and not ip.startswith("[") else ip


def _unmapped(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An IPv4-mapped IPv6 address as the IPv4 address it is: a dual-stack
    ``[::]`` portal's IPv4 peers appear in either form."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        return ip.ipv4_mapped
    return ip


def _proc_addr(field: str) -> Addr:
    """An ``ADDR:PORT`` of /proc/net/tcp{,6}: the address in 32-bit words
    of host (little-endian) order, IPv4-mapped IPv6 as IPv4."""
    hexip, hexport = field.split(":")
    raw = bytes.fromhex(hexip)
    packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return _unmapped(ipaddress.ip_address(packed)), int(hexport, 16)


def _addr(text: str) -> Addr:
    """``ip:port`` or ``[ip6]:port`` as the connections file and rtslib write
    it, without a zone (``[fe80::1%3]``): /proc/net/tcp6 has none."""
    ip, port = text.rsplit(":", 1)
    return _unmapped(ipaddress.ip_address(ip.removeprefix("[").removesuffix("]").partition("%")[0])), int(port)


def unsettled_connections(portals: Iterable[tuple[str, int]], offloaded_peers: Iterable[str],
                          net: Path = Path("/proc/thread-self/net"), unread: bool = False) -> list[str]:  # fmt: skip
    """Peers (``ip:port``, ``[ip6]:port``) of the connections to ``portals`` in this
    thread's network namespace that are not ``offloaded_peers``: the stock
    listener's, made or being made, and, when those are the adapters'
    (their connections file) only past their login, the adapters' still
    logging in. With ``unread``, only those holding received bytes nothing
    has read yet (a login request the stock portal has still to read). A
    wildcard portal matches every local address."""
    return [peer for peer, queued in _queues(portals, offloaded_peers, net).items() if queued or not unread]


def _queues(portals: Iterable[tuple[str, int]], offloaded_peers: Iterable[str], net: Path) -> dict[str, int]:
    """unsettled_connections' peers, each with its count of unread bytes."""
    want = {_addr(f"{ip}:{port}") for ip, port in portals}
    ours = {_addr(p) for p in offloaded_peers}
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = (net / name).read_text().splitlines()[1:]
        except FileNotFoundError:  # no IPv6 in this kernel
            continue
        for line in lines:
            _, local, remote, st, queues, *_ = line.split()
            if int(st, 16) not in (_TCP_ESTABLISHED, _TCP_SYN_RECV):
                continue
            (lip, lport), peer = _proc_addr(local), _proc_addr(remote)
            if peer in ours:
                continue
            if any(lport == port and (ip == lip or ip.is_unspecified) for ip, port in want):
                ip = f"[{peer[0]}]" if peer[0].version == 6 else str(peer[0])
                out[f"{ip}:{peer[1]}"] = int(queues.split(":")[1], 16)
    return out


def _wait(what: Callable[[], list[str]], done: Callable[[list[str]], bool], deadline: float) -> list[str]:
    """what() every 50 ms until done() says so of it, or ``deadline``; its last value."""
    while True:
        got = what()
        if done(got) or time.monotonic() >= deadline:
            return got
        time.sleep(0.05)


class StockLogins(CxgbitExtError):
    """A TPG was enabled, but logins reached stock TCP on its offloaded
    portal first (enable_tpg gave up): the layout is made, those sessions
    are not offloaded."""


def say_stock_logins(held: list[str], tpg_dir: Path, what: str) -> None:
    """StockLogins, saying what was made and what to do, when enable_tpg
    left logins (``held``) on stock TCP."""
    if held:
        raise StockLogins(
            f"{what} is enabled, but {len(held)} login(s) reached stock TCP on its offloaded portal before "
            f"the adapters took them: {', '.join(held)}; they stay on stock TCP until they log out "
            f"(disable and enable {tpg_dir.name} to move them)"
        )


def enable_tpg(tpg_dir: Path, timeout: float = LOGIN_TIMEOUT_S + 1, ctl: Control | None = None,
               net: Path = Path("/proc/thread-self/net"), settle: float = SETTLE_S) -> list[str]:  # fmt: skip
    """Open the TPG at configfs ``tpg_dir`` to logins (write its enable);
    returns the peers of the connections to its offloaded portals that
    are the stock listener's when it is done (an empty list when there
    are none).

    The rule, for a TPG with an offloaded portal: no login may become a
    stock session on it. LIO looks for an enabled TPG when it reads a
    login's first PDU; the module hands a login LIO refused on the
    offloaded portal (no TPG there) to the stock portal, its request
    unread. One the stock portal read only after the enable would find
    the TPG there. So the target is held in the module while this runs
    (Control.login_hold): its refused logins are answered on the offloaded
    portal, and those already handed over that the stock portal has not
    answered are reset (the initiators log in again).

    Each round, before the enable, waits up to ``settle`` seconds for the
    stock connections to go: logins the stock portal reads while the TPG
    is off are refused there, and the TPG's own sessions go with a
    disable. Those still there, never seen holding unread bytes, are not
    this TPG's (live stock sessions of other TPGs on the same address and
    port, a connection that sends nothing): they are reported at the end,
    and the TPG is not cycled for them. A connection seen with a login
    unread may be read just before the enable and matched to a TPG just
    after it, so it is never excused. Then the round waits, for at most
    ``timeout`` from the start, until no stock connection holds unread
    bytes, and enables. If within ``settle`` seconds a stock connection is
    left that is not excused, the TPG is disabled again (LIO drops its
    sessions; the initiators log in again and are steered to the adapter)
    and the next round starts, for at most another ``timeout`` past the
    first."""
    ctl = ctl or Control()
    portals = []
    for np in (tpg_dir / "np").iterdir() if (tpg_dir / "np").is_dir() else []:
        offload = np / "cxgbit"
        if offload.exists() and offload.read_text().strip() == "1":
            ip, port = np.name.rsplit(":", 1)
            portals.append((ip, int(port)))
    if not portals or not ctl.loaded:
        (tpg_dir / "enable").write_text("1")
        return []
    # configfs: target/iscsi/<target>/tpgt_<tag>
    with ctl.login_hold(tpg_dir.parent.name, math.ceil(2 * timeout + 2 * settle) + 5):
        queued: set[str] = set()  # ever seen holding unread bytes

        def stock(unread: bool = False) -> list[str]:
            got = _queues(portals, [c.peer for c in ctl.connections()], net)
            queued.update(p for p, n in got.items() if n)
            return [p for p, n in got.items() if n or not unread]

        excused: set[str] = set()
        deadline = time.monotonic() + timeout
        last = deadline + timeout
        while True:
            left = _wait(stock, lambda got: not got, min(last, time.monotonic() + settle))
            excused.update(set(left) - queued)
            # past the deadline, a settle's worth of waiting each round
            _wait(lambda: stock(unread=True), lambda got: not got,
                  max(deadline, min(last, time.monotonic() + settle)))  # fmt: skip
            (tpg_dir / "enable").write_text("1")
            held = _wait(stock, lambda got: set(got) <= excused, min(last, time.monotonic() + settle))
            if set(held) <= excused or time.monotonic() >= last:
                return held
            (tpg_dir / "enable").write_text("0")
