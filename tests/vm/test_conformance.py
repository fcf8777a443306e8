"""libiscsi iscsi-test-cu (all families) on stock LIO and on the offloaded
transport in the same boot, over the same LUN: the offloaded portal must pass
every test stock passes. Writes conformance.md and conformance-junit.xml to
the results directory (make conformance commits them)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import libiscsi
from cxgbit_ext import topology
from testbed import topo

from .conftest import offloaded_target, soft0_counters

IQN = "iqn.2026-11.org.cxgbit-ext:conformance"
OFF, STOCK = topo.LINKS
INITIATOR = "iqn.2026-11.org.cxgbit-ext:libiscsi"


@pytest.fixture(scope="module")
def conf_target(module_ko: Path) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=64 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


@pytest.mark.timeout(1800)
def test_offload_passes_what_stock_passes(conf_target: None) -> None:
    stock_url, offload_url = f"iscsi://{STOCK.tgt_ip}/{IQN}/0", f"iscsi://{OFF.tgt_ip}/{IQN}/0"
    stock = libiscsi.run(stock_url, INITIATOR)
    before = soft0_counters()["connections"]
    offload = libiscsi.run(offload_url, INITIATOR)
    after = soft0_counters()["connections"]
    assert after > before, "the offloaded run made no offloaded connection"
    cmp = libiscsi.confirm(libiscsi.Comparison(stock, offload), stock_url, offload_url, INITIATOR)
    kver = os.uname().release
    md = libiscsi.markdown(cmp, f"libiscsi iscsi-test-cu -t ALL, kernel {kver}")
    results = Path(os.environ.get("CXE_RESULTS", "/tmp"))
    (results / "conformance.md").write_text(md)
    (results / "conformance-junit.xml").write_text(libiscsi.junit(cmp))
    print(md.split("\n")[2])
    print("failing on stock:", [t for t, v in stock.items() if v != "passed"])
    print("failing offloaded:", [t for t, v in offload.items() if v != "passed"])
    assert len(stock) > 100, f"only {len(stock)} libiscsi tests ran"
    assert not cmp.regressions, f"offloaded portal fails what stock passes: {cmp.regressions}"
