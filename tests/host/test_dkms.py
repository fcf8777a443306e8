"""The module under DKMS, as an admin installs it: `dkms add kmod/cxgbit-ext`,
then `dkms build -k KVER` for each installed kernel.

All in a throwaway dkms tree (--dkmstree/--sourcetree/--installtree and the
signing key under tmp_path), with neither CXE_KSRC nor the headers `make
deps` extracts: LIO's private headers come from the installed
linux-source-<series>, as on a machine that never ran `make deps`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
KMOD = TOP / "kmod/cxgbit-ext"
# one kernel's build: the linux-source extraction and the compile
TIMEOUT = 600


def code_version() -> str:
    """The module's version, as its C code has it (MODULE_VERSION)."""
    m = re.search(r'^#define\s+CXE_VERSION\s+"([^"]+)"', (KMOD / "cxgbit_ext.h").read_text(), re.MULTILINE)
    assert m, "no CXE_VERSION in cxgbit_ext.h"
    return m.group(1)


def installed_kernels() -> list[str]:
    p = subprocess.run([str(TOP / "scripts/kernels"), "installed"], capture_output=True, text=True)
    return p.stdout.split() if p.returncode == 0 else []


def modinfo(module: Path, field: str) -> str:
    p = subprocess.run(["modinfo", "-F", field, str(module)], capture_output=True, text=True, check=True)
    return p.stdout.strip()


@dataclass
class Dkms:
    """dkms on a tree of its own, under ``root``."""

    root: Path
    env: dict[str, str]

    def run(self, command: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        trees = [f"--{t}tree={self.root / t}" for t in ("dkms", "source", "install")]
        p = subprocess.run(
            ["dkms", command, *trees, *args], env=self.env, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert not check or p.returncode == 0, (
            f"dkms {command} {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}"
        )
        return p

    def built(self, kver: str) -> Path:
        """Where `dkms build` keeps what it built for kver (the module, its make.log)."""
        return self.root / "dkms/cxgbit-ext" / code_version() / kver / os.uname().machine


@pytest.fixture(scope="module")
def dkms(tmp_path_factory: pytest.TempPathFactory) -> Dkms:
    if shutil.which("dkms") is None:
        pytest.skip("dkms is not installed (apt-get install dkms; make deps installs it)")
    root = tmp_path_factory.mktemp("dkms")
    for t in ("dkms", "source", "install"):
        (root / t).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CXE_")}
    env.update(
        # no make-deps cache: the headers come from linux-source
        CXE_SRCDIR=str(root / "no-make-deps"),
        # dkms signs with a key it makes on first use; keep it out of /var/lib/dkms
        mok_signing_key=str(root / "mok.key"),
        mok_certificate=str(root / "mok.pub"),
    )
    d = Dkms(root, env)
    d.run("add", str(KMOD))
    return d


def test_dkms_takes_the_version_from_the_code(dkms: Dkms) -> None:
    version = code_version()
    assert version not in (KMOD / "dkms.conf").read_text(), "dkms.conf writes the version a second time"
    assert f"cxgbit-ext/{version}: added" in dkms.run("status", "cxgbit-ext").stdout


@pytest.mark.parametrize("kver", installed_kernels())
def test_dkms_build(dkms: Dkms, kver: str) -> None:
    dkms.run("build", f"cxgbit-ext/{code_version()}", "-k", kver)
    built = dkms.built(kver)
    log = (built / "log/make.log").read_text()
    assert re.search(rf"extract-ksrc: LIO's private headers of {re.escape(kver)} from linux-source-", log), log
    modules = list((built / "module").glob("cxgbit_ext.ko*"))
    assert len(modules) == 1, f"{built / 'module'}: {modules}"
    assert modinfo(modules[0], "version") == code_version()
    assert modinfo(modules[0], "vermagic").split()[0] == kver
    assert "cxgb4" not in modinfo(modules[0], "depends").split(","), "the core depends on cxgb4"
    # cxgb4's private headers came with LIO's: the cxgb4 backend's module is built
    (backend,) = (built / "module").glob("cxgbit_ext_cxgb4.ko*")
    assert modinfo(backend, "version") == code_version()
    assert {"cxgb4", "cxgbit_ext"} <= set(modinfo(backend, "depends").split(",")), "built without the cxgb4 backend"
    assert re.search(rf"cxgb4-layout: {re.escape(kver)}: \d+ member checks against its cxgb4.ko", log), log
    assert f"cxgbit-ext/{code_version()}, {kver}, {os.uname().machine}: built" in dkms.run("status").stdout
    binaries_only_tarball_installs(dkms, kver)


def binaries_only_tarball_installs(dkms: Dkms, kver: str) -> None:
    """What a vendor ships to hosts with no compiler or linux-source: the
    build as a binaries-only DKMS tarball, which another host's dkms loads
    (ldtarball) and installs for that kernel."""
    tarball = dkms.root / f"cxgbit-ext-{kver}.dkms.tar.gz"
    dkms.run("mktarball", f"cxgbit-ext/{code_version()}", "-k", kver, "--binaries-only", f"--archive={tarball}")
    other = Dkms(dkms.root / f"other-{kver}", dkms.env)  # a host of its own
    for t in ("dkms", "source", "install"):
        (other.root / t).mkdir(parents=True, exist_ok=True)
    (other.root / "install" / kver).mkdir(exist_ok=True)  # the kernel's module tree
    # dkms 3.0.10 exits 1 after loading a binaries-only tarball when no
    # source tree exists (dkms-project/dkms issue 362): what it loaded is
    # checked instead
    load = other.run("ldtarball", str(tarball), check=False)
    status = other.run("status").stdout
    assert f"cxgbit-ext/{code_version()}, {kver}, {os.uname().machine}: built" in status, load.stdout + load.stderr
    other.run("install", f"cxgbit-ext/{code_version()}", "-k", kver, "--no-depmod")
    where = other.root / "install" / kver / "updates/dkms"
    installed = list(where.glob("cxgbit_ext.ko*"))  # compressed as the kernel's own modules are
    assert len(installed) == 1, f"not installed where dkms.conf says ({where}): {installed}"
    assert list(where.glob("cxgbit_ext_cxgb4.ko*")), f"the cxgb4 backend's module not installed in {where}"
    assert modinfo(installed[0], "version") == code_version()
    assert modinfo(installed[0], "vermagic").split()[0] == kver


def test_missing_linux_source_names_the_package(tmp_path: Path) -> None:
    """A kernel whose linux-source is not installed: the build says which
    package to install, and extracts nothing."""
    kernels = installed_kernels()
    if not kernels:
        pytest.skip("no kernel with headers installed (make deps)")
    series = next(s for s in ("4.19", "5.10", "5.4") if not Path(f"/usr/src/linux-source-{s}.tar.xz").exists())
    tree = tmp_path / "cxgbit-ext"
    shutil.copytree(KMOD, tree)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CXE_")}
    # the headers of an installed kernel pass the first check; the release
    # names a series whose linux-source is absent
    p = subprocess.run(
        ["make", "-C", str(tree), f"KVER={series}.0-1-amd64", f"KDIR=/lib/modules/{kernels[0]}/build",
         f"CXE_SRCDIR={tmp_path / 'no-make-deps'}", "modules"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode != 0
    assert f"install linux-source-{series}" in p.stderr, p.stdout + p.stderr
    assert not (tree / "ksrc").exists()
