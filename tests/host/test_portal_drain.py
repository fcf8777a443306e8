"""A TPG with an offloaded portal opens to logins with its target held in
the module and once no stock connection holds a login nobody has read
(cxgbit_ext.portals.enable_tpg): which connections count, read from
/proc/net/tcp{,6} as the kernel writes them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from cxgbit_ext import portals

HEAD = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
# 198.18.1.1:3260 and its peers, each 32-bit word in little-endian order
PORTAL = "010112C6:0CBC"


def line(local: str, remote: str, st: str, unread: int = 0) -> str:
    return f"   0: {local} {remote} {st} 00000000:{unread:08X} 00:00000000 00000000     0        0 1 1 0 10 0\n"


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


def test_unread_connections_are_those_with_bytes_received_and_not_read(tmp_path: Path) -> None:
    d = net(
        tmp_path,
        [
            line(PORTAL, "020112C6:9CA6", "01", unread=48),  # a login request in the queue
            line(PORTAL, "020112C6:9CA8", "01"),  # a stock session, all read
            line(PORTAL, "020112C6:9CAA", "01", unread=300),  # the adapter's, peeked at
        ],
    )
    assert portals.unsettled_connections([("198.18.1.1", 3260)], ["198.18.1.2:40106"], d, unread=True) == [
        "198.18.1.2:40102"
    ]


def test_a_zoned_portal_counts_its_connections(tmp_path: Path) -> None:
    """A link-local portal as rtslib names it, [fe80::1%3]: the kernel's
    table has its connections' addresses without the zone."""
    fe80_1, fe80_2 = "000080FE000000000000000001000000", "000080FE000000000000000002000000"
    d = net(tmp_path, [], [line(f"{fe80_1}:0CBC", f"{fe80_2}:9CA6", "01")])
    assert portals.unsettled_connections([("[fe80::1%3]", 3260)], [], d) == ["[fe80::2]:40102"]


def fake_tpg(tmp_path: Path, offload: str) -> Path:
    """TPG 1 of target iqn.x, laid out as in configfs."""
    np = tmp_path / "iqn.x/tpgt_1/np/198.18.1.1:3260"
    np.mkdir(parents=True)
    (np / "cxgbit").write_text(offload + "\n")
    (tmp_path / "iqn.x/tpgt_1/enable").write_text("0\n")
    return tmp_path / "iqn.x/tpgt_1"


class Holds:
    """The module's login holds, as enable_tpg takes and ends them, with
    the TPG's enable state at each."""

    def __init__(self, tpg: Path) -> None:
        self.tpg = tpg
        self.log: list[tuple[str, int, str]] = []

    @contextmanager
    def login_hold(self, target: str, seconds: int) -> Iterator[None]:
        self.log.append((target, seconds, (self.tpg / "enable").read_text().strip()))
        yield
        self.log.append((target, 0, (self.tpg / "enable").read_text().strip()))


def ctl(tpg: Path, peers: list[str], login: bool = False) -> SimpleNamespace:
    holds = Holds(tpg)
    return SimpleNamespace(loaded=True, login_hold=holds.login_hold, holds=holds,
                           connections=lambda: [SimpleNamespace(peer=p, login=login) for p in peers])  # fmt: skip


def test_the_target_is_held_while_its_tpg_is_enabled(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    c = ctl(tpg, [])
    assert portals.enable_tpg(tpg, timeout=16, ctl=c, net=d, settle=2) == []  # type: ignore[arg-type]
    # held from before the enable to after it, long enough for the longest enable
    assert c.holds.log == [("iqn.x", 41, "0"), ("iqn.x", 0, "1")]


def test_enable_waits_out_an_unread_stock_login_then_gives_up(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [line(PORTAL, "020112C6:9CA6", "01", unread=48)])
    tpg = fake_tpg(tmp_path, "1")
    t0 = time.monotonic()
    held = portals.enable_tpg(tpg, timeout=0.3, ctl=ctl(tpg, []), net=d)  # type: ignore[arg-type]
    assert held == ["198.18.1.2:40102"] and time.monotonic() - t0 >= 0.3
    assert (tpg / "enable").read_text() == "1"


def test_stock_sessions_that_stay_are_reported_not_cycled(tmp_path: Path) -> None:
    """Another TPG's stock session on the same address and port, all read:
    enabled after a settle, the session reported; an adapter's connection still
    logging in does not hold the enable up (its target is held: it cannot
    reach stock)."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [line(PORTAL, "020112C6:9CA6", "01"), line(PORTAL, "020112C6:9CA8", "01", unread=48)])
    tpg = fake_tpg(tmp_path, "1")
    t0 = time.monotonic()
    held = portals.enable_tpg(tpg, timeout=30, ctl=ctl(tpg, ["198.18.1.2:40104"], login=True), net=d)  # type: ignore[arg-type]
    assert held == ["198.18.1.2:40102"] and time.monotonic() - t0 < 5
    assert (tpg / "enable").read_text() == "1"
    # all of them the adapters': nothing to report
    (tpg / "enable").write_text("0")
    c = ctl(tpg, ["198.18.1.2:40102", "198.18.1.2:40104"])
    assert portals.enable_tpg(tpg, timeout=30, ctl=c, net=d) == []  # type: ignore[arg-type]


def test_a_stock_portal_is_enabled_without_looking(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [line(PORTAL, "020112C6:9CA6", "01")])
    tpg = fake_tpg(tmp_path, "0")
    assert portals.enable_tpg(tpg, timeout=30, ctl=ctl(tpg, []), net=d) == []  # type: ignore[arg-type]
    assert (tpg / "enable").read_text() == "1"


class WatchingCtl:
    """A module holding no connection that, each time enable_tpg looks,
    notes the TPG's enable state when it changed (``seen``) and makes the
    stock connections ``stock(seen)`` names (their remote address fields)
    the only ones to the portal, each with its unread bytes."""

    loaded = True

    def __init__(
        self, tpg: Path, d: Path, stock: Callable[[list[str]], list[tuple[str, int]]], look_s: float = 0.0
    ) -> None:
        self.tpg, self.d, self.stock, self.look_s = tpg, d, stock, look_s
        self.seen: list[str] = []
        self.login_hold = Holds(tpg).login_hold

    def connections(self) -> list[SimpleNamespace]:
        time.sleep(self.look_s)  # a loaded host: each look takes this long
        state = (self.tpg / "enable").read_text().strip()
        if self.seen[-1:] != [state]:
            self.seen.append(state)
        net(self.d, [line(PORTAL, peer, "01", unread) for peer, unread in self.stock(self.seen)])
        return []


def test_a_login_that_reached_stock_at_the_enable_is_dropped_and_enabled_again(tmp_path: Path) -> None:
    """A login the offloaded portal refused just before the enable reaches
    the stock portal just after it: the TPG goes off again (LIO drops the
    session) and on once that connection is gone."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    # a stock session exists only while the first enable lasts
    ctl = WatchingCtl(tpg, d, lambda seen: [("020112C6:9CA6", 0)] if seen == ["0", "1"] else [])
    assert portals.enable_tpg(tpg, timeout=10, ctl=ctl, net=d, settle=0.3) == []  # type: ignore[arg-type]
    assert ctl.seen == ["0", "1", "0", "1"]
    assert (tpg / "enable").read_text() == "1"


@pytest.mark.parametrize("look_s", [0.0, 0.03])
def test_unread_logins_that_never_let_up_still_end_offloaded(tmp_path: Path, look_s: float) -> None:
    """Stock connections that keep a login unread at every moment (taken
    by the stock listener itself, on a netdev no adapter serves) make the
    wait for none run out. The TPG is enabled all the same; one of them
    then becomes a stock session after the enable, and the TPG goes off
    again and on, until no new stock session is left."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    peers: list[str] = []

    def stock(seen: list[str]) -> list[tuple[str, int]]:
        if seen == ["0"]:  # a new login unread whenever asked, until the deadline
            peers.append(f"020112C6:{0x9C00 + len(peers):04X}")
            return [(peers[-1], 48)]
        if seen == ["0", "1"]:  # the last one, read after the enable, is a session
            return [(peers[-1], 0)]
        return []

    ctl = WatchingCtl(tpg, d, stock, look_s)
    # the cycle after the deadline needs a settle's worth and a few looks of
    # the budget past it (another timeout): as in use, timeout well above
    # settle, and above what a host busy with the rest of make test (fuzzers
    # and the other test worker) takes for those looks
    assert portals.enable_tpg(tpg, timeout=2.0, ctl=ctl, net=d, settle=0.2) == []  # type: ignore[arg-type]
    assert ctl.seen == ["0", "1", "0", "1"] and len(peers) > 1
    assert (tpg / "enable").read_text() == "1"


def test_a_login_refused_while_the_tpg_was_off_is_not_reported(tmp_path: Path) -> None:
    """A login the stock portal read while the TPG was still off is
    refused there and its connection goes a moment later: that it was
    there when the enable began says nothing about where sessions end. The
    enable neither reports it nor cycles the TPG for it."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    t0 = time.monotonic()
    # read, refused, closed 0.15 s after the enable began
    ctl = WatchingCtl(tpg, d, lambda seen: [("020112C6:9CA6", 0)] if time.monotonic() - t0 < 0.15 else [])
    assert portals.enable_tpg(tpg, timeout=10, ctl=ctl, net=d, settle=0.5) == []  # type: ignore[arg-type]
    assert ctl.seen == ["0", "1"]


def test_a_login_read_before_the_enable_and_placed_after_it_is_dropped(tmp_path: Path) -> None:
    """A login queued on the stock portal when the enable began, read by
    it while the TPG was off but matched to a TPG only after the enable,
    is a stock session of this TPG: it goes off again and on."""
    (tmp_path / "net").mkdir()
    d = net(tmp_path / "net", [])
    tpg = fake_tpg(tmp_path, "1")
    looks: list[str] = []

    def stock(seen: list[str]) -> list[tuple[str, int]]:
        looks.append(seen[-1])
        if seen == ["0"]:  # unread at the first look, read from then on
            return [("020112C6:9CA6", 48 if len(looks) == 1 else 0)]
        if seen == ["0", "1"]:  # a session once the TPG is on
            return [("020112C6:9CA6", 0)]
        return []

    ctl = WatchingCtl(tpg, d, stock)
    assert portals.enable_tpg(tpg, timeout=10, ctl=ctl, net=d, settle=0.3) == []  # type: ignore[arg-type]
    assert ctl.seen == ["0", "1", "0", "1"]
