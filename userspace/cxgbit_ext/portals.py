"""Is a LIO portal really offloaded, and if not, why not.

LIO's own switch (the np ``cxgbit`` attribute, rtslib ``NetworkPortal.offload``,
targetcli ``enable_offload``) only says that offload was asked for. Whether a
login to the portal is served by an adapter is the module's to say: for each
portal it holds, its portal_state file tells which adapters take the logins
and on which netdevs, or why none does, by the rule its SYN steering follows.
This module presents that, and says itself only what the module cannot know:
that the switch is off, or that the module is not loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cxgbit_ext.control import Adapter, Control, CxgbitExtError, PortalReport


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


def state(ctl: Control, ip: str, port: int, requested: bool) -> PortalState:
    """The offload state of portal ``ip:port`` whose np switch is ``requested``."""

    def off(reason: str) -> PortalState:
        return PortalState(ip, port, requested, offloaded=False, reason=reason)

    if not requested:
        return off("not enabled on this portal (enable_offload true)")
    if not ctl.loaded:
        return off("the cxgbit_ext module is not loaded (LIO could not load it: see dmesg; modprobe cxgbit_ext)")
    report = ctl.portal_report(ip, port)
    if report is None:
        return off("cxgbit_ext holds no listener for it (see dmesg)")
    adapters = ctl.adapters()
    if not report.on:
        return off(_why_not(ip, report, adapters))
    taking = {*report.netdevs.values(), *([report.rest] if report.rest else [])}
    serving = [a for a in adapters if a.name in taking]
    # in the module's order of adapters; one removed since the report has no caps to show
    names = [a.name for a in serving] + sorted(taking - {a.name for a in serving})
    # an offload toggled off on every adapter that serves the portal is not shown
    active = {c for a in serving for c in a.active}
    caps = tuple(c for c in dict.fromkeys(c for a in serving for c in a.caps) if c in active)
    return PortalState(ip, port, requested, offloaded=True, adapters=tuple(names), caps=caps, netdevs=_where(report))


def _where(report: PortalReport) -> str:
    """Which netdevs a wildcard portal is offloaded on ("" for a specific address)."""
    if report.rest is None:
        return ""
    return "every netdev" if report.rest else ", ".join(report.netdevs)


def _why_not(ip: str, report: PortalReport, adapters: list[Adapter]) -> str:
    served = "; ".join(f"{a.name} serves {a.serving}" for a in adapters if a.netdev)
    if report.why == "unbound":
        return "no adapter serves a netdev (cxgbit-ext bind soft0 <netdev>)"
    if report.why == "unserved" and report.netdev:
        return f"{ip} is on {report.netdev}, which no adapter serves ({served})"
    if report.why == "unserved":
        return f"no adapter serves a netdev of its network namespace ({served})"
    if report.why == "no_netdev":
        return f"{ip} is on no netdev of its network namespace"
    return f"cxgbit_ext reports it {report.why} {report.netdev}".rstrip()


def lio_portals(ctl: Control) -> list[tuple[str, str, PortalState]]:
    """(target iqn, tpg tag, state) of every iSCSI portal LIO has."""
    from rtslib_fb import FabricModule
    from rtslib_fb.utils import RTSLibError

    try:
        fabric = FabricModule("iscsi")
        targets = list(fabric.targets)
    except RTSLibError:
        return []
    out = []
    for t in targets:
        for tpg in t.tpgs:
            for np in tpg.network_portals:
                out.append((t.wwn, str(tpg.tag), state(ctl, np.ip_address, np.port, np.offload)))
    return out
