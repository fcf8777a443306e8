#!/usr/bin/python3
"""What one configshell Log.debug() call costs, at two stack depths.

Calls Log().debug() from the bottom of a stack DEPTHS[0] and DEPTHS[1]
frames deep (file logging off, console at its default level: the message
is not written anywhere) and counts the Python-level calls made inside it
with a profile hook. Prints the counts and exits 1 if the deeper call made
more than the shallower one (the cost grows with the caller's stack), 0
otherwise. Needs no root and no LIO.

    python3 debug_cost.py
"""

from __future__ import annotations

import sys
import tempfile
from types import FrameType

from configshell_fb.log import Log
from configshell_fb.prefs import Prefs

DEPTHS = (5, 50)


def count_calls(depth: int) -> int:
    """Python calls made by one debug() issued ``depth`` frames down."""
    if depth > 1:
        return count_calls(depth - 1)
    calls = [0]

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            calls[0] += 1

    log = Log()
    log.debug("warm-up")  # source files read and cached once, not counted
    sys.setprofile(hook)
    try:
        log.debug("one message")
    finally:
        sys.setprofile(None)
    return calls[0]


def main() -> int:
    with tempfile.TemporaryDirectory() as home:
        Prefs(f"{home}/prefs.bin")
        Log(console_level="info", file_level="info")
        shallow, deep = (count_calls(d) for d in DEPTHS)
    print(f"Log.debug(): {shallow} calls at a stack depth of {DEPTHS[0]}, {deep} at {DEPTHS[1]}")
    return 1 if deep > shallow else 0


if __name__ == "__main__":
    sys.exit(main())
