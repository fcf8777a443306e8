"""Run inside a test cluster's namespace by test_reservations_agent.py:
three agents of one target on a real RADOS log, each with its own client
(so its own watch), the module's channel stood in for by a recorder.
Prints one JSON object: every line each agent's module got, in order, and
the global order of the runs and applies."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "userspace"))

import rados

from cxgbit_ext import reservations

IQN = "iqn.2026-11.org.cxgbit-ext:agents"
FIELDS = IQN + " {tpgt} 0 iqn.2026-11.org.cxgbit-ext:node-{node} 23d00000000{node} 5f000000000000001800 {param}"
events: list[str] = []
lock = threading.Lock()


class Recorder:
    """The module's side: records each line, answers GOOD at once."""

    def __init__(self, name: str) -> None:
        self.name, self.lines = name, []  # type: ignore[var-annotated]
        self.outs = None

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


def main() -> None:
    conf = sys.argv[sys.argv.index("-c") + 1]
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
