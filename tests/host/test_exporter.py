"""cxgbit-ext exporter: Prometheus metrics of the module's configfs tree.

Over a copy of the module's layout (the host cannot load it), served over
HTTP as the CLI serves it: the series follow the tree at every scrape
(counters that move, objects that go, the module unloaded and loaded
again, files that vanish mid-read), a portal's reason is portals.state()'s
text, and nothing answers with a traceback. The last test has a real
Prometheus (Debian's) scrape the exporter and asks its HTTP API.

LIO's portals come from rtslib (portals.lio_portals), which the host
cannot fake: these tests hand the exporter a stand-in giving the rows LIO
would, each state still portals.state()'s over the tree.
tests/vm/test_exporter.py runs it against the real module and LIO.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cxgbit_ext import exporter, portals
from cxgbit_ext.control import Control

from .conftest import COUNTERS, FakeKernel, make_tree

TOP = Path(__file__).resolve().parents[2]
IQN = "iqn.2026-11.org.cxgbit-ext:metrics"
PORTAL_STATE = "198.18.0.1:3260 on tgt0=soft0\n198.18.1.1:3260 off unserved tgt1\n"
# LIO's portals: (tpg, ip, port, offload switch); 198.18.0.1:3261 was never switched on
LIO = (("1", "198.18.0.1", 3260, True), ("1", "198.18.1.1", 3260, True), ("2", "198.18.0.1", 3261, False))
UNSERVED = "198.18.1.1 is on tgt1, which no adapter serves (soft0 serves tgt0)"
CONN = (
    "198.18.0.2:4000 198.18.0.1:3260 adapter=soft0 login=0 hdigest=1 ddigest=0 ddp=1 iso=1 pdus_rx={rx} pdus_tx=6 "
    "bytes_placed=4096 bytes_copied=0 tx_inline=2 data_cache_kib=64\n"
)
SOFT0 = {"adapter": "soft0", "type": "soft"}
CONN0 = {"peer": "198.18.0.2:4000", "local": "198.18.0.1:3260", "adapter": "soft0"}


def lio(ctl: Control) -> list[tuple[str, str, portals.PortalState]]:
    """What portals.lio_portals gives with LIO holding LIO's portals."""
    return [(IQN, tpg, portals.state(ctl, ip, port, on)) for tpg, ip, port, on in LIO]


def tree(tmp_path: Path) -> Path:
    return make_tree(
        tmp_path, version="0.2.0", netdev="tgt0", portals=PORTAL_STATE, connections=CONN.format(rx=5),
        counters={"connections": 3, "pdus_rx": 10, "pdus_tx": 12, "bytes_placed": 4096, "hdigest_errors": 1,
                  "ddigest_errors": 2, "ddp_tag_errors": 4},
    )  # fmt: skip


@pytest.fixture
def kernel(tmp_path: Path, kernel_for) -> FakeKernel:
    return kernel_for(tree(tmp_path))


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Scraper:
    """GET the exporter's metrics; parsed, each sample by name and labels."""

    def __init__(self, url: str, ctl: Control) -> None:
        self.url = url
        self.ctl = ctl
        self.types: dict[str, str] = {}

    def text(self) -> str:
        with urllib.request.urlopen(self.url, timeout=10) as r:
            assert r.status == 200
            return r.read().decode()

    def __call__(self) -> Samples:
        out: Samples = {}
        for fam in text_string_to_metric_families(self.text()):
            for s in fam.samples:
                self.types[s.name] = fam.type
                out[(s.name, frozenset(s.labels.items()))] = s.value
        return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def labelled(samples: Samples, key: str, val: str) -> list[str]:
    """The names of the samples with label ``key`` = ``val``."""
    return [name for name, labels in samples if (key, val) in labels]


@contextmanager
def serving(ctl: Control, lio: exporter.LioPortals = lio) -> Iterator[Scraper]:
    """The exporter of ``ctl`` on a free loopback port, the server the CLI runs."""
    server = exporter.serve_on(exporter.registry(ctl, lio), "127.0.0.1:0")
    # a short poll: shutdown() waits for it
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Scraper(exporter.url(server), ctl)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def scrape(kernel: FakeKernel) -> Iterator[Scraper]:
    with serving(Control(kernel.root)) as s:
        yield s


@pytest.fixture
def no_traceback(capfd: pytest.CaptureFixture[str]) -> Iterator[None]:
    """A collect that raises is a 500 and a traceback on stderr (wsgiref's): neither may happen."""
    yield
    err = capfd.readouterr().err
    assert "Traceback" not in err, err


def test_metrics_follow_the_tree(scrape: Scraper, no_traceback: None) -> None:
    got = scrape()
    assert value(got, "cxgbit_ext_up") == 1
    assert value(got, "cxgbit_ext_info", version="0.2.0", transport="cxgbit_ext") == 1
    assert value(got, "cxgbit_ext_scrape_errors") == 0
    assert value(got, "cxgbit_ext_backend_up", backend="soft", reason="") == 1
    reason = "no Chelsio T5/T6 adapter attached (cxgb4 has none)"
    assert value(got, "cxgbit_ext_backend_up", backend="cxgb4", reason=reason) == 0
    # soft0: serving tgt0, every offload on, each counter of its file
    assert value(got, "cxgbit_ext_adapter_up", adapter="soft0", type="soft", netdev="tgt0") == 1
    for cap in ("hcrc", "dcrc", "ddp", "iso"):
        assert value(got, "cxgbit_ext_adapter_offload", adapter="soft0", offload=cap) == 1
    for name, want in (("pdus_received", 10), ("pdus_sent", 12), ("placed_bytes", 4096), ("copied_bytes", 0),
                       ("connections_accepted", 3), ("header_digest_errors", 1), ("data_digest_errors", 2),
                       ("ddp_tag_errors", 4), ("sg_walk_starts", 0)):  # fmt: skip
        assert value(got, f"cxgbit_ext_adapter_{name}_total", **SOFT0) == want, name
    counters = {
        n for n in labelled(got, "adapter", "soft0") if n.startswith("cxgbit_ext_adapter_") and n.endswith("_total")
    }
    assert len(counters) == len(COUNTERS), "one series per counter of the file"
    # the connection: counters, its cache in bytes, an offload off with why
    assert value(got, "cxgbit_ext_connection_pdus_received_total", **CONN0) == 5
    assert value(got, "cxgbit_ext_connection_responses_inline_total", **CONN0) == 2
    assert value(got, "cxgbit_ext_connection_data_cache_bytes", **CONN0) == 64 * 1024
    why = "DataDigest=None was negotiated"
    assert value(got, "cxgbit_ext_connection_offload", **CONN0, offload="dcrc", reason=why) == 0
    assert value(got, "cxgbit_ext_connection_offload", **CONN0, offload="hcrc", reason="") == 1
    # every LIO portal, offloaded or not as portals.state() says
    for (tpg, ip, port, _), (_, _, s) in zip(LIO, lio(scrape.ctl), strict=True):
        labels = {"target": IQN, "tpg": tpg, "portal": f"{ip}:{port}"}
        assert value(got, "cxgbit_ext_portal_offloaded", **labels, reason=s.reason) == int(s.offloaded), labels
        assert value(got, "cxgbit_ext_portal_offload_requested", **labels) == int(s.requested), labels
    # Prometheus' conventions: one prefix, counters and only counters end in _total
    for name, _ in got:
        assert name.startswith("cxgbit_ext_"), name
        assert name.endswith("_total") == (scrape.types[name] == "counter"), name


def test_a_portal_not_offloaded_carries_its_reason(scrape: Scraper) -> None:
    got = scrape()
    where = {"target": IQN, "tpg": "1"}
    assert value(got, "cxgbit_ext_portal_offloaded", **where, portal="198.18.1.1:3260", reason=UNSERVED) == 0
    assert value(got, "cxgbit_ext_portal_offloaded", **where, portal="198.18.0.1:3260", reason="") == 1
    never = {"target": IQN, "tpg": "2", "portal": "198.18.0.1:3261"}
    reason = "not enabled on this portal (enable_offload true)"
    assert value(got, "cxgbit_ext_portal_offloaded", **never, reason=reason) == 0
    assert value(got, "cxgbit_ext_portal_offload_requested", **never) == 0


def test_counters_move_with_the_tree(kernel: FakeKernel, scrape: Scraper) -> None:
    before = scrape()
    kernel.count("soft0", "pdus_rx", 7)
    kernel.count("soft0", "ddigest_errors", 1)
    (kernel.root / "connections").write_text(CONN.format(rx=9))
    after = scrape()
    for name, n in (("pdus_received", 7), ("data_digest_errors", 1)):
        metric = f"cxgbit_ext_adapter_{name}_total"
        assert value(after, metric, **SOFT0) == value(before, metric, **SOFT0) + n, name
    assert value(after, "cxgbit_ext_connection_pdus_received_total", **CONN0) == 9


def test_an_adapter_deleted_between_scrapes_goes_with_its_series(kernel: FakeKernel, scrape: Scraper, netns) -> None:
    ctl = Control(kernel.root)
    ctl.create_adapter("soft1", "tgt1")
    ctl.adapter("soft1").ddp = False
    kernel.count("soft1", "pdus_rx", 3)
    got = scrape()
    soft1 = {"adapter": "soft1", "type": "soft"}
    assert value(got, "cxgbit_ext_adapter_pdus_received_total", **soft1) == 3
    assert value(got, "cxgbit_ext_adapter_up", **soft1, netdev="tgt1") == 1
    assert value(got, "cxgbit_ext_adapter_offload", adapter="soft1", offload="ddp") == 0
    ctl.adapter("soft1").delete()
    got = scrape()
    assert labelled(got, "adapter", "soft1") == []
    assert value(got, "cxgbit_ext_adapter_pdus_received_total", **SOFT0) == 10


def test_module_absent_is_up_0_and_nothing_else(tmp_path: Path, no_traceback: None) -> None:
    with serving(Control(tmp_path / "absent")) as scrape:
        assert scrape() == {("cxgbit_ext_up", frozenset()): 0}


def test_module_unloaded_and_loaded_again(tmp_path: Path, no_traceback: None) -> None:
    root = tree(tmp_path)
    with serving(Control(root)) as scrape:
        assert value(scrape(), "cxgbit_ext_adapter_pdus_received_total", **SOFT0) == 10
        shutil.rmtree(root)
        assert scrape() == {("cxgbit_ext_up", frozenset()): 0}
        # loaded again: its counters start from 0
        make_tree(tmp_path, version="0.2.0", netdev="*", portals="", connections="")
        got = scrape()
    assert value(got, "cxgbit_ext_up") == 1
    assert value(got, "cxgbit_ext_adapter_pdus_received_total", **SOFT0) == 0
    assert value(got, "cxgbit_ext_adapter_up", **SOFT0, netdev="*") == 1
    assert labelled(got, "peer", CONN0["peer"]) == []


@contextmanager
def failing_read(monkeypatch: pytest.MonkeyPatch, path: Path, err: int, times: int = 1) -> Iterator[list[Path]]:
    """Reads of ``path`` fail with ``err`` ``times`` times, as configfs fails
    them for an item removed (ENOENT) or a module unloading (ENODEV)."""
    real = Path.read_text
    failed: list[Path] = []

    def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        if self == path and len(failed) < times:
            failed.append(self)
            raise OSError(err, os.strerror(err), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    yield failed
    monkeypatch.setattr(Path, "read_text", real)


@pytest.mark.parametrize("err", [errno.ENOENT, errno.ENODEV])
@pytest.mark.parametrize(
    ("rel", "gone"),
    [
        # soft0, the only adapter, is left out whole
        ("adapters/soft0/counters", "cxgbit_ext_adapter_"),
        ("adapters/soft0/netdev", "cxgbit_ext_adapter_"),
        ("connections", "cxgbit_ext_connection_"),
        ("backends", "cxgbit_ext_backend_up"),
        ("version", "cxgbit_ext_info"),
        ("portal_state", None),  # LIO's walk is read once more
    ],
)
def test_a_file_gone_mid_collect_leaves_its_object_out(
    kernel: FakeKernel, scrape: Scraper, monkeypatch: pytest.MonkeyPatch, no_traceback: None,
    rel: str, gone: str | None, err: int,
) -> None:  # fmt: skip
    full = scrape()
    with failing_read(monkeypatch, kernel.root / rel, err) as failed:
        got = scrape()
    assert failed, f"{rel} was not read"
    assert value(got, "cxgbit_ext_up") == 1
    assert value(got, "cxgbit_ext_scrape_errors") == 0, "an object going away is not an error"
    names = {name for name, _ in full}
    assert names - {name for name, _ in got} == {n for n in names if gone and n.startswith(gone)}
    assert scrape() == full, "all of it back on the next scrape"


def test_an_unreadable_file_is_counted_and_logged(
    kernel: FakeKernel, scrape: Scraper, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    no_traceback: None,
) -> None:  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="cxgbit_ext.exporter"), \
            failing_read(monkeypatch, kernel.root / "adapters/soft0/counters", errno.EACCES, times=99):  # fmt: skip
        got = scrape()
    assert value(got, "cxgbit_ext_up") == 1
    assert value(got, "cxgbit_ext_scrape_errors") == 1
    assert value(got, "cxgbit_ext_adapter_pdus_received_total", **SOFT0) is None
    assert value(got, "cxgbit_ext_connection_pdus_received_total", **CONN0) == 5
    assert "cannot read adapter soft0: Permission denied" in caplog.text


def test_module_unloaded_mid_scrape_is_up_0(
    kernel: FakeKernel, scrape: Scraper, monkeypatch: pytest.MonkeyPatch, no_traceback: None
) -> None:
    """The module goes while the connections file is read: what was read of
    it before is not served as if it were still loaded."""
    real = Path.read_text

    def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        if self == kernel.root / "connections":
            shutil.rmtree(kernel.root)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    assert scrape() == {("cxgbit_ext_up", frozenset()): 0}


def test_cxgb4_adapters(kernel: FakeKernel, scrape: Scraper) -> None:
    """The cxgb4 backend's adapters are not under adapters/: their state is
    in the backends line, their counters in device_counters."""
    (kernel.root / "backends").write_text(
        "soft on caps=hcrc,dcrc,ddp,iso,t10pi\n"
        "cxgb4 on m5=T5/2ports/up/dropped:0/servers:1 m6=T6/2ports/down/dropped:3 caps=hcrc,dcrc,ddp,iso,rxagg\n"
    )
    (kernel.root / "device_counters").write_text("cxgb4 m5 pdus_rx 40\ncxgb4 m5 model_cpls 7\ncxgb4 m6 pdus_rx 0\n")
    got = scrape()
    assert value(got, "cxgbit_ext_backend_up", backend="cxgb4", reason="") == 1
    assert value(got, "cxgbit_ext_cxgb4_adapter_up", adapter="m5", chip="T5") == 1
    assert value(got, "cxgbit_ext_cxgb4_adapter_up", adapter="m6", chip="T6") == 0
    assert value(got, "cxgbit_ext_adapter_pdus_received_total", adapter="m5", type="cxgb4") == 40
    assert value(got, "cxgbit_ext_adapter_chip_messages_total", adapter="m5", type="cxgb4") == 7


def test_docs_name_every_metric(kernel: FakeKernel, scrape: Scraper) -> None:
    """docs/usage.md's Metrics section names each metric a full tree gives
    (the adapter and connection counters by their stem)."""
    (kernel.root / "backends").write_text("soft on caps=hcrc\ncxgb4 on m5=T5/2ports/up/dropped:0 caps=hcrc\n")
    text = (TOP / "docs/usage.md").read_text()
    section = text[text.index("### Metrics") :]
    section = section[: section.index("\n### ", 1)]
    for name, _ in scrape():
        for kind in ("adapter", "connection"):
            stem = name.removeprefix(f"cxgbit_ext_{kind}_").removesuffix("_total")
            if name.endswith("_total") and name.startswith(f"cxgbit_ext_{kind}_"):
                assert f"`{stem}`" in section, f"docs/usage.md Metrics: no `{stem}` ({name})"
                break
        else:
            assert f"`{name}`" in section, f"docs/usage.md Metrics: no `{name}`"


def test_cli_serves_until_stopped(kernel: FakeKernel, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "cxgbit_ext.cli", "--json", "--configfs", str(kernel.root), "exporter"]
    p = subprocess.Popen([*cmd, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        started = json.loads(p.stdout.readline())
        assert started["configfs"] == str(kernel.root)
        with urllib.request.urlopen(started["metrics"], timeout=10) as r:
            assert "\ncxgbit_ext_up 1.0\n" in "\n" + r.read().decode()
        port = int(urllib.parse.urlsplit(started["metrics"]).port or 0)
        # a port in use is an error naming it, exit 1
        busy = subprocess.run([*cmd, "--listen", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60)
        assert busy.returncode == 1
        assert json.loads(busy.stdout)["error"].startswith(f"cannot listen on 127.0.0.1:{port}: "), busy.stdout
    finally:
        p.terminate()
        _, err = p.communicate(timeout=30)
    assert "Traceback" not in err, err
    bad = subprocess.run([*cmd, "--listen", "127.0.0.1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "expected ADDR:PORT" in bad.stderr, bad.stderr


def test_listen_addresses() -> None:
    assert exporter.parse_listen(":10326") == ("", 10326)
    assert exporter.parse_listen("127.0.0.1:9") == ("127.0.0.1", 9)
    assert exporter.parse_listen("[::1]:9") == ("::1", 9)
    for bad in ("10326", "::1:9", "127.0.0.1:", "127.0.0.1:70000", "host:port"):
        with pytest.raises(ValueError, match="expected ADDR:PORT"):
            exporter.parse_listen(bad)


# -- a real Prometheus ---------------------------------------------------------

PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, ok: Callable[[], bool], log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, f"{what} within {seconds} s; prometheus said:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


def test_a_real_prometheus_scrapes_it(kernel: FakeKernel, tmp_path: Path) -> None:
    """Debian's prometheus scrapes the exporter every second: a counter moves
    across a change in the tree, the portal's reason is a label, and with the
    module gone cxgbit_ext_up is 0 while the target stays up."""
    if PROMETHEUS is None:
        pytest.skip("no prometheus binary: apt-get install prometheus (make deps installs it)")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api/v1/query?query="

    def query(promql: str) -> list[dict[str, Any]]:
        try:
            with urllib.request.urlopen(api + urllib.parse.quote(promql), timeout=5) as r:
                body = json.load(r)
        except OSError:
            return []  # not listening yet
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def one(promql: str) -> float | None:
        got = query(promql)
        assert len(got) <= 1, got
        return float(got[0]["value"][1]) if got else None

    with serving(Control(kernel.root)) as scrape:
        target = urllib.parse.urlsplit(scrape.url).netloc
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
            f"scrape_configs:\n  - job_name: cxgbit-ext\n    static_configs:\n      - targets: ['{target}']\n"
        )
        log = tmp_path / "prometheus.log"
        with log.open("w") as out:
            prom = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            pdus = 'cxgbit_ext_adapter_pdus_received_total{adapter="soft0"}'
            wait_until("a first scrape", lambda: one(pdus) == 10, log)
            kernel.count("soft0", "pdus_rx", 500)
            wait_until("the counter's move", lambda: one(pdus) == 510, log)
            (row,) = query('cxgbit_ext_portal_offloaded{portal="198.18.1.1:3260"}')
            assert row["metric"]["reason"] == UNSERVED and row["value"][1] == "0", row
            shutil.rmtree(kernel.root)
            wait_until("cxgbit_ext_up 0", lambda: one("cxgbit_ext_up") == 0, log)
            assert one('up{job="cxgbit-ext"}') == 1, "the exporter is still scraped"
            assert query(pdus) == [], "the adapter's series went with the module"
        finally:
            prom.terminate()
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
