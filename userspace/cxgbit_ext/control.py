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
class Status:
    version: str
    transport: str
    portals: list[str]
    adapters: list[str]

    def dump(self) -> dict[str, Any]:
        return asdict(self)


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

    def status(self) -> Status:
        return Status(
            version=self._read("version").strip(),
            transport=self._read("transport").strip(),
            portals=self._read("portals").split(),
            adapters=sorted(p.name for p in (self.root / "adapters").iterdir() if p.is_dir()),
        )
