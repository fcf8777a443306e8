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
# the RCU stall detector; and, for the debug kernels of
# scripts/build-debug-kernel, of KASAN, UBSAN, lib/debugobjects.c,
# lib/list_debug.c and mm/kmemleak.c (the texts of Linux 6.1 and 6.12). Most
# of those reports also carry a "BUG: ", a WARN or a "Call Trace:"; each has
# its own entry all the same, so that none depends on another's format.
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
    # lockdep's other reports (each a "WARNING: " line of its own, no CPU/PID)
    r"WARNING: (?:possible irq lock inversion dependency detected|\S+-safe -> \S+-unsafe lock order detected"
    r"|bad (?:unlock balance|contention) detected|held lock freed|\S+ still has locks held"
    r"|lock held when returning to user space|Nested lock was not taken|chain_key collision)",
    r"INFO: task \S+ blocked for more than \d+ seconds",
    r"\bsoft lockup\b",
    r"hard LOCKUP",
    r"rcu: INFO: rcu_\w+ (self-)?detected stalls",
    r"refcount_t: ",
    r"list_(add|del) corruption",
    r"list_add double add",
    r"UBSAN: ",
    r"KASAN: ",
    # debugobjects: every "ODEBUG: " line but CONFIG_DEBUG_OBJECTS_SELFTEST's
    # success is a misuse of an object or the checker giving up
    r"ODEBUG: (?!selftest passed)",
    # kmemleak: an object a scan found unreferenced (in the log with
    # kmemleak.verbose=1, and in /sys/kernel/debug/kmemleak, which
    # testbed/run saves after the batch), or the checker disabled by its own
    # error. Not a scan's "N new suspected memory leaks": testbed/run's scan
    # before the batch prints it for the boot's, which it sets aside
    r"unreferenced object 0x",
    r"kmemleak: (?:Kernel memory leak detector disabled|Memory pool empty|Cannot )",
    r"Call Trace:",
)
_BAD = re.compile("|".join(f"(?:{p})" for p in BAD_PATTERNS))


# A kernel that has stopped for good: panic()'s line (kernel/panic.c), and
# the early-exception halt before the console is up (arch/x86's
# early_fixup_exception). With panic=-1 the first reboots the guest, which
# virtme-ng does not boot again; the second halts it.
_STOPPED = re.compile(r"Kernel panic - not syncing|PANIC: early exception")


def stopped(lines: Iterable[str]) -> str | None:
    """The line saying the kernel stopped for good, if one does."""
    return next((line for line in lines if _STOPPED.search(line)), None)


# One WARN is not ours, nor LIO's: the open-iscsi initiator in the same guest
# tears a session down on an iscsi_ctrl workqueue (WQ_MEM_RECLAIM), and
# scsi_remove_target -> device_del -> pm_runtime_remove flushes the SCSI
# target's runtime-PM work on pm_wq (not WQ_MEM_RECLAIM) when a logout races
# it. check_flush_dependency() WARNs once per boot (6.1 and 6.12 both).
# Only a "cut here" block whose workqueue line says exactly that is set aside,
# and every one is reported as such (known_initiator_warns).
_INITIATOR_FLUSH = re.compile(
    r"workqueue: WQ_MEM_RECLAIM iscsi_ctrl_\d+:\d+:__iscsi_unbind_session \[scsi_transport_iscsi\] "
    r"is flushing !WQ_MEM_RECLAIM pm:pm_runtime_work"
)
_CUT = re.compile(r"------------\[ cut here \]------------")
_END = re.compile(r"---\[ end trace [0-9a-f]+ \]---")


def _initiator_blocks(lines: list[str]) -> set[int]:
    """Indices of the lines of the known initiator-side WARN blocks."""
    out: set[int] = set()
    for i, line in enumerate(lines):
        if not _CUT.search(line) or not any(_INITIATOR_FLUSH.search(x) for x in lines[i + 1 : i + 3]):
            continue
        end = next((j for j in range(i + 1, min(len(lines), i + 200)) if _END.search(lines[j])), None)
        if end is not None:
            out.update(range(i, end + 1))
    return out


# A failure the fault-injection lane asked for (failslab, fail_page_alloc
# with verbose=2) is logged with its stack: "FAULT_INJECTION: forcing a
# failure." then the dump_stack() block to its "</TASK>"; and the allocator
# reports a failed allocation made without __GFP_NOWARN ("page allocation
# failure", "vmalloc error") with a stack, which shows should_fail when the
# failure was injected. Only those blocks are set aside; what the failure
# then causes is read as any other line. An allocator's report with no
# should_fail on its stack is the injected failure's too when it comes
# right after that failure's report, from the same task: the failure was
# forced in an allocation the reported one made (vmalloc's vm_struct).
# Two CPUs' reports can interleave
# (printk keeps lines whole, not reports): each start owns the first
# "</TASK>" after it that no earlier start took.
_INJECTED = re.compile(r"FAULT_INJECTION: forcing a failure")
_ALLOC_FAILED = re.compile(r": (?:page allocation failure|vmalloc error): ")
_SHOULD_FAIL = re.compile(r"\bshould_fail")
_TASK_END = re.compile(r"</TASK>")


def _injected_blocks(lines: list[str]) -> set[int]:
    """Indices of the lines of injected failures' own reports."""
    out: set[int] = set()
    taken: set[int] = set()
    last: tuple[int, str | None] | None = None  # the last injected report: its end, its task
    for i, line in enumerate(lines):
        if last is not None and _KMEMLEAK_AREA.search(line):
            out.add(i)
            continue
        injected, alloc = _INJECTED.search(line), _ALLOC_FAILED.search(line)
        if not injected and not alloc:
            continue
        end = _report_end(lines, i, taken)
        if end is None:
            continue
        taken.add(end)
        task = _task(lines[i : i + 4])
        if injected:
            last = (end, task)
        elif not any(_SHOULD_FAIL.search(x) for x in lines[i:end]):
            nested = last is not None and 0 < i - last[0] <= _NESTED_GAP and task is not None and task == last[1]
            if not nested:
                continue
        out.update(range(i, end + 1))
    return out


# kmemleak's own allocation of a scan area failed: it scans the whole
# object instead and goes on (mm/kmemleak.c, once per boot). After an
# injected failure that is the injection's doing; before any, it counts.
_KMEMLEAK_AREA = re.compile(r"kmemleak: Cannot allocate a scan area, scanning the full object")
_PID = re.compile(r"\bCPU: \d+ (?:UID: \d+ )?PID: (\d+) ")
_NESTED_GAP = 3  # lines from an injected report's end to the allocator's report of it
# a report's lines at most: a 32 KiB stack (KASAN's) of 8-byte words, each a "? " frame
_REPORT_MOST = 4200


def _report_end(lines: list[str], start: int, taken: set[int]) -> int | None:
    """The "</TASK>" ending the report that starts at start: the first one
    no earlier report took, with no second bad line before it (one that is
    there means this report was cut short and another began). A stack is
    as long as the kernel's stack is deep: KASAN's "? " frames make 100
    lines and more."""
    seen_bad = False
    for j in range(start + 1, min(len(lines), start + _REPORT_MOST)):
        if j in taken:
            continue
        if _TASK_END.search(lines[j]):
            return j
        if _BAD.search(lines[j]):
            if seen_bad:
                return None
            seen_bad = True
    return None


def _task(lines: list[str]) -> str | None:
    """The PID on a report's "CPU: ... PID: n" line."""
    return next((m.group(1) for x in lines if (m := _PID.search(x))), None)


# KCSAN (the -kcsan debug kernels) reports the data races it samples in
# the whole kernel, and the core's known ones (net, mm, fs: syzbot lists
# hundreds) come in any batch. The lane judges the module: a report with no
# frame of one of its modules ([cxgbit_ext], [cxgbit_ext_cxgb4], the
# example backend's) in either access's stack, nor in its title, is set
# aside and listed (kcsan_elsewhere); one with such a frame counts as any
# report. Only the frames that made an access are read: an access "by
# interrupt" has the interrupted task's frames below the interrupt's entry
# (handle_softirqs, __do_softirq, an IRQ's sysvec_/asm_ stub), which did
# not make it (a softirq run as the module's send enabled BHs); and the
# trailer after "Reported by ..." names the reporting CPU and the work it
# ran ("Workqueue: events cxe_gate_work [cxgbit_ext]"), not an access.
# kernel/kcsan/report.c frames each report with a rule of "="s; a report
# without its closing rule within _KCSAN_MOST lines is not read as whole,
# and counts.
# (at a line's start, after its timestamp: a test's teardown quotes reports)
_KCSAN = re.compile(r"^(?:\[[^]]*\] )?BUG: KCSAN: ")
_KCSAN_RULE = re.compile(r"^(?:\[[^]]*\] ?)?={40,}\s*$")
_KCSAN_MOST = 200
_OURS = re.compile(r"\[cxgbit_ext\w*\]")
_KCSAN_TRAILER = re.compile(r"Reported by Kernel Concurrency Sanitizer on:")
_KCSAN_ACCESS = re.compile(r"\bto 0x[0-9a-f]+ of \d+ bytes by ")
_IRQ_ENTRY = re.compile(
    r"^(?:\[[^]]*\])? +(?:handle_softirqs|__do_softirq|do_softirq|__irq_exit_rcu|irq_exit_rcu"
    r"|(?:asm_|__)?sysvec_\w+|asm_common_interrupt|common_interrupt)\+"
)


def _kcsan_blocks(lines: list[str]) -> dict[int, range]:
    """The KCSAN reports with no frame of the module: title line -> lines."""
    out: dict[int, range] = {}
    for i, line in enumerate(lines):
        if not _KCSAN.search(line):
            continue
        start = i - 1 if i > 0 and _KCSAN_RULE.search(lines[i - 1]) else i
        end = next((j for j in range(i + 1, min(len(lines), i + _KCSAN_MOST)) if _KCSAN_RULE.search(lines[j])), None)
        if end is None:
            continue
        if not _kcsan_ours(lines[i:end]):
            out[i] = range(start, end + 1)
    return out


def _kcsan_ours(report: list[str]) -> bool:
    """Whether a KCSAN report (its title to its closing rule) has a frame of
    the module among those that made an access."""
    made = True  # the title names the accesses' own top frames
    for line in report:
        if _KCSAN_TRAILER.search(line):
            return False
        if _KCSAN_ACCESS.search(line):
            made = True
        elif _IRQ_ENTRY.search(line):
            made = False
        if made and _OURS.search(line):
            return True
    return False


def kcsan_elsewhere(lines: Iterable[str]) -> list[str]:
    """The titles of the data-race reports bad_lines() sets aside."""
    lines = [line.rstrip("\n") for line in lines]
    return [lines[i] for i in sorted(_kcsan_blocks(lines))]


def _known(lines: list[str]) -> set[int]:
    """Indices of the lines set aside: the initiator's WARN, injected
    failures' own reports, data races outside the module."""
    known = _initiator_blocks(lines) | _injected_blocks(lines)
    for block in _kcsan_blocks(lines).values():
        known.update(block)
    return known


def known_initiator_warns(lines: Iterable[str]) -> list[str]:
    """The workqueue lines of the initiator-side WARNs bad_lines() sets aside."""
    lines = [line.rstrip("\n") for line in lines]
    return [lines[i] for i in sorted(_initiator_blocks(lines)) if _INITIATOR_FLUSH.search(lines[i])]


def bad_lines(lines: Iterable[str]) -> list[str]:
    """Return the lines of a kernel log that report a kernel problem."""
    lines = [line.rstrip("\n") for line in lines]
    known = _known(lines)
    return [line for i, line in enumerate(lines) if i not in known and _BAD.search(line)]


def report(lines: Iterable[str], before: int = 2, after: int = 30, most: int = 120) -> list[str]:
    """The bad lines with the context that names the culprit.

    A WARN's "workqueue: ... is flushing ..." line comes before its "cut
    here", and the call trace after it: keep a few lines either side of
    every bad line, and "..." where lines were left out.
    """
    lines = [line.rstrip("\n") for line in lines]
    known = _known(lines)
    keep: set[int] = set()
    for i, line in enumerate(lines):
        if i not in known and _BAD.search(line):
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
