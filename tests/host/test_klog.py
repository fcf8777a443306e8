"""The VM suite's kernel-log gate catches real splats and passes clean boots."""

from __future__ import annotations

from testbed.klog import bad_lines

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
