"""Save and restore cxgbit-ext settings beside LIO's saveconfig.json.

Ours hold what rtslib does not know: the adapters, the netdev each one
serves and which offloads each has switched off (format 2; format 1 files,
which had no toggles, restore with every offload on). The order at restore
matters: the module and its adapters first (missing software adapters are
created, none is deleted), then LIO's config, whose portals with
``offload: true`` make LIO hand them to the module. A file is read and
checked completely before anything is changed.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from cxgbit_ext.control import Control, CxgbitExtError, validate

DEFAULT = Path("/etc/rtslib-fb-target/cxgbit-ext.json")  # beside Debian's saveconfig.json
LIO_DEFAULT = Path("/etc/rtslib-fb-target/saveconfig.json")  # targetcli-fb's default_save_file


def beside(lio_file: Path) -> Path:
    """Our file next to an rtslib save file (targetcli saveconfig FILE)."""
    return (
        lio_file.with_name("cxgbit-ext.json")
        if lio_file.name == LIO_DEFAULT.name
        else lio_file.with_suffix(".cxgbit-ext.json")
    )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(ctl: Control, path: Path = DEFAULT) -> dict[str, Any]:
    data = ctl.dump()
    data["saved"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    _atomic_write(path, json.dumps(data, indent=2) + "\n")
    return data


def load(path: Path) -> dict[str, Any]:
    """Read and check a save file; raise CxgbitExtError saying what is wrong."""
    try:
        text = path.read_text()
    except OSError as e:
        raise CxgbitExtError(f"{path}: {e.strerror}") from e
    try:
        data = json.loads(text)
    except ValueError as e:
        raise CxgbitExtError(f"{path}: not a cxgbit-ext save file (bad JSON: {e}); nothing was changed") from e
    try:
        validate(data)
    except CxgbitExtError as e:
        raise CxgbitExtError(f"{path}: {e}; nothing was changed") from e
    return dict(data)


def ensure_loaded(ctl: Control) -> None:
    if ctl.loaded:
        return
    p = subprocess.run(["modprobe", "cxgbit_ext"], capture_output=True, text=True)
    if p.returncode or not ctl.loaded:
        raise CxgbitExtError(f"cannot load cxgbit_ext: {p.stderr.strip() or 'modprobe failed'}; nothing was changed")


def restore(ctl: Control, path: Path = DEFAULT) -> dict[str, Any]:
    data = load(path)
    ensure_loaded(ctl)
    ctl.setup(data)
    return data


def save_lio(path: Path = LIO_DEFAULT) -> None:
    from rtslib_fb import RTSRoot

    path.parent.mkdir(parents=True, exist_ok=True)
    RTSRoot().save_to_file(str(path))


def restore_lio(path: Path = LIO_DEFAULT, clear_existing: bool = True) -> list[str]:
    """rtslib restore; returns its errors (a portal that could not go offload
    is one: rtslib reports it and goes on, as it does for any object)."""
    from rtslib_fb import RTSRoot

    if not path.exists():
        raise CxgbitExtError(f"{path}: no such file")
    errors = RTSRoot().restore_from_file(str(path), clear_existing=clear_existing, abort_on_error=False)
    return [str(e) for e in errors or []]


def offload_requested(lio_file: Path) -> list[tuple[str, int]]:
    """Portals of an rtslib save file that ask for offload."""
    cfg = json.loads(lio_file.read_text())
    return [
        (p["ip_address"], int(p["port"]))
        for t in cfg.get("targets", [])
        for tpg in t.get("tpgs", [])
        for p in tpg.get("portals", [])
        if p.get("offload")
    ]
