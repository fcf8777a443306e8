"""libiscsi's iscsi-test-cu against two portals, results side by side.

``run(url)`` runs every test family (``-t ALL``, destructive tests allowed)
in CUnit XML mode and returns {test: "passed" | "failed"}; ``compare``
lines two such runs up; ``markdown`` and ``junit`` write the table.
"""

from __future__ import annotations

import re
import signal
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape


def run(url: str, initiator: str, timeout: float = 1200, test: str = "ALL", url2: str | None = None) -> dict[str, str]:
    """Run iscsi-test-cu -t test (ALL, or ALL.SUITE.TEST) on url; {SUITE.TEST: passed|failed}.

    The tests that need a second I_T nexus log in as initiator + "-2":
    through url too, or, given url2 (the same logical unit through another
    target port), through url2 (the tool's multipath mode, which first
    checks that both report the same identifiers)."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            p = subprocess.run(
                ["iscsi-test-cu", "-x", "-d", "-t", test, "-i", initiator, "-I", initiator + "-2", url,
                 *([url2] if url2 else [])],
                cwd=tmp, capture_output=True, text=True, timeout=timeout,
                # SIGPIPE stays ignored, as Python has it: libiscsi writes a
                # PDU's data with writev(), not send(MSG_NOSIGNAL), and a
                # target that resets the connection at ERL 0 (iSCSIdatasn
                # does that on purpose) would kill the tool mid-suite
                restore_signals=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            raise RuntimeError(f"iscsi-test-cu -t {test} on {url} did not end in {timeout:.0f} s; "
                               f"its output ended with:\n{tail(out)}") from e  # fmt: skip
        xmls = sorted(Path(tmp).glob("*Results.xml"))
        xml = xmls[0].read_text(errors="replace") if xmls else ""
        if "</CUNIT_TEST_RUN_REPORT>" not in xml:
            raise RuntimeError(f"iscsi-test-cu -t {test} on {url} {ended(p.returncode)} {where(xml)}; "
                               f"its output ended with:\n{tail(p.stdout)}\n{tail(p.stderr)}")  # fmt: skip
        return parse(xml)


def ended(returncode: int) -> str:
    """How a process ended, from its return code: 'exited 1', 'was killed by SIGSEGV'."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited {returncode}"


def where(xml: str) -> str:
    """Where a CUnit XML report that was never finished stops: its last suite."""
    if not xml:
        return "before writing any results"
    suites = re.findall(r"<SUITE_NAME>\s*(.*?)\s*</SUITE_NAME>", xml)
    tests = len(re.findall(r"<CUNIT_RUN_TEST_RECORD>", xml))
    return f"after {tests} test records, in suite {suites[-1] if suites else '(none)'}, its report unfinished"


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.splitlines()[-lines:])


def listed() -> list[str]:
    """Every test iscsi-test-cu knows, as FAMILY.SUITE.TEST (and the
    FAMILY and FAMILY.SUITE lines of its -l listing)."""
    return subprocess.run(["iscsi-test-cu", "-l"], capture_output=True, text=True, check=True).stdout.split()


def parse(xml: str) -> dict[str, str]:
    """CUnit automated-run XML -> {SUITE.TEST: passed|failed}."""
    root = ET.fromstring(xml)
    out: dict[str, str] = {}
    for suite in root.iter():
        if suite.tag not in ("CUNIT_RUN_SUITE_SUCCESS", "CUNIT_RUN_SUITE_FAILURE"):
            continue
        name = (suite.findtext("SUITE_NAME") or "").strip()
        for rec in suite.iter("CUNIT_RUN_TEST_RECORD"):
            for res in rec:
                test = (res.findtext("TEST_NAME") or "").strip()
                status = "passed" if res.tag == "CUNIT_RUN_TEST_SUCCESS" else "failed"
                key = f"{name}.{test}"
                # a test failing several assertions has several records
                if out.get(key) != "failed":
                    out[key] = status
    return out


@dataclass(frozen=True)
class Comparison:
    stock: dict[str, str]
    offload: dict[str, str]
    # tests that looked like regressions but passed offloaded (or failed on
    # stock) when run again on their own: timing-dependent, reported apart
    flaky: tuple[str, ...] = ()

    @property
    def tests(self) -> list[str]:
        return sorted(set(self.stock) | set(self.offload))

    @property
    def regressions(self) -> list[str]:
        """Tests stock passes and the offloaded portal does not, reruns included."""
        return [t for t in self.candidates if t not in self.flaky]

    @property
    def candidates(self) -> list[str]:
        """Tests stock passed and the offloaded portal did not, in the full runs."""
        return [t for t in self.tests if self.stock.get(t) == "passed" and self.offload.get(t) != "passed"]

    def counts(self, side: dict[str, str]) -> tuple[int, int]:
        return sum(v == "passed" for v in side.values()), len(side)


def markdown(c: Comparison, title: str, offloaded: str = "cxgbit_ext soft0") -> str:
    sp, sn = c.counts(c.stock)
    op, on = c.counts(c.offload)
    lines = [
        f"# {title}", "",
        f"stock LIO: {sp}/{sn} passed; offloaded ({offloaded}): {op}/{on} passed; "
        f"regressions (stock passes, offload does not): {len(c.regressions)}; "
        f"flaky on rerun: {', '.join(c.flaky) or 'none'}", "",
        "| test | stock | offload |", "|---|---|---|",
    ]  # fmt: skip
    for t in c.tests:
        s, o = c.stock.get(t, "-"), c.offload.get(t, "-")
        mark = " **REGRESSION**" if t in c.regressions else " (flaky on rerun)" if t in c.flaky else ""
        lines.append(f"| {t} | {s} | {o}{mark} |")
    return "\n".join(lines) + "\n"


def junit(c: Comparison) -> str:
    cases = []
    for t in c.tests:
        if t in c.regressions:
            body = f'<failure message="stock passes, offload {escape(c.offload.get(t, "missing"))}"/>'
        elif c.offload.get(t) != "passed":
            body = f'<skipped message="fails on stock LIO too ({escape(c.stock.get(t, "missing"))})"/>'
        else:
            body = ""
        cases.append(f'  <testcase classname="libiscsi" name="{escape(t)}">{body}</testcase>')
    return (
        f'<?xml version="1.0"?>\n<testsuite name="libiscsi-offload-vs-stock" tests="{len(c.tests)}" '
        f'failures="{len(c.regressions)}">\n' + "\n".join(cases) + "\n</testsuite>\n"
    )


def confirm(c: Comparison, stock_url: str, offload_url: str, initiator: str, tries: int = 3) -> Comparison:
    """Rerun each candidate regression on its own on both portals.

    A candidate is a regression only if, run alone, stock passes it and the
    offloaded portal fails it every time; otherwise it is flaky.
    """
    flaky = []
    for t in c.candidates:
        for _ in range(tries):
            off = run(offload_url, initiator, test=f"ALL.{t}").get(t)
            st = run(stock_url, initiator, test=f"ALL.{t}").get(t)
            if off == "passed" or st != "passed":
                flaky.append(t)
                break
    return Comparison(c.stock, c.offload, tuple(flaky))
