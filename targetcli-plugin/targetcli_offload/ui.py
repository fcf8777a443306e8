"""targetcli nodes for cxgbit-ext: the /offload tree and offload-aware portals.

configshell conventions: ``ui_command_*`` methods are the commands, their
docstrings the help, ``ui_complete_*`` the tab completion, ``summary()`` the
text and health colour ``ls`` shows. Every node reads the module's configfs
tree afresh (cxgbit_ext.control), so nothing goes stale.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from configshell_fb import ExecutionError
from rtslib_fb.utils import RTSLibError
from targetcli.ui_node import UINode, UIRTSLibNode
from targetcli.ui_root import UIRoot, default_save_file
from targetcli.ui_target import UIPortal

from cxgbit_ext import persist, portals
from cxgbit_ext.control import OFFLOADS, Control, CxgbitExtError, counter_lines, netdevs

Summary = tuple[str, bool | None]


def control() -> Control:
    return Control()


class UIOffload(UINode):
    """/offload: the cxgbit_ext module, its adapters and connections."""

    def __init__(self, parent: UINode) -> None:
        UINode.__init__(self, "offload", parent)
        self.refresh()

    def refresh(self) -> None:
        self._children = set()
        if control().loaded:
            UIAdapters(self)
            UIConnections(self)

    def summary(self) -> Summary:
        ctl = control()
        if not ctl.loaded:
            return ("cxgbit_ext not loaded", False)
        st = ctl.status()
        return (f"cxgbit_ext {st.version}, {len(st.portals)} portals, {len(st.connections)} connections", True)

    def ui_command_status(self) -> None:
        """
        Shows the module, its offloaded portals, adapters and connections.
        """
        try:
            st = control().status()
        except CxgbitExtError as e:
            raise ExecutionError(str(e)) from e
        self.shell.con.display(f"cxgbit_ext {st.version}, LIO transport '{st.transport}'")
        self.shell.con.display(f"offloaded portals: {', '.join(st.portals) or 'none'}")
        for a in st.adapters:
            self.shell.con.display(f"adapter {a.name} ({a.type}) serves {a.serving}: {'+'.join(a.caps)}")
        self.shell.con.display(f"offloaded connections: {len(st.connections)}")

    def ui_command_counters(self) -> None:
        """
        Shows every adapter's counters.
        """
        for a in control().adapters():
            self.shell.con.display(f"{a.name}:")
            self.shell.con.display("\n".join(counter_lines(a.counters)))


class UIAdapters(UINode):
    """/offload/adapters: one node per adapter."""

    def __init__(self, parent: UINode) -> None:
        UINode.__init__(self, "adapters", parent)
        self.refresh()

    def refresh(self) -> None:
        self._children = set()
        for a in control().adapters():
            UIAdapter(a.name, self)

    def summary(self) -> Summary:
        ads = control().adapters()
        serving = [a for a in ads if a.netdev]
        return (f"{len(ads)} adapters, {len(serving)} serving", bool(serving))

    def ui_command_create(self, netdev: str) -> None:
        """
        Puts a software adapter on NETDEV (a name, or * for every netdev).

        This version has one software adapter, soft0: create binds it when it
        serves no netdev, and says so when it already serves one (use
        /offload/adapters/soft0 bind then). Nothing changes on error.
        """
        soft0 = control().adapter("soft0")
        if soft0.netdev:
            raise ExecutionError(
                f"adapter soft0 already serves {soft0.serving}; one software adapter per host in this version: "
                f"use 'adapters/soft0 bind netdev={netdev}'"
            )
        _bind(self, "soft0", netdev)

    def ui_complete_create(self, parameters: dict[str, str], text: str, current_param: str) -> list[str]:
        return _complete_netdev(text) if current_param == "netdev" else []

    def ui_command_delete(self, name: str) -> None:
        """
        Takes adapter NAME off every netdev: logins that arrive afterwards are
        served by stock iSCSI/TCP; connections it serves now go on.
        """
        _bind(self, name, "")

    def ui_complete_delete(self, parameters: dict[str, str], text: str, current_param: str) -> list[str]:
        return [a.name for a in control().adapters() if a.name.startswith(text)] if current_param == "name" else []


class UIAdapter(UINode):
    """/offload/adapters/<name>."""

    def __init__(self, name: str, parent: UINode) -> None:
        UINode.__init__(self, name, parent)

    def summary(self) -> Summary:
        a = control().adapter(self.name)
        if not a.netdev:
            return (f"{a.type}, serves no netdev", False)
        return (f"{a.type} on {a.serving}: {'+'.join(a.caps)}, {a.counters.get('connections', 0)} conns", True)

    def ui_command_bind(self, netdev: str) -> None:
        """
        Makes this adapter serve NETDEV (a name in this network namespace, or *
        for all). A netdev that does not exist is refused and nothing changes.
        """
        _bind(self, self.name, netdev)

    def ui_complete_bind(self, parameters: dict[str, str], text: str, current_param: str) -> list[str]:
        return _complete_netdev(text) if current_param == "netdev" else []

    def ui_command_unbind(self) -> None:
        """
        Makes this adapter serve no netdev (new logins go to stock TCP).
        """
        _bind(self, self.name, "")

    def ui_command_info(self) -> None:
        """
        Shows the adapter's type, netdev and what it offloads.
        """
        a = control().adapter(self.name)
        self.shell.con.display(f"name: {a.name}\ntype: {a.type}\nserves: {a.serving}")
        for c in a.caps:
            self.shell.con.display(f"offload: {c} ({OFFLOADS.get(c, c)})")

    def ui_command_counters(self) -> None:
        """
        Shows this adapter's counters.
        """
        self.shell.con.display("\n".join(counter_lines(control().adapter(self.name).counters, indent="")))


def _bind(node: UINode, adapter: str, netdev: str) -> None:
    try:
        control().set_netdev(adapter, netdev)
    except CxgbitExtError as e:
        raise ExecutionError(str(e)) from e
    node.shell.log.info(f"adapter {adapter} now serves {control().adapter(adapter).serving}")


def _complete_netdev(text: str) -> list[str]:
    return [d for d in sorted(netdevs() | {"*"}) if d.startswith(text)]


class UIConnections(UINode):
    """/offload/connections: one node per offloaded connection."""

    def __init__(self, parent: UINode) -> None:
        UINode.__init__(self, "connections", parent)
        self.refresh()

    def refresh(self) -> None:
        self._children = set()
        for c in control().connections():
            UIConnection(c.peer, c.local, self)

    def summary(self) -> Summary:
        return (f"{len(control().connections())} offloaded", None)


class UIConnection(UINode):
    def __init__(self, peer: str, local: str, parent: UINode) -> None:
        # configshell names may not hold ':' or '[]'; the summary has the rest
        UINode.__init__(self, peer.replace(":", "_").strip("[]"), parent)
        self.peer, self.local = peer, local

    def _conn(self) -> Any:
        for c in control().connections():
            if c.peer == self.peer:
                return c
        return None

    def summary(self) -> Summary:
        c = self._conn()
        if c is None:
            return ("gone", None)
        caps = control().adapter(c.adapter).caps
        offs = c.offloads(caps)
        on = [k for k, v in offs.items() if v == "on"]
        return (f"-> {c.local} on {c.adapter}: {'+'.join(on)}", True)

    def ui_command_info(self) -> None:
        """
        Shows the connection's offloads (and why any is off) and counters.
        """
        c = self._conn()
        if c is None:
            raise ExecutionError(f"connection {self.peer} has gone")
        self.shell.con.display(f"{c.peer} -> {c.local} on {c.adapter}")
        for k, v in c.offloads(control().adapter(c.adapter).caps).items():
            self.shell.con.display(f"  {k}: {v}")
        self.shell.con.display("\n".join(counter_lines(c.counters)))


class OffloadPortal(UIPortal):  # type: ignore[misc]
    """A portal whose ls shows whether logins to it really are offloaded."""

    def __init__(self, portal: Any, parent: UINode) -> None:
        # UIPortal.__init__ says super(UIPortal, self), and install() rebinds
        # the name UIPortal to this class: do its two steps here instead.
        UIRTSLibNode.__init__(self, f"{portal.ip_address}:{portal.port}", portal, parent)
        self.refresh()

    def summary(self) -> Summary:
        if self.rtsnode.iser:
            return ("iser", True)
        s = portals.state(control(), self.rtsnode.ip_address, self.rtsnode.port, self.rtsnode.offload)
        if s.offloaded:
            return (s.summary(), True)
        return (s.summary(), False if self.rtsnode.offload else None)

    def ui_command_enable_offload(self, boolean: str) -> None:
        """
        Enables or disables offload (cxgbit_ext) for this portal.

        Turning it on loads cxgbit_ext through LIO if needed; when logins to
        the portal still could not be offloaded (no adapter serves its
        address, module missing, ...) the switch is put back and the reason
        is printed. Turning it off is always allowed.
        """
        on = self.ui_eval_param(boolean, "bool", False)
        was = self.rtsnode.offload
        try:
            self.rtsnode.offload = on
        except (RTSLibError, OSError) as e:
            raise ExecutionError(f"offload could not be turned {'on' if on else 'off'}: {e}") from e
        if not on:
            self.shell.log.info("offload enable now: False")
            return
        s = portals.state(control(), self.rtsnode.ip_address, self.rtsnode.port, True)
        if not s.offloaded:
            self.rtsnode.offload = was
            raise ExecutionError(f"offload stays {'on' if was else 'off'}: {s.summary().split('— ', 1)[-1]}")
        self.shell.log.info(f"offload enable now: True ({s.summary()})")


class OffloadRoot(UIRoot):  # type: ignore[misc]
    """targetcli's root with /offload, and save/restore of our settings too."""

    def refresh(self) -> None:
        UIRoot.refresh(self)
        UIOffload(self)

    def ui_command_saveconfig(self, savefile: str = default_save_file) -> None:
        """
        Saves the current configuration to a file so that it can be restored
        on next boot; cxgbit-ext's adapter settings go beside it
        (cxgbit-ext.json next to saveconfig.json).
        """
        UIRoot.ui_command_saveconfig(self, savefile)
        ctl = control()
        if ctl.loaded:
            ours = persist.beside(Path(os.path.expanduser(savefile or default_save_file)))
            persist.save(ctl, ours)
            self.shell.log.info(f"cxgbit-ext settings saved to {ours}")

    def ui_command_restoreconfig(
        self,
        savefile: str = default_save_file,
        clear_existing: bool = False,
        target: str | None = None,
        storage_object: str | None = None,
    ) -> None:
        """
        Restores configuration from a file: cxgbit-ext's adapter settings
        first (when the file beside it exists), then LIO's, so that portals
        saved with offload come back offloaded. Reports any portal that asks
        for offload and did not get it, with the reason.
        """
        lio = Path(os.path.expanduser(savefile or default_save_file))
        ours = persist.beside(lio)
        if ours.exists():
            try:
                persist.restore(control(), ours)
            except CxgbitExtError as e:
                raise ExecutionError(str(e)) from e
            self.shell.log.info(f"cxgbit-ext settings restored from {ours}")
        UIRoot.ui_command_restoreconfig(self, savefile, clear_existing, target, storage_object)
        if lio.is_file():
            bad = [
                s for ip, port in persist.offload_requested(lio)
                if not (s := portals.state(control(), ip, port, True)).offloaded
            ]  # fmt: skip
            if bad:
                raise ExecutionError(
                    "restored, but not offloaded: " + "; ".join(f"{s.ip}:{s.port}: {s.reason}" for s in bad)
                )


def shell_class() -> type:
    """targetcli's own ConfigShell subclass (its default preferences:
    auto_enable_tpgt, auto_add_default_portal, ...), from the installed
    targetcli program, for driving the tree in-process."""
    import runpy
    import shutil

    exe = shutil.which("targetcli")
    if exe is None:
        raise RuntimeError("targetcli (targetcli-fb) is not installed")
    cls: type = runpy.run_path(exe, run_name="targetcli_program")["TargetCLI"]
    return cls


def install() -> None:
    """Make targetcli build our nodes: its portal lists and its entry point
    create ``UIPortal`` and ``UIRoot`` by module name, so rebinding those
    names in this process is enough (stock ``targetcli`` is untouched)."""
    import targetcli
    import targetcli.ui_root
    import targetcli.ui_target

    targetcli.ui_target.UIPortal = OffloadPortal
    targetcli.UIRoot = OffloadRoot
    targetcli.ui_root.UIRoot = OffloadRoot
