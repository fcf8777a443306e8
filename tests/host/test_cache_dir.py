"""Where `make deps` keeps the kernels' extracted sources: one name for it.

kmod/cxgbit-ext/srcdir.conf names it (it ships in the DKMS package with
the Makefile that reads it); the scripts take it through scripts/cache.sh,
Python through testbed.kmod.SRC_CACHE, the test Makefiles by including
it. Each is asked here, as the build asks it, and must say the same.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed.kmod import SRC_CACHE

TOP = Path(__file__).resolve().parents[2]


def unset() -> dict[str, str]:
    """This environment without the variables that override the default."""
    return {k: v for k, v in os.environ.items() if k not in ("CXE_SRCDIR", "CXE_SRC")}


def scripts_srcdir(**env: str) -> str:
    """CXE_SRCDIR as a script has it after sourcing scripts/cache.sh."""
    p = subprocess.run(["bash", "-c", '. scripts/cache.sh && echo "$CXE_SRCDIR"'], cwd=TOP,
                       env={**unset(), **env}, capture_output=True, text=True, check=True)  # fmt: skip
    return p.stdout.strip()


def make_default(directory: str, var: str) -> str:
    """The value ``var`` has in the Makefile of ``directory`` with nothing set."""
    p = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(TOP / directory),
         "--eval", f"cxe-print: ; @echo $({var})", "cxe-print"],
        env=unset(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return p.stdout.strip()


def test_the_scripts_and_python_name_the_same_directory() -> None:
    assert scripts_srcdir() == str(SRC_CACHE)
    assert scripts_srcdir(CXE_SRCDIR="/elsewhere") == "/elsewhere"


@pytest.mark.parametrize(
    ("directory", "var"),
    [("kmod/cxgbit-ext", "CXE_SRCDIR"), ("tests/kmod/cxgb4sim", "CXE_SRCDIR"), ("tests/host/c", "CXE_SRC")],
)
def test_each_makefile_defaults_to_it(directory: str, var: str) -> None:
    assert make_default(directory, var) == str(SRC_CACHE)
