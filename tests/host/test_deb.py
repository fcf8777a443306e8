"""The Debian packages, as `make deb` builds them: scripts/build-deb into a
throwaway directory, then what each .deb holds, depends on and runs at
install and removal, lintian's verdict, one version everywhere, and the
packaged module source built by dkms as the package's postinst would.

What the packaging decides, and why, is in debian/README.Debian.
"""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
KMOD = TOP / "kmod/cxgbit-ext"
PACKAGES = ("cxgbit-ext-dkms", "python3-cxgbit-ext")
PY_PACKAGES = {
    "cxgbit_ext": TOP / "userspace/cxgbit_ext",
    "targetcli_offload": TOP / "targetcli-plugin/targetcli_offload",
    "iscsi_initiator": TOP / "initiator/iscsi_initiator",
}
COMMANDS = ("cxgbit-ext", "targetcli-offload", "cxe-initiator")
UNITS = sorted(p.name for p in (TOP / "userspace/systemd").glob("*.service"))
# the units enabled at install (debian/rules' ENABLED_UNITS); the others are daemons
ENABLED_UNITS = ("cxgbit-ext.service",)
# dpkg-buildpackage, pybuild and lintian over the whole tree, twice on a slow runner
BUILD_TIMEOUT = 600


def code_version() -> str:
    """The module's version (CXE_VERSION), which its dkms.conf reads."""
    m = re.search(r'^#define\s+CXE_VERSION\s+"([^"]+)"', (KMOD / "cxgbit_ext.h").read_text(), re.MULTILINE)
    assert m, "no CXE_VERSION in cxgbit_ext.h"
    return m.group(1)


def setup_version() -> str:
    """The version keyword of setup.py's setup() call."""
    for node in ast.walk(ast.parse((TOP / "setup.py").read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup":
            for kw in node.keywords:
                if kw.arg == "version" and isinstance(kw.value, ast.Constant):
                    return str(kw.value.value)
    raise AssertionError("setup.py: no setup(version=...)")


def changelog_version() -> str:
    """debian/changelog's upstream version (3.0 native: the whole version)."""
    p = subprocess.run(
        ["dpkg-parsechangelog", "-l", str(TOP / "debian/changelog"), "-SVersion"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return p.stdout.strip().rsplit("-", 1)[0] if "-" in p.stdout else p.stdout.strip()


def example_version() -> str:
    """The version the example backend's Makefile looks for under /usr/src."""
    (v,) = re.findall(r"^CXE_VERSION \?= (\S+)$", (TOP / "kmod/example-backend/Makefile").read_text(), re.M)
    return v


def manpage_version() -> str:
    """The version in docs/cxgbit-ext.1's title line (the page's footer)."""
    m = re.search(r'^\.TH .*"cxgbit-ext ([^"]+)"', (TOP / "docs/cxgbit-ext.1").read_text(), re.MULTILINE)
    assert m, "docs/cxgbit-ext.1: no version in .TH"
    return m.group(1)


def test_one_version_everywhere() -> None:
    """The module, setup.py, the man page and debian/changelog agree: dkms
    refuses /usr/src/cxgbit-ext-<changelog version> when its dkms.conf reads
    another CXE_VERSION."""
    versions = {
        "CXE_VERSION (kmod/cxgbit-ext/cxgbit_ext.h)": code_version(),
        "setup.py": setup_version(),
        "docs/cxgbit-ext.1": manpage_version(),
        "debian/changelog": changelog_version(),
        "kmod/example-backend/Makefile": example_version(),
    }
    assert len(set(versions.values())) == 1, versions


@dataclass
class Deb:
    path: Path

    def field(self, name: str) -> str:
        p = subprocess.run(["dpkg-deb", "-f", str(self.path), name], capture_output=True, text=True, check=True)
        return p.stdout.strip()

    def relation(self, name: str) -> list[list[str]]:
        """A relation field as its alternatives, each a list of package names
        (versions and :any dropped)."""
        return [
            [re.sub(r"\s*\(.*\)|:any", "", alt).strip() for alt in group.split("|")]
            for group in self.field(name).split(",")
            if group.strip()
        ]

    def files(self) -> dict[str, str]:
        """Every path it installs (as /path), with its mode, from dpkg-deb -c."""
        p = subprocess.run(["dpkg-deb", "-c", str(self.path)], capture_output=True, text=True, check=True)
        out = {}
        for line in p.stdout.splitlines():
            mode, *_, name = line.split(maxsplit=5)
            out[name.split(" -> ")[0].removeprefix(".").rstrip("/") or "/"] = mode
        return out

    def read(self, path: str) -> str:
        """One installed file's text."""
        return self._member(["--fsys-tarfile"], "." + path)

    def control(self, name: str) -> str:
        """A control member (postinst, prerm, ...), or "" when it has none."""
        try:
            return self._member(["--ctrl-tarfile"], "./" + name)
        except KeyError:
            return ""

    def _member(self, how: list[str], name: str) -> str:
        data = subprocess.run(["dpkg-deb", *how, str(self.path)], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            f = tar.extractfile(name)
            assert f is not None, f"{self.path.name}: {name} is not a file"
            return f.read().decode()


@dataclass
class Built:
    out: Path
    returncode: int
    log: str

    def deb(self, name: str) -> Deb:
        """Package ``name``'s .deb; fails with the build's log when there is none."""
        debs = list(self.out.glob(f"{name}_*.deb"))
        assert len(debs) == 1, f"{name}: {[d.name for d in debs]}; scripts/build-deb:\n{self.log[-6000:]}"
        return Deb(debs[0])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """scripts/build-deb into a directory of its own. Its exit status is
    test_make_deb_succeeds' to check: a lintian warning fails make deb
    after the .debs are made, and the other tests still look at them."""
    for tool in ("dpkg-buildpackage", "dh", "lintian", "dh_dkms", "pybuild"):
        if shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
            pytest.skip(f"{tool} is not installed: make deps installs the packaging tools")
    out = tmp_path_factory.mktemp("deb")
    p = subprocess.run(
        [str(TOP / "scripts/build-deb"), str(out)], capture_output=True, text=True, timeout=BUILD_TIMEOUT
    )
    return Built(out, p.returncode, p.stdout + p.stderr)


def test_make_deb_succeeds(built: Built) -> None:
    assert built.returncode == 0, f"scripts/build-deb exited {built.returncode}:\n{built.log[-6000:]}"
    debs = sorted(d.name for d in built.out.glob("*.deb"))
    assert debs == [f"{name}_{code_version()}_all.deb" for name in PACKAGES]
    for name in PACKAGES:
        assert built.deb(name).field("Architecture") == "all"
    # the build ran in a copy: the checkout's debian/ holds no build products
    assert not (TOP / "debian/cxgbit-ext-dkms").exists() and not (TOP / "debian/files").exists()


def test_lintian_has_no_errors_or_warnings(built: Built) -> None:
    """lintian as make deb runs it, again here: no E: line, and no W: line
    that debian/*.lintian-overrides does not explain."""
    debs = [str(built.deb(name).path) for name in PACKAGES]
    p = subprocess.run(["lintian", *debs], capture_output=True, text=True)
    tags = [ln for ln in p.stdout.splitlines() if re.match(r"[EW]: ", ln)]
    assert not tags, "\n".join(tags)
    assert p.returncode == 0, p.stdout + p.stderr


def test_versions_are_the_module_version(built: Built) -> None:
    v = code_version()
    for name in PACKAGES:
        assert built.deb(name).field("Version") == v, name
    header = built.deb("cxgbit-ext-dkms").read(f"/usr/src/cxgbit-ext-{v}/cxgbit_ext.h")
    assert re.search(rf'^#define\s+CXE_VERSION\s+"{re.escape(v)}"', header, re.MULTILINE)
    dist_info = f"/usr/lib/python3/dist-packages/cxgbit_ext-{v}.dist-info/METADATA"
    assert dist_info in built.deb("python3-cxgbit-ext").files()


def test_dkms_package_holds_the_module_source_and_modprobe_rule(built: Built) -> None:
    deb = built.deb("cxgbit-ext-dkms")
    files = deb.files()
    src = f"/usr/src/cxgbit-ext-{code_version()}"
    # every file of the module's tree but the modprobe rule and its notes
    tree = subprocess.run(
        ["git", "-C", str(TOP), "ls-files", "--cached", "--others", "--exclude-standard", "kmod/cxgbit-ext"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    want = {
        f"{src}/{Path(f).relative_to('kmod/cxgbit-ext')}"
        for f in tree
        if (TOP / f).exists() and not f.endswith((".md", "/cxgbit-ext.conf"))
    }
    packaged = {f for f in files if f.startswith(src + "/") and not files[f].startswith("d")}
    assert packaged == want, f"missing: {sorted(want - packaged)}; extra: {sorted(packaged - want)}"
    assert deb.read(f"{src}/dkms.conf") == (KMOD / "dkms.conf").read_text()
    for script in ("extract-ksrc", "cxgb4-layout"):
        assert files[f"{src}/{script}"].startswith("-rwx"), script
    assert deb.read("/lib/modprobe.d/cxgbit-ext.conf") == (KMOD / "cxgbit-ext.conf").read_text()
    assert not any(f.startswith("/etc/") for f in files), "cxgbit-ext-dkms ships a file in /etc"
    assert deb.read("/usr/share/doc/cxgbit-ext-dkms/copyright").startswith("Format: ")


def test_dkms_package_relations(built: Built) -> None:
    deb = built.deb("cxgbit-ext-dkms")
    depends, recommends = deb.relation("Depends"), deb.relation("Recommends")
    assert ["dkms"] in depends, depends
    assert ["xz-utils"] in depends, depends  # extract-ksrc's tar -I xz
    assert ["linux-headers-amd64", "linux-headers"] in recommends, recommends
    assert ["linux-source-6.1", "linux-source-6.12"] in recommends, recommends
    # dh_dkms's hooks, with the package's version
    assert f"DKMS_VERSION={code_version()}" in deb.control("postinst")
    assert "/usr/lib/dkms/common.postinst" in deb.control("postinst")
    assert "dkms remove -m $DKMS_NAME -v $DKMS_VERSION --all" in deb.control("prerm")


def test_python_package_holds_the_tools(built: Built) -> None:
    deb = built.deb("python3-cxgbit-ext")
    files = deb.files()
    for cmd in COMMANDS:
        assert files.get(f"/usr/bin/{cmd}", "").startswith("-rwx"), cmd
        assert deb.read(f"/usr/bin/{cmd}").startswith("#!/usr/bin/python3\n"), cmd
        assert f"/usr/share/man/man1/{cmd}.1.gz" in files, cmd
    for name, src in PY_PACKAGES.items():
        want = {f"/usr/lib/python3/dist-packages/{name}/{p.name}" for p in src.glob("*.py")}
        have = {f for f in files if re.fullmatch(rf"/usr/lib/python3/dist-packages/{name}/[^/]+\.py", f)}
        assert have == want, f"{name}: missing {sorted(want - have)}, extra {sorted(have - want)}"
    assert UNITS, "userspace/systemd has no units"
    for unit in UNITS:
        assert f"/lib/systemd/system/{unit}" in files, unit
    for doc in ("README.md", "usage.md", "README.Debian.gz", "copyright"):
        assert f"/usr/share/doc/python3-cxgbit-ext/{doc}" in files, doc
    # LIO's reservations fail with NOT READY unless <dbroot>/pr exists, and
    # rtslib's dbroot on Debian (targetcli-fb's directory) has none
    assert files.get("/etc/rtslib-fb-target/pr", "").startswith("d"), "no reservation state directory"


def test_python_package_relations(built: Built) -> None:
    depends = built.deb("python3-cxgbit-ext").relation("Depends")
    for pkg in ("python3-rtslib-fb", "python3-configshell-fb", "targetcli-fb", "python3-prometheus-client"):
        assert [pkg] in depends, (pkg, depends)
    assert ["python3"] in depends, depends  # ${python3:Depends}


def test_units_run_the_packaged_commands(built: Built) -> None:
    """The units are written for pip's /usr/local; packaged, each Exec line
    runs a command of the package and each file:// Documentation exists."""
    deb = built.deb("python3-cxgbit-ext")
    files = deb.files()
    for unit in UNITS:
        text = deb.read(f"/lib/systemd/system/{unit}")
        assert "/usr/local/" not in text, unit
        execs = re.findall(r"^Exec\w*=[-@:+!]*(\S+)", text, re.MULTILINE)
        assert execs, unit
        for exe in execs:
            assert exe in files, f"{unit}: {exe} is not in the package"
        for doc in re.findall(r"file://(\S+)", text):
            assert doc in files, f"{unit}: Documentation {doc} is not in the package"


def test_restore_unit_cannot_keep_lio_from_restoring(built: Built) -> None:
    """LIO's boot-time restore pulls ours in and waits for it, but only
    Wants it: a restore of ours that fails (no module for a new kernel, a
    damaged cxgbit-ext.json) leaves LIO's own restore to run, its stock
    portals up, instead of failing it with ours (Requires/RequiredBy)."""
    text = built.deb("python3-cxgbit-ext").read("/lib/systemd/system/cxgbit-ext.service")
    install = text.split("[Install]", 1)[1]
    assert re.search(r"^WantedBy=.*\brtslib-fb-targetctl\.service\b", install, re.MULTILINE), install
    assert not re.search(r"^(RequiredBy|RequisiteOf|PartOf|BindsTo)=", text, re.MULTILINE), text
    assert re.search(r"^Before=.*\brtslib-fb-targetctl\.service\b", text, re.MULTILINE), text


def test_units_are_never_started_by_the_package(built: Built) -> None:
    """None is started at install. The restore unit is enabled, never
    started or stopped by the package (a restore at upgrade would undo what
    the admin changed since), and its links go on remove; the daemons are
    not enabled."""
    deb = built.deb("python3-cxgbit-ext")
    scripts = {s: deb.control(s) for s in ("preinst", "postinst", "prerm", "postrm")}
    daemons = [u for u in UNITS if u not in ENABLED_UNITS]
    for unit in ENABLED_UNITS:
        assert f"deb-systemd-helper enable '{unit}'" in scripts["postinst"], unit
        for name, text in scripts.items():
            assert not re.search(rf"deb-systemd-invoke \S+ [^\n]*'{re.escape(unit)}'", text), (name, unit)
        assert re.search(rf'"\$1" = remove .*\n\s*deb-systemd-helper purge {re.escape(unit)}', scripts["postrm"])
    # debhelper's postinst-systemd-dont-enable: a unit is enabled again on
    # upgrade only if it was installed and enabled before
    dont_enable = "deb-systemd-helper debian-installed '{}'"
    for unit in ENABLED_UNITS:
        assert dont_enable.format(unit) not in scripts["postinst"], unit
    for unit in daemons:
        assert dont_enable.format(unit) in scripts["postinst"], unit


# The release whose cxgbit-ext.service was RequiredBy rtslib-fb-targetctl
PREVIOUS_TAG = "v0.2.0"


def unit_links(root: Path) -> set[str]:
    """The links to our units under root's /etc/systemd/system, as
    "<dir>/<unit>" (what systemctl enable made, or deb-systemd-helper)."""
    base = root / "etc/systemd/system"
    return {str(p.relative_to(base)) for p in base.glob("*/cxgbit-ext*.service")}


def test_upgrade_replaces_the_previous_releases_unit_links(built: Built, tmp_path: Path) -> None:
    """python3-cxgbit-ext's maintainer scripts as dpkg runs them, on a
    scratch root (DPKG_ROOT, which deb-systemd-helper and the scripts
    honour): installed over a release whose restore unit was RequiredBy
    LIO's (its unit file from the tag, enabled as a first install enables
    it), this version's postinst leaves this version's links only, no
    .requires that would still fail LIO's restore with ours; remove and
    purge then leave no link and no state."""
    p = subprocess.run(["git", "-C", str(TOP), "show", f"{PREVIOUS_TAG}:userspace/systemd/cxgbit-ext.service"],
                       capture_output=True, text=True)  # fmt: skip
    if p.returncode != 0:
        pytest.skip(f"no tag {PREVIOUS_TAG} in this clone (git fetch --tags): {p.stderr.strip()}")
    old_unit = p.stdout
    assert "RequiredBy=rtslib-fb-targetctl.service" in old_unit, "the tag's unit is not the one this upgrade replaces"
    deb = built.deb("python3-cxgbit-ext")
    root = tmp_path / "root"
    units = root / "lib/systemd/system"
    units.mkdir(parents=True)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in ("postinst", "postrm"):
        (scripts / name).write_text(deb.control(name))
    # no byte-compiling and no systemd of the host's: only the links
    shims = tmp_path / "bin"
    shims.mkdir()
    for tool in ("py3compile", "pypy3compile", "systemctl", "deb-systemd-invoke"):
        (shims / tool).write_text("#!/bin/sh\nexit 0\n")
        (shims / tool).chmod(0o755)
    env = {
        "PATH": f"{shims}:/usr/sbin:/usr/bin:/sbin:/bin",
        "DPKG_ROOT": str(root),
        "DPKG_MAINTSCRIPT_PACKAGE": "python3-cxgbit-ext",
        "DPKG_MAINTSCRIPT_NAME": "",
    }

    def maint(script: str, *args: str) -> None:
        env["DPKG_MAINTSCRIPT_NAME"] = script
        r = subprocess.run(["sh", "-e", str(scripts / script), *args], env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"{script} {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}"

    for unit in UNITS:
        (units / unit).write_text(deb.read(f"/lib/systemd/system/{unit}"))
    (units / "cxgbit-ext.service").write_text(old_unit)
    maint("postinst", "configure", "")
    assert unit_links(root) == {
        "multi-user.target.wants/cxgbit-ext.service", "rtslib-fb-targetctl.service.requires/cxgbit-ext.service"
    }, "the previous release's links, as its first install made them"  # fmt: skip

    (units / "cxgbit-ext.service").write_text(deb.read("/lib/systemd/system/cxgbit-ext.service"))
    maint("postinst", "configure", "0.2.0")
    assert unit_links(root) == {
        "multi-user.target.wants/cxgbit-ext.service", "rtslib-fb-targetctl.service.wants/cxgbit-ext.service"
    }  # fmt: skip

    maint("postrm", "remove")
    assert not unit_links(root)
    maint("postrm", "purge")
    left = [str(q.relative_to(root)) for q in (root / "var/lib/systemd").rglob("*cxgbit-ext*")]
    assert not left, f"deb-systemd-helper state left after purge: {left}"


@pytest.fixture(scope="module")
def newest_kernel() -> str:
    p = subprocess.run([str(TOP / "scripts/kernels"), "installed"], capture_output=True, text=True)
    kernels = p.stdout.split() if p.returncode == 0 else []
    if not kernels or shutil.which("dkms") is None:
        pytest.skip("no kernel with headers, or no dkms (make deps)")
    return kernels[-1]


def test_packaged_source_builds_under_dkms(built: Built, newest_kernel: str, tmp_path: Path) -> None:
    """What the package's postinst does, in a throwaway dkms tree: dkms add
    of /usr/src/cxgbit-ext-<version> as unpacked, dkms build for a kernel;
    then the example backend built out of tree on that source's headers
    and that build's Module.symvers, as an OEM builds a backend.
    LIO's headers come from where the module's Makefile finds them (make
    deps' cache, else linux-source; tests/host/test_dkms.py covers the latter)."""
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(built.deb("cxgbit-ext-dkms").path), str(root)], check=True)
    v = code_version()
    env = {k: val for k, val in os.environ.items() if not k.startswith("CXE_")}
    env.update(mok_signing_key=str(tmp_path / "mok.key"), mok_certificate=str(tmp_path / "mok.pub"))
    trees = []
    for t in ("dkms", "source", "install"):
        (tmp_path / t).mkdir()
        trees.append(f"--{t}tree={tmp_path / t}")

    def dkms(*args: str) -> str:
        p = subprocess.run(["dkms", *args, *trees], env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        assert p.returncode == 0, f"dkms {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}"
        return p.stdout

    assert f"cxgbit-ext/{v}: added" in dkms("add", str(root / f"usr/src/cxgbit-ext-{v}")) + dkms("status")
    dkms("build", f"cxgbit-ext/{v}", "-k", newest_kernel)
    (ko,) = (tmp_path / "dkms/cxgbit-ext" / v / newest_kernel / os.uname().machine / "module").glob("cxgbit_ext.ko*")
    p = subprocess.run(["modinfo", "-F", "version", str(ko)], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == v

    # An OEM's backend, out of tree on what the package installed: the
    # contract's headers under /usr/src and the Module.symvers of that build
    example = tmp_path / "example-backend"
    shutil.copytree(TOP / "kmod/example-backend", example)
    symvers = tmp_path / "dkms/cxgbit-ext" / v / newest_kernel / os.uname().machine / "Module.symvers"
    make = ["make", "-C", str(example), f"KVER={newest_kernel}", f"CXE_SRC={root / f'usr/src/cxgbit-ext-{v}'}",
            f"CXE_SYMVERS={symvers}"]  # fmt: skip
    p = subprocess.run(make, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert p.returncode == 0, f"{' '.join(make)}: exit {p.returncode}\n{p.stdout}{p.stderr}"
    assert "warning" not in p.stdout + p.stderr, p.stdout + p.stderr
    deps = subprocess.run(["modinfo", "-F", "depends", str(example / "cxgbit_ext_example.ko")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert deps.stdout.strip() == "cxgbit_ext", deps.stdout


def test_warmed_cache_serves_every_compile_of_a_later_dkms_build(
    built: Built, newest_kernel: str, tmp_path: Path
) -> None:
    """scripts/warm-dkms-cache (make package-cache), as the package test's
    guests rely on it: a second dkms build of the package, in a fresh dkms
    tree, with the settings the cache says (CACHE/dkms.env), takes every
    compile from what the first stored. A bad package is refused and
    leaves no cache."""
    script, deb = str(TOP / "scripts/warm-dkms-cache"), str(built.deb("cxgbit-ext-dkms").path)
    cache = tmp_path / "cache"

    def warm(*debs: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([script, str(cache), newest_kernel, *debs], capture_output=True, text=True,
                              timeout=2 * BUILD_TIMEOUT)  # fmt: skip

    p = warm(deb)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (cache / "dkms.env").read_text().split() == ["DEBIAN_KERNEL_USE_CCACHE=1", "LANG=C.UTF-8"]
    p = warm(deb)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"compiles served by the cache: (\d+) of (\d+)", p.stdout)
    assert m and int(m.group(2)) > 0 and m.group(1) == m.group(2), p.stdout

    other = tmp_path / "other"
    p = subprocess.run([script, str(other), newest_kernel, str(built.deb("python3-cxgbit-ext").path)],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode != 0 and "no dkms source" in p.stderr, p.stdout + p.stderr
    assert not other.exists()


def test_cxe_initiator_page_names_every_command_and_option() -> None:
    """debian/cxe-initiator.1 against the parser, as `--help` prints it."""
    page = (TOP / "debian/cxe-initiator.1").read_text().replace("\\-", "-")

    def helptext(*args: str) -> str:
        cmd = [sys.executable, "-m", "iscsi_initiator.cli", *args, "--help"]
        return subprocess.run(cmd, cwd=TOP / "initiator", capture_output=True, text=True, check=True).stdout

    top = helptext()
    (choices,) = set(re.findall(r"\{([\w,-]+)\}", top))  # the usage line's and the list's
    words = set(re.findall(r"--[\w-]+", top))
    for sub in choices.split(","):
        assert re.search(rf"^\.B {re.escape(sub)}$", page, re.MULTILINE), f"no .TP entry for {sub}"
        words |= set(re.findall(r"--[\w-]+", helptext(sub)))
    missing = sorted(w for w in words - {"--help"} if w not in page)
    assert not missing, f"debian/cxe-initiator.1 lacks {missing}"


def test_a_clone_without_release_tags_skips_the_upgrade_saying_why(tmp_path: Path) -> None:
    """A checkout without the previous release's tag (cloned without tags,
    or shallow) cannot build what the upgrade test starts from: the
    script says so and exits 3, and `make deb-previous` (make
    package-test's) goes on without it, the upgrade test then skipping with
    its reason, instead of failing the whole run."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-tags", str(TOP), str(clone)], check=True)
    # this tree's script and Makefile, in a history without the tag
    for f in ("scripts/build-deb-previous", "Makefile"):
        shutil.copy2(TOP / f, clone / f)
    out = tmp_path / "previous"
    p = subprocess.run(
        [str(clone / "scripts/build-deb-previous"), str(out)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 3, p.stdout + p.stderr
    assert "no release tag" in p.stderr and "git fetch --tags" in p.stderr, p.stderr
    assert not list(out.glob("*.deb"))
    m = subprocess.run(
        ["make", "-C", str(clone), "deb-previous", f"BUILD={tmp_path / 'build'}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert m.returncode == 0, m.stdout + m.stderr
    assert "no release tag" in m.stderr, m.stderr
