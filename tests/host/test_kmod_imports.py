"""What each built module (build/<kver>/cxgbit_ext.ko) takes from its kernel.

The software adapter sends a PDU, or a whole Data-In burst, as one batch:
its pages without a copy, all its pieces under one socket lock and in one
call into TCP, not one call (and one lock) per header, page, pad and digest.
How depends on the kernel, not on the flags its headers define:

- a kernel that exports tcp_sendpage_locked() (before 6.5) is given pages
  through it and buffers through tcp_sendmsg_locked(), the socket locked
  once by the adapter. Its TCP may define MSG_SPLICE_PAGES and still copy
  such pages in sendmsg (Debian's 6.1), so sock_sendmsg() must not be used
  for the pages; neither may any call that takes the socket lock itself
  (sock_sendmsg, kernel_sendmsg, kernel_sendpage), or the lock would again
  be taken per piece;
- a later kernel is given the batch as one bio_vec iterator through
  sock_sendmsg() with MSG_SPLICE_PAGES; the small pieces are copied into
  page fragments (the stack keeps a reference, so never stack or slab
  memory), and kernel_sendmsg(), a kvec send per piece, is not used.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]

# calls that lock the socket themselves: one of them per piece is what a
# batch under one lock replaces
SELF_LOCKING = {"sock_sendmsg", "kernel_sendmsg", "kernel_sendpage", "tcp_sendmsg", "tcp_sendpage"}


def exported(ko: Path) -> set[str]:
    """What the kernel the module was built against exports: an installed
    Debian kernel's, or the debug kernel's the build names (debug-kernel)."""
    debug = ko.parent / "debug-kernel"
    kdir = Path(debug.read_text().strip()) / "build" if debug.exists() else Path(f"/lib/modules/{ko.parent.name}/build")
    symvers = kdir / "Module.symvers"
    return {ln.split("\t")[1] for ln in symvers.read_text().splitlines() if ln.count("\t") >= 2}


def imported(ko: Path) -> set[str]:
    out = subprocess.run(["nm", "-u", str(ko)], capture_output=True, text=True, check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if ln.strip()}


def built() -> list[Path]:
    kos = sorted(TOP.glob("build/*/cxgbit_ext.ko"))
    if not kos:
        pytest.skip("no module built yet (make modules; make test builds them before the host tests)")
    return kos


def test_data_in_pages_go_to_tcp_without_a_copy() -> None:
    for ko in built():
        kver = ko.parent.name
        imports = imported(ko)
        if "tcp_sendpage_locked" in exported(ko):
            assert "tcp_sendpage_locked" in imports, f"{kver}: pages are not sent with tcp_sendpage_locked"
            assert "sock_sendmsg" not in imports, f"{kver}: sock_sendmsg would copy the pages on this kernel"
        else:
            assert "sock_sendmsg" in imports, f"{kver}: no sock_sendmsg (MSG_SPLICE_PAGES) for the pages"


def test_a_pdu_goes_to_tcp_under_one_socket_lock() -> None:
    for ko in built():
        kver = ko.parent.name
        imports = imported(ko)
        if "tcp_sendpage_locked" in exported(ko):
            need = {"lock_sock_nested", "release_sock", "tcp_sendmsg_locked", "tcp_sendpage_locked"}
            assert need <= imports, f"{kver}: not sent under the adapter's own lock: {sorted(need - imports)}"
            per_piece = imports & SELF_LOCKING
            assert not per_piece, f"{kver}: sends that lock the socket per piece: {sorted(per_piece)}"
        else:
            assert "kernel_sendmsg" not in imports, f"{kver}: kernel_sendmsg sends (and copies) a piece at a time"
            frags = {"__page_frag_alloc_align", "page_frag_free", "page_frag_cache_drain"}
            assert frags <= imports, f"{kver}: small pieces not in page fragments: {sorted(frags - imports)}"


def depends(ko: Path) -> list[str]:
    out = subprocess.run(["modinfo", "-F", "depends", str(ko)], capture_output=True, text=True, check=True)
    return out.stdout.strip().split(",")


def test_the_cxgb4_backend_is_a_module_of_its_own_where_the_kernel_has_cxgb4() -> None:
    """A kernel that exports cxgb4's ULD registration (Debian's both) gets
    the cxgb4 backend as cxgbit_ext_cxgb4.ko: it takes cxgb4's iSCSI target
    ULD slot, so it imports the registration, and modprobe loads cxgb4 and
    the core before it. The core imports nothing of cxgb4 or libcxgb and
    loads neither."""
    for ko in built():
        kver = ko.parent.name
        core = imported(ko)
        assert not {s for s in core if s.startswith(("cxgb4_", "cxgb_"))}, f"{kver}: the core calls cxgb4"
        assert not {"cxgb4", "libcxgb"} & set(depends(ko)), f"{kver}: the core needs the Chelsio drivers"
        backend = ko.with_name("cxgbit_ext_cxgb4.ko")
        if "cxgb4_register_uld" not in exported(ko):
            assert not backend.exists(), f"{kver}: a cxgb4 backend built for a kernel without cxgb4"
            continue
        assert backend.exists(), f"{kver}: no cxgb4 backend module"
        uld = {"cxgb4_register_uld", "cxgb4_unregister_uld", "cxe_backend_register"}
        assert uld <= imported(backend), f"{kver}: the backend module does not register: {uld - imported(backend)}"
        assert {"cxgb4", "libcxgb", "cxgbit_ext"} <= set(depends(backend)), f"{kver}: {depends(backend)}"
