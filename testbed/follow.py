"""Files copied into a log as they grow, each line with its time.

A step that runs for minutes without saying anything (a dkms build under
TCG writes only its make.log) shows where its time goes only if its own
log is read while it runs: ``Follow`` does, for every file matching a
pattern, and stamps each line with the seconds since a given start.
"""

from __future__ import annotations

import glob
import threading
import time
from types import TracebackType
from typing import TextIO


class Follow:
    """While in a ``with`` block, every file matching ``pattern`` is read
    every ``interval`` s and its new whole lines written to ``log`` as
    ``SECONDS LINE``, seconds since ``t0`` (time.monotonic()). A file
    first seen, or read again from its start because it became shorter
    (written anew by the next build), gets a ``# PATH`` line first. The
    last lines are read when the block ends."""

    def __init__(self, pattern: str, log: TextIO, t0: float, interval: float = 2.0) -> None:
        self.pattern, self.log, self.t0, self.interval = pattern, log, t0, interval
        self.offsets: dict[str, int] = {}
        self.partial: dict[str, bytes] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Follow:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop.set()
        self.thread.join()
        self.read()
        for path, rest in self.partial.items():
            if rest:
                self._write(rest.decode(errors="replace") + "\n")
                self.partial[path] = b""
        self.log.flush()

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            self.read()

    def _write(self, line: str) -> None:
        self.log.write(f"{time.monotonic() - self.t0:7.1f} {line}")

    def read(self) -> None:
        """Copy what each matching file gained since the last read."""
        for path in sorted(glob.glob(self.pattern)):
            try:
                with open(path, "rb") as f:
                    f.seek(0, 2)
                    size = f.tell()
                    at = self.offsets.get(path)
                    if at is None or size < at:
                        self.log.write(f"# {path}\n")
                        at, self.partial[path] = 0, b""
                    f.seek(at)
                    data = self.partial.get(path, b"") + f.read(size - at)
            except OSError:
                continue  # gone between the listing and the open
            self.offsets[path] = size
            *lines, self.partial[path] = data.split(b"\n")
            for line in lines:
                self._write(line.decode(errors="replace") + "\n")
        self.log.flush()
