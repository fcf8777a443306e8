"""SCSI-3 persistent reservations on an offloaded portal and on stock, same
boot, same LUN: libiscsi's reservation suites (two I_T nexuses, its -i and
-I initiator names) must pass on both, not merely agree. LIO keeps every
device's reservation state in <dbroot>/pr and fails each PERSISTENT RESERVE
OUT with NOT READY when it cannot write there, so this also checks that a
target made by the project's tools has that directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import libiscsi
from cxgbit_ext import reservations, topology
from testbed import topo

from .conftest import offloaded_target, soft0_counters

IQN = "iqn.2026-11.org.cxgbit-ext:reservations"
OFF, STOCK = topo.LINKS  # soft0 serves tgt0; tgt1 stays stock TCP
INITIATOR = "iqn.2026-11.org.cxgbit-ext:pr-a"
# libiscsi's reservation suites: PERSISTENT RESERVE IN and OUT
SUITES = "ALL.Pr*"


@pytest.fixture(scope="module")
def pr_target(module_ko: Path) -> Iterator[None]:
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=16 * topology.MiB,
                          portals=(("0.0.0.0", 3260),), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t):
        yield


@pytest.mark.timeout(900)
def test_reservation_suites_pass_offloaded_and_stock(pr_target: None) -> None:
    stock = libiscsi.run(f"iscsi://{STOCK.tgt_ip}/{IQN}/0", INITIATOR, test=SUITES)
    before = soft0_counters()["connections"]
    offload = libiscsi.run(f"iscsi://{OFF.tgt_ip}/{IQN}/0", INITIATOR, test=SUITES)
    assert soft0_counters()["connections"] > before, "the offloaded run made no offloaded connection"
    assert len(stock) >= 20 and set(stock) == set(offload), (sorted(stock), sorted(offload))
    failed = {side: sorted(t for t, v in run.items() if v != "passed") for side, run in
              (("stock", stock), ("offloaded", offload))}  # fmt: skip
    where = reservations.state_dir()
    there = "exists" if where.is_dir() else "is missing"
    assert failed == {"stock": [], "offloaded": []}, f"{failed} ({where} {there})"
