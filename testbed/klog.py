"""Kernel log checks shared by the host runner and the guest test fixtures.

The VM suite fails on any oops, WARN, BUG, lockdep splat or hung-task report;
this module holds the one list of what counts as such a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Each entry matches one kind of report the kernel prints when something is
# wrong. They are anchored on the texts of kernel/panic.c, lib/bug.c,
# kernel/locking/lockdep.c, kernel/hung_task.c, kernel/watchdog.c, mm/ and
# the RCU stall detector.
BAD_PATTERNS: tuple[str, ...] = (
    r"\bOops\b",
    r"\bWARNING: CPU: \d+ PID: \d+",
    r"------------\[ cut here \]------------",
    r"\bBUG: ",
    r"kernel BUG at ",
    r"\bgeneral protection fault\b",
    r"Kernel panic",
    r"possible circular locking dependency",
    r"possible recursive locking detected",
    r"inconsistent lock state",
    r"suspicious RCU usage",
    r"INFO: task \S+ blocked for more than \d+ seconds",
    r"\bsoft lockup\b",
    r"hard LOCKUP",
    r"rcu: INFO: rcu_\w+ (self-)?detected stalls",
    r"refcount_t: ",
    r"list_(add|del) corruption",
    r"UBSAN: ",
    r"KASAN: ",
    r"unreferenced object 0x",
    r"Call Trace:",
)
_BAD = re.compile("|".join(f"(?:{p})" for p in BAD_PATTERNS))


def bad_lines(lines: Iterable[str]) -> list[str]:
    """Return the lines of a kernel log that report a kernel problem."""
    return [line.rstrip("\n") for line in lines if _BAD.search(line)]


def report(lines: Iterable[str], before: int = 2, after: int = 30, most: int = 120) -> list[str]:
    """The bad lines with the context that names the culprit.

    A WARN's "workqueue: ... is flushing ..." line comes before its "cut
    here", and the call trace after it: keep a few lines either side of
    every bad line, and "..." where lines were left out.
    """
    lines = [line.rstrip("\n") for line in lines]
    keep: set[int] = set()
    for i, line in enumerate(lines):
        if _BAD.search(line):
            keep.update(range(max(0, i - before), min(len(lines), i + after + 1)))
    out: list[str] = []
    last = -1
    for n, i in enumerate(sorted(keep)):
        if i != last + 1:
            out.append("...")
        if len(out) >= most:
            out.append(f"... ({len(keep) - n} more lines of context)")
            break
        out.append(lines[i])
        last = i
    return out
