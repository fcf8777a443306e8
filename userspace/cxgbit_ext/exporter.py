"""Prometheus metrics of the module's configfs tree (``cxgbit-ext exporter``).

Every scrape reads the tree afresh through control.Control and keeps
nothing, so a series vanishes with its object: an adapter deleted, a
connection ended, the module unloaded (then only ``cxgbit_ext_up 0`` is
left). Whether a portal is offloaded, and why not, is portals.state()'s
answer (through portals.lio_portals()), exported as it is; nothing here
works it out again.

An object that goes away while it is read is left out of that scrape:
configfs answers ENOENT for the files of a removed item and ENODEV while
the module unloads. Any other failed read is logged, counted in
``cxgbit_ext_scrape_errors`` and leaves its object out; the scrape still
answers.
"""

from __future__ import annotations

import errno
import logging
import re
import socket
import sys
from collections.abc import Callable, Iterator
from functools import partial
from socketserver import TCPServer, ThreadingMixIn
from typing import TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cxgbit_ext import portals
from cxgbit_ext.control import (
    BACKEND_WHY,
    Adapter,
    Connection,
    Control,
    CxgbitExtError,
    ModuleNotLoaded,
    adapter_caps,
)

log = logging.getLogger(__name__)

# Past the exporter range of the Prometheus wiki's "Default port
# allocations" (9100-9999, all taken) and not registered there yet: to be
# registered before a release. --listen changes it.
DEFAULT_PORT = 10326
DEFAULT_LISTEN = f":{DEFAULT_PORT}"
PREFIX = "cxgbit_ext_"

# The module's counters (cxe_stat_names, kmod/cxgbit-ext/transport.c) as
# metric names: Prometheus' words, the unit before _total. A counter this
# table lacks is exported under its own name (sanitized).
COUNTERS: dict[str, tuple[str, str]] = {
    "syn_steered": ("syns_steered", "SYNs the steering hook handed to the adapter's listener"),
    "connections": ("connections_accepted", "Connections accepted"),
    "pdus_rx": ("pdus_received", "iSCSI PDUs received"),
    "pdus_tx": ("pdus_sent", "iSCSI PDUs sent"),
    "bytes_placed": ("placed_bytes", "Write data placed straight into the command's pages (DDP)"),
    "bytes_copied": ("copied_bytes", "Write data that went through a bounce buffer"),
    "hdigest_errors": ("header_digest_errors", "PDUs whose header digest (CRC32C) was wrong"),
    "ddigest_errors": ("data_digest_errors", "PDUs whose data digest (CRC32C) was wrong"),
    "ddp_tag_errors": ("ddp_tag_errors", "Data-Outs whose TTT was not a live DDP tag"),
    "drops": ("connections_dropped", "Connections dropped on a protocol error"),
    "bursts": ("datain_bursts", "Data-In bursts segmented by the adapter (ISO)"),
    "burst_pdus": ("datain_burst_pdus", "Data-In PDUs those bursts became"),
    "rx_waits": ("rx_waits", "Times the receive thread found nothing queued and slept"),
    "handed_back": ("logins_handed_back", "Logins handed to LIO's stock iSCSI/TCP listener"),
    "logins_held": ("logins_held", "Logins refused on the offloaded portal while their target was held"),
    "model_cpls": ("chip_messages", "Messages a Chelsio chip handed up"),
    "model_wrs": ("chip_work_requests", "Work requests sent to a Chelsio chip"),
    "range_bytes": ("range_placed_bytes", "Placed bytes completed by a later Data-Out (receive aggregation)"),
    "tx_inline": ("responses_inline", "Responses sent by the thread that completed them"),
    "data_cache_hits": ("data_cache_hits", "Data buffers lent from a connection's cache"),
    "data_cache_misses": ("data_cache_misses", "Data buffers a connection's cache had to allocate"),
    "sg_walk_starts": ("sg_walk_starts", "Walks of a command's pages begun at its start"),
    "logins_stalled": ("logins_stalled", "Connections closed before sending a whole first Login request"),
    "pi_blocks": ("pi_blocks", "Blocks whose T10-PI the adapter made as it placed their write data, in place of LIO"),
    "pi_passes": ("pi_passes", "Writes whose T10-PI took a pass of its own over the data"),
    "pi_checked": ("pi_checked_blocks", "Read blocks whose T10-PI the PDU layer checked, in place of LIO"),
}
# What a connections line counts besides its flags; data_cache_kib is a level
CONNECTION_COUNTERS = ("pdus_rx", "pdus_tx", "bytes_placed", "bytes_copied", "tx_inline")

ADAPTER_LABELS = ("adapter", "type")
CONNECTION_LABELS = ("peer", "local", "adapter")

LioPortals = Callable[[Control], list[tuple[str, str, portals.PortalState]]]
T = TypeVar("T")


def _counter_name(name: str) -> tuple[str, str]:
    """(metric stem, help) of the module's counter ``name``."""
    if name in COUNTERS:
        return COUNTERS[name]
    return re.sub(r"[^A-Za-z0-9_]", "_", name), f"The module's counter {name}"


class _Scrape:
    """One scrape's metric families, filled as the tree is read."""

    def __init__(self, ctl: Control, lio: LioPortals) -> None:
        self.ctl = ctl
        self.lio = lio
        self.errors = 0
        self.families: dict[str, Metric] = {}

    def gauge(self, name: str, doc: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
        fam = self.families.setdefault(name, GaugeMetricFamily(PREFIX + name, doc, labels=labels))
        assert isinstance(fam, GaugeMetricFamily)
        return fam

    def counter(self, name: str, doc: str, labels: tuple[str, ...]) -> CounterMetricFamily:
        fam = self.families.setdefault(name, CounterMetricFamily(PREFIX + name, doc, labels=labels))
        assert isinstance(fam, CounterMetricFamily)
        return fam

    def read(self, what: str, read: Callable[[], T]) -> T | None:
        """read(), or None when ``what`` went away meanwhile or could not be
        read. ModuleNotLoaded goes up: the whole tree went."""
        try:
            return read()
        except ModuleNotLoaded:
            raise
        except FileNotFoundError:
            return None  # configfs: the item was removed
        except CxgbitExtError:
            return None  # control's word for an adapter removed between its reads
        except OSError as e:
            if e.errno == errno.ENODEV:
                return None  # the module is unloading: configfs no longer opens its files
            self.errors += 1
            log.warning("cannot read %s: %s", what, e.strerror or e)
            return None

    def run(self) -> list[Metric]:
        self.module()
        adapters = self.adapters()
        self.device_counters()
        self.connections(adapters)
        self.portals()
        self.gauge(
            "scrape_errors", "Reads of the tree that failed in this scrape, other than an object going away", ()
        ).add_metric([], self.errors)
        return [f for f in self.families.values() if f.samples]

    def module(self) -> None:
        version = self.read("version", lambda: self.ctl.version)
        transport = self.read("transport", lambda: self.ctl.transport)
        if version is not None and transport is not None:
            info = self.gauge(
                "info", "The module's version and the LIO transport it registers", ("version", "transport")
            )
            info.add_metric([version, transport], 1)
        backends = self.read("backends", self.ctl.backends) or []
        up = self.gauge("backend_up", "1 when the backend can carry offloaded connections now", ("backend", "reason"))
        devices = self.gauge(
            "cxgb4_adapter_up", "A Chelsio adapter of the cxgb4 backend: 1 up, 0 down", ("adapter", "chip")
        )
        for b in backends:
            up.add_metric([b.name, "" if b.on else BACKEND_WHY.get(b.why, b.why)], 1 if b.on else 0)
            if b.name != "cxgb4":
                continue
            # the backend's words on each adapter: name=chip/Nports/up|down/...
            for word in b.detail:
                name, _, rest = word.partition("=")
                fields = rest.split("/")
                if len(fields) > 2 and fields[2] in ("up", "down"):
                    devices.add_metric([name, fields[0]], 1 if fields[2] == "up" else 0)

    def adapters(self) -> list[Adapter]:
        """Export each adapter of adapters/; those read whole."""
        listed = self.read("adapters", self.ctl.adapters) or []
        up = self.gauge(
            "adapter_up", "1 while the adapter serves a netdev (by name, or '*' for all), 0 while it serves none",
            ("adapter", "type", "netdev"),
        )  # fmt: skip
        offload = self.gauge(
            "adapter_offload",
            "Each offload the adapter can do: 1 on for the connections it accepts now, 0 switched off",
            ("adapter", "offload"),
        )
        read = []
        for a in listed:
            got = self.read(f"adapter {a.name}", partial(_adapter_state, a))
            if got is None:
                continue
            kind, netdev, caps, active, counters = got
            up.add_metric([a.name, kind, netdev], 1 if netdev else 0)
            for cap in caps:
                offload.add_metric([a.name, cap], 1 if cap in active else 0)
            self.adapter_counters(a.name, kind, counters)
            read.append(a)
        return read

    def adapter_counters(self, name: str, kind: str, counters: dict[str, int]) -> None:
        for key, value in counters.items():
            stem, doc = _counter_name(key)
            self.counter(f"adapter_{stem}", doc, ADAPTER_LABELS).add_metric([name, kind], value)

    def device_counters(self) -> None:
        """The adapters of backends with devices of their own (not under
        adapters/), their type the backend's name."""
        by_backend = self.read("device_counters", self.ctl.device_counters) or {}
        for backend, by_adapter in by_backend.items():
            for adapter, counters in by_adapter.items():
                self.adapter_counters(adapter, backend, counters)

    def connections(self, adapters: list[Adapter]) -> None:
        conns = self.read("connections", self.ctl.connections) or []
        cache = self.gauge(
            "connection_data_cache_bytes", "Data buffers the connection's cache keeps", CONNECTION_LABELS
        )
        offload = self.gauge(
            "connection_offload",
            "Each offload of the connection: 1 on, 0 off, with why in reason",
            (*CONNECTION_LABELS, "offload", "reason"),
        )
        for c in conns:
            labels = [c.peer, c.local, c.adapter]
            for key in CONNECTION_COUNTERS:
                if key in c.counters:
                    stem, doc = _counter_name(key)
                    self.counter(f"connection_{stem}", doc, CONNECTION_LABELS).add_metric(labels, c.counters[key])
            if "data_cache_kib" in c.counters:
                cache.add_metric(labels, c.counters["data_cache_kib"] * 1024)
            for cap, state in self.offloads(c, adapters).items():
                on = state == "on"
                offload.add_metric([*labels, cap, "" if on else state.removeprefix("off: ")], 1 if on else 0)

    def offloads(self, c: Connection, adapters: list[Adapter]) -> dict[str, str]:
        # an adapter removed since it was read offloads what the connection line says
        caps = self.read(f"adapter {c.adapter}", lambda: adapter_caps(adapters, c.adapter))
        return c.offloads(caps if caps is not None else adapter_caps([], c.adapter))

    def portals(self) -> None:
        """LIO's portals, each offloaded or not and why (portals.state)."""
        from rtslib_fb.utils import RTSLibError  # imported where LIO is read, as portals.lio_portals does

        rows = None
        # an adapter, target or TPG removed during the walk: once more, then without portals
        for _ in range(2):
            try:
                rows = self.read("LIO's portals", partial(self.lio, self.ctl))
            except RTSLibError:
                rows = None
            if rows is not None:
                break
        offloaded = self.gauge(
            "portal_offloaded",
            "Each LIO iSCSI portal: 1 when its logins are offloaded, 0 when not, with why in reason",
            ("target", "tpg", "portal", "reason"),
        )
        requested = self.gauge(
            "portal_offload_requested",
            "Each LIO iSCSI portal's offload switch (enable_offload): 1 on, 0 off",
            ("target", "tpg", "portal"),
        )
        for target, tpg, s in rows or []:
            portal = f"{s.ip}:{s.port}"
            offloaded.add_metric([target, tpg, portal, s.reason], 1 if s.offloaded else 0)
            requested.add_metric([target, tpg, portal], 1 if s.requested else 0)


def _adapter_state(a: Adapter) -> tuple[str, str, tuple[str, ...], tuple[str, ...], dict[str, int]]:
    """What is exported of adapter ``a``: type, netdev, caps, active offloads, counters."""
    return a.type, a.netdev, a.caps, a.active, a.counters


class TreeCollector(Collector):
    """The module's tree as metric families, read at every collect()."""

    def __init__(self, ctl: Control, lio: LioPortals = portals.lio_portals) -> None:
        self.ctl = ctl
        self.lio = lio

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(PREFIX + "up", "1 when the cxgbit_ext module is loaded (its configfs tree is there)")
        families: list[Metric] = []
        if self.ctl.loaded:
            try:
                families = _Scrape(self.ctl, self.lio).run()
            except ModuleNotLoaded:
                families = []
        # unloaded during the scrape: what was read went with the module
        if not self.ctl.loaded:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families


def registry(ctl: Control, lio: LioPortals = portals.lio_portals) -> CollectorRegistry:
    """A registry holding only the tree's metrics (none of the exporter process's own)."""
    reg = CollectorRegistry()
    reg.register(TreeCollector(ctl, lio))
    return reg


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT``, ``[IPV6]:PORT`` or ``:PORT`` (every address) as (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535 or (":" in host and not host.startswith("[")):
        raise ValueError(f"{text!r}: expected ADDR:PORT, [IPV6]:PORT or :PORT")
    return host.removeprefix("[").removesuffix("]"), int(port)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Nothing per request: a scrape a second would fill the journal."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:
            # "::" takes IPv4 too, whatever net.ipv6.bindv6only says
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        # not HTTPServer's: it asks DNS for the host's name, which can hang on a host without it
        TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])
        self.setup_environ()


class _Server6(_Server):
    address_family = socket.AF_INET6


def serve_on(reg: CollectorRegistry, listen: str) -> _Server:
    """A bound HTTP server of ``reg``'s metrics on ``listen`` (see
    parse_listen), to be run with serve_forever(); CxgbitExtError when it
    cannot listen there. An empty address is every address, IPv6 and IPv4,
    or IPv4's alone on a host without IPv6."""
    host, port = parse_listen(listen)
    hosts = [host] if host else ["::", "0.0.0.0"]
    app = make_wsgi_app(reg)
    for i, h in enumerate(hosts):
        try:
            family = socket.getaddrinfo(h, port, type=socket.SOCK_STREAM)[0][0]
            cls = _Server6 if family == socket.AF_INET6 else _Server
            return make_server(h, port, app, cls, handler_class=_Quiet)
        except OSError as e:
            if i + 1 < len(hosts) and e.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                continue  # no IPv6 here
            why = e.strerror or str(e)
            raise CxgbitExtError(f"cannot listen on {listen}: {why}") from e
    raise AssertionError("unreachable")


def url(server: _Server) -> str:
    host, port = server.server_address[:2]
    host = str(host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"


def setup_logging() -> None:
    """Warnings to stderr, one line each (the journal, under systemd)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="cxgbit-ext exporter: %(message)s")
