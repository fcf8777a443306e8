"""A scale-out gateway keeps its tcmu-runner as docs/usage.md's drop-in
keeps it on a host (testbed/scaleout_guest.py's TcmuRunner): a daemon
that dies unasked is started again a second later and its death is put in
the rendezvous, where the run reports it (testbed.gateways.tcmu_deaths);
a kill the run asks for (perf/failover's ``tcmu`` kind) leaves it down
until a start is asked for.

Real processes stand in for tcmu-runner: what is tested is the keeping,
not the daemon.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from testbed import scaleout_guest
from testbed.gateways import Rendezvous, tcmu_deaths
from testbed.scaleout_guest import TcmuRunner


@pytest.fixture(autouse=True)
def quick_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scaleout_guest, "TCMU_RESTART_S", 0.01)


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"])


def reap(runner: TcmuRunner) -> None:
    assert runner.proc is not None
    runner.proc.wait(10)


def test_a_crash_is_reported_and_the_daemon_started_again(tmp_path: Path) -> None:
    rdv = Rendezvous(tmp_path)
    runner = TcmuRunner(rdv, 1, start=sleeper)
    try:
        first = runner.proc
        assert first is not None and not runner.watch(), "a live daemon was taken for dead"
        os.kill(first.pid, signal.SIGSEGV)
        reap(runner)
        assert runner.watch()
        assert runner.proc is not None and runner.proc is not first and runner.proc.poll() is None
        assert list(tcmu_deaths(rdv).values()) == [{"gateway": 1, "how": "signal 11 (SIGSEGV)"}]
        assert not runner.watch(), "one death was counted twice"
    finally:
        runner.stop()


def test_an_exit_of_its_own_is_a_death_too(tmp_path: Path) -> None:
    rdv = Rendezvous(tmp_path)
    starts = iter([["sh", "-c", "exit 3"], ["sleep", "60"]])
    runner = TcmuRunner(rdv, 2, start=lambda: subprocess.Popen(next(starts)))
    try:
        reap(runner)
        assert runner.watch()
        assert [d["how"] for d in tcmu_deaths(rdv).values()] == ["exit 3"]
    finally:
        runner.stop()


def test_a_kill_the_run_asks_for_leaves_it_down_until_started(tmp_path: Path) -> None:
    rdv = Rendezvous(tmp_path)
    runner = TcmuRunner(rdv, 1, start=sleeper)
    try:
        runner.kill()
        assert runner.proc is None and not runner.watch()
        assert tcmu_deaths(rdv) == {}, "a kill asked for was reported as a crash"
        runner.start()
        assert runner.proc is not None and runner.proc.poll() is None
    finally:
        runner.stop()
    assert runner.proc is None


def test_deaths_are_read_from_the_rendezvous_alone(tmp_path: Path) -> None:
    rdv = Rendezvous(tmp_path)
    rdv.put("disable-gw1")
    rdv.put("tcmu-died-gw1-notjson.txt")  # another name of the prefix
    assert tcmu_deaths(rdv) == {}
