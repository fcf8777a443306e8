"""The module's control interface: /sys/kernel/config/cxgbit_ext/.

Objects mirror the configfs tree; attributes are read from the files each
time (configfs is the truth, nothing is cached).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CONFIGFS = Path("/sys/kernel/config/cxgbit_ext")


class CxgbitExtError(Exception):
    """Base of the errors this package raises; the message says what to do."""


class ModuleNotLoaded(CxgbitExtError):
    def __init__(self, root: Path) -> None:
        super().__init__(
            f"{root} does not exist: the cxgbit_ext module is not loaded "
            "(modprobe cxgbit_ext, or enable offload on a portal, which loads it)"
        )


@dataclass(frozen=True)
class Adapter:
    name: str
    type: str
    netdev: str
    counters: dict[str, int]


@dataclass(frozen=True)
class Connection:
    peer: str
    local: str
    adapter: str
    hdigest: bool
    ddigest: bool
    counters: dict[str, int]


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
            counters = {k: int(v) for k, v in (ln.split() for ln in self._read(f"{rel}/counters").splitlines())}
            out.append(Adapter(d.name, self._read(f"{rel}/type").strip(), self._read(f"{rel}/netdev").strip(),
                               counters))  # fmt: skip
        return out

    def connections(self) -> list[Connection]:
        return [_parse_connection(ln) for ln in self._read("connections").splitlines() if ln.strip()]

    def set_netdev(self, adapter: str, netdev: str) -> None:
        """Bind an adapter to one netdev by name, or "*" for all."""
        path = self.root / "adapters" / adapter / "netdev"
        if not path.exists():
            raise CxgbitExtError(f"no adapter {adapter!r}; adapters: {[a.name for a in self.adapters()]}")
        try:
            path.write_text(netdev)
        except OSError as e:
            raise CxgbitExtError(f"adapter {adapter}: cannot serve netdev {netdev!r}: {e.strerror}") from e

    def status(self) -> Status:
        return Status(
            version=self._read("version").strip(),
            transport=self._read("transport").strip(),
            portals=self._read("portals").split(),
            adapters=self.adapters(),
            connections=self.connections(),
        )
