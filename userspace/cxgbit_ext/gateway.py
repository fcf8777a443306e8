"""Gateways on shared RBD images, laid out as ceph-iscsi lays them out.

Every gateway exports the same target IQN with one TPG per gateway (the
TPG's tag is the gateway's index, 1-based), each TPG with the portal of its
gateway; only the local TPG is enabled (and offloaded), the others are
there so that every gateway reports the same target ports. Each image is
LUN i (its place in the list) of every TPG: one storage object with the
same unit serial (WWN) everywhere and one ALUA target port group per
gateway, with implicit transitions: "ao" (Active/Optimized, preferred) on
the gateway that owns the image, "ano<N>" (Active/Non-optimized) on the
others. ALUA groups belong to a storage object, so each image has its own
owner: by default image i is owned by gateway (i mod N) + 1, which spreads
the images' Active/Optimized paths over the gateways as ceph-nvmeof
spreads namespaces over its ANA groups. Because every gateway makes the
TPGs and their LUNs in the same order, LIO before 6.5 numbers the relative
target ports (per device, in LUN creation order) the same on every
gateway; where the TPG has an ``rtpi`` attribute (6.5 on), LIO numbers
only enabled TPGs, so each TPG's port is pinned to its gateway's index
instead.

Backstore: each image mapped with krbd and served by iblock (``rbd map``,
the default), or tcmu-runner's ``user:rbd`` (librbd in tcmu-runner, as
ceph-iscsi does; tcmu-runner must be running with its rbd handler).
A user:rbd storage object fails a command tcmu-runner has not answered
within ``cmd_time_out`` seconds (LIO answers LOGICAL UNIT COMMUNICATION
FAILURE). That must come before the initiator's own SCSI command timeout
(30 s on Linux): an answer is a path error that dm-multipath retries on
another gateway, while a command left to time out at the initiator runs
its SCSI error handling, which sets the device offline for good when the
gateway cannot answer a reset either (tcmu-runner dead). ceph-iscsi
leaves ``cmd_time_out`` off and relies on tcmu-runner's own OSD timeout,
which cannot fire when tcmu-runner is gone.

With ``shared`` (the gateways share SCSI reservations, `cxgbit-ext
reservations serve`), every TPG is linked into the module before the
gateway's own is enabled: the module holds it, serving nothing that reads
or changes the images, until the agent has applied the cluster's log.

create() is idempotent: a gateway already laid out the same way is left as
it is; one laid out differently is refused and left unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtslib_fb import (
    LUN,
    TPG,
    ALUATargetPortGroup,
    BlockStorageObject,
    FabricModule,
    NetworkPortal,
    RTSRoot,
    Target,
    UserBackedStorageObject,
)
from rtslib_fb.tcm import StorageObject
from rtslib_fb.utils import RTSLibError

from cxgbit_ext import persist, portals, reservations, topology

# ALUA states (SPC-4 asymmetric access states) and the implicit access type
AO, ANO = 0, 1
IMPLICIT = 1
# tg_pt_gp_id of gateway N's group: clear of LIO's default group
GROUP_ID_BASE = 100
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")
# the backstores a gateway can put in front of the image, by LIO's plugin name
BACKSTORES = {"iblock": "block", "user:rbd": "user"}
# user:rbd: seconds before LIO fails a command tcmu-runner has not answered
# (below Linux initiators' 30 s SCSI timeout), and before it fails one
# waiting for room in tcmu-runner's ring (ceph-iscsi's qfull_timeout)
USER_CMD_TIME_OUT = 20
# Linux initiators' SCSI command timeout: a cmd_time_out at or above it
# leaves a command to the initiator's error handling
INITIATOR_SCSI_TIMEOUT = 30
USER_QFULL_TIME_OUT = 5


class GatewayError(Exception):
    """The gateway layout is invalid, or could not be built; nothing changed."""


@dataclass(frozen=True)
class Layout:
    """One gateway's view of the shared layout."""

    iqn: str
    images: tuple[str, ...]  # "pool/image"; image i is LUN i
    portals: tuple[str, ...]  # every gateway's portal address, gateway 1 first
    index: int  # this gateway, 1-based
    # each image's Active/Optimized gateway; () spreads them (owner())
    owners: tuple[int, ...] = ()
    port: int = 3260
    offload: bool = True
    backstore: str = "iblock"  # or "user:rbd"
    shared: bool = False  # reservations shared by the gateways (module docstring)
    cmd_time_out: int | None = None  # user:rbd's, seconds; None: USER_CMD_TIME_OUT

    def check(self) -> None:
        """Raise GatewayError unless the layout makes sense."""
        if not self.images:
            raise GatewayError("no image given (--rbd POOL/IMAGE[,POOL/IMAGE...])")
        for image in self.images:
            pool, sep, name = image.partition("/")
            if not sep or not _NAME.match(pool) or not _NAME.match(name):
                raise GatewayError(f"--rbd {image!r}: expected POOL/IMAGE (letters, digits, _ . + -)")
        if len(set(self.images)) != len(self.images):
            raise GatewayError(f"--rbd names an image twice: {', '.join(self.images)}")
        if not self.iqn.startswith(("iqn.", "eui.", "naa.")):
            raise GatewayError(f"{self.iqn!r} is not an iSCSI name (iqn., eui. or naa.)")
        if not 0 < self.port < 65536:
            raise GatewayError(f"port {self.port} is not a TCP port")
        if not self.portals:
            raise GatewayError("no gateway portals given")
        ips = self.lio_portals
        if len(set(ips)) != len(ips):
            raise GatewayError(f"gateway portals repeat an address: {', '.join(self.portals)}")
        if self.owners and len(self.owners) != len(self.images):
            raise GatewayError(f"{len(self.owners)} owners for {len(self.images)} images: one per image, in order")
        n = len(self.portals)
        if not 1 <= self.index <= n:
            raise GatewayError(f"this gateway is gateway {self.index}, but there are {n} portals (1..{n})")
        for lun, image in enumerate(self.images):
            if not 1 <= self.owner(lun) <= n:
                raise GatewayError(f"the owner of {image} is gateway {self.owner(lun)}, but there are {n} portals "
                                   f"(1..{n})")  # fmt: skip
        if self.shared and not self.offload:
            # only offloaded connections pass the module: a stock portal would change one gateway alone
            raise GatewayError("shared reservations need the offloaded portal (drop --no-offload)")
        if self.backstore not in BACKSTORES:
            raise GatewayError(f"backstore {self.backstore!r}: one of {', '.join(BACKSTORES)}")
        if self.cmd_time_out is not None:
            if self.backstore != "user:rbd":
                raise GatewayError("--cmd-time-out is user:rbd's (LIO's timeout for tcmu-runner's answers)")
            if not 1 <= self.cmd_time_out < INITIATOR_SCSI_TIMEOUT:
                raise GatewayError(f"--cmd-time-out {self.cmd_time_out}: 1 to {INITIATOR_SCSI_TIMEOUT - 1} s, below "
                                   f"Linux initiators' {INITIATOR_SCSI_TIMEOUT} s SCSI command timeout")  # fmt: skip

    @property
    def user_cmd_time_out(self) -> int | None:
        """LIO's cmd_time_out for the layout's storage objects (user:rbd's only)."""
        if self.backstore != "user:rbd":
            return None
        return USER_CMD_TIME_OUT if self.cmd_time_out is None else self.cmd_time_out

    @property
    def lio_portals(self) -> tuple[str, ...]:
        """Every gateway's portal address as LIO names it (IPv6 in brackets,
        one spelling per address); GatewayError for what is no address or
        names another port than --port."""
        ips = []
        for text in self.portals:
            try:
                ip, port = portals.parse(text, self.port)
            except ValueError as e:
                raise GatewayError(str(e)) from None
            if port != self.port:
                raise GatewayError(f"{text!r}: every gateway's portal on --port {self.port}")
            ips.append(portals.lio_ip(ip))
        return tuple(ips)

    def owner(self, lun: int) -> int:
        """The gateway whose ALUA group is Active/Optimized for image ``lun``:
        the one given, else gateway (lun mod N) + 1."""
        return self.owners[lun] if self.owners else lun % len(self.portals) + 1

    def so_name(self, lun: int) -> str:
        """Image ``lun``'s storage object name (ceph-iscsi's pool.image)."""
        return self.images[lun].replace("/", ".")

    def wwn(self, lun: int) -> str:
        """Image ``lun``'s unit serial: the same on every gateway, derived
        from the image."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"rbd:{self.images[lun]}"))

    def group(self, lun: int, gateway: int) -> tuple[str, int, int]:
        """(name, tg_pt_gp_id, ALUA state) of gateway's target port group
        for image ``lun``."""
        if gateway == self.owner(lun):
            return "ao", GROUP_ID_BASE + gateway, AO
        return f"ano{gateway}", GROUP_ID_BASE + gateway, ANO


def mapped_device(image: str) -> str:
    """The block device krbd maps ``image`` at, or GatewayError."""
    try:
        out = subprocess.run(["rbd", "device", "list", "--format", "json"], capture_output=True, text=True,
                             timeout=60, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        raise GatewayError(f"rbd device list: {e}") from e
    pool, _, name = image.partition("/")
    for d in json.loads(out or "[]"):
        if d.get("pool") == pool and d.get("name") == name and not d.get("snap", "-").strip("-"):
            return str(d["device"])
    raise GatewayError(f"{image} is not mapped on this host (rbd map {image})")


def image_size(image: str) -> int:
    """The image's size in bytes (rbd info), or GatewayError."""
    try:
        out = subprocess.run(["rbd", "info", "--format", "json", image], capture_output=True, text=True,
                             timeout=60, check=True).stdout  # fmt: skip
        return int(json.loads(out)["size"])
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        raise GatewayError(f"rbd info {image}: {e}") from e


def _find(iqn: str) -> Target | None:
    return next((t for t in FabricModule("iscsi").targets if t.wwn == iqn), None)


def describe(iqn: str) -> dict[str, Any]:
    """The target's layout on this host, as configfs has it (empty when
    there is no such target): for idempotence and for the CLI's report."""
    target = _find(iqn)
    if target is None:
        return {}
    tpgs = {}
    objects: dict[str, StorageObject] = {}  # every gateway's TPG has a LUN of each: read each once
    # configfs lists TPGs and LUNs in no set order (a restore may change it)
    for tpg in sorted(target.tpgs, key=lambda t: t.tag):
        luns = sorted(tpg.luns, key=lambda lun: lun.lun)
        objects.update((lun.storage_object.path, lun.storage_object) for lun in luns)
        tpgs[tpg.tag] = {
            "enabled": tpg.enable,
            "portals": sorted(f"{np.ip_address}:{np.port}" for np in tpg.network_portals),
            "offload": sorted(f"{np.ip_address}:{np.port}" for np in tpg.network_portals if np.offload),
            "luns": {lun.lun: (lun.storage_object.name, lun.alua_tg_pt_gp_name) for lun in luns},
        }
    by_plugin = {v: k for k, v in BACKSTORES.items()}
    backstore = ",".join(sorted({by_plugin.get(so.plugin, so.plugin) for so in objects.values()}))
    shared = target.wwn in reservations.linked_targets()
    timeouts = {int(so.get_attribute("cmd_time_out")) for so in objects.values() if so.plugin == "user"}
    cmd_time_out = timeouts.pop() if len(timeouts) == 1 else sorted(timeouts) or None
    return {"iqn": target.wwn, "backstore": backstore, "shared": shared, "cmd_time_out": cmd_time_out, "tpgs": tpgs}


def expected(layout: Layout) -> dict[str, Any]:
    tpgs = {}
    for gw, ip in enumerate(layout.lio_portals, 1):
        portal = f"{ip}:{layout.port}"
        tpgs[gw] = {
            "enabled": gw == layout.index,
            "portals": [portal],
            "offload": [portal] if gw == layout.index and layout.offload else [],
            "luns": {lun: (layout.so_name(lun), layout.group(lun, gw)[0]) for lun in range(len(layout.images))},
        }
    return {"iqn": layout.iqn, "backstore": layout.backstore, "shared": layout.shared,
            "cmd_time_out": layout.user_cmd_time_out, "tpgs": tpgs}  # fmt: skip


def held_port_ids(root: Path) -> dict[int, str]:
    """Relative target port ids held on this host, each with its holder
    ("FABRIC WWN tpgt_N"), from LIO's configfs tree at ``root``. From 6.5
    on (TPGs have an ``rtpi`` file) LIO numbers the ports of enabled TPGs
    host-wide, across fabrics, and refuses to enable a TPG pinned to a held
    id with a bare EINVAL; disabled TPGs hold none. Before 6.5 ports are
    numbered per device and none is held here."""
    held = {}
    for f in sorted(root.glob("*/*/tpgt_*/rtpi")):
        tpg = f.parent
        try:
            if (tpg / "enable").read_text().strip() != "1":
                continue
            rtpi = int(f.read_text(), 0)  # LIO prints it as %#x
        except (OSError, ValueError):
            continue
        if rtpi:
            held[rtpi] = f"{tpg.parent.parent.name} {tpg.parent.name} {tpg.name}"
    return held


def create(layout: Layout, devs: tuple[str, ...] = ()) -> bool:
    """Lay this gateway out; True when something was made, False when it was
    already laid out so. GatewayError (and nothing changed) otherwise.
    ``devs``: for iblock, the block device each image is mapped at, in
    order (default: from ``rbd device list``)."""
    layout.check()
    nimages = len(layout.images)
    if devs and (layout.backstore != "iblock" or len(devs) != nimages):
        raise GatewayError(f"--dev: one block device per image ({nimages}), and only for the iblock backstore")
    have = describe(layout.iqn)
    if have:
        if have == expected(layout):
            return False
        raise GatewayError(f"target {layout.iqn} exists with another layout: {json.dumps(have, default=list)}")
    taken = {so.name for so in RTSRoot().storage_objects}
    for lun in range(nimages):
        if layout.so_name(lun) in taken:
            raise GatewayError(f"a storage object {layout.so_name(lun)} exists already")
    holder = held_port_ids(Path(RTSRoot().path)).get(layout.index)
    if holder:
        raise GatewayError(
            f"gateway {layout.index}'s target port must be relative port {layout.index} on every gateway, "
            f"and {holder} holds it on this host (LIO numbers enabled TPGs' ports host-wide): lay gateways "
            "out before other targets are enabled, or give that TPG another port (disable it, write a free id "
            "to its rtpi, enable it)"
        )
    if layout.backstore == "iblock":
        devs = devs or tuple(mapped_device(image) for image in layout.images)
        sizes = (0,) * nimages
    else:
        sizes = tuple(image_size(image) for image in layout.images)
    sos: list[BlockStorageObject | UserBackedStorageObject] = []
    target: Target | None = None
    held: list[str] = []
    opened = Path()
    try:
        for lun in range(nimages):
            sos.append(_storage_object(layout, lun, devs[lun] if devs else "", sizes[lun]))
        target = Target(FabricModule("iscsi"), layout.iqn)
        reservations.ensure_state_dir()
        for gw, ip in enumerate(layout.lio_portals, 1):
            tpg = TPG(target, gw)
            # a kernel without the file numbers the ports as every gateway makes them
            persist.pin_rtpi(Path(tpg.path), gw)
            tpg.set_attribute("authentication", "0")
            tpg.set_attribute("generate_node_acls", "1")
            tpg.set_attribute("demo_mode_write_protect", "0")
            tpg.set_attribute("cache_dynamic_acls", "1")
            for lun, so in enumerate(sos):
                want = layout.group(lun, gw)[0]
                tpg_lun = LUN(tpg, lun, storage_object=so)
                # rtslib's setter drops its error: read the membership back
                tpg_lun.alua_tg_pt_gp_name = want
                if tpg_lun.alua_tg_pt_gp_name != want:
                    raise GatewayError(f"LUN {lun} of TPG {gw} did not join ALUA group {want}")
            np = NetworkPortal(tpg, ip, layout.port)
            if gw == layout.index:
                if layout.offload:
                    portals.set_offload(np, True)
                opened = Path(tpg.path)
        if layout.shared:
            reservations.link_target(layout.iqn)
        held = portals.enable_tpg(opened)
    except (RTSLibError, OSError, GatewayError, reservations.AgentError) as e:
        if target is not None:
            reservations.unlink_target(layout.iqn)
            target.delete()
        for so in sos:
            so.delete()
        raise GatewayError(f"laying out gateway {layout.index} of {layout.iqn}: {e}") from e
    # laid out: logins left on stock TCP are reported, the layout stays
    portals.say_stock_logins(held, opened, f"gateway {layout.index} of {layout.iqn}")
    return True


def _storage_object(layout: Layout, lun: int, dev: str, size: int) -> BlockStorageObject | UserBackedStorageObject:
    """Image ``lun``'s storage object with its ALUA groups, one per gateway."""
    so: BlockStorageObject | UserBackedStorageObject
    if layout.backstore == "iblock":
        so = BlockStorageObject(layout.so_name(lun), dev=dev, wwn=layout.wwn(lun))
    else:
        try:
            so = UserBackedStorageObject(layout.so_name(lun), config=f"rbd/{layout.images[lun]}", size=size,
                                         wwn=layout.wwn(lun))  # fmt: skip
        except RTSLibError as e:
            raise GatewayError(f"user:rbd: {e} (is tcmu-runner running, with its rbd handler?)") from e
    try:
        if layout.backstore == "user:rbd":
            # LIO takes these only while nothing exports the device
            so.set_attribute("cmd_time_out", str(layout.user_cmd_time_out))
            so.set_attribute("qfull_time_out", str(USER_QFULL_TIME_OUT))
        for gw in range(1, len(layout.portals) + 1):
            name, gid, state = layout.group(lun, gw)
            g = ALUATargetPortGroup(so, name, tag=gid)
            g.alua_access_type = IMPLICIT
            g.alua_access_state = state
            g.preferred = int(state == AO)
    except (RTSLibError, OSError):
        so.delete()
        raise
    return so


def delete(iqn: str) -> None:
    """Remove the target and the storage objects only it used (and the
    module's links of its TPGs, which keep LIO from removing them)."""
    try:
        if reservations.LINKS.is_dir():
            reservations.unlink_target(iqn)
        topology.delete(iqn)
    except topology.TopologyError as e:
        raise GatewayError(str(e)) from e
