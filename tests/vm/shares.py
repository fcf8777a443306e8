"""Work dealt across the kernels of kernels.conf, so that make test runs
each piece on one kernel instead of all of them.

Each kernel of kernels.conf belongs to a series; a piece of work (a matrix
row, a libiscsi suite, the stock side of a PDU case) goes to one series,
and every series gets a share. A kernel of no series there (a one-off
testbed/run) runs every piece; ``--every-share`` runs every libiscsi suite
and every stock PDU case on any kernel (matrix rows go by kernel only).
"""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]


def kernel_series() -> tuple[list[str], str | None]:
    """kernels.conf's series, and the one this kernel belongs to (None if
    it is of no series there)."""
    conf = [ln.strip() for ln in (TOP / "kernels.conf").read_text().splitlines()]
    series = [ln for ln in conf if ln and not ln.startswith("#")]
    mine = subprocess.run([TOP / "scripts/kernels", "series", os.uname().release], capture_output=True, text=True)
    return series, (mine.stdout.strip() if mine.returncode == 0 else None)


SERIES, MINE = kernel_series()


def owner(key: str, share: int | None = None) -> str:
    """The series that runs the piece of work named ``key`` (stable across
    runs and machines), or the series of index ``share`` in kernels.conf's
    order when the work says which (a long test placed to balance the
    kernels' batches)."""
    if share is not None:
        return SERIES[share % len(SERIES)]
    return SERIES[zlib.crc32(key.encode()) % len(SERIES)]


def runs_here(key: str, every: bool = False, share: int | None = None) -> bool:
    return every or MINE is None or owner(key, share) == MINE
