"""Is a LIO portal really offloaded, and if not, why not.

LIO's own switch (the np ``cxgbit`` attribute, rtslib ``NetworkPortal.offload``,
targetcli ``enable_offload``) only says that offload was asked for. Whether a
login to the portal is served by an adapter depends on more: the module must
be loaded and hold the portal, and an adapter must serve the netdev the
portal's address is on. This module answers from the same facts the kernel
uses, in the network namespace it runs in.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from dataclasses import dataclass
from typing import Any

from cxgbit_ext.control import Adapter, Control, CxgbitExtError

WILDCARDS = ("0.0.0.0", "::")


@dataclass(frozen=True)
class PortalState:
    ip: str
    port: int
    requested: bool  # the np cxgbit switch is on
    offloaded: bool
    adapters: tuple[str, ...] = ()
    caps: tuple[str, ...] = ()  # what a login gets from at least one serving adapter
    netdevs: str = ""  # which netdevs get offload (for a wildcard portal)
    reason: str = ""  # why not offloaded

    def summary(self) -> str:
        """One line, as targetcli's ls shows it."""
        if self.offloaded:
            where = f" on {self.netdevs}" if self.netdevs else ""
            return f"offload: {'+'.join(self.adapters)} {'+'.join(self.caps)}{where}".rstrip()
        return f"offload: off — {self.reason}"


# writes of 0 that clear a switch written on several times over
MAX_OFFLOAD_CHILDREN = 64


def set_offload(np: Any, on: bool) -> None:
    """Turn LIO's offload switch of rtslib NetworkPortal ``np`` on or off.

    LIO adds an offload child portal for every write of 1, even when one is
    there, and removes one per write of 0; the switch reads 1 while any is
    left. So 1 is written only when the switch is off, and 0 until it reads
    off (clearing what repeated writes, by another tool or a script, left).
    """
    if on:
        if not np.offload:
            np.offload = True
        return
    for _ in range(MAX_OFFLOAD_CHILDREN):
        if not np.offload:
            return
        np.offload = False
    raise CxgbitExtError(f"{np.ip_address}:{np.port}: offload still on after {MAX_OFFLOAD_CHILDREN} writes of 0")


def addr_netdevs() -> dict[str, str]:
    """Map each local IP address of this namespace to its netdev (``ip -j addr``)."""
    try:
        out = subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise CxgbitExtError(f"cannot list addresses with 'ip -j addr': {e}") from e
    table: dict[str, str] = {}
    for link in json.loads(out or "[]"):
        for a in link.get("addr_info", []):
            table[str(ipaddress.ip_address(a["local"]))] = link["ifname"]
    return table


def state(ctl: Control, ip: str, port: int, requested: bool, addrs: dict[str, str] | None = None) -> PortalState:
    """The offload state of portal ``ip:port`` whose np switch is ``requested``."""
    base = {"ip": ip, "port": port, "requested": requested}
    if not requested:
        return PortalState(**base, offloaded=False, reason="not enabled on this portal (enable_offload true)")
    if not ctl.loaded:
        return PortalState(
            **base, offloaded=False,
            reason="the cxgbit_ext module is not loaded (LIO could not load it: see dmesg; modprobe cxgbit_ext)",
        )  # fmt: skip
    held = ctl.portals()
    if f"{ip}:{port}" not in held and f"[{ip}]:{port}" not in held:
        return PortalState(**base, offloaded=False, reason="cxgbit_ext holds no listener for it (see dmesg)")
    serving = [a for a in ctl.adapters() if a.netdev]
    if not serving:
        return PortalState(
            **base, offloaded=False, reason="no adapter serves a netdev (cxgbit-ext bind soft0 <netdev>)"
        )
    bare = ip[1:-1] if ip.startswith("[") and ip.endswith("]") else ip  # rtslib brackets IPv6
    if bare in WILDCARDS:
        return _on(base, serving, ", ".join(a.serving for a in serving))
    addrs = addr_netdevs() if addrs is None else addrs
    dev = addrs.get(str(ipaddress.ip_address(bare)))
    if dev is None:
        return PortalState(**base, offloaded=False, reason=f"{ip} is on no netdev of this network namespace")
    # the module gives a netdev to the adapter bound to it by name, before one bound to "*"
    owners = [a for a in serving if a.netdev == dev] or [a for a in serving if a.serves(dev)]
    if not owners:
        served = "; ".join(f"{a.name} serves {a.serving}" for a in serving)
        return PortalState(**base, offloaded=False, reason=f"{ip} is on {dev}, which no adapter serves ({served})")
    return _on(base, owners, "")


def _on(base: dict[str, object], adapters: list[Adapter], netdevs: str) -> PortalState:
    # an offload toggled off on every adapter that serves the portal is not shown
    active = {c for a in adapters for c in a.active}
    caps = tuple(c for c in dict.fromkeys(c for a in adapters for c in a.caps) if c in active)
    return PortalState(
        **base,  # type: ignore[arg-type]
        offloaded=True, adapters=tuple(a.name for a in adapters), caps=caps, netdevs=netdevs,
    )  # fmt: skip


def lio_portals(ctl: Control) -> list[tuple[str, str, PortalState]]:
    """(target iqn, tpg tag, state) of every iSCSI portal LIO has."""
    from rtslib_fb import FabricModule
    from rtslib_fb.utils import RTSLibError

    try:
        fabric = FabricModule("iscsi")
        targets = list(fabric.targets)
    except RTSLibError:
        return []
    addrs = addr_netdevs()
    out = []
    for t in targets:
        for tpg in t.tpgs:
            for np in tpg.network_portals:
                out.append((t.wwn, str(tpg.tag), state(ctl, np.ip_address, np.port, np.offload, addrs)))
    return out
