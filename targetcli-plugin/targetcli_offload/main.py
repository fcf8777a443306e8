"""targetcli-offload: stock targetcli with cxgbit-ext's nodes.

Runs the installed ``targetcli`` program unchanged after rebinding its portal
and root classes to ours (targetcli_offload.ui.install), so every stock
command, preference and the daemon mode behave as in ``targetcli``; the
additions are the /offload tree, offload state in portal ``ls`` lines, an
``enable_offload`` that says why it cannot, and save/restore of our settings.
"""

from __future__ import annotations

import runpy
import shutil
import sys

from targetcli_offload import ui


def main() -> None:
    exe = shutil.which("targetcli")
    if exe is None:
        sys.exit("targetcli-offload: targetcli (targetcli-fb) is not installed")
    ui.install()
    sys.argv[0] = "targetcli-offload"
    runpy.run_path(exe, run_name="__main__")


if __name__ == "__main__":
    main()
