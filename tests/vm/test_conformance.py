"""libiscsi iscsi-test-cu on stock LIO and on the offloaded transport in the
same boot, over the same LUN: the offloaded portal must pass every test stock
passes. make test deals libiscsi's suites across kernels.conf's series (each
suite on one kernel, both transports); make conformance runs every suite
(--every-share). The offloaded side is soft0, then the cxgb4 backend's
shipped glue on the cxgb4 stand-in, then mainline cxgbit on it, the oracle
(tests/vm/c4sim.py, which deals these two and their chip over the kernels).
Writes conformance.md and conformance-junit.xml to the results directory
(make conformance commits them)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import libiscsi
from cxgbit_ext import topology
from testbed import topo

from . import c4sim
from .conftest import offloaded_target, soft0_counters
from .shares import MINE, SERIES

IQN = "iqn.2026-11.org.cxgbit-ext:conformance"
OFF, STOCK = topo.LINKS
INITIATOR = "iqn.2026-11.org.cxgbit-ext:libiscsi"
# iscsi-test-cu -t patterns (fnmatch on FAMILY.SUITE) that split the ALL
# family's suites in two, for two series. By run time, not count: the first
# share (98 tests with Verify*) took 196 s where the second (132) took 82 s,
# so the Verify suites go to the second.
SUITE_SHARES = ("ALL.[CEGW]*", "ALL.[!CEGW]*")


def suites_here(config: pytest.Config) -> str:
    """The -t pattern this kernel runs: --libiscsi-tests, else its share."""
    every = config.getoption("--every-share")
    if config.getoption("--libiscsi-tests"):
        return str(config.getoption("--libiscsi-tests"))
    if every or MINE is None or len(SERIES) != len(SUITE_SHARES):
        return "ALL"
    return SUITE_SHARES[SERIES.index(MINE)]


# The offloaded side: soft0; our cxgb4 backend on the cxgb4 stand-in; and
# mainline cxgbit on it, the oracle (their chip and kernel dealt by c4sim)
OFFLOADED = {
    "soft0": "cxgbit_ext soft0",
    "cxgb4sim": "cxgbit_ext, cxgb4 backend on the cxgb4 stand-in's {chip}",
    "mainline": "mainline cxgbit on the cxgb4 stand-in's {chip}",
}


@pytest.fixture(scope="module", params=list(OFFLOADED))
def conf_target(module_ko: Path, kver: str, request: pytest.FixtureRequest) -> Iterator[tuple[str, str, str]]:
    """The target; its offloaded side's name, portal address and chip."""
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=64 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    if request.param == "soft0":
        with offloaded_target(module_ko, t):
            yield request.param, OFF.tgt_ip, ""
        return
    c4sim.cxgb4_test_only(
        request.config, f"libiscsi through {'mainline cxgbit' if request.param == 'mainline' else 'ours'}"
    )
    c4sim.skip_unless_here(request.config, "libiscsi", c4sim.LIBISCSI_SHARE)
    chip = c4sim.chip_here(request.config)
    uld = "cxgbit_ext" if request.param == "cxgb4sim" else "cxgbit"
    with c4sim.suite_target(module_ko, t, kver, chip, uld):
        yield request.param, c4sim.LINK.tgt_ip, chip


_stock_runs: dict[str, dict[str, str]] = {}


def offloaded_connections(side: str) -> int:
    """Connections offloaded so far: soft0's, or the stand-in's chip's."""
    if side == "soft0":
        return soft0_counters()["connections"]
    return c4sim.stats()["established"]


@pytest.mark.timeout(1800)
def test_offload_passes_what_stock_passes(conf_target: tuple[str, str, str], request: pytest.FixtureRequest) -> None:
    side, ip, chip = conf_target
    stock_url, offload_url = f"iscsi://{STOCK.tgt_ip}/{IQN}/0", f"iscsi://{ip}/{IQN}/0"
    suites = suites_here(request.config)
    timeout = float(request.config.getoption("--libiscsi-timeout"))
    print(f"libiscsi suites: {suites}")
    # stock's portal is the same for every offloaded side: one run of it
    if suites not in _stock_runs:
        _stock_runs[suites] = libiscsi.run(stock_url, INITIATOR, timeout, test=suites)
    stock = _stock_runs[suites]
    before = offloaded_connections(side)
    offload = libiscsi.run(offload_url, INITIATOR, timeout, test=suites)
    after = offloaded_connections(side)
    assert after > before, "the offloaded run made no offloaded connection"
    cmp = libiscsi.confirm(libiscsi.Comparison(stock, offload), stock_url, offload_url, INITIATOR)
    kver = os.uname().release
    offloaded = OFFLOADED[side].format(chip=chip.upper())
    through = "" if side == "soft0" else f", offloaded side: {offloaded}"
    md = libiscsi.markdown(cmp, f"libiscsi iscsi-test-cu -t {suites}, kernel {kver}{through}", offloaded)
    results = Path(os.environ.get("CXE_RESULTS", "/tmp"))
    name = "conformance" if side == "soft0" else f"conformance-{side}-{chip}"
    (results / f"{name}.md").write_text(md)
    (results / f"{name}-junit.xml").write_text(libiscsi.junit(cmp))
    print(md.split("\n")[2])
    print("failing on stock:", [t for t, v in stock.items() if v != "passed"])
    print("failing offloaded:", [t for t, v in offload.items() if v != "passed"])
    listed = [
        t.removeprefix("ALL.")
        for t in libiscsi.listed()
        if t.count(".") == 2 and fnmatch.fnmatchcase(t.rsplit(".", 1)[0], suites if "." in suites else f"{suites}.*")
    ]
    if not request.config.getoption("--libiscsi-tests"):
        assert len(listed) > 50, f"only {len(listed)} libiscsi tests match {suites}"
    ran = set(stock) & set(offload) & set(listed)
    assert len(ran) >= 0.9 * len(listed), f"only {len(ran)} of the {len(listed)} libiscsi tests of {suites} ran"
    assert not cmp.regressions, f"offloaded portal fails what stock passes: {cmp.regressions}"
