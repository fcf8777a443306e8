"""Host-test helpers shared by the files that fake the module's configfs tree."""

from __future__ import annotations

from pathlib import Path


def make_tree(tmp_path: Path, *, version: str, netdev: str, counters: str, portals: str, connections: str) -> Path:
    """A copy of /sys/kernel/config/cxgbit_ext as the module lays it out,
    with one software adapter soft0 (the host cannot load the module)."""
    root = tmp_path / "cxgbit_ext"
    soft0 = root / "adapters" / "soft0"
    soft0.mkdir(parents=True)
    (soft0 / "type").write_text("soft\n")
    (soft0 / "netdev").write_text(netdev + "\n")
    (soft0 / "caps").write_text("hcrc dcrc ddp iso rxagg\n")
    (soft0 / "counters").write_text(counters)
    (root / "version").write_text(version + "\n")
    (root / "transport").write_text("cxgbit_ext\n")
    (root / "portals").write_text(portals)
    (root / "connections").write_text(connections)
    return root
