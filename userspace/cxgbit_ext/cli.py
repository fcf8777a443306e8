"""cxgbit-ext command line: human tables, or --json for automation.

    cxgbit-ext [--json] status | adapters | connections | portals
    cxgbit-ext [--json] counters [--watch SECONDS] [--count N]
    cxgbit-ext adapters create NAME [--netdev NETDEV|'*']    cxgbit-ext adapters delete NAME
    cxgbit-ext bind ADAPTER NETDEV|'*'      cxgbit-ext unbind ADAPTER
    cxgbit-ext set ADAPTER ddp=0|1 iso=0|1 (one or both; also true/false, yes/no, on/off)
    cxgbit-ext save [--file F] [--lio [LIOFILE]]
    cxgbit-ext restore [--file F] [--lio [LIOFILE]]
    cxgbit-ext topology create --iqn IQN [--luns N] [--size 512M] ...
    cxgbit-ext topology delete --iqn IQN
    cxgbit-ext gateway create --iqn IQN --rbd POOL/IMAGE[,...] --portals IP,IP[,...] --gateway N [--owner N[,...]]
                              [--reservations]
    cxgbit-ext gateway show|delete --iqn IQN
    cxgbit-ext exporter [--listen ADDR:PORT]   (Prometheus metrics, until stopped)

Errors go to stderr (or as {"error": ...} with --json) with exit status 1,
and leave the configuration as it was. Commands that change adapters print
the adapters afterwards, as ``adapters`` does.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cxgbit_ext import exporter, gateway, persist, portals, reservations, topology
from cxgbit_ext.control import (
    ADAPTER_NAME_RULE,
    CONFIGFS,
    TOGGLES,
    Control,
    CxgbitExtError,
    adapter_caps,
    counter_lines,
)


def out(obj: Any) -> None:
    print(json.dumps(obj, indent=2))


def _type_width(types: list[str]) -> int:
    """The type column: 6 wide ("soft", "cxgb4" and a space), wider for a
    longer type: the module names the backends, the tools do not know them."""
    return max([6, *(len(t) + 1 for t in types)])


def cmd_status(ctl: Control, a: argparse.Namespace) -> int:
    st = ctl.status()
    if a.json:
        out(st.dump())
        return 0
    print(f"cxgbit_ext {st.version}: LIO transport '{st.transport}' registered")
    print(f"offloaded portals: {', '.join(st.portals) or 'none'}")
    for b in st.backends:
        print(f"backend {b.name}: {b.summary()}")
    types = [ad.type for ad in st.adapters]
    tw = _type_width(types)
    print(f"{'adapter':<10}{'type':<{tw}}{'serves':<14}{'conns':>7}{'pdus rx':>10}{'pdus tx':>10}{'placed B':>14}")
    for ad, kind in zip(st.adapters, types, strict=True):
        # the counters the module reports; one it does not is shown as 0
        c = ad.counters
        print(f"{ad.name:<10}{kind:<{tw}}{ad.serving:<14}{c.get('connections', 0):>7}{c.get('pdus_rx', 0):>10}"
              f"{c.get('pdus_tx', 0):>10}{c.get('bytes_placed', 0):>14}")  # fmt: skip
    print(f"offloaded connections: {len(st.connections)}")
    for conn in st.connections:
        dig = "+".join(n for n, on in (("hdr-crc", conn.hdigest), ("data-crc", conn.ddigest)) if on) or "no digests"
        print(f"  {conn.peer} -> {conn.local} on {conn.adapter}: {dig}, "
              f"{conn.counters.get('bytes_placed', 0)} B placed")  # fmt: skip
    return 0


def show_adapters(ctl: Control, a: argparse.Namespace) -> int:
    ads = ctl.adapters()
    if a.json:
        out([x.info() for x in ads])
        return 0
    width = max((len(x.name) for x in ads), default=0) + 2
    types = [x.type for x in ads]
    tw = _type_width(types)
    print(f"{'adapter':<{max(width, 10)}}{'type':<{tw}}{'serves':<16}offloads")
    for x, kind in zip(ads, types, strict=True):
        print(f"{x.name:<{max(width, 10)}}{kind:<{tw}}{x.serving:<16}{x.offload_text()}")
    return 0


def cmd_adapters(ctl: Control, a: argparse.Namespace) -> int:
    if a.action == "create":
        ctl.create_adapter(a.name, a.netdev)
    elif a.action == "delete":
        left = ctl.adapter(a.name).delete()
        if left and not a.json:
            print(f"deleted adapter {a.name}; its {left} connection(s) keep running until they end")
    return show_adapters(ctl, a)


def _settings(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CxgbitExtError(f"{pair!r} is not SETTING=VALUE; settings: {', '.join(f'{t}=0|1' for t in TOGGLES)}")
        if key in out:
            raise CxgbitExtError(f"{key} given twice")
        out[key] = value
    return out


def cmd_set(ctl: Control, a: argparse.Namespace) -> int:
    ctl.adapter(a.adapter).set_toggles(_settings(a.settings))
    return show_adapters(ctl, a)


def cmd_connections(ctl: Control, a: argparse.Namespace) -> int:
    # a device backend's adapters too: its connections name them
    adapters = ctl.every_adapter()
    names = {x.name for x in adapters}
    conns = ctl.connections()
    rows = [{**dataclasses.asdict(c), "offloads": c.offloads(adapter_caps(adapters, c.adapter))} for c in conns]
    if a.json:
        out(rows)
        return 0
    if not rows:
        print("no offloaded connections")
    for r in rows:
        on = [k for k, v in r["offloads"].items() if v == "on"]
        gone = "" if r["adapter"] in names else " (adapter deleted since)"
        print(f"{r['peer']} -> {r['local']} on {r['adapter']}{gone}: {'+'.join(on) or 'nothing'}")
        for k, v in r["offloads"].items():
            if v != "on":
                print(f"    {k} {v}")
        c = r["counters"]
        # a module before the data buffer cache has no data_cache_kib
        cache = f", {c['data_cache_kib']} KiB of data buffers kept" if "data_cache_kib" in c else ""
        print(f"    pdus rx {c.get('pdus_rx', 0)} tx {c.get('pdus_tx', 0)}, "
              f"placed {c.get('bytes_placed', 0)} B, copied {c.get('bytes_copied', 0)} B{cache}")  # fmt: skip
    return 0


def cmd_portals(ctl: Control, a: argparse.Namespace) -> int:
    rows = portals.lio_portals(ctl)
    if a.json:
        out([{"target": t, "tpg": tag, **dataclasses.asdict(s)} for t, tag, s in rows])
        return 0
    if not rows:
        print("no iSCSI portals in LIO")
    for t, tag, s in rows:
        print(f"{t} tpg {tag} {s.ip}:{s.port}: {s.summary()}")
    return 0


def cmd_counters(ctl: Control, a: argparse.Namespace) -> int:
    if a.watch is None:
        counters = ctl.counters()
        if a.json:
            out(counters)
            return 0
        for name, cs in counters.items():
            print(f"{name}:")
            print("\n".join(counter_lines(cs)))
        return 0
    # rate view: per-second change of every counter over each interval
    prev, t_prev = ctl.counters(), time.monotonic()
    n = 0
    while a.count is None or n < a.count:
        time.sleep(a.watch)
        now, t_now = ctl.counters(), time.monotonic()
        dt = t_now - t_prev
        rates = {name: {k: (v - prev.get(name, {}).get(k, 0)) / dt for k, v in cs.items()} for name, cs in now.items()}
        if a.json:
            print(json.dumps({"interval_s": round(dt, 3), "rates": rates}), flush=True)
        else:
            for name, r in rates.items():
                busy = {k: v for k, v in r.items() if v}
                line = "  ".join(f"{k} {v:,.0f}/s" for k, v in busy.items()) or "idle"
                print(f"{time.strftime('%H:%M:%S')} {name}: {line}", flush=True)
        prev, t_prev = now, t_now
        n += 1
    return 0


def cmd_bind(ctl: Control, a: argparse.Namespace) -> int:
    ctl.adapter(a.adapter).netdev = a.netdev
    return show_adapters(ctl, a)


def cmd_unbind(ctl: Control, a: argparse.Namespace) -> int:
    ctl.adapter(a.adapter).netdev = ""
    return show_adapters(ctl, a)


def cmd_save(ctl: Control, a: argparse.Namespace) -> int:
    data = persist.save(ctl, a.file)
    msg = {"saved": str(a.file), "config": data}
    if a.lio:
        persist.save_lio(a.lio)
        msg["lio"] = str(a.lio)
    if a.json:
        out(msg)
    else:
        print(f"saved cxgbit-ext settings to {a.file}" + (f" and LIO's to {a.lio}" if a.lio else ""))
    return 0


def cmd_restore(ctl: Control, a: argparse.Namespace) -> int:
    data = persist.restore(ctl, a.file)
    result: dict[str, Any] = {"restored": str(a.file), "config": data}
    problems: list[str] = []
    if a.lio:
        problems += persist.restore_lio(a.lio, shared=data.get("reservations", []))
        for ip, port in persist.offload_requested(a.lio):
            s = portals.state(ctl, ip, port, True)
            if not s.offloaded:
                problems.append(f"portal {ip}:{port} asks for offload but is {s.summary()}")
        result["lio"] = str(a.lio)
    result["problems"] = problems
    if a.json:
        out(result)
    else:
        print(f"restored cxgbit-ext settings from {a.file}" + (f", then LIO's from {a.lio}" if a.lio else ""))
        for p in problems:
            print(f"  warning: {p}")
    return 1 if problems else 0


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    mult = units.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in units else t
    if not num.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: a size like 512M or 1G")
    return int(num) * mult


def _portal(text: str) -> tuple[str, int]:
    try:
        ip, port = portals.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return portals.lio_ip(ip), port


def _chap(text: str) -> tuple[str, str]:
    user, sep, pw = text.partition(":")
    if not sep or not user or not 12 <= len(pw) <= 16:
        raise argparse.ArgumentTypeError("CHAP as USER:SECRET, the secret 12 to 16 characters (RFC 7143 11.1.4)")
    return user, pw


def cmd_topology(ctl: Control, a: argparse.Namespace) -> int:
    if a.action == "delete":
        topology.delete(a.iqn)
        print(json.dumps({"deleted": a.iqn}) if a.json else f"deleted {a.iqn}")
        return 0
    topo = topology.Topology(
        iqn=a.iqn, backstores=(a.backstore,) * a.luns, lun_size=a.size, portals=tuple(a.portal or [("0.0.0.0", 3260)]),
        offload=a.offload, acls=tuple(a.acl or ()), chap=a.chap,
    )  # fmt: skip
    t0 = time.monotonic()
    topology.create(topo)
    secs = time.monotonic() - t0
    states = [portals.state(ctl, ip, port, topo.offload) for ip, port in topo.portals] if topo.offload else []
    if a.json:
        out({"created": a.iqn, "luns": a.luns, "lun_size": a.size, "seconds": round(secs, 2),
             "portals": [dataclasses.asdict(s) for s in states]})  # fmt: skip
        return 0
    print(f"created {a.iqn}: {a.luns} x {a.size >> 20} MiB {a.backstore} LUNs, "
          f"{'ACLs ' + ', '.join(topo.acls) if topo.acls else 'demo-mode ACLs'}"
          f"{', CHAP' if topo.chap else ''} in {secs:.1f} s")  # fmt: skip
    for ip, port in topo.portals:
        s = next((x for x in states if (x.ip, x.port) == (ip, port)), None)
        print(f"  portal {ip}:{port}: {s.summary() if s else 'offload: off — not asked for (--no-offload)'}")
    return 0


def cmd_gateway(ctl: Control, a: argparse.Namespace) -> int:
    if a.action == "delete":
        gateway.delete(a.iqn)
        print(json.dumps({"deleted": a.iqn}) if a.json else f"deleted {a.iqn}")
        return 0
    if a.action == "create":
        missing = [f"--{n}" for n in ("rbd", "portals", "gateway") if getattr(a, n) is None]
        if missing:
            raise gateway.GatewayError(f"gateway create needs {', '.join(missing)}")
        layout = gateway.Layout(iqn=a.iqn, images=tuple(a.rbd), portals=tuple(a.portals), index=a.gateway,
                                owners=tuple(a.owner or ()), port=a.port, offload=a.offload,
                                backstore=a.backstore, shared=a.reservations, cmd_time_out=a.cmd_time_out)  # fmt: skip
        made = gateway.create(layout, devs=tuple(a.dev or ()))
        have = gateway.describe(a.iqn)
        images = range(len(layout.images))
        if a.json:
            out({"created": made, "wwns": [layout.wwn(n) for n in images],
                 "owners": [layout.owner(n) for n in images], **have})  # fmt: skip
            return 0
        print(f"{'laid out' if made else 'already laid out'}: gateway {a.gateway} of {len(a.portals)} "
              f"on {a.backstore}")  # fmt: skip
        for n in images:
            print(f"  LUN {n}: {layout.images[n]}, unit serial {layout.wwn(n)}, Active/Optimized on gateway "
                  f"{layout.owner(n)}")  # fmt: skip
    else:
        have = gateway.describe(a.iqn)
        if not have:
            raise gateway.GatewayError(f"no target {a.iqn}")
        if a.json:
            out(have)
            return 0
    for tag, t in sorted(have["tpgs"].items()):
        luns = ", ".join(f"LUN {n}: {so} in ALUA group {gp}" for n, (so, gp) in t["luns"].items())
        state = "enabled" if t["enabled"] else "disabled"
        print(f"  tpg{tag} ({state}): {', '.join(t['portals'])}"
              f"{' offloaded' if t['offload'] else ''}; {luns}")  # fmt: skip
    if have["shared"]:
        print("  reservations shared by the gateways (served only while the agent serves)")
    return 0


def cmd_reservations(ctl: Control, a: argparse.Namespace) -> int:
    rados = reservations.rados
    if rados is None:
        raise reservations.AgentError("python3-rados is missing: the agent keeps its log in Ceph")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    chan = reservations.Channel()
    cluster = None
    try:
        try:
            cluster = rados.Rados(conffile=str(a.conf), name=a.name)
            cluster.connect(timeout=60)
            ioctx = cluster.open_ioctx(a.pool)
        except rados.Error as e:
            raise reservations.AgentError(f"Ceph ({a.conf}, {a.name}, pool {a.pool}): {e}") from e
        agent = reservations.Agent(a.iqn, ioctx, chan)
        where = f"{a.pool}/{reservations.log_object(a.iqn)}"

        def ready() -> None:
            if a.json:
                print(json.dumps({"serving": a.iqn, "log": where, "applied": agent.applied}), flush=True)
            else:
                print(f"reservations of {a.iqn} shared through {where}; {agent.applied} entries applied", flush=True)

        try:
            agent.serve(ready, stop)
        except rados.Error as e:
            raise reservations.AgentError(f"{where}: {e}") from e
    finally:
        # the links stay: a PERSISTENT RESERVE OUT is refused until an
        # agent runs again, rather than changing this gateway alone
        chan.close()
        if cluster is not None:
            cluster.shutdown()
    return 0


def cmd_exporter(ctl: Control, a: argparse.Namespace) -> int:
    server = exporter.serve_on(exporter.registry(ctl), a.listen)
    try:
        where = exporter.url(server)
        if a.json:
            print(json.dumps({"metrics": where, "configfs": str(ctl.root)}), flush=True)
        else:
            print(f"cxgbit-ext exporter: metrics of {ctl.root} on {where}", flush=True)
        exporter.setup_logging()
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def _listen(text: str) -> str:
    try:
        exporter.parse_listen(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _list(what: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [x.strip() for x in text.split(",")]
        if not all(items):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
        return items

    return parse


def _owner_list(text: str) -> list[int]:
    try:
        return [int(x) for x in _list("N,N,...")(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected N,N,... (each image's gateway, 1-based)") from None


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cxgbit-ext", description="iSCSI PDU offload for LIO: status and control")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--configfs", type=Path, default=CONFIGFS, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status", help="module, portals, adapters, offloaded connections")
    ad = sub.add_parser("adapters", help="adapters, the netdevs they serve, what they offload; create, delete")
    adsub = ad.add_subparsers(dest="action", metavar="{create,delete}")
    cr = adsub.add_parser("create", help="make a software adapter (serving no netdev unless --netdev)")
    cr.add_argument("name", help=ADAPTER_NAME_RULE)
    cr.add_argument("--netdev", default="", help="the netdev it serves, or '*' for all")
    de = adsub.add_parser("delete", help="remove a software adapter: new logins on its netdev go to stock TCP")
    de.add_argument("name")
    sub.add_parser("connections", help="offloaded connections and which offloads each one uses, and why not")
    sub.add_parser("portals", help="every LIO iSCSI portal: offloaded or not, and why not")
    c = sub.add_parser("counters", help="per-adapter counters, or a rate view with --watch")
    c.add_argument("--watch", type=float, metavar="SECONDS", help="print rates every SECONDS")
    c.add_argument("--count", type=int, help="stop after this many intervals")
    b = sub.add_parser("bind", help="make an adapter serve one netdev, or '*' for all")
    b.add_argument("adapter")
    b.add_argument("netdev")
    u = sub.add_parser("unbind", help="make an adapter serve no netdev (new logins go to stock TCP)")
    u.add_argument("adapter")
    s = sub.add_parser("set", help="switch an adapter's offloads for the connections it accepts from now on")
    s.add_argument("adapter")
    s.add_argument("settings", nargs="+", metavar="SETTING=VALUE", help="ddp=0|1, iso=0|1 (all checked first)")
    for name, what in (("save", "write"), ("restore", "apply")):
        p = sub.add_parser(name, help=f"{what} the adapter settings (and with --lio, LIO's whole config)")
        p.add_argument("--file", type=Path, default=persist.DEFAULT, help=f"default {persist.DEFAULT}")
        p.add_argument("--lio", type=Path, nargs="?", const=persist.LIO_DEFAULT,
                       help=f"also LIO's config, rtslib format (default {persist.LIO_DEFAULT})")  # fmt: skip
    t = sub.add_parser("topology", help="build or remove the papers' reference target")
    t.add_argument("action", choices=("create", "delete"))
    t.add_argument("--iqn", required=True)
    t.add_argument("--luns", type=int, default=18, help="number of LUNs (default 18, as in the T6 paper)")
    t.add_argument("--size", type=_size, default=512 << 20, help="LUN size (default 512M)")
    t.add_argument(
        "--backstore",
        choices=("ramdisk", "fileio", "nullio"),
        default="ramdisk",
        help="ramdisk (rd_mcp), fileio (sparse file), nullio (rd_mcp storing nothing, for scale tests)",
    )
    t.add_argument("--portal", type=_portal, action="append", help="IP[:PORT], repeatable (default 0.0.0.0:3260)")
    t.add_argument("--no-offload", dest="offload", action="store_false", help="portals stay stock TCP")
    t.add_argument("--acl", action="append", metavar="INITIATOR_IQN", help="explicit ACL (default: demo mode)")
    t.add_argument("--chap", type=_chap, metavar="USER:SECRET", help="one-way CHAP the initiators must use")
    g = sub.add_parser("gateway", help="lay this host out as one gateway of shared RBD images (ceph-iscsi's layout)")
    g.add_argument("action", choices=("create", "show", "delete"))
    g.add_argument("--iqn", required=True, help="the target name, the same on every gateway")
    g.add_argument("--rbd", type=_list("POOL/IMAGE,POOL/IMAGE,..."), metavar="POOL/IMAGE,...",
                   help="the images, LUN 0 first (for iblock, each mapped on this host with rbd map)")  # fmt: skip
    g.add_argument(
        "--portals",
        type=_list("IP,IP,... (every gateway's portal address)"),
        metavar="IP,IP,...",
        help="every gateway's portal, in order",
    )
    g.add_argument("--gateway", type=int, metavar="N", help="this gateway's place in --portals (1-based)")
    g.add_argument("--owner", type=_owner_list, metavar="N,...",
                   help="each image's Active/Optimized gateway (default: image i on gateway i mod N + 1)")  # fmt: skip
    g.add_argument("--port", type=int, default=3260)
    g.add_argument("--dev", type=_list("DEV,DEV,..."), metavar="DEV,...",
                   help="the block device each image is mapped at (default: from rbd device list)")  # fmt: skip
    g.add_argument("--backstore", choices=tuple(gateway.BACKSTORES), default="iblock",
                   help="iblock on the krbd-mapped image (default), or user:rbd through tcmu-runner")  # fmt: skip
    g.add_argument("--no-offload", dest="offload", action="store_false", help="this gateway's portal stays stock TCP")
    g.add_argument("--cmd-time-out", type=int, metavar="S",
                   help="user:rbd: seconds before LIO fails a command tcmu-runner has not answered, which "
                        "dm-multipath then retries on another gateway "
                        f"(default {gateway.USER_CMD_TIME_OUT})")  # fmt: skip
    g.add_argument("--reservations", action="store_true",
                   help="the gateways share SCSI reservations: this gateway serves nothing until "
                        "'cxgbit-ext reservations serve' has applied the cluster's log")  # fmt: skip
    r = sub.add_parser("reservations", help="share a gateway target's SCSI reservations through Ceph, until stopped")
    r.add_argument("action", choices=("serve",))
    r.add_argument("--iqn", required=True, help="the gateway target (gateway create's --iqn)")
    r.add_argument("--pool", default="rbd", help="the RADOS pool of the target's log (default rbd)")
    r.add_argument("--conf", type=Path, default=Path("/etc/ceph/ceph.conf"))
    r.add_argument("--name", default="client.admin", help="the Ceph client to connect as")
    x = sub.add_parser("exporter", help="serve Prometheus metrics of the module's tree until stopped")
    x.add_argument(
        "--listen", type=_listen, default=exporter.DEFAULT_LISTEN, metavar="ADDR:PORT",
        help=f"ADDR:PORT, [IPV6]:PORT or :PORT for every address (default {exporter.DEFAULT_LISTEN})",
    )  # fmt: skip
    return ap


COMMANDS = {
    "status": cmd_status, "adapters": cmd_adapters, "connections": cmd_connections, "portals": cmd_portals,
    "counters": cmd_counters, "bind": cmd_bind, "unbind": cmd_unbind, "set": cmd_set, "save": cmd_save,
    "restore": cmd_restore, "topology": cmd_topology, "gateway": cmd_gateway, "exporter": cmd_exporter,
    "reservations": cmd_reservations,
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.cmd == "topology" and a.luns < 1:
        parser().error("--luns must be at least 1")
    ctl = Control(a.configfs)
    try:
        return COMMANDS[a.cmd](ctl, a)
    except (CxgbitExtError, topology.TopologyError, gateway.GatewayError, reservations.AgentError) as e:
        if a.json:
            print(json.dumps({"error": str(e)}))
        else:
            print(f"cxgbit-ext: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
