"""cxgbit-ext exporter on the real module and LIO, scraped by a real Prometheus.

In the guest, on the initial namespace's loopback: the exporter (the CLI,
as cxgbit-ext-exporter.service runs it) and Debian's prometheus
(/usr/bin/prometheus, from the shared host root) scraping it every second.
The target has an offloaded wildcard portal, reached over tgt0 (soft0's),
and a portal on tgt1's address, which no adapter serves. Asked through
Prometheus' HTTP API: an open-iscsi fio write+verify moves soft0's PDU and
placed-bytes counters, the unserved portal carries portals.state()'s
reason, an adapter removed while scrapes run takes its series with it and
fails no scrape, and with the module unloaded cxgbit_ext_up is 0 while the
exporter is still scraped, then 1 again once it is loaded.

Sized for qemu TCG: 1 s scrapes, 4 MiB of fio, one login.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cxgbit_ext import portals, topology
from cxgbit_ext.control import Control
from iscsi_initiator import iscsiadm
from testbed import fio, topo

from .conftest import CFS, connection_lines, insmod, offloaded_target, wait_for

# On every kernel, not dealt: what it scrapes is the module's configfs
# tree and LIO's as each kernel has them, and the module unloaded and
# loaded again under the scrapes (~25 s a kernel)
IQN = "iqn.2026-11.org.cxgbit-ext:metrics"
T0, T1 = topo.LINKS
UNSERVED = (T1.tgt_ip, 3261)  # on tgt1, which no adapter serves
PROMETHEUS = "/usr/bin/prometheus"
JOB = "cxgbit-ext"
PDUS = 'cxgbit_ext_adapter_pdus_received_total{adapter="soft0"}'
PLACED = 'cxgbit_ext_adapter_placed_bytes_total{adapter="soft0"}'
WAIT_S = 60  # a scrape and a query, under TCG
START_S = 120  # prometheus starting, under TCG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def exporter(tmp_path: Path) -> Iterator[str]:
    """``cxgbit-ext exporter`` on a free loopback port; its metrics URL.
    Afterwards: it never wrote a traceback."""
    err = tmp_path / "exporter.err"
    with err.open("w") as stderr:
        p = subprocess.Popen(
            [sys.executable, "-m", "cxgbit_ext.cli", "--json", "exporter", "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line, f"the exporter did not start: {err.read_text()}"
        yield json.loads(line)["metrics"]
    finally:
        p.terminate()
        p.wait(timeout=30)
    assert "Traceback" not in err.read_text(), err.read_text()


class Prometheus:
    """A prometheus process scraping ``target`` every second, and its query API."""

    def __init__(self, target: str, tmp_path: Path) -> None:
        port = free_port()
        self.api = f"http://127.0.0.1:{port}/api/v1/query?query="
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
            f"scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n      - targets: ['{target}']\n"
        )
        self.log = tmp_path / "prometheus.log"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def query(self, promql: str) -> list[dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.api + urllib.parse.quote(promql), timeout=10) as r:
                body = json.load(r)
        except OSError:
            return []  # not answering yet
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def value(self, promql: str) -> float | None:
        got = self.query(promql)
        assert len(got) <= 1, got
        return float(got[0]["value"][1]) if got else None

    def wait(self, what: str, promql: str, seconds: float = WAIT_S) -> list[dict[str, Any]]:
        """Until ``promql`` has a result; that result."""
        deadline = time.monotonic() + seconds
        while not (got := self.query(promql)):
            assert time.monotonic() < deadline, f"{what}: no {promql} in {seconds} s; {self.log.read_text()[-3000:]}"
            time.sleep(0.5)
        return got

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def prometheus(url: str, tmp_path: Path) -> Iterator[Prometheus]:
    prom = Prometheus(urllib.parse.urlsplit(url).netloc, tmp_path)
    try:
        yield prom
    finally:
        prom.stop()


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """One scrape of the exporter, straight: each sample by name and labels."""
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200
        text = r.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(text)
            for s in f.samples}  # fmt: skip


def offload_off() -> None:
    """Every portal's offload switch off: an offloaded portal pins the module."""
    from rtslib_fb import RTSRoot

    with topo.in_netns():
        for tpg in RTSRoot().tpgs:
            for np in tpg.network_portals:
                portals.set_offload(np, False)


# on every kernel: what it scrapes is the module's tree, whose files and
# counters are kernel code of ours (and it unloads and reloads the module)
def test_exporter_scraped_by_prometheus(iscsid: None, module_ko: Path, tmp_path: Path) -> None:
    if shutil.which(PROMETHEUS) is None:
        pytest.skip(f"no {PROMETHEUS}: make deps installs prometheus on the host")
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=16 * topology.MiB,
                          portals=(("0.0.0.0", 3260), UNSERVED), offload=True)  # fmt: skip
    with offloaded_target(module_ko, t), exporter(tmp_path) as url, prometheus(url, tmp_path) as prom:
        prom.wait("a first scrape", "cxgbit_ext_up == 1", START_S)

        # the portals, each offloaded or not as portals.state() says
        reason = portals.state(Control(), *UNSERVED, True).reason
        assert "which no adapter serves" in reason, reason
        (row,) = prom.wait("the unserved portal", f'cxgbit_ext_portal_offloaded{{portal="{T1.tgt_ip}:3261"}}')
        assert (row["metric"]["reason"], row["value"][1]) == (reason, "0"), row
        assert prom.value('cxgbit_ext_portal_offloaded{portal="0.0.0.0:3260",reason=""}') == 1

        # open-iscsi + fio over tgt0: soft0 counts the PDUs and places the writes
        before = prom.value(PDUS) or 0
        placed = prom.value(PLACED) or 0
        iscsiadm.discover(T0.tgt_ip)
        iscsiadm.login(IQN, f"{T0.tgt_ip}:3260")
        try:
            dev = iscsiadm.session_disks(IQN, expect=1)[0]
            fio.write_verify(dev, size="4M", bs="64k", iodepth=8)
            prom.wait("the connection's series", 'cxgbit_ext_connection_pdus_received_total{adapter="soft0"}')
        finally:
            iscsiadm.logout()
            iscsiadm.delete_nodes()
        prom.wait("soft0's PDUs counted", f"{PDUS} > {before}")
        prom.wait("soft0's writes placed", f"{PLACED} >= {placed + (4 << 20)}")

        # an adapter removed while scrapes run: none fails, its series go
        soft1 = CFS / "adapters/soft1"
        soft1.mkdir()
        (soft1 / "netdev").write_text(T1.tgt_dev + "\n")
        prom.wait("soft1's series", f'cxgbit_ext_adapter_up{{adapter="soft1",netdev="{T1.tgt_dev}"}} == 1')
        scrapes: list[dict[tuple[str, frozenset[tuple[str, str]]], float]] = []
        stop = threading.Event()

        def scraping() -> None:
            while not stop.is_set():
                scrapes.append(scrape(url))

        # each scrape reads soft1's files one at a time: removals land between those reads
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(scraping)
            try:
                deadline = time.monotonic() + 10
                while (len(scrapes) < 5 or time.monotonic() < deadline) and not running.done():
                    soft1.rmdir()
                    soft1.mkdir()
                soft1.rmdir()
            finally:
                stop.set()
            running.result(timeout=WAIT_S)
        up, errors = ("cxgbit_ext_up", frozenset()), ("cxgbit_ext_scrape_errors", frozenset())
        assert len(scrapes) >= 5 and all(s[up] == 1 and s[errors] == 0 for s in scrapes), scrapes[-1:]
        prom.wait("soft1's series gone", 'absent(cxgbit_ext_adapter_up{adapter="soft1"})')
        assert prom.value("max_over_time(cxgbit_ext_scrape_errors[1m])") == 0

        # the module unloaded: up 0, the exporter still scraped; loaded again: 1
        offload_off()
        wait_for("connections gone", lambda: not connection_lines(), 30)
        p = subprocess.run(["rmmod", "cxgbit_ext"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        prom.wait("cxgbit_ext_up 0, still scraped", f'cxgbit_ext_up == 0 and on (instance, job) up{{job="{JOB}"}} == 1')
        assert prom.query(PDUS) == [], "soft0's series went with the module"
        assert insmod(module_ko).returncode == 0
        prom.wait("cxgbit_ext_up 1 again", "cxgbit_ext_up == 1")
        prom.wait("soft0 counting from 0 again", f"{PDUS} == 0")
