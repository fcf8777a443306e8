"""The module's control interface: /sys/kernel/config/cxgbit_ext/.

Objects mirror the configfs tree; attributes are read from the files each
time (configfs is the truth, nothing is cached).
"""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CONFIGFS = Path("/sys/kernel/config/cxgbit_ext")
FORMAT = 1  # of dump()/save files; bump on an incompatible change


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
            "iso": "Data-In segmentation", "rxagg": "receive aggregation"}  # fmt: skip


@dataclass(frozen=True)
class Adapter:
    name: str
    type: str
    netdev: str  # "*" = every netdev, "" = none
    counters: dict[str, int]
    caps: tuple[str, ...] = ()

    @property
    def serving(self) -> str:
        return {"*": "every netdev", "": "no netdev"}.get(self.netdev, self.netdev)

    def serves(self, dev: str) -> bool:
        return self.netdev == "*" or (bool(self.netdev) and self.netdev == dev)


@dataclass(frozen=True)
class Connection:
    peer: str
    local: str
    adapter: str
    hdigest: bool
    ddigest: bool
    counters: dict[str, int]

    def offloads(self, caps: tuple[str, ...]) -> dict[str, str]:
        """Each offload of ``caps``: "on", or "off: <why>" for this connection."""
        out = {}
        for cap in caps:
            if cap == "hcrc" and not self.hdigest:
                out[cap] = "off: HeaderDigest=None was negotiated"
            elif cap == "dcrc" and not self.ddigest:
                out[cap] = "off: DataDigest=None was negotiated"
            else:
                out[cap] = "on"
        return out


@dataclass(frozen=True)
class Status:
    version: str
    transport: str
    portals: list[str]
    adapters: list[Adapter]
    connections: list[Connection]

    def dump(self) -> dict[str, Any]:
        return asdict(self)


def _parse_connection(line: str) -> Connection:
    peer, local, *kvs = line.split()
    kv = dict(x.split("=", 1) for x in kvs)
    return Connection(
        peer=peer,
        local=local,
        adapter=kv.pop("adapter"),
        hdigest=kv.pop("hdigest") == "1",
        ddigest=kv.pop("ddigest") == "1",
        counters={k: int(v) for k, v in kv.items()},
    )


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

    @property
    def loaded(self) -> bool:
        return self.root.is_dir()

    def adapters(self) -> list[Adapter]:
        if not self.root.is_dir():
            raise ModuleNotLoaded(self.root)
        out = []
        for d in sorted(p for p in (self.root / "adapters").iterdir() if p.is_dir()):
            rel = f"adapters/{d.name}"
            counters = {k: int(v) for k, v in (ln.split() for ln in self._read(f"{rel}/counters").splitlines() if ln)}
            caps = tuple(self._read(f"{rel}/caps").split()) if (d / "caps").exists() else ()
            out.append(Adapter(d.name, self._read(f"{rel}/type").strip(), self._read(f"{rel}/netdev").strip(),
                               counters, caps))  # fmt: skip
        return out

    def adapter(self, name: str) -> Adapter:
        for a in self.adapters():
            if a.name == name:
                return a
        raise CxgbitExtError(f"no adapter {name!r}; adapters: {[a.name for a in self.adapters()]}")

    def portals(self) -> list[str]:
        """The offloaded portals LIO has handed to the module, as "ip:port"."""
        return self._read("portals").split()

    def connections(self) -> list[Connection]:
        return [_parse_connection(ln) for ln in self._read("connections").splitlines() if ln.strip()]

    def set_netdev(self, adapter: str, netdev: str, check: bool = True) -> None:
        """Make an adapter serve one netdev by name, "*" for all, "" for none.

        With ``check``, a named netdev must exist in this network namespace
        (the module binds by name, so a typo would otherwise be silent).
        """
        path = self.root / "adapters" / adapter / "netdev"
        if not path.exists():
            raise CxgbitExtError(f"no adapter {adapter!r}; adapters: {[a.name for a in self.adapters()]}")
        if check and netdev not in ("*", "") and netdev not in netdevs():
            raise CxgbitExtError(
                f"adapter {adapter}: no netdev {netdev!r} in this network namespace; "
                f"netdevs: {', '.join(sorted(netdevs()))} (or '*' for all)"
            )
        try:
            path.write_text(netdev + "\n")
        except OSError as e:
            raise CxgbitExtError(f"adapter {adapter}: cannot serve netdev {netdev!r}: {e.strerror}") from e

    def dump(self) -> dict[str, Any]:
        """The settings an admin makes (not state): what save writes."""
        return {"format": FORMAT, "adapters": [{"name": a.name, "netdev": a.netdev} for a in self.adapters()]}

    def setup(self, config: dict[str, Any], check: bool = True) -> None:
        """Apply a dump(): all of it, or nothing (checked first, rolled back
        if the kernel refuses a step)."""
        wanted = validate(config)
        current = {a.name: a.netdev for a in self.adapters()}
        unknown = [n for n, _ in wanted if n not in current]
        if unknown:
            raise CxgbitExtError(f"adapter(s) {unknown} in the config do not exist here; adapters: {list(current)}")
        if check:
            have = netdevs()
            missing = [f"{n}: {d}" for n, d in wanted if d not in ("*", "") and d not in have]
            if missing:
                raise CxgbitExtError(
                    f"netdev(s) not in this network namespace: {', '.join(missing)}; netdevs: {', '.join(sorted(have))}"
                )
        done: list[str] = []
        try:
            for name, dev in wanted:
                self.set_netdev(name, dev, check=False)
                done.append(name)
        except CxgbitExtError:
            for name in done:
                self.set_netdev(name, current[name], check=False)
            raise

    def status(self) -> Status:
        return Status(
            version=self._read("version").strip(),
            transport=self._read("transport").strip(),
            portals=self._read("portals").split(),
            adapters=self.adapters(),
            connections=self.connections(),
        )


def counter_lines(counters: dict[str, int], indent: str = "  ") -> list[str]:
    """Counters as aligned "name value" lines, as the CLI and targetcli show them."""
    return [f"{indent}{k:<16}{v:>16}" for k, v in counters.items()]


def netdevs() -> set[str]:
    """Network interfaces of this network namespace (asked of the kernel:
    /sys/class/net shows the namespace sysfs was mounted in instead)."""
    return {name for _, name in socket.if_nameindex()}


def validate(config: Any) -> list[tuple[str, str]]:
    """Check a dump() for shape and format; return its (adapter, netdev) pairs."""
    if not isinstance(config, dict):
        raise CxgbitExtError("not a cxgbit-ext configuration: expected a JSON object")
    fmt = config.get("format")
    if fmt != FORMAT:
        raise CxgbitExtError(
            f"configuration format {fmt!r} is not supported by this version (it reads format {FORMAT}); "
            "re-create it with 'cxgbit-ext save'"
        )
    adapters = config.get("adapters")
    if not isinstance(adapters, list):
        raise CxgbitExtError("configuration has no 'adapters' list")
    out = []
    for i, a in enumerate(adapters):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not isinstance(a.get("netdev"), str):
            raise CxgbitExtError(f"adapters[{i}]: expected {{'name': str, 'netdev': str}}, got {a!r}")
        if len(a["netdev"]) > 15 or "/" in a["netdev"] or " " in a["netdev"]:
            raise CxgbitExtError(f"adapters[{i}]: {a['netdev']!r} is not a netdev name")
        out.append((a["name"], a["netdev"]))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise CxgbitExtError(f"adapter named twice in the configuration: {names}")
    return out
