"""testbed/scaleout refuses a run it cannot do before it starts anything.

A failure kind it does not know, the tcmu-runner kill without tcmu-runner,
a cut before another failure on krbd (whose fenced mapping never comes
back by itself), or a layout `gateway create` would refuse in the guests is
an argument error: exit 2 with the reason, and no Ceph
cluster or network namespace made.

The run's cluster lives in the namespace SCALEOUT_NS; other host tests make
namespaces of their own while this one runs, so only that name is checked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
SCALEOUT_NS = "cxe-scaleout"


def _netns() -> list[str]:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--failures", "disable,reboot"], "each one of disable, tcmu, kill, cut"),
        (["--backstore", "iblock", "--failures", "tcmu"], "tcmu only with --backstore user:rbd"),
        (["--backstore", "iblock", "--failures", "cut,disable"], "cut must be the last failure"),
        (["--gateways", "4"], "invalid choice: 4"),
        (["--images", "-1"], "--images: at least one"),
        (["--ceph-option", "osd_client_watch_timeout"], "NAME=VALUE"),
        (["--ceph-option", "Bad-Name=1"], "a name of a-z"),
        (["--cmd-time-out", "10"], "--cmd-time-out is user:rbd's"),
        # what gateway create would refuse in every guest, refused here first
        (["--backstore", "user:rbd", "--cmd-time-out", "30"], "--cmd-time-out 30: 1 to 29 s"),
        (["--backstore", "user:rbd", "--cmd-time-out", "0"], "--cmd-time-out 0: 1 to 29 s"),
        (["--noop", "0"], "--noop 0: 1 to 30 s"),
    ],
)
def test_a_run_it_cannot_do_is_refused_before_anything_starts(args: list[str], why: str, tmp_path: Path) -> None:
    assert SCALEOUT_NS not in _netns(), f"a scale-out runs on this host: {SCALEOUT_NS} exists"
    p = subprocess.run([str(TOP / "testbed/scaleout"), "--kernel", "6.1", "--results", str(tmp_path / "r"), *args],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 2 and why in p.stderr, p.stderr
    assert SCALEOUT_NS not in _netns() and not (tmp_path / "r").exists()
