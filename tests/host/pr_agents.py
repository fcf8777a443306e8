"""Run inside a test cluster's namespace by test_reservations_agent.py:
three agents of one target on a real RADOS log, each with its own client
(so its own watch), the module's channel stood in for by a recorder.
Prints one JSON object: every line each agent's module got, in order, and
the global order of the runs and applies. With ``watch``: one agent
serving (configfs stood in for by directories) until its watch is lost:
what its module was told, and how serve ended."""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "userspace"))

import rados

from cxgbit_ext import reservations

IQN = "iqn.2026-11.org.cxgbit-ext:agents"
WATCH_IQN = "iqn.2026-11.org.cxgbit-ext:watch"  # a log of its own
# how long "stall" keeps the cluster silent: past a stale watch's hold (STALE_S + RENEW_S after
# its last confirmation, at most 5 s before the stall)
STALL_S = 12
FIELDS = IQN + " {tpgt} 0 iqn.2026-11.org.cxgbit-ext:node-{node} 23d00000000{node} 5f000000000000001800 {param}"
events: list[str] = []
lock = threading.Lock()


class Recorder:
    """The module's side: records each line, answers GOOD at once."""

    def __init__(self, name: str) -> None:
        self.name, self.lines = name, []  # type: ignore[var-annotated]
        self.outs: queue.Queue[str] = queue.Queue()

    def say(self, line: str) -> None:
        with lock:
            self.lines.append(line)

    def call(self, line: str, tag: int, timeout: float = 120) -> str:
        with lock:
            self.lines.append(line)
            events.append(f"{self.name} {line.split()[0]} {tag}")
        time.sleep(0.05)  # a module takes time: a race would show
        return "0"


def agent(conf: str, name: str) -> tuple[reservations.Agent, Recorder, object]:
    cluster = rados.Rados(conffile=conf)
    cluster.connect()
    ioctx = cluster.open_ioctx("rbd")
    rec = Recorder(name)
    a = reservations.Agent(IQN, ioctx, rec)  # type: ignore[arg-type]
    a.log.ensure()
    watch = ioctx.watch(a.oid, a._notified)
    a.catch_up(a.log.head())
    return a, rec, (cluster, ioctx, watch)


def watch_lost(conf: str, how: str, osd: int) -> None:
    """An agent serves until its watch of the log goes: its client is
    blocklisted (``blocklist``: the watch fails and cannot be made again,
    serve must end) or the cluster stops answering for STALL_S (``stall``, the
    OSD stopped, as a gateway cut off from the cluster sees it: the watch
    goes stale). Its module must be told hold first, and serve again only
    once it has watched again (``stall``). Prints what the module was told
    (runs collapsed, each with the seconds since the loss began)."""
    cluster = rados.Rados(conffile=conf)
    cluster.connect()
    rec = Recorder("gw1")
    said: list[tuple[float, str]] = []
    rec.say = lambda line: said.append((time.monotonic(), line))  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as d:
        links, lio = Path(d) / "links", Path(d) / "iscsi"
        links.mkdir()
        (lio / WATCH_IQN / "tpgt_1").mkdir(parents=True)
        a = reservations.Agent(WATCH_IQN, cluster.open_ioctx("rbd"), rec, links, lio)  # type: ignore[arg-type]
        ended: list[str] = []
        stop = threading.Event()

        def serve() -> None:
            try:
                a.serve(ready=lambda: rec.say("(ready)"), stop=stop)
                ended.append("returned")
            except (reservations.AgentError, rados.Error) as e:
                ended.append(f"{type(e).__name__}: {e}")

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        end = time.monotonic() + 30
        while not any(line == "(ready)" for _, line in said) and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(3)  # renewals
        linked = sorted(p.name for p in links.iterdir())
        admin = rados.Rados(conffile=conf)
        admin.connect()
        t0 = time.monotonic()
        if how == "blocklist":
            while True:
                try:
                    admin.blocklist_add(cluster.get_addrs(), 600)
                    break
                except rados.PermissionError:
                    # a monitor now and then refuses a command (EPERM) before
                    # it is sent (testbed/ceph.py, Cluster.run): ask again
                    if time.monotonic() - t0 > 30:
                        raise
                    time.sleep(0.2)
            t.join(120)
        else:
            os.kill(osd, signal.SIGSTOP)
            time.sleep(STALL_S)
            os.kill(osd, signal.SIGCONT)
            end = time.monotonic() + 90
            while time.monotonic() < end and [line for _, line in said][-1].startswith("hold"):
                time.sleep(0.5)
            time.sleep(3)
            stop.set()
            t.join(120)
        cluster.shutdown()  # as the agent's command does: see Agent._unwatch
        admin.shutdown()
        runs: list[list[object]] = []
        for when, line in said:
            if not runs or runs[-1][0] != line:
                runs.append([line, round(when - t0, 1)])
        print(json.dumps({"said": runs, "ended": ended, "linked": linked}))


def main() -> None:
    conf = sys.argv[sys.argv.index("-c") + 1]
    if sys.argv[1] == "watch":
        watch_lost(conf, sys.argv[2], int(sys.argv[3]))
        return
    a1, r1, h1 = agent(conf, "gw1")
    a2, r2, h2 = agent(conf, "gw2")
    # one out on each gateway, in turn
    a1.handle("out 7 " + FIELDS.format(tpgt=1, node=1, param="aa" * 24))
    a2.handle("out 3 " + FIELDS.format(tpgt=2, node=2, param="bb" * 24))
    # two at once, one on each
    t = [threading.Thread(target=a.handle, args=(f"out {n} " + FIELDS.format(tpgt=g, node=g, param=p * 24),))
         for a, n, g, p in ((a1, 8, 1, "cc"), (a2, 4, 2, "dd"))]  # fmt: skip
    for x in t:
        x.start()
    for x in t:
        x.join()
    # a gateway started later replays the log
    a3, r3, h3 = agent(conf, "gw3")
    out = {"gw1": r1.lines, "gw2": r2.lines, "gw3": r3.lines, "events": events, "head": a1.log.head(),
           "applied": [a1.applied, a2.applied, a3.applied]}  # fmt: skip
    for _, _ioctx, watch in (h1, h2, h3):
        watch.close()  # type: ignore[attr-defined]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
