"""Save and restore cxgbit-ext settings beside LIO's saveconfig.json.

Ours hold what rtslib does not know: the adapters, the netdev each one
serves and which offloads each has switched off. The order at restore
matters: the module and its adapters first (missing software adapters are
created, none is deleted), then LIO's config, whose portals with
``offload: true`` make LIO hand them to the module. A file is read and
checked completely before anything is changed.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from cxgbit_ext import portals, reservations
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
    # the targets whose reservations the gateways share: restore_lio links
    # them before it enables them, so they serve nothing before their agent
    data["reservations"] = reservations.linked_targets(ctl.root / "reservations")
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
        shared = data.get("reservations", [])
        if not isinstance(shared, list) or not all(isinstance(t, str) and t for t in shared):
            raise CxgbitExtError(f"'reservations' is {shared!r}, not a list of target names")
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


def tpg_rtpi(tpg_dir: Path) -> int | None:
    """The relative target port id of the TPG at configfs ``tpg_dir`` (its
    ``rtpi`` file, LIO 6.5 on): None on a kernel without the file, 0 while
    none is assigned (a TPG never enabled nor pinned)."""
    f = tpg_dir / "rtpi"
    return int(f.read_text(), 0) if f.exists() else None


def pin_rtpi(tpg_dir: Path, rtpi: int) -> bool:
    """Give the TPG at configfs ``tpg_dir`` relative target port ``rtpi``:
    LIO takes one only while the TPG is disabled (OSError otherwise, or
    when another TPG has it). False on a kernel without the ``rtpi`` file,
    which numbers the ports itself."""
    f = tpg_dir / "rtpi"
    if not f.exists():
        return False
    f.write_text(str(rtpi))
    return True


def _tpg_path(fabric: str, wwn: str, tag: int) -> Path:
    from rtslib_fb import FabricModule

    return Path(FabricModule(fabric).path) / wwn / f"tpgt_{tag}"


def lio_config() -> dict[str, Any]:
    """rtslib's dump, with what it drops that initiators see: each TPG's
    relative target port. rtslib lists a target's TPGs in configfs's order
    and saves no port id; a restore then numbers the ports by creation
    order (LUNs per device before 6.5, enabled TPGs from 6.5 on), so a
    gateway's ports can come back with another gateway's ids. TPGs are
    saved in tag order and, where the TPG has an ``rtpi`` file and a port
    id, with it (the key a fixed rtslib saves: patches/rtslib-fb)."""
    from rtslib_fb import RTSRoot

    cfg: dict[str, Any] = RTSRoot().dump()
    for t in cfg.get("targets", []):
        t["tpgs"] = sorted(t.get("tpgs", []), key=lambda tpg: tpg["tag"])
        for tpg in t["tpgs"]:
            # None or 0: no file, or a TPG never enabled nor pinned: no port id to keep
            rtpi = tpg_rtpi(_tpg_path(t["fabric"], t["wwn"], tpg["tag"]))
            if rtpi:
                tpg["rtpi"] = rtpi
    return cfg


def save_lio(path: Path = LIO_DEFAULT) -> None:
    _atomic_write(path, json.dumps(lio_config(), sort_keys=True, indent=2) + "\n")


def restore_lio(path: Path = LIO_DEFAULT, clear_existing: bool = True, shared: list[str] | None = None) -> list[str]:
    """rtslib restore; returns its errors (a portal that could not go offload
    is one: rtslib reports it and goes on, as it does for any object).

    A TPG saved with its relative target port, or with an offloaded portal,
    or of a target in ``shared`` (whose reservations the gateways share),
    is restored disabled, given that port, then enabled if it was: LIO
    takes a port id only while the TPG is disabled, and numbers an enabled
    TPG itself otherwise; an offloaded portal opens to logins by the rule
    of portals.enable_tpg; a shared target's TPGs are linked into the
    module first, so they serve nothing until its agent has applied the
    cluster's log (one that cannot be linked stays disabled)."""
    from rtslib_fb import RTSRoot

    if not path.exists():
        raise CxgbitExtError(f"{path}: no such file")
    cfg = json.loads(path.read_text())
    shared = shared or []
    deferred: list[tuple[Path, int, bool]] = []
    for t in cfg.get("targets", []):
        for tpg in t.get("tpgs", []):
            rtpi = tpg.pop("rtpi", 0)
            if rtpi or t["wwn"] in shared or any(np.get("offload") for np in tpg.get("portals", [])):
                where = _tpg_path(t["fabric"], t["wwn"], tpg["tag"])
                deferred.append((where, rtpi, tpg.get("enable", True)))
                tpg["enable"] = False
    if clear_existing:
        reservations.unlink_all()  # a linked TPG cannot be cleared
    errors = [str(e) for e in RTSRoot().restore(cfg, clear_existing=clear_existing, abort_on_error=False) or []]
    errors = [e for e in errors if not _attribute_as_saved(e, cfg)]
    try:
        reservations.ensure_state_dir()
    except OSError as e:
        errors.append(f"reservations' state directory: {e}")
    unshared = set()
    for iqn in shared:
        try:
            reservations.link_target(iqn)
        except (reservations.AgentError, OSError) as e:
            unshared.add(iqn)
            errors.append(f"reservations of {iqn} not shared ({e}): its TPGs stay disabled")
    for where, rtpi, enable in deferred:
        if where.parent.name in unshared:
            continue
        if rtpi:
            try:
                if not pin_rtpi(where, rtpi):
                    errors.append(f"{where.name} of {where.parent.name}: relative target port {rtpi}: "
                                  "this kernel has no rtpi file (LIO numbers the port itself)")  # fmt: skip
            except OSError as e:
                errors.append(f"{where.name} of {where.parent.name}: relative target port {rtpi}: {e.strerror}")
        if enable:
            try:
                held = portals.enable_tpg(where)
            except OSError as e:
                errors.append(f"{where.name} of {where.parent.name}: could not enable: {e}")
                continue
            if held:
                errors.append(f"{where.name} of {where.parent.name}: enabled with logins the stock listener "
                              f"accepted before offload still open: {', '.join(held)}")  # fmt: skip
    return errors


_ATTRIBUTE_REFUSED = re.compile(r"^Storage Object (\w+)/(\S+): Cannot set attribute (\w+): ")


def _attribute_as_saved(error: str, cfg: dict[str, Any]) -> bool:
    """An rtslib restore error that is none: an attribute the kernel would
    not let rtslib write (a user: backstore takes dev_config and
    emulate_write_cache only through tcmu-runner, whose rbd handler
    refuses even an unchanged value) but that reads back as saved."""
    from rtslib_fb import RTSRoot
    from rtslib_fb.utils import RTSLibError

    m = _ATTRIBUTE_REFUSED.match(error)
    if not m:
        return False
    plugin, name, attr = m.groups()
    objects = cfg.get("storage_objects", [])
    saved: dict[str, Any] = next((so for so in objects if (so.get("plugin"), so.get("name")) == (plugin, name)), {})
    if attr not in saved.get("attributes", {}):
        return False
    so = next((so for so in RTSRoot().storage_objects if (so.plugin, so.name) == (plugin, name)), None)
    try:
        return so is not None and str(so.get_attribute(attr)).strip() == str(saved["attributes"][attr])
    except RTSLibError:
        return False


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
