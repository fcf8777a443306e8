"""What SCSI-3 persistent reservations need from the host.

LIO's reservation emulation writes each device's state to
``<dbroot>/pr/aptpl_<unit serial>`` on every PERSISTENT RESERVE OUT, also
when the initiator did not ask for persistence (APTPL 0: it writes that
there is none), and fails the command with NOT READY, LOGICAL UNIT
COMMUNICATION FAILURE, when the file cannot be written. dbroot is LIO's
(``/sys/kernel/config/target/dbroot``); rtslib moves it to its preferred
directory (``/etc/rtslib-fb-target`` on Debian) before the first device
exists. No Debian package makes its ``pr`` directory, so on a stock host
every reservation fails, through stock iSCSI as through offload.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# python3-rados (Ceph's packages): the agent's alone, so a host without
# Ceph still lays out targets with this module
rados: Any
try:
    import rados  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    rados = None

log = logging.getLogger(__name__)

DBROOT = Path("/sys/kernel/config/target/dbroot")


def state_dir(dbroot: Path = DBROOT) -> Path:
    """The directory LIO writes reservation state to (LIO must be loaded)."""
    return Path(dbroot.read_text().strip()) / "pr"


def ensure_state_dir(dbroot: Path = DBROOT) -> Path:
    """Make state_dir() if it is missing (after rtslib has set dbroot:
    call it once an RTSRoot exists); returns it."""
    d = state_dir(dbroot)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


# Reservations shared by gateways: the agent (``cxgbit-ext reservations
# serve``). The module (spr.c) holds each PERSISTENT RESERVE OUT received on
# a sharing target and hands it here as an "out" line; the agent puts it in
# the cluster's order, a log in one RADOS object per target, and every
# gateway's agent has its module run every entry in that order: its own
# entries on the waiting command ("run"), the others' through an internal
# nexus ("apply"). The order of one append: take the log's lock, catch up,
# append the entry, notify every watcher (each applies up to it before it
# answers), run it here, then give the lock back. So every live gateway
# holds the change before the initiator is told GOOD, and no two gateways
# append at once. A gateway that starts replays the whole log; its module
# holds the target (no I/O) until the agent says it serves, and again when
# the agent's watch fails or the agent goes.

DEVICE = Path("/dev/cxgbit_ext_pr")
LINKS = Path("/sys/kernel/config/cxgbit_ext/reservations")
LIO_ISCSI = Path("/sys/kernel/config/target/iscsi")
LOCK_NAME = "append"
LOCK_SECONDS = 30  # a lock holder that died lets go after this
# A gateway serves while its module's lease (CXE_SPR_LEASE_S, 3 s) runs:
# its agent renews it every RENEW_S while its watch of the log is live, that
# is confirmed by the cluster within STALE_S (librados confirms it every 5 s).
# A gateway cut off from the cluster is so held within STALE_S + RENEW_S + 3 s
# of the watch's last confirmation, which came before the cut: a notify that
# waits NOTIFY_MS, longer than that, finds every gateway that has not
# answered held, and the command it orders runs only then.
RENEW_S = 1.0
STALE_S = 7.0
NOTIFY_MS = 15_000
# The cluster drops a watch not confirmed for this long (Ceph's default is
# 30 s): a notify waits for a dead gateway's watch until then at most.
WATCH_S = 10
HEAD = "head"


def log_object(iqn: str) -> str:
    """The RADOS object holding a target's log."""
    return f"cxgbit-ext.reservations.{iqn}"


def entry_key(seq: int) -> str:
    return f"e{seq:016d}"


class AgentError(Exception):
    pass


def _links(links: Path) -> Iterator[tuple[Path, Path]]:
    """Each link in reservations/ with the TPG it points to: a link is
    known by what it points to, never by its name (anything may be)."""
    if links.is_dir():
        for link in links.iterdir():
            if link.is_symlink():
                yield link, Path(os.readlink(link))


def link_target(iqn: str, links: Path = LINKS, lio: Path = LIO_ISCSI) -> list[Path]:
    """Link every TPG of target ``iqn`` into the module's reservations/
    (a TPG already linked stays, under its name); the links."""
    tpgs = sorted((lio / iqn).glob("tpgt_*"))
    if not tpgs:
        raise AgentError(f"no target {iqn} with TPGs in {lio}")
    have = {tpg.name: link for link, tpg in _links(links) if tpg.parent.name == iqn}
    made = []
    for tpg in tpgs:
        link = have.get(tpg.name)
        if link is None:
            link = links / f"{iqn}:{tpg.name}"
            link.symlink_to(tpg)
        made.append(link)
    return made


def unlink_target(iqn: str, links: Path = LINKS) -> None:
    for link, tpg in _links(links):
        if tpg.parent.name == iqn:
            link.unlink()


def linked_targets(links: Path = LINKS) -> list[str]:
    """The targets with a TPG linked into reservations/ (none when the
    module is not loaded)."""
    return sorted({tpg.parent.name for _, tpg in _links(links)})


def unlink_all(links: Path = LINKS) -> None:
    """Remove every link: LIO cannot remove a linked TPG."""
    for link, _ in _links(links):
        link.unlink()


class Channel:
    """The module's side of the agent channel: "out" lines queued for the
    agent, "done" results handed to whoever waits for their tag."""

    def __init__(self, path: Path = DEVICE) -> None:
        try:
            self.fd = os.open(path, os.O_RDWR)
        except OSError as e:
            raise AgentError(f"{path}: {e.strerror} (cxgbit_ext loaded? another agent running?)") from e
        self.outs: queue.Queue[str] = queue.Queue()
        self._done: dict[int, str] = {}
        self._cond = threading.Condition()
        self._stop = False
        self._reader = threading.Thread(target=self._read, name="cxgbit-ext-pr-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        while not self._stop:
            if not select.select([self.fd], [], [], 1)[0]:
                continue
            buf += os.read(self.fd, 65536)
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode()
                if line.startswith("out "):
                    self.outs.put(line)
                elif line.startswith("done "):
                    _, tag, ret = line.split()
                    with self._cond:
                        self._done[int(tag)] = ret
                        self._cond.notify_all()
                else:
                    log.warning("the module said %r", line)

    def say(self, line: str) -> None:
        os.write(self.fd, line.encode())

    def call(self, line: str, tag: int, timeout: float = 120) -> str:
        """Write a run or apply line; its result (LIO's sense reason, or gone)."""
        self.say(line)
        with self._cond:
            if not self._cond.wait_for(lambda: tag in self._done, timeout):
                raise AgentError(f"no result for {line.split()[0]} {tag} within {timeout:.0f} s")
            return self._done.pop(tag)

    def close(self) -> None:
        self._stop = True
        self._reader.join()
        os.close(self.fd)


class Log:
    """A target's order of PERSISTENT RESERVE OUT: omap entries e<seq> of
    one RADOS object, and its head (the last seq), written together by a
    compare-and-set of the head."""

    def __init__(self, ioctx: Any, oid: str) -> None:
        self.ioctx, self.oid = ioctx, oid

    def ensure(self) -> None:
        with rados.WriteOpCtx() as op:
            op.new(rados.LIBRADOS_CREATE_EXCLUSIVE)
            self.ioctx.set_omap(op, (HEAD,), (_seq(0),))
            with contextlib.suppress(rados.ObjectExists):
                self.ioctx.operate_write_op(op, self.oid)

    def head(self) -> int:
        with rados.ReadOpCtx() as op:
            it, _ = self.ioctx.get_omap_vals_by_keys(op, (HEAD,))
            self.ioctx.operate_read_op(op, self.oid)
            return int(dict(it)[HEAD])

    def entries(self, after: int, upto: int) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        start = entry_key(after)
        while True:
            with rados.ReadOpCtx() as op:
                it, _ = self.ioctx.get_omap_vals(op, start, "e", 256)
                self.ioctx.operate_read_op(op, self.oid)
                batch = [(int(k[1:]), bytes(v).decode()) for k, v in it]
            out += [(seq, v) for seq, v in batch if seq <= upto]
            if len(batch) < 256 or batch[-1][0] >= upto:
                return out
            start = entry_key(batch[-1][0])

    def append(self, seq: int, value: str) -> None:
        """Entry seq, which must follow the head."""
        with rados.WriteOpCtx() as op:
            op.omap_cmp(HEAD, _seq(seq - 1).decode(), rados.LIBRADOS_CMPXATTR_OP_EQ)
            self.ioctx.set_omap(op, (HEAD, entry_key(seq)), (_seq(seq), value.encode()))
            self.ioctx.operate_write_op(op, self.oid)


def _seq(n: int) -> bytes:
    return f"{n:016d}".encode()


class Agent:
    """One target's reservations, shared through its log."""

    def __init__(self, iqn: str, ioctx: Any, channel: Channel, links: Path = LINKS, lio: Path = LIO_ISCSI) -> None:
        self.iqn, self.ioctx, self.chan = iqn, ioctx, channel
        self.links, self.lio = links, lio  # the module's reservations/ and LIO's iSCSI targets
        self.oid = log_object(iqn)
        self.log = Log(ioctx, self.oid)
        self.me = uuid.uuid4().hex  # this agent's entries, not an earlier one's
        self.applied = 0
        self.order = threading.Lock()  # one application at a time, in order
        self.pending: dict[int, str] = {}  # the module's request id: its fields
        self._dead: list[Any] = []  # watches whose close failed: see _unwatch
        self._state = threading.Lock()  # _serving and _watching, and the serve/hold lines
        self._serving = False
        self._watching: Any = None
        self._lost = threading.Event()  # the watch failed or went stale: watch again
        self._done = threading.Event()

    def catch_up(self, upto: int, own: bool = False) -> None:
        """Have the module run every entry up to seq ``upto`` not run yet,
        in order; stop before an entry of this agent's unless ``own``."""
        with self.order:
            for seq, value in self.log.entries(self.applied, upto):
                who, rid, fields = value.split(" ", 2)
                if who == self.me and int(rid) in self.pending:
                    if not own:
                        return
                    del self.pending[int(rid)]
                    ret = self.chan.call(f"run {rid} {seq}", seq)
                else:
                    ret = self.chan.call(f"apply {seq} {fields}", seq)
                log.info("entry %d (%s): %s", seq, "ours" if who == self.me else "applied", ret)
                self.applied = seq

    def _notified(self, notify_id: int, notifier_id: str, watch_id: int, data: bytes) -> None:
        # the answer to the notify goes when this returns: after the entries
        try:
            self.catch_up(int(data))
        except (AgentError, rados.Error, OSError, ValueError) as e:
            log.error("catching up to entry %r: %s", data, e)

    def _lock(self) -> str:
        cookie = uuid.uuid4().hex
        end = time.monotonic() + LOCK_SECONDS
        while True:
            try:
                self.ioctx.lock_exclusive(self.oid, LOCK_NAME, cookie, "cxgbit-ext append", LOCK_SECONDS)
                return cookie
            except (rados.ObjectBusy, rados.ObjectExists):
                if time.monotonic() > end:
                    raise AgentError(f"{self.oid}: its lock was not free within {LOCK_SECONDS} s") from None
                time.sleep(0.05)

    def handle(self, line: str) -> None:
        """An "out" line: the command in the log, applied everywhere, run here."""
        _, rid, fields = line.split(" ", 2)
        self.pending[int(rid)] = fields
        try:
            cookie = self._lock()
        except (AgentError, rados.Error) as e:
            log.error("request %s failed: %s", rid, e)
            self.pending.pop(int(rid), None)
            self.chan.say(f"fail {rid}")
            return
        try:
            head = self.log.head()
            self.catch_up(head)
            seq = head + 1
            self.log.append(seq, f"{self.me} {rid} {fields}")
            try:
                self.ioctx.notify(self.oid, str(seq), NOTIFY_MS)
            except rados.Error as e:
                log.warning("entry %d: a gateway had not applied it within %d s: %s", seq, NOTIFY_MS // 1000, e)
            self.catch_up(seq, own=True)
        except (AgentError, rados.Error, OSError) as e:
            log.error("request %s: %s", rid, e)
            if self.pending.pop(int(rid), None) is not None:
                self.chan.say(f"fail {rid}")
        finally:
            self.ioctx.unlock(self.oid, LOCK_NAME, cookie)

    def _watch(self) -> Any:
        # librados calls back with the error (and, in some releases, the watch's id)
        return self.ioctx.watch(self.oid, self._notified, lambda *err: self._lose(f"its watch failed {err}"), WATCH_S)

    def _lose(self, why: str) -> None:
        """Hold the target: the log's watch is not live."""
        with self._state:
            if self._serving:
                self._serving = False
                self.chan.say(f"hold {self.iqn}")
                log.warning("%s: %s: held until caught up again", self.iqn, why)
            self._lost.set()

    def _renew(self) -> None:
        """The module's serve lease, renewed while the watch is live."""
        while not self._done.wait(RENEW_S):
            with self._state:
                if not self._serving or self._watching is None:
                    continue
                try:
                    age = self._watching.check().total_seconds()
                except rados.Error as e:
                    age, why = None, f"its watch failed ({e})"
                if age is not None and age <= STALE_S:
                    self.chan.say(f"serve {self.iqn}")
                    continue
            self._lose(why if age is None else f"its watch was last confirmed {age:.1f} s ago")

    def _caught_up(self) -> None:
        """Apply the log as it is now, then serve."""
        self.catch_up(self.log.head())
        with self._state:
            self._serving = True
            self.chan.say(f"serve {self.iqn}")

    def serve(self, ready: Callable[[], None] = lambda: None, stop: threading.Event | None = None) -> None:
        """Link the target, replay its log, then order its commands until stop.

        The module holds the target (serves no I/O) from its link until this
        says serve, and again whenever the log's watch fails or goes stale
        (RENEW_S, STALE_S above): a gateway that may have missed another
        gateway's entry must not let a write by. It then watches again and
        catches up before it serves. A watch that cannot be made again ends
        serve with the error (and the module, the channel closed, holds the
        target)."""
        link_target(self.iqn, self.links, self.lio)
        self.log.ensure()
        self._watching = self._watch()
        renewer = threading.Thread(target=self._renew, name="cxgbit-ext-pr-lease", daemon=True)
        try:
            self._caught_up()
            renewer.start()
            log.info("%s: %d entries applied; serving", self.iqn, self.applied)
            ready()
            while stop is None or not stop.is_set():
                if self._lost.is_set():
                    self._lost.clear()
                    with self._state:
                        dead, self._watching = self._watching, None
                    if dead is not None:
                        self._unwatch(dead)
                    self._watching = self._watch()
                    self._caught_up()
                    log.info("%s: %d entries applied; serving again", self.iqn, self.applied)
                try:
                    line = self.chan.outs.get(timeout=1)
                except queue.Empty:
                    continue
                self.handle(line)
        finally:
            self._done.set()
            if renewer.is_alive():
                renewer.join()
            if self._watching is not None:
                self._unwatch(self._watching)

    def _unwatch(self, watch: Any) -> None:
        """Close a watch. librados frees it even when the close fails (a
        blocklisted client, a watch the cluster dropped), but python3-rados
        (16.2) then closes it again when the object goes, after it was
        freed: such a watch is kept until the caller has shut the cluster
        handle down (python3-rados closes nothing after that)."""
        try:
            watch.close()
        except rados.Error as e:
            log.info("%s: closing its old watch: %s", self.iqn, e)
            self._dead.append(watch)
