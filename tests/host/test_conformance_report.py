"""The libiscsi side-by-side report: parsing CUnit XML and finding regressions."""

from __future__ import annotations

from conformance import libiscsi

XML = """<?xml version="1.0" ?>
<CUNIT_TEST_RUN_REPORT><CUNIT_RESULT_LISTING>
 <CUNIT_RUN_SUITE><CUNIT_RUN_SUITE_SUCCESS><SUITE_NAME> TestUnitReady </SUITE_NAME>
  <CUNIT_RUN_TEST_RECORD><CUNIT_RUN_TEST_SUCCESS><TEST_NAME> Simple </TEST_NAME>
  </CUNIT_RUN_TEST_SUCCESS></CUNIT_RUN_TEST_RECORD>
 </CUNIT_RUN_SUITE_SUCCESS></CUNIT_RUN_SUITE>
 <CUNIT_RUN_SUITE><CUNIT_RUN_SUITE_SUCCESS><SUITE_NAME> CompareAndWrite </SUITE_NAME>
  <CUNIT_RUN_TEST_RECORD><CUNIT_RUN_TEST_FAILURE><TEST_NAME> Simple </TEST_NAME><FILE_NAME> a.c </FILE_NAME>
  </CUNIT_RUN_TEST_FAILURE></CUNIT_RUN_TEST_RECORD>
  <CUNIT_RUN_TEST_RECORD><CUNIT_RUN_TEST_SUCCESS><TEST_NAME> Simple </TEST_NAME>
  </CUNIT_RUN_TEST_SUCCESS></CUNIT_RUN_TEST_RECORD>
 </CUNIT_RUN_SUITE_SUCCESS></CUNIT_RUN_SUITE>
</CUNIT_RESULT_LISTING></CUNIT_TEST_RUN_REPORT>
"""


def test_parse_keeps_a_failure_over_later_records() -> None:
    assert libiscsi.parse(XML) == {"TestUnitReady.Simple": "passed", "CompareAndWrite.Simple": "failed"}


def test_regressions_are_what_stock_passes_and_offload_does_not() -> None:
    stock = {"A.x": "passed", "B.y": "failed", "C.z": "passed"}
    offload = {"A.x": "passed", "B.y": "failed", "C.z": "failed"}
    c = libiscsi.Comparison(stock, offload)
    assert c.regressions == ["C.z"]
    md = libiscsi.markdown(c, "t")
    assert "stock LIO: 2/3 passed; offloaded (cxgbit_ext soft0): 1/3 passed" in md
    assert "| C.z | passed | failed **REGRESSION** |" in md
    assert 'failures="1"' in libiscsi.junit(c) and "fails on stock LIO too" in libiscsi.junit(c)


def test_flaky_candidates_are_not_regressions() -> None:
    c = libiscsi.Comparison({"A.x": "passed", "B.y": "passed"}, {"A.x": "failed", "B.y": "failed"}, flaky=("A.x",))
    assert c.candidates == ["A.x", "B.y"] and c.regressions == ["B.y"]
    md = libiscsi.markdown(c, "t")
    assert "flaky on rerun: A.x" in md and "| A.x | passed | failed (flaky on rerun) |" in md
