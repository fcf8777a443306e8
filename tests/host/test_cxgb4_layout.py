"""The structs the cxgb4 backend shares with cxgb4.ko are checked, at build
time, against the kernel's own cxgb4.ko (kmod/cxgbit-ext/cxgb4-layout).

A module built from headers that lay cxgb4_uld_info out differently from
the kernel (another config: tlsdev_ops and xfrmdev_ops exist only under
CONFIG_CHELSIO_TLS_DEVICE and CONFIG_XFRM_OFFLOAD) would hand cxgb4 a
struct it misreads. Such a build must fail, naming the member; the
headers `make deps` extracted must build.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.kmod import SRC_CACHE

TOP = Path(__file__).resolve().parents[2]
KMOD = TOP / "kmod/cxgbit-ext"
ULD_H = "drivers/net/ethernet/chelsio/cxgb4/cxgb4_uld.h"


def first_kernel() -> str:
    p = subprocess.run([str(TOP / "scripts/kernels"), "installed"], capture_output=True, text=True)
    for k in p.stdout.split():
        if (SRC_CACHE / k / ULD_H).exists() and Path(f"/boot/vmlinuz-{k}").exists():
            return k
    pytest.skip("no installed kernel with cxgb4 headers extracted and its image (make deps)")


def build_main_o(kver: str, ksrc: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Compile the cxgb4 backend's main.o alone, as the module's build does."""
    tree = tmp_path / "kmod"
    shutil.copytree(KMOD, tree, symlinks=True)
    return subprocess.run(
        ["make", "-C", f"/lib/modules/{kver}/build", f"M={tree}", f"CXE_KSRC={ksrc}", "adapters/cxgb4/uld.o"],
        capture_output=True,
        text=True,
        timeout=300,
    )


def ksrc_with_uld_h(kver: str, tmp_path: Path, edit: tuple[str, str]) -> Path:
    """The extracted sources of kver, with cxgb4_uld.h edited."""
    ksrc = tmp_path / "ksrc"
    shutil.copytree(SRC_CACHE / kver, ksrc, symlinks=True)
    h = ksrc / ULD_H
    text = h.read_text()
    assert edit[0] in text, f"{h}: no {edit[0]!r}"
    h.write_text(text.replace(edit[0], edit[1]))
    return ksrc


def test_headers_of_the_kernel_build_with_every_member_checked(tmp_path: Path) -> None:
    k = first_kernel()
    p = build_main_o(k, SRC_CACHE / k, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"cxgb4-layout: {k}: " in p.stdout and "member checks against its cxgb4.ko" in p.stdout, p.stdout
    layout = (tmp_path / "kmod/adapters/cxgb4/kernel_layout.h").read_text()
    assert "sizeof(struct cxgb4_uld_info)" in layout and "sizeof(struct cxgb4_lld_info)" in layout
    assert "struct cxgb4_uld_info, lro_rx_handler" in layout and "struct cxgb4_lld_info, iscsi_iolen" in layout


def test_headers_of_another_config_do_not_build(tmp_path: Path) -> None:
    """cxgb4_uld_info without xfrmdev_ops, as a kernel without
    CONFIG_XFRM_OFFLOAD has it (Debian's have it): the build stops."""
    k = first_kernel()
    ksrc = ksrc_with_uld_h(k, tmp_path, ("#if IS_ENABLED(CONFIG_XFRM_OFFLOAD)", "#if 0"))
    p = build_main_o(k, ksrc, tmp_path)
    assert p.returncode != 0, "built against a cxgb4_uld_info the kernel does not have"
    assert "static assertion failed" in p.stderr and "sizeof(struct cxgb4_uld_info)" in p.stderr, p.stderr


def test_without_the_kernel_image_it_says_nothing_was_checked(tmp_path: Path) -> None:
    out = tmp_path / "layout.h"
    p = subprocess.run(
        ["bash", str(KMOD / "cxgb4-layout"), "0.0.0-none", str(tmp_path), str(out)], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert "cxgb4-layout: 0.0.0-none: cxgb4's struct layouts not checked: no /boot/vmlinuz-0.0.0-none" in p.stdout
    assert out.read_text() == "/* cxgb4-layout: not checked: no /boot/vmlinuz-0.0.0-none */\n"
