"""targetcli nodes for cxgbit-ext: the /offload tree and offload-aware portals.

configshell conventions: ``ui_command_*`` methods are the commands, their
docstrings the help, ``ui_complete_*`` the tab completion, ``summary()`` the
text and health colour ``ls`` shows, and config groups
(``define_config_group_param`` with ``ui_getgroup_*``/``ui_setgroup_*``) the
settings ``get``/``set`` reach. Every node reads the module's configfs tree
afresh (cxgbit_ext.control), so nothing goes stale.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from configshell_fb import ConfigNode, ExecutionError
from rtslib_fb.utils import RTSLibError
from targetcli.ui_node import UINode, UIRTSLibNode
from targetcli.ui_root import UIRoot, default_save_file
from targetcli.ui_target import UITPG, UIMultiTPGTarget, UIPortal

from cxgbit_ext import persist, portals
from cxgbit_ext.control import (
    ADAPTER_NAME_RULE,
    BUILTIN,
    OFFLOADS,
    Adapter,
    Control,
    CxgbitExtError,
    adapter_caps,
    counter_lines,
    netdevs,
)

Summary = tuple[str, bool | None]
F = TypeVar("F", bound=Callable[..., Any])


def control() -> Control:
    return Control()


@contextmanager
def shell_errors() -> Iterator[None]:
    """A CxgbitExtError raised inside, as configshell's ExecutionError: the
    shell prints its message (which says what to do), not a traceback.
    A context, not a decorator: configshell reads a command's parameters
    from its own signature, which a wrapper would hide."""
    try:
        yield
    except CxgbitExtError as e:
        raise ExecutionError(str(e)) from e


def help_text(**values: str) -> Callable[[F], F]:
    """Fill a command's help (its docstring, which configshell shows) with
    the rules the library owns, so that help and check say the same."""

    def fill(command: F) -> F:
        command.__doc__ = (command.__doc__ or "").format(**values)
        return command

    return fill


class UIOffload(UINode):
    """/offload: the cxgbit_ext module, its adapters and connections."""

    def __init__(self, parent: UINode) -> None:
        UINode.__init__(self, "offload", parent)
        self.refresh()

    def refresh(self) -> None:
        self._children: set[UINode] = set()
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
        Shows the module, its offloaded portals, backends, adapters and
        connections.
        """
        with shell_errors():
            st = control().status()
        self.shell.con.display(f"cxgbit_ext {st.version}, LIO transport '{st.transport}'")
        self.shell.con.display(f"offloaded portals: {', '.join(st.portals) or 'none'}")
        for b in st.backends:
            self.shell.con.display(f"backend {b.name}: {b.summary()}")
        for a in st.adapters:
            self.shell.con.display(f"adapter {a.name} ({a.type}) serves {a.serving}: {a.offload_text()}")
        self.shell.con.display(f"offloaded connections: {len(st.connections)}")

    def ui_command_counters(self) -> None:
        """
        Shows every adapter's counters: those of adapters/ and those of the
        adapters of backends with devices of their own.
        """
        for name, counters in control().counters().items():
            self.shell.con.display(f"{name}:")
            self.shell.con.display("\n".join(counter_lines(counters)))


class UIAdapters(UINode):
    """/offload/adapters: one node per adapter."""

    def __init__(self, parent: UINode) -> None:
        UINode.__init__(self, "adapters", parent)
        self.refresh()

    def refresh(self) -> None:
        self._children: set[UINode] = set()
        for a in control().adapters():
            UIAdapter(a.name, self)

    def summary(self) -> Summary:
        ads = control().adapters()
        serving = [a for a in ads if a.netdev]
        return (f"{len(ads)} adapters, {len(serving)} serving", bool(serving))

    @help_text(name_rule=ADAPTER_NAME_RULE)
    def ui_command_create(self, name: str, netdev: str = "") -> Any:
        """
        Creates the software adapter NAME ({name_rule}),
        serving NETDEV when given: a netdev of this network namespace, or *
        for every netdev. Without netdev it serves none until bound
        (adapters/NAME bind netdev=...). It starts with every offload on
        (see 'adapters/NAME get offload').

        A name in use, a netdev that does not exist or one that another
        adapter already serves is refused, and nothing changes.
        """
        with shell_errors():
            a = control().create_adapter(name, netdev)
        self.refresh()
        self.shell.log.info(f"Created adapter {a.name} ({a.type}, serves {a.serving}).")
        return self.new_node(self.get_child(a.name))

    def ui_complete_create(self, parameters: dict[str, str], text: str, current_param: str) -> list[str]:
        if current_param == "netdev":
            return _complete_netdev(text)
        if current_param == "name":
            names = {a.name for a in control().adapters()}
            free = next(f"soft{i}" for i in range(len(names) + 1) if f"soft{i}" not in names)
            return [free] if free.startswith(text) else []
        return []

    def ui_command_delete(self, name: str) -> None:
        """
        Deletes the software adapter NAME. Logins that arrive afterwards on
        its netdev are served by an adapter serving *, if any, or by stock
        iSCSI/TCP; the connections it serves now go on until they end.

        soft0 is built in and cannot be deleted: unbind it instead
        (adapters/soft0 unbind).
        """
        with shell_errors():
            left = control().adapter(name).delete()
        self.refresh()
        going_on = f" Its {left} connection(s) go on until they end." if left else ""
        self.shell.log.info(f"Deleted adapter {name}.{going_on}")

    def ui_complete_delete(self, parameters: dict[str, str], text: str, current_param: str) -> list[str]:
        if current_param != "name":
            return []
        return [a.name for a in control().adapters() if a.name != BUILTIN and a.name.startswith(text)]


class UIAdapter(UINode):
    """/offload/adapters/<name>: one adapter; its offload switches are the
    config group "offload" (get offload / set offload ddp=false)."""

    def __init__(self, name: str, parent: UINode) -> None:
        UINode.__init__(self, name, parent)
        self.define_config_group_param(
            "offload", "ddp", "bool",
            "Direct data placement: Data-Out payload goes straight into the command's pages. With false the "
            "adapter receives it into a bounce buffer and copies it (counted in bytes_copied). Applies to "
            "connections accepted afterwards; live ones keep what they started with.",
        )  # fmt: skip
        self.define_config_group_param(
            "offload", "iso", "bool",
            "Data-In segmentation: the adapter cuts each read burst into Data-In PDUs. With false the PDU "
            "layer sends Data-In PDU by PDU. Applies to connections accepted afterwards; live ones keep what "
            "they started with.",
        )  # fmt: skip

    def _adapter(self) -> Adapter:
        with shell_errors():
            return control().adapter(self.name)

    def summary(self) -> Summary:
        try:
            a = control().adapter(self.name)
        except CxgbitExtError:
            return ("deleted", False)
        if not a.netdev:
            return (f"{a.type}, serves no netdev{a.disabled_text()}", False)
        return (f"{a.type} on {a.serving}: {a.offload_text()}, {a.counters.get('connections', 0)} conns", True)

    def ui_getgroup_offload(self, toggle: str) -> bool:
        """
        This is the backend method for getting the adapter's offload switches.
        """
        return self._adapter().toggles[toggle]

    def ui_setgroup_offload(self, toggle: str, value: bool) -> None:
        """
        This is the backend method for setting the adapter's offload switches.
        """
        self.assert_root()
        with shell_errors():
            control().adapter(self.name).set_toggles({toggle: value})

    def ui_command_set(self, group: str | None = None, **parameter: str) -> None:
        """
        Sets one or more configuration parameters in the given group.
        The "global" group contains all global CLI preferences.
        The "offload" group holds this adapter's offload switches (ddp, iso;
        true or false), for the connections it accepts from now on; every
        value is checked before the first one is set, and the ones set are
        put back if the kernel refuses a later one.

        Run with no parameter nor group to list all available groups, or
        with just a group name to list all available parameters within that
        group.

        Example: set offload ddp=false

        SEE ALSO
        ========
        get
        """
        if group != "offload" or not parameter:
            ConfigNode.ui_command_set(self, group, **parameter)
            return
        self.assert_root()
        values = {}
        for param, text in parameter.items():
            try:
                values[param] = self.ui_type_bool(text)
            except ValueError as e:
                raise ExecutionError(f"Not setting {param}! {e} Nothing was changed.") from e
        with shell_errors():
            control().adapter(self.name).set_toggles(values)
        now = self._adapter().toggles
        for param in values:
            self.shell.con.display(f"Parameter {param} is now '{self.ui_type_bool(now[param], reverse=True)}'.")

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
        Shows the adapter's type, netdev and what it offloads (and what is
        switched off: 'set offload ddp=true' switches it back on).
        """
        a = self._adapter()
        self.shell.con.display(f"name: {a.name}\ntype: {a.type}\nserves: {a.serving}")
        for c in a.caps:
            state = "" if c in a.active else f", switched off (set offload {c}=true)"
            self.shell.con.display(f"offload: {c} ({OFFLOADS.get(c, c)}){state}")

    def ui_command_counters(self) -> None:
        """
        Shows this adapter's counters.
        """
        self.shell.con.display("\n".join(counter_lines(self._adapter().counters, indent="")))


def _bind(node: UINode, adapter: str, netdev: str) -> None:
    with shell_errors():
        a = control().adapter(adapter)
        a.netdev = netdev
        node.shell.log.info(f"adapter {adapter} now serves {a.serving}")


def _complete_netdev(text: str) -> list[str]:
    return [d for d in sorted(netdevs() | {"*"}) if d.startswith(text)]


class UIConnections(UINode):
    """/offload/connections: one node per offloaded connection."""

    def __init__(self, parent: UINode) -> None:
        UINode.__init__(self, "connections", parent)
        self.refresh()

    def refresh(self) -> None:
        self._children: set[UINode] = set()
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
        offs = c.offloads(adapter_caps(control().every_adapter(), c.adapter))
        on = [k for k, v in offs.items() if v == "on"]
        return (f"-> {c.local} on {c.adapter}: {'+'.join(on) or 'nothing'}", True)

    def ui_command_info(self) -> None:
        """
        Shows the connection's offloads (and why any is off) and counters.
        """
        c = self._conn()
        if c is None:
            raise ExecutionError(f"connection {self.peer} has gone")
        self.shell.con.display(f"{c.peer} -> {c.local} on {c.adapter}")
        for k, v in c.offloads(adapter_caps(control().every_adapter(), c.adapter)).items():
            self.shell.con.display(f"  {k}: {v}")
        self.shell.con.display("\n".join(counter_lines(c.counters)))


class OffloadPortal(UIPortal):  # type: ignore[misc]
    """A portal whose ls shows whether logins to it really are offloaded."""

    def __init__(self, portal: Any, parent: UINode) -> None:
        # UIPortal.__init__ says super(UIPortal, self), and install() rebinds
        # the name UIPortal to this class: its two steps here instead, until
        # patches/targetcli-fb/0001 lands (test_library_patches holds them).
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
            portals.set_offload(self.rtsnode, on)
        except (RTSLibError, OSError, CxgbitExtError) as e:
            raise ExecutionError(f"offload could not be turned {'on' if on else 'off'}: {e}") from e
        if not on:
            self.shell.log.info("offload enable now: False")
            return
        s = portals.state(control(), self.rtsnode.ip_address, self.rtsnode.port, True)
        if not s.offloaded:
            try:
                portals.set_offload(self.rtsnode, was)
            except (RTSLibError, OSError, CxgbitExtError) as e:
                raise ExecutionError(f"offload is on but cannot serve ({s.summary()}), and turning it back off "
                                     f"failed: {e}") from e  # fmt: skip
            raise ExecutionError(f"offload stays {'on' if was else 'off'}: {s.reason}")
        self.shell.log.info(f"offload enable now: True ({s.summary()})")


class OffloadTPG(UITPG):  # type: ignore[misc]
    """A TPG whose enable follows cxgbit-ext's rule for offloaded portals."""

    def ui_command_enable(self) -> None:
        """
        Enables the TPG.

        With an offloaded portal, its target is held in cxgbit_ext while
        the TPG opens (see cxgbit-ext(1), login_holds): no login for it
        ends on stock TCP. Connections stock TCP still holds on the portal
        when it is done are named.

        SEE ALSO
        ========
        disable status
        """
        self.assert_root()
        if self.rtsnode.enable:
            self.shell.log.info("The TPGT is already enabled.")
            return
        try:
            held = portals.enable_tpg(Path(self.rtsnode.path), ctl=control())
        except (RTSLibError, OSError, CxgbitExtError) as e:
            raise ExecutionError(f"The TPGT could not be enabled: {e}") from e
        self.shell.log.info("The TPGT has been enabled.")
        if held:
            self.shell.log.warning(
                f"stock TCP holds {len(held)} connection(s) on its offloaded portal: {', '.join(held)}; "
                "a login among them stays on stock TCP until it logs out (disable and enable to move it)"
            )


class OffloadTarget(UIMultiTPGTarget):  # type: ignore[misc]
    """A target whose TPG nodes are OffloadTPG."""

    def __init__(self, target: Any, parent: UINode) -> None:
        # UIMultiTPGTarget.__init__ says super(UIMultiTPGTarget, self), and
        # install() rebinds that name to this class: its two steps here
        # (patches/targetcli-fb/0001).
        UIRTSLibNode.__init__(self, target.wwn, target, parent)
        self.refresh()

    def refresh(self) -> None:
        self._children: set[UINode] = set()
        for tpg in self.rtsnode.tpgs:
            OffloadTPG(tpg, self)

    def ui_command_create(self, tag: str | None = None) -> Any:
        """
        Creates a new Target Portal Group within the target. The
        tag must be a positive integer value, optionally prefaced
        by 'tpg'. If omitted, the next available Target Portal Group
        Tag (TPGT) will be used.

        SEE ALSO
        ========
        delete
        """
        entered = UIMultiTPGTarget.ui_command_create(self, tag)
        self.refresh()  # the new TPG's node as OffloadTPG
        return self.ui_command_cd(entered.path) if entered is not None else None


class OffloadRoot(UIRoot):  # type: ignore[misc]
    """targetcli's root with /offload, and save/restore of our settings too."""

    def refresh(self) -> None:
        UIRoot.refresh(self)
        UIOffload(self)

    def ui_command_saveconfig(self, savefile: str = default_save_file) -> None:
        """
        Saves the current configuration to a file so that it can be restored
        on next boot; cxgbit-ext's adapters (their netdevs and offload
        switches) go beside it (cxgbit-ext.json next to saveconfig.json).
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
        Restores configuration from a file: cxgbit-ext's adapters first
        (when the file beside it exists: missing software adapters are
        created, then netdevs and offload switches set; all or nothing),
        then LIO's, so that portals saved with offload come back offloaded.
        Reports any portal that asks for offload and did not get it, with
        the reason.
        """
        lio = Path(os.path.expanduser(savefile or default_save_file))
        ours = persist.beside(lio)
        if ours.exists():
            with shell_errors():
                persist.restore(control(), ours)
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
    """Make targetcli build our nodes: its portal lists, fabric modules and
    entry point create ``UIPortal``, ``UIMultiTPGTarget`` and ``UIRoot`` by
    module name, so rebinding those names in this process is enough (stock
    ``targetcli`` is untouched)."""
    import targetcli
    import targetcli.ui_root
    import targetcli.ui_target

    targetcli.ui_target.UIPortal = OffloadPortal
    targetcli.ui_target.UIMultiTPGTarget = OffloadTarget
    targetcli.UIRoot = OffloadRoot
    targetcli.ui_root.UIRoot = OffloadRoot
