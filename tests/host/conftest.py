"""Host-test helpers shared by the files that fake the module's configfs tree."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cxgbit_ext.control import BUILTIN, NAME_MAX, valid_adapter_name

CAPS = "hcrc dcrc ddp iso t10pi"
# The backends file of a module built with the cxgb4 backend, on a host
# with no Chelsio adapter
BACKENDS = "soft on caps=hcrc,dcrc,ddp,iso,t10pi\ncxgb4 off no_ports caps=hcrc,dcrc,ddp,iso,rxagg\n"
# An adapter's counters file: every counter, in the module's order
# (cxe_stat_names), whether it has moved or not.
COUNTERS = ("syn_steered", "connections", "pdus_rx", "pdus_tx", "bytes_placed", "bytes_copied", "hdigest_errors",
            "ddigest_errors", "ddp_tag_errors", "drops", "bursts", "burst_pdus", "rx_waits", "handed_back",
            "logins_held", "model_cpls", "model_wrs", "range_bytes", "tx_inline", "data_cache_hits",
            "data_cache_misses", "sg_walk_starts", "logins_stalled", "pi_blocks", "pi_passes",
            "pi_checked")  # fmt: skip


def counters_file(counts: dict[str, int]) -> str:
    """The counters file of an adapter that has counted ``counts`` (the rest 0)."""
    unknown = set(counts) - set(COUNTERS)
    assert not unknown, f"the module has no counter {unknown}"
    return "".join(f"{c} {counts.get(c, 0)}\n" for c in COUNTERS)


def make_tree(
    tmp_path: Path,
    *,
    version: str,
    netdev: str,
    portals: str,
    connections: str,
    counters: dict[str, int] | None = None,
    kind: str = "soft",
) -> Path:
    """A copy of /sys/kernel/config/cxgbit_ext as the module lays it out,
    with one software adapter soft0 (the host cannot load the module) of
    type ``kind``. ``portals`` is what the module's portal_state file says,
    its portals file the first word of each line."""
    root = tmp_path / "cxgbit_ext"
    soft0 = root / "adapters" / "soft0"
    soft0.mkdir(parents=True)
    (soft0 / "type").write_text(kind + "\n")
    (soft0 / "netdev").write_text(netdev + "\n")
    (soft0 / "caps").write_text(CAPS + "\n")
    (soft0 / "counters").write_text(counters_file(counters or {}))
    (soft0 / "ddp").write_text("1\n")
    (soft0 / "iso").write_text("1\n")
    (root / "version").write_text(version + "\n")
    (root / "transport").write_text("cxgbit_ext\n")
    (root / "backends").write_text(BACKENDS)
    write_portals(root, portals, Path.write_text)
    (root / "connections").write_text(connections)
    (root / "device_counters").write_text("")
    return root


def write_portals(root: Path, state: str, write: Callable[[Path, str], int]) -> None:
    """The module's portals and portal_state files, as the module shows ``state``."""
    write(root / "portal_state", state)
    write(root / "portals", "".join(f"{ln.split()[0]}\n" for ln in state.splitlines() if ln.strip()))


class FakeKernel:
    """What the module does, in configfs, on mkdir/rmdir under adapters/
    and on writes to an adapter's files, for a make_tree() copy: a new
    adapter gets its files, soft0 cannot be removed (EPERM), a netdev
    another adapter serves is refused (EBUSY), toggles take kstrtobool
    values and read back as 0/1. ``refuse`` makes the kernel refuse a
    write, mkdir or rmdir of a path relative to the root ("adapters/x/ddp",
    or "rmdir adapters/x" for one operation only) with an errno, as a
    kernel-side failure mid-way would."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.refuse: dict[str, int] = {}
        self.builtin = {BUILTIN}  # adapters the module made itself: rmdir is EPERM
        self._mkdir = Path.mkdir
        self._rmdir = Path.rmdir
        self._write_text = Path.write_text

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
        kernel = self

        def mkdir(path: Path, *args: Any, **kwargs: Any) -> None:
            if not kernel.ours(path):
                return kernel._mkdir(path, *args, **kwargs)
            return kernel.mkdir(path)

        def rmdir(path: Path) -> None:
            if not kernel.ours(path):
                return kernel._rmdir(path)
            return kernel.rmdir(path)

        def write_text(path: Path, data: str, *args: Any, **kwargs: Any) -> int:
            if not kernel.ours(path.parent):
                return kernel._write_text(path, data, *args, **kwargs)
            return kernel.store(path, data)

        monkeypatch.setattr(Path, "mkdir", mkdir)
        monkeypatch.setattr(Path, "rmdir", rmdir)
        monkeypatch.setattr(Path, "write_text", write_text)
        return self

    def plug(self, name: str, kind: str, caps: str, netdev: str = "") -> None:
        """An adapter the module made itself, of backend ``kind`` (its type
        file) with ``caps``, as the module lists it under adapters/."""
        path = self.root / "adapters" / name
        self._mkdir(path)
        for f, text in (("type", kind), ("netdev", netdev), ("caps", caps), ("ddp", "1"), ("iso", "1")):
            self._write_text(path / f, text + "\n")
        self._write_text(path / "counters", counters_file({}))
        self.builtin.add(name)

    def count(self, adapter: str, counter: str, n: int) -> None:
        """The module counting n more of ``counter`` on ``adapter``."""
        path = self.root / "adapters" / adapter / "counters"
        lines = [ln.split() for ln in path.read_text().splitlines()]
        self._write_text(path, "".join(f"{k} {int(v) + n if k == counter else v}\n" for k, v in lines))

    def report(self, state: str) -> None:
        """What the module's portal_state file now says (the module decides
        where logins go; tests say what it decided, they do not re-derive it:
        tests/vm checks the module's own lines)."""
        write_portals(self.root, state, self._write_text)

    def ours(self, path: Path) -> bool:
        """An adapter directory of this tree."""
        return path.parent == self.root / "adapters"

    def _fail(self, path: Path, op: str) -> None:
        rel = str(path.relative_to(self.root))
        err = self.refuse.get(f"{op} {rel}") or self.refuse.get(rel)
        if err:
            raise OSError(err, os.strerror(err), str(path))

    def mkdir(self, path: Path) -> None:
        self._fail(path, "mkdir")
        if path.exists():
            raise OSError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
        if not valid_adapter_name(path.name):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(path))
        self._mkdir(path)
        # the backend whose adapters are made by name made the built-in one too
        made = (self.root / "adapters" / BUILTIN / "type").read_text()
        for name, text in (("type", made), ("netdev", "\n"), ("caps", CAPS + "\n"), ("ddp", "1\n"),
                           ("iso", "1\n"), ("counters", counters_file({}))):  # fmt: skip
            self._write_text(path / name, text)

    def rmdir(self, path: Path) -> None:
        self._fail(path, "rmdir")
        if path.name in self.builtin:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), str(path))
        for f in path.iterdir():
            f.unlink()
        self._rmdir(path)

    def store(self, path: Path, data: str) -> int:
        self._fail(path, "write")
        value = data.strip()
        if path.name == "netdev":
            if len(value) > NAME_MAX or "/" in value or " " in value:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(path))
            for other in (self.root / "adapters").iterdir():
                if other != path.parent and value and (other / "netdev").read_text().strip() == value:
                    raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))
            self._write_text(path, value + "\n")
        elif path.name in ("ddp", "iso"):
            # kstrtobool: the first character decides (and "on"/"off")
            v = value.lower()
            if v[:1] in ("1", "y", "t") or v == "on":
                self._write_text(path, "1\n")
            elif v[:1] in ("0", "n", "f") or v == "off":
                self._write_text(path, "0\n")
            else:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(path))
        else:  # type, caps, counters are read-only
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return len(data)


# A backend no tool knows by name, as the module shows one: its line in the
# backends file, an adapter of it the module lists under adapters/ (ex0)
# and an adapter of a device of its own, known by its device_counters
# lines (ex1). The tools must show all of it as the module reports it.
EXAMPLE_BACKEND = "example on caps=hcrc,dcrc\n"
EXAMPLE_DEVICE_COUNTERS = {"pdus_rx": 3, "pdus_tx": 4, "bytes_placed": 0}


def add_example_backend(kernel: FakeKernel) -> None:
    """The backend "example" registered in kernel's tree, as above."""
    root = kernel.root
    (root / "backends").write_text((root / "backends").read_text() + EXAMPLE_BACKEND)
    kernel.plug("ex0", "example", "hcrc dcrc")
    (root / "device_counters").write_text("".join(f"example ex1 {k} {v}\n" for k, v in EXAMPLE_DEVICE_COUNTERS.items()))


@pytest.fixture
def kernel_for(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeKernel]:
    """kernel_for(root): a FakeKernel serving root for this test."""

    def make(root: Path) -> FakeKernel:
        return FakeKernel(root).install(monkeypatch)

    return make


# The target host's netdevs, as the VM topology has them (the host tests
# cannot make netdevs; control.netdevs() asks this namespace).
NETNS = frozenset({"lo", "tgt0", "tgt1"})


@pytest.fixture
def netns(monkeypatch: pytest.MonkeyPatch) -> frozenset[str]:
    from cxgbit_ext import control

    monkeypatch.setattr(control, "netdevs", lambda: set(NETNS))
    return NETNS


def snapshot(root: Path) -> dict[str, str]:
    """Every adapter file and its content: 'nothing changed' means this is equal."""
    return {str(f.relative_to(root)): f.read_text() for f in sorted((root / "adapters").glob("*/*"))}
