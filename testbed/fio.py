"""fio runs with JSON output, for the VM tests, the demo and perf/."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any


class FioError(Exception):
    """fio failed or reported an I/O or verify error."""


@dataclass(frozen=True)
class JobResult:
    name: str
    read_iops: float
    write_iops: float
    read_bytes: int
    write_bytes: int
    read_bw_kib: float
    write_bw_kib: float
    error: int


def run(args: list[str], timeout: float = 600) -> dict[str, Any]:
    """Run fio with ``args`` and return its parsed JSON report."""
    cmd = ["fio", "--output-format=json", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return parse(cmd, p.returncode, p.stdout, p.stderr)


def parse(cmd: list[str], returncode: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The JSON report of a finished fio run; FioError when it failed."""
    # fio prints verify failures on stderr and may still produce JSON
    try:
        report: dict[str, Any] = json.loads(stdout[stdout.find("{") :])
    except ValueError as e:
        raise FioError(f"{' '.join(cmd)}: exit {returncode}, no JSON: {stderr.strip()[-2000:]}") from e
    if returncode != 0:
        raise FioError(f"{' '.join(cmd)}: exit {returncode}: {stderr.strip()[-2000:]}")
    return report


def jobs(report: dict[str, Any]) -> list[JobResult]:
    return [
        JobResult(
            name=j["jobname"],
            read_iops=j["read"]["iops"],
            write_iops=j["write"]["iops"],
            read_bytes=j["read"]["io_bytes"],
            write_bytes=j["write"]["io_bytes"],
            read_bw_kib=j["read"]["bw"],
            write_bw_kib=j["write"]["bw"],
            error=j["error"],
        )
        for j in report["jobs"]
    ]


def write_verify(
    dev: str,
    size: str = "64M",
    bs: str = "64k",
    iodepth: int = 32,
    loops: int = 1,
    bssplit: str | None = None,
    backlog: int | None = None,
) -> list[JobResult]:
    """Write ``size`` of random blocks with crc32c headers to ``dev``, then
    read all of it back and verify, ``loops`` times; raise FioError on any
    mismatch. ``bssplit`` (fio's, e.g. ``4k/50:64k/50``) mixes block sizes
    instead of ``bs``. With ``backlog`` N, fio reads back and verifies
    every N blocks written as it goes (its verify_backlog), so that writes
    never stop for a whole read pass; every block is still verified."""
    sizes = f"--bssplit={bssplit}" if bssplit else f"--bs={bs}"
    interleave = [f"--verify_backlog={backlog}"] if backlog else []
    report = run(
        [
            f"--name=verify:{dev}", f"--filename={dev}", "--rw=randwrite", sizes,
            f"--size={size}", "--direct=1", "--ioengine=libaio", f"--iodepth={iodepth}",
            "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--randrepeat=0", f"--loops={loops}",
            *interleave,
        ]
    )  # fmt: skip
    res = jobs(report)
    bad = [r for r in res if r.error]
    if bad:
        raise FioError(f"fio verify on {dev}: errors {[(r.name, r.error) for r in bad]}")
    return res
