"""The scale-out guests' rendezvous: a request asked again is acted on again.

The initiator asks a gateway to fail and come back (disable/enable,
killtcmu/starttcmu), and the host to cut and mend its link to the cluster,
by files in a shared directory; the gateway or the host acts on a request
that has no answer yet. perf/failover repeats each failure in one
run, so every ask of a request must be acted on once, not answered by the
file an earlier trial left.
"""

from __future__ import annotations

import threading
from pathlib import Path

from testbed.gateways import Rendezvous


def test_each_ask_is_acted_on_once_however_often_it_is_made(tmp_path: Path) -> None:
    rdv = Rendezvous(tmp_path)
    acts: list[str] = []
    stop = threading.Event()

    def gateway() -> None:
        while not stop.is_set():
            rdv.answer("disable-gw1", "disabled-gw1", lambda: acts.append("disable"))
            rdv.answer("enable-gw1", "enabled-gw1", lambda: acts.append("enable"))
            stop.wait(0.01)

    t = threading.Thread(target=gateway)
    t.start()
    try:
        for _ in range(3):
            rdv.ask("disable-gw1", "disabled-gw1", 10)
            assert acts[-1] == "disable"
            rdv.ask("enable-gw1", "enabled-gw1", 10)
            assert acts[-1] == "enable"
    finally:
        stop.set()
        t.join()
    assert acts == ["disable", "enable"] * 3


def test_an_answered_request_is_not_acted_on_again_until_asked(tmp_path: Path) -> None:
    rdv = Rendezvous(tmp_path)
    acts: list[int] = []
    rdv.put("cut-gw1")
    assert rdv.answer("cut-gw1", "isolated-gw1", lambda: acts.append(1))
    assert not rdv.answer("cut-gw1", "isolated-gw1", lambda: acts.append(2))
    assert acts == [1] and rdv.has("isolated-gw1")
