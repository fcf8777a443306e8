"""The Debian packages in the guest, as an admin installs them.

`apt-get install ./cxgbit-ext-dkms_V_all.deb ./python3-cxgbit-ext_V_all.deb`
offline (their dependencies are the host's, already installed); the
package's postinst has dkms build and install the module for the running
kernel; `modprobe cxgbit` loads it through the packaged modprobe.d rule; a
target made with the installed commands (targetcli, targetcli-offload
enable_offload true, cxgbit-ext bind) takes an open-iscsi login made with
cxe-initiator, fio verifies through it and `cxgbit-ext connections` shows it
offloaded. Then `apt-get remove`: module, dkms tree, modprobe rule, commands
and the restore unit's links are gone (none is left to a unit file that is
gone); `apt-get purge`: nothing of
either package is left.

The upgrade (test_upgrade_with_a_session_live): the previous release's
packages (`make deb-previous`: the newest v<version> tag before this
version, built by its own scripts) installed and serving an offloaded
session, this version's installed over them while that session carries
fio verify: the loaded module stays the previous version, sessions
live, and the package says which version loads next; the new one loads
once the module is unloaded; the previous release's unit links are
replaced by this one's.

Not in make vm-test's batches: it runs only when this file is named on
pytest's command line (a batch of `tests/vm` skips it), needs build/deb/
from `make deb` (and build/deb-previous/ for the upgrade; skipped
without), and is slow under TCG. gcc takes 10-15 min of the guest's one
TCG thread for each dkms build of the module (~20 s of CPU on the host):
`make package-cache` compiles the packages' module on the host for every
kernel into build/dkms-ccache, and the guest's dkms builds take those
objects through Debian's kernel headers' ccache switch (compiler_cache
below). Even so a dkms build takes 4-6 min of the guest and depmod
60 s (6.1) to 110 s (6.12's compressed modules) each time dkms installs
or removes: on 2026-12-02, nothing else running, the install took 776 s
on 6.12 and the upgrade 1244 s on 6.1. apt.log in
the results directory has each line of apt's output with its time,
dkms-make.log each line of dkms's make.log. /boot shows the guest's kernel alone, as on a host
with one kernel installed (dkms would also build for the newest one in
/boot).

`make test` runs the install on every kernel, side by side, and leaves
the upgrade (two dkms builds) to `make package-test`, which runs both
tests on every kernel:

    make package-test
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from testbed import fio, topo
from testbed.follow import Follow
from testbed.kmod import SRC_CACHE

from .conftest import TOP, connection_lines, lun_disk, wait_for

pytestmark = pytest.mark.timeout(3600)

PACKAGES = ("cxgbit-ext-dkms", "python3-cxgbit-ext")
IQN = "iqn.2026-11.org.cxgbit-ext:packages"
LINK = topo.LINKS[0]
PORTAL = "0.0.0.0:3260"
# What a root shell of the target host has: Debian's python3 and the
# package's commands in /usr/bin, not the testbed's .venv.
ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")},
    "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    "DEBIAN_FRONTEND": "noninteractive",
}
# The objects the host compiled for these packages (`make package-cache`,
# scripts/warm-dkms-cache), which the guest's dkms builds take through the
# kernel headers' own switch for ccache
DKMS_CACHE = TOP / "build/dkms-ccache"


def code_version() -> str:
    m = re.search(
        r'^#define\s+CXE_VERSION\s+"([^"]+)"', (TOP / "kmod/cxgbit-ext/cxgbit_ext.h").read_text(), re.MULTILINE
    )
    assert m, "no CXE_VERSION in cxgbit_ext.h"
    return m.group(1)


def run(*cmd: str, netns: bool = False, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A command as root on the target host; in its network namespace
    (portals and netdev names are resolved there) with ``netns``."""
    argv = ["nsenter", f"--net=/run/netns/{topo.TGT_NS}", *cmd] if netns else list(cmd)
    p = subprocess.run(argv, env=ENV, cwd="/", capture_output=True, text=True, timeout=timeout)
    assert not check or p.returncode == 0, f"{' '.join(argv)}: exit {p.returncode}\n{p.stdout}{p.stderr}"
    return p


def apt_get(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """apt-get ARGS as root on the target host, its output (stderr with
    stdout) written as it comes to the results directory's apt.log, each
    line with its seconds since the command began: where an install's
    minutes go, also while it runs. dkms's make.log of each build the
    command runs goes to dkms-make.log the same way: dkms prints nothing
    while it builds."""
    t0 = time.monotonic()
    results = os.environ.get("CXE_RESULTS")
    lines = [f"# apt-get {' '.join(args)}\n"]
    with (
        open(Path(results) / "apt.log" if results else os.devnull, "a") as log,
        open(Path(results) / "dkms-make.log" if results else os.devnull, "a") as make_log,
        Follow("/var/lib/dkms/cxgbit-ext/*/build/make.log", make_log, t0),
        subprocess.Popen(
            ["apt-get", *args], env=ENV, cwd="/", text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        ) as p,
    ):
        make_log.write(lines[0])
        assert p.stdout is not None
        log.write(lines[0])
        for line in p.stdout:
            lines.append(f"{time.monotonic() - t0:7.1f} {line}")
            log.write(lines[-1])
            log.flush()
        rc = p.wait()
    out = "".join(lines)
    assert not check or rc == 0, f"apt-get {' '.join(args)}: exit {rc}\n{out}"
    return subprocess.CompletedProcess(["apt-get", *args], rc, out, "")


def status(pkg: str) -> str:
    """dpkg's status of pkg ("install ok installed", "deinstall ok
    config-files", or "" when dpkg does not know it)."""
    p = run("dpkg-query", "-W", "-f=${Status}", pkg, check=False)
    return p.stdout.strip() if p.returncode == 0 else ""


def deb_files(deb: Path) -> list[str]:
    """The regular files and symlinks a .deb installs, as absolute paths."""
    out = run("dpkg-deb", "-c", str(deb)).stdout
    return [ln.split(maxsplit=5)[5].split(" -> ")[0].removeprefix(".") for ln in out.splitlines() if ln[0] in "-l"]


def module_files(kver: str) -> list[Path]:
    """The package's modules, as dkms installed them."""
    return sorted(Path(f"/lib/modules/{kver}").glob("updates/dkms/cxgbit_ext*.ko*"))


def built_modules(v: str, kver: str) -> list[str]:
    """The modules version v builds for kver: its dkms.conf's
    BUILT_MODULE_NAME entries, read as dkms reads the file (sourced by
    bash with dkms's variables for the kernel). A release before the cxgb4
    backend became a module of its own builds the core alone."""
    conf = f"/usr/src/cxgbit-ext-{v}/dkms.conf"
    dkms = [f"kernelver={kver}", f"kernel_source_dir=/lib/modules/{kver}/build", "dkms_tree=/var/lib/dkms"]
    script = 'source "$1" && printf "%s\\n" "${BUILT_MODULE_NAME[@]}"'
    return run("env", *dkms, f"arch={os.uname().machine}", "bash", "-c", script, "_", conf).stdout.split()


def unit_links(name: str = "cxgbit-ext*.service") -> list[Path]:
    """The links systemctl enable (deb-systemd-helper) made to our units."""
    return list(Path("/etc/systemd/system").glob(f"*/{name}"))


@pytest.fixture
def debs(request: pytest.FixtureRequest) -> Iterator[list[Path]]:
    """The two .debs `make deb` built on the host, copied where apt's
    unprivileged _apt user can read them (not the 9p share, nor pytest's
    private tmp_path)."""
    if not any(Path(a.split("::")[0]).name == Path(__file__).name for a in request.config.args):
        pytest.skip("15-30 min under TCG: runs only when named (testbed/run ... -- tests/vm/test_packages.py)")
    v = code_version()
    built = [TOP / "build/deb" / f"{pkg}_{v}_all.deb" for pkg in PACKAGES]
    missing = [p.name for p in built if not p.exists()]
    if missing:
        pytest.skip(f"no {', '.join(missing)} in build/deb: run `make deb` on the host first")
    where = Path("/tmp/cxe-debs")
    where.mkdir(mode=0o755, exist_ok=True)
    copies = [Path(shutil.copy(p, where / p.name)) for p in built]
    for c in copies:
        c.chmod(0o644)
    yield copies
    shutil.rmtree(where)


@pytest.fixture
def previous_debs(debs: list[Path]) -> list[Path]:
    """The previous release's two .debs (`make deb-previous`), beside this
    tree's, for the upgrade."""
    built = sorted((TOP / "build/deb-previous").glob("*.deb"))
    if [p.name.split("_")[0] for p in built] != sorted(PACKAGES):
        pytest.skip("no previous release's packages in build/deb-previous: run `make deb-previous` on the host first")
    for b in built:
        shutil.copy(b, debs[0].parent / b.name)
        (debs[0].parent / b.name).chmod(0o644)
    return [debs[0].parent / b.name for b in built]


def deb_version(deb: Path) -> str:
    return deb.name.split("_")[1]


@pytest.fixture
def offline_apt(kver: str) -> Iterator[None]:
    """apt and dpkg as the guest has them, made usable offline.

    The guest's /var is the host's under an overlay, so dpkg's database is
    the host's and writes go to the overlay (virtme-ng bind-mounts fresh
    dpkg lock files); /var/lib/apt, /var/cache and /var/log are empty
    tmpfs, so apt's directories are made and it resolves from dpkg's
    status alone. man-db's trigger would index every manual page on the share
    (minutes): off for the test. The module build reads LIO's private
    headers from `make deps`' cache on the host, hidden here under the empty
    /var/cache, instead of decompressing linux-source under TCG (another
    10-20 min; tests/host/test_dkms.py builds from linux-source)."""
    for d in ("/var/lib/apt/lists/partial", "/var/cache/apt/archives/partial", "/var/log/apt"):
        Path(d).mkdir(parents=True, exist_ok=True)
    one_kernel = one_kernel_installed(kver)
    auto = Path("/var/lib/man-db/auto-update")
    had_auto = auto.exists()
    auto.unlink(missing_ok=True)
    host = Path("/run/cxe-hostroot")
    host.mkdir(exist_ok=True)
    # a non-recursive bind of / is the shared root without the guest's overlays
    run("mount", "--bind", "/", str(host))
    try:
        # where the module's Makefile looks for them under DKMS (its default)
        cache = host / SRC_CACHE.relative_to("/") / kver
        if (cache / "drivers/target/iscsi/iscsi_target_login.h").exists():
            shutil.copytree(cache, SRC_CACHE / kver, symlinks=True, dirs_exist_ok=True)
    finally:
        run("umount", str(host))
    with one_kernel, compiler_cache():
        yield
    if had_auto:
        auto.touch()


@contextmanager
def compiler_cache() -> Iterator[None]:
    """dkms's builds with Debian's kernel headers' compiler cache switch
    (DEBIAN_KERNEL_USE_CCACHE=1, with the locale: CACHE/dkms.env) on a
    copy of what the host compiled for the same packages and kernels: a
    build runs every compiler command, and takes the object from the
    cache where ccache finds the same compiler, arguments and inputs, in
    seconds instead of the 10-15 min gcc takes under TCG. Without the
    host's cache, dkms compiles everything here. How many compiles the
    cache served is printed when the test ends."""
    if not DKMS_CACHE.is_dir():
        print(f"no {DKMS_CACHE.relative_to(TOP)} (make package-cache): dkms compiles everything under TCG")
        yield
        return
    where = Path("/tmp/cxe-ccache")
    shutil.copytree(DKMS_CACHE, where, dirs_exist_ok=True)
    saved = dict(ENV)
    # the switch and the locale the host compiled under (ccache hashes it)
    for name in ("LC_ALL", "LC_CTYPE", "LC_MESSAGES"):
        ENV.pop(name, None)
    for line in (where / "dkms.env").read_text().split():
        name, _, value = line.partition("=")
        ENV[name] = value
    ENV["CCACHE_DIR"] = str(where)
    run("ccache", "--zero-stats")
    try:
        yield
    finally:
        served = run(str(TOP / "scripts/warm-dkms-cache"), "--served", str(where), check=False)
        print(f"dkms: {served.stdout.strip() or served.stderr.strip()}")
        ENV.clear()
        ENV.update(saved)
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def one_kernel_installed(kver: str) -> Iterator[None]:
    """/boot as a host with only the running kernel installed has it.
    dkms builds for the running kernel and for the newest one in /boot;
    the guest's /boot is the host's, with every kernel of kernels.conf,
    each of which runs this test in a guest of its own."""
    own = Path("/run/cxe-boot")
    own.mkdir(exist_ok=True)
    run("mount", "-t", "tmpfs", "cxe-boot", str(own))
    try:
        for f in ("config", "vmlinuz", "System.map"):
            if Path(f"/boot/{f}-{kver}").exists():
                shutil.copy2(f"/boot/{f}-{kver}", own)
        run("mount", "--bind", str(own), "/boot")
        try:
            yield
        finally:
            run("umount", "/boot")
    finally:
        run("umount", str(own))


def purge_everything() -> None:
    """Whatever state the test left the guest in: LIO cleared, the module
    unloaded, both packages purged."""
    run("iscsiadm", "-m", "node", "--logoutall=all", check=False)
    if Path("/sys/kernel/config/target/iscsi").exists():
        run("targetcli", "clearconfig", "confirm=True", netns=True, check=False, timeout=120)
    for mod in ("cxgbit_ext_cxgb4", "cxgbit_ext"):
        if Path(f"/sys/module/{mod}").exists():
            run("rmmod", mod, check=False)
    if any(status(p) for p in PACKAGES):
        apt_get("purge", "-y", *PACKAGES, check=False)


# Each test on one series of kernels.conf in make test (above); --every-share
# (make package-test) runs both on every kernel
@pytest.mark.dealt(share=-1)
def test_install_use_remove_purge(debs: list[Path], offline_apt: None, iscsid: None, kver: str) -> None:
    v = code_version()
    assert not module_files(kver) and not any(status(p) for p in PACKAGES), "installed before the test"
    t0 = time.monotonic()
    try:
        install(debs, kver, v)
        print(f"install (dkms build and install for {kver}): {time.monotonic() - t0:.0f} s")
        t1 = time.monotonic()
        use_offloaded()
        print(f"target, login, fio verify: {time.monotonic() - t1:.0f} s")
        t2 = time.monotonic()
        remove(debs, kver, v)
        print(f"remove: {time.monotonic() - t2:.0f} s")
        purge(debs, v)
    finally:
        purge_everything()


def install(debs: list[Path], kver: str, v: str, links: bool = True) -> None:
    """apt-get install of debs (version v) and what it must have done;
    ``links``: the restore unit's links are this version's."""
    apt_install(debs, kver, v)
    check_installed(debs, kver, v)
    if links:
        check_unit_links()


def apt_install(debs: list[Path], kver: str, v: str) -> subprocess.CompletedProcess[str]:
    p = apt_get("install", "-y", "--no-install-recommends", *map(str, debs), check=False)
    if p.returncode != 0:
        log = Path(f"/var/lib/dkms/cxgbit-ext/{v}/build/make.log")
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no dkms make.log)"
        pytest.fail(f"apt-get install: exit {p.returncode}\n{p.stdout}\ndkms make.log:\n{tail}")
    return p


def check_installed(debs: list[Path], kver: str, v: str) -> None:
    for pkg in PACKAGES:
        assert status(pkg) == "install ok installed", pkg
    for deb in debs:
        absent = [f for f in deb_files(deb) if not os.path.lexists(f)]
        assert not absent, f"{deb.name}: not installed: {absent}"
    # the postinst's dkms build and install, for this kernel
    assert f"cxgbit-ext/{v}, {kver}, {os.uname().machine}: installed" in run("dkms", "status", "cxgbit-ext").stdout
    names = built_modules(v, kver)
    assert "cxgbit_ext" in names, f"dkms.conf of {v} builds {names}"
    if v == code_version():
        assert "cxgbit_ext_cxgb4" in names, f"dkms.conf of {v} builds no cxgb4 backend: {names}"
    files = {f.name.split(".")[0]: f for f in module_files(kver)}
    assert sorted(files) == sorted(names), f"dkms installed {sorted(files)}, dkms.conf of {v} builds {names}"
    for name in names:
        assert run("modinfo", "-n", name).stdout.strip() == str(files[name]), f"depmod's index does not name {name}"
    assert run("modinfo", "-F", "version", str(files["cxgbit_ext"])).stdout.strip() == v
    # the installed commands run Debian's python3 on the packaged library
    imports = "import cxgbit_ext, targetcli_offload, iscsi_initiator as i; print(i.__file__)"
    where = run("/usr/bin/python3", "-c", imports)
    assert where.stdout.startswith("/usr/lib/python3/dist-packages/"), where.stdout


def check_unit_links() -> None:
    """The restore unit enabled as this version's [Install] says (not
    started: no systemd runs in the guest), and nothing else: no link a
    previous version's [Install] made, no daemon."""
    assert {p.parent.name for p in unit_links("cxgbit-ext.service")} == {
        "multi-user.target.wants", "rtslib-fb-targetctl.service.wants"
    }  # fmt: skip
    assert unit_links() == unit_links("cxgbit-ext.service"), "a daemon unit was enabled"


def use_offloaded(version: str | None = None) -> None:
    """A target from the installed commands, offloaded, logged in, verified;
    the module modprobe loaded of ``version``, when given."""
    dev = log_in_offloaded()
    if version is not None:
        assert Path("/sys/module/cxgbit_ext/version").read_text().strip() == version
    (res,) = fio.write_verify(dev, size="16M")
    assert res.read_bytes == 16 << 20, res
    conn = the_connection()
    assert conn["counters"]["pdus_rx"] > 0 and conn["offloads"]["ddp"] == "on", conn
    assert f"{LINK.ini_ip}:" in run("/usr/bin/cxgbit-ext", "connections").stdout
    log_out_and_unload()


def the_connection() -> dict[str, Any]:
    """The one offloaded connection, as `cxgbit-ext --json connections` shows it."""
    conns = json.loads(run("/usr/bin/cxgbit-ext", "--json", "connections").stdout)
    assert len(conns) == 1, conns
    (c,) = conns
    assert c["peer"].startswith(f"{LINK.ini_ip}:") and c["adapter"] == "soft0", c
    return c


def log_in_offloaded() -> str:
    """The module loaded as LIO asks for it, a target from the installed
    commands on an offloaded portal, logged in with cxe-initiator; its disk."""
    run("modprobe", "iscsi_target_mod")
    # the packaged /lib/modprobe.d rule: LIO's request for cxgbit loads ours
    run("modprobe", "cxgbit")
    assert Path("/sys/module/cxgbit_ext").exists() and not Path("/sys/module/cxgbit").exists()
    run("/usr/bin/cxgbit-ext", "bind", "soft0", LINK.tgt_dev, netns=True)
    for line in (
        "/backstores/ramdisk create name=pkg0 size=32M",
        f"/iscsi create {IQN}",  # and its default portal 0.0.0.0:3260, in the target's namespace
        f"/iscsi/{IQN}/tpg1/luns create /backstores/ramdisk/pkg0",
        f"/iscsi/{IQN}/tpg1 set attribute authentication=0 demo_mode_write_protect=0 "
        "generate_node_acls=1 cache_dynamic_acls=1",
    ):
        run("targetcli", *line.split(), netns=True, timeout=180)
    run("/usr/bin/targetcli-offload", f"/iscsi/{IQN}/tpg1/portals/{PORTAL}", "enable_offload", "true",
        netns=True, timeout=180)  # fmt: skip
    portals = json.loads(run("/usr/bin/cxgbit-ext", "--json", "portals").stdout)
    assert any(p["target"] == IQN and p.get("offloaded") for p in portals), portals

    run("/usr/bin/cxe-initiator", "login", "--portal", f"{LINK.tgt_ip}:3260", timeout=180)
    return lun_disk(IQN, LINK.tgt_ip, 0)


def log_out_and_unload() -> None:
    run("/usr/bin/cxe-initiator", "logout")
    run("targetcli", "clearconfig", "confirm=True", netns=True, timeout=180)
    wait_for("the offloaded connection ends", lambda: not connection_lines(), 30)
    run("rmmod", "cxgbit_ext")


def remove(debs: list[Path], kver: str, v: str) -> None:
    apt_get("remove", "-y", *PACKAGES)
    assert status("cxgbit-ext-dkms") == "" or status("cxgbit-ext-dkms").endswith("not-installed")
    # the postrm purge hook of debhelper's units keeps python3-cxgbit-ext in config-files until purge
    assert status("python3-cxgbit-ext") == "deinstall ok config-files"
    assert not module_files(kver), module_files(kver)
    assert run("modinfo", "cxgbit_ext", check=False).returncode != 0, "depmod's index still names cxgbit_ext"
    assert not Path(f"/var/lib/dkms/cxgbit-ext/{v}").exists()
    assert not Path(f"/usr/src/cxgbit-ext-{v}").exists()
    assert not Path("/lib/modprobe.d/cxgbit-ext.conf").exists()
    assert not unit_links(), f"links left to removed units: {unit_links()}"
    for deb in debs:
        left = [f for f in deb_files(deb) if os.path.lexists(f)]
        assert not left, f"{deb.name}: left after remove: {left}"


def purge(debs: list[Path], v: str) -> None:
    apt_get("purge", "-y", *PACKAGES)
    for pkg in PACKAGES:
        assert status(pkg) in ("", "unknown ok not-installed"), (pkg, status(pkg))
    left = [p for p in (Path("/usr/lib/python3/dist-packages/cxgbit_ext"), Path("/var/lib/dkms/cxgbit-ext"),
                        Path(f"/usr/src/cxgbit-ext-{v}"), Path("/usr/share/doc/python3-cxgbit-ext"),
                        Path("/usr/share/doc/cxgbit-ext-dkms")) if p.exists()]  # fmt: skip
    left += [p for p in Path("/var/lib/systemd").glob("deb-systemd-helper-*/**/cxgbit-ext*")]
    left += unit_links()
    assert not left, f"left after purge: {left}"
    for deb in debs:
        remaining = [f for f in deb_files(deb) if os.path.lexists(f)]
        assert not remaining, f"{deb.name}: left after purge: {remaining}"


@pytest.mark.dealt(share=0)
def test_upgrade_with_a_session_live(
    debs: list[Path], previous_debs: list[Path], offline_apt: None, iscsid: None, kver: str
) -> None:
    """The previous release installed and serving an offloaded session;
    this one installed over it while that session reads and writes. The
    module is never unloaded under its sessions: the session carries I/O
    through the upgrade, the loaded module stays the previous version, and
    the package says which version loads next. Once the target is torn
    down and the module unloaded, modprobe loads the new one, which then
    carries a session. The previous release's unit links are replaced by
    this one's."""
    old, new = deb_version(previous_debs[0]), code_version()
    assert old != new, f"the previous release is this version ({new})"
    assert not module_files(kver) and not any(status(p) for p in PACKAGES), "installed before the test"
    try:
        install(previous_debs, kver, old, links=False)
        dev = log_in_offloaded()
        before = the_connection()
        io = BackgroundVerify(dev)
        with io:
            p = apt_install(debs, kver, new)
        assert io.rounds >= 2, f"no I/O went through the session during the upgrade ({io.rounds} rounds)"
        assert f"cxgbit_ext {old} stays loaded" in p.stdout + p.stderr, p.stdout + p.stderr
        assert Path("/sys/module/cxgbit_ext/version").read_text().strip() == old
        assert run("modinfo", "-F", "version", "cxgbit_ext").stdout.strip() == new
        after = the_connection()
        assert after["peer"] == before["peer"], "the session was not the same one after the upgrade"
        assert after["counters"]["pdus_rx"] > before["counters"]["pdus_rx"], (before, after)
        check_installed(debs, kver, new)
        check_unit_links()
        assert f"cxgbit-ext/{old}" not in run("dkms", "status", "cxgbit-ext").stdout
        log_out_and_unload()

        use_offloaded(new)
        remove(debs, kver, new)
        purge(debs, new)
    finally:
        purge_everything()


class BackgroundVerify:
    """fio write-and-verify rounds of 1 MiB on dev, one every 15 s (the
    upgrade's dkms build shares the guest's one TCG thread), in a thread
    while the block runs; any verify error fails the test when it ends."""

    def __init__(self, dev: str) -> None:
        self.dev, self.rounds = dev, 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        try:
            while not self.stop.wait(15):
                fio.write_verify(self.dev, size="1M", iodepth=4)
                self.rounds += 1
        except Exception as e:  # reported when the block ends
            self.error = e

    def __enter__(self) -> BackgroundVerify:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(600)
        if self.error is not None:
            raise AssertionError(f"I/O through the session failed during the upgrade: {self.error}")
