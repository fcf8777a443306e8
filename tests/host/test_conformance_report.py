"""The libiscsi side-by-side report: parsing CUnit XML and finding regressions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def fake_test_cu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """An iscsi-test-cu on PATH that runs body (sh) in the run's directory."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    tool = bin_ / "iscsi-test-cu"
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")


def test_a_run_that_dies_mid_suite_names_the_signal_and_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = XML[: XML.index("<CUNIT_RUN_TEST_RECORD><CUNIT_RUN_TEST_FAILURE>")]
    (tmp_path / "cut.xml").write_text(cut)
    script = (
        f"cp {tmp_path}/cut.xml CUnitAutomated-Results.xml\necho 'Test sending invalid iSCSI DataSN'\nkill -SEGV $$"
    )
    fake_test_cu(tmp_path, monkeypatch, script)
    with pytest.raises(RuntimeError) as e:
        libiscsi.run("iscsi://198.18.0.1/iqn.x/0", "iqn.i", timeout=30, test="ALL.iSCSIdatasn*")
    msg = str(e.value)
    assert "was killed by SIGSEGV" in msg and "in suite CompareAndWrite" in msg and "after 1 test records" in msg
    assert "Test sending invalid iSCSI DataSN" in msg


def test_a_run_that_writes_nothing_says_how_it_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_test_cu(tmp_path, monkeypatch, "echo 'Failed to connect to SCSI device 0' >&2; exit 10")
    with pytest.raises(RuntimeError, match=r"exited 10 before writing any results(.|\n)*Failed to connect"):
        libiscsi.run("iscsi://198.18.0.1/iqn.x/0", "iqn.i", timeout=30)


def test_a_finished_report_is_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "whole.xml").write_text(XML)
    fake_test_cu(tmp_path, monkeypatch, f"cp {tmp_path}/whole.xml CUnitAutomated-Results.xml\nexit 1")
    assert libiscsi.run("iscsi://198.18.0.1/iqn.x/0", "iqn.i", timeout=30)["CompareAndWrite.Simple"] == "failed"


def test_a_broken_connection_does_not_kill_the_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libiscsi writes a PDU's data with writev(), which raises SIGPIPE
    when the target has reset the connection: the tool runs with SIGPIPE
    ignored, so the write fails with EPIPE and libiscsi reconnects."""
    (tmp_path / "whole.xml").write_text(XML)
    fake_test_cu(tmp_path, monkeypatch, f"kill -PIPE $$\ncp {tmp_path}/whole.xml CUnitAutomated-Results.xml\nexit 1")
    assert libiscsi.run("iscsi://198.18.0.1/iqn.x/0", "iqn.i", timeout=30)["TestUnitReady.Simple"] == "passed"
