"""The VM suite's kernel-log gate catches real splats and passes clean boots."""

from __future__ import annotations

from testbed.klog import bad_lines, known_initiator_warns, report

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


def test_clean_log_has_no_bad_lines() -> None:
    assert bad_lines(CLEAN) == []


def test_each_kind_of_splat_is_caught() -> None:
    for kind, line in SPLATS.items():
        assert bad_lines([*CLEAN, line]) == [line], kind


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
