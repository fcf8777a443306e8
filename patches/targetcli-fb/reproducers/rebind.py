"""A subclass rebound under targetcli.ui_target's own class name, as a
plugin does to have targetcli build its nodes (targetcli-offload), must
construct without re-implementing the constructor.

Stock targetcli-fb's UIPortal and UIMultiTPGTarget call
super(UIPortal, self) / super(UIMultiTPGTarget, self): with the module's
name rebound to the subclass, that super() lands in the stock
constructor again, with the base's arguments (TypeError) or recursing.
Exits 1 when either fails so, 0 when both construct. Needs no root and no configfs: the node base's constructor is
stubbed.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import targetcli.ui_target as ui_target
from targetcli.ui_node import UIRTSLibNode


def built(name: str, **rtsnode: object) -> bool:
    stock = getattr(ui_target, name)
    sub = type(f"Plugin{name}", (stock,), {"refresh": lambda self: None})
    setattr(ui_target, name, sub)
    try:
        sub(SimpleNamespace(**rtsnode), None)
    except (TypeError, RecursionError) as e:
        print(f"{name}: a subclass rebound as ui_target.{name} lands in the stock constructor again: {e}")
        return False
    finally:
        setattr(ui_target, name, stock)
    print(f"{name}: a subclass rebound as ui_target.{name} constructs")
    return True


UIRTSLibNode.__init__ = lambda self, name, rtsnode, parent: None  # type: ignore[method-assign]
ok = [built("UIPortal", ip_address="0.0.0.0", port=3260), built("UIMultiTPGTarget", wwn="iqn.2026-11.x:y")]
sys.exit(0 if all(ok) else 1)
