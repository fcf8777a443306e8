"""A single-node Ceph cluster for the scale-out gateways, run natively.

The gateways are TCG guests; Ceph's daemons run on the host at native speed
(under TCG they would be the bottleneck), inside their own network namespace
so that nothing listens on the host's addresses. The namespace holds a
bridge with the cluster's address; a guest reaches the cluster through a tap
on that bridge. One monitor, one manager, one memstore OSD, no cephx, pools
of size 1: a cluster for tests, torn down without leftovers.

    python3 -m testbed.ceph start   # from the checkout's top; prints the ceph.conf path
    python3 -m testbed.ceph status
    python3 -m testbed.ceph stop

To point gateways at an existing cluster instead, give them that cluster's
ceph.conf and keyring; nothing here is needed then.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.entry import use_project_venv

DEFAULT_DIR = Path("/run/cxgbit-ext/ceph")
DEFAULT_NS = "cxe-ceph"
DEFAULT_ADDR = "198.18.20.1/24"  # RFC 2544 benchmarking range, as the testbed's links
BRIDGE = "cxebr0"
# what the ceph tool prints when the monitor refused its command table
PREFLIGHT_REFUSED = "problem getting command descriptions"


class CephError(Exception):
    """The cluster did not come up, or a command against it failed."""


def option_problem(name: str, value: str) -> str | None:
    """Why ``name = value`` cannot go into ceph.conf, or None."""
    if not re.fullmatch(r"[a-z][a-z0-9_ ]*", name) or not value or "\n" in value:
        return f"ceph option {name!r} = {value!r}: a name of a-z, 0-9, _ and a one-line value"
    return None


@dataclass(frozen=True)
class Cluster:
    """Where the cluster lives: its directory, namespace and address."""

    dir: Path = DEFAULT_DIR
    netns: str = DEFAULT_NS
    addr: str = DEFAULT_ADDR
    # more of ceph.conf's [global] (name, value), over the defaults below
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name, value in self.options:
            if problem := option_problem(name, value):
                raise CephError(problem)

    @property
    def ip(self) -> str:
        return self.addr.split("/")[0]

    @property
    def conf(self) -> Path:
        return self.dir / "ceph.conf"

    def run(self, *cmd: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Ceph command against this cluster, inside its namespace.

        The ``ceph`` tool asks the monitor for its command table before it
        sends anything; a monitor, even one long in quorum, now and then
        refuses that first question (EPERM, "problem getting command
        descriptions"). The command itself has not gone out then, so it is
        asked again, within ``timeout``: any other failure is the answer.
        """
        argv = ["ip", "netns", "exec", self.netns, *cmd, "-c", str(self.conf)]
        deadline = time.monotonic() + timeout
        while True:
            left = max(deadline - time.monotonic(), 1.0)
            p = subprocess.run(argv, capture_output=True, text=True, timeout=left)
            if p.returncode == 0 or PREFLIGHT_REFUSED not in p.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if check and p.returncode != 0:
            raise CephError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-1000:]}")
        return p

    def ceph(self, *args: str, timeout: float = 60) -> str:
        return self.run("ceph", *args, timeout=timeout).stdout

    def rbd(self, *args: str, timeout: float = 120) -> str:
        return self.run("rbd", *args, timeout=timeout).stdout

    def watch_blocklist(self, out: Path) -> subprocess.Popen[bytes]:
        """A process in the cluster's namespace that keeps ``out`` current:
        the OSD blocklist's entries (``ADDR:PORT/NONCE``) as a JSON list,
        asked once a second over one RADOS connection. Guests read the file
        instead of running the ceph tool, which under TCG takes longer
        than the failover it would time."""
        argv = ["ip", "netns", "exec", self.netns, sys.executable, "-m", "testbed.ceph", "--dir", str(self.dir),
                "--netns", self.netns, "--addr", self.addr, "--out", str(out), "watch-blocklist"]  # fmt: skip
        return subprocess.Popen(argv, cwd=Path(__file__).resolve().parent.parent, start_new_session=True)

    def cut_off(self, ip: str, cut: bool = True) -> None:
        """Cut (or mend) the cluster's link with the client at ``ip``: its
        packets to and from the cluster's own addresses are dropped in the
        cluster's namespace. Traffic the bridge forwards between guests'
        taps does not pass these hooks and goes on."""
        nft = ["ip", "netns", "exec", self.netns, "nft"]
        if cut:
            rules = (f"table inet cxe_cut {{\nchain in {{ type filter hook input priority 0; ip saddr {ip} drop; }}\n"
                     f"chain out {{ type filter hook output priority 0; ip daddr {ip} drop; }}\n}}\n")  # fmt: skip
            p = subprocess.run([*nft, "-f", "-"], input=rules, capture_output=True, text=True)
        else:
            p = subprocess.run([*nft, "delete", "table", "inet", "cxe_cut"], capture_output=True, text=True)
        if p.returncode != 0:
            raise CephError(f"nft in {self.netns}: exit {p.returncode}: {p.stderr.strip()}")

    def _daemon(self, *cmd: str) -> None:
        # each daemon forks into the background; its own session, so that
        # no caller's process group (or terminal) takes it down by accident
        argv = ["ip", "netns", "exec", self.netns, *cmd, "-c", str(self.conf)]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, start_new_session=True)
        if p.returncode != 0:
            raise CephError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-1000:]}")

    def _write_conf(self, fsid: str) -> None:
        d = self.dir
        net = f"{self.ip.rsplit('.', 1)[0]}.0/{self.addr.split('/')[1]}"
        self.conf.write_text(
            "[global]\n"
            f"fsid = {fsid}\n"
            f"mon host = {self.ip}\n"
            f"public network = {net}\n"
            "auth cluster required = none\n"
            "auth service required = none\n"
            "auth client required = none\n"
            "keyring = /dev/null\n"
            "osd pool default size = 1\n"
            "osd pool default min size = 1\n"
            "mon allow pool size one = true\n"
            "mon warn on pool no redundancy = false\n"
            "mon data avail warn = 1\n"
            "osd objectstore = memstore\n"
            "memstore device bytes = 1073741824\n"
            "osd crush chooseleaf type = 0\n"
            # the OSD is placed in the CRUSH map here; at start it would ask
            # the monitor to create itself, which fails for a memstore OSD
            "osd crush update on start = false\n"
            "osd class update on start = false\n"
            f"run dir = {d}/run\n"
            f"log file = {d}/log/$name.log\n"
            f"admin socket = {d}/run/$name.asok\n"
            f"pid file = {d}/run/$name.pid\n"
            f"mon data = {d}/mon/$cluster-$id\n"
            f"mgr data = {d}/mgr/$cluster-$id\n"
            f"osd data = {d}/osd/$cluster-$id\n" + "".join(f"{name} = {value}\n" for name, value in self.options)
        )

    def running(self) -> bool:
        return self.netns in _netns_list() and any(self._pids())

    def start(self, pool: str = "rbd", timeout: float = 60) -> None:
        """Bring the cluster up with an initialised RBD pool; CephError if
        it is not healthy within ``timeout`` (what is up is torn down)."""
        if self.netns in _netns_list() or self.dir.exists():
            raise CephError(f"a cluster is already set up ({self.netns}, {self.dir}): stop it first")
        try:
            self._start(pool, timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, pool: str, timeout: float) -> None:
        for sub in ("run", "log", "mon/ceph-a", "mgr/ceph-x", "osd/ceph-0"):
            (self.dir / sub).mkdir(parents=True)
        _sh("ip", "netns", "add", self.netns)
        _sh("ip", "-n", self.netns, "link", "set", "lo", "up")
        _sh("ip", "-n", self.netns, "link", "add", BRIDGE, "type", "bridge")
        _sh("ip", "-n", self.netns, "addr", "add", self.addr, "dev", BRIDGE)
        _sh("ip", "-n", self.netns, "link", "set", BRIDGE, "up")
        fsid = str(uuid.uuid4())
        self._write_conf(fsid)
        monmap = self.dir / "monmap"
        _sh("monmaptool", "--create", "--add", "a", self.ip, "--fsid", fsid, str(monmap))
        self._daemon("ceph-mon", "--mkfs", "-i", "a", "--monmap", str(monmap))
        self._daemon("ceph-mon", "-i", "a")
        # a monitor answers commands once it has formed its quorum of one;
        # before that even a status query fails (EPERM, ETIMEDOUT)
        self._wait_ok(("ceph", "mon", "stat"), "the monitor forming its quorum", timeout)
        self._daemon("ceph-mgr", "-i", "x")
        osd_uuid = str(uuid.uuid4())
        osd_id = self.ceph("osd", "new", osd_uuid, timeout=timeout).strip()
        self._daemon("ceph-osd", "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid)
        self.ceph("osd", "crush", "add", f"osd.{osd_id}", "1.0", "host=ceph0", "root=default")
        self._daemon("ceph-osd", "-i", osd_id)
        self.ceph("osd", "pool", "create", pool, "8")
        deadline = time.monotonic() + timeout
        while not self.clean():
            if time.monotonic() > deadline:
                raise CephError(f"placement groups not active+clean after {timeout:.0f} s: {self.ceph('pg', 'stat')}")
            time.sleep(0.2)
        self.rbd("pool", "init", pool)

    def _wait_ok(self, cmd: tuple[str, ...], what: str, timeout: float) -> str:
        """Run ``cmd`` until it succeeds; its output."""
        deadline = time.monotonic() + timeout
        while (p := self.run(*cmd, timeout=timeout, check=False)).returncode != 0:
            if time.monotonic() > deadline:
                raise CephError(f"{what}: not within {timeout:.0f} s: {' '.join(cmd)}: {p.stderr.strip()[-500:]}")
            time.sleep(0.2)
        return p.stdout

    def clean(self) -> bool:
        """Every placement group active+clean, and the OSD up (False while
        the cluster cannot say)."""
        p = self.run("ceph", "pg", "stat", check=False)  # "9 pgs: 9 active+clean; ..."
        if p.returncode != 0:
            return False
        head = p.stdout.split(";")[0]
        total, _, states = head.partition(" pgs: ")
        if states.strip() != f"{total.strip()} active+clean":
            return False
        st = self.run("ceph", "-s", check=False)
        return st.returncode == 0 and "osd: 1 osds: 1 up" in st.stdout

    def _pids(self) -> list[int]:
        pids = []
        for f in (self.dir / "run").glob("*.pid"):
            try:
                pids.append(int(f.read_text()))
            except (OSError, ValueError):
                continue
        return [p for p in pids if Path(f"/proc/{p}").exists()]

    def stop(self, timeout: float = 20) -> None:
        """Stop every daemon, delete the namespace and the directory.
        Idempotent: a half-started cluster is cleaned up the same way."""
        if self.dir.exists():
            pids = self._pids()
            for pid in pids:
                _kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
                time.sleep(0.1)
            for pid in alive:
                _kill(pid, signal.SIGKILL)
        # daemons whose pid file was not written yet: anything left in the namespace
        if self.netns in _netns_list():
            for pid in _netns_pids(self.netns):
                _kill(pid, signal.SIGKILL)
            _sh("ip", "netns", "del", self.netns)
        shutil.rmtree(self.dir, ignore_errors=True)


def _sh(*cmd: str) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise CephError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")


def _netns_list() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def _netns_pids(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _json_docs(text: str) -> list[Any]:
    """Every JSON document in ``text``, one after another: Pacific's
    ``osd blocklist ls`` gives two lists back to back (the addresses',
    then the ranges')."""
    docs, i, dec = [], 0, json.JSONDecoder()
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)
    return docs


def watch_blocklist(conf: Path, out: Path, period: float = 1.0) -> None:
    """Write the blocklist's entries to ``out`` whenever they change, until killed."""
    import rados  # python3-rados, with Ceph's packages

    with rados.Rados(conffile=str(conf)) as cluster:
        last: list[str] | None = None
        while True:
            rc, buf, _ = cluster.mon_command(json.dumps({"prefix": "osd blocklist ls", "format": "json"}), b"")
            if rc == 0:
                entries = sorted(str(e["addr"]) for doc in _json_docs(buf.decode()) for e in doc if "addr" in e)
                if entries != last:
                    tmp = out.with_name(f".{out.name}.tmp")
                    tmp.write_text(json.dumps(entries))
                    tmp.rename(out)
                    last = entries
            time.sleep(period)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.ceph", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--netns", default=DEFAULT_NS)
    ap.add_argument("--addr", default=DEFAULT_ADDR, help="the cluster's address/prefix in its namespace")
    ap.add_argument("--out", type=Path, help="watch-blocklist: the file to keep the entries in")
    ap.add_argument("action", choices=("start", "stop", "status", "watch-blocklist"))
    a = ap.parse_args(argv)
    c = Cluster(a.dir, a.netns, a.addr)
    if a.action == "watch-blocklist":
        if a.out is None:
            ap.error("watch-blocklist needs --out FILE")
        watch_blocklist(c.conf, a.out)
        return 0
    try:
        if a.action == "start":
            t0 = time.monotonic()
            c.start()
            print(f"ceph: up in {time.monotonic() - t0:.1f} s at {c.ip} (netns {c.netns}); conf {c.conf}")
        elif a.action == "stop":
            c.stop()
            print("ceph: stopped")
        else:
            if not c.running():
                print("ceph: not running")
                return 1
            print(c.ceph("-s"), end="")
    except CephError as e:
        print(f"ceph: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    use_project_venv()
    sys.exit(main())
