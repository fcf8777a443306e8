"""The VM suite's kernel-log gate catches real splats and passes clean boots."""

from __future__ import annotations

import re
from pathlib import Path

from testbed.klog import bad_lines, kcsan_elsewhere, known_initiator_warns, report

CLEAN = """\
[    0.000000] Linux version 6.1.0-56-amd64 (debian-kernel@lists.debian.org)
[   16.305966] db_root: cannot open: /etc/target
[   17.100000] cxgbit_ext: loading out-of-tree module taints kernel.
[   17.100100] cxgbit_ext: module verification failed: signature and/or required key missing - tainting kernel
[   18.435568] IPv6: ADDRCONF(NETDEV_CHANGE): ini0: link becomes ready
[   19.000000] scsi host2: iSCSI Initiator over TCP/IP
[   19.500000] sd 2:0:0:0: [sda] Write cache: enabled, read cache: enabled, supports DPO and FUA
""".splitlines()

SPLATS = {
    "warn": "[  120.1] WARNING: CPU: 1 PID: 423 at drivers/target/iscsi/iscsi_target.c:4425 iscsit_close_connection",
    "oops": "[  121.2] Oops: 0000 [#1] PREEMPT SMP NOPTI",
    "bug": "[  122.3] BUG: kernel NULL pointer dereference, address: 0000000000000010",
    "bug_at": "[  122.4] kernel BUG at mm/slub.c:379!",
    "hung": "[  150.0] INFO: task iscsi_np:612 blocked for more than 30 seconds.",
    "lockdep": "[  151.0] WARNING: possible circular locking dependency detected",
    "gpf": "[  152.0] general protection fault, probably for non-canonical address 0xdead000000000100",
    "softlockup": "[  153.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [kworker/0:1:33]",
    "refcount": "[  154.0] refcount_t: underflow; use-after-free.",
    "rcu": "[  155.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "trace": "[  156.0] Call Trace:",
}


# what scripts/build-debug-kernel's checkers print at a clean boot; and the
# count of testbed/run's kmemleak scan before the batch, whose findings (the
# boot's) it sets aside: those after the batch are in its kmemleak.txt
CLEAN_DEBUG = """\
[    0.000000] Linux version 6.12.117+deb12-amd64-dbg (root@host) (gcc-12 (Debian 12.2.0-14) 12.2.0)
[    0.000000] Command line: console=ttyS0 log_buf_len=16M kasan_multi_shot kmemleak=on
[    0.012000] kasan: KernelAddressSanitizer initialized (generic)
[    0.230000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.230100] ... MAX_LOCKDEP_CHAINS:      131072
[    0.230200]  memory used by lock dependency info: 12345 kB
[    0.300000] rcu: RCU lockdep checking is enabled.
[    0.400000] ODEBUG: selftest passed
[    9.100000] kmemleak: Kernel memory leak detector initialized (mem pool available: 15870)
[   12.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
""".splitlines()

# the first line of each report of the debug kernel's checkers (6.1, 6.12)
DEBUG_SPLATS = {
    "kasan": "[  200.1] BUG: KASAN: slab-use-after-free in iscsit_close_connection+0x5e/0x9f0 [iscsi_target_mod]",
    "ubsan": "[  201.0] UBSAN: shift-out-of-bounds in kmod/cxgbit-ext/pdu/cxe_seg.c:42:17",
    "circular": "[  202.0] WARNING: possible circular locking dependency detected",
    "recursive": "[  203.0] WARNING: possible recursive locking detected",
    "inconsistent": "[  204.0] WARNING: inconsistent lock state",
    "irq_order": "[  204.1] WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
    "irq_inversion": "[  204.2] WARNING: possible irq lock inversion dependency detected",
    "unlock": "[  204.3] WARNING: bad unlock balance detected!",
    "held_freed": "[  204.4] WARNING: held lock freed!",
    "held_exit": "[  204.5] WARNING: kworker/0:1/33 still has locks held!",
    "held_user": "[  204.6] WARNING: lock held when returning to user space!",
    "lockdep_off": "[  204.7] BUG: MAX_LOCKDEP_CHAINS too low!",
    "sleep": "[  205.0] BUG: sleeping function called from invalid context at kernel/locking/mutex.c:283",
    "atomic": "[  205.1] BUG: scheduling while atomic: kworker/1:1/40/0x00000002",
    "odebug": "[  206.0] ODEBUG: free active (active state 0) object: ffff888004a1b2c8 object type: timer_list "
    "hint: cxe_conn_timeout+0x0/0x40 [cxgbit_ext]",
    "odebug_stack": "[  206.1] ODEBUG: object ffffc90000a37d58 is on stack ffffc90000a30000, but NOT annotated.",
    "odebug_oom": "[  206.2] ODEBUG: Out of memory. ODEBUG disabled",
    "list_add": "[  207.0] list_add corruption. next->prev should be prev (ffff888004a1b2c8), but was "
    "ffff888004a1b2d0. (next=ffff888004a1b2e0).",
    "list_del": "[  207.1] list_del corruption, ffff888004a1b2c8->next is LIST_POISON1 (dead000000000100)",
    "list_double": "[  207.2] list_add double add: new=ffff888004a1b2c8, prev=ffff888004a1b2c8, next=ffff888004a1b2e0.",
    "kmemleak_object": "unreferenced object 0xffff888004a1b2c8 (size 64):",
    "kmemleak_verbose": "[  208.1] kmemleak: unreferenced object 0xffff888004a1b2c8 (size 64):",
    "kmemleak_off": "[  208.2] kmemleak: Kernel memory leak detector disabled",
    "kmemleak_pool": "[  208.3] kmemleak: Memory pool empty, consider increasing CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE",
    "kmemleak_insert": "[  208.4] kmemleak: Cannot insert 0xffff888004a1b2c8 into the object search tree "
    "(overlaps existing)",
    "wq_leak_61": "[  209.0] BUG: workqueue leaked lock or atomic: kworker/0:1/0x00000000/33",
    "wq_leak_612": "[  209.1] BUG: workqueue leaked atomic, lock or RCU: kworker/0:1[33]",
    "hung_debug": "[  210.0] INFO: task kworker/u4:2:57 blocked for more than 120 seconds.",
}


def test_clean_log_has_no_bad_lines() -> None:
    assert bad_lines(CLEAN) == []
    assert bad_lines(CLEAN_DEBUG) == []


def test_each_kind_of_splat_is_caught() -> None:
    for kind, line in {**SPLATS, **DEBUG_SPLATS}.items():
        assert bad_lines([*CLEAN, *CLEAN_DEBUG, line]) == [line], kind


WQ_WARN = """\
[  448.670000] sd 3:0:0:0: [sdb] Synchronizing SCSI cache
[  448.677000] workqueue: WQ_MEM_RECLAIM iscsi_q_3:iscsi_xmitworker is flushing !WQ_MEM_RECLAIM events:foo
[  448.677493] ------------[ cut here ]------------
[  448.678554] WARNING: CPU: 0 PID: 163 at kernel/workqueue.c:2635 check_flush_dependency.part.0+0xb4/0x100
[  448.685706] Call Trace:
[  448.685800]  <TASK>
[  448.685900]  __flush_work+0x1/0x2
[  448.686000]  </TASK>
[  448.686100] ---[ end trace 0000000000000000 ]---
""".splitlines()


def test_report_keeps_the_lines_that_name_the_culprit() -> None:
    lines = [*CLEAN, *WQ_WARN, *CLEAN]
    out = report(lines, before=2, after=3)
    assert any("is flushing !WQ_MEM_RECLAIM" in line for line in out)
    assert any("__flush_work" in line for line in out)
    assert "..." in out  # the clean lines between are left out
    assert not any("Linux version" in line for line in out)
    assert report(CLEAN) == []


# the initiator's own session teardown (6.12 console, trimmed)
INITIATOR_WARN = """\
[  692.009225] ------------[ cut here ]------------
[  692.009452] workqueue: WQ_MEM_RECLAIM iscsi_ctrl_6:30:__iscsi_unbind_session [scsi_transport_iscsi] \
is flushing !WQ_MEM_RECLAIM pm:pm_runtime_work
[  692.010999] WARNING: CPU: 1 PID: 206 at kernel/workqueue.c:3767 check_flush_dependency.part.0+0x106/0x130
[  692.016115] Call Trace:
[  692.016907]  __flush_work+0xe9/0x3a0
[  692.017020]  pm_runtime_remove+0x20/0x30
[  692.017713]  __iscsi_unbind_session+0xd4/0x220 [scsi_transport_iscsi]
[  692.018000] ---[ end trace 0000000000000000 ]---
""".splitlines()


def test_the_initiator_teardown_warn_is_set_aside_and_said() -> None:
    assert bad_lines([*CLEAN, *INITIATOR_WARN, *CLEAN]) == []
    assert report([*CLEAN, *INITIATOR_WARN]) == []
    assert len(known_initiator_warns([*CLEAN, *INITIATOR_WARN])) == 1


def test_any_other_warn_still_counts() -> None:
    # the same shape with another workqueue (ours, LIO's) is not set aside
    ours = "target_completion:target_complete_ok_work [target_core_mod]"
    other = [ln.replace("iscsi_ctrl_6:30:__iscsi_unbind_session [scsi_transport_iscsi]", ours) for ln in INITIATOR_WARN]
    assert len(bad_lines(other)) == 3
    # a second splat inside or after the known block still counts
    assert bad_lines([*INITIATOR_WARN, SPLATS["oops"]]) == [SPLATS["oops"]]
    # an unterminated block (log cut short) is not set aside
    assert len(bad_lines(INITIATOR_WARN[:-1])) == 3


INJECTED = """\
[  300.000000] FAULT_INJECTION: forcing a failure.
[  300.000001] name failslab, interval 1, probability 10, space 0, times 99990
[  300.000002] CPU: 0 UID: 0 PID: 612 Comm: iscsi_np Not tainted 6.12.117+deb12-amd64-dbg #1
[  300.000003] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[  300.000004] Call Trace:
[  300.000005]  <TASK>
[  300.000006]  dump_stack_lvl+0x5d/0x80
[  300.000007]  should_fail_ex+0x3a4/0x4a0
[  300.000008]  cxe_accept_np+0x1c2/0x6b0 [cxgbit_ext]
[  300.000009]  </TASK>
""".splitlines()


def test_an_injected_failures_own_report_is_set_aside() -> None:
    """The fault-injection lane's stack of a failure it forced is no finding;
    a report after it still is."""
    assert bad_lines(CLEAN + INJECTED) == []
    assert report(CLEAN + INJECTED) == []
    after = [*INJECTED, SPLATS["oops"]]
    assert bad_lines(CLEAN + after) == [SPLATS["oops"]]
    # a "forcing a failure" line without its stack's end sets nothing aside
    cut = [*INJECTED[:-1], SPLATS["warn"]]
    assert SPLATS["warn"] in bad_lines(CLEAN + cut)


# Two CPUs' injected failures at once: the second's first lines come inside
# the first's stack, its own stack after the first's end (printk keeps each
# line whole, not each report)
INTERLEAVED = """\
[ 3662.641729] FAULT_INJECTION: forcing a failure.
[ 3662.641730] name failslab, interval 1, probability 10, space 0, times 99924
[ 3662.641731] CPU: 0 UID: 0 PID: 5187 Comm: iscsi_np Tainted: G        W  OE      6.12.118+deb12-amd64-dbg #1
[ 3662.641732] Call Trace:
[ 3662.641747]  <TASK>
[ 3662.641777]  dump_stack_lvl+0x91/0xb0
[ 3662.641837]  should_fail_ex+0x4bc/0x590
[ 3662.679096]  cxe_accept_from+0x82/0x4f0 [cxgbit_ext]
[ 3662.679740] FAULT_INJECTION: forcing a failure.
[ 3662.679740] name failslab, interval 1, probability 10, space 0, times 99923
[ 3662.683236]  iscsi_target_login_thread+0x827/0x35a0 [iscsi_target_mod]
[ 3662.685511]  </TASK>
[ 3662.688171] CPU: 0 UID: 0 PID: 241 Comm: python Tainted: G        W  OE      6.12.118+deb12-amd64-dbg #1
[ 3662.688277] Call Trace:
[ 3662.688308]  <TASK>
[ 3662.688337]  dump_stack_lvl+0x91/0xb0
[ 3662.688398]  should_fail_ex+0x4bc/0x590
[ 3662.688911]  cxe_adapter_alloc+0x4f/0x210 [cxgbit_ext]
[ 3662.690572]  </TASK>
""".splitlines()


def test_interleaved_injected_failures_are_each_set_aside() -> None:
    """Each "forcing a failure" owns the first stack end no earlier one
    took; a report after both still counts."""
    assert bad_lines(CLEAN + INTERLEAVED) == []
    assert bad_lines([*INTERLEAVED, SPLATS["oops"]]) == [SPLATS["oops"]]
    # the second report cut short: its stack is not set aside
    assert bad_lines(INTERLEAVED[:-1]) == ["[ 3662.688277] Call Trace:"]


ALLOC_FAILED = """\
[  336.564916] iscsi_np: vmalloc error: size 24576, failed to allocated page array size 48, mode:0xdc2(GFP_KERNEL)
[  336.567275] CPU: 0 UID: 0 PID: 260 Comm: iscsi_np Tainted: G           OE      6.12.117+deb12-amd64-dbg #1
[  336.567334] Call Trace:
[  336.567345]  <TASK>
[  336.567364]  dump_stack_lvl+0x91/0xb0
[  336.567399]  warn_alloc+0x24f/0x390
[  336.567499]  ? should_fail_ex+0x32a/0x590
[  336.568201]  cxe_soft_accept+0x1d5/0x690 [cxgbit_ext]
[  336.568345]  </TASK>
""".splitlines()


# vmalloc's own bookkeeping allocation forced to fail: the injection's stack,
# then the allocator's report of the vmalloc that failed through it, whose
# stack no longer shows should_fail
NESTED = """\
[  880.710053] FAULT_INJECTION: forcing a failure.
[  880.710869] CPU: 0 UID: 0 PID: 907 Comm: iscsi_np Tainted: G           OE      6.12.118+deb12-amd64-dbg #1
[  880.710994] Call Trace:
[  880.711017]  <TASK>
[  880.711158]  should_fail_ex+0x4bc/0x590
[  880.711453]  alloc_vmap_area+0x4f1/0x2bd0
[  880.716267]  cxe_tpg_behind+0xaf/0x4f0 [cxgbit_ext]
[  880.724024]  </TASK>
[  880.731479] iscsi_np: vmalloc error: size 11216, vm_struct allocation failed, mode:0xdc0(GFP_KERNEL|__GFP_ZERO)
[  880.734717] CPU: 0 UID: 0 PID: 907 Comm: iscsi_np Tainted: G           OE      6.12.118+deb12-amd64-dbg #1
[  880.734788] Call Trace:
[  880.734802]  <TASK>
[  880.734876]  warn_alloc+0x24f/0x390
[  880.736558]  cxe_tpg_behind+0xaf/0x4f0 [cxgbit_ext]
[  880.741264]  </TASK>
""".splitlines()


def test_the_allocators_report_of_a_nested_injected_failure_is_set_aside() -> None:
    """An allocator's report right after the same task's injected failure
    is that failure's; another task's, or one later, is not."""
    assert bad_lines(CLEAN + NESTED) == []
    other = [ln.replace("PID: 907", "PID: 908") if "734717" in ln else ln for ln in NESTED]
    assert bad_lines(other) == ["[  880.734788] Call Trace:"]
    later = [*NESTED[:8], *CLEAN, *NESTED[8:]]
    assert bad_lines(later) == ["[  880.734788] Call Trace:"]


def test_kmemleaks_scan_area_fallback_counts_only_before_any_injection() -> None:
    """kmemleak going on without a scan area is set aside once failures are
    being injected; with none injected it is a finding."""
    area = "[  994.682220] kmemleak: Cannot allocate a scan area, scanning the full object"
    assert bad_lines([*CLEAN, *INJECTED, area]) == []
    assert bad_lines([*CLEAN, area, *INJECTED]) == [area]
    # kmemleak switching itself off still counts, injected or not
    off = "[  994.700000] kmemleak: Cannot allocate a kmemleak_object structure"
    assert bad_lines([*INJECTED, off]) == [off]


def test_the_allocators_report_of_an_injected_failure_is_set_aside() -> None:
    """The allocator's stack for a failure the lane injected is no finding;
    the same report without should_fail on its stack (a real failure) is."""
    assert bad_lines(CLEAN + ALLOC_FAILED) == []
    real = [line for line in ALLOC_FAILED if "should_fail" not in line]
    assert bad_lines(CLEAN + real) == ["[  336.567334] Call Trace:"]


# A failslab report from a module load under fail-nth on 6.12's debug
# kernel (misc_register() in the module's init): with KASAN's "? " frames
# its stack runs 100 lines from "forcing a failure" to "</TASK>"
DEEP = (Path(__file__).parent / "data/injected-deep-stack.log").read_text().splitlines()


def test_an_injected_failure_with_a_deep_stack_is_set_aside() -> None:
    """However long the injected failure's stack, it is the injection's;
    a report inside an unterminated one still counts."""
    assert len(DEEP) >= 100 and DEEP[0].endswith("FAULT_INJECTION: forcing a failure.")
    assert bad_lines(CLEAN + DEEP) == []
    assert bad_lines([*DEEP, SPLATS["oops"]]) == [SPLATS["oops"]]
    frames = [ln for ln in DEEP if "]  ? " in ln]
    longer = [*DEEP[:-1], *frames * 20, DEEP[-1]]
    assert len(longer) > 1000
    assert bad_lines(longer) == []
    # a stack cut short, with another report before any "</TASK>": both count
    cut = [*DEEP[:-30], *WQ_WARN, DEEP[-1]]
    assert "[ 4019.092326] Call Trace:" in bad_lines(cut)
    assert any("cut here" in ln for ln in bad_lines(cut))


# Two KCSAN reports as kernel/kcsan/report.c lays them out (6.1 and 6.12):
# a race in the core with no frame of ours, and one whose second access is
# made by the module
KCSAN_ELSEWHERE = """\
[  210.000001] ==================================================================
[  210.000002] BUG: KCSAN: data-race in tcp_ack / tcp_sendmsg_locked
[  210.000003]
[  210.000004] write to 0xffff888005a3c1d8 of 4 bytes by interrupt on cpu 1:
[  210.000005]  tcp_ack+0x1a4/0x2a10
[  210.000006]  tcp_rcv_established+0x2c1/0xe90
[  210.000007]  tcp_v4_do_rcv+0x1c8/0x4b0
[  210.000008]
[  210.000009] read to 0xffff888005a3c1d8 of 4 bytes by task 388 on cpu 0:
[  210.000010]  tcp_sendmsg_locked+0x7e/0x1a20
[  210.000011]  tcp_sendmsg+0x2d/0x50
[  210.000012]
[  210.000013] value changed: 0x000a1c2e -> 0x000a1c30
[  210.000014]
[  210.000015] Reported by Kernel Concurrency Sanitizer on:
[  210.000016] CPU: 0 UID: 0 PID: 388 Comm: fio Not tainted 6.12.118+deb12-amd64-kcsan #1
[  210.000017] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[  210.000018] ==================================================================
""".splitlines()
KCSAN_OURS = """\
[  211.000001] ==================================================================
[  211.000002] BUG: KCSAN: data-race in cxe_adapter_ddp_show [cxgbit_ext] / cxe_rx_pdu [cxgbit_ext]
[  211.000003]
[  211.000004] write to 0xffff888006b1e0a0 of 8 bytes by task 401 on cpu 1:
[  211.000005]  cxe_rx_pdu+0x33c/0x8e0 [cxgbit_ext]
[  211.000006]  iscsi_target_rx_thread+0x97/0x1a0 [iscsi_target_mod]
[  211.000007]
[  211.000008] read to 0xffff888006b1e0a0 of 8 bytes by task 512 on cpu 0:
[  211.000009]  cxe_adapter_ddp_show+0x5d/0x120 [cxgbit_ext]
[  211.000010]  configfs_read_iter+0xd1/0x1f0
[  211.000011]
[  211.000012] value changed: 0x0000000000000010 -> 0x0000000000000011
[  211.000013]
[  211.000014] Reported by Kernel Concurrency Sanitizer on:
[  211.000015] CPU: 0 UID: 0 PID: 512 Comm: cat Tainted: G           OE      6.12.118+deb12-amd64-kcsan #1
[  211.000016] ==================================================================
""".splitlines()


def test_a_data_race_outside_the_module_is_set_aside_and_said() -> None:
    log = CLEAN + KCSAN_ELSEWHERE + CLEAN
    assert bad_lines(log) == []
    assert kcsan_elsewhere(log) == ["[  210.000002] BUG: KCSAN: data-race in tcp_ack / tcp_sendmsg_locked"]


def test_a_data_race_with_a_frame_of_the_module_counts() -> None:
    log = KCSAN_ELSEWHERE + KCSAN_OURS
    assert bad_lines(log) == [KCSAN_OURS[1]]
    assert kcsan_elsewhere(log) == [KCSAN_ELSEWHERE[1]]
    # the report's context names both accesses' module frames
    assert any("cxe_rx_pdu+0x33c" in line for line in report(log))


def test_a_data_race_report_cut_short_counts() -> None:
    # no closing rule: the report cannot be read whole, so it is not set aside
    cut = KCSAN_ELSEWHERE[:12]
    assert bad_lines(cut) == [cut[1]]


# A report of the 6.12 KCSAN kernel: the race is the workqueue core's own
# (a worker's read at unknown origin); the module is named only on the
# "Workqueue:" line of the reporting CPU's trailer, as the work it ran
KCSAN_TRAILER = (Path(__file__).parent / "data/kcsan-workqueue-line.log").read_text().splitlines()


def test_a_data_race_naming_the_module_only_in_its_trailer_is_set_aside() -> None:
    assert any("[cxgbit_ext]" in line for line in KCSAN_TRAILER)
    assert bad_lines(KCSAN_TRAILER) == []
    assert kcsan_elsewhere(KCSAN_TRAILER) == [KCSAN_TRAILER[1]]


# Another of the 6.12 KCSAN kernel's: the open-iscsi initiator's own race
# (libiscsi's task kfifo), one access in a softirq that ran on the stack
# of the module's send (cxe_tx_flush -> tcp_sendmsg -> ... -> do_softirq)
KCSAN_INTERRUPTED = (Path(__file__).parent / "data/kcsan-interrupted-module.log").read_text().splitlines()


def test_a_data_race_in_an_interrupt_over_the_module_is_set_aside() -> None:
    assert any("cxe_tx_flush" in line for line in KCSAN_INTERRUPTED)
    assert bad_lines(KCSAN_INTERRUPTED) == []
    assert kcsan_elsewhere(KCSAN_INTERRUPTED) == [KCSAN_INTERRUPTED[1]]
    # the same read without printk's timestamps (a console without them)
    bare = [re.sub(r"^\[[^]]*\] ?", "", line) for line in KCSAN_INTERRUPTED]
    assert bad_lines(bare) == []


def test_a_data_race_made_by_the_module_in_a_softirq_counts() -> None:
    # the module's frame above the softirq's entry made the access
    ours = [
        line.replace("iscsi_sw_tcp_data_ready+0xf7/0x2d0 [iscsi_tcp]", "cxe_gate_data_ready+0x5e/0x140 [cxgbit_ext]")
        for line in KCSAN_INTERRUPTED
    ]
    assert bad_lines(ours) == [ours[1]]


def test_a_line_quoting_a_data_race_is_not_read_as_one() -> None:
    # a test's teardown logs the report it failed on, flattened to one line:
    # that line counts as the failure it says, and takes no report's lines
    quote = "[  230.668841] cxe-test: teardown failed t: AssertionError: ... " + " ".join(KCSAN_TRAILER)
    log = [quote, *KCSAN_ELSEWHERE]
    assert bad_lines(log) == [quote]
    assert kcsan_elsewhere(log) == [KCSAN_ELSEWHERE[1]]
