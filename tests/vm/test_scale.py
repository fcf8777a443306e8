"""Management plane at scale: targets x 16 LUNs with offloaded portals.

Creates, lists (targetcli-offload's whole tree), saves and restores N
targets of 16 nullio LUNs each, all with an offloaded 0.0.0.0:3260 portal,
at N/4 and N (--scale-targets, 16 in CI), and checks each step grows no
worse than linearly in the number of LUNs (with room for TCG noise). The times are printed for the record.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from cxgbit_ext.control import Control
from testbed import topo

from .conftest import CFS, TargetcliShell, insmod, lio_clear

LUNS = 16


@pytest.fixture
def module(lio: None, module_ko: Path) -> Iterator[None]:
    assert insmod(module_ko).returncode == 0
    Control().set_netdev("soft0", "*", check=False)
    try:
        yield
    finally:
        with topo.in_netns():
            lio_clear()
        assert subprocess.run(["rmmod", "cxgbit_ext"]).returncode == 0


def one_round(n: int, tmp: Path, capfd: pytest.CaptureFixture[str]) -> dict[str, float]:
    times: dict[str, float] = {}
    with topo.in_netns():
        t0 = time.monotonic()
        for i in range(n):
            topology.create(topology.Topology(
                iqn=f"iqn.2026-11.org.cxgbit-ext:scale{i:03d}", backstores=("nullio",) * LUNS, lun_size=1 << 20,
                portals=(("0.0.0.0", 3260),), offload=True, name_prefix=f"s{i:03d}",
            ))  # fmt: skip
        times["create"] = time.monotonic() - t0
        assert len(Control().portals()) == 1

        t0 = time.monotonic()
        sh = TargetcliShell(tmp / f"tcli{n}")
        out = sh.run("ls")
        times["ls"] = time.monotonic() - t0
        assert out.count("[offload: soft0 hcrc+dcrc+ddp+iso+rxagg on every netdev]") == n
        assert len(re.findall(r"o- s\d{3}_nullio\d+ ", out)) == n * LUNS

        save = tmp / f"save{n}.json"
        t0 = time.monotonic()
        sh.run(f"/ saveconfig savefile={save}")
        times["save"] = time.monotonic() - t0
        saved = json.loads(save.read_text())
        assert len(saved["targets"]) == n and len(saved["storage_objects"]) == n * LUNS

        sh.run("/ clearconfig confirm=true")
        t0 = time.monotonic()
        sh.run(f"/ restoreconfig savefile={save}")
        times["restore"] = time.monotonic() - t0
        from rtslib_fb import RTSRoot

        assert len(list(RTSRoot().storage_objects)) == n * LUNS
        assert Control().portals() == ["0.0.0.0:3260"]
        lio_clear()
    return times


@pytest.mark.timeout(1200)
def test_scale_grows_linearly(
    module: None, tmp_path: Path, capfd: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    big_n = request.config.getoption("--scale-targets")
    sizes = (big_n // 4, big_n)
    small, big = (one_round(n, tmp_path, capfd) for n in sizes)
    factor = sizes[1] / sizes[0]
    with capfd.disabled():
        for step in small:
            print(f"\nscale: {step:<8} {sizes[0]:>3} x {LUNS} LUNs {small[step]:6.1f} s   "
                  f"{sizes[1]:>3} x {LUNS} LUNs {big[step]:6.1f} s   ratio {big[step] / small[step]:.1f} "
                  f"(linear {factor:.0f})")  # fmt: skip
    assert CFS.exists()
    for step in small:
        # linear is `factor`; quadratic would be factor**2
        assert big[step] <= 2 * factor * max(small[step], 0.5), f"{step} grows faster than linearly"
