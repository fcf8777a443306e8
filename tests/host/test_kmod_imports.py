"""What each built module (build/<kver>/cxgbit_ext.ko) takes from its kernel.

The zero-copy send of Data-In pages depends on the kernel, not on the flags
its headers define: a kernel that exports kernel_sendpage() must be given
pages through it (its TCP may define MSG_SPLICE_PAGES and still copy such
pages in sendmsg, as Debian's 6.1 does); a kernel without it splices the
pages passed to sock_sendmsg() with MSG_SPLICE_PAGES.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]


def exported(kver: str) -> set[str]:
    symvers = Path(f"/lib/modules/{kver}/build/Module.symvers")
    return {ln.split("\t")[1] for ln in symvers.read_text().splitlines() if ln.count("\t") >= 2}


def imported(ko: Path) -> set[str]:
    out = subprocess.run(["nm", "-u", str(ko)], capture_output=True, text=True, check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if ln.strip()}


def test_data_in_pages_go_to_tcp_without_a_copy() -> None:
    kos = sorted(TOP.glob("build/*/cxgbit_ext.ko"))
    if not kos:
        pytest.skip("no module built yet (make modules; make test builds them before the host tests)")
    for ko in kos:
        kver = ko.parent.name
        imports = imported(ko)
        if "kernel_sendpage" in exported(kver):
            assert "kernel_sendpage" in imports, f"{kver}: pages are not sent with kernel_sendpage"
            assert "sock_sendmsg" not in imports, f"{kver}: sock_sendmsg would copy the pages on this kernel"
        else:
            assert "sock_sendmsg" in imports, f"{kver}: no sock_sendmsg (MSG_SPLICE_PAGES) for the pages"
