"""The work make test deals across kernels still runs somewhere: each of
libiscsi's suites on exactly one kernel, both kernels a share."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess

import pytest

from tests.vm import shares
from tests.vm import test_conformance as conf


def test_libiscsi_suite_shares_partition_every_suite() -> None:
    if shutil.which("iscsi-test-cu") is None:
        pytest.skip("iscsi-test-cu (libiscsi-bin) is not installed on this host: make deps installs it")
    listed = subprocess.run(["iscsi-test-cu", "-l"], capture_output=True, text=True, check=True).stdout.split()
    suites = [name for name in listed if name.count(".") == 1 and name.startswith("ALL.")]
    assert len(suites) > 30
    assert len(conf.SUITE_SHARES) == len(shares.SERIES)
    for suite in suites:
        hits = [p for p in conf.SUITE_SHARES if fnmatch.fnmatchcase(suite, p)]
        assert len(hits) == 1, f"{suite} matches {hits}"
    tests = [name for name in listed if name.count(".") == 2 and name.startswith("ALL.")]
    per_share = [sum(fnmatch.fnmatchcase(t.rsplit(".", 1)[0], p) for t in tests) for p in conf.SUITE_SHARES]
    # the split is by run time (test_conformance.SUITE_SHARES), not count,
    # but no kernel is left a token share
    assert min(per_share) > len(tests) / 4, f"tests per share {per_share}: one kernel gets most of them"


def test_every_series_owns_some_work_the_same_on_every_machine() -> None:
    keys = [f"tests/vm/test_pdu_suite.py::case{i}[stock]" for i in range(40)]
    assert {shares.owner(k) for k in keys} == set(shares.SERIES)
    # a case's kernel does not depend on the machine or the run (crc32 of
    # its id, the series in kernels.conf order): 6.12 skipped this one
    assert shares.owner("tests/vm/test_pdu_suite.py::test_bad_header_digest[stock]") == shares.SERIES[0]


def test_work_placed_by_share_goes_to_that_series() -> None:
    key = "tests/vm/test_scale.py::test_rtslib_restore_patch"
    for i, series in enumerate(shares.SERIES):
        assert shares.owner(key, share=i) == series
    assert shares.owner(key, share=len(shares.SERIES)) == shares.SERIES[0]
