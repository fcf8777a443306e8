"""A TPG with an offloaded portal opens to logins only once the stock
listener holds none (cxgbit_ext.portals.enable_tpg): which connections
count, read from /proc/net/tcp{,6} as the kernel writes them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from cxgbit_ext import portals

HEAD = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
# 198.18.1.1:3260 and its peers, each 32-bit word in little-endian order
PORTAL = "010112C6:0CBC"


def line(local: str, remote: str, st: str) -> str:
    return f"   0: {local} {remote} {st} 00000000:00000000 00:00000000 00000000     0        0 1 1 0 10 0\n"


def net(tmp_path: Path, tcp: list[str], tcp6: list[str] | None = None) -> Path:
    (tmp_path / "tcp").write_text(HEAD + "".join(tcp))
    if tcp6 is not None:
        (tmp_path / "tcp6").write_text(HEAD + "".join(tcp6))
    return tmp_path


def test_only_unheld_connections_to_the_portal_count(tmp_path: Path) -> None:
    d = net(
        tmp_path,
        [
            line(PORTAL, "00000000:0000", "0A"),  # the listener itself
            line(PORTAL, "020112C6:9CA6", "01"),  # stock: 198.18.1.2:40102
            line(PORTAL, "020112C6:9CA8", "01"),  # held by an adapter
            line(PORTAL, "020112C6:9CAA", "03"),  # a request socket (SYN_RECV)
            line(PORTAL, "020112C6:9CAC", "06"),  # TIME_WAIT: gone
            line("010112C6:0016", "020112C6:9CAE", "01"),  # ssh, not the portal
        ],
        # the portal's address IPv4-mapped on an IPv6 socket
        [line("0000000000000000FFFF0000010112C6:0CBC", "0000000000000000FFFF0000020112C6:9CB0", "01")],
    )
    held = portals.unsettled_connections([("198.18.1.1", 3260)], ["198.18.1.2:40104"], d)
    assert held == ["198.18.1.2:40102", "198.18.1.2:40106", "198.18.1.2:40112"]
    # a wildcard portal takes every local address on its port
    assert portals.unsettled_connections([("0.0.0.0", 3260)], [], d)[:1] == ["198.18.1.2:40102"]
    assert portals.unsettled_connections([("198.18.1.1", 3261)], [], d) == []


def fake_tpg(tmp_path: Path, offload: str) -> Path:
    np = tmp_path / "tpgt_1/np/198.18.1.1:3260"
    np.mkdir(parents=True)
    (np / "cxgbit").write_text(offload + "\n")
    (tmp_path / "tpgt_1/enable").write_text("0\n")
    return tmp_path / "tpgt_1"


def ctl(peers: list[str], login: bool = False) -> SimpleNamespace:
    return SimpleNamespace(loaded=True, connections=lambda: [SimpleNamespace(peer=p, login=login) for p in peers])


def test_enable_waits_out_a_stock_login_then_gives_up(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [line(PORTAL, "020112C6:9CA6", "01")])
    tpg = fake_tpg(tmp_path, "1")
    t0 = time.monotonic()
    held = portals.enable_tpg(tpg, timeout=0.3, ctl=ctl([]), net=d)  # type: ignore[arg-type]
    assert held == ["198.18.1.2:40102"] and time.monotonic() - t0 >= 0.3
    assert (tpg / "enable").read_text() == "1"
    # the adapter's, still logging in: LIO may yet hand it to stock
    (tpg / "enable").write_text("0")
    assert portals.enable_tpg(tpg, timeout=0.2, ctl=ctl(["198.18.1.2:40102"], login=True), net=d)  # type: ignore[arg-type]
    # the adapter's, logged in: enabled at once
    (tpg / "enable").write_text("0")
    assert portals.enable_tpg(tpg, timeout=30, ctl=ctl(["198.18.1.2:40102"]), net=d) == []  # type: ignore[arg-type]
    assert (tpg / "enable").read_text() == "1"


def test_a_stock_portal_is_enabled_without_looking(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [line(PORTAL, "020112C6:9CA6", "01")])
    tpg = fake_tpg(tmp_path, "0")
    assert portals.enable_tpg(tpg, timeout=30, ctl=ctl([]), net=d) == []  # type: ignore[arg-type]
    assert (tpg / "enable").read_text() == "1"


class WatchingCtl:
    """A module holding no connection that, each time enable_tpg looks,
    notes the TPG's enable state when it changed (``seen``) and makes the
    stock connections ``stock(seen)`` names (their remote address fields)
    the only ones to the portal."""

    loaded = True

    def __init__(self, tpg: Path, d: Path, stock: Callable[[list[str]], list[str]]) -> None:
        self.tpg, self.d, self.stock = tpg, d, stock
        self.seen: list[str] = []

    def connections(self) -> list[SimpleNamespace]:
        state = (self.tpg / "enable").read_text().strip()
        if self.seen[-1:] != [state]:
            self.seen.append(state)
        net(self.d, [line(PORTAL, peer, "01") for peer in self.stock(self.seen)])
        return []


def test_a_login_that_reached_stock_at_the_enable_is_dropped_and_enabled_again(tmp_path: Path) -> None:
    """A login the offloaded portal refused just before the enable reaches
    the stock portal just after it: the TPG goes off again (LIO drops the
    session) and on once that connection is gone."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    # a stock session exists only while the first enable lasts
    ctl = WatchingCtl(tpg, d, lambda seen: ["020112C6:9CA6"] if seen == ["0", "1"] else [])
    assert portals.enable_tpg(tpg, timeout=10, ctl=ctl, net=d, settle=0.3) == []  # type: ignore[arg-type]
    assert ctl.seen == ["0", "1", "0", "1"]
    assert (tpg / "enable").read_text() == "1"


def test_logins_that_never_let_up_still_end_offloaded(tmp_path: Path) -> None:
    """Initiators retrying all the time keep a login of theirs in flight at
    every moment, so the wait for none runs out. The TPG is enabled all
    the same; a login refused before the enable then reaches stock after
    it, and the TPG goes off again and on, as when the wait did not run
    out, until no stock session is left: only connections that were there
    before the enable began (another TPG's stock sessions) are left as
    they are and reported."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    peers: list[str] = []

    def stock(seen: list[str]) -> list[str]:
        if seen == ["0"]:  # a new login in flight whenever asked, until the deadline
            peers.append(f"020112C6:{0x9C00 + len(peers):04X}")
            return peers[-1:]
        if seen == ["0", "1"]:  # the last one refused before the enable is stock now
            return peers[-1:]
        return []

    ctl = WatchingCtl(tpg, d, stock)
    assert portals.enable_tpg(tpg, timeout=0.3, ctl=ctl, net=d, settle=0.2) == []  # type: ignore[arg-type]
    assert ctl.seen == ["0", "1", "0", "1"] and len(peers) > 1
    assert (tpg / "enable").read_text() == "1"
