"""libiscsi iscsi-test-cu on stock LIO and on the offloaded transport in the
same boot, over the same LUN: the offloaded portal must pass every test stock
passes. make test deals libiscsi's suites across kernels.conf's series (each
suite on one kernel, both transports); make conformance runs every suite
(--every-share); --cxgb4-model t5|t6 runs the offloaded side through the
cxgb4 backend's device glue on a modelled adapter of that chip
(adapters/cxgb4/modeldev.c).
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

from .conftest import CFS, offloaded_target, soft0_counters
from .shares import MINE, SERIES

IQN = "iqn.2026-11.org.cxgbit-ext:conformance"
OFF, STOCK = topo.LINKS
INITIATOR = "iqn.2026-11.org.cxgbit-ext:libiscsi"
# iscsi-test-cu -t patterns (fnmatch on FAMILY.SUITE) that split the ALL
# family's suites in two, for two series. By run time, not count: the first
# share (98 tests with Verify*) took 196 s where the second (132) took 82 s,
# so the Verify suites go to the second.
SUITE_SHARES = ("ALL.[CEGW]*", "ALL.[!CEGW]*")


def suites_here(every: bool) -> str:
    """The -t pattern this kernel runs."""
    if every or MINE is None or len(SERIES) != len(SUITE_SHARES):
        return "ALL"
    return SUITE_SHARES[SERIES.index(MINE)]


@pytest.fixture(scope="module")
def conf_target(module_ko: Path, request: pytest.FixtureRequest) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=64 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    c4 = request.config.getoption("--cxgb4-model")
    add = (lambda: (CFS / "cxgb4_models").write_text(f"add m0 chip={c4} netdev={OFF.tgt_dev}\n")) if c4 else None
    with offloaded_target(module_ko, t, before=add):
        yield


def offloaded_connections() -> int:
    """Connections offloaded so far: soft0's, or a modelled cxgb4 adapter's."""
    for line in (CFS / "backends").read_text().splitlines():
        for word in line.split():
            if word.startswith("m0=") and "/accepted:" in word:
                return int(word.split("/accepted:")[1].split("/")[0])
    return soft0_counters()["connections"]


@pytest.mark.timeout(1800)
def test_offload_passes_what_stock_passes(conf_target: None, request: pytest.FixtureRequest) -> None:
    stock_url, offload_url = f"iscsi://{STOCK.tgt_ip}/{IQN}/0", f"iscsi://{OFF.tgt_ip}/{IQN}/0"
    suites = suites_here(request.config.getoption("--every-share"))
    print(f"libiscsi suites: {suites}")
    stock = libiscsi.run(stock_url, INITIATOR, test=suites)
    before = offloaded_connections()
    offload = libiscsi.run(offload_url, INITIATOR, test=suites)
    after = offloaded_connections()
    assert after > before, "the offloaded run made no offloaded connection"
    cmp = libiscsi.confirm(libiscsi.Comparison(stock, offload), stock_url, offload_url, INITIATOR)
    kver = os.uname().release
    c4 = request.config.getoption("--cxgb4-model")
    through = f", offloaded side through the cxgb4 backend on a modelled {c4.upper()}" if c4 else ""
    offloaded = f"cxgbit_ext, cxgb4 backend on a modelled {c4.upper()}" if c4 else "cxgbit_ext soft0"
    md = libiscsi.markdown(cmp, f"libiscsi iscsi-test-cu -t {suites}, kernel {kver}{through}", offloaded)
    results = Path(os.environ.get("CXE_RESULTS", "/tmp"))
    (results / "conformance.md").write_text(md)
    (results / "conformance-junit.xml").write_text(libiscsi.junit(cmp))
    print(md.split("\n")[2])
    print("failing on stock:", [t for t, v in stock.items() if v != "passed"])
    print("failing offloaded:", [t for t, v in offload.items() if v != "passed"])
    listed = [
        t.removeprefix("ALL.")
        for t in libiscsi.listed()
        if t.count(".") == 2 and fnmatch.fnmatchcase(t.rsplit(".", 1)[0], suites if "." in suites else f"{suites}.*")
    ]
    assert len(listed) > 50, f"only {len(listed)} libiscsi tests match {suites}"
    ran = set(stock) & set(offload) & set(listed)
    assert len(ran) >= 0.9 * len(listed), f"only {len(ran)} of the {len(listed)} libiscsi tests of {suites} ran"
    assert not cmp.regressions, f"offloaded portal fails what stock passes: {cmp.regressions}"
