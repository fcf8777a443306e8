"""The module's control interface: /sys/kernel/config/cxgbit_ext/.

Objects mirror the configfs tree; attributes are read from the files each
time (configfs is the truth, nothing is cached). Changes are checked in
full before the first write, and a change of several steps is undone if
the kernel refuses one of them.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

CONFIGFS = Path("/sys/kernel/config/cxgbit_ext")
FORMAT = 2  # of dump()/save files; bump on an incompatible change

# The longest a login hold lasts: the module refuses a longer one on
# login_holds (holds.c, CXE_HOLD_MAX_S). The one place the tools name it.
HOLD_MAX_S = 600
BUILTIN = "soft0"  # made at module load; can be unbound, not deleted
# The longest name the module keeps for an adapter or a netdev (IFNAMSIZ - 1)
NAME_MAX = 15
# The names mkdir under adapters/ takes (configfs.c, cxe_adapter_name_ok):
# the one place the tools write the rule; the CLI's and targetcli's help
# say ADAPTER_NAME_RULE.
ADAPTER_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{NAME_MAX}}}")
ADAPTER_NAME_RULE = f"1 to {NAME_MAX} characters of A-Z a-z 0-9 _ -"


def valid_adapter_name(name: str) -> bool:
    """Whether the module makes an adapter of this name (ADAPTER_NAME_RULE)."""
    return ADAPTER_NAME.fullmatch(name) is not None


class CxgbitExtError(Exception):
    """Base of the errors this package raises; the message says what to do."""


class ModuleNotLoaded(CxgbitExtError):
    def __init__(self, root: Path) -> None:
        super().__init__(
            f"{root} does not exist: the cxgbit_ext module is not loaded "
            "(modprobe cxgbit_ext, or enable offload on a portal, which loads it)"
        )


# What the tools call each offload, and the caps word the module uses for it.
OFFLOADS = {"hcrc": "header CRC32C", "dcrc": "data CRC32C", "ddp": "direct data placement",
            "iso": "Data-In segmentation", "rxagg": "receive aggregation",
            "t10pi": "T10-PI inserted as writes are placed"}  # fmt: skip
# Offloads an admin switches per adapter (adapters/<name>/<toggle>, "0" or "1"),
# for connections accepted afterwards.
TOGGLES = ("ddp", "iso")
# What a connection line says about itself, when its adapter has gone.
CONNECTION_OFFLOADS = ("hcrc", "dcrc", "ddp", "iso")
# Why the module keeps ISO off for a session (its connections file's
# iso_off): its burst planner's model is ERL 0 with data in order
ISO_OFF = {
    "erl": "ErrorRecoveryLevel above 0 was negotiated (Data-In may be sent again, one PDU at a time)",
    "order": "DataSequenceInOrder=No or DataPDUInOrder=No was negotiated",
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_bool(value: bool | str, what: str) -> bool:
    """``value`` as a boolean: a bool, or 0/1/true/false/yes/no/on/off in any case."""
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise CxgbitExtError(f"{what}: {value!r} is not a boolean; use 1 or 0 (or true/false, yes/no, on/off)")


class Adapter:
    """adapters/<name>/ of the module's tree, as rtslib's objects are: each
    property reads its file when asked (nothing is cached), setting one
    checks the value in full before writing it, and dump() gives what
    Control.setup() makes true again. Got from Control.adapter(),
    adapters() or create_adapter(); an adapter deleted meanwhile raises
    CxgbitExtError on the next read."""

    def __init__(self, control: Control, name: str) -> None:
        self.control = control
        self.name = name

    def __repr__(self) -> str:
        return f"Adapter({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Adapter) and (other.control.root, other.name) == (self.control.root, self.name)

    def __hash__(self) -> int:
        return hash((self.control.root, self.name))

    @property
    def path(self) -> Path:
        return self.control.root / "adapters" / self.name

    @property
    def exists(self) -> bool:
        return (self.path / "netdev").exists()

    def _need_exists(self) -> None:
        if not self.exists:
            self.control.adapter(self.name)  # raises, naming the adapters there are

    def _read(self, attr: str) -> str:
        try:
            return (self.path / attr).read_text()
        except FileNotFoundError:
            if self.path.is_dir():
                raise
            self.control._need_loaded()
            raise CxgbitExtError(f"adapter {self.name} no longer exists") from None

    # -- what it is and does: read-only -------------------------------------

    @property
    def type(self) -> str:
        return self._read("type").strip()

    @property
    def caps(self) -> tuple[str, ...]:
        """What it can offload, in the module's words (OFFLOADS)."""
        return tuple(self._read("caps").split())

    @property
    def counters(self) -> dict[str, int]:
        return {k: int(v) for k, v in (ln.split() for ln in self._read("counters").splitlines() if ln)}

    @property
    def serving(self) -> str:
        return {"*": "every netdev", "": "no netdev"}.get(self.netdev, self.netdev)

    @property
    def active(self) -> tuple[str, ...]:
        """The capabilities a connection accepted now gets (toggled-off ones left out)."""
        on = self.toggles
        return tuple(c for c in self.caps if on.get(c, True))

    @property
    def disabled(self) -> tuple[str, ...]:
        """Capabilities an admin has toggled off."""
        on = self.toggles
        return tuple(c for c in self.caps if not on.get(c, True))

    def offload_text(self) -> str:
        """``hcrc+dcrc+iso (ddp off)``: what it offloads, and what is toggled off."""
        return f"{'+'.join(self.active) or 'nothing'}{self.disabled_text()}"

    def disabled_text(self) -> str:
        """`` (ddp off, iso off)``: what is toggled off, "" for nothing."""
        off = self.disabled
        return f" ({', '.join(f'{c} off' for c in off)})" if off else ""

    # -- what an admin sets ---------------------------------------------------

    @property
    def netdev(self) -> str:
        """The netdev it serves by name, "*" for every netdev, "" for none."""
        return self._read("netdev").strip()

    @netdev.setter
    def netdev(self, netdev: str) -> None:
        self.set_netdev(netdev)

    def set_netdev(self, netdev: str, check: bool = True) -> None:
        """Serve one netdev by name, "*" for all, "" for none.

        With ``check``, a named netdev must exist in this network namespace
        (the module binds by name, so a typo would otherwise be silent). A
        netdev another adapter serves is refused, naming that adapter.
        """
        self._need_exists()
        self.control._check_netdev(self.name, netdev, check, self.control.adapters())
        self._write_netdev(netdev)

    def _write_netdev(self, netdev: str) -> None:
        try:
            (self.path / "netdev").write_text(netdev + "\n")
        except OSError as e:
            why = e.strerror
            if e.errno == errno.EBUSY:
                why = f"another adapter already serves it (the module said: {e.strerror}); see 'cxgbit-ext adapters'"
            raise CxgbitExtError(f"adapter {self.name}: cannot serve netdev {netdev!r}: {why}") from e

    def _on(self, toggle: str) -> bool:
        return self._read(toggle).strip() == "1"  # the module shows 0 or 1

    @property
    def toggles(self) -> dict[str, bool]:
        """Each of TOGGLES: whether connections accepted from now on get it."""
        return {t: self._on(t) for t in TOGGLES}

    @property
    def ddp(self) -> bool:
        return self._on("ddp")

    @ddp.setter
    def ddp(self, value: bool | str) -> None:
        self.set_toggles({"ddp": value})

    @property
    def iso(self) -> bool:
        return self._on("iso")

    @iso.setter
    def iso(self, value: bool | str) -> None:
        self.set_toggles({"iso": value})

    def check_toggles(self, values: Mapping[str, bool | str]) -> dict[str, bool]:
        """Check toggle settings without changing anything; return them as
        booleans. Raises CxgbitExtError saying what is wrong."""
        self._need_exists()  # an adapter that does not exist is refused first
        out = {}
        for toggle, value in values.items():
            if toggle not in TOGGLES:
                raise CxgbitExtError(f"adapter {self.name}: no setting {toggle!r}; settings: {', '.join(TOGGLES)}")
            out[toggle] = parse_bool(value, f"adapter {self.name} {toggle}")
        return out

    def _write_toggle(self, toggle: str, on: bool) -> None:
        try:
            (self.path / toggle).write_text("1\n" if on else "0\n")
        except OSError as e:
            raise CxgbitExtError(f"adapter {self.name}: cannot set {toggle} to {int(on)}: {e.strerror}") from e

    def set_toggles(self, values: Mapping[str, bool | str]) -> dict[str, bool]:
        """Switch offloads on or off, e.g. ``{"ddp": False}``, for the
        connections accepted from now on (live ones keep theirs). All are
        checked before the first write; undone if the kernel refuses one."""
        wanted = self.check_toggles(values)
        before = self.toggles
        with _undoing() as undo:
            for toggle, on in wanted.items():
                if on != before[toggle]:
                    self._write_toggle(toggle, on)
                    undo.append(partial(self._write_toggle, toggle, before[toggle]))
        return wanted

    def delete(self) -> int:
        """Remove this software adapter: logins that arrive afterwards on
        its netdev go to an adapter serving "*" if there is one, else to
        stock TCP. Returns how many of its connections are still running
        (they go on until they end)."""
        if self.name == BUILTIN:
            raise CxgbitExtError(f"cannot delete adapter {BUILTIN}: {BUILTIN} is built in; unbind it instead")
        self._need_exists()
        self.control._rmdir(self.name)
        return sum(1 for c in self.control.connections() if c.adapter == self.name)

    # -- save and restore -------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Its settings (not state), as one entry of Control.dump()."""
        on = self.toggles
        return {"name": self.name, "type": self.type, "netdev": self.netdev, **on}

    def info(self) -> dict[str, Any]:
        """Settings and state, as ``--json`` shows an adapter."""
        return {**self.dump(), "counters": self.counters, "caps": list(self.caps), "offloads": list(self.active)}


@dataclass(frozen=True)
class Connection:
    peer: str
    local: str
    adapter: str
    hdigest: bool
    ddigest: bool
    counters: dict[str, int]
    ddp: bool = True  # the adapter's toggles when this connection was accepted
    iso: bool = True
    # with iso off, the module's reason: "adapter" (its toggle at accept),
    # "erl" or "order" (the session's parameters; ISO_OFF)
    iso_off: str = ""
    # still logging in: LIO may yet hand it to the stock portal
    login: bool = False

    def offloads(self, caps: tuple[str, ...]) -> dict[str, str]:
        """Each offload of ``caps``: "on", or "off: <why>" for this connection."""
        out = {}
        for cap in caps:
            if cap == "hcrc" and not self.hdigest:
                out[cap] = "off: HeaderDigest=None was negotiated"
            elif cap == "dcrc" and not self.ddigest:
                out[cap] = "off: DataDigest=None was negotiated"
            elif cap == "iso" and not self.iso and self.iso_off in ISO_OFF:
                out[cap] = f"off: {ISO_OFF[self.iso_off]}"
            elif cap in TOGGLES and not getattr(self, cap):
                out[cap] = f"off: disabled on adapter {self.adapter} when this connection started ({cap} 0)"
            else:
                out[cap] = "on"
        return out


@dataclass(frozen=True)
class PortalReport:
    """One line of the module's portal_state file: where the module sends
    the logins of a portal it holds, by the rule its SYN steering follows."""

    ip: str  # as the module prints it: IPv6 without brackets
    port: int
    on: bool  # an adapter takes logins arriving on some netdev
    # netdev -> adapter: each netdev bound to an adapter by name, or the one
    # a specific address is on
    netdevs: dict[str, str]
    # a wildcard address: the adapter every other netdev's logins go to ("" for
    # none, stock TCP); None for a specific address
    rest: str | None = None
    why: str = ""  # when not on: unbound, unserved, no_netdev
    netdev: str = ""  # "unserved": the netdev the address is on

    def is_for(self, ip: str, port: int) -> bool:
        """The line of portal ``ip``:``port`` (rtslib brackets IPv6 addresses)."""
        return port == self.port and _same_ip(ip.removeprefix("[").removesuffix("]"), self.ip)


def _same_ip(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(_zone_by_index(a)) == ipaddress.ip_address(_zone_by_index(b))
    except ValueError:
        return a == b


def _zone_by_index(ip: str) -> str:
    """A zoned address with its zone as a netdev index, as the module prints
    it: LIO takes the zone by name too (fe80::1%eth0). A name no netdev has
    here is left as it is."""
    addr, sep, zone = ip.partition("%")
    if not sep or zone.isdigit():
        return ip
    try:
        return f"{addr}%{socket.if_nametoindex(zone)}"
    except OSError:
        return ip


def _parse_portal_report(line: str) -> PortalReport:
    addr, state, *words = line.split()
    ip, port = addr.rsplit(":", 1)
    ip = ip.removeprefix("[").removesuffix("]")
    if state != "on":
        why = words[0] if words else state
        return PortalReport(ip, int(port), on=False, netdevs={}, why=why, netdev=words[1] if len(words) > 1 else "")
    where = dict(w.split("=", 1) for w in words)
    other = where.pop("*", None)
    return PortalReport(ip, int(port), on=True, netdevs=where, rest="" if other == "-" else other)


@dataclass(frozen=True)
class Backend:
    """One line of the module's backends file: an implementation of the
    adapter contract the module carries, whether it can carry offloaded
    connections now, and why not (the module decides; this only reads)."""

    name: str
    on: bool
    caps: tuple[str, ...]
    why: str = ""  # when not on: one word, e.g. no_ports (cxgb4 has no T5/T6 adapter)
    detail: tuple[str, ...] = ()  # what the backend adds, e.g. its adapters

    def state_text(self) -> str:
        if self.on:
            return "on"
        return " ".join(("off:", BACKEND_WHY.get(self.why, self.why), *self.detail))

    def summary(self) -> str:
        """``on (offloads hcrc dcrc)``: its state and caps, as the status commands show a backend."""
        return f"{self.state_text()} (offloads {' '.join(self.caps) or 'nothing'})"


# The backends file's words for why a backend offloads nothing, for people;
# a word not here is shown as the module wrote it
BACKEND_WHY = {
    "no_ports": "no Chelsio T5/T6 adapter attached (cxgb4 has none)",
    "hw_off": (
        "its adapters are Chelsio hardware, which this code has never run on: "
        "load cxgbit_ext_cxgb4 with cxgb4_hw=1 to offload on them"
    ),
}


def _parse_backend(line: str) -> Backend:
    name, state, *words = line.split()
    caps: tuple[str, ...] = ()
    if words and words[-1].startswith("caps="):
        caps = tuple(c for c in words.pop().removeprefix("caps=").split(",") if c)
    if state == "on":
        return Backend(name, True, caps, detail=tuple(words))
    return Backend(name, False, caps, why=words[0] if words else "", detail=tuple(words[1:]))


@dataclass(frozen=True)
class Status:
    version: str
    transport: str
    portals: list[str]
    adapters: list[Adapter]
    connections: list[Connection]
    backends: list[Backend]

    def dump(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "transport": self.transport,
            "portals": self.portals,
            "adapters": [a.info() for a in self.adapters],
            "connections": [asdict(c) for c in self.connections],
            "backends": [asdict(b) for b in self.backends],
        }


@dataclass(frozen=True)
class AdapterConfig:
    """One adapter of a dump(): what setup() makes true."""

    name: str
    type: str
    netdev: str
    ddp: bool = True
    iso: bool = True


def _parse_connection(line: str) -> Connection:
    peer, local, *kvs = line.split()
    kv = dict(x.split("=", 1) for x in kvs)
    return Connection(
        peer=peer,
        local=local,
        adapter=kv.pop("adapter"),
        login=kv.pop("login", "0") == "1",
        hdigest=kv.pop("hdigest") == "1",
        ddigest=kv.pop("ddigest") == "1",
        ddp=kv.pop("ddp") == "1",
        iso=kv.pop("iso") == "1",
        iso_off="" if (why := kv.pop("iso_off", "no")) == "no" else why,
        counters={k: int(v) for k, v in kv.items()},
    )


@dataclass(frozen=True)
class DeviceAdapter:
    """An adapter of a backend with devices of its own: not under adapters/
    (nothing of it is set by name). The module names it, with its backend,
    in device_counters; what it offloads is its backend's caps (backends).
    Nothing here knows a backend by name: a new one shows as it is."""

    name: str
    type: str  # its backend's name, as an adapter's type file says it
    caps: tuple[str, ...]
    counters: dict[str, int]


def adapter_caps(adapters: Iterable[Adapter | DeviceAdapter], name: str) -> tuple[str, ...]:
    """The caps of adapter ``name``; for one deleted since (its connections
    live on), the offloads a connection line reports about itself."""
    return next((a.caps for a in adapters if a.name == name), CONNECTION_OFFLOADS)


def netdev_conflict(adapters: list[Adapter], name: str, netdev: str) -> Adapter | None:
    """The adapter other than ``name`` that already serves exactly ``netdev``
    (both "*" counts); the module allows one adapter per netdev name."""
    if not netdev:
        return None
    return next((a for a in adapters if a.name != name and a.netdev == netdev), None)


def _netdev_desc(netdev: str) -> str:
    return "every netdev ('*')" if netdev == "*" else f"netdev {netdev}"


class Control:
    """Handle on one cxgbit_ext configfs tree (the real one by default)."""

    def __init__(self, root: Path = CONFIGFS) -> None:
        self.root = root

    def _read(self, name: str) -> str:
        try:
            return (self.root / name).read_text()
        except FileNotFoundError:
            if not self.root.is_dir():
                raise ModuleNotLoaded(self.root) from None
            raise

    def _need_loaded(self) -> None:
        if not self.root.is_dir():
            raise ModuleNotLoaded(self.root)

    @property
    def loaded(self) -> bool:
        return self.root.is_dir()

    def adapters(self) -> list[Adapter]:
        """The adapters there are now, by name."""
        self._need_loaded()
        return [Adapter(self, d.name) for d in sorted(p for p in (self.root / "adapters").iterdir() if p.is_dir())]

    def _names(self) -> str:
        return ", ".join(a.name for a in self.adapters()) or "none"

    def adapter(self, name: str) -> Adapter:
        """Adapter ``name``; CxgbitExtError naming the adapters there are when there is none."""
        self._need_loaded()
        a = Adapter(self, name)
        if "/" in name or name in ("", ".", "..") or not a.exists:
            raise CxgbitExtError(f"no adapter {name!r}; adapters: {self._names()}")
        return a

    def counters(self) -> dict[str, dict[str, int]]:
        """Each adapter's counters, read now, by name: those under adapters/
        (one deleted while they are read is left out), then those of the
        backends with devices of their own. A device adapter whose name an
        adapter of adapters/ has is named ``backend/name`` (no adapter of
        adapters/ has a "/" in its name)."""
        out = {}
        for a in self.adapters():
            try:
                out[a.name] = a.counters
            except CxgbitExtError:
                if a.exists:
                    raise
        for d in self.device_adapters():
            out[f"{d.type}/{d.name}" if d.name in out else d.name] = d.counters
        return out

    @property
    def version(self) -> str:
        """The loaded module's version (CXE_VERSION)."""
        return self._read("version").strip()

    @property
    def transport(self) -> str:
        """The name of the LIO transport the module registered."""
        return self._read("transport").strip()

    def device_adapters(self) -> list[DeviceAdapter]:
        """The adapters of backends with devices of their own, in
        device_counters' order, each with its backend's caps."""
        try:
            by_backend = self.device_counters()
        except FileNotFoundError:
            return []  # a module from before backend modules (0.2.0) has no device_counters, nor such adapters
        caps = {b.name: b.caps for b in self.backends()} if by_backend else {}
        return [
            DeviceAdapter(name, backend, caps.get(backend, ()), counters)
            for backend, by_adapter in by_backend.items()
            for name, counters in by_adapter.items()
        ]

    def every_adapter(self) -> list[Adapter | DeviceAdapter]:
        """Those of adapters/ and the device adapters: every adapter a
        connections line may name (but one deleted since)."""
        return [*self.adapters(), *self.device_adapters()]

    def device_counters(self) -> dict[str, dict[str, dict[str, int]]]:
        """The counters of the adapters of backends with devices of their own
        (not under adapters/), by backend then adapter; empty with no such
        backend registered."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for line in self._read("device_counters").splitlines():
            if line.strip():
                backend, adapter, name, value = line.split()
                out.setdefault(backend, {}).setdefault(adapter, {})[name] = int(value)
        return out

    def portals(self) -> list[str]:
        """The offloaded portals LIO has handed to the module, as "ip:port"."""
        return self._read("portals").split()

    def portal_reports(self) -> list[PortalReport]:
        """The portals the module holds, each with where its logins go (portal_state)."""
        return [_parse_portal_report(ln) for ln in self._read("portal_state").splitlines() if ln.strip()]

    def portal_report(self, ip: str, port: int) -> PortalReport | None:
        """The module's report on portal ``ip``:``port``; None when it holds no such portal."""
        return next((r for r in self.portal_reports() if r.is_for(ip, port)), None)

    def backends(self) -> list[Backend]:
        """The backends the module carries, each with whether it can offload now (backends)."""
        return [_parse_backend(ln) for ln in self._read("backends").splitlines() if ln.strip()]

    def connections(self) -> list[Connection]:
        return [_parse_connection(ln) for ln in self._read("connections").splitlines() if ln.strip()]

    @contextmanager
    def login_hold(self, target: str, seconds: int) -> Iterator[None]:
        """Hold ``target`` while the block runs, for at most ``seconds``:
        the module answers the logins for it that LIO refuses on an
        offloaded portal itself instead of handing them to the stock one,
        and resets those it handed there that are not answered yet."""
        self._need_loaded()
        self._write_hold(target, min(max(seconds, 1), HOLD_MAX_S))
        try:
            yield
        finally:
            try:
                (self.root / "login_holds").write_text(f"{target} 0\n")
            except FileNotFoundError:
                pass  # the module went away, and its holds with it
            except OSError as e:
                if e.errno != errno.ENOENT:  # not ENOENT: its time was up
                    raise CxgbitExtError(f"cannot end the login hold on {target}: {e.strerror}") from e

    def _write_hold(self, target: str, seconds: int) -> None:
        try:
            (self.root / "login_holds").write_text(f"{target} {seconds}\n")
        except OSError as e:
            raise CxgbitExtError(f"cannot hold the logins for {target}: {e.strerror}") from e

    # -- changes ----------------------------------------------------------

    def _check_netdev(self, adapter: str, netdev: str, check: bool, adapters: list[Adapter]) -> None:
        if check and netdev not in ("*", "") and netdev not in netdevs():
            raise CxgbitExtError(
                f"adapter {adapter}: no netdev {netdev!r} in this network namespace; "
                f"netdevs: {', '.join(sorted(netdevs()))} (or '*' for all)"
            )
        other = netdev_conflict(adapters, adapter, netdev)
        if other is not None:
            raise CxgbitExtError(
                f"adapter {adapter}: {_netdev_desc(netdev)} is already served by adapter {other.name}; "
                f"unbind {other.name} first (one adapter per netdev)"
            )

    def _check_new_name(self, name: str) -> None:
        if not valid_adapter_name(name):
            raise CxgbitExtError(f"{name!r} is not a valid adapter name: {ADAPTER_NAME_RULE}")

    def made_type(self) -> str:
        """The type of the adapters mkdir makes under adapters/: the built-in
        adapter's, which the module makes with the same backend (the one
        whose adapters are made by name), so no backend is named here."""
        return Adapter(self, BUILTIN).type

    def _mkdir(self, name: str) -> None:
        try:
            (self.root / "adapters" / name).mkdir()
        except OSError as e:
            if e.errno == errno.EEXIST:
                raise CxgbitExtError(f"adapter {name} already exists; adapters: {self._names()}") from e
            if e.errno == errno.ENOENT:
                raise ModuleNotLoaded(self.root) from e
            raise CxgbitExtError(f"cannot create adapter {name}: {e.strerror}") from e

    def _rmdir(self, name: str) -> None:
        try:
            (self.root / "adapters" / name).rmdir()
        except OSError as e:
            if e.errno == errno.EPERM:
                raise CxgbitExtError(
                    f"cannot delete adapter {name}: it is built in (the module refused: {e.strerror}); "
                    "unbind it instead"
                ) from e
            raise CxgbitExtError(f"cannot delete adapter {name}: {e.strerror}") from e

    def create_adapter(self, name: str, netdev: str = "", check: bool = True) -> Adapter:
        """Make a software adapter ``name``, serving ``netdev`` when given
        ("*" for all). Everything is checked first; if the bind fails, the
        new adapter is removed again, so nothing is half-done."""
        self._need_loaded()
        self._check_new_name(name)
        adapters = self.adapters()
        if any(a.name == name for a in adapters):
            raise CxgbitExtError(
                f"adapter {name} already exists; adapters: {', '.join(a.name for a in adapters)} "
                f"(bind it to change its netdev)"
            )
        self._check_netdev(name, netdev, check, adapters)
        new = Adapter(self, name)
        with _undoing() as undo:
            self._mkdir(name)
            undo.append(partial(self._rmdir, name))
            if netdev:
                new._write_netdev(netdev)
        return new

    # -- save and restore -------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """The settings an admin makes (not state): what save writes."""
        return {"format": FORMAT, "adapters": [a.dump() for a in self.adapters()]}

    def _plan(self, wanted: list[AdapterConfig], check: bool) -> dict[str, AdapterConfig]:
        """Check that ``wanted`` can be applied here; return the adapters' settings now."""
        current = {a.name: AdapterConfig(**a.dump()) for a in self.adapters()}
        for w in wanted:
            have = current.get(w.name)
            if have is None:
                if w.type != (made := self.made_type()):
                    raise CxgbitExtError(
                        f"adapter {w.name} (type {w.type!r}) is not on this system, and only {made} adapters "
                        f"can be created; adapters here: {', '.join(current) or 'none'}"
                    )
                self._check_new_name(w.name)
            elif have.type != w.type:
                raise CxgbitExtError(f"adapter {w.name} is of type {have.type!r} here, {w.type!r} in the configuration")
        if check:
            have_devs = netdevs()
            missing = [
                f"{w.name}: {w.netdev}" for w in wanted if w.netdev not in ("*", "") and w.netdev not in have_devs
            ]
            if missing:
                raise CxgbitExtError(
                    f"netdev(s) not in this network namespace: {', '.join(missing)}; "
                    f"netdevs: {', '.join(sorted(have_devs))}"
                )
        # the end state: the configured adapters as configured, the others as they are
        configured = {w.name for w in wanted}
        for w in wanted:
            other = next((a for a in current.values() if a.name not in configured and w.netdev and
                          a.netdev == w.netdev), None)  # fmt: skip
            if other is not None:
                raise CxgbitExtError(
                    f"adapter {w.name} would serve {_netdev_desc(w.netdev)}, which adapter {other.name} serves "
                    f"and the configuration does not mention; unbind {other.name} first"
                )
        return current

    def setup(self, config: dict[str, Any], check: bool = True) -> None:
        """Apply a dump(): create the adapters it has and
        this system lacks, then set each one's netdev and toggles. Adapters
        it does not mention are left alone (none is deleted). All of it or
        nothing: checked first, and undone if the kernel refuses a step."""
        wanted = validate(config)
        self._need_loaded()
        current = self._plan(wanted, check)
        with _undoing() as undo:
            for w in wanted:
                if w.name not in current:
                    self._mkdir(w.name)
                    undo.append(partial(self._rmdir, w.name))
            live = {w.name: Adapter(self, w.name) for w in wanted}
            now = {name: AdapterConfig(**a.dump()) for name, a in live.items()}
            # unbind first whatever moves, so no step puts two adapters on one netdev
            for w in wanted:
                old = now[w.name].netdev
                if old and old != w.netdev:
                    live[w.name]._write_netdev("")
                    undo.append(partial(live[w.name]._write_netdev, old))
            for w in wanted:
                old = now[w.name].netdev
                if w.netdev and old != w.netdev:
                    live[w.name]._write_netdev(w.netdev)
                    undo.append(partial(live[w.name]._write_netdev, ""))
            for w in wanted:
                for t in TOGGLES:
                    on, was = getattr(w, t), getattr(now[w.name], t)
                    if on != was:
                        live[w.name]._write_toggle(t, on)
                        undo.append(partial(live[w.name]._write_toggle, t, was))

    def status(self) -> Status:
        return Status(
            version=self.version,
            transport=self.transport,
            portals=self._read("portals").split(),
            adapters=self.adapters(),
            connections=self.connections(),
            backends=self.backends(),
        )


@contextmanager
def _undoing() -> Iterator[list[Callable[[], None]]]:
    """Undo steps for a change of several writes, appended as each write is
    done: if the block fails, they run in reverse, and the error says
    whether everything was put back."""
    steps: list[Callable[[], None]] = []
    try:
        yield steps
    except BaseException as exc:
        if not steps:
            raise
        failed = []
        for step in reversed(steps):
            try:
                step()
            except (CxgbitExtError, OSError) as e:
                failed.append(str(e))
        if not isinstance(exc, CxgbitExtError | OSError):
            raise  # put back, and on its way (KeyboardInterrupt, a bug)
        if failed:
            raise CxgbitExtError(f"{exc}; undoing the steps already done failed too: {'; '.join(failed)}") from exc
        raise CxgbitExtError(f"{exc}; nothing was changed") from exc


def counter_lines(counters: dict[str, int], indent: str = "  ") -> list[str]:
    """Counters as aligned "name value" lines, as the CLI and targetcli show them."""
    return [f"{indent}{k:<16}{v:>16}" for k, v in counters.items()]


def netdevs() -> set[str]:
    """Network interfaces of this network namespace (asked of the kernel:
    /sys/class/net shows the namespace sysfs was mounted in instead)."""
    return {name for _, name in socket.if_nameindex()}


def _entry(i: int, a: Any) -> AdapterConfig:
    keys = {"name": str, "type": str, "netdev": str, "ddp": bool, "iso": bool}
    shape = "{'name': str, 'type': str, 'netdev': str, 'ddp': bool, 'iso': bool}"
    if not isinstance(a, dict):
        raise CxgbitExtError(f"adapters[{i}]: expected {shape}, got {a!r}")
    unknown = sorted(set(a) - set(keys))
    if unknown:
        raise CxgbitExtError(f"adapters[{i}]: unknown key(s) {unknown}; expected {shape}")
    for k, typ in keys.items():
        if not isinstance(a.get(k), typ):
            want = "true or false" if typ is bool else "a string"
            raise CxgbitExtError(f"adapters[{i}].{k}: expected {want}, got {a.get(k)!r}; expected {shape}")
    entry = AdapterConfig(a["name"], a["type"], a["netdev"], a["ddp"], a["iso"])
    # only that the name stays inside adapters/: ADAPTER_NAME_RULE is for an
    # adapter to be made (Control._plan), one that exists already is named as it is
    if entry.name in ("", ".", "..") or "/" in entry.name or entry.name != entry.name.strip():
        raise CxgbitExtError(f"adapters[{i}]: {entry.name!r} is not an adapter name")
    if len(entry.netdev) > NAME_MAX or "/" in entry.netdev or " " in entry.netdev:
        raise CxgbitExtError(f"adapters[{i}]: {entry.netdev!r} is not a netdev name")
    return entry


def validate(config: Any) -> list[AdapterConfig]:
    """Check a dump() for shape; return its adapters."""
    if not isinstance(config, dict):
        raise CxgbitExtError("not a cxgbit-ext configuration: expected a JSON object")
    fmt = config.get("format")
    if type(fmt) is not int or fmt != FORMAT:
        raise CxgbitExtError(
            f"configuration format {fmt!r} is not supported by this version (it reads format {FORMAT}); "
            "re-create it with 'cxgbit-ext save'"
        )
    adapters = config.get("adapters")
    if not isinstance(adapters, list):
        raise CxgbitExtError("configuration has no 'adapters' list")
    out = [_entry(i, a) for i, a in enumerate(adapters)]
    names = [w.name for w in out]
    if len(set(names)) != len(names):
        raise CxgbitExtError(f"adapter named twice in the configuration: {names}")
    for i, w in enumerate(out):
        other = next((x for x in out[:i] if w.netdev and x.netdev == w.netdev), None)
        if other is not None:
            raise CxgbitExtError(
                f"adapters {other.name} and {w.name} both serve {_netdev_desc(w.netdev)} in the configuration; "
                "one adapter per netdev"
            )
    return out
